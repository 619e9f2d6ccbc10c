"""console.tui"""

"""console.monitor"""

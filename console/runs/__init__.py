"""console.runs"""

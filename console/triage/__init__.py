"""console.triage"""

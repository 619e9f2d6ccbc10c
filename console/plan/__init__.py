"""console.plan"""

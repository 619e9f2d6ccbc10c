"""console.demo"""

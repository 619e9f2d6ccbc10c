"""console.catalog"""

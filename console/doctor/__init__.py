"""console.doctor"""

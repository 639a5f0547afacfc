x = 1
if x:
    y = """a
b"""

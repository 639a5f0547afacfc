x = 1 + \
    2
y = (1 +
     2)  # comment


  # indented comment
if x:
	pass
def f(
    a,
    b,
): pass

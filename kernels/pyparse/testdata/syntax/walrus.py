if (n := len(a)) > 10:
    print(n)
while chunk := f.read(10):
    pass
[y for x in data if (y := g(x))]
x[a:=1]
f(a:=1)

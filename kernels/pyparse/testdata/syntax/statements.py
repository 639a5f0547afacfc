import os.path as p, sys
from . import a
from ..pkg.mod import (b as c, d,)
from __future__ import annotations
global g
del a, b[0], c.d
assert x, "msg"
raise E from e
try:
    pass
except (A, B) as e:
    pass
except C:
    pass
else:
    pass
finally:
    pass
try:
    pass
except* ValueError:
    pass
with (open(a) as f, open(b) as g):
    pass
with (a, b):
    pass
for i, (j, *k) in enumerate(x):
    continue
else:
    break
x = y = *a, b = z
x += 1; x //= 2; x **= 3; x @= m
lambda: (yield)
lambda *a, b=1, **k: a
print(*a, sep="", **k)
a[1:2, ::3, ...]
x = 1 if y else 2 if z else 3
not a or b and c
a < b <= c != d is not e not in f in g is h
-~+x ** -y
a | b ^ c & d << e >> f + g - h * i / j // k % l @ m

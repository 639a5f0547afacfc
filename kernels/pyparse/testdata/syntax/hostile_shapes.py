# Shapes from the hostile-input benchmarks, small enough to check against CPython.
# Nested debug fields over CRLF and lone CR line endings:
x = f"""{f"""{'''a
b'''=}"""=}"""
y = f"""{ (a +
 b)=!s:>{w}}{c=}"""
# Format specs nest per f-string, not across nested f-strings:
z = f'{a:{b:{f"{c:{d:{e}}}"}}}'
# 149 nested f-strings, the most CPython accepts:
w = f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{f"{a}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"}"
# Adjacent literals of every kind:
v = ("a" f"{b}c" "d\x41" r"\n" f"{e!r:>4}" "" f"" U"\u2022x" "g")
u = (b'a' rb'\x00' B"c")
import a.b.c as d, e.f
from ..g.h import (i, j)
# Identifiers NFKC-normalized: long runs of marks, and a mark that must not
# cross a backward-combining starter (U+09BE):
x̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́ = 1
Oা̞̄ = ẛ̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣̣́ + ｅｖａｌ
각́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́́ = ÅÅ

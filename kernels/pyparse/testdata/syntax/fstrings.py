x = f"{a!r:>{w}} {b=} {c = !s} {{lit}} {d:{e}.{f}}"
y = f"{x["k"]}" f'{f"{1}"}'
z = rf"\d{n}" F"""
{a}
"""

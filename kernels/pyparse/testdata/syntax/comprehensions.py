[x for x in y for z in x if z if not z]
{k: v for k, v in d.items()}
{x for x in s}
(x for x in g)
f(x for x in g)
[*a, *b]
{**a, "k": 1, **b}
{*a, 1}

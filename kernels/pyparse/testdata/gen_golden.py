"""Regenerates syntax.golden from CPython's own parser (run with Python 3.12):

    cd kernels/pyparse/testdata/syntax && python3.12 ../gen_golden.py *.py | sed 's/\.py\t/\t/' > ../syntax.golden

It prints each file's tree in the format of pyparse.Dump: ast.dump's class and
field names, strings JSON-quoted with non-ASCII escaped, numbers reduced to their
type. The Go tests never run Python; they only read the committed golden file.
"""
import ast, json, sys
def q(s): return json.dumps(s, ensure_ascii=True)
def dump(n):
    if n is None: return "None"
    if isinstance(n, list): return "[" + ", ".join(dump(x) for x in n) + "]"
    if isinstance(n, str): return q(n)
    if isinstance(n, int) and not isinstance(n, bool): return str(n)
    if isinstance(n, ast.Constant):
        v = n.value
        if v is None: return "Constant(None)"
        if v is True: return "Constant(True)"
        if v is False: return "Constant(False)"
        if v is Ellipsis: return "Constant(Ellipsis)"
        if isinstance(v, str): return "Constant(str " + q(v) + ")"
        if isinstance(v, bytes): return "Constant(bytes " + q(v.decode('latin-1')) + ")"
        return "Constant(" + type(v).__name__ + ")"
    if isinstance(n, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
        return type(n).__name__ + "()"
    if isinstance(n, ast.MatchSingleton):
        return "MatchSingleton(value=" + repr(n.value) + ")"
    fields = [f for f in n._fields if f not in ("type_comment", "type_ignores", "kind", "default_value")]
    parts = []
    for f in fields:
        v = getattr(n, f, None)
        if f in ("simple", "is_async"): v = int(v)
        if isinstance(n, ast.JoinedStr) and f == "values":
            v = [x for x in v if not (isinstance(x, ast.Constant) and x.value == "")]
        parts.append(f + "=" + dump(v))
    return type(n).__name__ + "(" + ", ".join(parts) + ")"
for path in sys.argv[1:]:
    try:
        src = open(path, 'rb').read()
        t = ast.parse(src)
        out = dump(t)
    except SyntaxError as e:
        out = "ERROR %s:%s %s" % (e.lineno, e.offset, e.msg)
    except Exception as e:
        out = "ERROR other " + type(e).__name__
    print(path + "\t" + out)

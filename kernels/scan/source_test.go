package scan

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// rules returns "line:col rule" for each finding, in order.
func rules(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%d:%d %s", f.Line, f.Col, f.Rule))
	}
	return out
}

type sourceCase struct {
	name string
	src  string
	want []string // "line:col rule"; empty means clean
}

func runSourceCases(t *testing.T, cases []sourceCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := rules(Source("k.py", []byte(tt.src)))
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("findings for\n%s\n got %q\nwant %q\n(%v)", tt.src, got, want, Source("k.py", []byte(tt.src)))
			}
		})
	}
}

// One case (at least) per upstream rule.
func TestSourceRules(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{"syntax error is a violation", "x = = 1\n", []string{"1:5 syntax-error"}},
		{"banned import", "import subprocess\n", []string{"1:8 banned-import"}},
		{"banned import submodule", "import urllib.request\n", []string{"1:8 banned-import"}},
		{"banned from import", "from ctypes import CDLL\n", []string{"1:1 banned-import"}},
		{"banned from submodule", "from importlib.machinery import SourceFileLoader\n", []string{"1:1 banned-import"}},
		{"allowed imports", "import torch\nimport triton\nimport triton.language as tl\nfrom os import path\n", nil},
		{"relative import is local", "from . import subprocess\n", nil},
		{"every banned builtin call", "eval('1')\nexec('1')\ncompile('1','f','exec')\n__import__('os')\nopen('f')\ninput()\nbreakpoint()\nglobals()\nvars()\nlocals()\n",
			[]string{"1:1 banned-call", "2:1 banned-call", "3:1 banned-call", "4:1 banned-call", "5:1 banned-call",
				"6:1 banned-call", "7:1 banned-call", "8:1 banned-call", "9:1 banned-call", "10:1 banned-call"}},
		{"method named like a builtin is fine", "model.eval()\nre.compile('x')\ntorch.compile(f)\n", nil},
		{"getattr with name variable", "getattr(x, name)\n", []string{"1:1 dynamic-attribute"}},
		{"setattr with name variable", "setattr(x, n, 1)\n", []string{"1:1 dynamic-attribute"}},
		{"delattr with name variable", "delattr(x, n)\n", []string{"1:1 dynamic-attribute"}},
		{"getattr with one argument", "getattr(x)\n", []string{"1:1 dynamic-attribute"}},
		{"getattr with literal is fine", "getattr(x, 'weight', None)\nsetattr(m, \"bias\", b)\n", nil},
		{"subscript of __builtins__", "__builtins__['eval']\n", []string{"1:1 namespace-subscript"}},
		{"subscript of __globals__", "__globals__['x']\n", []string{"1:1 namespace-subscript"}},
		{"subscript of __dict__", "__dict__['x']\n", []string{"1:1 namespace-subscript"}},
		{"banned attribute call", "os.system('id')\n", []string{"1:1 banned-attribute"}},
		{"banned attribute bare", "run = os.popen\n", []string{"1:7 banned-attribute"}},
		{"banned attribute exec family", "os.execvpe(a, b, c)\nos.spawnlp(0, 'x')\nos.killpg(1, 9)\n",
			[]string{"1:1 banned-attribute", "2:1 banned-attribute", "3:1 banned-attribute"}},
		{"banned loader attributes", "lib = ct.CDLL('x')\nh = w.LoadLibrary('y')\nd = m.dlopen('z')\n",
			[]string{"1:7 banned-attribute", "2:5 banned-attribute", "3:5 banned-attribute"}},
		{"pickle-like load", "torch.load('w.pt')\njoblib.load(f)\nmarshal.loads(b)\n",
			[]string{"1:1 pickle-load", "2:1 pickle-load", "3:1 pickle-load"}},
		{"tl.load is allowed", "x = tl.load(ptr + offs, mask=m)\njson.loads(s)\n", nil},
		{"dunder attributes", "a.__globals__\nb.__class__\nc.__subclasses__()\nd.__mro__\ne.__code__\nf.__dict__\n",
			[]string{"1:1 dunder-attribute", "2:1 dunder-attribute", "3:1 dunder-attribute", "4:1 dunder-attribute",
				"5:1 dunder-attribute", "6:1 dunder-attribute"}},
		{"ordinary dunders are fine", "def __init__(self): super().__init__()\nx.__name__\n", nil},
		{"broken kernel", "import triton\n@triton.jit\ndef k(x, N):\n    B = triton.next_power_of_2(N)\n",
			[]string{"4:9 broken-kernel"}},
		{"next_power_of_2 on host is fine", "import triton\ndef launch(n):\n    return triton.next_power_of_2(n)\n", nil},
		{"broken kernel via called decorator", "@triton.jit(do_not_specialize=['n'])\ndef k(n):\n    b = triton.next_power_of_2(n)\n",
			[]string{"3:9 broken-kernel"}},
		{"broken kernel bare jit", "from triton import jit\nimport triton\n@jit\ndef k(n):\n    if n:\n        b = triton.next_power_of_2(n)\n",
			[]string{"6:13 broken-kernel"}},
	})
}

// Attempts to get past the rules by aliasing, indirection and syntax.
func TestSourceRulesResistBypasses(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{"import alias then call", "import os as o\no.system('id')\n", []string{"2:1 banned-attribute"}},
		{"from-import of banned name", "from os import system\nsystem('id')\n", []string{"1:16 banned-import-name"}},
		{"from-import renamed", "from os import popen as p\n", []string{"1:16 banned-import-name"}},
		{"star import of banned module", "from subprocess import *\n", []string{"1:1 banned-import"}},
		{"star import of os", "from os import *\nsystem('id')\n", []string{"1:16 star-import"}},
		{"getattr with string concatenation", "getattr(os, 'sys' + 'tem')('id')\n", []string{"1:1 dynamic-attribute"}},
		{"getattr with implicit concatenation still literal", "getattr(os, 'sys' 'tem')('id')\n", []string{"1:1 banned-attribute"}},
		{"getattr with f-string", "getattr(os, f'{\"sys\"}tem')\n", []string{"1:1 dynamic-attribute"}},
		{"getattr with escaped literal", "getattr(os, '\\x73ystem')('id')\n", []string{"1:1 banned-attribute"}},
		{"getattr literal dunder", "getattr(f, '__globals__')\n", []string{"1:1 dunder-attribute"}},
		{"getattr with bytes", "getattr(os, b'system')\n", []string{"1:1 dynamic-attribute"}},
		{"getattr with starred args", "getattr(*args)\n", []string{"1:1 dynamic-attribute"}},
		{"aliased getattr", "g = getattr\ng(os, name)\n", []string{"1:5 banned-builtin-ref"}},
		{"aliased eval", "e = eval\ne('1')\n", []string{"1:5 banned-builtin-ref"}},
		{"eval in a list", "[eval][0]('1')\n", []string{"1:2 banned-builtin-ref"}},
		{"a parameter named like the builtin is a binding, its use a reference", "def f(open):\n    return open\n",
			[]string{"1:7 banned-builtin-binding", "2:12 banned-builtin-ref"}},
		{"__builtins__ attribute", "__builtins__.eval('1')\n", []string{"1:1 introspection"}},
		{"__builtins__ subscript reported once", "__builtins__['eval']('1')\n", []string{"1:1 namespace-subscript"}},
		{"dict of builtins module", "f.__globals__['__builtins__']\n", []string{"1:1 dunder-attribute"}},
		{"subclasses walk", "().__class__.__base__.__subclasses__()\n",
			[]string{"1:1 dunder-attribute", "1:1 dunder-attribute", "1:1 dunder-attribute"}},
		{"nested function", "def outer():\n    def inner():\n        import socket\n    return inner\n", []string{"3:16 banned-import"}},
		{"lambda body", "f = lambda: __import__('os')\n", []string{"1:13 banned-call"}},
		{"decorator expression", "@eval('lambda f: f')\ndef g(): pass\n", []string{"1:2 banned-call"}},
		{"default argument", "def f(x=exec('1')): pass\n", []string{"1:9 banned-call"}},
		{"class body", "class K:\n    p = os.popen\n", []string{"2:9 banned-attribute"}},
		{"inside f-string", "s = f\"{__import__('os').system('id')}\"\n", []string{"1:8 banned-attribute", "1:8 banned-call"}},
		{"inside nested f-string", "s = f\"{f'{eval(1)}'}\"\n", []string{"1:11 banned-call"}},
		{"fullwidth eval", "ｅｖａｌ('1')\n", []string{"1:1 banned-call"}},
		{"mathematical bold import", "__𝐢𝐦𝐩𝐨𝐫𝐭__('os')\n", []string{"1:1 banned-call"}},
		{"fullwidth attribute", "os.ｓｙｓｔｅｍ('id')\n", []string{"1:1 banned-attribute"}},
		{"torch alias load", "import torch as t\nt.load('w')\n", []string{"2:1 pickle-load"}},
		{"torch submodule load", "torch.serialization.load(f)\n", []string{"1:1 pickle-load"}},
		{"from torch import load", "from torch import load\n", []string{"1:19 pickle-load"}},
		{"star import from torch", "from torch import *\n", []string{"1:19 star-import"}},
		{"sys.modules", "import sys\nsys.modules['subprocess'].run(['id'])\n", []string{"2:1 introspection"}},
		{"frame walk", "import sys\nsys._getframe().f_builtins['eval']\n", []string{"2:1 introspection", "2:1 introspection"}},
		{"generator frame", "g.gi_frame.f_globals\n", []string{"1:1 introspection", "1:1 introspection"}},
		{"walrus alias", "if (e := eval):\n    e('1')\n", []string{"1:10 banned-builtin-ref"}},
		{"match capture of banned attr", "match x:\n    case os.system: pass\n", []string{"2:10 banned-attribute"}},
		{"comment and string are not code", "# os.system('id')\ns = 'eval(1)'\n", nil},
		{"utf-7 cookie is refused", "# coding: utf-7\n+AAo-import os\n", []string{"1:1 syntax-error"}},
		{"nul byte", "x = 1\x00\n", []string{"1:6 syntax-error"}},
		{"invalid utf-8", "x = '\xc3\x28'\n", []string{"1:6 syntax-error"}},
		{"python 2 exec statement", "exec 'import os'\n", []string{"1:6 syntax-error"}},
		{"tab/space confusion", "if x:\n        pass\n\tos.system('id')\n", []string{"3:2 syntax-error"}},
	})
}

// A banned builtin's name bound, rebound, declared global or captured:
// each of these once made the builtin look like a name the file binds
// itself, and the reference went unflagged. The first rows are the
// bypasses that ran past the scan (one of them to os.system); the rest
// are the other ways to bind a name, then uses that must stay clean.
func TestSourceRulesRefuseRebindingBuiltins(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{"global getattr, aliased, computed name", "import os\ndef f():\n    global getattr\n    g = getattr\n    g(os, 'sy' + 'stem')('id')\n",
			[]string{"3:12 banned-builtin-binding", "4:9 banned-builtin-ref"}},
		{"eval = eval", "eval = eval\neval('1')\n", []string{"1:1 banned-builtin-binding", "1:8 banned-builtin-ref", "2:1 banned-call"}},
		{"global exec", "def f(s):\n    global exec\n    exec = print\n", []string{"2:12 banned-builtin-binding", "3:5 banned-builtin-binding"}},
		{"def default captures eval", "def f(eval=eval):\n    return eval\n",
			[]string{"1:7 banned-builtin-binding", "1:12 banned-builtin-ref", "2:12 banned-builtin-ref"}},
		{"lambda default captures exec", "run = lambda exec=exec: exec\n",
			[]string{"1:14 banned-builtin-binding", "1:19 banned-builtin-ref", "1:25 banned-builtin-ref"}},
		{"for target over [eval]", "for eval in [eval]:\n    eval('1')\n",
			[]string{"1:5 banned-builtin-binding", "1:14 banned-builtin-ref", "2:5 banned-call"}},
		{"lambda default called at once", "(lambda exec=exec: exec)()(src)\n",
			[]string{"1:9 banned-builtin-binding", "1:14 banned-builtin-ref", "1:20 banned-builtin-ref"}},
		{"default under another name", "def f(e=compile):\n    return e\n", []string{"1:9 banned-builtin-ref"}},
		{"keyword-only default", "def f(*, g=getattr):\n    pass\n", []string{"1:12 banned-builtin-ref"}},
		{"nonlocal", "def f():\n    vars = 1\n    def g():\n        nonlocal vars\n",
			[]string{"2:5 banned-builtin-binding", "4:18 banned-builtin-binding"}},
		{"def named like a builtin", "def getattr(o, n):\n    return o\n", []string{"1:5 banned-builtin-binding"}},
		{"class named like a builtin", "class locals:\n    pass\n", []string{"1:7 banned-builtin-binding"}},
		{"import as", "import torch as compile\n", []string{"1:17 banned-builtin-binding"}},
		{"from-import of the name", "from torch import compile\n", []string{"1:19 banned-builtin-binding"}},
		{"from-import renamed to the name", "from math import sqrt as exec\n", []string{"1:26 banned-builtin-binding"}},
		{"except as", "try:\n    pass\nexcept E as open:\n    pass\n", []string{"3:13 banned-builtin-binding"}},
		{"with as", "with ctx() as help:\n    pass\n", []string{"1:15 banned-builtin-binding"}},
		{"walrus target", "if (eval := f):\n    pass\n", []string{"1:5 banned-builtin-binding"}},
		{"comprehension target", "x = [globals for globals in y]\n", []string{"1:6 banned-builtin-ref", "1:18 banned-builtin-binding"}},
		{"augmented assignment", "setattr += 1\n", []string{"1:1 banned-builtin-binding"}},
		{"tuple target", "a, delattr = 1, 2\n", []string{"1:4 banned-builtin-binding"}},
		{"del", "del breakpoint\n", []string{"1:5 banned-builtin-binding"}},
		{"match capture", "match x:\n    case [*exec]: pass\n    case {**eval}: pass\n    case __import__: pass\n",
			[]string{"2:12 banned-builtin-binding", "3:13 banned-builtin-binding", "4:10 banned-builtin-binding"}},
		{"returned", "def f():\n    return exec\n", []string{"2:12 banned-builtin-ref"}},
		{"passed as an argument", "m(getattr)\n", []string{"1:3 banned-builtin-ref"}},
		{"keyword arguments, attributes and methods are not the name", "f(eval=True, compile=False)\nself.open = o\nm.eval()\nx.exec = 1\ngetattr(m, 'weight')\n", nil},
		{"input is a tensor's name", "def forward(input):\n    return input\ninput = x\n", nil},
	})
}

// Module families the upstream roots miss, each reached the ways an
// attacker reaches it: imported, from-imported, as the C twin, as an
// attribute of an allowed module, and through attribute-fetching helpers.
// Every one of these ran on CPython 3.11 (numpy and torch ones per their
// documented APIs).
func TestSourceRulesCloseModuleFamilies(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{"timeit runs a statement string", "import timeit\ntimeit.timeit(s)\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"bdb runs a command string", "import bdb\nbdb.Bdb().run(s)\n", []string{"1:8 banned-import"}},
		{"cProfile runs a command string", "import cProfile\ncProfile.run(s)\n", []string{"1:8 banned-import"}},
		{"profile runs a command string", "from profile import run\nrun(s)\n", []string{"1:1 banned-import"}},
		{"trace runs a command string", "import trace\ntrace.Trace().run(s)\n", []string{"1:8 banned-import"}},
		{"code runs source", "import code\ncode.InteractiveInterpreter().runsource(s)\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"codeop compiles source", "from codeop import compile_command\n", []string{"1:1 banned-import"}},
		{"pdb runs a command string", "import pdb\npdb.run(s)\n", []string{"1:8 banned-import"}},
		{"pydoc resolves a dotted name", "import pydoc\npydoc.locate('os.system')('id')\n", []string{"1:8 banned-import"}},
		{"doctest runs docstrings", "import doctest\ndoctest.run_docstring_examples(f, {})\n", []string{"1:8 banned-import"}},
		{"unittest.mock imports by string", "from unittest import mock\nmock.patch('os.system').getter()\n", []string{"1:1 banned-import"}},
		{"logging.config resolves dotted factories", "import logging.config\nlogging.config.dictConfig(c)\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"logging.config reached from logging", "import logging\nlogging.config.dictConfig(c)\n", []string{"2:1 banned-attribute"}},
		{"from logging import config", "from logging import config\n", []string{"1:21 banned-import"}},
		{"methodcaller system", "import operator, os\noperator.methodcaller('system', 'id')(os)\n", []string{"2:1 banned-attribute"}},
		{"attrgetter system", "import operator, os\noperator.attrgetter('system')(os)('id')\n", []string{"2:1 banned-attribute"}},
		{"attrgetter dotted", "import operator\noperator.attrgetter('path.os.system')\n", []string{"2:1 banned-attribute"}},
		{"attrgetter computed", "import operator\noperator.attrgetter(name)(os)\n", []string{"2:1 dynamic-attribute"}},
		{"attrgetter from-import alias", "from operator import attrgetter as ag\nag('system')(os)('id')\n", []string{"2:1 banned-attribute"}},
		{"_operator twin", "import _operator\n_operator.methodcaller('system', 'id')(os)\n", []string{"2:1 banned-attribute"}},
		{"attrgetter aliased reference", "import operator\ng = operator.attrgetter\n", []string{"2:5 dynamic-attribute"}},
		{"attrgetter literal is fine", "import operator\nkey = operator.attrgetter('weight')\n", nil},
		{"getattr_static", "import inspect, os\ninspect.getattr_static(os, 'system')('id')\n", []string{"2:1 banned-attribute"}},
		{"getmembers", "import inspect, os\ndict(inspect.getmembers(os))['system']('id')\n", []string{"2:6 dynamic-attribute"}},
		{"inspect.stack frames", "import inspect\ninspect.stack()[1].frame\n", []string{"2:1 banned-attribute"}},
		{"inspect.currentframe", "import inspect\nf = inspect.currentframe()\n", []string{"2:5 introspection"}},
		{"_posixsubprocess", "import _posixsubprocess\n_posixsubprocess.fork_exec(*a)\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"posix module", "import posix\n", []string{"1:8 banned-import"}},
		{"distutils spawn", "from distutils.spawn import spawn\n", []string{"1:1 banned-import"}},
		{"torch.multiprocessing", "import torch.multiprocessing as mp\n", []string{"1:8 banned-import"}},
		{"torch.multiprocessing as an attribute", "import torch\ntorch.multiprocessing.spawn(f)\n", []string{"2:1 banned-attribute"}},
		{"from torch import multiprocessing", "from torch import multiprocessing\n", []string{"1:19 banned-import-name"}},
		{"multiprocessing twin", "import _multiprocessing\n", []string{"1:8 banned-import"}},
		{"numpy.ctypeslib", "import numpy as np\nlib = np.ctypeslib.load_library('libc', '/lib')\n", []string{"2:7 banned-attribute", "2:7 banned-attribute"}},
		{"numpy.ctypeslib import", "from numpy.ctypeslib import load_library\n", []string{"1:1 banned-import"}},
		{"ctypes through numpy", "import numpy\nnumpy.ctypeslib.ctypes.CDLL(None)\n", []string{"2:1 banned-attribute", "2:1 banned-attribute", "2:1 banned-attribute"}},
		{"array ctypes", "p = arr.ctypes.data\n", []string{"1:5 banned-attribute"}},
		{"_socket", "import _socket\n", []string{"1:8 banned-import"}},
		{"_ssl", "import _ssl\n", []string{"1:8 banned-import"}},
		{"_asyncio", "import _asyncio\n", []string{"1:8 banned-import"}},
		{"socket reached as attribute", "s = m.socket.socket()\n", []string{"1:5 banned-attribute", "1:5 banned-attribute"}},
		{"_pickle Unpickler", "import _pickle\n_pickle.Unpickler(f).load()\n", []string{"1:8 banned-import", "2:1 pickle-load"}},
		{"Unpickler from elsewhere", "u = m.Unpickler(f)\n", []string{"1:5 pickle-load"}},
		{"numpy allow_pickle", "import numpy as np\nnp.load(f, allow_pickle=True)\n", []string{"2:12 pickle-load"}},
		{"numpy allow_pickle computed", "import numpy as np\nnp.load(f, allow_pickle=flag)\n", []string{"2:12 pickle-load"}},
		{"numpy allow_pickle false is fine", "import numpy as np\nx = np.load(f, allow_pickle=False)\ny = np.load(f)\n", nil},
		{"io.open", "import io\nio.open('f', 'w')\n", []string{"2:1 banned-attribute"}},
		{"from io import open", "from io import open\n", []string{"1:16 banned-builtin-binding", "1:16 banned-import-name"}},
		{"io.BytesIO is fine", "import io\nb = io.BytesIO()\n", nil},
		{"os.open", "import os\nos.open('f', os.O_CREAT)\n", []string{"2:1 banned-attribute"}},
		{"os alias open", "import os as o\no.fdopen(3, 'w')\n", []string{"2:1 banned-attribute"}},
		{"os reached through torch", "import torch\ntorch.os.open('f', 0)\n", []string{"2:1 banned-attribute"}},
		{"getattr os open", "import os\ngetattr(os, 'open')('f', 0)\n", []string{"2:1 banned-attribute"}},
		{"_io", "import _io\n", []string{"1:8 banned-import"}},
		{"os.path is fine", "import os\np = os.path.join(a, b)\nos.environ.get('X')\n", nil},
		{"builtins as attribute", "m.builtins.eval('1')\n", []string{"1:1 banned-attribute"}},
		{"sys.settrace", "import sys\nsys.settrace(f)\n", []string{"2:1 banned-attribute"}},
		{"sys.meta_path", "import sys\nsys.meta_path.insert(0, f)\n", []string{"2:1 banned-attribute"}},
		{"gc.get_referrers", "import gc\ngc.get_referrers(x)\n", []string{"2:1 introspection"}},
		{"gc star", "from gc import *\n", []string{"1:16 star-import"}},
		{"gc.collect is fine", "import gc\ngc.collect()\n", nil},
		{"types.CodeType", "import types\ntypes.CodeType(*a)\n", []string{"2:1 introspection"}},
		{"types.FunctionType", "from types import FunctionType\n", []string{"1:19 banned-import-name"}},
		{"torch cpp_extension", "from torch.utils.cpp_extension import load_inline\n", []string{"1:1 banned-import"}},
		{"torch cpp_extension attribute", "import torch\ntorch.utils.cpp_extension.load_inline(n, s)\n", []string{"2:1 banned-attribute", "2:1 banned-attribute"}},
		{"torch benchmark timer", "import torch\ntorch.utils.benchmark.Timer(stmt=s).timeit(1)\n", []string{"2:1 banned-attribute", "2:1 banned-attribute"}},
		{"torch hub", "import torch\ntorch.hub.load(r, m)\n", []string{"2:1 banned-attribute", "2:1 pickle-load"}},
		{"torch ops load_library", "import torch\ntorch.ops.load_library('x.so')\n", []string{"2:1 banned-attribute"}},
		{"cudnn benchmark is fine", "import torch\ntorch.backends.cudnn.benchmark = True\n", nil},
		{"xxsubinterpreters", "import _xxsubinterpreters as i\ni.run_string(n, s)\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"importlib via attribute", "m.importlib.import_module('os')\n", []string{"1:1 banned-attribute", "1:1 banned-attribute"}},
		{"numpy star", "from numpy import *\n", []string{"1:19 star-import"}},
		{"from sys import modules", "from sys import modules\n", []string{"1:17 banned-import-name"}},
		{"getattr torch hub", "import torch\ngetattr(torch, 'hub').load(r, m)\n", []string{"2:1 banned-attribute"}},
		{"getattr logging config", "import logging\ngetattr(logging, 'config').dictConfig(c)\n", []string{"2:1 banned-attribute"}},
		{"getattr aliased torch utils benchmark", "import torch.utils as u\ngetattr(u, 'benchmark')\n", []string{"2:1 banned-attribute"}},
		{"attrgetter hub", "import operator\noperator.attrgetter('hub.load')(torch)\n", []string{"2:1 banned-attribute"}},
		{"allow_pickle through a dict literal", "import numpy as np\nnp.load(f, **{'allow_pickle': True})\n", []string{"2:12 pickle-load"}},
		{"other keyword dicts are fine", "f(x, **{'dim': 1})\n", nil},
		{"help imports by name", "help('subprocess')\n", []string{"1:1 banned-call"}},
		{"aliased help", "h = help\n", []string{"1:5 banned-builtin-ref"}},
		{"string.Formatter get_field", "import string, os\nstring.Formatter().get_field('0.system', (os,), {})[0]('id')\n", []string{"2:1 banned-attribute"}},
		{"asyncio reached as an attribute", "m.asyncio.create_subprocess_exec('id')\n", []string{"1:1 banned-attribute"}},
		{"concurrent reached as an attribute", "m.concurrent.futures.ProcessPoolExecutor()\n", []string{"1:1 banned-attribute"}},
		{"tensor select is fine", "y = x.select(0, 1)\n", nil},
		{"typing evaluates string annotations", "import typing\ntyping.get_type_hints(f)\n", []string{"2:1 banned-attribute"}},
		{"from typing import get_type_hints", "from typing import get_type_hints\n", []string{"1:20 banned-import-name"}},
		{"typing ForwardRef evaluates", "import typing\ntyping.ForwardRef(s)._evaluate(g, None, frozenset())\n", []string{"2:1 banned-attribute", "2:1 banned-attribute"}},
		{"typing star", "from typing import *\n", []string{"1:20 star-import"}},
		{"get_annotations eval_str", "import inspect\ninspect.get_annotations(f, eval_str=True)\n", []string{"2:28 banned-call"}},
		{"get_annotations without eval_str is fine", "import inspect\na = inspect.get_annotations(f)\n", nil},
		{"pathlib object write", "p.write_text('x')\nq.write_bytes(b)\n", []string{"1:1 banned-attribute", "2:1 banned-attribute"}},
		{"numpy tofile", "arr.tofile('/tmp/x')\n", []string{"1:1 banned-attribute"}},
		{"os private spawn worker", "import os\nos._spawnvef(os.P_WAIT, f, a, e, os.execve)\n", []string{"2:1 banned-attribute", "2:34 banned-attribute"}},
		{"os private exec worker", "import os\nos._execvpe(f, a, e)\n", []string{"2:1 banned-attribute"}},
		{"uuid runs a command", "import uuid\nuuid._get_command_stdout('sh', '-c', 'id')\n", []string{"2:1 banned-attribute"}},
		{"_osx_support runs a shell string", "import _osx_support\n", []string{"1:8 banned-import"}},
		{"logging handlers reach the network", "from logging.handlers import SocketHandler\n", []string{"1:1 banned-import"}},
		{"archive writers", "import zipfile, tarfile, gzip\n", []string{"1:8 banned-import", "1:17 banned-import", "1:26 banned-import"}},
		{"linecache reads any file", "import linecache\n", []string{"1:8 banned-import"}},
		{"cffi backend twin", "import _cffi_backend\n", []string{"1:8 banned-import"}},
		{"tokenize.open", "import tokenize\ntokenize.open(p)\n", []string{"2:1 banned-attribute"}},
		{"module assigned to a name", "import os\no = os\no.open('f', 0)\n", []string{"3:1 banned-attribute"}},
		{"aliased module assigned to a name", "import io as i\nf: object = i\nf.open('f', 'w')\n", []string{"3:1 banned-attribute"}},
		{"torch assigned then hub", "import torch\nt = torch\nt.hub.list(r)\n", []string{"3:1 banned-attribute"}},
		{"torch assigned then load", "import torch as tt\nt = tt\nt.load(f)\n", []string{"3:1 pickle-load"}},
		{"from sys import _getframe", "from sys import _getframe\n", []string{"1:17 banned-import-name"}},
	})
}

// The validator's own packages sit on the candidate's sys.path; a kernel
// that imports one can replace the checks its process makes (the
// harness-patching fixture replaced cacheon_worker.candidate.Call.violations
// and zeroed its input under a PASS). Every spelling of the import is a
// finding naming the module, as are the routes to a loaded module that
// need no import statement (sys.modules, the string forms).
func TestSourceRulesRefuseHarnessImports(t *testing.T) {
	t.Parallel()
	runSourceCases(t, []sourceCase{
		{"import of the harness", "import cacheon_worker\n", []string{"1:8 harness-import"}},
		{"import of a harness submodule", "import cacheon_worker.candidate as c\nc.Call.violations = f\n", []string{"1:8 harness-import"}},
		{"the reference package", "import os, cacheon_reference.compare\n", []string{"1:12 harness-import"}},
		{"the substrate", "import cacheon_substrate\n", []string{"1:8 harness-import"}},
		{"from-import of a submodule", "from cacheon_worker import candidate\n", []string{"1:1 harness-import"}},
		{"from-import from a submodule", "from cacheon_reference.slots.activation import randn\n", []string{"1:1 harness-import"}},
		{"nested in a function", "def f():\n    import cacheon_substrate.serve\n", []string{"2:12 harness-import"}},
		{"__import__ by string", "m = __import__('cacheon_worker.candidate')\n", []string{"1:5 banned-call"}},
		{"importlib by string", "import importlib\nimportlib.import_module('cacheon_worker')\n", []string{"1:8 banned-import", "2:1 banned-attribute"}},
		{"sys.modules", "import sys\nc = sys.modules['cacheon_worker.candidate']\n", []string{"2:5 introspection"}},
		{"sys.modules aliased", "import sys as s\nm = s.modules\n", []string{"2:5 introspection"}},
		{"modules from sys", "from sys import modules\n", []string{"1:17 banned-import-name"}},
		{"a bundle module of a similar name", "import cacheon_worker_notes\nimport kernels.cacheon_worker\n", nil},
		{"relative import of a bundle module", "from . import cacheon_worker\n", nil},
	})
	fs := Source("kernels/k.py", []byte("import cacheon_worker.candidate\n"))
	want := `kernels/k.py:1:8: harness-import: import of "cacheon_worker.candidate": cacheon_worker is the validator's harness, which a kernel may not reach`
	if len(fs) != 1 || fs[0].String() != want {
		t.Errorf("findings = %v, want %q", fs, want)
	}
}

// Source the worker's Python 3.11 refuses is refused here too, so that
// the scan never reads code differently from the interpreter that runs
// it. Each was checked against CPython 3.11.
func TestSourceRefusesWhatTheWorkerRefuses(t *testing.T) {
	runSourceCases(t, []sourceCase{
		{"PEP 695 type statement", "import os\ntype X = int\nos.system('id')\n", []string{"2:1 syntax-error"}},
		{"PEP 695 generic function", "def f[T](x: T) -> T:\n    return x\n", []string{"1:6 syntax-error"}},
		{"PEP 701 quote reuse", "s = f'{x['k']}'\n", []string{"1:10 syntax-error"}},
		{"PEP 701 backslash in field", "s = f'{\"\\n\".join(x)}'\n", []string{"1:9 syntax-error"}},
		{"PEP 701 comment in field", "s = f'''{x # c\n}'''\n", []string{"1:12 syntax-error"}},
		{"integer literal over 4,300 digits", "x = " + strings.Repeat("7", 4301) + "\n", []string{"1:5 syntax-error"}},
		{"overlong \\N name", "x = '\\N{" + strings.Repeat("A", 89) + "}'\n", []string{"1:5 syntax-error"}},
	})
	fs := Source("k.py", []byte("type X = int\n"))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "does not parse as Python 3.11") || !strings.Contains(fs[0].Message, "requires Python 3.12") {
		t.Errorf("findings = %v, want one naming 3.11 and the version the construct needs", fs)
	}
}

func TestSourceFindingsCarryPathAndMessage(t *testing.T) {
	fs := Source("kernels/k.py", []byte("import os\nos.system('id')\n"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %v", len(fs), fs)
	}
	got := fs[0].String()
	want := "kernels/k.py:2:1: banned-attribute: attribute \"system\" is a process or loader primitive"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestRuleIDsAreUnique(t *testing.T) {
	all := []Rule{RuleSyntax, RuleBannedImport, RuleBannedImportName, RuleStarImport, RuleBannedCall,
		RuleBannedBuiltinRef, RuleBannedBuiltinBind, RuleDynamicAttribute, RuleNamespaceSubscript, RuleBannedAttribute, RulePickleLoad,
		RuleDunderAttribute, RuleIntrospection, RuleHarnessImport, RuleFileTooLarge, RuleBrokenKernel, RuleSymlink, RuleSpecialFile,
		RuleBinary, RuleUndeclaredCUDA, RuleUndeclaredPatch, RuleUnexpectedFile, RuleUnreadable, RuleBundleLimit}
	seen := map[Rule]bool{}
	var ids []string
	for _, r := range all {
		if seen[r] {
			t.Errorf("rule id %q used twice", r)
		}
		seen[r] = true
		ids = append(ids, string(r))
	}
	sort.Strings(ids)
}

// Many findings on one long non-ASCII line must not cost a rescan of the
// line per finding.
func TestManyFindingsOnOneLongLine(t *testing.T) {
	const n = 200000
	src := "é = 1;" + strings.Repeat("eval(1);", n) + "\n"
	fs := Source("k.py", []byte(src))
	if len(fs) != n {
		t.Fatalf("got %d findings, want %d", len(fs), n)
	}
	last := fs[len(fs)-1]
	if last.Line != 1 || last.Col != 7+8*(n-1) {
		t.Errorf("last finding at %d:%d, want 1:%d", last.Line, last.Col, 7+8*(n-1))
	}
}

// Left-associative chains give trees as deep as the chain is long; the
// scan must walk them without recursion.
func TestDeepLeftChainsDoNotExhaustTheStack(t *testing.T) {
	tests := map[string]struct {
		src  string
		rule Rule
	}{
		"sum":             {"x = a" + strings.Repeat("+a", 2<<20) + "\n", ""},
		"attribute chain": {"torch" + strings.Repeat(".a", 1<<20) + ".load(f)\n", RulePickleLoad},
		"call chain":      {"f" + strings.Repeat("()", 1<<20) + "\n", ""},
		"subscript chain": {"__builtins__" + strings.Repeat("[0]", 1<<20) + "\n", RuleNamespaceSubscript},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fs := Source("k.py", []byte(tt.src))
			if tt.rule == "" && len(fs) != 0 || tt.rule != "" && (len(fs) != 1 || fs[0].Rule != tt.rule) {
				n := min(len(fs), 3)
				t.Errorf("findings = %v (of %d), want rule %q", fs[:n], len(fs), tt.rule)
			}
		})
	}
}

// bannedModule and bannedPath look at most maxPrefixNames names deep.
func TestBannedPrefixesFitTheWalk(t *testing.T) {
	for p := range bannedModulePrefixes {
		if n := strings.Count(p, ".") + 1; n > maxPrefixNames {
			t.Errorf("%q has %d names; maxPrefixNames is %d", p, n, maxPrefixNames)
		}
	}
}

"""The build_cuda_ext patcher of the validator's prebuild.

It runs with the worker interpreter inside the compiler sandbox, never with
contribution code, and reports the toolchain the prebuild compiles every
row's declared CUDA sources with: where this interpreter's torch keeps its
C++ headers and libraries, the C++ ABI torch was built with, and the
compiler (nvcc for the cuda target, g++ for cpu) with its version. The
libraries must be built against the torch that later loads them.

Its SHA-256 is the reviewed digest a contribution's rebuild.json step
"build_cuda_ext.py" binds to in the selected payload's rebuild identity.

usage: build_cuda_ext.py OUT.json TARGET COMPILER
"""
import json, os, shutil, subprocess, sys

out_path, target, compiler = sys.argv[1], sys.argv[2], sys.argv[3]
import torch

cuda = target == "cuda"
try:
    import torch.utils.cpp_extension as ce
except ImportError:  # it needs setuptools, which a venv may lack
    ce = None


def paths(fn):
    try:
        return list(fn(device_type="cuda" if cuda else "cpu"))
    except TypeError:  # torch before 2.6 takes cuda=
        return list(fn(cuda=cuda))


def cuda_home():
    if ce is not None and ce.CUDA_HOME:
        return ce.CUDA_HOME
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else ""


home = cuda_home()
doc = {"torch": torch.__version__, "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
       "cuda_home": home, "torch_cuda": torch.version.cuda or ""}
if ce is not None:
    doc["include"] = paths(ce.include_paths)
    doc["lib"] = paths(ce.library_paths) if (not cuda or home) else []
else:  # the layout torch's extension builder uses
    base = os.path.dirname(os.path.abspath(torch.__file__))
    doc["include"] = [os.path.join(base, "include"), os.path.join(base, "include", "torch", "csrc", "api", "include")]
    doc["lib"] = [os.path.join(base, "lib")]
    if cuda and home:
        doc["include"].append(os.path.join(home, "include"))
        doc["lib"].append(os.path.join(home, "lib64"))
if not compiler:
    if cuda:
        nvcc = os.path.join(home, "bin", "nvcc") if home else ""
        compiler = nvcc if nvcc and os.path.exists(nvcc) else (shutil.which("nvcc") or "")
    else:
        compiler = shutil.which("g++") or shutil.which("c++") or ""
doc["compiler"] = compiler
doc["compiler_version"] = ""
if compiler:
    try:
        r = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
        lines = [line.strip() for line in (r.stdout or r.stderr).splitlines() if line.strip()]
        # g++ names its version on the first line, nvcc on a "release" line.
        keep = lines[:1] + [line for line in lines[1:] if "release" in line.lower()]
        doc["compiler_version"] = "; ".join(keep)[:400]
    except (OSError, subprocess.TimeoutExpired) as e:
        doc["compiler_version"] = "unknown: %s" % e
with open(out_path, "w") as f:
    json.dump(doc, f)

"""What the worker runs on: interpreter, torch, device. Recorded in every
result so a verdict names the stack that produced it."""

import importlib.util
import platform
import sys


def rank_device(device: str, rank: int, collective: bool):
    import torch

    if device == "cpu":
        return torch.device("cpu")
    if device != "cuda":
        raise ValueError(f"unknown device {device!r}; expected cpu or cuda")
    if not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch.cuda.is_available() is False")
    index = rank if collective else 0
    torch.cuda.set_device(index)
    # The truth is fp32; keep candidate-visible matmul precision at the
    # torch default rather than whatever a previous import set.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch.device("cuda", index)


def architecture(device: str) -> str:
    """The capability-domain architecture of device: "cpu" or "smXY"."""
    if device == "cpu":
        return "cpu"
    import torch

    major, minor = torch.cuda.get_device_capability(0)
    return f"sm{major}{minor}"


def _version(mod: str):
    if importlib.util.find_spec(mod) is None:
        return None
    try:
        from importlib.metadata import version
        return version(mod)
    except Exception:
        return "unknown"


def describe(device: str):
    """The interpreter and device. On the CPU torch is not imported (the plan
    role stays cheap): its presence and version come from package metadata."""
    if importlib.util.find_spec("torch") is None:
        raise RuntimeError(f"No module named 'torch' in {sys.executable}: the worker interpreter needs torch")
    env = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "triton": _version("triton"),
    }
    if device == "cpu":
        env.update(torch=_version("torch"), cuda_available=None, architecture="cpu")
        return env
    import torch

    env.update(torch=torch.__version__, cuda_available=bool(torch.cuda.is_available()))
    if torch.cuda.is_available():
        env["device_name"] = torch.cuda.get_device_name(0)
        env["device_count"] = torch.cuda.device_count()
        env["cuda"] = torch.version.cuda
        env["architecture"] = architecture(device)
    else:
        env["architecture"] = None
    return env

"""What the worker runs on: interpreter, torch, device. Recorded in every
result so a verdict names the stack that produced it."""

import importlib.util
import platform
import sys

import torch


def rank_device(device: str, rank: int, collective: bool) -> torch.device:
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
    env = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch": torch.__version__,
        "triton": _version("triton"),
        "cuda_available": bool(torch.cuda.is_available()),
    }
    if device == "cuda" and torch.cuda.is_available():
        env["device_name"] = torch.cuda.get_device_name(0)
        env["device_count"] = torch.cuda.device_count()
        env["cuda"] = torch.version.cuda
    env["architecture"] = architecture(device) if (device == "cpu" or torch.cuda.is_available()) else None
    return env

"""Memory one process allocates and another maps: the checker's arena.

The checker (cacheon_worker/checker.py) owns the memory of a candidate's
checked calls. It allocates one block, exports it as a file descriptor,
and the controller hands that descriptor to the candidate worker, which
maps the same memory and places its call tensors there
(cacheon_reference.arena). Whatever the candidate's kernel writes lands in
memory the checker reads itself while the candidate's sandbox is stopped.

Two kinds of block, one interface (export, then open_shared on the other
side):

- on CUDA, device memory from the driver's virtual memory management API
  (cuMemCreate with a POSIX file descriptor handle, cuMemMap): a
  descriptor passed over a unix socket is a capability of its own, so the
  two processes need not share a PID or IPC namespace, which the legacy
  cudaIpc handles require;
- on the CPU, a memfd, mapped shared.

The block is wrapped as a flat uint8 torch tensor without a copy (the CUDA
array interface on the GPU, a shared mmap on the CPU).
"""

from __future__ import annotations

import ctypes
import mmap
import os

from ._torch import torch

# cuda.h constants (stable across CUDA 11.2 and later).
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_driver = None


def _cuda():
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, p = ctypes.c_uint64, ctypes.POINTER
        for name, args in {
            "cuMemGetAllocationGranularity": [p(ctypes.c_size_t), p(_AllocationProp), ctypes.c_int],
            "cuMemCreate": [p(u64), ctypes.c_size_t, p(_AllocationProp), u64],
            "cuMemExportToShareableHandle": [ctypes.c_void_p, u64, ctypes.c_int, u64],
            "cuMemImportFromShareableHandle": [p(u64), ctypes.c_void_p, ctypes.c_int],
            "cuMemAddressReserve": [p(u64), ctypes.c_size_t, ctypes.c_size_t, u64, u64],
            "cuMemMap": [u64, ctypes.c_size_t, ctypes.c_size_t, u64, u64],
            "cuMemSetAccess": [u64, ctypes.c_size_t, p(_AccessDesc), ctypes.c_size_t],
            "cuMemRelease": [u64],
            "cuGetErrorName": [ctypes.c_int, p(ctypes.c_char_p)],
        }.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _driver = lib
    return _driver


def _check(what, rc):
    if rc != 0:
        name = ctypes.c_char_p()
        _cuda().cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: CUDA driver error {rc} ({(name.value or b'?').decode()})")


def _prop(index):
    prop = _AllocationProp()
    prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, index)
    return prop


def _granularity(index):
    g = ctypes.c_size_t()
    _check("cuMemGetAllocationGranularity",
           _cuda().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop(index)),
                                                 _CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return g.value


class _DeviceBlock:
    """A mapping of one VMM allocation in this process, exposed through the
    CUDA array interface (torch.as_tensor keeps this object alive as long
    as a tensor of it lives)."""

    def __init__(self, handle, nbytes, index):
        drv = _cuda()
        self.nbytes, self.index = nbytes, index
        ptr = ctypes.c_uint64()
        _check("cuMemAddressReserve", drv.cuMemAddressReserve(ctypes.byref(ptr), nbytes, 0, 0, 0))
        _check("cuMemMap", drv.cuMemMap(ptr.value, nbytes, 0, handle, 0))
        access = _AccessDesc(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, index), _CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        _check("cuMemSetAccess", drv.cuMemSetAccess(ptr.value, nbytes, ctypes.byref(access), 1))
        self.ptr = ptr.value
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                                         "version": 3, "strides": None}


def _device_index(device):
    device = torch.device(device)
    index = device.index if device.index is not None else torch.cuda.current_device()
    # The driver calls below need the device's primary context current on
    # this thread: torch makes it so on its first allocation there.
    torch.cuda.set_device(index)
    torch.empty(1, device=device)
    return index


def _round_up(n, g):
    return (n + g - 1) // g * g


def export(nbytes: int, device) -> tuple:
    """(tensor, fd, size): a new block of at least nbytes on device, mapped
    here as a flat uint8 tensor, and a file descriptor another process
    passes to open_shared. size is the block's size, rounded up to the
    allocation granularity."""
    device = torch.device(device)
    if device.type == "cpu":
        size = _round_up(max(nbytes, 1), mmap.PAGESIZE)
        fd = os.memfd_create("cacheon-checker-arena", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        return _map_cpu(fd, size), fd, size
    index = _device_index(device)
    size = _round_up(max(nbytes, 1), _granularity(index))
    drv = _cuda()
    handle = ctypes.c_uint64()
    _check("cuMemCreate", drv.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(_prop(index)), 0))
    fd = ctypes.c_int(-1)
    _check("cuMemExportToShareableHandle",
           drv.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value,
                                            _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
    # The handle is kept for the life of this process: the exported
    # descriptor must name a live allocation until the other side imports.
    block = _DeviceBlock(handle.value, size, index)
    return torch.as_tensor(block, device=device), fd.value, size


def open_shared(fd: int, nbytes: int, device) -> torch.Tensor:
    """The block another process exported as fd, nbytes long, mapped here
    as a flat uint8 tensor on device. The descriptor may be closed after."""
    device = torch.device(device)
    if device.type == "cpu":
        if os.fstat(fd).st_size < nbytes:
            raise ValueError(f"the shared block is {os.fstat(fd).st_size} bytes, not {nbytes}")
        return _map_cpu(fd, nbytes)
    index = _device_index(device)
    drv = _cuda()
    handle = ctypes.c_uint64()
    _check("cuMemImportFromShareableHandle",
           drv.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                              _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    block = _DeviceBlock(handle.value, nbytes, index)
    # The mapping holds the memory; the imported handle's reference can go.
    drv.cuMemRelease(handle.value)
    return torch.as_tensor(block, device=device)


def _map_cpu(fd, nbytes):
    m = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    # frombuffer keeps m alive through the tensor.
    return torch.frombuffer(m, dtype=torch.uint8, count=nbytes)

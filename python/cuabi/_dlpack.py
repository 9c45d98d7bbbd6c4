# SPDX-License-Identifier: Apache-2.0
"""DLPack: exporting cuabi's device arrays as capsules, and reading other
libraries' capsules.

Capsules need CPython's C API (through ``ctypes.pythonapi``); on interpreters
without it (PyPy) the functions here raise :class:`BufferError` saying so.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Callable, Optional, Tuple

from . import driver as _d
from ._array_interface import dtype_info
from ._event import Event
from ._stream import stream_handle

# DLPack device types
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13
DLPACK_MAJOR, DLPACK_MINOR = 1, 0
FLAG_READ_ONLY = 1

# typestr kind -> DLPack type code
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6, "c": 5}
_DL_KINDS = {v: k for k, v in _DL_CODES.items()}


def sync_for_consumer(producer_stream: Optional[int], consumer: Any) -> None:
    """Order the producer's pending work before the consumer's stream (DLPack rules)."""
    if consumer == -1:
        return
    if consumer is None:
        consumer = 1
    if not isinstance(consumer, int) or isinstance(consumer, bool):
        raise TypeError("stream must be an int or None")
    if consumer == 0:
        raise BufferError("DLPack stream 0 is ambiguous for CUDA; use 1 (legacy) or 2 (per-thread)")
    if producer_stream is None or producer_stream == consumer:
        return
    with Event(timing=False) as ev:
        _d.cuEventRecord(ev.handle, producer_stream)
        _d.cuStreamWaitEvent(consumer, ev.handle, 0)


# -- DLPack structures -------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_capi_lock = threading.Lock()
_capi = None


class _Export:
    """One exported tensor: the ctypes structures the consumer reads, the
    object whose memory it is (kept alive until released), and the capsule
    while cuabi still holds it (see :func:`export`)."""

    __slots__ = ("mt", "shape", "strides", "source", "capsule", "name")

    def __init__(self, mt: Any, shape: Any, strides: Any, source: Any, name: bytes) -> None:
        self.mt = mt
        self.shape = shape
        self.strides = strides
        self.source = source
        self.capsule: Any = None
        self.name = name


# address of a managed tensor we exported -> its export.  Only single dict
# operations touch it (atomic under the GIL; sweeps work on a snapshot), so
# that no lock is ever held while an export's memory is released.
_live: "dict[int, _Export]" = {}


def _pyapi():
    """CPython's capsule functions through ctypes (None on interpreters without them)."""
    global _capi
    if _capi is not None:
        return _capi
    api = getattr(ctypes, "pythonapi", None)
    if api is None:
        raise BufferError("DLPack capsules need CPython's C API (ctypes.pythonapi), which this "
                          "interpreter does not provide; use __cuda_array_interface__ instead")
    with _capi_lock:
        if _capi is None:
            new = api.PyCapsule_New
            new.restype = ctypes.py_object
            new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
            get = api.PyCapsule_GetPointer
            get.restype = ctypes.c_void_p
            get.argtypes = [ctypes.py_object, ctypes.c_char_p]
            valid = api.PyCapsule_IsValid
            valid.restype = ctypes.c_int
            valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
            setname = api.PyCapsule_SetName
            setname.restype = ctypes.c_int
            setname.argtypes = [ctypes.py_object, ctypes.c_char_p]
            _capi = (new, get, valid, setname)
    return _capi


def _free_exported(addr: int) -> None:
    _live.pop(addr, None)


@_DELETER
def _deleter(addr):
    # called by the consumer (any thread; ctypes takes the GIL) when it is done
    _free_exported(addr)


# A capsule cuabi hands out has no destructor.  A destructor written in
# Python runs as a ctypes callback, and a consumer that gives up (numpy's
# from_dlpack on device memory) drops the capsule with its exception already
# set: the callback then cannot run without losing that exception, which
# turned the consumer's error into "SystemError: ... returned NULL without
# setting an exception".  Instead cuabi keeps a reference to every capsule
# it made, and _sweep() looks at them when it matters (the next export,
# exported_count(), closing the memory): a capsule only cuabi still holds
# was dropped by its consumer; if it was never consumed (still named
# "dltensor"), its export is freed; if it was, the consumer owns the tensor
# and calls the deleter when done.
_REFS_WHEN_ONLY_OURS = 3  # _Export.capsule, the local in _sweep, getrefcount's argument


def _sweep() -> None:
    """Free the exports whose capsules their consumer dropped unconsumed."""
    if not _live:
        return
    _new, _get, valid, _setname = _pyapi()
    getrefcount = sys.getrefcount
    for addr, e in list(_live.items()):
        cap = e.capsule
        if cap is None or getrefcount(cap) > _REFS_WHEN_ONLY_OURS:
            continue
        if valid(cap, e.name):
            _live.pop(addr, None)  # never consumed: nobody will call the deleter
        else:
            e.capsule = None  # consumed: the consumer calls the deleter
        del cap


def export(arr: Any, ptr: int, versioned: bool) -> Any:
    """A DLPack capsule for the device array ``arr`` whose data is at ``ptr``."""
    new, _get, _valid, _setname = _pyapi()
    _sweep()
    typestr, kind, size = dtype_info(arr.typestr)
    ndim = len(arr.shape)
    shape = (ctypes.c_int64 * max(1, ndim))(*arr.shape)
    strides = None
    if arr.strides is not None:
        for st in arr.strides:
            if st % size:
                raise BufferError("DLPack strides are in elements; byte strides %r do not divide "
                                  "by the item size" % (arr.strides,))
        strides = (ctypes.c_int64 * max(1, ndim))(*[st // size for st in arr.strides])
    if versioned:
        mt = _DLManagedTensorVersioned()
        mt.version.major, mt.version.minor = DLPACK_MAJOR, DLPACK_MINOR
        mt.flags = FLAG_READ_ONLY if arr.readonly else 0
        name = b"dltensor_versioned"
    else:
        mt = _DLManagedTensor()
        name = b"dltensor"
    t = mt.dl_tensor
    t.data = ptr
    dev_type, dev_id = arr.__dlpack_device__()
    t.device.device_type = dev_type
    t.device.device_id = dev_id
    t.ndim = ndim
    t.dtype.code = _DL_CODES[kind]
    t.dtype.bits = 8 * size if kind != "b" else 8
    t.dtype.lanes = 1
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    if strides is not None:
        t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    mt.deleter = _deleter
    addr = ctypes.addressof(mt)
    mt.manager_ctx = addr
    e = _Export(mt, shape, strides, arr, name)
    e.capsule = new(addr, name, None)
    _live[addr] = e
    return e.capsule


def exported_count() -> int:
    """DLPack tensors exported by cuabi that their consumers have not yet released."""
    _sweep()
    return len(_live)


def exported_from(buf: Any) -> int:
    """How many unreleased DLPack exports show memory of the buffer ``buf``."""
    _sweep()
    return sum(1 for e in list(_live.values())
               if e.source is buf or getattr(e.source, "_owner", None) is buf)


class Imported:
    """What a producer's DLPack capsule describes (see :func:`consume`)."""

    __slots__ = ("ptr", "shape", "typestr", "strides", "device_id", "managed", "readonly", "stream",
                 "release")

    def __init__(self, ptr: int, shape: Tuple[int, ...], typestr: str, strides: Optional[Tuple[int, ...]],
                 device_id: int, managed: bool, readonly: bool, stream: Optional[int],
                 release: Callable[[], None]) -> None:
        self.ptr = ptr
        self.shape = shape
        self.typestr = typestr
        self.strides = strides
        self.device_id = device_id
        self.managed = managed
        self.readonly = readonly
        self.stream = stream
        self.release = release


def consume(obj: Any, stream: Any, host: bool = False) -> Imported:
    """Take ``obj``'s CUDA tensor through ``obj.__dlpack__``, for use on
    ``stream`` (a cuabi stream or handle; None: the legacy stream).
    ``host=True`` takes a tensor in ordinary host memory (``kDLCPU``)
    instead, for which DLPack has no stream.

    The capsule is marked used; the caller owns the tensor and calls
    ``release()`` on the result when done with the memory.
    """
    _new, get, valid, setname = _pyapi()
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or not hasattr(obj, "__dlpack__"):
        raise TypeError("%s does not implement the DLPack protocol" % type(obj).__name__)
    dev_type, _dev_id = dev()
    if host:
        if dev_type != kDLCPU:
            raise BufferError("the tensor is on device type %d, not host memory (kDLCPU)" % dev_type)
        s: Any = None
    elif dev_type not in (kDLCUDA, kDLCUDAManaged, kDLCUDAHost):
        raise BufferError("from_dlpack: the tensor is on device type %d, not CUDA memory" % dev_type)
    else:
        s = stream_handle(stream) if stream is not None else 1
        if s == 0:
            s = 1
    try:
        capsule = obj.__dlpack__(stream=s, max_version=(DLPACK_MAJOR, DLPACK_MINOR))
    except TypeError:
        capsule = obj.__dlpack__(stream=s)
    if valid(capsule, b"dltensor_versioned"):
        addr = get(capsule, b"dltensor_versioned")
        mt: Any = _DLManagedTensorVersioned.from_address(addr)
        if mt.version.major > DLPACK_MAJOR:
            raise BufferError("DLPack %d.%d is newer than this cuabi understands"
                              % (mt.version.major, mt.version.minor))
        setname(capsule, b"used_dltensor_versioned")
        readonly = bool(mt.flags & FLAG_READ_ONLY)
    elif valid(capsule, b"dltensor"):
        addr = get(capsule, b"dltensor")
        mt = _DLManagedTensor.from_address(addr)
        setname(capsule, b"used_dltensor")
        readonly = False
    else:
        raise BufferError("__dlpack__ did not return a DLPack capsule")
    t = mt.dl_tensor
    deleter = mt.deleter

    def release(addr: int = addr, deleter: Any = deleter) -> None:
        if deleter:
            deleter(addr)

    try:
        kind = _DL_KINDS.get(t.dtype.code)
        if kind is None or t.dtype.lanes != 1:
            raise BufferError("unsupported DLPack dtype (code %d, %d bits, %d lanes)"
                              % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
        itemsize = max(1, t.dtype.bits // 8)
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = None
        if t.strides:
            strides = tuple(t.strides[i] * itemsize for i in range(t.ndim))
        return Imported((t.data or 0) + t.byte_offset, shape, "%s%d" % (kind, itemsize), strides,
                        t.device.device_id, t.device.device_type == kDLCUDAManaged, readonly,
                        s if s not in (None, 1, 2) else None, release)
    except BaseException:
        release()
        raise

"""Sharing device memory with other libraries: DLPack and ``__cuda_array_interface__``.

Both directions are supported:

* cuabi buffers and :class:`DeviceArray` export ``__cuda_array_interface__``
  (version 3) and the DLPack protocol (``__dlpack__`` with ``stream``,
  ``max_version``, ``dl_device`` and ``copy``; versioned capsules when the
  consumer asks for them, legacy ones otherwise);
* :func:`from_dlpack` and :func:`from_cuda_array_interface` (or
  :func:`asarray`, which picks) wrap another library's device array as a
  :class:`DeviceArray` without copying, synchronised as the protocols say.

DLPack capsules need CPython's C API (through ``ctypes.pythonapi``); on PyPy
the DLPack functions raise a clear error and ``__cuda_array_interface__``
remains available.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Optional

from ._core import _finalizing, current_context, stream_handle
from .errors import ClosedError

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
_NAMES = {
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8", "bool": "b1",
    "complex64": "c8", "complex128": "c16",
}


def dtype_info(dtype):
    """Normalise a dtype to ``(typestr, kind, itemsize)``.

    Accepts typestrs (``"<f4"``, ``"f4"``, ``"|u1"``), names (``"float32"``)
    and objects with a ``str`` attribute holding a typestr (numpy dtypes).
    """
    s = getattr(dtype, "str", dtype)
    if not isinstance(s, str):
        raise TypeError("dtype must be a typestr like '<f4' or a name like 'float32', got %r" % (dtype,))
    s = _NAMES.get(s, s)
    if s[:1] in "<>|=":
        order, body = s[0], s[1:]
    else:
        order, body = "", s
    kind, digits = body[:1], body[1:]
    if kind not in _DL_CODES or not digits.isdigit():
        raise ValueError("unsupported dtype %r" % (dtype,))
    size = int(digits)
    if size <= 0:
        raise ValueError("unsupported dtype %r" % (dtype,))
    if order == ">":
        raise ValueError("big-endian dtypes are not supported on the device")
    typestr = ("|" if size == 1 else "<") + kind + digits
    return typestr, kind, size


def cai_dict(ptr, shape, typestr, strides, readonly, stream):
    return {
        "shape": tuple(shape),
        "typestr": typestr,
        "data": (ptr, bool(readonly)),
        "strides": strides,
        "version": 3,
        "stream": stream,
    }


def cai_nbytes(cai):
    """Bytes spanned by a ``__cuda_array_interface__`` dict."""
    _t, _k, size = dtype_info(cai["typestr"])
    shape = cai["shape"]
    strides = cai.get("strides")
    if not shape:
        return size
    if any(d == 0 for d in shape):
        return 0
    if strides is None:
        n = size
        for d in shape:
            n *= d
        return n
    return sum((d - 1) * abs(st) for d, st in zip(shape, strides)) + size


class DeviceArray:
    """A typed view of device memory: pointer, shape, dtype, strides (bytes).

    It keeps its ``owner`` alive (a cuabi buffer, another library's array, or a
    DLPack capsule's tensor, released with :meth:`close` or at garbage
    collection).  Pass it to kernels as a pointer argument, to copies, or to
    other libraries through DLPack or ``__cuda_array_interface__``.
    """

    __slots__ = ("_ptr", "shape", "typestr", "itemsize", "strides", "_owner", "device_id",
                 "readonly", "_stream", "_deleter", "_managed", "__weakref__")

    def __init__(self, ptr: int, shape, dtype="u1", *, strides=None, owner=None,
                 device_id: int = 0, readonly: bool = False, stream: Optional[int] = None):
        if not isinstance(ptr, int) or isinstance(ptr, bool) or ptr < 0:
            raise TypeError("ptr must be a non-negative int")
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(shape)
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool) or d < 0:
                raise ValueError("shape must hold non-negative ints, got %r" % (shape,))
        self.typestr, _kind, self.itemsize = dtype_info(dtype)
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(shape):
                raise ValueError("strides and shape differ in length")
        self._ptr = ptr
        self.shape = shape
        self.strides = strides
        self._owner = owner
        self.device_id = device_id
        self.readonly = bool(readonly)
        self._stream = stream
        self._deleter = None
        self._managed = 0

    @property
    def ptr(self) -> int:
        p = self._ptr
        if p is None:
            raise ClosedError("DeviceArray is closed")
        owner = self._owner
        if owner is not None and getattr(owner, "_h", 1) is None:
            raise ClosedError("the memory behind this DeviceArray was freed")
        return p

    def _cuabi_address(self):
        return self.ptr

    @property
    def dtype(self) -> str:
        return self.typestr

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return cai_nbytes({"typestr": self.typestr, "shape": self.shape, "strides": self.strides})

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def is_c_contiguous(self) -> bool:
        if self.strides is None:
            return True
        expected = self.itemsize
        for d, st in zip(reversed(self.shape), reversed(self.strides)):
            if d != 1 and st != expected:
                return False
            expected *= d
        return True

    def copy_from(self, src, *, stream=None):
        """Copy a host buffer or device array into this (contiguous) array."""
        from ._memory import copy

        if not self.is_c_contiguous():
            raise ValueError("copies need a C-contiguous array")
        copy(self, src, self.nbytes, stream=stream)

    def copy_to(self, dst, *, stream=None):
        """Copy this (contiguous) array into a host buffer or device array."""
        from ._memory import copy

        if not self.is_c_contiguous():
            raise ValueError("copies need a C-contiguous array")
        copy(dst, self, self.nbytes, stream=stream)

    def to_bytes(self) -> bytes:
        out = bytearray(self.nbytes)
        self.copy_to(out)
        return bytes(out)

    @property
    def __cuda_array_interface__(self):
        return cai_dict(self.ptr, self.shape, self.typestr, self.strides, self.readonly, self._stream)

    def __dlpack_device__(self):
        return (kDLCUDAManaged if self._managed else kDLCUDA, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export as a DLPack capsule.

        ``stream`` is the consumer's stream (``None``/1: legacy default, 2:
        per-thread default, other ints: a handle, -1: no synchronisation); work
        pending on this array's stream is ordered before it.  ``copy=True`` is
        refused (cuabi never copies on export).
        """
        ptr = self.ptr
        if copy:
            raise BufferError("cuabi does not copy on DLPack export (copy=True)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("cannot export device %r to %r without a copy"
                              % (self.__dlpack_device__(), tuple(dl_device)))
        _sync_for_consumer(self._stream, stream)
        versioned = max_version is not None and tuple(max_version)[0] >= DLPACK_MAJOR
        return _export(self, ptr, versioned)

    def close(self) -> None:
        """Drop the view; a DLPack import's producer is told it may free the memory."""
        self._ptr = None
        self._owner = None
        d = self._deleter
        self._deleter = None
        if d is not None:
            d()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            d = self._deleter
        except AttributeError:
            return
        if d is not None and not _finalizing():
            try:
                self._deleter = None
                d()
            except Exception:
                pass

    def __repr__(self):
        state = "closed" if self._ptr is None else "0x%x" % self._ptr
        return "<cuabi.DeviceArray %s shape=%r dtype=%s>" % (state, self.shape, self.typestr)


def _sync_for_consumer(producer_stream, consumer):
    """Order the producer's pending work before the consumer's stream (DLPack rules)."""
    from . import driver as _d
    from ._core import Event

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
_live = {}  # address of a managed tensor we exported -> what keeps it valid


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
            # the destructor receives the capsule as a borrowed PyObject*
            valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
                ("PyCapsule_IsValid", api))
            get_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
                ("PyCapsule_GetPointer", api))
            _capi = (new, get, valid, setname, valid_raw, get_raw)
    return _capi


def _free_exported(addr):
    _live.pop(addr, None)


@_DELETER
def _deleter(addr):
    # called by the consumer (any thread; ctypes takes the GIL) when it is done
    _free_exported(addr)


def _capsule_destructor(name):
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def destructor(capsule):
        # an unconsumed capsule still carries its original name: free the tensor
        try:
            _n, _g, _v, _s, valid_raw, get_raw = _capi
            if valid_raw(capsule, name):
                addr = get_raw(capsule, name)
                if addr:
                    _free_exported(addr)
        except Exception:
            pass
    return destructor


_DESTRUCTORS = {}


def _export(arr, ptr, versioned):
    new, _get, _valid, _setname, _vr, _gr = _pyapi()
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
    _live[addr] = (mt, shape, strides, arr)
    d = _DESTRUCTORS.get(name)
    if d is None:
        d = _DESTRUCTORS[name] = _capsule_destructor(name)
    return new(addr, name, ctypes.cast(d, ctypes.c_void_p).value)


def exported_count() -> int:
    """DLPack tensors exported by cuabi that their consumers have not yet released."""
    return len(_live)


def from_dlpack(obj, *, stream=None) -> DeviceArray:
    """Import a DLPack producer's CUDA tensor as a :class:`DeviceArray` (no copy).

    ``stream`` is the cuabi stream (or handle) the data will be used on; the
    producer orders its pending work before it.  Default: the legacy stream.
    """
    new, get, valid, setname, _vr, _gr = _pyapi()
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or not hasattr(obj, "__dlpack__"):
        raise TypeError("%s does not implement the DLPack protocol" % type(obj).__name__)
    dev_type, dev_id = dev()
    if dev_type not in (kDLCUDA, kDLCUDAManaged, kDLCUDAHost):
        raise BufferError("from_dlpack: the tensor is on device type %d, not CUDA memory" % dev_type)
    s = stream_handle(stream) if stream is not None else 1
    if s == 0:
        s = 1
    try:
        capsule = obj.__dlpack__(stream=s, max_version=(DLPACK_MAJOR, DLPACK_MINOR))
    except TypeError:
        capsule = obj.__dlpack__(stream=s)
    if valid(capsule, b"dltensor_versioned"):
        addr = get(capsule, b"dltensor_versioned")
        mt = _DLManagedTensorVersioned.from_address(addr)
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

    def release(addr=addr, deleter=deleter):
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
        ptr = (t.data or 0) + t.byte_offset
        arr = DeviceArray(ptr, shape, "%s%d" % (kind, itemsize), strides=strides, owner=obj,
                          device_id=t.device.device_id, readonly=readonly,
                          stream=s if s not in (1, 2) else None)
        arr._managed = 1 if t.device.device_type == kDLCUDAManaged else 0
    except BaseException:
        release()
        raise
    arr._deleter = release
    return arr


def from_cuda_array_interface(obj, *, stream=None) -> DeviceArray:
    """Wrap an object exposing ``__cuda_array_interface__`` (no copy).

    When the interface names a stream, the data is synchronised for use on
    ``stream`` (a cuabi stream or handle; default: the legacy stream), as
    version 3 of the interface asks of consumers.
    """
    from . import driver as _d
    from ._core import Event

    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError("%s has no __cuda_array_interface__" % type(obj).__name__)
    if not isinstance(cai, dict) or "data" not in cai or "shape" not in cai or "typestr" not in cai:
        raise ValueError("malformed __cuda_array_interface__: %r" % (cai,))
    version = cai.get("version", 0)
    if version > 3:
        raise ValueError("__cuda_array_interface__ version %r is newer than 3" % version)
    if cai.get("mask") is not None:
        raise ValueError("masked arrays are not supported")
    ptr, readonly = cai["data"]
    producer = cai.get("stream")
    if producer is not None:
        if producer == 0:
            raise ValueError("__cuda_array_interface__ stream 0 is not allowed (version 3)")
        current_context()
        target = stream_handle(stream) if stream is not None else None
        if target is None:
            _d.cuStreamSynchronize(producer)
        elif target != producer:
            with Event(timing=False) as ev:
                _d.cuEventRecord(ev.handle, producer)
                _d.cuStreamWaitEvent(target, ev.handle, 0)
    dev_id = _pointer_device(ptr)
    return DeviceArray(int(ptr or 0), cai["shape"], cai["typestr"], strides=cai.get("strides"),
                       owner=obj, device_id=dev_id, readonly=bool(readonly),
                       stream=stream_handle(stream) if stream is not None else None)


def _pointer_device(ptr):
    """Ordinal of the device owning ``ptr`` (0 when the driver cannot tell)."""
    import struct

    from . import driver as _d
    from .errors import CUDAError

    if not ptr:
        return 0
    cell = bytearray(4)
    try:
        _d.cuPointerGetAttribute(cell, 9, ptr)  # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    except CUDAError:
        return 0
    return struct.unpack("=i", cell)[0]


def asarray(obj, *, stream=None) -> DeviceArray:
    """A :class:`DeviceArray` for ``obj``: cuabi buffers/arrays directly, others
    through ``__cuda_array_interface__`` or, failing that, DLPack."""
    if isinstance(obj, DeviceArray):
        return obj
    view = getattr(obj, "view", None)
    from ._memory import DeviceBuffer, ManagedBuffer

    if isinstance(obj, (DeviceBuffer, ManagedBuffer)):
        return view()
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj, stream=stream)
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj, stream=stream)
    raise TypeError("%s is not device memory cuabi understands" % type(obj).__name__)

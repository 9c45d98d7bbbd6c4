# SPDX-License-Identifier: Apache-2.0
"""One description of any array's memory, host or device: :class:`StridedMemoryView`.

A function that takes "an array" can take anything here: cuabi buffers and
``DeviceArray``, another library's device array (``__cuda_array_interface__``
or DLPack, through :func:`cuabi.asarray`), a host array with
``__array_interface__`` (numpy, ``PinnedBuffer``) or any object with the
buffer protocol.  The view says where the memory is and how it is laid out,
with strides counted in elements, as array libraries count them.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any, Optional, Tuple

from ._array_interface import dtype_info
from ._backend import backend
from ._interop import asarray
from ._memory import DeviceArray, ManagedBuffer, PinnedBuffer

# struct format letters (native sizes, as memoryview reports them) to typestr kinds
_FORMAT_KINDS = {"b": "i", "B": "u", "h": "i", "H": "u", "i": "i", "I": "u", "l": "i", "L": "u",
                 "q": "i", "Q": "u", "n": "i", "N": "u", "e": "f", "f": "f", "d": "f", "?": "b", "c": "u"}
_ENDIAN = "<" if sys.byteorder == "little" else ">"


def _typestr_of_format(fmt: str) -> str:
    code = fmt.lstrip("@=<>!")
    if fmt[:1] in ("<", ">", "!") and fmt[:1] != {"little": "<", "big": ">"}[sys.byteorder]:
        raise ValueError("a buffer in the other byte order (format %r) cannot be viewed" % (fmt,))
    if code not in _FORMAT_KINDS:
        raise ValueError("a buffer of format %r has no array dtype (only single numbers are viewed)" % (fmt,))
    size = struct.calcsize(code)
    return ("|" if size == 1 else _ENDIAN) + _FORMAT_KINDS[code] + str(size)


def _in_elements(strides: Optional[Tuple[int, ...]], itemsize: int) -> Optional[Tuple[int, ...]]:
    if strides is None:
        return None
    for s in strides:
        if s % itemsize:
            raise ValueError("byte strides %r are not whole elements of %d bytes; such an array cannot be "
                             "described in elements" % (strides, itemsize))
    return tuple(s // itemsize for s in strides)


def _host_dlpack(obj: Any) -> bool:
    """Whether ``obj`` is to be viewed as a DLPack tensor in plain host memory
    (one with no array interface of either kind to use instead)."""
    if not hasattr(obj, "__dlpack__") or hasattr(obj, "__array_interface__") \
            or hasattr(obj, "__cuda_array_interface__"):
        return False
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None:
        return False
    from ._dlpack import kDLCPU

    return dev()[0] == kDLCPU


class _Imported:
    """Holds a DLPack tensor taken from its producer, and gives it back (its
    deleter) when the last view of it goes."""

    __slots__ = ("release", "obj")

    def __init__(self, release: Any, obj: Any) -> None:
        self.release = release
        self.obj = obj

    def __del__(self) -> None:
        release, self.release = self.release, None
        if release is not None:
            release()


class StridedMemoryView:
    """``StridedMemoryView(obj, stream=None)``: where ``obj``'s memory is and
    its layout, without copying; ``obj`` is kept alive.

    Attributes: ``ptr``, ``shape``, ``strides`` (in elements; None for
    C-contiguous), ``dtype`` (a typestr such as ``"<f4"``), ``itemsize``,
    ``device_id`` (the device's ordinal; -1 for memory of the host only),
    ``is_device_accessible``, ``is_host_accessible``, ``readonly`` and
    ``exporting_obj``; ``ndim``, ``size`` and ``is_contiguous`` follow from
    them.  ``cuabi.TensorMap(view, box)`` encodes a TMA descriptor of it.  ``stream`` is where device memory of another library
    will be used (it is synchronised as its protocol asks; see
    :func:`cuabi.asarray`).
    """

    __slots__ = ("ptr", "shape", "strides", "dtype", "itemsize", "device_id", "is_device_accessible",
                 "is_host_accessible", "readonly", "exporting_obj", "_keep")

    def __init__(self, obj: Any, stream: Any = None) -> None:
        self.exporting_obj = obj
        if _host_dlpack(obj):
            self._dlpack_host(obj)
        elif isinstance(obj, PinnedBuffer):
            self._host(obj.__array_interface__, obj, device_accessible=True)
            self.device_id = obj.context.device.device_id
        elif isinstance(obj, DeviceArray) or hasattr(obj, "__cuda_array_interface__") \
                or hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
            arr = asarray(obj, stream=stream)
            self._device(arr, host_accessible=isinstance(obj, ManagedBuffer) or arr._managed == 1)
        elif hasattr(obj, "__array_interface__"):
            self._host(obj.__array_interface__, obj, device_accessible=False)
        else:
            self._buffer(obj)

    def _device(self, arr: DeviceArray, host_accessible: bool) -> None:
        self.ptr = arr.ptr
        self.shape = arr.shape
        self.dtype = arr.typestr
        self.itemsize = arr.itemsize
        self.strides = _in_elements(arr.strides, arr.itemsize)
        self.device_id = arr.device_id
        self.is_device_accessible = True
        self.is_host_accessible = host_accessible
        self.readonly = arr.readonly
        self._keep = arr

    def _host(self, ai: Any, obj: Any, device_accessible: bool) -> None:
        data = ai["data"]
        if isinstance(data, tuple):
            ptr, readonly = int(data[0]), bool(data[1])
        else:  # a buffer object (cuabi's pinned memory hands one out)
            ptr, keep = backend().buffer_address(data)
            readonly = False  # pinned memory is writable
            obj = (obj, keep)
        self.dtype, _kind, self.itemsize = dtype_info(ai["typestr"])
        self.ptr = ptr
        self.shape = tuple(ai["shape"])
        strides = ai.get("strides")
        self.strides = _in_elements(tuple(strides), self.itemsize) if strides is not None else None
        self.device_id = -1
        self.is_device_accessible = device_accessible
        self.is_host_accessible = True
        self.readonly = readonly
        self._keep = obj

    def _dlpack_host(self, obj: Any) -> None:
        from ._dlpack import consume

        t = consume(obj, None, host=True)
        keep = _Imported(t.release, obj)
        self.dtype, _kind, self.itemsize = dtype_info(t.typestr)
        self.ptr = t.ptr
        self.shape = t.shape
        self.strides = _in_elements(t.strides, self.itemsize)
        self.device_id = -1
        self.is_device_accessible = False
        self.is_host_accessible = True
        self.readonly = t.readonly
        self._keep = keep

    def _buffer(self, obj: Any) -> None:
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError("StridedMemoryView takes cuabi memory, a device array (__cuda_array_interface__ "
                            "or DLPack), an array with __array_interface__ or a buffer; got %s"
                            % type(obj).__name__) from None
        if not mv.c_contiguous:
            raise ValueError("a non-contiguous buffer has no address the buffer protocol gives out; "
                             "view it through numpy (__array_interface__) instead")
        self.dtype = _typestr_of_format(mv.format)
        self.itemsize = mv.itemsize
        self.shape = tuple(mv.shape)
        self.strides = None
        self.ptr, keep = backend().buffer_address(mv)
        self.device_id = -1
        self.is_device_accessible = False
        self.is_host_accessible = True
        self.readonly = mv.readonly
        self._keep = (mv, keep)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """How many elements (the product of ``shape``)."""
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements lie one after another in C order (row-major),
        with no gap: ``strides`` None, or equal to the C-order strides (a
        dimension of extent 1 may have any stride; an empty array is
        contiguous)."""
        strides = self.strides
        if strides is None or self.size == 0:
            return True
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True

    def __repr__(self) -> str:
        where = "host" if self.device_id < 0 else "device %d" % self.device_id
        return "<cuabi.StridedMemoryView %s %s shape=%r strides=%r>" % (where, self.dtype, self.shape, self.strides)

# SPDX-License-Identifier: Apache-2.0
"""Sharing device memory with other libraries: DLPack and ``__cuda_array_interface__``.

Both directions are supported:

* cuabi buffers and :class:`DeviceArray` export ``__cuda_array_interface__``
  (version 3) and the DLPack protocol (``__dlpack__`` with ``stream``,
  ``max_version``, ``dl_device`` and ``copy``; versioned capsules when the
  consumer asks for them, legacy ones otherwise) - see :mod:`cuabi._memory`;
* :func:`from_dlpack` and :func:`from_cuda_array_interface` (or
  :func:`asarray`, which picks) wrap another library's device array as a
  :class:`DeviceArray` without copying, synchronised as the protocols say.

DLPack capsules need CPython's C API (through ``ctypes.pythonapi``); on PyPy
the DLPack functions raise a clear error and ``__cuda_array_interface__``
remains available.
"""

from __future__ import annotations

import struct
from typing import Any

from . import driver as _d
from ._constants import CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
from ._device import current_context
from ._dlpack import consume
from ._event import Event
from ._memory import DeviceArray, DeviceBuffer, ManagedBuffer
from ._stream import stream_handle
from .errors import CUDAError


def from_dlpack(obj: Any, *, stream: Any = None) -> DeviceArray:
    """Import a DLPack producer's CUDA tensor as a :class:`DeviceArray` (no copy).

    ``stream`` is the cuabi stream (or handle) the data will be used on; the
    producer orders its pending work before it.  Default: the legacy stream.
    """
    t = consume(obj, stream)
    try:
        arr = DeviceArray(t.ptr, t.shape, t.typestr, strides=t.strides, owner=obj, device_id=t.device_id,
                          readonly=t.readonly, stream=t.stream)
        arr._managed = 1 if t.managed else 0
    except BaseException:
        t.release()
        raise
    arr._deleter = t.release
    return arr


def from_cuda_array_interface(obj, *, stream=None) -> DeviceArray:
    """Wrap an object exposing ``__cuda_array_interface__`` (no copy).

    When the interface names a stream, the data is synchronised for use on
    ``stream`` (a cuabi stream or handle; default: the legacy stream), as
    version 3 of the interface asks of consumers.
    """
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
    if not ptr:
        return 0
    cell = bytearray(4)
    try:
        _d.cuPointerGetAttribute(cell, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
    except CUDAError:
        return 0
    return struct.unpack("=i", cell)[0]


def asarray(obj, *, stream=None) -> DeviceArray:
    """A :class:`DeviceArray` for ``obj``: cuabi buffers/arrays directly, others
    through ``__cuda_array_interface__`` or, failing that, DLPack."""
    if isinstance(obj, DeviceArray):
        return obj
    if isinstance(obj, (DeviceBuffer, ManagedBuffer)):
        return obj.view()
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj, stream=stream)
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj, stream=stream)
    raise TypeError("%s is not device memory cuabi understands" % type(obj).__name__)

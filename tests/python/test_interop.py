"""DLPack and __cuda_array_interface__, as producer and consumer."""

import struct
import sys

import pytest

import cuabi
from cuabi import _array_interface, _dlpack
from cuabi.errors import ClosedError

CPYTHON = sys.implementation.name == "cpython"
needs_capsules = pytest.mark.skipif(not CPYTHON, reason="DLPack capsules need ctypes.pythonapi")


def test_cai_producer(ctx):
    b = cuabi.DeviceBuffer(64)
    cai = b.__cuda_array_interface__
    assert cai == {"shape": (64,), "typestr": "|u1", "data": (b.ptr, False), "strides": None,
                   "version": 3, "stream": None}
    s = cuabi.Stream()
    sb = cuabi.DeviceBuffer(64, stream=s)
    assert sb.__cuda_array_interface__["stream"] == s.handle
    v = b.view("float32", shape=(4, 4))
    cai = v.__cuda_array_interface__
    assert cai["shape"] == (4, 4) and cai["typestr"] == "<f4" and v.nbytes == 64
    assert v.ndim == 2 and v.size == 16 and len(v) == 4 and v.is_c_contiguous()
    with pytest.raises(ValueError):
        cuabi.DeviceBuffer(6).view("f4")


def test_cai_consumer(ctx):
    src = cuabi.DeviceBuffer(16)
    src.copy_from(struct.pack("4f", 1, 2, 3, 4))
    s = cuabi.Stream()

    class Foreign:
        __cuda_array_interface__ = {"data": (src.ptr, True), "shape": (4,), "typestr": "<f4",
                                    "version": 3, "stream": s.handle}

    a = cuabi.from_cuda_array_interface(Foreign())
    assert a.ptr == src.ptr and a.shape == (4,) and a.readonly and a.typestr == "<f4"
    assert struct.unpack("4f", a.to_bytes()) == (1, 2, 3, 4)
    other = cuabi.Stream()
    a2 = cuabi.from_cuda_array_interface(Foreign(), stream=other)
    assert a2.__cuda_array_interface__["stream"] == other.handle
    assert cuabi.asarray(Foreign()).ptr == src.ptr
    assert cuabi.asarray(src).ptr == src.ptr
    assert cuabi.asarray(a) is a
    for bad in ({"data": (1, False)}, {"data": (1, False), "shape": (1,), "typestr": "<f4", "version": 9},
                {"data": (1, False), "shape": (1,), "typestr": "<f4", "stream": 0},
                {"data": (1, False), "shape": (1,), "typestr": "<f4", "mask": object()}):
        class Bad:
            __cuda_array_interface__ = bad
        with pytest.raises(ValueError):
            cuabi.from_cuda_array_interface(Bad())
    with pytest.raises(TypeError):
        cuabi.from_cuda_array_interface(object())
    with pytest.raises(TypeError):
        cuabi.asarray(object())


def test_dtype_info():
    assert _array_interface.dtype_info("float32") == ("<f4", "f", 4)
    assert _array_interface.dtype_info("|u1") == ("|u1", "u", 1)
    assert _array_interface.dtype_info("i8") == ("<i8", "i", 8)

    class NumpyLike:
        str = "<f8"

    assert _array_interface.dtype_info(NumpyLike())[2] == 8
    for bad in (">f4", "x4", "f", 3, "f0"):
        with pytest.raises((TypeError, ValueError)):
            _array_interface.dtype_info(bad)


def test_device_array_checks(ctx):
    b = cuabi.DeviceBuffer(32)
    with pytest.raises(TypeError):
        cuabi.DeviceArray(-1, (1,))
    with pytest.raises(ValueError):
        cuabi.DeviceArray(b.ptr, (-1,))
    with pytest.raises(ValueError):
        cuabi.DeviceArray(b.ptr, (2,), strides=(4, 4))
    strided = cuabi.DeviceArray(b.ptr, (4,), "f4", strides=(8,), owner=b)
    assert not strided.is_c_contiguous() and strided.nbytes == 28
    with pytest.raises(ValueError):
        strided.to_bytes()
    with pytest.raises(TypeError):
        len(cuabi.DeviceArray(b.ptr, (), "f4"))
    a = cuabi.DeviceArray(b.ptr, 8, "u4", owner=b)
    a.copy_from(struct.pack("8I", *range(8)))
    assert struct.unpack("8I", a.to_bytes()) == tuple(range(8))
    a.close()
    with pytest.raises(ClosedError):
        a.ptr  # noqa: B018
    with cuabi.DeviceArray(b.ptr, 8, "u4") as c:
        assert c.ptr == b.ptr


@needs_capsules
def test_dlpack_roundtrip_versioned_and_legacy(ctx):
    b = cuabi.DeviceBuffer(64)
    b.copy_from(struct.pack("16f", *range(16)))
    v = b.view("f4", shape=(4, 4))
    assert v.__dlpack_device__() == (2, 0)
    start = _dlpack.exported_count()
    imported = cuabi.from_dlpack(v)  # asks for a versioned capsule
    assert imported.ptr == b.ptr and imported.shape == (4, 4) and imported.typestr == "<f4"
    assert _dlpack.exported_count() == start + 1
    assert struct.unpack("16f", imported.to_bytes()) == tuple(float(i) for i in range(16))
    imported.close()
    assert _dlpack.exported_count() == start

    class LegacyProducer:
        def __dlpack_device__(self):
            return v.__dlpack_device__()

        def __dlpack__(self, stream=None):  # no max_version: an older producer
            return v.__dlpack__(stream=stream)

    old = cuabi.from_dlpack(LegacyProducer())
    assert old.ptr == b.ptr and old.shape == (4, 4)
    del old
    import gc

    gc.collect()
    assert _dlpack.exported_count() == start


@needs_capsules
def test_dlpack_unconsumed_capsule_is_freed(ctx):
    import gc

    b = cuabi.DeviceBuffer(16)
    start = _dlpack.exported_count()
    cap = b.__dlpack__(max_version=(1, 0))
    assert _dlpack.exported_count() == start + 1
    del cap
    gc.collect()
    assert _dlpack.exported_count() == start


@needs_capsules
def test_dlpack_strides_and_flags(ctx):
    b = cuabi.DeviceBuffer(64)
    t = cuabi.DeviceArray(b.ptr, (4, 2), "f4", strides=(16, 4), owner=b, readonly=True)
    back = cuabi.from_dlpack(t)
    assert back.strides == (16, 4) and back.readonly
    back.close()
    bad = cuabi.DeviceArray(b.ptr, (2,), "f4", strides=(6,), owner=b)
    with pytest.raises(BufferError):
        bad.__dlpack__()


@needs_capsules
def test_dlpack_stream_semantics_and_refusals(ctx):
    s = cuabi.Stream()
    b = cuabi.DeviceBuffer(16, stream=s)
    consumer = cuabi.Stream()
    cap = b.__dlpack__(stream=consumer.handle)
    assert cap is not None
    b.__dlpack__(stream=-1)
    b.__dlpack__(stream=None)
    with pytest.raises(BufferError):
        b.__dlpack__(stream=0)
    with pytest.raises(TypeError):
        b.__dlpack__(stream="s")
    with pytest.raises(BufferError):
        b.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        b.__dlpack__(dl_device=(1, 0))
    b.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(TypeError):
        cuabi.from_dlpack(object())

    class HostTensor:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, max_version=None):
            raise AssertionError("must not be called")

    with pytest.raises(BufferError, match="not CUDA memory"):
        cuabi.from_dlpack(HostTensor())


@pytest.mark.skipif(CPYTHON, reason="checks the message on interpreters without ctypes.pythonapi")
def test_dlpack_needs_cpython(ctx):
    b = cuabi.DeviceBuffer(16)
    with pytest.raises(BufferError, match="pythonapi"):
        b.__dlpack__()
    assert b.__cuda_array_interface__["data"][0] == b.ptr

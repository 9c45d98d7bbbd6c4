# SPDX-License-Identifier: Apache-2.0
"""DLPack and __cuda_array_interface__, as producer and consumer."""

import struct
import sys

import pytest

import cuabi
from cuabi import _array_interface, _dlpack
from cuabi.errors import ClosedError

CPYTHON = sys.implementation.name == "cpython"
needs_capsules = pytest.mark.skipif(not CPYTHON, reason="DLPack capsules need ctypes.pythonapi")


def test_cai_of_a_buffer(ctx):
    """A DeviceBuffer's __cuda_array_interface__ is version 3, bytes, no stream."""
    b = cuabi.DeviceBuffer(64)
    assert b.__cuda_array_interface__ == {"shape": (64,), "typestr": "|u1", "data": (b.ptr, False),
                                          "strides": None, "version": 3, "stream": None}


def test_cai_of_a_stream_ordered_buffer_names_its_stream(ctx):
    """A stream-ordered buffer's interface carries the stream it was allocated on."""
    s = cuabi.Stream()
    sb = cuabi.DeviceBuffer(64, stream=s)
    assert sb.__cuda_array_interface__["stream"] == s.handle


def test_typed_view_of_a_buffer(ctx):
    """view(dtype, shape) gives a DeviceArray with that shape, dtype, size and layout."""
    v = cuabi.DeviceBuffer(64).view("float32", shape=(4, 4))
    cai = v.__cuda_array_interface__
    assert cai["shape"] == (4, 4) and cai["typestr"] == "<f4" and v.nbytes == 64
    assert v.ndim == 2 and v.size == 16 and len(v) == 4 and v.is_c_contiguous()


def test_view_needs_whole_items(ctx):
    """A buffer whose size is not a multiple of the item size cannot be viewed without a shape."""
    with pytest.raises(ValueError):
        cuabi.DeviceBuffer(6).view("f4")


@pytest.fixture
def foreign(ctx):
    """Another library's array: 4 float32 on a stream of its own, read-only."""
    src = cuabi.DeviceBuffer(16)
    src.copy_from(struct.pack("4f", 1, 2, 3, 4))
    s = cuabi.Stream()

    class Foreign:
        __cuda_array_interface__ = {"data": (src.ptr, True), "shape": (4,), "typestr": "<f4",
                                    "version": 3, "stream": s.handle}

    yield Foreign(), src


def test_cai_consumer_wraps_without_copying(foreign):
    """from_cuda_array_interface() wraps the producer's memory as it describes it."""
    obj, src = foreign
    a = cuabi.from_cuda_array_interface(obj)
    assert a.ptr == src.ptr and a.shape == (4,) and a.readonly and a.typestr == "<f4"
    assert struct.unpack("4f", a.to_bytes()) == (1, 2, 3, 4)


def test_cai_consumer_stream_is_the_one_asked_for(foreign):
    """Wrapped for use on a stream, the array names that stream."""
    obj, _src = foreign
    other = cuabi.Stream()
    a = cuabi.from_cuda_array_interface(obj, stream=other)
    assert a.__cuda_array_interface__["stream"] == other.handle


def test_asarray_takes_foreign_arrays_buffers_and_arrays(foreign):
    """asarray() wraps a foreign array, views a buffer and returns a DeviceArray as is."""
    obj, src = foreign
    a = cuabi.from_cuda_array_interface(obj)
    assert cuabi.asarray(obj).ptr == src.ptr
    assert cuabi.asarray(src).ptr == src.ptr
    assert cuabi.asarray(a) is a


@pytest.mark.parametrize("bad", [
    {"data": (1, False)},
    {"data": (1, False), "shape": (1,), "typestr": "<f4", "version": 9},
    {"data": (1, False), "shape": (1,), "typestr": "<f4", "stream": 0},
    {"data": (1, False), "shape": (1,), "typestr": "<f4", "mask": object()},
])
def test_malformed_cai_is_refused(ctx, bad):
    """An interface missing keys, too new, with stream 0 or a mask raises ValueError."""
    class Bad:
        __cuda_array_interface__ = bad

    with pytest.raises(ValueError):
        cuabi.from_cuda_array_interface(Bad())


def test_objects_without_an_interface_are_refused(ctx):
    """from_cuda_array_interface() and asarray() refuse plain objects."""
    with pytest.raises(TypeError):
        cuabi.from_cuda_array_interface(object())
    with pytest.raises(TypeError):
        cuabi.asarray(object())


def test_dtype_info():
    """dtype_info() normalises names, typestrs and numpy-like dtypes."""
    assert _array_interface.dtype_info("float32") == ("<f4", "f", 4)
    assert _array_interface.dtype_info("|u1") == ("|u1", "u", 1)
    assert _array_interface.dtype_info("i8") == ("<i8", "i", 8)

    class NumpyLike:
        str = "<f8"

    assert _array_interface.dtype_info(NumpyLike())[2] == 8


@pytest.mark.parametrize("bad", [">f4", "x4", "f", 3, "f0", ""])
def test_dtype_info_refuses(bad):
    """Big-endian, unknown kinds, missing or zero sizes and non-strings are refused."""
    with pytest.raises((TypeError, ValueError)):
        _array_interface.dtype_info(bad)


def test_device_array_arguments_are_checked(ctx):
    """DeviceArray() refuses a negative pointer, negative dimensions and mismatched strides."""
    b = cuabi.DeviceBuffer(32)
    with pytest.raises(TypeError):
        cuabi.DeviceArray(-1, (1,))
    with pytest.raises(ValueError):
        cuabi.DeviceArray(b.ptr, (-1,))
    with pytest.raises(ValueError):
        cuabi.DeviceArray(b.ptr, (2,), strides=(4, 4))


def test_strided_array_cannot_be_copied(ctx):
    """A non-contiguous array spans its strides but refuses copies."""
    b = cuabi.DeviceBuffer(32)
    strided = cuabi.DeviceArray(b.ptr, (4,), "f4", strides=(8,), owner=b)
    assert not strided.is_c_contiguous() and strided.nbytes == 28
    with pytest.raises(ValueError):
        strided.to_bytes()


def test_zero_dimensional_array_has_no_len(ctx):
    """len() of a 0-d array is a TypeError."""
    with pytest.raises(TypeError):
        len(cuabi.DeviceArray(cuabi.DeviceBuffer(4).ptr, (), "f4"))


def test_device_array_copies_and_closes(ctx):
    """A contiguous array copies in and out; closed, it refuses use; it is a context manager."""
    b = cuabi.DeviceBuffer(32)
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
    """A view exported through DLPack comes back as the same memory, versioned or legacy, and is released."""
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
    """A capsule nobody consumed frees its tensor when collected."""
    import gc

    b = cuabi.DeviceBuffer(16)
    start = _dlpack.exported_count()
    cap = b.__dlpack__(max_version=(1, 0))
    assert _dlpack.exported_count() == start + 1
    del cap
    gc.collect()
    assert _dlpack.exported_count() == start


@needs_capsules
def test_dlpack_keeps_strides_and_read_only_flag(ctx):
    """Strides and the read-only flag survive a DLPack round trip."""
    b = cuabi.DeviceBuffer(64)
    t = cuabi.DeviceArray(b.ptr, (4, 2), "f4", strides=(16, 4), owner=b, readonly=True)
    back = cuabi.from_dlpack(t)
    assert back.strides == (16, 4) and back.readonly
    back.close()


@needs_capsules
def test_dlpack_refuses_strides_of_partial_items(ctx):
    """Byte strides that are not whole items cannot be expressed in DLPack."""
    b = cuabi.DeviceBuffer(64)
    bad = cuabi.DeviceArray(b.ptr, (2,), "f4", strides=(6,), owner=b)
    with pytest.raises(BufferError):
        bad.__dlpack__()


@needs_capsules
@pytest.mark.parametrize("stream", ["consumer", -1, None])
def test_dlpack_export_orders_work_for_the_consumer(ctx, stream):
    """Export to a consumer stream, to no synchronisation (-1) or to the legacy stream (None)."""
    producer, consumer = cuabi.Stream(), cuabi.Stream()
    b = cuabi.DeviceBuffer(16, stream=producer)
    if stream == "consumer":
        stream = consumer.handle
    assert b.__dlpack__(stream=stream) is not None


@needs_capsules
def test_dlpack_export_refusals(ctx):
    """Stream 0, a non-int stream, copy=True and another device are refused."""
    producer = cuabi.Stream()
    b = cuabi.DeviceBuffer(16, stream=producer)
    with pytest.raises(BufferError):
        b.__dlpack__(stream=0)
    with pytest.raises(TypeError):
        b.__dlpack__(stream="s")
    with pytest.raises(BufferError):
        b.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        b.__dlpack__(dl_device=(1, 0))
    b.__dlpack__(dl_device=(2, 0), copy=False)


@needs_capsules
def test_from_dlpack_refuses_non_producers_and_host_tensors(ctx):
    """from_dlpack() refuses objects without the protocol, and host tensors before asking for them."""
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
    """Without ctypes.pythonapi DLPack says so, and __cuda_array_interface__ still works."""
    b = cuabi.DeviceBuffer(16)
    with pytest.raises(BufferError, match="pythonapi"):
        b.__dlpack__()
    assert b.__cuda_array_interface__["data"][0] == b.ptr

# SPDX-License-Identifier: Apache-2.0
"""StridedMemoryView: host and device arrays described alike, strides in elements."""

import array
import gc
import sys

import pytest

import cuabi


def test_device_buffer_view_is_device_memory(ctx):
    """A DeviceBuffer's typed view: its pointer, shape, element strides, device-only access."""
    buf = cuabi.DeviceBuffer(4 * 12)
    v = cuabi.StridedMemoryView(buf.view("<f4", (3, 4)))
    assert (v.ptr, v.shape, v.strides, v.dtype, v.itemsize) == (buf.ptr, (3, 4), None, "<f4", 4)
    assert v.device_id == 0 and v.is_device_accessible and not v.is_host_accessible and v.ndim == 2
    w = cuabi.StridedMemoryView(buf.view("<f4", (3, 2), strides=(16, 8)))
    assert w.strides == (4, 2)  # 16 and 8 bytes are 4 and 2 floats
    assert w.exporting_obj is not None and "device 0" in repr(w)


def test_managed_and_pinned_memory_are_reachable_from_both_sides(ctx):
    """Managed memory is device memory the host reaches; pinned memory is host memory the device reaches."""
    m = cuabi.ManagedBuffer(64)
    v = cuabi.StridedMemoryView(m)
    assert v.ptr == m.ptr and v.is_device_accessible and v.is_host_accessible and v.device_id == 0
    p = cuabi.PinnedBuffer(64)
    w = cuabi.StridedMemoryView(p)
    assert w.ptr == p.ptr and w.shape == (64,) and w.is_device_accessible and w.is_host_accessible
    assert not w.readonly
    del w
    p.close()  # the view was the last thing holding it


def test_host_buffers_through_the_buffer_protocol():
    """A bytearray and an array.array are host memory with their element type; bytes are read-only."""
    a = array.array("i", range(6))
    v = cuabi.StridedMemoryView(a)
    assert v.dtype in ("<i4", ">i4") and v.shape == (6,) and v.strides is None
    assert v.device_id == -1 and v.is_host_accessible and not v.is_device_accessible
    assert v.ptr == a.buffer_info()[0]
    assert cuabi.StridedMemoryView(b"abc").readonly and not cuabi.StridedMemoryView(bytearray(3)).readonly
    with pytest.raises(TypeError, match="StridedMemoryView takes"):
        cuabi.StridedMemoryView(3.5)
    with pytest.raises(ValueError, match="non-contiguous"):
        cuabi.StridedMemoryView(memoryview(bytearray(8))[::2])


def test_numpy_arrays_give_strides_in_elements():
    """A strided numpy array is viewed through __array_interface__ with its strides in elements."""
    np = pytest.importorskip("numpy")
    a = np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2]
    v = cuabi.StridedMemoryView(a)
    assert v.shape == (4, 3) and v.strides == (6, 2) and v.dtype == "<f8"
    assert v.ptr == a.__array_interface__["data"][0] and v.device_id == -1


def test_foreign_device_array_through_the_cuda_array_interface(ctx):
    """Another library's device array (__cuda_array_interface__) is viewed without a copy."""
    buf = cuabi.DeviceBuffer(64)

    class Foreign:
        __cuda_array_interface__ = {"version": 3, "data": (buf.ptr, True), "shape": (4, 2),
                                    "typestr": "<i8", "strides": (16, 8)}

    v = cuabi.StridedMemoryView(Foreign())
    assert (v.ptr, v.shape, v.strides, v.readonly) == (buf.ptr, (4, 2), (2, 1), True)

    class Odd:
        __cuda_array_interface__ = {"version": 3, "data": (buf.ptr, False), "shape": (2,),
                                    "typestr": "<i8", "strides": (12,)}

    with pytest.raises(ValueError, match="not whole elements"):
        cuabi.StridedMemoryView(Odd())


def test_size_and_contiguity():
    """size is the element count; is_contiguous holds for C order and dimensions of extent 1, not for gaps."""
    buf = cuabi.DeviceBuffer(4 * 64)
    assert cuabi.StridedMemoryView(array.array("i", range(6))).is_contiguous
    whole = cuabi.StridedMemoryView(buf.view("<f4", (4, 16), strides=(64, 4)))
    assert whole.is_contiguous and whole.size == 64
    assert not cuabi.StridedMemoryView(buf.view("<f4", (4, 8), strides=(64, 4))).is_contiguous  # half rows
    assert not cuabi.StridedMemoryView(buf.view("<f4", (4, 4), strides=(4, 16))).is_contiguous  # transposed
    assert cuabi.StridedMemoryView(buf.view("<f4", (1, 16), strides=(1024, 4))).is_contiguous  # extent 1
    assert cuabi.StridedMemoryView(buf.view("<f4", (0, 4), strides=(64, 4))).size == 0


def test_host_dlpack_tensors_are_viewed_without_a_copy():
    """A producer with only DLPack in host memory (kDLCPU) is viewed in place, and given back when the view goes."""
    np = pytest.importorskip("numpy")
    if not hasattr(sys, "getrefcount"):
        pytest.skip("DLPack capsules need ctypes.pythonapi")
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    released = []

    class OnlyDLPack:
        """Hides numpy's __array_interface__: DLPack is all the view may use."""

        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None, **kw):
            assert stream is None  # host tensors take no stream
            released.append("exported")
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    strided = base[:, ::2]
    refs = sys.getrefcount(strided)
    v = cuabi.StridedMemoryView(OnlyDLPack(strided))
    assert v.ptr == base.__array_interface__["data"][0] and v.shape == (3, 2) and v.strides == (4, 2)
    assert v.dtype == "<f4" and v.device_id == -1 and v.is_host_accessible and not v.is_device_accessible
    assert not v.is_contiguous and released == ["exported"]
    del v  # the tensor goes back to numpy (its deleter runs): only our own references remain
    gc.collect()
    assert sys.getrefcount(strided) == refs
    with pytest.raises(BufferError, match="not host memory"):
        from cuabi._dlpack import consume

        class OnGpu(OnlyDLPack):
            def __dlpack_device__(self):
                return (2, 0)

        consume(OnGpu(base), None, host=True)

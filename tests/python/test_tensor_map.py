# SPDX-License-Identifier: Apache-2.0
"""TensorMap: tiled TMA descriptors checked in Python before the driver, and
passed to kernels by value (the fake's cuTensorMapEncodeTiled writes the
address, dimensions, strides and box into its blob, read back here)."""

import struct

import pytest

import cuabi
from cuabi._kernel_args import infer_params, packing, parse_params
from conftest import run_json


def _blob(tmap):
    return struct.unpack("=16Q", tmap.data)


@pytest.mark.fake
def test_encode_reverses_into_the_drivers_order(ctx):
    """Shape, byte strides and box go to the driver innermost first; the blob holds what was asked."""
    buf = cuabi.DeviceBuffer(4 * 64 * 32)
    t = cuabi.TensorMap(buf.view("<f4", (64, 32)), (16, 8))
    q = _blob(t)
    assert q[0] == buf.ptr == t.address and len(t.data) == 128 and bytes(t) == t.data
    assert q[1] & 0xFF == 7 and (q[1] >> 8) & 0xFF == 2  # FLOAT32, rank 2
    assert q[2:4] == (32, 64) and q[7] == 128  # dims innermost first; the row stride in bytes
    assert [x & 0xFFFFFFFF for x in q[11:13]] == [8, 16] and [x >> 32 for x in q[11:13]] == [1, 1]
    assert (t.shape, t.box, t.data_type, t.device_id) == ((64, 32), (16, 8), "float32", 0)
    s = cuabi.TensorMap(buf.view("<u2", (2, 4, 8, 32)), (1, 2, 4, 64), swizzle="128B",
                        l2_promotion="256B", oob_fill="zero", element_strides=(1, 1, 2, 1))
    q = _blob(s)
    assert (q[1] >> 24) & 0xFF == 3 and (q[1] >> 32) & 0xFF == 3  # SWIZZLE_128B, L2_256B
    assert q[2:6] == (32, 8, 4, 2) and q[7:10] == (64, 512, 2048)
    assert [x >> 32 for x in q[11:15]] == [1, 2, 1, 1]
    bf = cuabi.TensorMap(buf.view("<u2", (16, 64)), (4, 32), data_type="bfloat16", oob_fill="nan")
    assert _blob(bf)[1] & 0xFF == 9 and (_blob(bf)[1] >> 40) & 0xFF == 1
    assert "float32" in repr(t)


@pytest.mark.fake
def test_a_view_and_strided_memory_encode_too(ctx):
    """A StridedMemoryView with outer strides (a slice of rows) encodes with those strides."""
    buf = cuabi.DeviceBuffer(4 * 64 * 64)
    v = cuabi.StridedMemoryView(buf.view("<f4", (64, 32), strides=(256, 4)))  # every other half-row
    assert not v.is_contiguous
    t = cuabi.TensorMap(v, (8, 8))
    assert _blob(t)[7] == 256 and _blob(t)[2:4] == (32, 64)


def test_encode_misuse_is_refused_before_the_driver(ctx):
    """Each rule of cuda.h's cuTensorMapEncodeTiled is a ValueError naming it, before any driver call."""
    buf = cuabi.DeviceBuffer(4 * 64 * 64)
    f2 = buf.view("<f4", (64, 32))
    cases = [
        (lambda: cuabi.TensorMap(bytearray(64), (16,)), "host memory only"),
        (lambda: cuabi.TensorMap(buf.view("<f4", (2,) * 6), (1,) * 6), "1 to 5 dimensions"),
        (lambda: cuabi.TensorMap(f2, (8,)), "box has 1 entries"),
        (lambda: cuabi.TensorMap(f2, (8, 300)), "1..256"),
        (lambda: cuabi.TensorMap(f2, (8, 2)), "multiple of 16 bytes"),
        (lambda: cuabi.TensorMap(f2, (8, 64), swizzle="128B"), "spans 128 bytes"),
        (lambda: cuabi.TensorMap(f2, (8, 16), swizzle="32B"), "spans 32 bytes"),
        (lambda: cuabi.TensorMap(f2, (8, 8), element_strides=(1, 9)), "1..8"),
        (lambda: cuabi.TensorMap(f2, (8, 8), swizzle="256B"), "swizzle must be one of"),
        (lambda: cuabi.TensorMap(f2, (8, 8), interleave="16B"), "3 or more dimensions"),
        (lambda: cuabi.TensorMap(buf.view("<f4", (2, 4, 8)), (1, 1, 8), interleave="32B"), "needs swizzle='32B'"),
        (lambda: cuabi.TensorMap(buf.view("<i4", (8, 8)), (8, 8), oob_fill="nan"), "floating-point"),
        (lambda: cuabi.TensorMap(f2, (8, 8), data_type="float64"), "8-byte elements"),
        (lambda: cuabi.TensorMap(f2, (8, 8), data_type="int8"), "data_type must be one of"),
        (lambda: cuabi.TensorMap(buf.view("<f4", (4, 3)), (4, 4)), "multiple of 16 bytes"),  # 12-byte rows
        (lambda: cuabi.TensorMap(buf.view("<f4", (8, 8), strides=(32, 8)), (8, 4)), "innermost dimension"),
        (lambda: cuabi.TensorMap(cuabi.StridedMemoryView(_Cai(buf.ptr + 4)), (4, 4)), "not 16-byte aligned"),
        (lambda: cuabi.TensorMap(buf.view("<c8", (8, 8)), (8, 8)), "no TMA element type"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(TypeError, match="box must hold ints"):
        cuabi.TensorMap(f2, (8.0, 8))


@pytest.mark.fake
def test_im2col_maps(ctx):
    """An NHWC array's im2col map: corners reversed into the driver's order, channels and pixels recorded."""
    buf = cuabi.DeviceBuffer(2 * 8 * 8 * 16 * 2)
    t = cuabi.TensorMap.im2col(buf.view("<f2", (2, 8, 8, 16)), lower_corner=(-1, -2), upper_corner=(1, 0),
                               channels_per_pixel=16, pixels_per_column=64)
    q = _blob(t)
    assert t.mode == "im2col" and t.box == () and (q[1] >> 48) & 0xFF == 1 and q[1] & 0xFF == 6  # FLOAT16
    assert q[2:6] == (16, 8, 8, 2) and q[7:10] == (32, 256, 2048)
    assert q[11] & 0xFFFFFFFF == 16 and q[12] & 0xFFFFFFFF == 64
    assert [(q[13] >> s) & 0xFFFF for s in (0, 16)] == [0xFFFE, 0xFFFF]  # W then H: -2, -1
    assert [(q[14] >> s) & 0xFFFF for s in (0, 16)] == [0, 1]
    five = cuabi.TensorMap.im2col(buf.view("<f2", (1, 2, 4, 4, 16)), lower_corner=(-16, 0, 15),
                                  upper_corner=(0, 0, 0), channels_per_pixel=8, pixels_per_column=1)
    assert _blob(five)[2:7] == (16, 4, 4, 2, 1) and "im2col" in repr(five)


def test_im2col_misuse_is_refused_before_the_driver(ctx):
    """Rank, corner counts and ranges, channels and pixels, and the swizzle span are checked in Python."""
    buf = cuabi.DeviceBuffer(2 * 8 * 8 * 16 * 2)
    nhwc = buf.view("<f2", (2, 8, 8, 16))
    ok = dict(lower_corner=(0, 0), upper_corner=(0, 0), channels_per_pixel=16, pixels_per_column=64)
    cases = [
        (buf.view("<f2", (32, 64)), {}, "3 to 5 dimensions"),
        (nhwc, dict(lower_corner=(0,)), "one per spatial dimensions of a 4-dimensional array"),
        (nhwc, dict(upper_corner=(0, 128)), r"within -128..127 for 4 dimensions"),
        (buf.view("<f2", (1, 2, 4, 4, 16)), dict(lower_corner=(0, 0, 16), upper_corner=(0, 0, 0)), "-16..15"),
        (nhwc, dict(channels_per_pixel=0), "channels_per_pixel must be 1..256"),
        (nhwc, dict(pixels_per_column=1025), "pixels_per_column must be 1..1024"),
        (nhwc, dict(channels_per_pixel=32, swizzle="32B"), "spans 32 bytes; channels_per_pixel spans 64"),
    ]
    for array, change, message in cases:
        with pytest.raises(ValueError, match=message):
            cuabi.TensorMap.im2col(array, **dict(ok, **change))
    with pytest.raises(TypeError, match="pixels_per_column must be an int"):
        cuabi.TensorMap.im2col(nhwc, **dict(ok, pixels_per_column=2.0))


class _Cai:
    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"version": 3, "data": (ptr, False), "shape": (4, 4),
                                         "typestr": "<f4", "strides": None}


def test_struct_parameters_of_64_byte_alignment_land_where_the_kernel_has_them():
    """TensorMap.PARAM is a legal struct item, packed at its alignment when no driver offsets are given."""
    fmt, size, items = packing(parse_params(["p", cuabi.TensorMap.PARAM, "i"]))
    assert [(off, n) for _c, off, n in items] == [(0, 8), (64, 128), (192, 4)] and size == 196
    params = parse_params(infer_params([(0, 8), (64, 128), (192, 4)], [1 << 20, bytes(128), 3]))
    assert [off for _c, off, _n in packing(params)[2]] == [0, 64, 192]
    with pytest.raises(ValueError, match="bad struct parameter"):
        parse_params([(128, 256)])


READ_MAP_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry read_map(
	.param .u64 read_map_param_0,
	.param .align 64 .b8 read_map_param_1[128],
	.param .u32 read_map_param_2
)
{
	ret;
}
"""


@pytest.mark.fake
@pytest.mark.parametrize("signature", [["p", cuabi.TensorMap.PARAM, "i"], None])
def test_a_tensor_map_argument_sits_where_the_driver_says(ctx, signature):
    """A 64-byte aligned map goes at the driver's offset (48 after a pointer on sm_90), signed or inferred."""
    m = cuabi.Module.from_ptx(READ_MAP_PTX)
    try:
        k = m.get_kernel("read_map", signature)
        assert k.param_info() == [(0, 8), (48, 128), (176, 4)]
        buf = cuabi.DeviceBuffer(4 * 64 * 64)
        t = cuabi.TensorMap(buf.view("<f4", (64, 64)), (16, 16))
        out = cuabi.DeviceBuffer(8 * 16)
        s = cuabi.Stream()
        cuabi.launch(s, cuabi.LaunchConfig(1, 32), k, out, t.data, 16)
        s.sync()
        assert out.to_bytes() == bytes(t.data)
    finally:
        m.close()


@pytest.mark.fake
def test_a_signature_whose_sizes_differ_from_the_kernels_is_refused(ctx):
    """A struct aligned above 16 bytes makes cuabi ask the driver, which also catches a wrong size."""
    m = cuabi.Module.from_ptx(READ_MAP_PTX)
    try:
        with pytest.raises(ValueError, match=r"sizes \[8, 256, 4\] differ from the kernel's \[8, 128, 4\]"):
            m.get_kernel("read_map", ["p", (256, 64), "i"])
    finally:
        m.close()


@pytest.mark.fake
def test_a_wide_struct_needs_a_driver_that_gives_parameter_offsets():
    """Without cuFuncGetParamInfo (a 12.3 driver) a signature with a 64-byte aligned struct is refused, saying why."""
    got = run_json("""
        import json
        import cuabi
        cuabi.Device(0).set_current()
        m = cuabi.Module.from_ptx(%r)
        try:
            m.get_kernel("read_map", ["p", cuabi.TensorMap.PARAM, "i"])
            print(json.dumps("accepted"))
        except ValueError as e:
            print(json.dumps(str(e)))
    """ % READ_MAP_PTX, env={"FAKECUDA_DRIVER_VERSION": "12030"})
    assert "only the driver can say (cuFuncGetParamInfo, CUDA 12.4+)" in got


def test_driver_offsets_that_overlap_are_refused():
    """Offsets that would put a parameter inside the one before it are an error, not a silent overlap."""
    params = parse_params(["p", cuabi.TensorMap.PARAM, "i"])
    assert [off for _c, off, _n in packing(params, (0, 48, 176))[2]] == [0, 48, 176]
    with pytest.raises(ValueError, match="parameter 1 at offset 4 overlaps the one before it"):
        packing(params, (0, 4, 176))

# SPDX-License-Identifier: Apache-2.0
"""Tensor maps: the 128-byte descriptors of the Tensor Memory Accelerator (TMA).

``TensorMap(array, box)`` encodes a tiled map (``cuTensorMapEncodeTiled``)
and ``TensorMap.im2col(array, ...)`` an im2col one
(``cuTensorMapEncodeIm2col``) of a device array: anything
:class:`cuabi.StridedMemoryView` takes, with dimensions, ``box`` and corners
in the array's own order (outermost first, as ``shape``); cuabi reverses
them into the driver's order (innermost first) and turns element strides
into byte strides.  Every rule cuda.h 13.0 states for
the encoding is checked here first, so a mistake is a ``ValueError`` naming
the rule rather than the driver's bare ``CUDA_ERROR_INVALID_VALUE``.

A kernel takes the map by value as a ``const __grid_constant__ CUtensorMap``:
give the parameter as ``TensorMap.PARAM`` (128 bytes, 64-byte aligned) in its
signature and pass ``tmap.data``.  The map holds the array's address: it
keeps the array alive, but (like the driver's) not open.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, Optional, Sequence, Tuple

from . import driver as _d
from ._backend import backend
from ._device import Device, current_context
from ._strided_view import StridedMemoryView

SIZE = 128
ALIGN = 64

# CUtensorMapDataType (cuda.h 13.0): name -> (value, bytes per element, floating point)
_DATA_TYPES: Dict[str, Tuple[int, int, bool]] = {
    "uint8": (0, 1, False), "uint16": (1, 2, False), "uint32": (2, 4, False), "int32": (3, 4, False),
    "uint64": (4, 8, False), "int64": (5, 8, False), "float16": (6, 2, True), "float32": (7, 4, True),
    "float64": (8, 8, True), "bfloat16": (9, 2, True), "float32_ftz": (10, 4, True),
    "tfloat32": (11, 4, True), "tfloat32_ftz": (12, 4, True),
}
# the element type a typestr's array gets when data_type is not given
_BY_TYPESTR = {"|u1": "uint8", "|i1": "uint8", "u2": "uint16", "u4": "uint32", "i4": "int32",
               "u8": "uint64", "i8": "int64", "f2": "float16", "f4": "float32", "f8": "float64"}
_INTERLEAVE = {"none": 0, "16B": 1, "32B": 2}
_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_atom_32B": 4, "128B_atom_32B_flip_8B": 5,
            "128B_atom_64B": 6}
_SWIZZLE_SPAN = {1: 32, 2: 64, 3: 128, 4: 128, 5: 128, 6: 128}
_L2_PROMOTION = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
_OOB_FILL = {"zero": 0, "nan": 1}


def _choice(table: Dict[str, int], value: str, what: str) -> int:
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, got %r" % (what, ", ".join(map(repr, table)), value)) from None


def _ints(values: Sequence[Any], what: str, count: int, of: str) -> Tuple[int, ...]:
    out = tuple(values)
    if len(out) != count:
        raise ValueError("%s has %d entries; it needs one per %s (%d)" % (what, len(out), of, count))
    for v in out:
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError("%s must hold ints, got %r" % (what, v))
    return out


def _positive_ints(values: Sequence[Any], what: str, rank: int) -> Tuple[int, ...]:
    return _ints(values, what, rank, "dimension of the array")


class _Layout:
    """What both kinds of map share, checked against cuda.h's rules: the
    view, element type, option values and strides, in the driver's order."""

    __slots__ = ("view", "rank", "name", "type_value", "esize", "il", "sw", "swizzle", "l2", "oob",
                 "element_strides", "dims", "strides")

    def __init__(self, array: Any, ranks: Tuple[int, int], data_type: Optional[str],
                 element_strides: Optional[Sequence[int]], interleave: str, swizzle: str, l2_promotion: str,
                 oob_fill: str) -> None:
        view = array if isinstance(array, StridedMemoryView) else StridedMemoryView(array)
        if not view.is_device_accessible:
            raise ValueError("a tensor map describes memory the device reaches; this array is host memory only")
        rank = len(view.shape)
        if not ranks[0] <= rank <= ranks[1]:
            raise ValueError("this tensor map has %d to %d dimensions; the array has %d" % (ranks + (rank,)))
        name = data_type if data_type is not None else _BY_TYPESTR.get(view.dtype.lstrip("<>="),
                                                                         _BY_TYPESTR.get(view.dtype))
        if name is None:
            raise ValueError("no TMA element type for arrays of %r; give data_type= (one of %s)"
                             % (view.dtype, ", ".join(_DATA_TYPES)))
        if name not in _DATA_TYPES:
            raise ValueError("data_type must be one of %s, got %r" % (", ".join(_DATA_TYPES), name))
        self.type_value, esize, is_float = _DATA_TYPES[name]
        if esize != view.itemsize:
            raise ValueError("data_type %r has %d-byte elements; the array's have %d" % (name, esize, view.itemsize))
        il = _choice(_INTERLEAVE, interleave, "interleave")
        sw = _choice(_SWIZZLE, swizzle, "swizzle")
        self.l2 = _choice(_L2_PROMOTION, l2_promotion, "l2_promotion")
        self.oob = _choice(_OOB_FILL, oob_fill, "oob_fill")
        if il and rank < 3:
            raise ValueError("an interleaved tensor map needs 3 or more dimensions; the array has %d" % rank)
        if il == 2 and sw != 1:
            raise ValueError("interleave='32B' needs swizzle='32B' (cuda.h)")
        if self.oob and not is_float:
            raise ValueError("oob_fill='nan' is for floating-point data; %r is not" % name)
        estrides = _positive_ints(element_strides if element_strides is not None else (1,) * rank,
                                  "element_strides", rank)
        for e in estrides:
            if not 1 <= e <= 8:
                raise ValueError("each element stride must be 1..8, got %r" % (estrides,))
        for n in view.shape:
            if not 1 <= n <= 1 << 32:
                raise ValueError("each dimension must be 1..2**32 elements, got shape %r" % (view.shape,))
        align = 32 if il == 2 else 16
        if view.ptr % align:
            raise ValueError("the array's address 0x%x is not %d-byte aligned, as TMA needs" % (view.ptr, align))
        elem_strides = view.strides if view.strides is not None else _c_strides(view.shape)
        if elem_strides[-1] != 1 and view.shape[-1] > 1:
            raise ValueError("the innermost dimension must be contiguous (stride 1 element), got strides %r"
                             % (elem_strides,))
        byte_strides = [st * esize for st in elem_strides[:-1]]
        for st in byte_strides:
            if st % align or not 0 < st < 1 << 40:
                raise ValueError("each outer stride must be a multiple of %d bytes and below 2**40; the array's "
                                 "are %r bytes" % (align, tuple(byte_strides)))
        self.view, self.rank, self.name, self.esize = view, rank, name, esize
        self.il, self.sw, self.swizzle = il, sw, swizzle
        self.element_strides = struct.pack("=%dI" % rank, *reversed(estrides))
        self.dims = struct.pack("=%dQ" % rank, *reversed(view.shape))
        self.strides = struct.pack("=%dQ" % max(rank - 1, 1), *(list(reversed(byte_strides)) or [0]))

    def check_inner(self, elements: int, what: str, whole_chunks: bool) -> None:
        """The innermost extent a copy moves (``elements``): whole 16-byte
        chunks without interleave (``whole_chunks``), within the swizzle span."""
        inner = elements * self.esize
        if whole_chunks and self.il == 0 and inner % 16:
            raise ValueError("%s must span a multiple of 16 bytes: %d elements of %d bytes are %d"
                             % (what, elements, self.esize, inner))
        if self.il == 0 and self.sw and inner > _SWIZZLE_SPAN[self.sw]:
            raise ValueError("swizzle=%r spans %d bytes; %s spans %d" % (self.swizzle, _SWIZZLE_SPAN[self.sw], what,
                                                                       inner))

    def encode(self, tmap: "TensorMap", encoder: Any, *middle: Any) -> None:
        """Call ``encoder`` (a cuTensorMapEncode* entry point) in the array's
        device's context, with ``middle`` after the strides, and fill in ``tmap``."""
        view = self.view
        out, off, out_addr, _keep = _aligned_out()
        ctx = current_context()
        if view.device_id >= 0 and ctx.device.device_id != view.device_id:
            ctx = Device(view.device_id).context
        with ctx._pushed():
            encoder(out_addr, self.type_value, self.rank, view.ptr, self.dims, self.strides, *middle,
                    self.il, self.sw, self.l2, self.oob)
        tmap.data = bytes(out[off:off + SIZE])
        tmap.address = view.ptr
        tmap.shape = tuple(view.shape)
        tmap.data_type = self.name
        tmap.device_id = view.device_id
        tmap._keep = view


class TensorMap:
    """A TMA descriptor of a device array. ``TensorMap(array, box, ...)`` makes
    a tiled one; :meth:`im2col` an im2col one, for convolutions.

    ``TensorMap(array, box, *, data_type=None, element_strides=None,
    interleave="none", swizzle="none", l2_promotion="none", oob_fill="zero")``:
    ``box`` is the tile a TMA copy moves, per dimension in the array's order
    (1..256 elements each; the innermost ``box[-1] * itemsize`` a multiple of
    16 bytes without interleave).  ``data_type`` defaults to the array's
    (``"bfloat16"``, ``"tfloat32"`` and the ``_ftz`` types must be named: an
    array of 2-byte or 4-byte elements then).  ``element_strides`` (1..8,
    array order) steps through the box.  ``interleave`` is ``"none"``,
    ``"16B"`` or ``"32B"``; ``swizzle`` ``"none"``, ``"32B"``, ``"64B"``,
    ``"128B"``, ``"128B_atom_32B"``, ``"128B_atom_32B_flip_8B"`` or
    ``"128B_atom_64B"``; ``l2_promotion`` ``"none"``, ``"64B"``, ``"128B"``
    or ``"256B"``; ``oob_fill`` ``"zero"`` or ``"nan"`` (floating point only).

    Attributes: ``data`` (the 128 bytes to pass to a kernel), ``mode``
    (``"tiled"`` or ``"im2col"``), ``address``, ``shape``, ``box`` (empty for
    im2col), ``data_type``, ``device_id``.
    """

    __slots__ = ("data", "mode", "address", "shape", "box", "data_type", "device_id", "_keep")

    PARAM = (SIZE, ALIGN)
    """The kernel parameter signature item of a ``CUtensorMap`` (size, alignment)."""

    def __init__(self, array: Any, box: Sequence[int], *, data_type: Optional[str] = None,
                 element_strides: Optional[Sequence[int]] = None, interleave: str = "none",
                 swizzle: str = "none", l2_promotion: str = "none", oob_fill: str = "zero") -> None:
        lay = _Layout(array, (1, 5), data_type, element_strides, interleave, swizzle, l2_promotion, oob_fill)
        box_t = _positive_ints(box, "box", lay.rank)
        for b in box_t:
            if not 1 <= b <= 256:
                raise ValueError("each box dimension must be 1..256 elements, got %r" % (box_t,))
        lay.check_inner(box_t[-1], "the innermost box dimension", True)
        lay.encode(self, _d.cuTensorMapEncodeTiled, struct.pack("=%dI" % lay.rank, *reversed(box_t)),
                   lay.element_strides)
        self.mode = "tiled"
        self.box = box_t

    @classmethod
    def im2col(cls, array: Any, *, lower_corner: Sequence[int], upper_corner: Sequence[int],
               channels_per_pixel: int, pixels_per_column: int, data_type: Optional[str] = None,
               element_strides: Optional[Sequence[int]] = None, interleave: str = "none", swizzle: str = "none",
               l2_promotion: str = "none", oob_fill: str = "zero") -> "TensorMap":
        """An im2col map (``cuTensorMapEncodeIm2col``) of an array of 3 to 5
        dimensions laid out N, (D, H,) W, C (channels innermost).

        ``lower_corner`` and ``upper_corner`` offset the box of pixels from the
        start and the end of each spatial dimension (array order: D, H, W; one
        value each for the rank-2 spatial dimensions, within -32768..32767 for
        3 dimensions, -128..127 for 4, -16..15 for 5);
        ``channels_per_pixel`` (1..256) and ``pixels_per_column`` (1..1024)
        say how much one copy moves.  The other options are the tiled map's.
        """
        lay = _Layout(array, (3, 5), data_type, element_strides, interleave, swizzle, l2_promotion, oob_fill)
        spatial = lay.rank - 2
        bound = {3: 1 << 15, 4: 1 << 7, 5: 1 << 4}[lay.rank]
        corners = []
        for what, corner in (("lower_corner", lower_corner), ("upper_corner", upper_corner)):
            c = _ints(corner, what, spatial, "spatial dimensions of a %d-dimensional array" % lay.rank)
            if any(not -bound <= v < bound for v in c):
                raise ValueError("%s values must be within %d..%d for %d dimensions, got %r"
                                 % (what, -bound, bound - 1, lay.rank, c))
            corners.append(struct.pack("=%di" % spatial, *reversed(c)))
        for what, value, most in (("channels_per_pixel", channels_per_pixel, 256),
                                  ("pixels_per_column", pixels_per_column, 1024)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError("%s must be an int, got %s" % (what, type(value).__name__))
            if not 1 <= value <= most:
                raise ValueError("%s must be 1..%d, got %d" % (what, most, value))
        lay.check_inner(channels_per_pixel, "channels_per_pixel", False)
        self = cls.__new__(cls)
        lay.encode(self, _d.cuTensorMapEncodeIm2col, corners[0], corners[1], channels_per_pixel,
                   pixels_per_column, lay.element_strides)
        self.mode = "im2col"
        self.box = ()
        return self

    def __bytes__(self) -> bytes:
        return self.data

    def __repr__(self) -> str:
        return "<cuabi.TensorMap %s %s shape=%r box=%r at 0x%x>" % (
            self.mode, self.data_type, self.shape, self.box, self.address)


def _c_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return tuple(out)


def _aligned_out() -> Tuple[bytearray, int, int, Any]:
    """A zeroed buffer with a 64-byte aligned 128-byte place in it for the
    driver to write the map to: ``(buffer, offset, address, keep-alive)``."""
    buf = bytearray(SIZE + ALIGN)
    base, keep = backend().buffer_address(buf)
    off = (-base) % ALIGN
    return buf, off, base + off, keep

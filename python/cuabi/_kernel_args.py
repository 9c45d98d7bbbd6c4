# SPDX-License-Identifier: Apache-2.0
"""Kernel parameter signatures, and how a launch packs the arguments.

A launch hands libcuabi one packet (``cuabi_launch_packed``): the 32-byte
``cuabi_launch_header`` (grid, block, dynamic shared memory, 0) followed by
the kernel's parameters, each at its natural alignment.  A kernel's
signature (:func:`parse_params`) fixes that layout; :func:`layout_for` turns
it into the object a launch packs with:

* with the compiled tier, the speedups module's ``Layout`` (it packs on the
  C stack, see python/speedups/speedups.c);
* otherwise an :class:`ArgumentLayout`, whose ``pack`` function is written
  out for its parameters (a Python function per signature, built once: it
  converts each pointer argument in line instead of looping over the
  parameters, which a launch would pay for every time).

Layouts are shared by every kernel with the same signature.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._address import device_pointer
from ._backend import backend

# the packet's header: cuabi_launch_header (include/cuabi.h)
HEADER = struct.Struct("=8I")
HEADER_SIZE = 32

Param = Tuple[str, int, int, bool]
"""One parameter: (struct code, size, alignment, is a pointer)."""

# kernel parameter kinds: name -> (struct code, size, is_pointer)
_KINDS = {
    "p": ("Q", 8, True), "ptr": ("Q", 8, True), "pointer": ("Q", 8, True),
    "b": ("b", 1, False), "int8": ("b", 1, False),
    "B": ("B", 1, False), "uint8": ("B", 1, False), "?": ("?", 1, False), "bool": ("?", 1, False),
    "h": ("h", 2, False), "int16": ("h", 2, False),
    "H": ("H", 2, False), "uint16": ("H", 2, False),
    "e": ("e", 2, False), "float16": ("e", 2, False),
    "i": ("i", 4, False), "int32": ("i", 4, False), "int": ("i", 4, False),
    "I": ("I", 4, False), "uint32": ("I", 4, False),
    "q": ("q", 8, False), "int64": ("q", 8, False),
    "Q": ("Q", 8, False), "uint64": ("Q", 8, False), "size_t": ("Q", 8, False),
    "f": ("f", 4, False), "float32": ("f", 4, False), "float": ("f", 4, False),
    "d": ("d", 8, False), "float64": ("d", 8, False), "double": ("d", 8, False),
}


def parse_params(spec: Union[str, Sequence[Any]]) -> Tuple[Param, ...]:
    """Parse a kernel parameter signature into ``(code, size, align, is_pointer)`` items.

    ``spec`` is a string of single letters (``"ppfi"``), a comma/space separated
    string of names (``"ptr, ptr, float32, int32"``), or a sequence of names and
    ``(size, alignment)`` tuples for structs passed by value (given as bytes).
    """
    if isinstance(spec, str):
        text = spec.strip()
        if "," in text or " " in text or text in _KINDS and len(text) > 1:
            items: List[Any] = [t for t in text.replace(",", " ").split() if t]
        else:
            items = list(text)
    elif isinstance(spec, (list, tuple)):
        items = list(spec)
    else:
        raise TypeError("kernel parameters must be a str or a sequence, got %s" % type(spec).__name__)
    out = []
    for it in items:
        if isinstance(it, tuple):
            if len(it) != 2 or not all(isinstance(x, int) for x in it):
                raise ValueError("a struct parameter is given as (size, alignment), got %r" % (it,))
            size, align = it
            if size <= 0 or align not in (1, 2, 4, 8, 16, 32, 64, 128):
                raise ValueError("bad struct parameter (size=%d, alignment=%d)" % (size, align))
            out.append(("%ds" % size, size, align, False))
            continue
        k = _KINDS.get(it) if isinstance(it, str) else None
        if k is None:
            raise ValueError("unknown kernel parameter type %r (use letters like p i I q Q f d "
                             "or names like ptr int32 float32)" % (it,))
        code, size, ptr = k
        out.append((code, size, size, ptr))
    return tuple(out)


def infer_params(info: Sequence[Tuple[int, int]], args: Sequence[Any]) -> List[Any]:
    """A signature for ``args`` from the driver's ``(offset, size)`` of each
    parameter: numbers by their Python type and size, 8-byte others as
    pointers, bytes of the parameter's size as a struct."""
    items: List[Any] = []
    for (off, size), a in zip(info, args):
        if isinstance(a, float):
            kind = {4: "f", 8: "d", 2: "e"}.get(size)
        elif isinstance(a, int):
            kind = {1: "b", 2: "h", 4: "i" if a < (1 << 31) else "I", 8: "Q" if a >= 0 else "q"}.get(size)
        elif size == 8:
            kind = "p"
        else:
            kind = None
        if kind is None:
            if isinstance(a, (bytes, bytearray)) and len(a) == size:
                items.append((size, _struct_alignment(off, size)))
                continue
            raise TypeError("cannot pass %s as a %d-byte kernel parameter; give the kernel "
                            "a signature with set_params()" % (type(a).__name__, size))
        items.append(kind)
    return items


def _struct_alignment(offset: int, size: int) -> int:
    """An alignment that puts a struct where the driver says it is: the
    largest power of two (up to 128, and dividing ``size``) that divides
    ``offset``.  The struct's real alignment divides both, so padding to this
    one from the end of the previous parameter lands on ``offset`` (a
    ``CUtensorMap``, 64-byte aligned, after a pointer included)."""
    align = 1
    while align < 128 and size % (align * 2) == 0 and offset % (align * 2) == 0:
        align *= 2
    return align


Offsets = Optional[Tuple[int, ...]]


def packing(params: Sequence[Param], offsets: Offsets = None) -> Tuple[str, int, Tuple[Tuple[str, int, int], ...]]:
    """The parameters' ``struct`` format (after the header, with padding), the
    parameter block's size, and per parameter ``(code, offset, size)`` (code
    ``p`` for a pointer, ``s`` for a struct).  Each parameter goes to the next
    multiple of its alignment, or to ``offsets[i]`` where the driver's offsets
    are given (:meth:`cuabi.Kernel.param_info`): a struct aligned to more than
    16 bytes sits where the driver puts it, which depends on where the
    architecture's parameter bank starts (a 64-byte aligned ``CUtensorMap``
    after a pointer is at offset 48 on sm_90), not on the alignment alone."""
    fmt = ["="]
    items = []
    off = 0
    for i, (code, size, align, is_ptr) in enumerate(params):
        pad = (-off) % align if offsets is None else offsets[i] - off
        if pad < 0:
            raise ValueError("parameter %d at offset %d overlaps the one before it (ending at %d)"
                             % (i, offsets[i] if offsets is not None else off, off))
        if pad:
            fmt.append("%dx" % pad)
            off += pad
        fmt.append(code)
        items.append(("p" if is_ptr else "s" if code.endswith("s") else code, off, size))
        off += size
    return "".join(fmt), off, tuple(items)


def param_offsets(params: Sequence[Param], offsets: Offsets = None) -> Tuple[int, ...]:
    """Each parameter's offset in the parameter block (as :func:`packing` lays it out)."""
    return tuple(offset for _code, offset, _size in packing(params, offsets)[2])


def needs_driver_offsets(params: Sequence[Param]) -> bool:
    """Whether a struct is aligned to more than 16 bytes: where it goes only the driver knows."""
    return any(align > 16 for _code, _size, align, _is_ptr in params)


class ArgumentLayout:
    """How the Python launch packs one signature's arguments.

    ``pack(view, args, kernel)`` writes ``args`` behind the header in the
    packet ``view`` and returns the packet's size (``size``), raising
    TypeError (naming ``kernel``) for a bad argument;
    ``spare`` is a packet ``[native buffer, view, config whose header it
    holds]`` kept for the next launch (a launch takes it, and puts it back
    when done, so a concurrent launch makes its own).
    """

    __slots__ = ("nparams", "size", "pack", "source", "spare")

    def __init__(self, params: Sequence[Param], offsets: Offsets = None) -> None:
        fmt, block, _items = packing(params, offsets)
        self.nparams = len(params)
        self.size = HEADER_SIZE + block
        self.source = _pack_source(params, self.size)
        scope = {"pack_into": struct.Struct(fmt).pack_into, "device_pointer": device_pointer,
                 "StructError": struct.error}
        exec(self.source, scope)  # noqa: S102 - source written by _pack_source from the signature
        self.pack = scope["pack"]
        self.spare: Optional[List[Any]] = None

    def new_packet(self) -> List[Any]:
        """A zeroed packet for this layout: [native buffer, view, None]."""
        buf, view = backend().new_buffer(self.size)
        return [buf, view, None]


def _pack_source(params: Sequence[Param], size: int) -> str:
    """The ``pack(view, args, kernel)`` function of :class:`ArgumentLayout`
    (``size``: the packet's, which it returns)."""
    names = ["a%d" % i for i in range(len(params))]
    lines = ["def pack(view, args, kernel):"]
    if names:
        lines.append("    %s, = args" % ", ".join(names))
    for name, (code, nbytes, _align, is_ptr) in zip(names, params):
        if is_ptr:
            lines += ["    if %s.__class__ is not int:" % name,
                      "        %s = device_pointer(%s)" % (name, name)]
        elif code.endswith("s"):
            # a struct is given as bytes of its exact size (struct.pack would pad
            # or cut), and as bytes: PyPy's struct takes no bytearray
            lines += ["    if %s.__class__ is bytearray:" % name,
                      "        %s = bytes(%s)" % (name, name),
                      "    if %s.__class__ is not bytes or len(%s) != %d:" % (name, name, nbytes),
                      "        raise TypeError(\"bad argument for kernel %%r: argument %d must be bytes "
                      "of the struct's size (%d)\" %% kernel.name)" % (int(name[1:]) + 1, nbytes)]
    if names:
        lines += ["    try:",
                  "        pack_into(view, %d, %s)" % (HEADER_SIZE, ", ".join(names)),
                  "    except (StructError, OverflowError, ValueError) as exc:",
                  "        raise TypeError(\"bad argument for kernel %r: %s\" % (kernel.name, exc)) from None"]
    lines.append("    return %d" % size)
    return "\n".join(lines) + "\n"


_layouts: Dict[Tuple[Tuple[Param, ...], Offsets], Any] = {}
_layouts_lock = threading.Lock()


def layout_for(params: Tuple[Param, ...], offsets: Offsets = None) -> Any:
    """The layout for a parsed signature (one per signature and placement):
    the compiled tier's where there is one, else an :class:`ArgumentLayout`."""
    key = (params, offsets)
    layout = _layouts.get(key)
    if layout is not None:
        return layout
    from ._compiled import speedups

    compiled = speedups()
    if compiled is not None:
        _fmt, block, items = packing(params, offsets)
        layout = compiled.make_layout(items, HEADER_SIZE + block)
    else:
        layout = ArgumentLayout(params, offsets)
    with _layouts_lock:
        return _layouts.setdefault(key, layout)


_python_layouts: Dict[Tuple[Tuple[Param, ...], Offsets], ArgumentLayout] = {}


def python_layout(params: Tuple[Param, ...], offsets: Offsets = None) -> ArgumentLayout:
    """The :class:`ArgumentLayout` of a parsed signature, whatever the tier:
    for packing into a buffer of one's own (graph kernel nodes), where the
    compiled tier's layouts pack only on the C stack of a launch."""
    key = (params, offsets)
    layout = _python_layouts.get(key)
    if layout is None:
        layout = ArgumentLayout(params, offsets)
        with _layouts_lock:
            layout = _python_layouts.setdefault(key, layout)
    return layout

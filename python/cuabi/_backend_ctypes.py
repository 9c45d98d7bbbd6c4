# SPDX-License-Identifier: Apache-2.0
"""The ctypes backend: no dependency beyond the standard library.

Every driver entry point gets ``argtypes`` from its signature letters on first
use.  Pointer parameters are declared ``c_void_p`` so that they take plain
integers (addresses, handles), ``None`` and ctypes arrays (the output cells).
ctypes truncates integers that do not fit silently, so this backend asks the
generated wrappers to range-check integer arguments (``checks_ranges``).
"""

from __future__ import annotations

import ctypes
import threading

from ._own_table import OWN_FUNCTIONS
from ._signature import GIL_HELD as QUICK, split_signature, struct_members

_C = ctypes
_LETTER_TYPES = {
    "i": _C.c_int32,
    "I": _C.c_uint32,
    "q": _C.c_int64,
    "Q": _C.c_uint64,
    "z": _C.c_size_t,
    "p": _C.c_void_p,
    "f": _C.c_float,
    "d": _C.c_double,
    "B": _C.c_uint8,
    "H": _C.c_uint16,
}

# how the own functions' result and parameter kinds (cuabi._own_table) are declared:
# a C string parameter as bytes, a returned one as an address (NULL stays 0)
_OWN_PARAM = dict(_LETTER_TYPES, s=_C.c_char_p, h=_C.c_void_p)
_OWN_RESULT = dict(_LETTER_TYPES, s=_C.c_void_p)


def _cstr(addr):
    if not addr:
        return None
    return _C.string_at(addr).decode("utf-8", "replace")


class _SharedCells:
    """Output cells shared by every thread (see Backend.cells)."""

    __slots__ = ("o",)


class Backend:
    """Calls into libcuabi through ctypes."""

    name = "ctypes"
    checks_ranges = True
    speedups = None  # the compiled tier is cffi's
    ArgumentError = _C.ArgumentError  # the wrappers re-raise it as TypeError

    def __init__(self, open_with):
        def opener(path):
            return _C.CDLL(path, mode=_C.RTLD_LOCAL)

        self._lib, self.library_path, self.tried = open_with(opener)
        lib = self._lib
        # PyPy's ctypes has no PyDLL: there every call releases the GIL
        pydll = getattr(_C, "PyDLL", None)
        self._quick = QUICK if pydll is not None else frozenset()
        self._gil_lib = pydll(self.library_path, mode=_C.RTLD_LOCAL) if pydll is not None else lib
        own = {}
        for sym, (result, params) in OWN_FUNCTIONS.items():
            try:
                f = getattr(lib, sym)
            except AttributeError:
                raise ImportError(
                    "%s does not export %s; it is not a compatible libcuabi"
                    % (self.library_path, sym)
                ) from None
            f.restype = _OWN_RESULT[result]
            f.argtypes = [_OWN_PARAM[k] for k in params]
            own[sym] = f
        self._own = own
        self.launch_packed = own["cuabi_launch_packed"]
        cells = dict(_LETTER_TYPES)
        cells["p"] = _C.c_uint64  # read back as an int (c_void_p would give None for NULL)
        self.out_types = {k: (t * 1) for k, t in cells.items()}

    # -- driver entry points ------------------------------------------------------
    def cells(self, name):
        """Holder of a wrapper's output cells: one for all threads for the
        getters called without releasing the GIL (no other thread can run
        between the call and the read of its result), else one per thread."""
        return _SharedCells() if name in self._quick else threading.local()

    def fn(self, name, sig, outs=None, ret="i"):
        """The native ``cuabi_<name>`` with argument types from ``sig``.

        Output parameters are declared as their cell's own array type, which
        ctypes accepts without conversion; a function whose parameters are only
        outputs and 32-bit integers gets no argtypes at all (ctypes then passes
        cells as pointers and ints as C ints, its fastest path; the wrappers
        check types and ranges first).
        """
        try:
            f = getattr(self._gil_lib if name in self._quick else self._lib, "cuabi_" + name)
        except AttributeError:
            raise AttributeError(
                "%s does not export cuabi_%s (library older than this package?)"
                % (self.library_path, name)
            ) from None
        # a returned string as its address (c_void_p would give None for NULL)
        f.restype = _C.c_size_t if ret == "p" else _C.c_int
        toks = split_signature(sig)
        if outs is None:
            outs = "." * len(toks)
        if toks and all(o != "." or t in "iI" for t, o in zip(toks, outs)):
            # only output cells and 32-bit integers (range- and type-checked by the
            # wrapper): ctypes' default conversions pass exactly these, fastest
            f.argtypes = None
            return f
        types = []
        for tok, o in zip(toks, outs):
            if o != ".":
                types.append(self.out_types[o])
            elif tok.startswith("{"):
                types.append(self.struct_type(tok))
            else:
                types.append(_LETTER_TYPES[tok])
        f.argtypes = types
        return f

    def struct_type(self, layout):
        """A ctypes Structure for a by-value struct layout such as ``{Ii}``."""
        cache = self.__dict__.setdefault("_structs", {})
        st = cache.get(layout)
        if st is None:
            fields = []
            for k, m in enumerate(struct_members(layout)):
                t = (_C.c_char * int(m[1:-1])) if m.startswith("[") else _LETTER_TYPES[m]
                fields.append(("f%d" % k, t))
            st = type("cuabi_s", (_C.Structure,), {"_fields_": fields, "_layout_": layout})
            cache[layout] = st
        return st

    def struct_value(self, st, value, name):
        """Convert ``value`` (the struct, a tuple of members, or raw bytes) to ``st``."""
        if isinstance(value, st):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            mv = memoryview(value).cast("B")
            if mv.nbytes != _C.sizeof(st):
                raise ValueError("%s: expected %d bytes, got %d" % (name, _C.sizeof(st), mv.nbytes))
            return st.from_buffer_copy(mv)
        if isinstance(value, (tuple, list)):
            if len(value) != len(st._fields_):
                raise ValueError("%s: expected %d members, got %d"
                                 % (name, len(st._fields_), len(value)))
            for v in value:
                if not isinstance(v, (int, float, bytes)) or isinstance(v, bool):
                    raise TypeError("%s: members must be numbers, got %s" % (name, type(v).__name__))
            return st(*value)
        raise TypeError("%s: expected a tuple of members or %d bytes, got %s"
                        % (name, _C.sizeof(st), type(value).__name__))

    # -- own API --------------------------------------------------------------------
    def version(self):
        return self._own["cuabi_version"]()

    def load(self, path):
        return self._own["cuabi_load"](None if path is None else path.encode())

    def driver_status(self):
        return self._own["cuabi_driver_status"]()

    def driver_report(self):
        return _cstr(self._own["cuabi_driver_report"]()) or ""

    def driver_path(self):
        return _cstr(self._own["cuabi_driver_path"]())

    def family_load(self, library, path):
        return self._own["cuabi_load_library"](library, None if path is None else path.encode())

    def family_status(self, library):
        return self._own["cuabi_library_status"](library)

    def family_report(self, library):
        return _cstr(self._own["cuabi_library_report"](library)) or ""

    def family_path(self, library):
        return _cstr(self._own["cuabi_library_path"](library))

    def driver_version(self):
        v = _C.c_int(0)
        rc = self._own["cuabi_driver_version"](_C.byref(v))
        return rc, v.value

    def set_default_stream_mode(self, per_thread):
        return self._own["cuabi_set_default_stream_mode"](per_thread)

    def default_stream_mode(self):
        return self._own["cuabi_default_stream_mode"]()

    def error_name(self, code):
        return _cstr(self._own["cuabi_error_name"](code)) or ""

    def error_string(self, code):
        return _cstr(self._own["cuabi_error_string"](code)) or ""

    def get_proc(self, name, version, flags):
        out = _C.c_void_p(0)
        rc = self._own["cuabi_get_proc"](name.encode(), version, flags, _C.byref(out))
        return rc, out.value or 0

    def call(self, name, version, sig, values):
        cells = []
        for letter, value in zip(sig, values):
            t = _LETTER_TYPES.get(letter)
            if t is None:
                # let libcuabi judge the signature: pass a dummy cell
                cells.append(_C.c_uint64(0))
                continue
            cells.append(t(value))
        arr = (_C.c_void_p * max(1, len(cells)))()
        for i, c in enumerate(cells):
            arr[i] = _C.addressof(c)
        return self._own["cuabi_call"](name.encode(), version, sig.encode(), arr)

    # -- memory helpers -------------------------------------------------------------
    def new_buffer(self, size):
        """A zeroed native buffer: (object passed as a pointer, writable buffer view)."""
        b = _C.create_string_buffer(size)
        return b, b

    def buffer_address(self, obj):
        """Address of ``obj``'s memory plus an object keeping it valid."""
        if isinstance(obj, bytes):
            c = _C.c_char_p(obj)
            return _C.cast(c, _C.c_void_p).value or 0, (obj, c)
        if isinstance(obj, _C._SimpleCData) or isinstance(obj, (_C.Array, _C.Structure, _C.Union)):
            return _C.addressof(obj), obj
        mv = memoryview(obj)
        if mv.nbytes == 0:
            return 0, mv
        if mv.readonly:
            # ctypes cannot take the address of read-only memory; hand the driver a copy.
            copy = _C.create_string_buffer(mv.tobytes(), mv.nbytes)
            return _C.addressof(copy), copy
        if not mv.c_contiguous:
            raise ValueError("buffer must be C-contiguous to be passed by address")
        arr = (_C.c_char * mv.nbytes).from_buffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv)
        return _C.addressof(arr), (arr, mv)

    def foreign_address(self, obj):
        """Address held by a ctypes object (pointer value or storage address), else None."""
        if isinstance(obj, _C.c_void_p):
            return obj.value or 0
        if isinstance(obj, (_C._Pointer,)):
            return _C.cast(obj, _C.c_void_p).value or 0
        if isinstance(obj, (_C._SimpleCData, _C.Array, _C.Structure, _C.Union)):
            return _C.addressof(obj)
        return None

    def memory_at(self, address, size, readonly=False):
        """A memoryview of ``size`` bytes at ``address`` (the caller keeps it valid)."""
        arr = (_C.c_char * size).from_address(address)
        mv = memoryview(arr).cast("B")
        return mv.toreadonly() if readonly else mv

    def string_at(self, address, size=None):
        if size is None:
            return _C.string_at(address)
        return _C.string_at(address, size)

    def callback(self, restype_letter, argletters, pyfunc):
        """A C function pointer calling ``pyfunc``; returns (address, keepalive)."""
        res = None if restype_letter is None else _LETTER_TYPES[restype_letter]
        proto = _C.CFUNCTYPE(res, *[_LETTER_TYPES[c] for c in argletters])
        cb = proto(pyfunc)
        return _C.cast(cb, _C.c_void_p).value, cb

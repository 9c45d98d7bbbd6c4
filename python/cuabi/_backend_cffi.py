# SPDX-License-Identifier: Apache-2.0
"""The cffi backend.

The C declarations were turned into cffi's compact type tables when the package
was built (``python/build_modules.py``): ``_cuabi_cffi`` is the out-of-line ABI-mode
module, and ``_cuabi_cffi_api`` the compiled API-mode module where the build
made one.  Importing either parses no C.

In the declarations, pointer parameters that the driver only reads are
``uintptr_t`` (so plain integer handles and addresses pass straight through),
while output parameters are ``void *`` (so the cached one-element arrays pass
without conversion).
"""

from __future__ import annotations

import functools
import threading

from ._signature import struct_ctype_name

try:  # cffi's own C part, which every cffi module below needs
    import _cffi_backend  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "cffi is not installed (%s): `pip install cffi` (the cuabi wheels declare it), "
        "or use CUABI_PY_BACKEND=ctypes" % exc
    ) from exc

try:  # compiled API-mode module (faster calls), when the build produced one
    from ._cuabi_cffi_api import ffi as _ffi, lib as _api_lib  # type: ignore

    _KIND = "cffi-compiled"
    try:  # built with it: compiled getters and launchers (python/speedups)
        from . import _cuabi_speedups as _speedups  # type: ignore
    except ImportError:
        _speedups = None
except ImportError:
    _api_lib = None
    _speedups = None
    try:
        from ._cuabi_cffi import ffi as _ffi  # type: ignore
    except ImportError as exc:
        raise ImportError(
            "the cffi backend module cuabi._cuabi_cffi was not built "
            "(run `python python/build_modules.py` in a source tree, or install the wheel): %s"
            % exc
        ) from exc
    _KIND = "cffi"

_CTYPES = {
    "i": "int32_t[1]",
    "I": "uint32_t[1]",
    "q": "int64_t[1]",
    "Q": "uint64_t[1]",
    "z": "size_t[1]",
    "p": "uintptr_t[1]",
    "f": "float[1]",
    "d": "double[1]",
    "B": "uint8_t[1]",
    "H": "uint16_t[1]",
}
_CELL = {
    "i": "int32_t *",
    "I": "uint32_t *",
    "q": "int64_t *",
    "Q": "uint64_t *",
    "z": "size_t *",
    "p": "uintptr_t *",
    "f": "float *",
    "d": "double *",
}


class Backend:
    """Calls into libcuabi through cffi."""

    name = _KIND
    checks_ranges = False
    speedups = _speedups

    class ArgumentError(Exception):
        """Never raised: cffi reports bad arguments as TypeError/OverflowError itself."""

    def __init__(self, open_with):
        ffi = _ffi
        self.ffi = ffi
        if _api_lib is not None:
            # The compiled module reaches libcuabi through a table of function
            # pointers that it fills from the library we open here.
            def opener(path):
                handle = ffi.dlopen(path)
                rc = _api_lib.cuabi_py_bind(path.encode())
                if rc != 0:
                    raise OSError("could not bind the compiled cffi module to %s" % path)
                return handle

            _handle, self.library_path, self.tried = open_with(opener)
            lib = _api_lib
        else:
            lib, self.library_path, self.tried = open_with(ffi.dlopen)
        self._lib = lib
        self.launch_packed = lib.cuabi_launch_packed
        new = ffi.new
        self.out_types = {
            k: functools.partial(new, ffi.typeof(t)) for k, t in _CTYPES.items()
        }
        self._new = new
        self._string = ffi.string
        self._cast = ffi.cast

    # -- driver entry points ------------------------------------------------------
    def cells(self, name):
        """Holder of a wrapper's output cells: per thread (cffi releases the GIL)."""
        return threading.local()

    def fn(self, name, sig, outs=None, ret="i"):
        try:
            return getattr(self._lib, "cuabi_" + name)
        except AttributeError:
            pass
        if _api_lib is not None:
            # the compiled module leaves the library families out
            # (build_modules.cdef_text): the ABI-mode module declares them
            try:
                return getattr(self._abi_lib(), "cuabi_" + name)
            except AttributeError:
                pass
        raise AttributeError("%s does not export cuabi_%s (library older than this package?)"
                             % (self.library_path, name))

    def _abi_lib(self):
        """libcuabi opened through the ABI-mode module (once), for the
        functions the compiled module does not declare."""
        lib = self.__dict__.get("_abi")
        if lib is None:
            from ._cuabi_cffi import ffi as abi_ffi  # type: ignore

            lib = self.__dict__.setdefault("_abi", abi_ffi.dlopen(self.library_path))
        return lib

    def struct_type(self, layout):
        return self.ffi.typeof(struct_ctype_name(layout))

    def struct_value(self, st, value, name):
        ffi = self.ffi
        if isinstance(value, ffi.CData) and ffi.typeof(value) is st:
            return value
        size = ffi.sizeof(st)
        if isinstance(value, (bytes, bytearray, memoryview)):
            mv = memoryview(value).cast("B")
            if mv.nbytes != size:
                raise ValueError("%s: expected %d bytes, got %d" % (name, size, mv.nbytes))
            cell = ffi.new(ffi.getctype(st, "*"))
            ffi.memmove(cell, mv, size)
            return cell[0]
        if isinstance(value, (tuple, list)):
            nfields = len(st.fields)
            if len(value) != nfields:
                raise ValueError("%s: expected %d members, got %d" % (name, nfields, len(value)))
            for v in value:
                if not isinstance(v, (int, float, bytes)) or isinstance(v, bool):
                    raise TypeError("%s: members must be numbers, got %s" % (name, type(v).__name__))
            return ffi.new(ffi.getctype(st, "*"), list(value))[0]
        raise TypeError("%s: expected a tuple of members or %d bytes, got %s"
                        % (name, size, type(value).__name__))

    # -- own API --------------------------------------------------------------------
    def _str(self, p):
        if p == self.ffi.NULL:
            return None
        return self._string(p).decode("utf-8", "replace")

    def version(self):
        return self._lib.cuabi_version()

    def load(self, path):
        return self._lib.cuabi_load(self.ffi.NULL if path is None else path.encode())

    def driver_status(self):
        return self._lib.cuabi_driver_status()

    def driver_report(self):
        return self._str(self._lib.cuabi_driver_report()) or ""

    def driver_path(self):
        return self._str(self._lib.cuabi_driver_path())

    def family_load(self, library, path):
        return self._lib.cuabi_load_library(library, self.ffi.NULL if path is None else path.encode())

    def family_status(self, library):
        return self._lib.cuabi_library_status(library)

    def family_report(self, library):
        return self._str(self._lib.cuabi_library_report(library)) or ""

    def family_path(self, library):
        return self._str(self._lib.cuabi_library_path(library))

    def driver_version(self):
        v = self._new("int *")
        rc = self._lib.cuabi_driver_version(v)
        return rc, v[0]

    def set_default_stream_mode(self, per_thread):
        return self._lib.cuabi_set_default_stream_mode(per_thread)

    def default_stream_mode(self):
        return self._lib.cuabi_default_stream_mode()

    def error_name(self, code):
        return self._str(self._lib.cuabi_error_name(code)) or ""

    def error_string(self, code):
        return self._str(self._lib.cuabi_error_string(code)) or ""

    def get_proc(self, name, version, flags):
        out = self._new("uintptr_t *")
        rc = self._lib.cuabi_get_proc(name.encode(), version, flags, out)
        return rc, out[0]

    def call(self, name, version, sig, values):
        new = self._new
        cells = []
        for letter, value in zip(sig, values):
            t = _CELL.get(letter)
            if t is None:
                # let libcuabi judge the signature: pass a dummy cell
                cells.append(new("uint64_t *"))
                continue
            cells.append(new(t, value))
        arr = new("void *[]", max(1, len(cells)))
        for i, c in enumerate(cells):
            arr[i] = c
        return self._lib.cuabi_call(name.encode(), version, sig.encode(), arr)

    # -- memory helpers -------------------------------------------------------------
    def new_buffer(self, size):
        b = self._new("char[]", max(1, size))
        return b, self.ffi.buffer(b, size)

    def buffer_address(self, obj):
        ffi = self.ffi
        if isinstance(obj, ffi.CData):
            return int(self._cast("uintptr_t", obj)), obj
        mv = obj if isinstance(obj, memoryview) else None
        if mv is not None and not mv.c_contiguous:
            raise ValueError("buffer must be C-contiguous to be passed by address")
        try:
            cd = ffi.from_buffer(obj)
        except TypeError:
            raise TypeError(
                "expected an address (int), None, a cuabi object or a buffer, got %s"
                % type(obj).__name__
            ) from None
        if len(cd) == 0:
            return 0, cd
        return int(self._cast("uintptr_t", cd)), (cd, obj)

    def foreign_address(self, obj):
        if isinstance(obj, self.ffi.CData):
            return int(self._cast("uintptr_t", obj))
        return None

    def memory_at(self, address, size, readonly=False):
        buf = self.ffi.buffer(self._cast("char *", address), size)
        mv = memoryview(buf).cast("B")
        return mv.toreadonly() if readonly else mv

    def string_at(self, address, size=None):
        p = self._cast("char *", address)
        if size is None:
            return self._string(p)
        return bytes(self.ffi.buffer(p, size))

    def callback(self, restype_letter, argletters, pyfunc):
        names = {"i": "int32_t", "I": "uint32_t", "q": "int64_t", "Q": "uint64_t",
                 "z": "size_t", "p": "uintptr_t", "f": "float", "d": "double"}
        res = "void" if restype_letter is None else names[restype_letter]
        decl = "%s(*)(%s)" % (res, ", ".join(names[c] for c in argletters) or "void")
        cb = self.ffi.callback(decl, pyfunc)
        return int(self._cast("uintptr_t", cb)), cb

# SPDX-License-Identifier: Apache-2.0
"""Loaded GPU code: modules (``cuModuleLoadDataEx``) and libraries (``cuLibraryLoadData``),
and the kernels they hold."""

from __future__ import annotations

import os
import struct
from typing import Dict, Optional, Tuple, Union

from . import driver as _d
from ._backend import backend
from ._constants import CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
from ._device import current_context
from ._interrupts import deferred
from ._kernel import Kernel
from ._resource import Resource
from .errors import CUDAError

_LOG_SIZE = 16384


def _jit_options(log):
    """Option arrays asking the JIT for its error log into ``log``."""
    opts = struct.pack("=II", CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    b = backend()
    log_addr, _keep = b.buffer_address(log)
    values = bytearray(struct.pack("=QQ", log_addr, len(log)))
    return bytearray(opts), values, _keep


def _log_text(log):
    return bytes(log).split(b"\0", 1)[0].decode("utf-8", "replace")


def _image_bytes(data, kind):
    if isinstance(data, str):
        if kind not in ("ptx", None):
            raise TypeError("%s images are binary: pass bytes, not str" % kind)
        data = data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError("module image must be bytes or str, got %s" % type(data).__name__)
    if not data:
        raise ValueError("module image is empty")
    if kind == "ptx" and not data.endswith(b"\0"):
        data += b"\0"
    return data


def _close_kernels(kernels: Dict[int, Kernel]) -> None:
    """Close the kernels a module or library handed out: it is being unloaded."""
    for k in list(kernels.values()):
        k._h = None
    kernels.clear()


class Module(Resource):
    """A loaded module (``cuModuleLoadDataEx``): PTX, cubin or fatbin.

    Build one with :meth:`from_ptx`, :meth:`from_cubin`, :meth:`from_fatbin`,
    :meth:`from_file` or ``Module(image)``.  JIT errors raise
    :class:`cuabi.CUDAError` with the JIT's log in the message.
    """

    __slots__ = ("_kind", "_kernels")

    def __init__(self, image, *, kind: Optional[str] = None, device=None):
        Resource.__init__(self)
        self._kind = kind
        self._kernels = {}
        data = _image_bytes(image, kind if kind is not None else
                            ("ptx" if isinstance(image, str) else None))
        ctx = current_context(device)
        log = bytearray(_LOG_SIZE)
        opts, values, keep = _jit_options(log)
        try:
            with deferred(), ctx._pushed():
                self._h = _d.cuModuleLoadDataEx(data, 2, opts, values)
                ctx._adopt(self)
        except CUDAError as exc:
            text = _log_text(log)
            if text:
                exc.args = (exc.args[0] + "\nJIT log:\n" + text,)
                exc.jit_log = text
            raise
        finally:
            del keep

    @classmethod
    def from_ptx(cls, ptx: Union[str, bytes], **kw) -> "Module":
        return cls(ptx, kind="ptx", **kw)

    @classmethod
    def from_cubin(cls, cubin: bytes, **kw) -> "Module":
        return cls(cubin, kind="cubin", **kw)

    @classmethod
    def from_fatbin(cls, fatbin: bytes, **kw) -> "Module":
        return cls(fatbin, kind="fatbin", **kw)

    @classmethod
    def from_file(cls, path, **kw) -> "Module":
        """Load a .ptx, .cubin or .fatbin file."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        kind = "ptx" if path.endswith(".ptx") else None
        return cls(data, kind=kind, **kw)

    def _release(self, h):
        _close_kernels(self._kernels)
        _d.cuModuleUnload(h)

    def get_kernel(self, name: str, params=None) -> "Kernel":
        """The kernel ``name`` (its mangled name for C++ kernels, or use
        ``extern "C"``).  ``params`` gives its parameter signature for the fast
        launch path (see :func:`parse_params`); without it the layout is taken
        from the driver (``cuFuncGetParamInfo``) and the Python argument types."""
        if not isinstance(name, str) or not name:
            raise TypeError("kernel name must be a non-empty str")
        mh = self.handle
        with self._in_context():
            h = _d.cuModuleGetFunction(mh, name)
        k = Kernel._make(h, name, params, self)
        self._kernels[id(k)] = k
        return k

    def get_global(self, name: str) -> Tuple[int, int]:
        """``(device pointer, size)`` of a ``__device__`` variable."""
        mh = self.handle
        with self._in_context():
            return _d.cuModuleGetGlobal(mh, name)


class Library(Resource):
    """A context-independent library (``cuLibraryLoadData``), CUDA 12+."""

    __slots__ = ("_kernels",)

    def __init__(self, image, *, kind: Optional[str] = None):
        Resource.__init__(self)
        self._kernels = {}
        data = _image_bytes(image, kind if kind is not None else
                            ("ptx" if isinstance(image, str) else None))
        ctx = current_context()
        log = bytearray(_LOG_SIZE)
        opts, values, keep = _jit_options(log)
        try:
            with deferred(), ctx._pushed():
                self._h = _d.cuLibraryLoadData(data, opts, values, 2, None, None, 0)
                ctx._adopt(self)
        except CUDAError as exc:
            text = _log_text(log)
            if text:
                exc.args = (exc.args[0] + "\nJIT log:\n" + text,)
            raise
        finally:
            del keep

    @classmethod
    def from_file(cls, path) -> "Library":
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        return cls(data, kind="ptx" if path.endswith(".ptx") else None)

    def _release(self, h):
        _close_kernels(self._kernels)
        _d.cuLibraryUnload(h)

    def get_kernel(self, name: str, params=None) -> "Kernel":
        """The kernel ``name``, bound to the current context's function."""
        if not isinstance(name, str) or not name:
            raise TypeError("kernel name must be a non-empty str")
        lh = self.handle
        with self._in_context():
            kh = _d.cuLibraryGetKernel(lh, name)
            fh = _d.cuKernelGetFunction(kh)
        k = Kernel._make(fh, name, params, self)
        k._kernel = kh
        self._kernels[id(k)] = k
        return k

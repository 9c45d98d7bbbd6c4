# SPDX-License-Identifier: Apache-2.0
"""NVVM IR to PTX with libNVVM, through libcuabi's NVVM family: :class:`NVVMProgram`.

:mod:`cuabi.nvvm` is the low-level family (every function of nvvm.h); this is
the small layer over it.  An :class:`NVVMProgram` collects modules (NVVM IR
as text, or LLVM bitcode as bytes), and each :meth:`NVVMProgram.verify` or
:meth:`NVVMProgram.compile` runs libNVVM once over all of them: it creates
an ``nvvmProgram``, adds every module, verifies or compiles, reads the log
and destroys the handle.  No handle lives between calls, so there is nothing
to close and the object can be used again after more :meth:`add_module`.

libNVVM is found as :mod:`cuabi.nvvm` finds it (``CUABI_LIBNVVM``,
``cuda.pathfinder``, libcuabi's search for ``libnvvm.so.4`` including the
toolkit's ``nvvm/lib64``); it is opened on the first call, not before.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from . import nvvm as _nvvm
from ._family_support import string_array
from ._object_code import _read
from .errors import NVVMError

IR = Union[str, bytes, bytearray, memoryview]


def nvvm_version() -> Tuple[int, int]:
    """libNVVM's ``(major, minor)``; raises :class:`cuabi.NVVMError` (with
    libcuabi's report) when no usable libNVVM is found."""
    major, minor = _nvvm.nvvmVersion()
    return major, minor


def nvvm_ir_version() -> Tuple[int, int, int, int]:
    """The NVVM IR version libNVVM reads: ``(major, minor, debug major, debug minor)``."""
    major, minor, dmajor, dminor = _nvvm.nvvmIRVersion()
    return major, minor, dmajor, dminor


def _check_options(options: Sequence[str]) -> List[str]:
    if isinstance(options, str):
        raise TypeError("options must be a sequence of str, not a single str: options=[%r]" % options)
    out = list(options)
    for o in out:
        if not isinstance(o, str) or not o:
            raise TypeError("options must be non-empty str, got %r" % (o,))
    return out


class NVVMProgram:
    """NVVM IR modules to verify and compile to PTX with libNVVM.

    ``NVVMProgram().add_module(ir, name="k.ll")``, then :meth:`compile`
    (``options`` as libNVVM reads them: ``"-arch=compute_90"``, ``"-opt=3"``,
    ``"-ftz=1"``, ``"-prec-div=0"``, ``"-fma=1"``, ``"-g"``,
    ``"-generate-line-info"``, ``"-gen-lto"``, ...).  A failing verify or
    compile raises :class:`cuabi.NVVMError` with libNVVM's code, the call
    that failed and the program's log.
    """

    def __init__(self) -> None:
        self._modules: List[Tuple[bytes, str, bool]] = []  # (IR, name, lazy)
        self.log = ""  # libNVVM's log of the last verify or compile

    def add_module(self, ir: IR, name: Optional[str] = None, lazy: bool = False) -> "NVVMProgram":
        """Add one module: NVVM IR text (str or bytes) or LLVM bitcode (bytes).
        ``lazy=True`` adds it with ``nvvmLazyAddModuleToProgram``: only what the
        other modules use is kept (for libraries such as libdevice).  Returns
        the program, so calls chain."""
        if isinstance(ir, str):
            data = ir.encode("utf-8")
        elif isinstance(ir, (bytes, bytearray, memoryview)):
            data = bytes(ir)
        else:
            raise TypeError("a module is NVVM IR as str or bytes, got %s" % type(ir).__name__)
        if not data:
            raise ValueError("the module is empty")
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a str, got %s" % type(name).__name__)
        if not isinstance(lazy, bool):
            raise TypeError("lazy must be True or False, got %r" % (lazy,))
        self._modules.append((data, name or "module%d" % len(self._modules), lazy))
        return self

    def verify(self, options: Sequence[str] = ()) -> str:
        """Check the modules as libNVVM would before compiling; return the log
        (often empty).  Raises :class:`cuabi.NVVMError` when the IR is not valid."""
        self._run(_check_options(options), compile=False)
        return self.log

    def compile(self, options: Sequence[str] = ()) -> bytes:
        """Compile every module into one PTX (LTO IR with ``"-gen-lto"``) and
        return it; the log is in :attr:`log`."""
        return self._run(_check_options(options), compile=True)

    def _run(self, opts: List[str], compile: bool) -> bytes:
        if not self._modules:
            raise ValueError("no module to %s: add_module(ir) first" % ("compile" if compile else "verify"))
        copts, _keep = string_array(opts)
        prog = _nvvm.nvvmCreateProgram()
        try:
            failure: Optional[NVVMError] = None
            try:
                for data, name, lazy in self._modules:
                    add = _nvvm.nvvmLazyAddModuleToProgram if lazy else _nvvm.nvvmAddModuleToProgram
                    add(prog, data, len(data), name)
                if compile:
                    _nvvm.nvvmCompileProgram(prog, len(opts), copts)
                else:
                    _nvvm.nvvmVerifyProgram(prog, len(opts), copts)
            except NVVMError as exc:
                if exc.report is not None:  # the library itself is unusable: nothing to log
                    raise
                failure = exc
            self.log = _read(prog, _nvvm.nvvmGetProgramLogSize, _nvvm.nvvmGetProgramLog).rstrip(b"\0").decode(
                "utf-8", "replace").rstrip()
            if failure is not None:
                raise NVVMError("%s %d module(s) failed in %s: %s (%s)"
                                % ("compiling" if compile else "verifying", len(self._modules),
                                   failure.function, failure.name, failure.code),
                                code=failure.code, log=self.log, name=failure.name, function=failure.function)
            if not compile:
                return b""
            return _read(prog, _nvvm.nvvmGetCompiledResultSize, _nvvm.nvvmGetCompiledResult).rstrip(b"\0")
        finally:
            _nvvm.nvvmDestroyProgram(prog)

    def __repr__(self) -> str:
        return "<cuabi.NVVMProgram %d module(s)>" % len(self._modules)


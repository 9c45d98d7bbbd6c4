"""Kernels: a module's function, its parameter signature and attributes.

Launch one with :func:`cuabi.launch` (``cuabi._launch``).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from . import driver as _d
from ._constants import CUDA_ERROR_INVALID_VALUE
from ._kernel_args import Param, infer_params, layout_for, parse_params
from ._resource import NO_CONTEXT, NotCopyable
from .errors import ClosedError, CUDAError, EntryPointError


class Kernel(NotCopyable):
    """A kernel ready to launch; get one from :meth:`cuabi.Module.get_kernel`.

    ``cuabi.launch(stream, config, kernel, *args)`` launches it.  It stays
    valid while its module is open.  ``_h`` (the CUfunction, None once the
    module is unloaded) and ``_layout`` (how its arguments are packed, None
    while they are inferred per launch) are read by the compiled launch (see
    cuabi._compiled).
    """

    __slots__ = ("_h", "name", "_owner", "_params", "_layout", "_kernel", "__weakref__")

    @classmethod
    def _make(cls, handle: int, name: str, params: Any, owner: Any) -> "Kernel":
        self = cls.__new__(cls)
        self._h = handle
        self.name = name
        self._owner = owner
        self._kernel = None
        self._params = None
        self._layout = None
        if params is not None:
            self.set_params(params)
        return self

    @property
    def handle(self) -> int:
        h = self._h
        if h is None:
            raise ClosedError("Kernel %r is closed (its module was unloaded)" % self.name)
        return h

    def _cuabi_address(self) -> int:
        return self.handle

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def params(self) -> Optional[Tuple[Param, ...]]:
        """The parameter signature in use (``None`` when inferred per launch)."""
        return self._params

    def set_params(self, params: Any) -> "Kernel":
        """Fix the parameter signature (see :func:`cuabi._kernel_args.parse_params`)
        for fast launches."""
        p = parse_params(params)
        self._layout = layout_for(p)
        self._params = p
        return self

    def attribute(self, attr: Any) -> int:
        """A ``CUfunction_attribute`` value (enum, int, or name like ``"num_regs"``)."""
        if isinstance(attr, str):
            name = attr if attr.startswith("CU_FUNC_ATTRIBUTE_") else "CU_FUNC_ATTRIBUTE_" + attr.upper()
            try:
                attr = _d.CUfunction_attribute[name]
            except KeyError:
                raise ValueError("unknown function attribute %r" % attr) from None
        h = self.handle
        with self._in_context():
            return _d.cuFuncGetAttribute(int(attr), h)

    def _in_context(self) -> Any:
        """Its module's context, pushed for a call (see cuabi._context)."""
        owner = self._owner
        return owner._in_context() if owner is not None else NO_CONTEXT

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute("MAX_THREADS_PER_BLOCK")

    @property
    def num_regs(self) -> int:
        return self.attribute("NUM_REGS")

    def param_info(self) -> List[Tuple[int, int]]:
        """``[(offset, size), ...]`` of the kernel's parameters, from the driver."""
        out = []
        h = self.handle
        i = 0
        with self._in_context():
            while True:
                try:
                    out.append(_d.cuFuncGetParamInfo(h, i))
                except CUDAError as exc:
                    if exc.code == CUDA_ERROR_INVALID_VALUE:  # past the last parameter
                        break
                    raise
                i += 1
        return out

    def __repr__(self) -> str:
        state = "closed" if self._h is None else "0x%x" % self._h
        return "<cuabi.Kernel %s %s>" % (self.name, state)


def infer_layout(kernel: Kernel, args: Tuple[Any, ...]) -> Any:
    """The argument layout for a launch of a kernel without a signature: the
    parameters' sizes from the driver (``cuFuncGetParamInfo``, CUDA 12.4+),
    their types from the arguments."""
    try:
        info = kernel.param_info()
    except EntryPointError:
        raise TypeError(
            "kernel %r has no parameter signature and this driver cannot describe its "
            "parameters (cuFuncGetParamInfo needs CUDA 12.4+); pass params= to "
            "get_kernel() or call set_params()" % kernel.name) from None
    if len(info) != len(args):
        raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, len(info), len(args)))
    return layout_for(parse_params(infer_params(info, args)))

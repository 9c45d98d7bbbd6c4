# SPDX-License-Identifier: Apache-2.0
"""Kernels: a module's function, its parameter signature, its attributes
(read and set) and its occupancy.

Launch one with :func:`cuabi.launch` (``cuabi._launch``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from . import driver as _d
from ._constants import (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                         CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CUDA_ERROR_INVALID_VALUE,
                         CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
from ._kernel_args import (HEADER_SIZE, Param, infer_params, layout_for, needs_driver_offsets, param_offsets,
                           parse_params, python_layout)
from ._launch_config import LaunchConfig, pack_launch_config
from ._resource import NO_CONTEXT, NotCopyable
from ._stream import stream_handle
from .errors import ClosedError, CUDAError, EntryPointError

_ATTR_PREFIX = "CU_FUNC_ATTRIBUTE_"


def _attribute_id(attr: Any) -> int:
    """A ``CUfunction_attribute`` from the enum, its int value, its full name
    or its short name (``"num_regs"``)."""
    if isinstance(attr, str):
        name = attr if attr.startswith(_ATTR_PREFIX) else _ATTR_PREFIX + attr.upper()
        members = _d.CUfunction_attribute
        try:
            return int(members[name])
        except KeyError:
            known = ", ".join(m.name[len(_ATTR_PREFIX):].lower() for m in members
                              if m.name != _ATTR_PREFIX + "MAX")
            raise ValueError("unknown function attribute %r; the attributes are: %s" % (attr, known)) from None
    if isinstance(attr, int) and not isinstance(attr, bool):
        return int(attr)
    raise TypeError("attribute must be a CUfunction_attribute, int or str, got %s" % type(attr).__name__)


class BlockSizeSuggestion(NamedTuple):
    """What :meth:`Kernel.max_potential_block_size` suggests: the block size
    that keeps the most threads resident, and the smallest grid (in blocks)
    that fills the whole device at that block size."""

    min_grid_size: int
    block_size: int


class Kernel(NotCopyable):
    """A kernel ready to launch; get one from :meth:`cuabi.Module.get_kernel`.

    ``cuabi.launch(stream, config, kernel, *args)`` launches it.  It stays
    valid while its module is open.  ``_h`` (the CUfunction, None once the
    module is unloaded) and ``_layout`` (how its arguments are packed, None
    while they are inferred per launch) are read by the compiled launch (see
    cuabi._compiled).
    """

    __slots__ = ("_h", "name", "_owner", "_params", "_offsets", "_layout", "_kernel", "__weakref__")

    @classmethod
    def _make(cls, handle: int, name: str, params: Any, owner: Any) -> "Kernel":
        self = cls.__new__(cls)
        self._h = handle
        self.name = name
        self._owner = owner
        self._kernel = None
        self._params = None
        self._offsets = None
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
        offsets = self._driver_offsets(p) if needs_driver_offsets(p) else None
        self._layout = layout_for(p, offsets)
        self._offsets = offsets
        self._params = p
        return self

    def _driver_offsets(self, params: Tuple[Param, ...]) -> Tuple[int, ...]:
        """The driver's offsets of the parameters, checked against the signature's
        sizes: where a struct aligned to more than 16 bytes goes depends on the
        architecture, so cuabi asks (``cuFuncGetParamInfo``)."""
        try:
            info = self.param_info()
        except EntryPointError:
            raise ValueError(
                "kernel %r takes a struct aligned to more than 16 bytes; where it goes in the "
                "parameter buffer only the driver can say (cuFuncGetParamInfo, CUDA 12.4+), and "
                "this driver cannot" % self.name) from None
        sizes = [size for _code, size, _align, _is_ptr in params]
        if [size for _off, size in info] != sizes:
            raise ValueError("kernel %r: the signature's parameter sizes %s differ from the kernel's %s"
                             % (self.name, sizes, [size for _off, size in info]))
        return tuple(off for off, _size in info)

    @classmethod
    def from_handle(cls, handle: Any, params: Any = None, name: Optional[str] = None) -> "Kernel":
        """Wrap a ``CUfunction`` another library loaded (an int, or an object
        ``int()`` converts, such as cuda.bindings' ``CUfunction``).

        The kernel is borrowed: cuabi never unloads it, and its methods run
        in the calling thread's current context, which must be the one the
        function belongs to.  ``name`` defaults to the driver's name for it
        (``cuFuncGetName``, CUDA 12.3+), which also checks the handle.  For a
        ``CUkernel`` (the library API), pass ``cuKernelGetFunction``'s
        result.
        """
        if isinstance(handle, (bool, float, str, bytes)) or not hasattr(handle, "__int__"):
            raise TypeError("Kernel.from_handle takes a CUfunction as an int or an object int() "
                            "converts (cuda.bindings' CUfunction), got %s" % type(handle).__name__)
        h = int(handle)
        if not 0 <= h < 2**64:
            raise ValueError("a CUfunction handle is 0 to 2**64-1, got %d" % h)
        if not h:
            raise ValueError("Kernel.from_handle needs a CUfunction, got a NULL handle")
        if name is None:
            try:
                name = _d.cuFuncGetName(h) or "0x%x" % h
            except EntryPointError:
                name = "0x%x" % h
        return cls._make(h, name, params, None)

    def attribute(self, attr: Any) -> int:
        """A ``CUfunction_attribute`` value (enum, int, or name like ``"num_regs"``)."""
        a = _attribute_id(attr)
        h = self.handle
        with self._in_context():
            return _d.cuFuncGetAttribute(a, h)

    def attributes(self) -> Dict[str, int]:
        """Every attribute the driver answers for this kernel, by short name
        (``{"max_threads_per_block": 1024, "num_regs": 16, ...}``)."""
        out = {}
        h = self.handle
        with self._in_context():
            for m in _d.CUfunction_attribute:
                if m.name == _ATTR_PREFIX + "MAX":
                    continue
                try:
                    out[m.name[len(_ATTR_PREFIX):].lower()] = _d.cuFuncGetAttribute(int(m), h)
                except CUDAError as exc:
                    if exc.code != CUDA_ERROR_INVALID_VALUE:  # one this driver does not know
                        raise
        return out

    def set_attribute(self, attr: Any, value: int) -> None:
        """Set a settable ``CUfunction_attribute`` (``cuFuncSetAttribute``):
        ``max_dynamic_shared_size_bytes`` (needed before launching with more
        than 48 KiB of dynamic shared memory),
        ``preferred_shared_memory_carveout``, the required cluster size
        attributes, ``non_portable_cluster_size_allowed``,
        ``cluster_scheduling_policy_preference``.  A value the device cannot
        take raises ``ValueError`` saying its limit."""
        a = _attribute_id(attr)
        if not isinstance(value, int) or isinstance(value, bool) or not -2**31 <= value < 2**31:
            raise ValueError("an attribute value is a 32-bit int, got %r" % (value,))
        h = self.handle
        with self._in_context():
            try:
                _d.cuFuncSetAttribute(h, a, value)
            except CUDAError as exc:
                if exc.code != CUDA_ERROR_INVALID_VALUE:
                    raise
                raise ValueError(self._refusal(a, value)) from exc

    def _refusal(self, attr: int, value: int) -> str:
        """Why the driver refused ``value`` for ``attr`` (in the kernel's context)."""
        what = "kernel %r: the driver refused %s = %d" % (self.name, _d.CUfunction_attribute(attr).name, value)
        if attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return what + " (not settable, or out of its range)"
        optin = _d.cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, _d.cuCtxGetDevice())
        static = _d.cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.handle)
        return ("%s: this device gives a block at most %d bytes of shared memory, and the kernel's static "
                "shared memory takes %d of them, so the dynamic part may be 0 to %d bytes"
                % (what, optin, static, optin - static))

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """The most dynamic shared memory a launch may ask for (48 KiB until
        raised); settable, up to the device's opt-in limit."""
        return self.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        self.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    # ------------------------------------------------------------ occupancy

    def max_active_blocks_per_multiprocessor(self, block_size: int, dynamic_shared_memory: int = 0) -> int:
        """How many blocks of ``block_size`` threads, each with
        ``dynamic_shared_memory`` bytes, one multiprocessor holds at once."""
        h = self.handle
        with self._in_context():
            return _d.cuOccupancyMaxActiveBlocksPerMultiprocessor(h, block_size, dynamic_shared_memory)

    def max_potential_block_size(self, dynamic_shared_memory: Union[int, Callable[[int], int]] = 0,
                                 block_size_limit: int = 0) -> BlockSizeSuggestion:
        """The block size with the highest occupancy, and the grid that fills
        the device with it (:class:`BlockSizeSuggestion`).

        ``dynamic_shared_memory`` is bytes per block, or a function from a
        block size to those bytes (asked for each candidate block size);
        ``block_size_limit`` caps the block size (0: the kernel's limit).
        """
        h = self.handle
        if not callable(dynamic_shared_memory):
            with self._in_context():
                grid, block = _d.cuOccupancyMaxPotentialBlockSize(h, None, dynamic_shared_memory,
                                                                  block_size_limit)
            return BlockSizeSuggestion(grid, block)
        # A function: the candidates are asked one by one here rather than
        # through a C callback, which neither backend would have to build.
        with self._in_context():
            limit = _d.cuFuncGetAttribute(0, h)  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
            sms = _d.cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, _d.cuCtxGetDevice())
        if block_size_limit > 0:
            limit = min(limit, block_size_limit)
        best = best_size = best_blocks = 0
        size = limit
        while size > 0:
            nbytes = dynamic_shared_memory(size)
            blocks = self.max_active_blocks_per_multiprocessor(size, nbytes)
            if blocks * size > best:
                best, best_size, best_blocks = blocks * size, size, blocks
            size = size // 32 * 32 if size % 32 else size - 32  # whole warps below the limit
        return BlockSizeSuggestion(best_blocks * sms, best_size)

    def available_dynamic_shared_memory_per_block(self, num_blocks: int, block_size: int) -> int:
        """The dynamic shared memory each block can have when ``num_blocks``
        blocks of ``block_size`` threads share one multiprocessor."""
        h = self.handle
        with self._in_context():
            return _d.cuOccupancyAvailableDynamicSMemPerBlock(h, num_blocks, block_size)

    def max_potential_cluster_size(self, config: LaunchConfig, stream: Any = None) -> int:
        """The largest cluster (in blocks) a launch with ``config``'s block
        and shared memory can have on this device."""
        return self._cluster_query(_d.cuOccupancyMaxPotentialClusterSize, config, stream)

    def max_active_clusters(self, config: LaunchConfig, stream: Any = None) -> int:
        """How many clusters of ``config.cluster`` can run at once on the
        device (``config`` needs a cluster, unless the kernel fixes one)."""
        return self._cluster_query(_d.cuOccupancyMaxActiveClusters, config, stream)

    def _cluster_query(self, query: Callable[..., int], config: LaunchConfig, stream: Any) -> int:
        if not isinstance(config, LaunchConfig):
            raise TypeError("config must be a LaunchConfig, got %s" % type(config).__name__)
        h = self.handle
        cfg, keep = pack_launch_config(config, stream_handle(stream) if stream is not None else 0)
        try:
            with self._in_context():
                return query(h, cfg)
        finally:
            del keep

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
    return layout_for(*_inferred_params(kernel, args))


def pack_params(kernel: Kernel, args: Tuple[Any, ...]) -> Tuple[bytes, Tuple[int, ...]]:
    """``args`` packed as ``kernel``'s parameter block (what follows a launch
    packet's header), the way a launch packs them, and each parameter's offset
    in it; for graph kernel nodes, which point at each parameter
    (``kernelParams``).  TypeError for bad arguments."""
    if kernel.__class__ is not Kernel:
        raise TypeError("kernel must be a cuabi.Kernel, got %s" % type(kernel).__name__)
    if kernel._h is None:
        raise ClosedError("Kernel %r is closed (its module was unloaded)" % kernel.name)
    params, offsets = kernel._params, kernel._offsets
    if params is None:
        params, offsets = _inferred_params(kernel, args)
    if len(args) != len(params):
        raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, len(params), len(args)))
    layout = python_layout(params, offsets)
    view = bytearray(layout.size)
    size = layout.pack(view, args, kernel)
    return bytes(view[HEADER_SIZE:size]), param_offsets(params, offsets)


def _inferred_params(kernel: Kernel, args: Tuple[Any, ...]) -> Tuple[Tuple[Param, ...], Tuple[int, ...]]:
    """A signature for ``args`` from the driver's description of the kernel's
    parameters, and the driver's offsets of them."""
    try:
        info = kernel.param_info()
    except EntryPointError:
        raise TypeError(
            "kernel %r has no parameter signature and this driver cannot describe its "
            "parameters (cuFuncGetParamInfo needs CUDA 12.4+); pass params= to "
            "get_kernel() or call set_params()" % kernel.name) from None
    if len(info) != len(args):
        raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, len(info), len(args)))
    return parse_params(infer_params(info, args)), tuple(off for off, _size in info)

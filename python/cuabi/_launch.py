# SPDX-License-Identifier: Apache-2.0
"""Launching kernels: :func:`cuabi.launch` (:class:`LaunchConfig` is in
``cuabi._launch_config``).

A launch takes five steps, in this order:

1. the stream's ``CUstream`` (a :class:`cuabi.Stream`, None, an int handle,
   or another library's stream);
2. the kernel's ``CUfunction`` and argument layout (fixed by its signature,
   or inferred from the driver and the arguments for this launch);
3. the packet: the config's header, then the arguments packed per the layout;
4. one call into libcuabi: ``cuabi_launch_packed``, or ``cuLaunchKernelEx``
   (:func:`launch_extended`) for configs with launch attributes (cluster,
   cooperative, priority, programmatic dependent launch);
5. the exception for a failure status.

:func:`python_launch` is those steps in Python.  With cffi's compiled tier,
``cuabi.launch`` is instead the speedups module's ``launch``
(python/speedups/speedups.c), the same steps in C, reading what
:class:`cuabi._compiled.LaunchContract` declares.  Which one ``cuabi.launch``
is gets decided on first access (that opens libcuabi), by
:func:`_choose_launch`.
"""

from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import driver as _d
from ._address import device_pointer
from ._backend import backend
from ._constants import (CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT, CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT,
                         CU_LAUNCH_PARAM_END_AS_INT)
from ._kernel import Kernel, infer_layout
from ._kernel_args import HEADER, HEADER_SIZE
from ._launch_config import LaunchConfig, pack_launch_config
from ._stream import Stream, stream_handle
from .errors import ClosedError, CUDAError


def launch_extended(f: int, s: int, config: LaunchConfig, param_bytes: Any) -> int:
    """Step 4 for configs with launch attributes (cluster, cooperative,
    priority, programmatic): ``cuLaunchKernelEx`` with the parameters as one
    buffer; returns the status (0 for success)."""
    b = backend()
    cfg, keep_a = pack_launch_config(config, s)
    params = bytes(param_bytes)
    params_addr, keep_p = b.buffer_address(bytearray(params) or bytearray(1))
    size_cell = bytearray(struct.pack("=Q", len(params)))
    size_addr, keep_s = b.buffer_address(size_cell)
    extra = bytearray(struct.pack("=5Q", CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT, params_addr,
                                  CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT, size_addr, CU_LAUNCH_PARAM_END_AS_INT))
    try:
        _d.cuLaunchKernelEx(cfg, f, None, extra)
    except CUDAError as exc:
        return exc.code
    finally:
        del keep_a, keep_p, keep_s
    return 0


# cuabi_launch_packed, from the backend; set by _choose_launch before
# python_launch can be reached
_launch_packed: Optional[Callable[..., int]] = None
_write_header = HEADER.pack_into


def python_launch(stream: Any, config: LaunchConfig, kernel: Kernel, *args: Any) -> None:
    """Launch ``kernel`` with ``config`` on ``stream`` (``None``: the NULL stream).

    Pointer arguments take cuabi buffers and arrays, other libraries' device
    arrays (``__cuda_array_interface__``, ``data_ptr()``) or ints; numbers are
    converted to the kernel's declared parameter types.
    """
    # 1. the stream
    if stream.__class__ is Stream:
        s = stream._h
        if s is None:
            raise ClosedError("Stream is closed")
    elif stream is None:
        s = 0
    else:
        s = stream_handle(stream)
    # 2. the kernel's function and argument layout
    if kernel.__class__ is not Kernel:
        raise TypeError("kernel must be a cuabi.Kernel, got %s" % type(kernel).__name__)
    f = kernel._h
    if f is None:
        raise ClosedError("Kernel %r is closed (its module was unloaded)" % kernel.name)
    layout = kernel._layout
    if layout is None:
        layout = infer_layout(kernel, args)
    if len(args) != layout.nparams:
        raise TypeError("kernel %r takes %d arguments, %d given" % (kernel.name, layout.nparams, len(args)))
    # 3. the packet: the config's header (rewritten only for another config), the arguments
    packet = layout.spare
    layout.spare = None
    if packet is None:
        packet = layout.new_packet()
    try:
        if config is not packet[2]:
            if config.__class__ is not LaunchConfig:
                raise TypeError("config must be a LaunchConfig, got %s" % type(config).__name__)
            _write_header(packet[1], 0, *config._hdr)
            packet[2] = config
        size = layout.pack(packet[1], args, kernel)
    except BaseException:
        layout.spare = packet
        raise
    # 4. the driver call
    if config._ex:
        rc = launch_extended(f, s, config, packet[1][HEADER_SIZE:size])
    else:
        rc = _launch_packed(f, s, packet[0], size)  # type: ignore[misc]
    layout.spare = packet
    # 5. a failure status
    if rc:
        from ._own_api import raise_for

        raise_for(rc, "cuabi_launch_packed(%s)" % kernel.name)


_chosen: Optional[Callable[..., None]] = None
_registered: Any = None  # the LaunchContract the compiled launch was given
_choose_lock = threading.Lock()


def _choose_launch() -> Callable[..., None]:
    """``cuabi.launch``: the compiled tier's where there is one (after handing
    it the :class:`LaunchContract`), else :func:`python_launch`."""
    global _chosen, _launch_packed, _registered
    from ._compiled import LaunchContract, speedups
    from ._memory import DeviceBuffer, ManagedBuffer, PinnedBuffer

    with _choose_lock:
        if _chosen is not None:
            return _chosen
        try:
            compiled = speedups()
            _launch_packed = backend().launch_packed
        except (OSError, ImportError, ValueError):
            # no library, no backend module, a bad CUABI_* setting: then no kernel
            # can exist either, and python_launch's argument checks say what is wrong
            compiled = None
        if compiled is None:
            _chosen = python_launch
        else:
            _registered = LaunchContract(
                stream_type=Stream, stream_slot="_h", stream_handle=stream_handle,
                kernel_type=Kernel, kernel_handle_slot="_h", kernel_layout_slot="_layout",
                infer_layout=infer_layout,
                memory_types=(DeviceBuffer, ManagedBuffer, PinnedBuffer), memory_slot="_h",
                device_pointer=device_pointer,
                config_type=LaunchConfig, config_header="_hdr", config_extended="_ex",
                launch_extended=launch_extended, closed_error=ClosedError)
            compiled.register_launch(_registered)
            _chosen = compiled.launch
        return _chosen


if TYPE_CHECKING:  # what cuabi.launch is, for type checkers (chosen on first access)
    def launch(stream: Any, config: LaunchConfig, kernel: Kernel, *args: Any) -> None:
        """Launch ``kernel`` with ``config`` on ``stream`` (see :func:`python_launch`)."""


def __getattr__(name: str) -> Any:
    if name == "launch":
        return _chosen or _choose_launch()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

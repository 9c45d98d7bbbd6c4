# SPDX-License-Identifier: Apache-2.0
"""cuabi: the CUDA driver API from Python, through libcuabi's stable C ABI.

Two layers:

* :mod:`cuabi.driver` - every driver entry point, named as in CUDA, returning
  its outputs and raising :class:`CUDAError` subclasses on failure;
* the Pythonic layer - :class:`Device`, :class:`Stream`, :class:`Event`,
  buffers, pools, :class:`Module`/:class:`Kernel` with :func:`launch`,
  graphs, :class:`Program` (NVRTC), :class:`Linker` (nvJitLink),
  :mod:`cuabi.system` (NVML), DLPack and ``__cuda_array_interface__``.

The toolkit's libraries that libcuabi forwards have low-level modules like
:mod:`cuabi.driver`: :mod:`cuabi.nvrtc`, :mod:`cuabi.nvjitlink`,
:mod:`cuabi.nvvm` and :mod:`cuabi.nvml`.

Importing cuabi loads nothing: libcuabi is opened on first use, the CUDA
driver on the first driver call, NVRTC on the first compilation, and so on.
``python -m cuabi`` prints a diagnostic report.
"""

# True for type checkers (mypy and pyright read the name), False at run time:
# importing typing here would cost milliseconds of every `import cuabi`
TYPE_CHECKING = False

__version__ = "1.1.0"

# public name -> (submodule, attribute); resolved on first access (PEP 562)
_LAZY = {
    "driver": ("driver", None),
    "nvrtc": ("nvrtc", None),
    "nvjitlink": ("nvjitlink", None),
    "nvvm": ("nvvm", None),
    "nvml": ("nvml", None),
    "system": ("system", None),
    "errors": ("errors", None),
    "CUDAError": ("errors", "CUDAError"),
    "ClosedError": ("errors", "ClosedError"),
    "NVRTCError": ("errors", "NVRTCError"),
    "NVJitLinkError": ("errors", "NVJitLinkError"),
    "NVVMError": ("errors", "NVVMError"),
    "NVMLError": ("errors", "NVMLError"),
    "FamilyError": ("errors", "FamilyError"),
    "DriverLoadError": ("errors", "DriverLoadError"),
    "LibraryNotFoundError": ("errors", "LibraryNotFoundError"),
    "ConfigurationError": ("errors", "ConfigurationError"),
    "backend_name": ("_own_api", "backend_name"),
    "library_path": ("_own_api", "library_path"),
    "library_version": ("_own_api", "library_version"),
    "load": ("_own_api", "load"),
    "driver_status": ("_own_api", "driver_status"),
    "driver_report": ("_own_api", "driver_report"),
    "driver_path": ("_own_api", "driver_path"),
    "driver_version": ("_own_api", "driver_version"),
    "set_default_stream_mode": ("_own_api", "set_default_stream_mode"),
    "default_stream_mode": ("_own_api", "default_stream_mode"),
    "error_name": ("_own_api", "error_name"),
    "error_string": ("_own_api", "error_string"),
    "get_proc": ("_own_api", "get_proc"),
    "call": ("_own_api", "call"),
    "init": ("_device", "init"),
    "Device": ("_device", "Device"),
    "Context": ("_context", "Context"),
    "Stream": ("_stream", "Stream"),
    "Event": ("_event", "Event"),
    "devices": ("_device", "devices"),
    "current_context": ("_device", "current_context"),
    "DeviceBuffer": ("_memory", "DeviceBuffer"),
    "PinnedBuffer": ("_memory", "PinnedBuffer"),
    "ManagedBuffer": ("_memory", "ManagedBuffer"),
    "MemoryPool": ("_memory", "MemoryPool"),
    "copy": ("_memory", "copy"),
    "prefetch_batch": ("_memory", "prefetch_batch"),
    "MemoryResource": ("_memory_resource", "MemoryResource"),
    "PinnedMemoryResource": ("_memory_resource", "PinnedMemoryResource"),
    "ManagedMemoryResource": ("_memory_resource", "ManagedMemoryResource"),
    "discard_batch": ("_memory", "discard_batch"),
    "VirtualMemoryResource": ("_vmm", "VirtualMemoryResource"),
    "VirtualBuffer": ("_vmm", "VirtualBuffer"),
    "PinnedMemoryPool": ("_pools", "PinnedMemoryPool"),
    "ManagedMemoryPool": ("_pools", "ManagedMemoryPool"),
    "PinnedPoolBuffer": ("_pools", "PinnedPoolBuffer"),
    "ManagedPoolBuffer": ("_pools", "ManagedPoolBuffer"),
    "GraphMemoryResource": ("_pools", "GraphMemoryResource"),
    "copy_batch": ("_pools", "copy_batch"),
    "Module": ("_module", "Module"),
    "Library": ("_module", "Library"),
    "Kernel": ("_kernel", "Kernel"),
    "LaunchConfig": ("_launch_config", "LaunchConfig"),
    "launch": ("_launch", "launch"),
    "Graph": ("_graph", "Graph"),
    "GraphExec": ("_graph", "GraphExec"),
    "GraphNode": ("_graph", "GraphNode"),
    "Program": ("_program", "Program"),
    "ObjectCode": ("_object_code", "ObjectCode"),
    "ProgramOptions": ("_program_options", "ProgramOptions"),
    "ProgramCache": ("_program_cache", "ProgramCache"),
    "NVVMProgram": ("_nvvm_program", "NVVMProgram"),
    "nvvm_version": ("_nvvm_program", "nvvm_version"),
    "nvvm_ir_version": ("_nvvm_program", "nvvm_ir_version"),
    "Linker": ("_linker", "Linker"),
    "nvjitlink_version": ("_linker", "nvjitlink_version"),
    "nvrtc_version": ("_program", "nvrtc_version"),
    "nvrtc_path": ("_program", "nvrtc_path"),
    "DeviceArray": ("_memory", "DeviceArray"),
    "from_dlpack": ("_interop", "from_dlpack"),
    "from_cuda_array_interface": ("_interop", "from_cuda_array_interface"),
    "asarray": ("_interop", "asarray"),
    "StridedMemoryView": ("_strided_view", "StridedMemoryView"),
    "IpcBufferDescriptor": ("_ipc", "IpcBufferDescriptor"),
    "IpcEventHandle": ("_ipc", "IpcEventHandle"),
    "send_fd": ("_ipc", "send_fd"),
    "recv_fd": ("_ipc", "recv_fd"),
    "GreenContext": ("_green", "GreenContext"),
    "SMResource": ("_green", "SMResource"),
    "sm_resource": ("_green", "sm_resource"),
    "TensorMap": ("_tensor_map", "TensorMap"),
}

__all__ = sorted(_LAZY) + ["__version__"]

if TYPE_CHECKING:  # what type checkers see; at run time the names resolve lazily (below)
    from ._context import Context as Context
    from ._device import (
        Device as Device, current_context as current_context, devices as devices, init as init)
    from ._event import Event as Event
    from ._graph import Graph as Graph, GraphExec as GraphExec, GraphNode as GraphNode
    from ._ipc import (
        IpcBufferDescriptor as IpcBufferDescriptor, IpcEventHandle as IpcEventHandle, recv_fd as recv_fd,
        send_fd as send_fd)
    from ._green import GreenContext as GreenContext, SMResource as SMResource, sm_resource as sm_resource
    from ._interop import (
        asarray as asarray, from_cuda_array_interface as from_cuda_array_interface,
        from_dlpack as from_dlpack)
    from ._kernel import Kernel as Kernel
    from ._launch import launch as launch
    from ._launch_config import LaunchConfig as LaunchConfig
    from ._linker import Linker as Linker, nvjitlink_version as nvjitlink_version
    from ._memory import (
        DeviceArray as DeviceArray, DeviceBuffer as DeviceBuffer, ManagedBuffer as ManagedBuffer,
        MemoryPool as MemoryPool, PinnedBuffer as PinnedBuffer, copy as copy, discard_batch as discard_batch,
        prefetch_batch as prefetch_batch)
    from ._memory_resource import (
        ManagedMemoryResource as ManagedMemoryResource, MemoryResource as MemoryResource,
        PinnedMemoryResource as PinnedMemoryResource)
    from ._vmm import VirtualBuffer as VirtualBuffer, VirtualMemoryResource as VirtualMemoryResource
    from ._module import Library as Library, Module as Module
    from ._nvvm_program import (
        NVVMProgram as NVVMProgram, nvvm_ir_version as nvvm_ir_version, nvvm_version as nvvm_version)
    from ._program_cache import ProgramCache as ProgramCache
    from ._pools import (
        GraphMemoryResource as GraphMemoryResource, ManagedMemoryPool as ManagedMemoryPool,
        ManagedPoolBuffer as ManagedPoolBuffer, PinnedMemoryPool as PinnedMemoryPool,
        PinnedPoolBuffer as PinnedPoolBuffer, copy_batch as copy_batch)
    from ._program_options import ProgramOptions as ProgramOptions
    from ._strided_view import StridedMemoryView as StridedMemoryView
    from ._own_api import (
        backend_name as backend_name, call as call, default_stream_mode as default_stream_mode,
        driver_path as driver_path, driver_report as driver_report, driver_status as driver_status,
        driver_version as driver_version, error_name as error_name, error_string as error_string,
        get_proc as get_proc, library_path as library_path, library_version as library_version,
        load as load, set_default_stream_mode as set_default_stream_mode)
    from ._object_code import ObjectCode as ObjectCode
    from ._program import (
        Program as Program, nvrtc_path as nvrtc_path,
        nvrtc_version as nvrtc_version)
    from ._stream import Stream as Stream
    from ._tensor_map import TensorMap as TensorMap
    from . import driver as driver
    from . import errors as errors
    from . import nvjitlink as nvjitlink, nvml as nvml, nvrtc as nvrtc, nvvm as nvvm, system as system
    from .errors import (
        CUDAError as CUDAError, ClosedError as ClosedError, ConfigurationError as ConfigurationError,
        DriverLoadError as DriverLoadError, FamilyError as FamilyError, LibraryNotFoundError as LibraryNotFoundError,
        NVJitLinkError as NVJitLinkError, NVMLError as NVMLError, NVRTCError as NVRTCError,
        NVVMError as NVVMError)


def __getattr__(name):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError("module 'cuabi' has no attribute %r" % name)
    import importlib

    mod = importlib.import_module("." + target[0], __name__)
    value = mod if target[1] is None else getattr(mod, target[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

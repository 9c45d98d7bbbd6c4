# SPDX-License-Identifier: Apache-2.0
"""What ``nvidia-smi`` shows, for scripts: the GPUs, their memory, load,
temperature, power and processes, and the driver's version, through NVML
(:mod:`cuabi.nvml`, libcuabi's NVML family).

NVML (``libnvidia-ml.so.1``) comes with the NVIDIA driver; libcuabi opens it
on the first query, and this module initialises it (``nvmlInit``) once per
process, then.  Without it every query raises :class:`cuabi.NVMLError`
carrying libcuabi's report (where it looked, what to do).  NVML numbers GPUs
in PCI order, as ``nvidia-smi`` does, which is not always CUDA's order, and
``CUDA_VISIBLE_DEVICES`` does not apply to it: match a :class:`GPU` to a
:class:`cuabi.Device` by UUID (``gpu.uuid == "GPU-%s" % device.uuid``).

Example::

    from cuabi import system
    print(system.driver_version(), system.device_count())
    for gpu in system.gpus():
        m = gpu.memory
        print(gpu.index, gpu.name, m.used / 2**30, "GiB used of", m.total / 2**30)
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from . import nvml as _nvml
from .errors import NVMLError

__all__ = ["GPU", "Memory", "Process", "Utilization", "cuda_driver_version", "device_count",
           "driver_version", "gpus", "nvml_version", "snapshot"]

_lock = threading.Lock()
_initialised = False


def _init() -> None:
    """nvmlInit, once per process (NVML counts its inits; cuabi never shuts it down,
    so that handles stay valid for the life of the process)."""
    global _initialised
    if _initialised:
        return
    with _lock:
        if not _initialised:
            _nvml.nvmlInit()
            _initialised = True


def _const(name: str) -> int:
    return getattr(_nvml, name)


def _text(fn: Callable[..., Any], *args: Any, size: int = 256) -> str:
    """A string NVML writes into a buffer of ``size`` bytes."""
    buf = bytearray(size)
    fn(*(args + (buf, size)))
    return bytes(buf).split(b"\0", 1)[0].decode("utf-8", "replace")


def _record(name: str, fn: Callable[..., Any], *args: Any, version: Optional[int] = None) -> Dict[str, int]:
    """A struct NVML fills in, as a dict of its fields (``version`` written first
    for the versioned structs)."""
    from ._family_tables import RECORDS

    fmt, names, size = RECORDS[name]
    buf = bytearray(size)
    if version is not None:
        struct.pack_into("=I", buf, 0, version)
    fn(*(args + (buf,)))
    return dict(zip(names, struct.unpack(fmt, bytes(buf))))


class Memory(NamedTuple):
    """A GPU's memory in bytes: ``total``, ``used``, ``free``, and ``reserved``
    (held by the driver and firmware; 0 where NVML does not say)."""

    total: int
    used: int
    free: int
    reserved: int


class Utilization(NamedTuple):
    """Percent of the last sample period during which kernels ran (``gpu``) and
    device memory was read or written (``memory``), as ``nvidia-smi`` shows."""

    gpu: int
    memory: int


class Process(NamedTuple):
    """A process using a GPU: ``pid``, ``name`` (``None`` when NVML may not tell,
    e.g. another user's process), ``used_memory`` in bytes (``None`` when NVML
    cannot tell, as under some virtualisation), ``kind`` ``"compute"`` or
    ``"graphics"``."""

    pid: int
    name: Optional[str]
    used_memory: Optional[int]
    kind: str


# NVML's answer for "not available" in usedGpuMemory (NVML_VALUE_NOT_AVAILABLE, as unsigned long long)
_NOT_AVAILABLE = (1 << 64) - 1


def driver_version() -> str:
    """The NVIDIA driver's version, as ``nvidia-smi`` prints it (``"580.65.06"``)."""
    _init()
    return _text(_nvml.nvmlSystemGetDriverVersion, size=_const("NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE"))


def nvml_version() -> str:
    """NVML's own version (``"13.580.65.06"``)."""
    _init()
    return _text(_nvml.nvmlSystemGetNVMLVersion, size=_const("NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE"))


def cuda_driver_version() -> Tuple[int, int]:
    """The newest CUDA version the driver supports, ``(major, minor)``: the
    "CUDA Version" of ``nvidia-smi``'s header."""
    _init()
    v = _nvml.nvmlSystemGetCudaDriverVersion()
    return v // 1000, v % 1000 // 10


def device_count() -> int:
    """How many GPUs NVML sees (all of them: ``CUDA_VISIBLE_DEVICES`` does not
    apply to NVML)."""
    _init()
    return _nvml.nvmlDeviceGetCount()


def gpus() -> List["GPU"]:
    """Every GPU NVML sees, in its order."""
    return [GPU(i) for i in range(device_count())]


def snapshot() -> Dict[str, Any]:
    """Everything this module can tell, as plain data (for ``json.dumps``): the
    driver's versions and :meth:`GPU.snapshot` of each GPU."""
    return {"driver_version": driver_version(), "cuda_driver_version": list(cuda_driver_version()),
            "gpus": [g.snapshot() for g in gpus()]}


class GPU:
    """One GPU as NVML sees it, by NVML index (``GPU(0)``).

    Each property asks NVML when read, so values are current.  A query the GPU
    does not support (a power sensor on some boards, say) raises
    :class:`cuabi.NVMLError` with ``name == "NVML_ERROR_NOT_SUPPORTED"``;
    :meth:`snapshot` puts ``None`` there instead.
    """

    __slots__ = ("index", "_handle")

    def __init__(self, index: int = 0):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError("GPU index must be an int, got %s" % type(index).__name__)
        count = device_count()
        if not 0 <= index < count:
            raise IndexError("no GPU %d: NVML sees %d GPU(s) (indices 0 to %d)" % (index, count, count - 1))
        self.index = index
        self._handle = _nvml.nvmlDeviceGetHandleByIndex(index)

    @property
    def handle(self) -> int:
        """The ``nvmlDevice_t``, for :mod:`cuabi.nvml` calls this class does not make."""
        return self._handle

    @property
    def name(self) -> str:
        """The product name (``"NVIDIA H200"``)."""
        return _text(_nvml.nvmlDeviceGetName, self._handle, size=_const("NVML_DEVICE_NAME_V2_BUFFER_SIZE"))

    @property
    def uuid(self) -> str:
        """The GPU's UUID as NVML and ``nvidia-smi -L`` write it (``"GPU-<uuid>"``):
        ``"GPU-%s" % cuabi.Device(i).uuid`` for the same GPU."""
        return _text(_nvml.nvmlDeviceGetUUID, self._handle, size=_const("NVML_DEVICE_UUID_V2_BUFFER_SIZE"))

    @property
    def memory(self) -> Memory:
        """Device memory in bytes (:class:`Memory`), as ``nvidia-smi``'s memory column."""
        try:
            m = _record("nvmlMemory_v2_t", _nvml.nvmlDeviceGetMemoryInfo_v2, self._handle,
                        version=_const("nvmlMemory_v2"))
            return Memory(m["total"], m["used"], m["free"], m["reserved"])
        except NVMLError as exc:
            # an NVML older than the versioned query: the first one
            if exc.name not in ("NVML_ERROR_FUNCTION_NOT_FOUND", "NVML_ERROR_NOT_SUPPORTED",
                                "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"):
                raise
        m = _record("nvmlMemory_t", _nvml.nvmlDeviceGetMemoryInfo, self._handle)
        return Memory(m["total"], m["used"], m["free"], 0)

    @property
    def utilization(self) -> Utilization:
        """GPU and memory load in percent (:class:`Utilization`)."""
        u = _record("nvmlUtilization_t", _nvml.nvmlDeviceGetUtilizationRates, self._handle)
        return Utilization(u["gpu"], u["memory"])

    @property
    def temperature(self) -> int:
        """The GPU die's temperature in degrees Celsius."""
        return _nvml.nvmlDeviceGetTemperature(self._handle, _const("NVML_TEMPERATURE_GPU"))

    @property
    def power_usage(self) -> float:
        """The board's power draw in watts."""
        return _nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0

    @property
    def power_limit(self) -> float:
        """The power limit the driver enforces, in watts."""
        return _nvml.nvmlDeviceGetEnforcedPowerLimit(self._handle) / 1000.0

    @property
    def processes(self) -> List[Process]:
        """The processes using this GPU, compute then graphics (``nvidia-smi``'s
        process table; a process of another container may be missing)."""
        out = self._processes(_nvml.nvmlDeviceGetComputeRunningProcesses, "compute")
        seen = {p.pid for p in out}
        out += [p for p in self._processes(_nvml.nvmlDeviceGetGraphicsRunningProcesses, "graphics")
                if p.pid not in seen]
        return out

    def _processes(self, fn: Callable[..., Any], kind: str) -> List[Process]:
        from ._family_tables import RECORDS

        fmt, names, size = RECORDS["nvmlProcessInfo_t"]
        capacity = 16
        while True:
            buf = bytearray(size * capacity)
            try:
                count = fn(self._handle, capacity, buf)
                break
            except NVMLError as exc:
                # more processes than room: NVML says so; try again with more
                if exc.name != "NVML_ERROR_INSUFFICIENT_SIZE" or capacity >= 1 << 16:
                    raise
                capacity *= 4
        procs = []
        for k in range(min(count, capacity)):
            rec = dict(zip(names, struct.unpack_from(fmt, buf, k * size)))
            used = rec["usedGpuMemory"]
            procs.append(Process(rec["pid"], _process_name(rec["pid"]),
                                 None if used == _NOT_AVAILABLE else used, kind))
        return procs

    def snapshot(self) -> Dict[str, Any]:
        """Every property as plain data; ``None`` for what this GPU or NVML does
        not support (or may not tell this user)."""
        out: Dict[str, Any] = {"index": self.index}
        for field in ("name", "uuid", "memory", "utilization", "temperature", "power_usage", "power_limit",
                      "processes"):
            try:
                value = getattr(self, field)
            except NVMLError as exc:
                if exc.name not in ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION",
                                    "NVML_ERROR_FUNCTION_NOT_FOUND"):
                    raise
                value = None
            if isinstance(value, tuple) and hasattr(value, "_asdict"):
                value = value._asdict()
            elif isinstance(value, list):
                value = [p._asdict() for p in value]
            out[field] = value
        return out

    def __repr__(self) -> str:
        return "<cuabi.system.GPU %d>" % self.index


def _process_name(pid: int) -> Optional[str]:
    try:
        return _text(_nvml.nvmlSystemGetProcessName, pid, size=1024) or None
    except NVMLError:
        return None  # gone, or another user's: NVML may not tell

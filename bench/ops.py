# SPDX-License-Identifier: Apache-2.0
"""The catalogue of what bench/run measures: operations and contenders.

Everything else in bench/ takes names from here, so an operation or a
contender is added in one place.
"""

from common import BIG, GRAPH_NODES, SMALL


class Operation:
    """One steady-state operation, timed in batches inside a long-lived worker.

    per_unit  how many units one iteration counts for (a graph launch runs
              100 kernel nodes; the result is per node)
    nbytes    bytes moved per iteration (copies: the report adds GB/s)
    chunk     at most this many iterations between two untimed
              synchronisations (launches: keeps the queue from filling, so
              the enqueue rate is measured, not the GPU's execution rate)
    timed_sync  the closing synchronisation is inside the timed region
              (copies, graph launches: their GPU work counts)
    target_ms the batch length the runner calibrates each contender to
    """

    def __init__(self, name, label, group, *, per_unit=1, nbytes=0, chunk=0,
                 timed_sync=True, target_ms=20.0, python_only=False):
        self.name = name
        self.label = label
        self.group = group
        self.per_unit = per_unit
        self.nbytes = nbytes
        self.chunk = chunk
        self.timed_sync = timed_sync
        self.target_ms = target_ms
        self.python_only = python_only


LAUNCH_CHUNK = 256

OPERATIONS = [
    Operation("ctx_get_current", "cuCtxGetCurrent", "trivial"),
    Operation("device_get_attribute", "cuDeviceGetAttribute (SM count)", "trivial"),
    Operation("event_create_destroy", "event create + destroy", "trivial"),
    Operation("event_query", "event query (completed event)", "trivial"),
    Operation("stream_query", "stream query (idle stream)", "trivial"),
    Operation("launch_0", "empty kernel launch, 0 arguments", "launch",
              chunk=LAUNCH_CHUNK, timed_sync=False),
    Operation("launch_3", "empty kernel launch, 3 arguments", "launch",
              chunk=LAUNCH_CHUNK, timed_sync=False),
    Operation("launch_16", "empty kernel launch, 16 arguments", "launch",
              chunk=LAUNCH_CHUNK, timed_sync=False),
    Operation("graph_instantiate", f"instantiate + destroy a graph of {GRAPH_NODES} empty kernels",
              "graph"),
    Operation("graph_launch", f"graph of {GRAPH_NODES} empty kernels: launch + run, per node",
              "graph", per_unit=GRAPH_NODES),
    Operation("graph_new_args", "instantiated graph of one 3-argument kernel: new arguments + launch + run",
              "graph"),
    Operation("h2d_4k_pinned", "copy 4 KiB host to device, pinned", "copy", nbytes=SMALL),
    Operation("h2d_4k_pageable", "copy 4 KiB host to device, pageable", "copy", nbytes=SMALL),
    Operation("d2h_4k_pinned", "copy 4 KiB device to host, pinned", "copy", nbytes=SMALL),
    Operation("d2h_4k_pageable", "copy 4 KiB device to host, pageable", "copy", nbytes=SMALL),
    Operation("h2d_256m_pinned", "copy 256 MiB host to device, pinned", "bandwidth",
              nbytes=BIG, target_ms=40.0),
    Operation("h2d_256m_pageable", "copy 256 MiB host to device, pageable", "bandwidth",
              nbytes=BIG, target_ms=40.0),
    Operation("d2h_256m_pinned", "copy 256 MiB device to host, pinned", "bandwidth",
              nbytes=BIG, target_ms=40.0),
    Operation("d2h_256m_pageable", "copy 256 MiB device to host, pageable", "bandwidth",
              nbytes=BIG, target_ms=40.0),
    Operation("d2d_256m", "copy 256 MiB device to device", "bandwidth", nbytes=BIG),
    Operation("alloc_free_1m", "stream-ordered allocate + free, 1 MiB", "memory"),
    Operation("python_loop", "the Python timing loop alone (calls a no-op builtin)",
              "overhead", python_only=True),
]

OPERATION = {op.name: op for op in OPERATIONS}

GROUPS = [
    ("trivial", "Trivial driver calls (per call)"),
    ("launch", "Empty-kernel launch, asynchronous enqueue on one stream (per launch)"),
    ("graph", "Graphs"),
    ("copy", "Small copies, synchronous (per copy)"),
    ("bandwidth", "Large copies (per copy, and bandwidth)"),
    ("memory", "Stream-ordered memory (per allocate + free)"),
    ("overhead", "Python timing-loop overhead (included in every Python number above)"),
]


class Contender:
    """kind 'c': a program built from bench/c/bench_driver.c; kind 'py': a
    module of bench/contenders run by bench/worker.py and bench/startup.py."""

    def __init__(self, name, label, kind, module=None, env=None, anchor=False):
        self.name = name
        self.label = label
        self.kind = kind
        self.module = module
        self.env = env or {}    # a value of None removes the variable
        self.anchor = anchor
        self.python = None      # the interpreter, where not bench/run's (--wheel: a venv's)


CONTENDERS = [
    Contender("c_direct", "C, libcuda direct (floor)", "c"),
    Contender("c_cuabi", "C, libcuabi", "c"),
    # cuabi's three tiers: cffi with the compiled tier (the cp310-abi3 wheel), cffi's
    # ABI mode (the py3-none wheel) and ctypes
    Contender("cuabi_cffi", "cuabi (cffi)", "py", "py_cuabi", {"CUABI_PY_BACKEND": "cffi"}),
    Contender("cuabi_cffi_abi", "cuabi (cffi ABI mode)", "py", "py_cuabi",
              {"CUABI_PY_BACKEND": "cffi"}),
    Contender("cuabi_ctypes", "cuabi (ctypes)", "py", "py_cuabi", {"CUABI_PY_BACKEND": "ctypes"}),
    Contender("cuda_bindings", "cuda.bindings", "py", "py_cuda_bindings", anchor=True),
    Contender("cuda_core", "cuda.core", "py", "py_cuda_core", anchor=True),
    Contender("cupy", "CuPy", "py", "py_cupy", anchor=True),
    Contender("ctypes", "ctypes on libcuda", "py", "py_ctypes", anchor=True),
    Contender("torch", "PyTorch", "py", "py_torch", anchor=True),
]

CONTENDER = {c.name: c for c in CONTENDERS}
FLOOR = "c_direct"

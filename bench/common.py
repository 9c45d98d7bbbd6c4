# SPDX-License-Identifier: Apache-2.0
"""Small helpers shared by the Python side of bench/ (stdlib only, cheap to import:
bench/startup.py imports this before it starts its clock)."""

import importlib

KIB = 1024
MIB = 1024 * 1024
SMALL = 4 * KIB        # the small copies
BIG = 256 * MIB        # the large copies
ALLOC = 1 * MIB        # the stream-ordered allocation
GRAPH_NODES = 100
KERNELS = ("empty_0", "empty_3", "empty_16")   # the entries of bench/kernels.ptx


class Op:
    """One timed operation of a contender: the worker calls call(*args) in a loop.

    `how` says in a few words what the contender calls, for the report.  A
    compound operation (create + destroy) is a small function of the
    contender's module with its names bound as default arguments, so the loop
    pays one Python call on top of the library's own calls."""

    __slots__ = ("call", "args", "how")

    def __init__(self, call, args=(), how=""):
        self.call = call
        self.args = tuple(args)
        self.how = how


def rss_kb():
    """Resident set size of this process in KiB, from /proc (-1 where absent)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def contender_module(module_name):
    return importlib.import_module("contenders." + module_name)


def one_line(exc):
    """An exception as one line of text for the protocol and the report."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())[:400]

# SPDX-License-Identifier: Apache-2.0
"""Launch geometry and launch attributes: :class:`LaunchConfig`.

Kept apart from ``cuabi._launch`` so that the kernel's occupancy queries for
clusters (``cuabi._kernel``), which take a config as the driver's
``CUlaunchConfig``, can use it without importing the launch path.
"""

from __future__ import annotations

import struct
from typing import Any, Optional, Tuple

from ._backend import backend
from ._constants import (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                         CU_LAUNCH_ATTRIBUTE_PRIORITY,
                         CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
from ._structs import FORMATS

# the driver structs of cuLaunchKernelEx (fields: cuabi._structs.FIELDS)
_LAUNCH_CONFIG = struct.Struct(FORMATS["CUlaunchConfig"])
_LAUNCH_ATTR = struct.Struct(FORMATS["CUlaunchAttribute"])
_CLUSTER_DIM = struct.Struct(FORMATS["CUlaunchAttributeValue.clusterDim"])
_INT_VALUE = struct.Struct("=i")  # the int members of CUlaunchAttributeValue

GRID_UNITS = ("blocks", "clusters")


def _dim3(v: Any, what: str) -> Tuple[int, int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        t = (v, 1, 1)
    elif isinstance(v, (tuple, list)) and 1 <= len(v) <= 3:
        t = tuple(v) + (1,) * (3 - len(v))
    else:
        raise TypeError("%s must be an int or a tuple of 1-3 ints, got %r" % (what, v))
    for x in t:
        if not isinstance(x, int) or isinstance(x, bool) or not 1 <= x <= 0xFFFFFFFF:
            raise ValueError("%s dimensions must be ints from 1 to 2**32-1, got %r" % (what, v))
    return t  # type: ignore[return-value]


def _grid_in_blocks(grid: Tuple[int, int, int], cluster: Optional[Tuple[int, int, int]],
                    grid_unit: Optional[str]) -> Tuple[int, int, int]:
    """The grid the driver gets (always counted in blocks), from the grid as given."""
    if grid_unit is not None and grid_unit not in GRID_UNITS:
        raise ValueError("grid_unit must be 'blocks' or 'clusters', got %r" % (grid_unit,))
    if cluster is None:
        if grid_unit == "clusters":
            raise ValueError("grid_unit='clusters' needs cluster= (the cluster's size in blocks)")
        return grid
    if grid_unit is None:
        # cuda.core counts a cluster launch's grid in clusters, the driver in
        # blocks: a guess either way launches a different number of blocks
        # without an error, so the caller says which.
        raise ValueError(
            "with cluster=%r, say how grid=%r is counted: grid_unit='clusters' (cuda.core's "
            "LaunchConfig: the launch has grid x cluster blocks) or grid_unit='blocks' (the "
            "driver's cuLaunchKernelEx: grid is the total, a multiple of cluster)" % (cluster, grid))
    if grid_unit == "clusters":
        total = tuple(g * c for g, c in zip(grid, cluster))
        if any(t > 0xFFFFFFFF for t in total):
            raise ValueError("grid %r clusters of %r blocks is more than 2**32-1 blocks in a dimension"
                             % (grid, cluster))
        return total  # type: ignore[return-value]
    for g, c in zip(grid, cluster):
        if g % c:
            raise ValueError("grid %r (in blocks) is not a multiple of cluster %r" % (grid, cluster))
    return grid


class LaunchConfig:
    """Launch geometry and launch attributes.

    ``LaunchConfig(grid, block, shmem=0, cluster=None, cooperative=False,
    grid_unit=None, priority=None, programmatic=False)``

    * ``grid``, ``block``, ``cluster``: ints or 1-3 tuples.  ``shmem``: the
      dynamic shared memory per block, in bytes.
    * With ``cluster``, ``grid_unit`` is required: ``"clusters"`` counts
      ``grid`` in clusters (as cuda.core does), ``"blocks"`` in blocks (as the
      driver does).  The ``grid`` attribute is always in blocks;
      ``grid_clusters`` is the grid in clusters.
    * ``cooperative``: a cooperative launch (all blocks resident at once).
    * ``priority``: the launch's priority (a stream priority value; lower is
      more urgent), overriding the stream's.
    * ``programmatic``: programmatic dependent launch (PDL): this kernel may
      start before the previous kernel in the stream has finished, once that
      kernel triggers it (``griddepcontrol.launch_dependents``); this kernel
      waits for the data with ``griddepcontrol.wait``.

    A config is immutable; a launch rewrites its packet's header only when it
    gets a different config object, so reusing one config is cheapest.
    ``_hdr`` is the packet header's values, ``_ex`` whether the launch needs
    ``cuLaunchKernelEx`` (both read by the compiled launch too), ``_attrs``
    the packed ``CUlaunchAttribute`` array for it.
    """

    __slots__ = ("grid", "block", "shmem", "cluster", "cooperative", "priority", "programmatic",
                 "_hdr", "_ex", "_attrs")

    def __init__(self, grid: Any = 1, block: Any = 1, shmem: int = 0, cluster: Any = None,
                 cooperative: bool = False, grid_unit: Optional[str] = None,
                 priority: Optional[int] = None, programmatic: bool = False) -> None:
        put = object.__setattr__
        grid = _dim3(grid, "grid")
        block = _dim3(block, "block")
        if not isinstance(shmem, int) or isinstance(shmem, bool) or not 0 <= shmem <= 0xFFFFFFFF:
            raise ValueError("shmem must be a byte count from 0 to 2**32-1, got %r" % (shmem,))
        cluster = None if cluster is None else _dim3(cluster, "cluster")
        grid = _grid_in_blocks(grid, cluster, grid_unit)
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)
                                     or not -2**31 <= priority < 2**31):
            raise ValueError("priority must be an int (a stream priority) or None, got %r" % (priority,))
        attrs = bytearray()
        if cluster is not None:
            attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, b"", _CLUSTER_DIM.pack(*cluster))
        if cooperative:
            attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, b"", _INT_VALUE.pack(1))
        if priority is not None:
            attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_PRIORITY, b"", _INT_VALUE.pack(priority))
        if programmatic:
            attrs += _LAUNCH_ATTR.pack(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, b"",
                                       _INT_VALUE.pack(1))
        put(self, "grid", grid)
        put(self, "block", block)
        put(self, "shmem", shmem)
        put(self, "cluster", cluster)
        put(self, "cooperative", bool(cooperative))
        put(self, "priority", priority)
        put(self, "programmatic", bool(programmatic))
        put(self, "_hdr", grid + block + (shmem, 0))
        put(self, "_ex", bool(attrs))
        put(self, "_attrs", bytes(attrs))

    @property
    def grid_clusters(self) -> Optional[Tuple[int, int, int]]:
        """The grid counted in clusters (None without a cluster)."""
        c = self.cluster
        if c is None:
            return None
        return tuple(g // d for g, d in zip(self.grid, c))  # type: ignore[return-value]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("LaunchConfig is immutable; make a new one")

    def __copy__(self) -> "LaunchConfig":
        return self  # immutable: the object itself is its copy

    def __deepcopy__(self, memo: Any) -> "LaunchConfig":
        return self

    def __reduce__(self) -> Any:
        unit = None if self.cluster is None else "blocks"
        return (LaunchConfig, (self.grid, self.block, self.shmem, self.cluster, self.cooperative, unit,
                               self.priority, self.programmatic))

    def __repr__(self) -> str:
        extra = ""
        if self.cluster:
            extra += ", cluster=%r, grid_unit='blocks'" % (self.cluster,)
        if self.cooperative:
            extra += ", cooperative=True"
        if self.priority is not None:
            extra += ", priority=%d" % self.priority
        if self.programmatic:
            extra += ", programmatic=True"
        return "LaunchConfig(grid=%r, block=%r, shmem=%d%s)" % (self.grid, self.block, self.shmem, extra)


def pack_launch_config(config: LaunchConfig, stream: int) -> Tuple[bytearray, Any]:
    """``config`` as the driver's ``CUlaunchConfig`` for ``stream`` (a
    ``CUstream`` handle), and what must stay alive while the driver reads it."""
    attrs = config._attrs
    n_attrs = len(attrs) // _LAUNCH_ATTR.size
    if n_attrs:
        attrs_addr, keep = backend().buffer_address(bytearray(attrs))
    else:
        attrs_addr, keep = 0, None
    cfg = bytearray(_LAUNCH_CONFIG.pack(*config.grid, *config.block, config.shmem, stream, attrs_addr, n_attrs))
    return cfg, keep

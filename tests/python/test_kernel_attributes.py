# SPDX-License-Identifier: Apache-2.0
"""Kernels: named attributes read and set, occupancy queries, from_handle.

The exact numbers of the tests marked ``fake`` are those of the fake driver's
occupancy model (tests/fake/module.c: 4 multiprocessors of 2048 threads, 32
blocks, 64 Ki registers and 228 KiB of shared memory; 16 registers a thread);
the others hold on any driver.
"""

import pytest

from conftest import needs, needs_clusters

import cuabi
from cuabi.errors import CUDAError

def test_attributes_by_name_match_single_reads(module):
    """attributes() names every attribute the driver answers, with attribute()'s values."""
    k = module.get_kernel("saxpy", "fppi")
    attrs = k.attributes()
    assert {"max_threads_per_block", "num_regs", "max_dynamic_shared_size_bytes",
            "shared_size_bytes", "ptx_version"} <= set(attrs)
    for name in ("max_threads_per_block", "num_regs", "max_dynamic_shared_size_bytes"):
        assert attrs[name] == k.attribute(name)
    assert attrs["max_threads_per_block"] == k.max_threads_per_block > 0


def test_unknown_attribute_lists_the_known_ones(module):
    """An unknown attribute name is a ValueError that lists the names there are."""
    k = module.get_kernel("saxpy", "fppi")
    with pytest.raises(ValueError, match="num_regs"):
        k.attribute("no_such_attribute")
    with pytest.raises(TypeError):
        k.set_attribute(1.5, 0)


def test_more_than_48k_dynamic_shared_memory_after_raising_the_limit(module):
    """A 64 KiB dynamic shared memory launch fails until max_dynamic_shared_size_bytes allows it."""
    k = module.get_kernel("empty", "")
    cfg = cuabi.LaunchConfig(1, 32, shmem=64 * 1024)
    with pytest.raises(CUDAError):
        cuabi.launch(None, cfg, k)
    k.max_dynamic_shared_size_bytes = 64 * 1024
    assert k.max_dynamic_shared_size_bytes == 64 * 1024
    assert k.attribute("max_dynamic_shared_size_bytes") == 64 * 1024
    cuabi.launch(None, cfg, k)
    cuabi.Stream.legacy().sync()
    k.set_attribute("max_dynamic_shared_size_bytes", 0)
    assert k.max_dynamic_shared_size_bytes == 0


def test_dynamic_shared_memory_past_the_device_limit_says_the_limit(module):
    """Asking for more than the device's opt-in limit is a ValueError naming that limit."""
    k = module.get_kernel("empty", "")
    optin = cuabi.Device(0).attribute("max_shared_memory_per_block_optin")
    with pytest.raises(ValueError, match="at most %d bytes" % optin):
        k.max_dynamic_shared_size_bytes = optin + 1024
    with pytest.raises(ValueError, match="32-bit int"):
        k.set_attribute("max_dynamic_shared_size_bytes", 2**40)


def test_occupancy_queries_are_consistent(module):
    """More shared memory never fits more blocks; the suggested block size is within limits."""
    needs("cuOccupancyMaxActiveBlocksPerMultiprocessor")
    k = module.get_kernel("saxpy", "fppi")
    plain = k.max_active_blocks_per_multiprocessor(128)
    assert plain > 0
    assert k.max_active_blocks_per_multiprocessor(128, 32 * 1024) <= plain
    grid, block = k.max_potential_block_size()
    assert 0 < block <= k.max_threads_per_block and grid > 0
    assert k.max_potential_block_size(block_size_limit=64).block_size <= 64
    per_block = k.available_dynamic_shared_memory_per_block(2, 128)
    assert 0 < per_block <= cuabi.Device(0).attribute("max_shared_memory_per_multiprocessor")


def test_block_size_from_a_function_matches_a_constant(module):
    """A shared-memory function that returns a constant gives the occupancy the constant gives."""
    k = module.get_kernel("saxpy", "fppi")
    asked = []

    def smem(block_size):
        asked.append(block_size)
        return 4096

    by_function = k.max_potential_block_size(smem)
    by_constant = k.max_potential_block_size(4096)
    assert asked and all(b % 32 == 0 for b in asked) and max(asked) == k.max_threads_per_block

    def threads(suggestion):
        return suggestion.block_size * k.max_active_blocks_per_multiprocessor(suggestion.block_size, 4096)

    assert threads(by_function) == threads(by_constant)


@pytest.mark.fake
def test_occupancy_numbers_of_the_fake_model(module, fake):
    """The queries return what the fake's occupancy model computes (threads, registers, shared memory)."""
    k = module.get_kernel("saxpy", "fppi")
    assert k.max_active_blocks_per_multiprocessor(256) == 8  # 2048 threads / 256
    assert k.max_active_blocks_per_multiprocessor(32) == 32  # the block limit
    assert k.max_active_blocks_per_multiprocessor(100) == 16  # 4 warps a block
    assert k.max_active_blocks_per_multiprocessor(128, 40 * 1024) == 5  # 228 KiB / 40 KiB
    assert k.max_active_blocks_per_multiprocessor(128, 50 * 1024) == 0  # above the 48 KiB limit
    assert k.max_potential_block_size() == (8, 1024)
    assert k.max_potential_block_size(block_size_limit=100) == (128, 64)  # 32 x 64 beats 21 x 96
    # blocks above 256 threads ask for more than the 48 KiB limit: 256 threads, 8 blocks a multiprocessor
    assert k.max_potential_block_size(lambda bs: 0 if bs <= 256 else 60 * 1024) == (32, 256)
    assert k.available_dynamic_shared_memory_per_block(2, 256) == 228 * 1024 // 2
    assert k.available_dynamic_shared_memory_per_block(9, 256) == 0  # 9 x 256 threads do not fit


def test_cluster_occupancy(module):
    """The cluster queries take a LaunchConfig; allowing non-portable sizes raises the largest cluster."""
    needs_clusters("cuOccupancyMaxPotentialClusterSize")
    k = module.get_kernel("saxpy", "fppi")
    cfg = cuabi.LaunchConfig(grid=4, block=128, cluster=2, grid_unit="clusters")
    assert k.max_potential_cluster_size(cfg) == 8
    assert k.max_active_clusters(cfg) > 0
    assert k.max_active_clusters(cfg, stream=cuabi.Stream()) == k.max_active_clusters(cfg)
    k.set_attribute("non_portable_cluster_size_allowed", 1)
    assert k.max_potential_cluster_size(cfg) == 16
    with pytest.raises(TypeError, match="LaunchConfig"):
        k.max_active_clusters((4, 128))


@pytest.mark.fake
def test_active_clusters_of_the_fake_model(module, fake):
    """Active clusters are the device's resident blocks over the cluster size; no cluster is refused."""
    k = module.get_kernel("saxpy", "fppi")
    cfg = cuabi.LaunchConfig(grid=4, block=128, cluster=2, grid_unit="clusters")
    assert k.max_active_clusters(cfg) == 4 * 16 // 2
    with pytest.raises(CUDAError, match="CLUSTER_SIZE"):
        k.max_active_clusters(cuabi.LaunchConfig(grid=4, block=128))


def test_from_handle_wraps_a_foreign_function(module):
    """Kernel.from_handle wraps a CUfunction: named by the driver, launchable, closes nothing."""
    import struct

    k = module.get_kernel("saxpy", "fppi")
    foreign = cuabi.Kernel.from_handle(k.handle, params="fppi")
    assert foreign.handle == k.handle and foreign.name == "saxpy"
    assert cuabi.Kernel.from_handle(k.handle, name="mine").name == "mine"
    x = cuabi.DeviceBuffer(16)
    y = cuabi.DeviceBuffer(16)
    x.copy_from(struct.pack("4f", 1, 2, 3, 4))
    y.copy_from(struct.pack("4f", 1, 1, 1, 1))
    cuabi.launch(None, cuabi.LaunchConfig(1, 32), foreign, 2.0, x, y, 4)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4f", y.to_bytes()) == (3, 5, 7, 9)
    assert foreign.attribute("num_regs") == k.num_regs
    assert foreign.max_active_blocks_per_multiprocessor(128) == k.max_active_blocks_per_multiprocessor(128)
    assert not k.closed


@pytest.mark.parametrize("bad, error", [(0, ValueError), ("0x1234", TypeError), (1.0, TypeError),
                                        (-1, ValueError), (True, TypeError)])
def test_from_handle_refuses_what_is_no_handle(ctx, bad, error):
    """from_handle refuses NULL, strings, floats, bools and negative numbers before calling the driver."""
    with pytest.raises(error):
        cuabi.Kernel.from_handle(bad)


@pytest.mark.fake
def test_from_handle_checks_the_handle_with_the_driver(ctx, fake):
    """A handle the driver does not know is refused when from_handle asks for its name."""
    with pytest.raises(CUDAError, match="INVALID_HANDLE"):
        cuabi.Kernel.from_handle(0x1234)

# SPDX-License-Identifier: Apache-2.0
"""Modules, libraries, kernels, LaunchConfig and launch: allocate, copy, launch, copy back."""

import os
import struct

import pytest

from conftest import needs, needs_clusters

import cuabi
from cuabi.errors import ClosedError, CUDAError

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
with open(os.path.join(DATA, "kernels.ptx")) as _f:
    PTX = _f.read()


def _saxpy_check(kernel, launcher, n=1000):
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *range(n)))
    y.copy_from(struct.pack("%df" % n, *([1.0] * n)))
    s = cuabi.Stream()
    launcher(s, cuabi.LaunchConfig(grid=(n + 127) // 128, block=128), kernel, 2.0, x, y, n)
    s.sync()
    out = struct.unpack("%df" % n, y.to_bytes())
    assert out == tuple(2.0 * i + 1.0 for i in range(n))


def test_end_to_end_saxpy_from_ptx(module):
    """SAXPY from PTX with a signature computes y = a*x + y."""
    k = module.get_kernel("saxpy", "f p p i")
    assert k.params is not None and k.name == "saxpy" and k.handle
    _saxpy_check(k, cuabi.launch)


def test_param_spellings(module):
    """Letters, comma-separated names and a list of names give the same launch."""
    for spec in ("fppi", "float32, ptr, ptr, int32", ["float", "pointer", "pointer", "int"]):
        k = module.get_kernel("saxpy", spec)
        _saxpy_check(k, cuabi.launch, n=64)


def test_inferred_parameters(module):
    """Without a signature, a kernel's parameters come from the driver's cuFuncGetParamInfo."""
    needs("cuFuncGetParamInfo")
    k = module.get_kernel("saxpy")
    assert k.param_info() == [(0, 4), (8, 8), (16, 8), (24, 4)]
    assert module.get_kernel("store_mixed").param_info() == [(0, 1), (8, 8), (16, 2), (20, 4), (24, 8)]
    assert module.get_kernel("empty").param_info() == []
    _saxpy_check(k, cuabi.launch, n=32)
    with pytest.raises(TypeError, match="takes 4 arguments, 3 given"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), module.get_kernel("saxpy"), 1.0, 0, 0)


def test_exact_scalar_arguments(module):
    """Scalars of each width arrive in the kernel with their exact bits."""
    k = module.get_kernel("store_mixed", "B d H i p")
    out = cuabi.DeviceBuffer(32)
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, 200, -2.5, 65000, -7, out)
    cuabi.Stream.legacy().sync()
    a, b, c, dd = struct.unpack("4Q", out.to_bytes())
    assert a == 200 and b == struct.unpack("Q", struct.pack("d", -2.5))[0]
    assert c == 65000 and dd == (-7) & 0xFFFFFFFFFFFFFFFF


def test_launch_geometry(module):
    """The kernel sees the grid, block and shared memory of the config."""
    k = module.get_kernel("launch_info", "p")
    out = cuabi.DeviceBuffer(28)
    cfg = cuabi.LaunchConfig(grid=(3, 2, 1), block=(32, 2), shmem=256)
    cuabi.launch(cuabi.Stream.legacy(), cfg, k, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("7I", out.to_bytes()) == (3, 2, 1, 32, 2, 1, 256)
    assert "grid=(3, 2, 1)" in repr(cfg)


def test_cluster_launch(module):
    """A cluster config launches through cuLaunchKernelEx with its geometry."""
    needs_clusters("cuLaunchKernelEx")
    k = module.get_kernel("launch_info", "p")
    out = cuabi.DeviceBuffer(28)
    cuabi.launch(None, cuabi.LaunchConfig(grid=4, block=64, cluster=2, grid_unit="blocks"), k, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("7I", out.to_bytes())[:4] == (4, 1, 1, 64)
    cuabi.launch(None, cuabi.LaunchConfig(grid=4, block=64, cluster=2, grid_unit="clusters"), k, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("7I", out.to_bytes())[:4] == (8, 1, 1, 64)


def test_pointer_argument_kinds(module):
    """Pointer arguments take buffers, ints, arrays, __cuda_array_interface__ and data_ptr() objects."""
    k = module.get_kernel("launch_info", "p")
    buf = cuabi.DeviceBuffer(28)

    class CAI:
        __cuda_array_interface__ = {"data": (buf.ptr, False), "shape": (7,), "typestr": "<u4",
                                    "version": 3}

    class Torchish:
        def data_ptr(self):
            return buf.ptr

    cfg = cuabi.LaunchConfig(1, 1)
    for arg in (buf, buf.ptr, buf.view("u4"), CAI(), Torchish()):
        buf.fill(0)
        cuabi.launch(None, cfg, k, arg)
        cuabi.Stream.legacy().sync()
        assert struct.unpack("7I", buf.to_bytes())[0] == 1


def test_pointer_argument_refuses_a_str(module):
    """A str is no pointer argument."""
    k = module.get_kernel("launch_info", "p")
    with pytest.raises(TypeError, match="pointer kernel argument"):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, "not memory")


def test_launch_argument_errors(module):
    """Wrong count, bad values, a non-config, a non-kernel or a non-stream are TypeErrors."""
    k = module.get_kernel("saxpy", "fppi")
    cfg = cuabi.LaunchConfig(1, 32)
    b = cuabi.DeviceBuffer(128)
    with pytest.raises(TypeError, match="takes 4 arguments, 3 given"):
        cuabi.launch(None, cfg, k, 1.0, b, b)
    with pytest.raises(TypeError, match="bad argument"):
        cuabi.launch(None, cfg, k, "a", b, b, 4)
    with pytest.raises(TypeError, match="bad argument"):
        cuabi.launch(None, cfg, k, 1.0, b, b, 1 << 40)
    with pytest.raises(TypeError):
        cuabi.launch(None, (1, 1), k, 1.0, b, b, 4)
    with pytest.raises(TypeError):
        cuabi.launch(None, cfg, "saxpy", 1.0, b, b, 4)
    with pytest.raises(TypeError):
        cuabi.launch("stream", cfg, k, 1.0, b, b, 4)


def test_launch_after_errors_with_alternating_configs(module):
    """After refused launches, a kernel launches with configs alternating."""
    k = module.get_kernel("saxpy", "fppi")
    cfg, other = cuabi.LaunchConfig(1, 32), cuabi.LaunchConfig(1, 4)
    b = cuabi.DeviceBuffer(128)
    with pytest.raises(TypeError):
        cuabi.launch(None, cfg, k, 1.0, b, b)
    for c in (cfg, other, cfg):
        cuabi.launch(None, c, k, 1.0, b, b, 4)


@pytest.mark.parametrize("bad", [dict(grid=0), dict(block=(1, 2, 3, 4)), dict(grid="1"), dict(shmem=-1),
                                 dict(grid=3, cluster=2, grid_unit="blocks"), dict(block=1.5),
                                 dict(grid=4, cluster=2), dict(grid=4, grid_unit="clusters"),
                                 dict(grid=4, cluster=2, grid_unit="warps"), dict(priority=1.0),
                                 dict(grid=2**31, cluster=2, grid_unit="clusters")])
def test_launch_config_validation(bad):
    """LaunchConfig refuses bad dimensions, shmem, units (a cluster without grid_unit) and priorities."""
    with pytest.raises((TypeError, ValueError)):
        cuabi.LaunchConfig(**bad)


def test_launch_config_normalises_dimensions():
    """Grid, block and cluster become 3-tuples; the repr says cooperative."""
    cfg = cuabi.LaunchConfig(grid=[4, 2], block=64, cluster=(2, 1), cooperative=True, grid_unit="blocks")
    assert cfg.grid == (4, 2, 1) and cfg.block == (64, 1, 1) and cfg.cluster == (2, 1, 1)
    assert "cooperative" in repr(cfg)


def test_launch_config_is_immutable():
    """Setting an attribute of a LaunchConfig raises AttributeError."""
    cfg = cuabi.LaunchConfig(1, 1)
    with pytest.raises(AttributeError):
        cfg.grid = (1, 1, 1)


def test_parse_params():
    """Letters parse to struct codes; (size, alignment) to a struct parameter."""
    from cuabi._kernel_args import parse_params

    assert [p[0] for p in parse_params("pfid")] == ["Q", "f", "i", "d"]
    assert parse_params([(16, 8)])[0] == ("16s", 16, 8, False)


@pytest.mark.parametrize("bad", ["x", ["nope"], [(3, 3)], [(0, 1)], 5])
def test_parse_params_refuses(bad):
    """Unknown letters and names, bad struct sizes or alignments, and non-sequences are refused."""
    from cuabi._kernel_args import parse_params

    with pytest.raises((TypeError, ValueError)):
        parse_params(bad)


def test_struct_parameter_by_value(module):
    """Struct parameters given as bytes of their size arrive as those bytes."""
    # store_mixed's first two parameters as raw bytes: a 1-byte and an 8-byte "struct"
    k = module.get_kernel("store_mixed", [(1, 1), (8, 8), "H", "i", "p"])
    out = cuabi.DeviceBuffer(32)
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k, b"\x05", struct.pack("d", 1.0), 1, 2, out)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("4Q", out.to_bytes())[:3] == (5, struct.unpack("Q", struct.pack("d", 1.0))[0], 1)


def test_module_from_file(ctx, tmp_path):
    """Module.from_file() loads a .ptx file and its kernels."""
    p = tmp_path / "k.ptx"
    p.write_text(PTX)
    m = cuabi.Module.from_file(p)
    assert m.get_kernel("empty")
    m.close()


def test_missing_kernel_raises_not_found(module):
    """get_kernel() of a name the module lacks raises CUDA_ERROR_NOT_FOUND; an empty name TypeError."""
    with pytest.raises(CUDAError) as ei:
        module.get_kernel("no_such_kernel")
    assert ei.value.name == "CUDA_ERROR_NOT_FOUND"
    with pytest.raises(TypeError):
        module.get_kernel("")


def test_bad_ptx_raises(ctx):
    """PTX the JIT rejects raises CUDAError."""
    with pytest.raises(CUDAError):
        cuabi.Module.from_ptx(".version 7.0\n.target sm_75\n.address_size 64\n this is not ptx")


def test_module_image_types(ctx):
    """A cubin must be bytes, an image must not be empty, and must be bytes or str."""
    with pytest.raises(TypeError):
        cuabi.Module.from_cubin("text is not a cubin")
    with pytest.raises(ValueError):
        cuabi.Module(b"")
    with pytest.raises(TypeError):
        cuabi.Module(42)


def test_get_global(ctx):
    """get_global() gives a __device__ variable's address and size."""
    src = PTX + "\n.visible .global .align 4 .u32 counter[4];\n"
    try:
        m = cuabi.Module.from_ptx(src)
    except CUDAError:
        pytest.skip("driver does not accept module globals in this form")
    ptr, size = m.get_global("counter")
    assert ptr and size == 16
    m.close()


def test_unloaded_module_closes_kernels(ctx):
    """Unloading a module closes its kernels: launching one raises ClosedError."""
    m = cuabi.Module.from_ptx(PTX)
    k = m.get_kernel("empty", "")
    cuabi.launch(None, cuabi.LaunchConfig(1, 1), k)
    m.close()
    assert k.closed
    with pytest.raises(ClosedError):
        cuabi.launch(None, cuabi.LaunchConfig(1, 1), k)
    with pytest.raises(ClosedError):
        k.handle  # noqa: B018


def test_kernel_attributes(module):
    """A kernel's attributes by property, by value; an unknown name is a ValueError."""
    k = module.get_kernel("saxpy", "fppi")
    assert k.max_threads_per_block > 0
    assert k.num_regs >= 0
    assert k.attribute(0) == k.max_threads_per_block
    with pytest.raises(ValueError):
        k.attribute("no_such_attribute")


def test_library_api(ctx):
    """A Library loads, hands out launchable kernels and closes them when unloaded."""
    needs("cuLibraryLoadData")
    lib = cuabi.Library(PTX)
    k = lib.get_kernel("saxpy", "fppi")
    _saxpy_check(k, cuabi.launch, n=100)
    with pytest.raises(CUDAError):
        lib.get_kernel("missing")
    lib.close()
    assert k.closed


def test_concurrent_launches_from_threads(module, fake):
    """Four threads launching one kernel make every launch."""
    import threading

    k = module.get_kernel("empty", "")
    cfg = cuabi.LaunchConfig(1, 1)
    before = fake.launch_count()
    ctxh = module._ctx.handle
    errs = []

    def work():
        try:
            cuabi.driver.cuCtxSetCurrent(ctxh)
            for _ in range(500):
                cuabi.launch(None, cfg, k)
        except Exception as e:  # pragma: no cover
            errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errs == [] and fake.launch_count() - before == 2000


@pytest.mark.fake
def test_launch_attributes_reach_the_driver(module, fake):
    """Priority, PDL, cooperative and cluster configs pass their attributes to cuLaunchKernelEx."""
    k = module.get_kernel("empty", "")
    cuabi.launch(None, cuabi.LaunchConfig(2, 32), k)
    assert fake.last_launch()["extended"] == 0  # no attributes: the packed launch
    cuabi.launch(None, cuabi.LaunchConfig(2, 32, priority=-3, programmatic=True), k)
    seen = fake.last_launch()
    assert seen["extended"] == 1 and seen["priority"] == -3 and seen["programmatic"] == 1
    assert seen["cooperative"] == 0 and seen["cluster"] == (1, 1, 1)
    cuabi.launch(None, cuabi.LaunchConfig((3, 2), 32, cluster=(2, 2), grid_unit="clusters", cooperative=True), k)
    seen = fake.last_launch()
    assert seen["grid"] == (6, 4, 1) and seen["cluster"] == (2, 2, 1) and seen["cooperative"] == 1
    assert seen["priority"] is None and seen["programmatic"] == 0


def test_cluster_grid_units(module):
    """grid_unit='clusters' multiplies the grid by the cluster; 'blocks' keeps it; grid_clusters divides."""
    by_clusters = cuabi.LaunchConfig(grid=(3, 2), block=64, cluster=(2, 1), grid_unit="clusters")
    by_blocks = cuabi.LaunchConfig(grid=(6, 2), block=64, cluster=(2, 1), grid_unit="blocks")
    assert by_clusters.grid == by_blocks.grid == (6, 2, 1)
    assert by_clusters.grid_clusters == by_blocks.grid_clusters == (3, 2, 1)
    assert by_clusters._hdr == by_blocks._hdr
    assert cuabi.LaunchConfig(4).grid_clusters is None
    with pytest.raises(ValueError, match="grid_unit='clusters'"):
        cuabi.LaunchConfig(grid=4, cluster=2)


def test_launch_config_with_attributes_pickles_to_an_equal_config():
    """A config with cluster, priority and PDL pickles to one with the same geometry and attributes."""
    import pickle

    cfg = cuabi.LaunchConfig(grid=2, block=64, cluster=2, grid_unit="clusters", priority=-1, programmatic=True)
    back = pickle.loads(pickle.dumps(cfg))
    assert (back.grid, back.cluster, back.priority, back.programmatic) == ((4, 1, 1), (2, 1, 1), -1, True)
    assert back._attrs == cfg._attrs and back._hdr == cfg._hdr
    assert "priority=-1" in repr(cfg) and "programmatic=True" in repr(cfg)


def test_cooperative_launch_too_large_is_refused(module):
    """A cooperative launch with more blocks than can be resident at once is refused by the driver."""
    needs("cuLaunchKernelEx")
    k = module.get_kernel("empty", "")
    fits = k.max_active_blocks_per_multiprocessor(1024) * cuabi.Device(0).multiprocessor_count
    cuabi.launch(None, cuabi.LaunchConfig(fits, 1024, cooperative=True), k)
    cuabi.Stream.legacy().sync()
    with pytest.raises(CUDAError, match="COOPERATIVE_LAUNCH_TOO_LARGE"):
        cuabi.launch(None, cuabi.LaunchConfig(fits + 1, 1024, cooperative=True), k)

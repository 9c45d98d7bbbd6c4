# SPDX-License-Identifier: Apache-2.0
"""cuabi.Linker over cuabi's nvJitLink family: inputs of every kind, options, the
architecture, logs in errors; on the fake nvJitLink (tests/fake/family.c), and on
the machine's own NVRTC and nvJitLink when it has them (no GPU needed to link)."""

import pytest

import cuabi
from conftest import _fake_family, run_json

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''


def _fake():
    path = _fake_family("nvjitlink")
    if path is None:
        pytest.fail("libfakenvjitlink.so not built: cmake --build build")
    return path


def _have_real():
    try:
        cuabi.nvrtc_version()
        cuabi.nvjitlink_version()
        return True
    except (cuabi.NVRTCError, cuabi.NVJitLinkError):
        return False


def test_inputs_options_and_arch_reach_nvjitlink(tmp_path):
    """Every input kind, -arch from the inputs, -lto and the options reach nvJitLink; the cubin comes back."""
    ptx_file = tmp_path / "extra.ptx"
    ptx_file.write_bytes(b".version 8.0\n")
    res = run_json("""
        import json
        import cuabi
        lto = cuabi.ObjectCode(b"fake LTO IR\\n.version 8.0\\n", "ltoir", "", {}, "sm_90")
        ln = cuabi.Linker(lto, options=["-O3"])
        ln.add(b"// PTX\\n", "ptx", name="k.ptx").add(bytearray(b"CUBIN"), "cubin").add(b"FAT", kind="fatbin")
        ln.add_file(%r)
        out = ln.link()
        print(json.dumps([out.code.decode("latin-1"), out.kind, out.log, out.arch, ln.link_options(),
                          cuabi.nvjitlink_version()]))
    """ % str(ptx_file), env={"CUABI_LIBNVJITLINK": _fake()})
    code, kind, log, arch, options, version = res
    # the fake's "cubin": the PTX of the LTO IR and PTX inputs, then what it was given
    assert code.startswith(".version 8.0\n// PTX\n// fake nvJitLink: option=-arch=sm_90;option=-lto;option=-O3;")
    assert (";input=3:input0.ltoir:25;input=2:k.ptx:7;input=1:input2.cubin:5;input=4:input3.fatbin:3;file=2:%s\n"
            % ptx_file) in code
    assert (kind, arch, log) == ("cubin", "sm_90", "fake nvJitLink: info: linked")
    assert options == ["-arch=sm_90", "-lto", "-O3"] and version == [13, 5]


@pytest.mark.fake
def test_ltoir_links_loads_and_launches_on_the_fakes():
    """On the fake NVRTC, nvJitLink and driver, LTO IR from Program links, loads and runs SAXPY."""
    nvrtc = _fake_family("nvrtc")
    res = run_json("""
        import json, struct
        import cuabi
        lto = cuabi.Program(%r, name="saxpy.cu").compile(target="ltoir", arch="sm_80")
        k = cuabi.Linker(lto).link().load().get_kernel("saxpy", "fppi")
        n = 300
        x, y = cuabi.DeviceBuffer(4 * n), cuabi.DeviceBuffer(4 * n)
        x.copy_from(struct.pack("%%df" %% n, *range(n)))
        y.fill(0x3F800000, width=4)
        cuabi.launch(None, cuabi.LaunchConfig((n + 127) // 128, 128), k, 2.0, x, y, n)
        cuabi.Stream.legacy().sync()
        print(json.dumps(struct.unpack("%%df" %% n, y.to_bytes())))
    """ % SAXPY, env={"CUABI_LIBNVJITLINK": _fake(), "CUABI_LIBNVRTC": nvrtc})
    assert res == [2.0 * i + 1.0 for i in range(300)]


def test_failed_link_carries_the_logs():
    """A refused link raises NVJitLinkError with its code, failing call, error log and info log."""
    res = run_json("""
        import json
        import cuabi
        try:
            cuabi.Linker(arch="sm_80").add(b"#error in here", "ptx", name="bad.ptx").link()
        except cuabi.NVJitLinkError as e:
            print(json.dumps([str(e), e.code, e.name, e.function, e.log]))
    """, env={"CUABI_LIBNVJITLINK": _fake()})
    msg, code, name, function, log = res
    assert (code, name, function) == (4, "NVJITLINK_ERROR_PTX_COMPILE", "nvJitLinkComplete")
    assert msg.startswith("linking 1 input(s) for sm_80 failed in nvJitLinkComplete: NVJITLINK_ERROR_PTX_COMPILE")
    assert log == "fake nvJitLink: error: bad.ptx says #error\nfake nvJitLink: info: linked"
    assert log in msg


def test_missing_nvjitlink_says_where_it_looked():
    """Without nvJitLink, link() raises NVJitLinkError with libcuabi's report."""
    res = run_json("""
        import json
        import cuabi
        try:
            cuabi.Linker(arch="sm_80").add(b"x", "ptx").link()
        except cuabi.NVJitLinkError as e:
            print(json.dumps([str(e), e.code]))
    """, env={"CUABI_LIBNVJITLINK": "/nonexistent/cuabi-test/libnvJitLink.so.13"})
    assert res[1] == 100009 and "/nonexistent/cuabi-test/libnvJitLink.so.13" in res[0]
    assert "what to do" in res[0]


def test_arguments_are_checked(tmp_path):
    """Wrong inputs, kinds, architectures and options are refused before nvJitLink is asked."""
    with pytest.raises(ValueError, match="sm_90"):
        cuabi.Linker(arch="compute_90")
    with pytest.raises(TypeError, match="single str"):
        cuabi.Linker(options="-O3")
    with pytest.raises(ValueError, match="arch="):
        cuabi.Linker(options=["-arch=sm_90"])
    with pytest.raises(TypeError, match="lto"):
        cuabi.Linker(lto="yes")
    ln = cuabi.Linker()
    with pytest.raises(TypeError, match="without their kind"):
        ln.add(b"x")
    with pytest.raises(TypeError, match="ambiguous"):
        ln.add("ptx text", "ptx")
    with pytest.raises(ValueError, match="kind must be one of"):
        ln.add(b"x", "sass")
    with pytest.raises(ValueError, match="empty"):
        ln.add(b"", "ptx")
    with pytest.raises(ValueError, match="contradicts"):
        ln.add(cuabi.ObjectCode(b"x", "ptx", "", {}), "cubin")
    with pytest.raises(FileNotFoundError):
        ln.add_file(str(tmp_path / "missing.ptx"))
    (tmp_path / "x.bin").write_bytes(b"x")
    with pytest.raises(ValueError, match="cannot tell the kind"):
        ln.add_file(str(tmp_path / "x.bin"))
    with pytest.raises(ValueError, match="nothing to link"):
        ln.link()
    ln.add(cuabi.ObjectCode(b"x", "ltoir", "", {}, "sm_80")).add(cuabi.ObjectCode(b"y", "ltoir", "", {}, "sm_90"))
    with pytest.raises(ValueError, match="different architectures"):
        ln.link_options()
    with pytest.raises(ValueError, match="target"):
        ln.link(target="fatbin")


def test_no_architecture_says_what_to_do():
    """With no arch=, no input architecture and no context, the error says how to give one."""
    with pytest.raises(ValueError, match="give arch="):
        cuabi.Linker().add(b"x", "ptx").link_options()


def test_ltoir_must_be_linked_before_loading():
    """LTO IR's ObjectCode.load() points to the Linker."""
    with pytest.raises(ValueError, match="Linker"):
        cuabi.ObjectCode(b"x", "ltoir", "", {}).load()


def test_real_ltoir_links_to_a_cubin():
    """The machine's NVRTC and nvJitLink link SAXPY's LTO IR into a cubin and into PTX."""
    if not _have_real():
        pytest.skip("NVRTC or nvJitLink not installed")
    lto = cuabi.Program(SAXPY, name="saxpy.cu").compile(target="ltoir", arch="sm_80")
    cubin = cuabi.Linker(lto).link()
    assert cubin.kind == "cubin" and cubin.code[:4] == b"\x7fELF" and b"saxpy" in cubin.code
    assert cubin.arch == "sm_80"
    ptx = cuabi.Linker(lto).link(target="ptx")
    assert ptx.kind == "ptx" and b".entry saxpy" in ptx.code

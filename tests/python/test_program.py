# SPDX-License-Identifier: Apache-2.0
"""NVRTC: Program/ObjectCode, loaded lazily; SAXPY compiled from CUDA C++ and run."""

import struct

import pytest

import cuabi
from cuabi import _program
from cuabi.errors import NVRTCError
from conftest import _fake_family, run_json

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''
TEMPLATE = "template <typename T> __global__ void scale(T *p, T s) { p[threadIdx.x] *= s; }"


def _have_nvrtc():
    try:
        _program.nvrtc_version()
        return True
    except NVRTCError:
        return False


needs_nvrtc = pytest.mark.skipif(not _have_nvrtc(), reason="NVRTC not installed here")


@needs_nvrtc
def test_version_and_path():
    """nvrtc_version() and nvrtc_path() describe the NVRTC that was loaded."""
    major, minor = cuabi.nvrtc_version()
    assert major >= 11
    assert "nvrtc" in cuabi.nvrtc_path()
    assert all(isinstance(a, int) for a in _program.supported_archs())


@needs_nvrtc
def test_compile_ptx_and_run_saxpy(ctx):
    """A program compiled to PTX loads and runs SAXPY correctly."""
    obj = cuabi.Program(SAXPY, name="saxpy.cu").compile(["-default-device"], arch="sm_75")
    assert obj.kind == "ptx" and b".entry saxpy" in obj.code
    assert "ObjectCode ptx" in repr(obj)
    n = 500
    mod = obj.load()
    k = mod.get_kernel("saxpy", "fppi")
    x = cuabi.DeviceBuffer(4 * n)
    y = cuabi.DeviceBuffer(4 * n)
    x.copy_from(struct.pack("%df" % n, *range(n)))
    y.fill(0, width=4)
    cuabi.launch(None, cuabi.LaunchConfig((n + 255) // 256, 256), k, 3.0, x, y, n)
    cuabi.Stream.legacy().sync()
    assert struct.unpack("%df" % n, y.to_bytes()) == tuple(3.0 * i for i in range(n))


@needs_nvrtc
def test_name_expressions():
    """name_expressions come back with their mangled names in name_map."""
    obj = cuabi.Program(TEMPLATE).compile(arch="sm_75", name_expressions=["scale<float>", "scale<int>"])
    assert obj.name_map["scale<float>"] == "_Z5scaleIfEvPT_S0_"
    assert obj.name_map["scale<int>"].startswith("_Z5scaleIiE")


@needs_nvrtc
def test_compile_cubin_and_ltoir():
    """Programs compile to cubin and LTO-IR; LTO-IR cannot be loaded directly."""
    obj = cuabi.Program(SAXPY).compile(target="cubin", arch="sm_80")
    assert obj.kind == "cubin" and obj.code[:4] == b"\x7fELF"
    lto = cuabi.Program(SAXPY).compile(target="ltoir", arch="sm_80")
    assert lto.kind == "ltoir" and lto.code
    with pytest.raises(ValueError):
        lto.load()


@needs_nvrtc
def test_compile_error_carries_log():
    """A compilation error raises NVRTCError with the compiler's log."""
    with pytest.raises(NVRTCError) as ei:
        cuabi.Program("__global__ void k() { this is not C++; }", name="broken.cu").compile(arch="sm_75")
    assert ei.value.code is not None
    assert "broken.cu" in ei.value.log and "error" in ei.value.log


@needs_nvrtc
def test_headers_and_options():
    """Headers given to Program are included, and options passed on."""
    src = '#include "val.h"\nextern "C" __global__ void k(int *p) { *p = VAL; }'
    obj = cuabi.Program(src, headers={"val.h": "#define VAL 42\n"}).compile(["-lineinfo"], arch="sm_75")
    assert b"42" in obj.code


def test_program_arguments_are_checked():
    """Program() refuses a non-text source, a non-str name and non-str headers."""
    with pytest.raises(TypeError):
        cuabi.Program(123)
    with pytest.raises(TypeError):
        cuabi.Program("x", name=5)
    with pytest.raises(TypeError):
        cuabi.Program("x", headers={"a.h": 1})


def test_compile_arguments_are_checked():
    """compile() refuses an unknown target, options given as one str or non-str, and a bad arch."""
    p = cuabi.Program(b"extern \"C\" __global__ void k() {}")
    with pytest.raises(ValueError):
        p.compile(target="sass")
    with pytest.raises(TypeError):
        p.compile("-lineinfo")
    with pytest.raises(TypeError):
        p.compile([1])
    with pytest.raises(ValueError):
        p.compile(arch="ampere")


def test_nvrtc_not_found_carries_the_report():
    """Without NVRTC, compile() raises NVRTCError with libcuabi's report: the file tried, what to do."""
    res = run_json("""
        import json
        import cuabi
        try:
            cuabi.Program("").compile(arch="sm_75")
        except cuabi.NVRTCError as e:
            print(json.dumps([str(e), e.code, e.report]))
    """, env={"CUABI_LIBNVRTC": "/nonexistent/cuabi-test/libnvrtc.so.13"})
    msg, code, report = res
    assert "/nonexistent/cuabi-test/libnvrtc.so.13" in msg and "what to do" in msg
    assert code == 100009 and "loading NVRTC" in report


def test_relative_libnvrtc_is_refused():
    """A relative CUABI_LIBNVRTC is refused with the reason, not searched in the current folder."""
    res = run_json("""
        import json
        import cuabi
        try:
            cuabi.nvrtc_version()
        except cuabi.NVRTCError as e:
            print(json.dumps([str(e), e.code]))
    """, env={"CUABI_LIBNVRTC": "libnvrtc.so.13"})
    assert res[1] == 100006 and "not an absolute path" in res[0]


def _fake_nvrtc():
    path = _fake_family("nvrtc")
    if path is None:
        pytest.fail("libfakenvrtc.so not built: cmake --build build")
    return path


def test_program_goes_through_cuabis_nvrtc_family():
    """Program compiles through cuabi.nvrtc: name, headers, options and arch reach the fake; outputs return."""
    fake = _fake_nvrtc()
    res = run_json("""
        import json
        import cuabi
        from cuabi import _program, nvrtc
        p = cuabi.Program('extern "C" __global__ void k(int *p) {}', name="k.cu", headers={"a.h": "1", "b.h": "2"})
        given = p.compile(["-lineinfo"], target="cubin", arch="sm_90")
        lto = p.compile(target="ltoir", arch="sm_80", name_expressions=["k<int>"])
        cubin = p.compile(target="cubin")
        ptx = p.compile(["--gpu-architecture=compute_80"])
        print(json.dumps([given.code.decode("latin-1"), given.arch, lto.code.decode("latin-1"), lto.kind,
                          lto.arch, lto.name_map, cubin.code.decode("latin-1"), cubin.arch,
                          ptx.code.decode("latin-1"), ptx.arch, _program.supported_archs(),
                          cuabi.nvrtc_version(), cuabi.nvrtc_path(), nvrtc.library_path()]))
    """, env={"CUABI_LIBNVRTC": fake})
    (given, given_arch, lto, kind, arch, names, cubin, cubin_arch, ptx, ptx_arch, archs, version, path,
     lib) = res
    assert given.startswith("\x7fELF fake cubin;name=k.cu;header=a.h;header=b.h;option=-lineinfo;"
                            "option=-arch=sm_90\x00")
    assert given_arch == "sm_90"
    # the fake makes LTO IR only when -dlto reached it
    assert lto.startswith("fake LTO IR\n.version") and ".entry k(" in lto
    assert (kind, arch, names) == ("ltoir", "sm_80", {"k<int>": "_fake_lowered_k<int>"})
    # no context: the oldest architecture the library supports
    assert cubin.startswith("\x7fELF fake cubin;") and "option=-arch=sm_75" in cubin
    assert cubin_arch == "sm_75"
    assert ".entry k(" in ptx and ptx_arch is None
    assert archs == [75, 80, 90] and version == [13, 5] and path == lib == fake


def test_compile_error_on_the_family_carries_log_and_code():
    """A failed compilation raises NVRTCError with NVRTC's code, its name and the log."""
    res = run_json("""
        import json
        import cuabi
        try:
            cuabi.Program("#error no", name="bad.cu").compile(arch="sm_80")
        except cuabi.NVRTCError as e:
            print(json.dumps([str(e), e.code, e.name, e.log]))
    """, env={"CUABI_LIBNVRTC": _fake_nvrtc()})
    msg, code, name, log = res
    assert (code, name) == (6, "NVRTC_ERROR_COMPILATION")
    assert msg.startswith("compiling bad.cu failed: NVRTC_ERROR_COMPILATION (6)")
    assert "fake NVRTC: error: #error in the source" in log and log.rstrip() in msg


def test_arch_given_twice_is_refused():
    """An -arch option together with arch= is refused before NVRTC is asked anything."""
    with pytest.raises(ValueError, match="given twice"):
        cuabi.Program("x").compile(["-arch=sm_80"], arch="sm_90")


def test_program_options_become_nvrtc_options():
    """Each ProgramOptions field set becomes its NVRTC option; unset fields add nothing."""
    assert cuabi.ProgramOptions().as_list() == []
    opts = cuabi.ProgramOptions(arch="sm_90", std="c++17", device_debug=True, lineinfo=True, use_fast_math=True,
                                ftz=False, fmad=True, max_register_count=64, relocatable_device_code=True,
                                define_macro={"N": "4", "FAST": None}, undefine_macro=["SLOW"],
                                include_path=["/inc"], pre_include=["pre.h"], disable_warnings=True,
                                split_compile=2, ptxas_options=["-v"], extra=["--dopt=on"])
    assert opts.as_list() == [
        "-arch=sm_90", "--relocatable-device-code=true", "-G", "-lineinfo", "--ptxas-options=-v",
        "--maxrregcount=64", "--ftz=false", "--fmad=true", "--use_fast_math", "-DN=4", "-DFAST", "-USLOW",
        "-I/inc", "--pre-include=pre.h", "-std=c++17", "-w", "--split-compile=2", "--dopt=on"]
    assert cuabi.ProgramOptions(define_macro=["A", "B=2"]).as_list() == ["-DA", "-DB=2"]


@pytest.mark.parametrize("bad, error", [
    (dict(arch="90"), ValueError), (dict(std="17"), ValueError), (dict(lineinfo=1), TypeError),
    (dict(ftz="yes"), TypeError), (dict(max_register_count=0), ValueError),
    (dict(include_path="/inc"), TypeError), (dict(extra=[""]), TypeError)])
def test_program_options_are_checked(bad, error):
    """A malformed ProgramOptions field is refused, naming the field, before NVRTC sees it."""
    name = next(iter(bad))
    with pytest.raises(error, match=name):
        cuabi.ProgramOptions(**bad)


@needs_nvrtc
def test_compile_takes_program_options():
    """compile() takes a ProgramOptions: its macros reach the source, its arch is used as given."""
    src = "extern \"C\" __global__ void k(int *p) { p[0] = VALUE; }"
    obj = cuabi.Program(src).compile(cuabi.ProgramOptions(define_macro={"VALUE": "1234"}, arch="compute_75"))
    assert b"1234" in obj.code and b".target sm_75" in obj.code
    with pytest.raises(ValueError, match="given twice"):
        cuabi.Program(src).compile(cuabi.ProgramOptions(arch="sm_75"), arch="sm_80")

# SPDX-License-Identifier: Apache-2.0
"""Programs on a real GPU (CUABI_TEST_REAL_GPU=1) with NVIDIA's NVRTC, nvJitLink and
libNVVM: typed options, PTX input, NVVM IR input, the on-disk cache and name expressions,
each checked by running what was compiled."""

import struct

import pytest

import cuabi

pytestmark = pytest.mark.gpu

SCALE = r'''
extern "C" __global__ void scale_add(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = SCALE * x[i] + OFFSET;
}
'''
TEMPLATE = r'''
template <typename T> __global__ void twice(T *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] + p[i];
}
'''
N = 4096


@pytest.fixture(scope="module")
def ctx():
    c = cuabi.Device(0).set_current()
    yield c
    c.close()


def _run_scale_add(obj, kernel_name="scale_add"):
    """Runs scale_add over 0..N-1 and returns y."""
    k = obj.load().get_kernel(kernel_name, "ppi")
    x = cuabi.DeviceBuffer(4 * N)
    y = cuabi.DeviceBuffer(4 * N)
    x.copy_from(struct.pack("%df" % N, *range(N)))
    y.fill(0, width=4)
    s = cuabi.Stream()
    cuabi.launch(s, cuabi.LaunchConfig((N + 255) // 256, 256), k, y, x, N)
    s.sync()
    return struct.unpack("%df" % N, y.to_bytes())


def test_typed_options_compile_and_run(ctx):
    """A kernel compiled with typed options (macros, std, fast math off, registers, line info) computes right."""
    arch = cuabi.Device(0).arch
    opts = cuabi.ProgramOptions(arch=arch, std="c++17", define_macro={"SCALE": "3.0f", "OFFSET": "0.5f"},
                                fmad=False, prec_div=True, max_register_count=32, lineinfo=True,
                                device_optimize=True, diag_suppress=[177], display_error_number=True)
    obj = cuabi.Program(SCALE, name="scale.cu").compile(opts, target="cubin")
    assert obj.kind == "cubin" and obj.code[:4] == b"\x7fELF"
    assert _run_scale_add(obj) == tuple(3.0 * i + 0.5 for i in range(N))


def test_an_option_nvrtc_rejects_raises_its_code():
    """An option NVRTC rejects (passed through extra) raises NVRTCError carrying NVRTC's own code."""
    with pytest.raises(cuabi.NVRTCError) as exc:
        cuabi.Program(SCALE).compile(cuabi.ProgramOptions(extra=["--no-such-option"]))
    assert exc.value.name == "NVRTC_ERROR_INVALID_OPTION"


def test_ptx_input_becomes_a_cubin_and_runs(ctx):
    """C++ compiled to PTX, then given back as PTX input, is linked by nvJitLink into a cubin that runs."""
    ptx = cuabi.Program(SCALE).compile(["-DSCALE=2.0f", "-DOFFSET=1.0f"], arch="compute_%s"
                                       % cuabi.Device(0).arch[3:]).code
    prog = cuabi.Program(ptx, name="scale.ptx", code_type="ptx")
    cubin = prog.compile(cuabi.ProgramOptions(lineinfo=True, max_register_count=32))
    assert cubin.kind == "cubin" and cubin.code[:4] == b"\x7fELF" and cubin.arch == cuabi.Device(0).arch
    assert _run_scale_add(cubin) == tuple(2.0 * i + 1.0 for i in range(N))
    as_is = prog.compile(target="ptx")  # the driver JITs it at load
    assert as_is.code == ptx.rstrip(b"\0") or as_is.code == ptx
    assert _run_scale_add(as_is) == tuple(2.0 * i + 1.0 for i in range(N))


def test_cache_hit_on_the_second_compile(ctx, tmp_path):
    """The second compile of the same program comes from the on-disk cache, identical, and runs."""
    cache = cuabi.ProgramCache(str(tmp_path))
    prog = cuabi.Program(SCALE, name="cached.cu")
    opts = cuabi.ProgramOptions(define_macro={"SCALE": "4.0f", "OFFSET": "-1.0f"})
    first = prog.compile(opts, target="cubin", cache=cache)
    second = prog.compile(opts, target="cubin", cache=cache)
    assert (cache.misses, cache.hits) == (1, 1)
    assert second.code == first.code and second.arch == first.arch == cuabi.Device(0).arch
    assert len(cache.entries()) == 1
    assert _run_scale_add(second) == tuple(4.0 * i - 1.0 for i in range(N))
    prog.compile(cuabi.ProgramOptions(define_macro={"SCALE": "5.0f", "OFFSET": "0.0f"}), target="cubin",
                 cache=cache)
    assert cache.misses == 2  # other options: another entry
    cache.clear()
    assert cache.entries() == []


def test_name_expressions_of_a_template_kernel(ctx):
    """Lowered names of two instantiations of a template kernel load and run, each on its own type."""
    obj = cuabi.Program(TEMPLATE).compile(target="cubin", name_expressions=["twice<float>", "twice<int>"])
    names = obj.name_map
    assert names["twice<float>"] == "_Z5twiceIfEvPT_i" and names["twice<int>"] == "_Z5twiceIiEvPT_i"
    mod = obj.load()
    s = cuabi.Stream()
    f = cuabi.DeviceBuffer(4 * N)
    f.copy_from(struct.pack("%df" % N, *(i * 0.25 for i in range(N))))
    cuabi.launch(s, cuabi.LaunchConfig(N // 256, 256), mod.get_kernel(names["twice<float>"], "pi"), f, N)
    i32 = cuabi.DeviceBuffer(4 * N)
    i32.copy_from(struct.pack("%di" % N, *range(-N // 2, N // 2)))
    cuabi.launch(s, cuabi.LaunchConfig(N // 256, 256), mod.get_kernel(names["twice<int>"], "pi"), i32, N)
    s.sync()
    assert struct.unpack("%df" % N, f.to_bytes()) == tuple(i * 0.5 for i in range(N))
    assert struct.unpack("%di" % N, i32.to_bytes()) == tuple(2 * i for i in range(-N // 2, N // 2))


def _nvvm_ir():
    """A kernel in NVVM IR (typed pointers, as NVVM IR 2.0 reads them) adding 7 to each float."""
    major, minor, _dmajor, _dminor = cuabi.nvvm_ir_version()
    return r'''
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @add_seven(float* %p) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %idx = zext i32 %i to i64
  %ptr = getelementptr float, float* %p, i64 %idx
  %v = load float, float* %ptr, align 4
  %r = fadd float %v, 7.0
  store float %r, float* %ptr, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() nounwind readnone

!nvvm.annotations = !{!0}
!0 = !{void (float*)* @add_seven, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 MAJOR, i32 MINOR}
'''.replace("MAJOR", str(major)).replace("MINOR", str(minor))


def _have_nvvm():
    try:
        cuabi.nvvm_version()
        return True
    except cuabi.NVVMError:
        return False


@pytest.mark.skipif(not _have_nvvm(), reason="libNVVM not found (CUABI_LIBNVVM, cuda.pathfinder, the toolkit's "
                                             "nvvm/lib64): the NVVM IR input is not tried")
def test_nvvm_ir_compiles_and_runs(ctx):
    """NVVM IR verified and compiled by libNVVM, as PTX and as a cubin through nvJitLink, runs on the GPU."""
    ir = _nvvm_ir()
    assert cuabi.NVVMProgram().add_module(ir, "add_seven.ll").verify() == ""
    prog = cuabi.Program(ir, name="add_seven.ll", code_type="nvvm")
    for obj in (prog.compile(cuabi.ProgramOptions(fmad=True)), prog.compile(target="cubin")):
        k = obj.load().get_kernel("add_seven", "p")
        buf = cuabi.DeviceBuffer(4 * N)
        buf.copy_from(struct.pack("%df" % N, *range(N)))
        s = cuabi.Stream()
        cuabi.launch(s, cuabi.LaunchConfig(N // 128, 128), k, buf)
        s.sync()
        assert struct.unpack("%df" % N, buf.to_bytes()) == tuple(i + 7.0 for i in range(N)), obj.kind

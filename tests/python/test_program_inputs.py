# SPDX-License-Identifier: Apache-2.0
"""Programs beyond C++: every ProgramOptions field, PTX and NVVM IR input, NVVMProgram
and the on-disk ProgramCache, on the fake NVRTC, nvJitLink and NVVM (tests/fake/family.c)."""

import dataclasses
import os

import pytest

import cuabi
from cuabi import _program_options
from conftest import _fake_family, run_json

# field -> (a value, the option strings it must become)
RENDERED = {
    "arch": ("sm_90a", ["-arch=sm_90a"]),
    "relocatable_device_code": (False, ["--relocatable-device-code=false"]),
    "extensible_whole_program": (True, ["-ewp"]),
    "device_debug": (True, ["-G"]),
    "lineinfo": (True, ["-lineinfo"]),
    "device_optimize": (True, ["--dopt=on"]),
    "fast_compile": ("mid", ["--Ofast-compile=mid"]),
    "ptxas_options": (["-v", "-O2"], ["--ptxas-options=-v", "--ptxas-options=-O2"]),
    "max_register_count": (32, ["--maxrregcount=32"]),
    "ftz": (True, ["--ftz=true"]),
    "prec_sqrt": (False, ["--prec-sqrt=false"]),
    "prec_div": (True, ["--prec-div=true"]),
    "fmad": (False, ["--fmad=false"]),
    "use_fast_math": (True, ["--use_fast_math"]),
    "extra_device_vectorization": (True, ["--extra-device-vectorization"]),
    "modify_stack_limit": (False, ["--modify-stack-limit=false"]),
    "link_time_optimization": (True, ["-dlto"]),
    "gen_opt_lto": (True, ["--gen-opt-lto"]),
    "jump_table_density": (101, ["--jump-table-density=101"]),
    "device_stack_protector": (True, ["--device-stack-protector=true"]),
    "no_cache": (True, ["--no-cache"]),
    "random_seed": ("0x1234", ["--frandom-seed=0x1234"]),
    "define_macro": ({"A": None, "B": "2"}, ["-DA", "-DB=2"]),
    "undefine_macro": (["C"], ["-UC"]),
    "include_path": (["/x", "/y"], ["-I/x", "-I/y"]),
    "pre_include": (["p.h"], ["--pre-include=p.h"]),
    "no_source_include": (True, ["-no-source-include"]),
    "std": ("c++20", ["-std=c++20"]),
    "builtin_move_forward": (False, ["--builtin-move-forward=false"]),
    "builtin_initializer_list": (True, ["--builtin-initializer-list=true"]),
    "pch": (True, ["--pch"]),
    "create_pch": ("a.pch", ["--create-pch=a.pch"]),
    "use_pch": ("b.pch", ["--use-pch=b.pch"]),
    "pch_dir": ("/pch", ["--pch-dir=/pch"]),
    "pch_verbose": (False, ["--pch-verbose=false"]),
    "pch_messages": (True, ["--pch-messages=true"]),
    "instantiate_templates_in_pch": (False, ["--instantiate-templates-in-pch=false"]),
    "disable_warnings": (True, ["-w"]),
    "restrict": (True, ["-restrict"]),
    "device_as_default_execution_space": (True, ["-default-device"]),
    "device_int128": (True, ["-device-int128"]),
    "device_float128": (True, ["-device-float128"]),
    "optimization_info": ("inline", ["-opt-info=inline"]),
    "display_error_number": (False, ["--no-display-error-number"]),
    "diag_error": ([20, 177], ["--diag-error=20,177"]),
    "diag_suppress": ([550], ["--diag-suppress=550"]),
    "diag_warn": ([1], ["--diag-warn=1"]),
    "brief_diagnostics": (True, ["--brief-diagnostics=true"]),
    "time": ("-", ["--time=-"]),
    "split_compile": (0, ["--split-compile=0"]),
    "device_syntax_only": (True, ["--fdevice-syntax-only"]),
    "minimal": (True, ["--minimal"]),
    "device_time_trace": ("t.json", ["--fdevice-time-trace=t.json"]),
    "extra": (["--optix-ir"], ["--optix-ir"]),
}


def _env(**more):
    env = {"CUABI_LIBNVRTC": _fake_family("nvrtc"), "CUABI_LIBNVJITLINK": _fake_family("nvjitlink"),
           "CUABI_LIBNVVM": _fake_family("nvvm")}
    if None in env.values():
        pytest.fail("the fake family libraries are not built: cmake --build build")
    env.update(more)
    return env


def test_every_field_is_tested_and_rendered():
    """Each of ProgramOptions' fields is in RENDERED, and the class's own table lists each once."""
    _program_options._check_table()
    assert [f.name for f in dataclasses.fields(cuabi.ProgramOptions)] == list(RENDERED)
    assert len(RENDERED) >= 50


@pytest.mark.parametrize("name", list(RENDERED))
def test_each_field_renders_to_its_nvrtc_option(name):
    """A field set alone becomes exactly its NVRTC option(s)."""
    value, expected = RENDERED[name]
    assert cuabi.ProgramOptions(**{name: value}).as_list() == expected


def test_options_render_in_one_order_whatever_the_order_given():
    """Equal options give equal lists, in nvrtc.h's order, however the keywords were ordered."""
    names = list(RENDERED)
    forward = cuabi.ProgramOptions(**{n: RENDERED[n][0] for n in names})
    backward = cuabi.ProgramOptions(**{n: RENDERED[n][0] for n in reversed(names)})
    expected = [o for n in names for o in RENDERED[n][1]]
    assert forward.as_list() == backward.as_list() == expected
    assert cuabi.ProgramOptions(display_error_number=True).as_list() == ["--display-error-number"]


@pytest.mark.parametrize("bad, error, words", [
    (dict(arch="sm90"), ValueError, "sm_90"), (dict(arch=90), TypeError, "str"),
    (dict(std="c++23"), ValueError, "c++20"), (dict(std=17), TypeError, "str"),
    (dict(fast_compile="fast"), ValueError, "min"), (dict(optimization_info="all"), ValueError, "inline"),
    (dict(jump_table_density=102), ValueError, "101"), (dict(jump_table_density=True), TypeError, "int"),
    (dict(split_compile=-1), ValueError, "0"), (dict(max_register_count="64"), TypeError, "int"),
    (dict(pch="yes"), TypeError, "True or False"), (dict(pch_verbose=1), TypeError, "True or False"),
    (dict(create_pch=""), TypeError, "non-empty"), (dict(diag_error="20"), TypeError, "list of int"),
    (dict(diag_warn=[-1]), ValueError, "0"), (dict(define_macro={"A": 1}), TypeError, "str or None"),
    (dict(pre_include=[3]), TypeError, "non-empty str"), (dict(display_error_number="no"), TypeError, "True")])
def test_a_bad_field_is_refused_when_made_naming_it(bad, error, words):
    """A wrong type raises TypeError, an unknown value ValueError, naming the field, when the options are made."""
    name = next(iter(bad))
    with pytest.raises(error) as exc:
        cuabi.ProgramOptions(**bad)
    assert name in str(exc.value) and words in str(exc.value)


def test_a_field_changed_later_is_checked_by_as_list():
    """A field set after construction is still checked when the list is made."""
    opts = cuabi.ProgramOptions()
    opts.std = "c++99"
    with pytest.raises(ValueError, match="std"):
        opts.as_list()


def test_typed_options_reach_nvrtc():
    """A ProgramOptions given to compile reaches NVRTC as its option strings, in order."""
    res = run_json("""
        import json
        import cuabi
        opts = cuabi.ProgramOptions(arch="sm_90", std="c++20", pch=True, diag_suppress=[550], minimal=True)
        print(json.dumps(cuabi.Program('extern "C" __global__ void k(int *p) {}', name="k.cu")
                         .compile(opts, target="cubin").code.decode("latin-1")))
    """, env=_env())
    assert res.startswith("\x7fELF fake cubin;name=k.cu;option=-arch=sm_90;option=-std=c++20;option=--pch;"
                          "option=--diag-suppress=550;option=--minimal\x00")


def test_ptx_input_links_to_a_cubin_with_nvjitlink():
    """PTX input becomes a cubin through nvJitLink, with its options translated; target='ptx' gives it back."""
    res = run_json("""
        import json
        import cuabi
        ptx = ".version 8.0\\n.target sm_90\\n.address_size 64\\n.visible .entry k()\\n{\\n\\tret;\\n}\\n"
        p = cuabi.Program(ptx, name="k.ptx", code_type="ptx")
        cubin = p.compile(cuabi.ProgramOptions(arch="sm_90", lineinfo=True, max_register_count=40, ftz=False,
                                               ptxas_options=["-v"]))
        raw = p.compile(["-O3"], arch="sm_80")
        same = p.compile(target="ptx")
        print(json.dumps([cubin.kind, cubin.arch, cubin.code.decode("latin-1"), cubin.log, raw.code.decode(),
                          raw.arch, same.kind, same.code.decode() == ptx]))
    """, env=_env())
    kind, arch, code, log, raw, raw_arch, same_kind, same = res
    assert (kind, arch) == ("cubin", "sm_90")
    assert ".entry k()" in code
    assert ("// fake nvJitLink: option=-arch=sm_90;option=-lineinfo;option=-Xptxas=-v;option=-maxrregcount=40;"
            "option=-ftz=0;input=2:k.ptx:" in code)
    assert log == "fake nvJitLink: info: linked"
    assert "option=-arch=sm_80;option=-O3;input=2:k.ptx" in raw and raw_arch == "sm_80"
    assert same_kind == "ptx" and same is True


def test_ptx_and_nvvm_input_refuse_what_does_not_apply():
    """C++-only options, headers, name expressions and PTX-to-PTX options are refused, saying why."""
    ptx = cuabi.Program(".version 8.0", code_type="ptx")
    with pytest.raises(ValueError, match="std has no equivalent in nvJitLink"):
        ptx.compile(cuabi.ProgramOptions(std="c++17"), arch="sm_90")
    with pytest.raises(ValueError, match="max_register_count has no equivalent in libNVVM"):
        cuabi.Program("ir", code_type="nvvm").compile(cuabi.ProgramOptions(max_register_count=8), arch="sm_90")
    with pytest.raises(ValueError, match="nowhere to go"):
        ptx.compile(["-O3"], target="ptx")
    with pytest.raises(ValueError, match="'ptx' or 'cubin' for code_type='ptx'"):
        ptx.compile(target="ltoir")
    with pytest.raises(ValueError, match="C\\+\\+ only"):
        ptx.compile(arch="sm_90", name_expressions=["k<int>"])
    with pytest.raises(ValueError, match="C\\+\\+ only"):
        cuabi.Program("x", code_type="ptx", headers={"a.h": ""})
    with pytest.raises(ValueError, match="code_type"):
        cuabi.Program("x", code_type="cuda")
    with pytest.raises(ValueError, match="twice"):
        ptx.compile(cuabi.ProgramOptions(arch="sm_90"), arch="sm_80")
    with pytest.raises(TypeError, match="str or bytes"):
        cuabi.Program(3, code_type="nvvm")


def test_nvvm_input_compiles_through_libnvvm():
    """NVVM IR compiles to PTX, LTO IR or (through nvJitLink) a cubin; options and arch reach libNVVM."""
    res = run_json("""
        import json
        import cuabi
        p = cuabi.Program(b"define void @k() { ret void }", name="k.ll", code_type="nvvm")
        ptx = p.compile(cuabi.ProgramOptions(ftz=True, prec_div=False, device_debug=True, lineinfo=True),
                        arch="sm_90")
        lto = p.compile(target="ltoir", arch="compute_80")
        cubin = p.compile(target="cubin", arch="sm_90")
        print(json.dumps([[o.kind, o.arch, o.code.decode("latin-1"), o.log] for o in (ptx, lto, cubin)]))
    """, env=_env())
    (pk, pa, pc, pl), (lk, la, lc, _ll), (ck, ca, cc, cl) = res
    assert (pk, pa) == ("ptx", "sm_90") and pl == "fake NVVM: info: compiled"
    assert pc.endswith("// fake NVVM: module=k.ll;option=-g;option=-generate-line-info;option=-ftz=1;"
                       "option=-prec-div=0;option=-arch=compute_90\n")
    assert (lk, la) == ("ltoir", "sm_80") and lc.startswith("fake LTO IR\n")
    assert "option=-arch=compute_80;option=-gen-lto" in lc
    assert (ck, ca) == ("cubin", "sm_90") and "// fake nvJitLink: option=-arch=sm_90;input=2:k.ll:" in cc
    assert cl == "fake NVVM: info: compiled\nfake nvJitLink: info: linked"


def test_nvvm_program_verifies_compiles_and_logs():
    """NVVMProgram adds modules (lazily too), verifies, compiles, and raises NVVMError with the log."""
    res = run_json("""
        import json
        import cuabi
        good = cuabi.NVVMProgram().add_module("define void @k() { ret void }", "k.ll")
        good.add_module(b"libdevice bitcode", "libdevice.bc", lazy=True)
        out = [good.verify(["-arch=compute_90"]), good.compile(["-opt=3"]).decode(), good.log,
               list(cuabi.nvvm_version()), repr(good)]
        for ir, step in (("!invalid", "verify"), ("#error", "compile")):
            try:
                getattr(cuabi.NVVMProgram().add_module(ir, "bad.ll"), step)()
            except cuabi.NVVMError as e:
                out.append([str(e), e.code, e.name, e.function, e.log])
        print(json.dumps(out))
    """, env=_env())
    verify_log, ptx, log, version, rep, invalid, failed = res
    assert verify_log == ""
    assert ptx.endswith("// fake NVVM: module=k.ll;lazy-module=libdevice.bc;option=-opt=3\n")
    assert log == "fake NVVM: info: compiled" and version == [2, 0] and rep == "<cuabi.NVVMProgram 2 module(s)>"
    assert invalid[1:] == [6, "NVVM_ERROR_INVALID_IR", "nvvmVerifyProgram", "fake NVVM: error: invalid IR"]
    assert invalid[0].startswith("verifying 1 module(s) failed in nvvmVerifyProgram: NVVM_ERROR_INVALID_IR (6)\n")
    assert failed[1:] == [9, "NVVM_ERROR_COMPILATION", "nvvmCompileProgram", "fake NVVM: error: #error in a module"]


def test_nvvm_program_arguments_are_checked():
    """An empty program, a non-IR module and a single-str options are refused before libNVVM is asked."""
    with pytest.raises(ValueError, match="add_module"):
        cuabi.NVVMProgram().compile()
    with pytest.raises(TypeError, match="str or bytes"):
        cuabi.NVVMProgram().add_module(3)
    with pytest.raises(ValueError, match="empty"):
        cuabi.NVVMProgram().add_module(b"")
    with pytest.raises(TypeError, match="single str"):
        cuabi.NVVMProgram().add_module("x").compile("-opt=3")


_COUNT = """
    import ctypes, json, os
    import cuabi
    fake = ctypes.CDLL(os.environ["CUABI_LIBNVRTC"])
    fake.fakefam_calls.restype = ctypes.c_uint64
    def compiles():
        return fake.fakefam_calls(b"nvrtcCompileProgram")
"""


def test_cache_compiles_once_and_keys_every_input(tmp_path):
    """A second equal compile is a hit; a changed source, header, option, target, arch, name or NVRTC misses."""
    res = run_json(_COUNT + """
    d = os.environ["DIR"]
    src = 'extern "C" __global__ void k(int *p) {}'
    def run(p, *args, **kw):
        before = compiles()
        obj = p.compile(*args, cache=d, **kw)
        return [compiles() - before, obj.kind, obj.arch, obj.log, obj.name_map, obj.code.decode("latin-1")]
    p = cuabi.Program(src, headers={"a.h": "1"})
    out = [run(p, ["-lineinfo"], target="cubin", arch="sm_90", name_expressions=["k"]),
           run(p, ["-lineinfo"], target="cubin", arch="sm_90", name_expressions=["k"])]
    for other in (lambda: run(cuabi.Program(src + " ", headers={"a.h": "1"}), ["-lineinfo"], target="cubin", arch="sm_90", name_expressions=["k"]),
                  lambda: run(cuabi.Program(src, headers={"a.h": "2"}), ["-lineinfo"], target="cubin", arch="sm_90", name_expressions=["k"]),
                  lambda: run(p, ["-G"], target="cubin", arch="sm_90", name_expressions=["k"]),
                  lambda: run(p, ["-lineinfo"], target="ptx", arch="sm_90", name_expressions=["k"]),
                  lambda: run(p, ["-lineinfo"], target="cubin", arch="sm_80", name_expressions=["k"]),
                  lambda: run(p, ["-lineinfo"], target="cubin", arch="sm_90", name_expressions=[])):
        out.append(other()[0])
    print(json.dumps([out, len(cuabi.ProgramCache(d).entries())]))
    """, env=_env(DIR=str(tmp_path)))
    (first, second, *others), entries = res
    assert first[0] == 1 and second[0] == 0
    assert first[1:] == second[1:]  # kind, arch, log, name_map and code come back as compiled
    assert second[4] == {"k": "_fake_lowered_k"} and "option=-lineinfo;option=-arch=sm_90" in second[5]
    assert others == [1, 1, 1, 1, 1, 1] and entries == 7
    res = run_json(_COUNT + """
    p = cuabi.Program('extern "C" __global__ void k(int *p) {}')
    print(json.dumps([compiles(), p.compile(arch="sm_90", cache=os.environ["DIR"]).kind, compiles()]))
    """, env=_env(DIR=str(tmp_path), FAKEFAM_VERSION="13.6"))
    assert res == [0, "ptx", 1]  # another NVRTC version: compiled again


def test_cache_from_the_environment_and_off(tmp_path):
    """CUABI_PROGRAM_CACHE turns the cache on for every compile; cache=False turns it off; unset, nothing is stored."""
    res = run_json(_COUNT + """
    p = cuabi.Program('extern "C" __global__ void k(int *p) {}')
    counts = []
    for cache in (None, None, False):
        before = compiles()
        p.compile(arch="sm_90", cache=cache)
        counts.append(compiles() - before)
    print(json.dumps([counts, sorted(os.listdir(os.environ["CUABI_PROGRAM_CACHE"]))]))
    """, env=_env(CUABI_PROGRAM_CACHE=str(tmp_path / "c")))
    counts, files = res
    assert counts == [1, 0, 1] and len(files) == 1 and files[0].endswith(".entry")
    res = run_json(_COUNT + """
    p = cuabi.Program('extern "C" __global__ void k(int *p) {}')
    for _ in range(2):
        p.compile(arch="sm_90")
    print(json.dumps(compiles()))
    """, env=_env())
    assert res == 2


def test_cache_recompiles_a_corrupt_entry(tmp_path):
    """A damaged, truncated or foreign entry is removed and the program compiled again, then cached."""
    res = run_json(_COUNT + """
    d = os.environ["DIR"]
    p = cuabi.Program('extern "C" __global__ void k(int *p) {}')
    good = p.compile(arch="sm_90", target="cubin", cache=d).code
    (name,) = [n for n in os.listdir(d)]
    path = os.path.join(d, name)
    data = open(path, "rb").read()
    out = []
    for damaged in (data[:-1] + bytes([data[-1] ^ 1]), data[:40], b"not an entry", b""):
        with open(path, "wb") as f:
            f.write(damaged)
        before = compiles()
        again = p.compile(arch="sm_90", target="cubin", cache=d).code
        out.append([compiles() - before, again == good, open(path, "rb").read() == data])
    before = compiles()
    p.compile(arch="sm_90", target="cubin", cache=d)
    out.append(compiles() - before)
    print(json.dumps(out))
    """, env=_env(DIR=str(tmp_path)))
    assert res == [[1, True, True]] * 4 + [0]


def test_cache_size_bound_and_clear(tmp_path):
    """Past max_bytes the least recently used entries go; a hit refreshes an entry; clear() empties it."""
    res = run_json("""
        import json, os, time
        import cuabi
        cache = cuabi.ProgramCache(os.environ["DIR"], max_bytes=700)
        progs = [cuabi.Program('extern "C" __global__ void k%d(int *p) {}' % i) for i in range(5)]
        def compile(i):
            return progs[i].compile(arch="sm_90", target="cubin", cache=cache)
        sizes = []
        for i in range(3):
            compile(i)
            time.sleep(0.02)
        compile(0)  # a hit: 0 becomes the most recently used
        time.sleep(0.02)
        for i in (3, 4):
            compile(i)
            time.sleep(0.02)
        keys_left = len(cache.entries())
        before = cache.hits
        compile(0)
        hit0 = cache.hits - before
        before = cache.misses
        compile(1)
        miss1 = cache.misses - before
        size = cache.size()
        cache.clear()
        print(json.dumps([keys_left, hit0, miss1, size <= 700, cache.entries(), os.listdir(os.environ["DIR"])]))
    """, env=_env(DIR=str(tmp_path)))
    keys_left, hit0, miss1, bounded, entries, files = res
    assert 1 <= keys_left < 5 and bounded
    assert hit0 == 1 and miss1 == 1  # 0 was kept (used recently); 1, the oldest, was evicted
    assert entries == [] and files == []


def test_cache_writers_race_to_one_whole_entry(tmp_path):
    """Processes compiling the same program at once leave one whole entry and no temporary file."""
    script = tmp_path / "w.py"
    script.write_text(
        "import cuabi, sys\n"
        "p = cuabi.Program('extern \"C\" __global__ void k(int *p) {}' + ' ' * 4000)\n"
        "for _ in range(20):\n"
        "    cuabi.ProgramCache(sys.argv[1]).put('same', p.compile(arch='sm_90', target='cubin', cache=False))\n")
    res = run_json("""
        import json, os, subprocess, sys
        import cuabi
        d, script = os.environ["DIR"], os.environ["SCRIPT"]
        procs = [subprocess.Popen([sys.executable, script, d]) for _ in range(4)]
        rcs = [p.wait() for p in procs]
        cache = cuabi.ProgramCache(d)
        obj = cache.get("same")
        print(json.dumps([rcs, sorted(os.listdir(d)), obj is not None and obj.kind, cache.misses]))
    """, env=_env(DIR=str(tmp_path / "c"), SCRIPT=str(script)))
    rcs, files, kind, misses = res
    assert rcs == [0, 0, 0, 0] and files == ["same.entry"] and kind == "cubin" and misses == 0


def test_cache_arguments_are_checked(tmp_path):
    """A cache= of the wrong type, a bad bound and an empty directory are refused, saying what is accepted."""
    with pytest.raises(TypeError, match="ProgramCache, a directory"):
        cuabi.Program("x").compile(cache=3)
    with pytest.raises(ValueError, match="max_bytes"):
        cuabi.ProgramCache(str(tmp_path), max_bytes=0)
    with pytest.raises(ValueError, match="empty"):
        cuabi.ProgramCache("")
    assert repr(cuabi.ProgramCache(os.fspath(tmp_path))).startswith("<cuabi.ProgramCache ")
    assert cuabi.ProgramCache(str(tmp_path / "none")).entries() == []


def _have_nvrtc():
    try:
        cuabi.nvrtc_version()
        return True
    except cuabi.NVRTCError:
        return False


@pytest.mark.skipif(not _have_nvrtc(), reason="NVRTC not installed here")
@pytest.mark.parametrize("name", [n for n in RENDERED if n not in ("arch", "extra")])
def test_each_field_is_an_option_the_real_nvrtc_accepts(name, tmp_path, monkeypatch):
    """The real NVRTC compiles with each field set alone: every spelling is one NVRTC knows."""
    monkeypatch.chdir(tmp_path)
    src = 'extern "C" __global__ void k(float *p) { p[0] = 1.0f; }'
    value = RENDERED[name][0]
    arch, target, headers = "sm_90", "ptx", {"p.h": "#define P 1\n"}
    if name in ("link_time_optimization", "gen_opt_lto"):
        target = "ltoir"
    elif name == "device_float128":
        arch = "sm_100"  # NVRTC allows __float128 from sm_100 on
    elif name == "pch_dir":
        value = str(tmp_path)
    elif name == "use_pch":  # a header made first, then used
        cuabi.Program(src, name="k.cu").compile(cuabi.ProgramOptions(create_pch="b.pch"), arch=arch)
    obj = cuabi.Program(src, name="k.cu", headers=headers).compile(cuabi.ProgramOptions(**{name: value}),
                                                                   arch=arch, target=target)
    assert obj.kind == target and len(obj.code) > 100

# SPDX-License-Identifier: Apache-2.0
"""cuabi.nvrtc, cuabi.nvjitlink, cuabi.nvvm and cuabi.nvml: the generated low-level
modules of the library families, on the families' fake libraries (tests/fake/family.c).

A process loads each family's library once, so every case runs in an interpreter
of its own with the family's variable (CUABI_LIBNVRTC, ...) pointing at a fake.
"""

import json
import os

import pytest

from conftest import FAMILIES, FAMILY_ENV, ROOT, _fake_family, run_json, run_py

TABLE = os.path.join(ROOT, "include", "cuabi", "driver_api.json")


def _fake(family, variant=""):
    path = _fake_family(family, variant)
    if path is None:
        pytest.fail("libfake%s%s.so not built: cmake --build build" % (family, variant))
    return path


def _env(family, variant="", **extra):
    """The family's variable at its fake; the other families' unset."""
    env = {FAMILY_ENV[family]: _fake(family, variant)}
    env.update(extra)
    return env


def _drop(family):
    return [v for f, v in FAMILY_ENV.items() if f != family]


# Every function, called through the module with distinct argument values on the
# fake in record mode: the fake saw the symbol libcuabi pins (library_symbol) and
# every input's bits; outputs came back from the cells; a non-zero status became
# the family's error with that code; a returned string came back decoded.
PASS_THROUGH = r'''
import ctypes, json, sys
import cuabi
from cuabi import errors
family, fake, table = sys.argv[1], sys.argv[2], sys.argv[3]
mod = __import__("cuabi." + family, fromlist=["x"])
lib = ctypes.CDLL(fake)

class Call(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 96), ("requested_version", ctypes.c_int),
                ("requested_flags", ctypes.c_ulonglong), ("impl_version", ctypes.c_int),
                ("per_thread", ctypes.c_int), ("nargs", ctypes.c_uint),
                ("signature", ctypes.c_char * 33), ("args", ctypes.c_uint64 * 32)]

with open(table) as f:
    fam = json.load(f)["families"][family]
masks = {"i": 0xFFFFFFFF, "I": 0xFFFFFFFF, "q": 2**64 - 1, "Q": 2**64 - 1, "z": 2**64 - 1,
         "p": 2**64 - 1, "B": 0xFF, "H": 0xFFFF}
bad, calls, raised = [], 0, 0
err_cls = errors.FAMILY_ERRORS[family]
for ep in fam["functions"]:
    name = ep["name"]
    fn = getattr(mod, name)
    args, expect = [], {}
    inout = []
    for k, p in enumerate(ep["params"]):
        if p["direction"] == "out":
            continue
        letter = p["code"]
        value = (0x10 + 0x101 * (k + 1) + len(name)) & masks.get(letter, 0xFF)
        if letter == "f" or letter == "d":
            value = float(k) + 0.5
        args.append(value)
        if p["direction"] == "inout":
            inout.append(value)
        else:
            expect[k] = value
    for result in (0, 5):
        lib.fakefam_record_set_result(result)
        try:
            out = fn(*args)
        except err_cls as e:
            if result == 0 or e.code != 5 or e.function != name:
                bad.append("%s: raised %r for result %d" % (name, e, result))
            raised += 1
        else:
            if result == 5 and ep["returns"]["code"] != "p":
                bad.append("%s: no error for result 5" % name)
            if ep["returns"]["code"] == "p" and out != "fakefam:" + ep["library_symbol"]:
                bad.append("%s: returned %r" % (name, out))
            outs = out if isinstance(out, tuple) else (out,)
            if inout and not set(inout) <= set(outs):
                bad.append("%s: in-out values %r did not come back in %r" % (name, inout, out))
        calls += 1
        c = Call()
        lib.fakefam_record_last(ctypes.byref(c))
        if c.name.decode() != ep["library_symbol"]:
            bad.append("%s: the fake saw %s" % (name, c.name.decode()))
            continue
        if c.nargs != len(ep["params"]):
            bad.append("%s: %d arguments arrived" % (name, c.nargs))
        for k, value in expect.items():
            letter = ep["params"][k]["code"]
            got = c.args[k]
            if letter in "fd":
                import struct
                got = struct.unpack("<f" if letter == "f" else "<d",
                                    got.to_bytes(8, "little")[:4 if letter == "f" else 8])[0]
            elif letter == "i":
                value = value & 0xFFFFFFFF
            if got != value:
                bad.append("%s: argument %d (%s) arrived as %r, not %r" % (name, k, ep["params"][k]["name"], got, value))
        for k, p in enumerate(ep["params"]):
            if p["direction"] in ("out", "inout") and c.args[k] == 0:
                bad.append("%s: output %s passed as NULL" % (name, p["name"]))
print(json.dumps({"bad": bad, "calls": calls, "raised": raised, "functions": len(fam["functions"])}))
'''


@pytest.mark.parametrize("family", FAMILIES)
def test_every_function_passes_through(family):
    """Every function reaches its pinned symbol with its inputs unchanged; a failing status raises the family's error."""
    rc, out, err = run_py("import sys; sys.argv = ['x', %r, %r, %r]\n" % (family, _fake(family), TABLE)
                          + PASS_THROUGH, env=_env(family, FAKEFAM_MODE="record"), drop=_drop(family))
    assert rc == 0, err
    res = json.loads(out.strip().splitlines()[-1])
    assert res["bad"] == []
    assert res["calls"] == 2 * res["functions"] and res["functions"] > 10
    with open(TABLE) as f:
        fns = json.load(f)["families"][family]["functions"]
    assert res["raised"] == sum(1 for ep in fns if ep["returns"]["code"] != "p")


def test_modules_wrap_the_whole_table():
    """Each module's entry_points() are exactly its family's functions in the table."""
    import cuabi

    with open(TABLE) as f:
        fams = json.load(f)["families"]
    for family in FAMILIES:
        mod = getattr(cuabi, family)
        assert mod.entry_points() == sorted(ep["name"] for ep in fams[family]["functions"])
        assert mod.FAMILY == family


def test_enums_and_constants():
    """Enum types, their members and the header's constants are module attributes."""
    from cuabi import nvjitlink, nvml, nvrtc

    assert nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION == 6
    assert nvrtc.NVRTC_ERROR_COMPILATION is nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION
    assert nvrtc.nvrtcResult.__module__ == "cuabi.nvrtc"
    assert nvjitlink.NVJITLINK_INPUT_LTOIR == nvjitlink.nvJitLinkInputType.NVJITLINK_INPUT_LTOIR
    assert nvml.NVML_DEVICE_UUID_V2_BUFFER_SIZE == 96
    assert nvml.NVML_TEMPERATURE_GPU == 0
    assert "nvmlDeviceGetCount" in dir(nvml) and "NVML_SUCCESS" in dir(nvml)
    with pytest.raises(AttributeError, match="cuabi.nvml.*nvmlNoSuchThing"):
        nvml.nvmlNoSuchThing


def test_importing_loads_nothing():
    """Importing the family modules opens no library, not even libcuabi."""
    res = run_json("""
        import json, sys
        import cuabi.nvrtc, cuabi.nvjitlink, cuabi.nvvm, cuabi.nvml
        from cuabi import _backend
        print(json.dumps([_backend.loaded_backend() is None, "cuabi._family_tables" in sys.modules]))
    """)
    assert res == [True, False]


FIRST_CALL = {"nvrtc": "nvrtcVersion", "nvjitlink": "nvJitLinkVersion", "nvvm": "nvvmVersion",
              "nvml": "nvmlInit"}


@pytest.mark.parametrize("family,code,name", [
    ("nvrtc", 100009, "CUABI_ERROR_LIBRARY_MISSING"), ("nvjitlink", 100009, "CUABI_ERROR_LIBRARY_MISSING"),
    ("nvvm", 100009, "CUABI_ERROR_LIBRARY_MISSING"), ("nvml", 12, "NVML_ERROR_LIBRARY_NOT_FOUND")])
def test_missing_library_says_what_was_tried(family, code, name):
    """An absent library raises the family's error with its answer code and libcuabi's report."""
    res = run_json("""
        import json
        import cuabi
        from cuabi import %s as m
        try:
            getattr(m, %r)()
        except cuabi.FamilyError as e:
            print(json.dumps([type(e).__name__, e.code, e.name, str(e), e.report, m.library_path()]))
    """ % (family, FIRST_CALL[family]), env={FAMILY_ENV[family]: "/nonexistent/cuabi-test/libmissing.so"}, drop=_drop(family))
    cls, got_code, got_name, msg, report, path = res
    assert cls == {"nvrtc": "NVRTCError", "nvjitlink": "NVJitLinkError", "nvvm": "NVVMError",
                   "nvml": "NVMLError"}[family]
    assert (got_code, got_name) == (code, name)
    assert "/nonexistent/cuabi-test/libmissing.so" in msg and "what to do" in msg
    assert report and "/nonexistent/cuabi-test/libmissing.so" in report
    assert path is None


def test_relative_variable_is_refused():
    """A relative CUABI_LIBNVVM is reported as a bad environment setting, with the fix."""
    res = run_json("""
        import json
        import cuabi
        from cuabi import nvvm
        try:
            nvvm.nvvmVersion()
        except cuabi.NVVMError as e:
            print(json.dumps([e.code, e.name, str(e)]))
    """, env={"CUABI_LIBNVVM": "libnvvm.so.4"})
    assert res[:2] == [100006, "CUABI_ERROR_BAD_ENVIRONMENT"]
    assert "CUABI_LIBNVVM" in res[2] and "absolute" in res[2]


def test_function_missing_from_an_older_library():
    """A function the loaded library lacks raises its own clear error; the rest works."""
    res = run_json("""
        import json
        import cuabi
        from cuabi import nvrtc
        try:
            nvrtc.nvrtcGetTileIRSize(1)
        except cuabi.NVRTCError as e:
            print(json.dumps([e.code, e.name, str(e), nvrtc.nvrtcVersion()]))
    """, env=_env("nvrtc", "_partial"), drop=_drop("nvrtc"))
    assert res[0] == 100011 and res[1] == "CUABI_ERROR_FUNCTION_MISSING"
    assert "nvrtcGetTileIRSize" in res[2] and "newer NVRTC" in res[2]
    assert res[3] == [13, 5]


def test_load_library_from_a_path():
    """load_library(path) loads that file; bad, second and missing paths are refused with what to do."""
    fake = _fake("nvjitlink")
    res = run_json("""
        import json, sys
        import cuabi
        from cuabi import nvjitlink
        out = []
        for bad in (5, "libnvJitLink.so.13"):
            try:
                nvjitlink.load_library(bad)
            except (TypeError, ValueError) as e:
                out.append(str(e))
        out.append(nvjitlink.load_library(%r))
        out.append(nvjitlink.library_path())
        out.append(nvjitlink.load_library(%r))
        try:
            nvjitlink.load_library("/elsewhere/libnvJitLink.so.13")
        except cuabi.NVJitLinkError as e:
            out.append(str(e))
        out.append(nvjitlink.nvJitLinkVersion())
        print(json.dumps(out))
    """ % (fake, fake), drop=list(FAMILY_ENV.values()))
    assert "got int" in res[0] and "absolute path" in res[1]
    assert res[2] == res[3] == res[4] == fake
    assert "already loaded" in res[5] and "before the first" in res[5]
    assert res[6] == [13, 5]
    res = run_json("""
        import json
        import cuabi
        from cuabi import nvvm
        try:
            nvvm.load_library("/nonexistent/cuabi-test/libnvvm.so.4")
        except cuabi.NVVMError as e:
            print(json.dumps([e.code, e.function, e.report is not None]))
    """, drop=list(FAMILY_ENV.values()))
    assert res == [100009, "load_library", True]


def _pathfinder(tmp_path, body):
    """A stand-in cuda.pathfinder package on PYTHONPATH."""
    pkg = tmp_path / "cuda" / "pathfinder"
    pkg.mkdir(parents=True)
    (tmp_path / "cuda" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(body)
    return str(tmp_path)


def test_pathfinder_path_is_handed_to_libcuabi(tmp_path):
    """Without the variable, what cuda.pathfinder finds is the library libcuabi loads."""
    fake = _fake("nvrtc")
    extra = _pathfinder(tmp_path, (
        "class _L:\n    abs_path = %r\n"
        "asked = []\n"
        "def load_nvidia_dynamic_lib(name):\n    asked.append(name)\n    return _L()\n" % fake))
    res = run_json("""
        import json, sys
        sys.path.insert(0, %r)
        from cuda import pathfinder
        from cuabi import nvrtc
        print(json.dumps([nvrtc.nvrtcVersion(), nvrtc.library_path(), pathfinder.asked]))
    """ % extra, drop=list(FAMILY_ENV.values()))
    assert res == [[13, 5], fake, ["nvrtc"]]


def test_variable_wins_over_pathfinder(tmp_path):
    """CUABI_LIBNVRTC set: cuda.pathfinder is not asked, and the report says why."""
    extra = _pathfinder(tmp_path, "asked = []\n"
                                  "def load_nvidia_dynamic_lib(name):\n    asked.append(name)\n    raise OSError(name)\n")
    res = run_json("""
        import json, sys
        sys.path.insert(0, %r)
        from cuda import pathfinder
        from cuabi import nvrtc
        print(json.dumps([nvrtc.nvrtcVersion(), nvrtc.library_path(), pathfinder.asked,
                          nvrtc.library_report().splitlines()[-1]]))
    """ % extra, env=_env("nvrtc"), drop=_drop("nvrtc"))
    assert res == [[13, 5], _fake("nvrtc"), [], "(Python layer) CUABI_LIBNVRTC is set: libcuabi uses it"]


def test_pathfinder_failure_is_in_the_error(tmp_path):
    """What cuda.pathfinder answered when it found nothing ends the report (and the load error)."""
    extra = _pathfinder(tmp_path, (
        "class DynamicLibNotFoundError(RuntimeError):\n    pass\n"
        "def load_nvidia_dynamic_lib(name):\n    raise DynamicLibNotFoundError('no wheel has ' + name)\n"))
    rc, out, err = run_py("""
        import sys
        sys.path.insert(0, %r)
        import cuabi
        from cuabi import nvvm
        print(nvvm.library_report())
        if nvvm.library_status():
            try:
                nvvm.nvvmVersion()
            except cuabi.NVVMError as e:
                print(str(e))
    """ % extra, drop=list(FAMILY_ENV.values()))
    assert rc == 0, err
    assert "cuabi 1.1" in out and "loading NVVM" in out
    assert "(Python layer) cuda.pathfinder: DynamicLibNotFoundError: no wheel has nvvm" in out


@pytest.mark.parametrize("family", FAMILIES)
def test_the_stub_types_every_function_as_the_module_defines_it(family):
    """The family's .pyi declares each of its functions with the wrapper's parameters."""
    import ast
    import importlib
    import inspect

    module = importlib.import_module("cuabi." + family)
    with open(os.path.splitext(module.__file__)[0] + ".pyi") as f:
        stub = {node.name: [a.arg for a in node.args.args]
                for node in ast.parse(f.read()).body if isinstance(node, ast.FunctionDef)}
    loading = {"load_library", "library_status", "library_report", "library_path", "entry_points",
               "__getattr__"}
    assert loading <= set(stub)
    assert set(stub) - loading == set(module.entry_points())
    for name in module.entry_points():
        assert stub[name] == list(inspect.signature(getattr(module, name)).parameters), name

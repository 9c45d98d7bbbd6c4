#!/usr/bin/env python3
"""Build the cffi backend modules of the cuabi package.

* ``cuabi/_cuabi_cffi.py``: cffi's out-of-line ABI mode.  The C declarations
  are parsed here, once, and written as cffi's compact tables, so importing the
  module parses nothing.  Needs cffi (and pycparser) at build time only; no
  compiler.
* ``cuabi/_cuabi_cffi_api.*.so`` (with ``--compiled``): cffi's API mode,
  compiled.  Calls skip libffi.  The module does not link against libcuabi:
  it reaches the library through a table of function pointers filled with
  ``dlsym`` from the copy the package opened (``cuabi_py_bind``), so the
  library search stays the same for every backend.

Usage: ``python python/build_ext.py [--compiled] [--outdir DIR]`` (default
output: ``python/cuabi``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CDEF_DRIVER = os.path.join(HERE, "cdef", "driver.h")
FAST1 = os.path.join(HERE, "cdef", "fast1.txt")
_CELL = {"i": "int32_t", "I": "uint32_t", "q": "int64_t", "Q": "uint64_t", "z": "size_t",
         "p": "uintptr_t", "B": "uint8_t", "H": "uint16_t"}

OWN_CDEF = """
uint32_t cuabi_version(void);
int cuabi_load(const char *path);
int cuabi_driver_status(void);
const char *cuabi_driver_report(void);
const char *cuabi_driver_path(void);
int cuabi_driver_version(int *version);
int cuabi_set_default_stream_mode(int per_thread);
int cuabi_default_stream_mode(void);
int cuabi_get_proc(const char *name, int cuda_version, uint64_t flags, uintptr_t *fn);
int cuabi_call(const char *name, int cuda_version, const char *signature, void *const *args);
const char *cuabi_error_name(int code);
const char *cuabi_error_string(int code);
int cuabi_launch_packed(uintptr_t f, uintptr_t stream, const void *packet, size_t packet_size);
"""

_DECL = re.compile(r"^(?P<ret>[\w\s\*]+?)\s*\b(?P<name>cuabi_\w+)\((?P<args>[^)]*)\);\s*$")


def cdef_text():
    with open(CDEF_DRIVER) as f:
        driver = f.read()
    return OWN_CDEF + driver


def build_abi(outdir):
    import cffi

    ffibuilder = cffi.FFI()
    ffibuilder.cdef(cdef_text())
    ffibuilder.set_source("cuabi._cuabi_cffi", None)
    target = os.path.join(outdir, "_cuabi_cffi.py")
    tmp = target + ".tmp"
    ffibuilder.emit_python_code(tmp)
    os.replace(tmp, target)
    return target


def _functions(text):
    """Parse our own simple one-line declarations: [(ret, name, [argtypes])]."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(("int ", "uint32_t ", "const char *")):
            continue
        m = _DECL.match(line)
        if not m:
            continue
        args = [a.strip() for a in m.group("args").split(",")]
        if args == ["void"]:
            args = []
        out.append((m.group("ret").strip(), m.group("name"), args))
    return out


def _strip_name(arg):
    # "const char *path" -> "const char *"; "uintptr_t f" -> "uintptr_t"
    m = re.match(r"^(.*?[\s\*])(\w+)$", arg)
    if m and m.group(1).strip() and not arg.endswith("*"):
        base = m.group(1).strip()
        if base in ("const", "unsigned", "struct"):
            return arg
        return base
    return arg


def compiled_source(text):
    """C source for the API-mode module: trampolines through a bound table."""
    lines = [
        "#include <dlfcn.h>",
        "#include <stdint.h>",
        "#include <stddef.h>",
    ]
    for line in text.splitlines():
        if line.startswith("typedef struct"):
            lines.append(line)
    funcs = _functions(text)
    missing = 100004  # CUABI_ERROR_ENTRY_POINT_NOT_FOUND
    for ret, name, args in funcs:
        types = [_strip_name(a) for a in args]
        params = ", ".join("%s a%d" % (t, i) for i, t in enumerate(types)) or "void"
        names = ", ".join("a%d" % i for i in range(len(types)))
        proto = ", ".join(types) or "void"
        lines.append("static %s (*p_%s)(%s);" % (ret, name, proto))
        if ret == "int":
            fallback = "return %d;" % missing
        elif ret == "uint32_t":
            fallback = "return 0;"
        else:
            fallback = 'return "cuabi: symbol missing from libcuabi";'
        unused = "".join("(void)a%d; " % i for i in range(len(types)))
        lines.append("static %s %s(%s) { if (p_%s) return p_%s(%s); %s%s }"
                     % (ret, name, params, name, name, names, unused, fallback))
    # one-output fast path: return the output itself, or a sentinel when the call
    # failed (the status is then in a thread-local, read by cuabi_py_last_rc)
    lines.append("static __thread int cuabi_py_rc;")
    lines.append("static int cuabi_py_last_rc(void) { return cuabi_py_rc; }")
    for name, k, letter, ret, params in _fast1(funcs):
        cell = _CELL[letter]
        sentinel = "UINT64_MAX" if ret == "uint64_t" else "INT64_MIN"
        decl = ", ".join("%s a%d" % (t, i) for i, t in enumerate(params) if i != k) or "void"
        args = ", ".join("(void *)&o" if i == k else "a%d" % i for i in range(len(params)))
        # the thread-local is written only when the sentinel is returned
        lines.append("static %s cuabi_py1_%s(%s) { %s o = 0; int rc = %s; "
                     "if (rc) { cuabi_py_rc = rc; return %s; } "
                     "if ((%s)o == %s) cuabi_py_rc = 0; return (%s)o; }"
                     % (ret, name, decl, cell, "p_cuabi_%s ? p_cuabi_%s(%s) : %d" % (name, name, args, missing),
                        sentinel, ret, sentinel, ret))
    lines.append("static int cuabi_py_bind(const char *path) {")
    lines.append("    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);")
    lines.append("    if (!h) return 1;")
    for ret, name, args in funcs:
        lines.append('    *(void **)&p_%s = dlsym(h, "%s");' % (name, name))
    lines.append("    return p_cuabi_call && p_cuabi_launch_packed ? 0 : 2;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _fast1(funcs):
    """[(name, out index, letter, return type, param types)] from cdef/fast1.txt."""
    by_name = {n[len("cuabi_"):]: [_strip_name(a) for a in args] for _r, n, args in funcs}
    out = []
    with open(FAST1) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, k, letter = line.split()
            params = by_name.get(name)
            if params is None:
                continue
            ret = "uint64_t" if letter in "Qzp" else "int64_t"
            out.append((name, int(k), letter, ret, params))
    return out


def fast1_cdef(text):
    lines = ["int cuabi_py_last_rc(void);"]
    for name, k, _letter, ret, params in _fast1(_functions(text)):
        rest = ", ".join(t for i, t in enumerate(params) if i != k) or "void"
        lines.append("%s cuabi_py1_%s(%s);" % (ret, name, rest))
    return "\n".join(lines) + "\n"


def build_compiled(outdir):
    import cffi

    text = cdef_text()
    ffibuilder = cffi.FFI()
    ffibuilder.cdef(text + "\nint cuabi_py_bind(const char *path);\n" + fast1_cdef(text))
    ffibuilder.set_source("cuabi._cuabi_cffi_api", compiled_source(text), libraries=["dl"],
                          extra_compile_args=["-O2", "-w"])
    with tempfile.TemporaryDirectory() as tmp:
        built = ffibuilder.compile(tmpdir=tmp, verbose=False)
        name = os.path.basename(built)
        target = os.path.join(outdir, name)
        shutil.copyfile(built, target + ".tmp")
        os.replace(target + ".tmp", target)
    return target


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outdir", default=os.path.join(HERE, "cuabi"))
    ap.add_argument("--compiled", action="store_true",
                    help="also build the compiled API-mode module (needs a C compiler)")
    args = ap.parse_args(argv)
    print(build_abi(args.outdir))
    if args.compiled:
        print(build_compiled(args.outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

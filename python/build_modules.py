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
* ``cuabi/_cuabi_speedups.*.so`` (with ``--compiled``, on CPython): the
  speedups module, ``python/speedups/speedups.c`` plus a ``getters.h``
  generated here from ``cdef/fast_getters.txt``: C functions for the
  one-output getters and for kernel launches (python/speedups/speedups.c says
  more).

Usage: ``python python/build_modules.py [--compiled] [--outdir DIR]`` (default
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
FAST = os.path.join(HERE, "cdef", "fast_getters.txt")
SPEEDUPS_C = os.path.join(HERE, "speedups", "speedups.c")
INCLUDE = os.path.join(os.path.dirname(HERE), "include")

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
    lines.append("static int cuabi_py_bind(const char *path) {")
    lines.append("    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);")
    lines.append("    if (!h) return 1;")
    for ret, name, args in funcs:
        lines.append('    *(void **)&p_%s = dlsym(h, "%s");' % (name, name))
    lines.append("    return p_cuabi_call && p_cuabi_launch_packed ? 0 : 2;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def build_compiled(outdir):
    import cffi

    text = cdef_text()
    ffibuilder = cffi.FFI()
    ffibuilder.cdef(text + "\nint cuabi_py_bind(const char *path);\n")
    ffibuilder.set_source("cuabi._cuabi_cffi_api", compiled_source(text), libraries=["dl"],
                          extra_compile_args=["-O2", "-w"])
    with tempfile.TemporaryDirectory() as tmp:
        built = ffibuilder.compile(tmpdir=tmp, verbose=False)
        name = os.path.basename(built)
        target = os.path.join(outdir, name)
        shutil.copyfile(built, target + ".tmp")
        os.replace(target + ".tmp", target)
    return target


# -- the speedups module ---------------------------------------------------------------

# C type of a value parameter -> (converter, bound arguments)
_RANGES = {
    "int32_t": ("signed", "INT32_MIN, INT32_MAX"), "int64_t": ("signed", "INT64_MIN, INT64_MAX"),
    "uint32_t": ("unsigned", "UINT32_MAX"), "uint64_t": ("unsigned", "UINT64_MAX"),
    "size_t": ("unsigned", "SIZE_MAX"), "uint8_t": ("unsigned", "UINT8_MAX"),
    "uint16_t": ("unsigned", "UINT16_MAX"), "uintptr_t": ("unsigned", "UINTPTR_MAX"),
}
# output letter -> (C type of the cell, PyLong constructor)
_OUTS = {
    "i": ("int32_t", "PyLong_FromLongLong"), "q": ("int64_t", "PyLong_FromLongLong"),
    "I": ("uint32_t", "PyLong_FromUnsignedLongLong"), "Q": ("uint64_t", "PyLong_FromUnsignedLongLong"),
    "z": ("size_t", "PyLong_FromUnsignedLongLong"), "p": ("uintptr_t", "PyLong_FromUnsignedLongLong"),
    "B": ("uint8_t", "PyLong_FromLongLong"), "H": ("uint16_t", "PyLong_FromLongLong"),
}


def fast_getters():
    """[(name, out index, out letter, kinds, hold_gil, input names)] from cdef/fast_getters.txt."""
    out = []
    with open(FAST) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, k, letter, kinds, gil, names = line.split()
            out.append((name, int(k), letter, kinds, gil == "hold",
                        [] if names == "-" else names.split(",")))
    return out


def getters_source(text):
    """getters.h for speedups.c: one METH_FASTCALL function per fast getter."""
    types = {n[len("cuabi_"):]: [_strip_name(a) for a in args] for _r, n, args in _functions(text)}
    L = ["/* GENERATED by python/build_modules.py from python/cdef/fast_getters.txt and",
         "   python/cdef/driver.h, at build time. Do not edit. */",
         "struct getter {",
         "    const char *name, *symbol;",
         "    void **slot;",
         "    PyObject *(*function)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);",
         "};", ""]
    table = []
    for name, k, letter, kinds, hold, names in fast_getters():
        ctypes_ = types[name]
        if len(ctypes_) != len(kinds) or len(names) != len(kinds) - 1:
            raise SystemExit("build_modules: %s: fast_getters.txt does not match driver.h" % name)
        n = len(names)
        cell, make = _OUTS[letter]
        proto = ", ".join(ctypes_)
        L.append("static void *p_%s;" % name)
        if n:
            L.append("static const char *const n_%s[] = { %s };"
                     % (name, ", ".join('"%s"' % x for x in names)))
        L.append("static PyObject *g_%s(PyObject *self, PyObject *const *args, Py_ssize_t nargs, "
                 "PyObject *kwnames)" % name)
        L.append("{")
        L.append("    (void)self;")
        if n:
            L.append("    PyObject *argv[%d];" % n)
            L.append('    TAKE_ARGS("%s", n_%s, %d, argv);' % (name, name, n))
        else:
            L.append("    (void)args;")
            L.append("    if (nargs != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {")
            L.append('        PyErr_SetString(PyExc_TypeError, "%s() takes no arguments");' % name)
            L.append("        return NULL;")
            L.append("    }")
        keeps = [i for i, c in enumerate(kinds) if c in "as"]
        if keeps:
            L.append("    PyObject *keep[%d] = { NULL };" % len(keeps))
        L.append("    PyObject *result = NULL;")
        call, j = [], 0
        for i, (c, ct) in enumerate(zip(kinds, ctypes_)):
            if c == "o":
                call.append("&out")
                continue
            pname = names[j]
            j += 1
            if c == "v":
                conv, bounds = _RANGES[ct]
                var = "int64_t" if conv == "signed" else "uint64_t"
                L.append("    %s a%d;" % (var, i))
                L.append('    if (arg_%s(argv[%d], %s, &a%d, "%s", "%s") < 0)'
                         % (conv, j - 1, bounds, i, name, pname))
                L.append("        goto done;")
                call.append("(%s)a%d" % (ct, i))
            else:
                conv = "to_address" if c == "a" else "to_cstring"
                L.append("    uint64_t a%d;" % i)
                L.append('    if (arg_pointer(argv[%d], %s, &a%d, &keep[%d], "%s", "%s") < 0)'
                         % (j - 1, conv, i, keeps.index(i), name, pname))
                L.append("        goto done;")
                call.append("(%s)a%d" % (ct, i))
        L.append("    %s out = 0;" % cell)
        L.append("    int rc;")
        fn = "((int (*)(%s))p_%s)" % (proto, name)
        if hold:
            L.append("    rc = %s(%s);" % (fn, ", ".join(call)))
        else:
            L.append("    Py_BEGIN_ALLOW_THREADS")
            L.append("    rc = %s(%s);" % (fn, ", ".join(call)))
            L.append("    Py_END_ALLOW_THREADS")
        L.append("    if (rc != 0)")
        L.append('        fail(rc, "%s");' % name)
        L.append("    else")
        L.append("        result = %s(out);" % make)
        L.append("    goto done;")
        L.append("done:")
        for x in range(len(keeps)):
            L.append("    Py_XDECREF(keep[%d]);" % x)
        L.append("    return result;")
        L.append("}")
        L.append("")
        table.append('    { "%s", "cuabi_%s", &p_%s, g_%s },' % (name, name, name, name))
    L.append("static const struct getter getters[] = {")
    L.extend(table)
    L.append("    { NULL, NULL, NULL, NULL },")
    L.append("};")
    return "\n".join(L) + "\n"


def build_speedups(outdir):
    """Compile cuabi._cuabi_speedups (CPython only) into outdir."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "getters.h"), "w") as f:
            f.write(getters_source(cdef_text()))
        ext = Extension("cuabi._cuabi_speedups", [SPEEDUPS_C], include_dirs=[tmp, INCLUDE],
                        libraries=["dl"], extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra",
                                                              "-Wno-missing-field-initializers"])
        dist = Distribution({"name": "cuabi", "ext_modules": [ext]})
        cmd = build_ext(dist)
        cmd.build_lib = os.path.join(tmp, "lib")
        cmd.build_temp = os.path.join(tmp, "obj")
        cmd.ensure_finalized()
        cmd.run()
        built = cmd.get_ext_fullpath(ext.name)
        target = os.path.join(outdir, os.path.basename(built))
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
        if sys.implementation.name == "cpython":
            print(build_speedups(args.outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

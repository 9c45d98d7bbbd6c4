/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi._cuabi_speedups - compiled fast paths for CPython.
 *
 * Built by `python/build_modules.py --compiled` next to cffi's compiled module and
 * used with the cffi backend when present; every backend works without it.  It
 * does two things that cffi cannot do cheaply:
 *
 *  1. Getters.  The driver entry points with a single output (listed in
 *     python/cdef/fast_getters.txt) become METH_FASTCALL functions that convert
 *     their arguments, call libcuabi and return the output, raising the same
 *     cuabi.CUDAError as the Python wrappers on failure.  Their bodies are
 *     generated (getters.h, written by build_modules.py at build time); the pure
 *     getters of cuabi._signature.GIL_HELD run without releasing the GIL, the
 *     others release it around the call.
 *  2. Launches.  launch() is cuabi.launch: the same five steps as the Python
 *     cuabi._launch.python_launch (stream, kernel and layout, packet, driver
 *     call, error), with the packet on the C stack and cuabi_launch_packed
 *     called with the GIL released: one crossing, no Python object made per
 *     launch.  A Layout (make_layout) describes one kernel signature and
 *     keeps the last launch's packed arguments: an argument given as the
 *     same int, float or bytes object (or the same buffer, holding the same
 *     address) as last time is not converted again.
 *
 * Its contract with the package (python/cuabi/_compiled.py says it in full):
 * everything it uses is handed to it.  bind() gives the library and the Python
 * helpers; register_launch() gives a cuabi._compiled.LaunchContract naming the
 * classes the launch reads and, for each, the __slots__ attribute it may read
 * on objects of exactly that class (a slot is a pointer at a fixed offset in
 * the object, measured here once per named slot, see slot_offset(): a load
 * instead of an attribute lookup).  Objects of any other class go through the
 * contract's Python functions.
 *
 * It uses only CPython's Limited API at the level of 3.10 (build_modules.py
 * defines Py_LIMITED_API), so one file serves every CPython from 3.10: the
 * wheel's cp310-abi3 (docs/python.md, "The compiled tier and the stable ABI").
 * So: functions instead of the macros that read object internals, type names
 * through __name__, a heap type for Layout, float16 packed here.
 *
 * The module reaches libcuabi through function pointers that bind() fills
 * with dlsym from the copy the package opened, so the library search stays
 * the package's.  It keeps that state, the Python helpers and the contract in
 * file-scope variables rather than module state: they are written under the
 * GIL before any function here uses them, and the module uses single-phase
 * initialisation, so there is one copy per process.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuabi.h"

/* Python 3.12 names the member types Py_T_*; older versions only T_* (in
 * structmember.h, whose PyMemberDef and constants the Limited API includes). */
#ifndef Py_T_PYSSIZET
#include <structmember.h>
#define Py_T_PYSSIZET T_PYSSIZET
#define Py_READONLY READONLY
#endif

/* 64-bit integer reads: where long is 64 bits, PyLong_As(Unsigned)Long has a
 * much cheaper path than the LongLong variants of older CPythons. */
#if ULONG_MAX == UINT64_MAX
#define AS_U64 PyLong_AsUnsignedLong
#define AS_I64 PyLong_AsLong
#else
#define AS_U64 PyLong_AsUnsignedLongLong
#define AS_I64 PyLong_AsLongLong
#endif

/* Python helpers, set by bind(). */
static PyObject *raise_for;   /* cuabi._own_api.raise_for(code, function): raises */
static PyObject *to_address;  /* cuabi._address.address(obj) -> (address, keepalive) */
static PyObject *to_cstring;  /* cuabi._address.cstring(obj) -> (address, keepalive) */
static int bound;

/* ------------------------------------------------------------ conversions */

/* The name of o's type, for messages (PyTypeObject is opaque in the Limited
 * API): a new reference, NULL only when memory runs out. */
static PyObject *type_name(PyObject *o)
{
    PyObject *n = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__name__");
    if (n == NULL) {
        PyErr_Clear();
        n = PyUnicode_FromString("?");
    }
    return n;
}

/* Raises the CUDAError subclass for code; returns NULL for the caller. */
static PyObject *fail(int code, const char *function)
{
    PyObject *r = PyObject_CallFunction(raise_for, "is", code, function);
    if (r != NULL) { /* raise_for always raises; be safe if it did not */
        Py_DECREF(r);
        PyErr_Format(PyExc_RuntimeError, "%s failed with code %d", function, code);
    }
    return NULL;
}

/* Integer reads shared by the getters and the launcher: an int, or an object
 * with __index__, checked against lo..hi.  They return INT_OK, or INT_NOT_INT
 * (no integer) or INT_RANGE (out of range) with the error cleared, for the
 * caller to report in its own words. */
enum { INT_OK = 0, INT_NOT_INT = 1, INT_RANGE = 2 };

static int read_signed(PyObject *o, int64_t lo, int64_t hi, int64_t *out)
{
    long long v;
    if (PyLong_CheckExact(o) || PyLong_Check(o)) { /* the exact test is a compare, the other a call */
        v = AS_I64(o);
    } else {
        PyObject *i = PyNumber_Index(o);
        if (i == NULL) {
            PyErr_Clear();
            return INT_NOT_INT;
        }
        v = AS_I64(i);
        Py_DECREF(i);
    }
    if ((v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
        PyErr_Clear();
        return INT_RANGE;
    }
    *out = v;
    return INT_OK;
}

static int read_unsigned(PyObject *o, uint64_t hi, uint64_t *out)
{
    unsigned long long v;
    if (PyLong_CheckExact(o) || PyLong_Check(o)) {
        v = AS_U64(o);
    } else {
        PyObject *i = PyNumber_Index(o);
        if (i == NULL) {
            PyErr_Clear();
            return INT_NOT_INT;
        }
        v = AS_U64(i);
        Py_DECREF(i);
    }
    if ((v == (unsigned long long)-1 && PyErr_Occurred()) || v > hi) {
        PyErr_Clear();
        return INT_RANGE;
    }
    *out = v;
    return INT_OK;
}

/* An integer argument of a getter, as the cffi backend accepts it: TypeError
 * or OverflowError naming the function and parameter otherwise. */
static int arg_int_error(int r, PyObject *o, const char *function, const char *param,
                         const char *range)
{
    if (r == INT_NOT_INT) {
        PyObject *t = type_name(o);
        if (t != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.100U", function, param, t);
            Py_DECREF(t);
        }
    } else
        PyErr_Format(PyExc_OverflowError, "%s: %s does not fit in %s", function, param, range);
    return -1;
}

static int arg_signed(PyObject *o, int64_t lo, int64_t hi, int64_t *out, const char *function,
                      const char *param)
{
    int r = read_signed(o, lo, hi, out);
    if (r == INT_OK)
        return 0;
    char range[48];
    snprintf(range, sizeof range, "%lld..%lld", (long long)lo, (long long)hi);
    return arg_int_error(r, o, function, param, range);
}

static int arg_unsigned(PyObject *o, uint64_t hi, uint64_t *out, const char *function,
                        const char *param)
{
    int r = read_unsigned(o, hi, out);
    if (r == INT_OK)
        return 0;
    char range[48];
    snprintf(range, sizeof range, "0..%llu", (unsigned long long)hi);
    return arg_int_error(r, o, function, param, range);
}

/* A pointer argument: an exact int is the address itself; anything else goes
 * through the Python converter (conv), whose keepalive the caller holds in
 * *keep until the native call has returned. */
static int arg_pointer(PyObject *o, PyObject *conv, uint64_t *out, PyObject **keep,
                       const char *function, const char *param)
{
    if (PyLong_CheckExact(o))
        return arg_unsigned(o, UINT64_MAX, out, function, param);
    PyObject *r = PyObject_CallFunctionObjArgs(conv, o, NULL);
    if (r == NULL)
        return -1;
    if (!PyTuple_Check(r) || PyTuple_Size(r) != 2) {
        Py_DECREF(r);
        PyErr_Format(PyExc_SystemError, "%s: the address converter returned a bad value", function);
        return -1;
    }
    if (arg_unsigned(PyTuple_GetItem(r, 0), UINT64_MAX, out, function, param) < 0) {
        Py_DECREF(r);
        return -1;
    }
    *keep = r;
    return 0;
}

/* Positional and keyword arguments into argv[n], in parameter order. */
static int take_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *function,
                     const char *const *names, Py_ssize_t n, PyObject **argv)
{
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", function, n, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        argv[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *key = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(kwnames, k), NULL);
        if (key == NULL)
            return -1;
        Py_ssize_t i = 0;
        while (i < n && strcmp(names[i], key) != 0)
            i++;
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", function, key);
            return -1;
        }
        if (argv[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", function, key);
            return -1;
        }
        argv[i] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (argv[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[i]);
            return -1;
        }
    }
    return 0;
}

/* Fast path of take_args: only positional arguments, exactly n of them. */
#define TAKE_ARGS(function, names, n, argv) \
    do { \
        if (kwnames == NULL && nargs == (n)) { \
            for (Py_ssize_t i_ = 0; i_ < (n); i_++) \
                (argv)[i_] = args[i_]; \
        } else if (take_args(args, nargs, kwnames, function, names, n, argv) < 0) { \
            return NULL; \
        } \
    } while (0)

/* The generated getters: p_<name> pointers, g_<name> functions, getters[]. */
#include "getters.h"

/* ----------------------------------------------------------------- launches */

static CUresult (*launch_packed)(CUfunction, CUstream, const void *, size_t);

/* One kernel parameter: its code (cuabi._kernel_args.packing), offset in the
 * parameter block and size in bytes. */
struct param {
    char code;
    size_t offset;
    size_t size;
};

/* How one kernel signature's arguments are packed: made by make_layout(),
 * held by the kernels with that signature (Kernel._layout). */
typedef struct {
    PyObject_HEAD
    Py_ssize_t nparams;
    Py_ssize_t size; /* header + parameter block */
    struct param *params;
    /* The last LaunchConfig seen and its header: configs are immutable, and
     * launching with the same one again is the common case.  The reference
     * keeps the object (and so its address) from being reused. */
    PyObject *last_config;
    cuabi_launch_header last_header;
    int last_extended;
    /* The parameter block of the last launch, and for each parameter the
     * object its bytes were made from when that object fixes them by its
     * identity (see cache_key()), holding a reference so that no other
     * object can take its address; NULL otherwise.  A launch that is given
     * the same object again skips converting it.  Only one launch at a time
     * uses them (in_use, under the GIL): a launch that finds them in use
     * packs every argument afresh into its own packet. */
    unsigned char *block;
    PyObject **block_from;
    int in_use;
} Layout;

/* The Layout class: a heap type (PyType_FromSpec), made by the module's
 * initialisation. */
static PyObject *LayoutType;

#define MAX_MEMORY_TYPES 8

/* The launch contract: a cuabi._compiled.LaunchContract, as register_launch()
 * found it (its field names, with offsets for the slot names).  Written under
 * the GIL, only read by launch(). */
struct contract {
    PyObject *stream_type;
    Py_ssize_t stream_slot;
    PyObject *stream_handle;
    PyObject *kernel_type;
    Py_ssize_t kernel_handle_slot;
    Py_ssize_t kernel_layout_slot;
    PyObject *infer_layout;
    PyObject *memory_types; /* a tuple of at most MAX_MEMORY_TYPES classes */
    Py_ssize_t n_memory;
    PyObject *memory[MAX_MEMORY_TYPES]; /* its items (borrowed from it), for the launch path */
    Py_ssize_t memory_slots[MAX_MEMORY_TYPES];
    PyObject *device_pointer;
    PyObject *config_type;
    PyObject *config_header;   /* an attribute name */
    PyObject *config_extended; /* an attribute name */
    PyObject *launch_extended;
    PyObject *closed_error;
};

static struct contract contract;
static PyObject *str_name;

/* The object in obj's slot at offset (borrowed), for obj of the class the
 * offset was taken from; NULL with AttributeError when the slot is unset. */
static PyObject *read_slot(PyObject *obj, Py_ssize_t offset)
{
    PyObject *v = *(PyObject **)((char *)obj + offset);
    if (v == NULL) {
        PyObject *t = type_name(obj);
        if (t != NULL) {
            PyErr_Format(PyExc_AttributeError, "%.100U object has an unset slot that cuabi.launch reads", t);
            Py_DECREF(t);
        }
    }
    return v;
}

/* The offset of the object slot `name` in instances of exactly class type;
 * -1 with TypeError when it is not one.
 *
 * The full API reads it from the member descriptor (d_member->offset), which
 * the Limited API does not show, so it is measured.  The class attribute must
 * be a member descriptor (PyMemberDescr_Type, which the Limited API does
 * export): what __slots__ makes, and what nothing else in a Python class is.
 * A marker object is stored through the descriptor (its __set__, so the
 * descriptor checks that it applies to the class and holds any object) into a
 * fresh instance made by object.__new__ (no __init__ runs), and the one
 * pointer-sized word of the instance's __basicsize__ bytes that holds the
 * marker is the slot; no such word, or more than one, refuses the name.  The
 * slot is then deleted again, leaving the instance as object.__new__ made it
 * (every slot unset), which any finalizer of the class already has to accept
 * from an __init__ that failed early. */
static Py_ssize_t slot_offset(PyObject *type, PyObject *name)
{
    Py_ssize_t offset = -1, found = 0, basicsize = -1;
    PyObject *d = NULL, *size = NULL, *inst = NULL, *marker = NULL, *r = NULL;
    if (!PyType_Check(type) || !PyUnicode_Check(name))
        goto refuse;
    d = PyObject_GetAttr(type, name);
    if (d == NULL) {
        PyErr_Clear();
        goto refuse;
    }
    if ((PyObject *)Py_TYPE(d) != (PyObject *)&PyMemberDescr_Type)
        goto refuse;
    size = PyObject_GetAttrString(type, "__basicsize__");
    basicsize = size == NULL ? -1 : PyLong_AsSsize_t(size);
    if (basicsize < 0)
        goto error;
    inst = PyObject_CallMethod((PyObject *)&PyBaseObject_Type, "__new__", "O", type);
    marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (inst == NULL || marker == NULL)
        goto error;
    r = PyObject_CallMethod(d, "__set__", "OO", inst, marker);
    if (r == NULL) {
        /* a member that holds no object (a C type's int member) or is read-only */
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_AttributeError))
            goto error;
        PyErr_Clear();
        goto refuse;
    }
    Py_CLEAR(r);
    for (Py_ssize_t at = 0; at + (Py_ssize_t)sizeof(PyObject *) <= basicsize; at += sizeof(PyObject *)) {
        if (*(PyObject **)((char *)inst + at) == marker) {
            offset = at;
            found++;
        }
    }
    r = PyObject_CallMethod(d, "__delete__", "O", inst);
    if (r == NULL)
        goto error;
    if (found != 1)
        goto refuse;
    goto done;
refuse:
    offset = -1;
    PyErr_Format(PyExc_TypeError, "register_launch: %R.%S is not a __slots__ attribute", type, name);
    goto done;
error:
    offset = -1;
done:
    Py_XDECREF(d);
    Py_XDECREF(size);
    Py_XDECREF(inst);
    Py_XDECREF(marker);
    Py_XDECREF(r);
    return offset;
}

static int bad_argument(PyObject *kernel, Py_ssize_t i, const char *why)
{
    PyObject *name = PyObject_GetAttr(kernel, str_name);
    if (name == NULL)
        return -1;
    PyErr_Format(PyExc_TypeError, "bad argument for kernel %R: argument %zd %s", name, i + 1, why);
    Py_DECREF(name);
    return -1;
}

/* A kernel's integer argument: bad_argument's TypeError when it is no
 * integer or out of range for the parameter. */
static int pack_int_error(int r, PyObject *kernel, Py_ssize_t i)
{
    return bad_argument(kernel, i, r == INT_NOT_INT ? "must be an integer" : "is out of range for its type");
}

static int pack_double(PyObject *o, double *v, PyObject *kernel, Py_ssize_t i)
{
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return bad_argument(kernel, i, "must be a number");
    }
    *v = d;
    return 0;
}

/* d as an IEEE 754 binary16 in *out, rounded to nearest even, as
 * struct.pack("e") does (PyFloat_Pack2 is not in the Limited API); -1 when a
 * finite d is too large for it. */
static int pack_half(double d, uint16_t *out)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d)) {
        *out = sign | 0x7e00;
        return 0;
    }
    if (isinf(d) || a == 0.0) {
        *out = sign | (a == 0.0 ? 0 : 0x7c00);
        return 0;
    }
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): a = 2f * 2^(e-1) */
    if (e < -13) {           /* below 2^-14: a subnormal, in units of 2^-24 (1024 rounds to the smallest normal) */
        *out = sign | (uint16_t)rint(ldexp(a, 24));
        return 0;
    }
    double m = rint(ldexp(f, 11)); /* 1024 .. 2048: the implicit bit and 10 bits */
    int biased = e + 14;
    if (m == 2048.0) {
        m = 1024.0;
        biased++;
    }
    if (biased >= 31)
        return -1;
    *out = sign | (uint16_t)(biased << 10) | (uint16_t)((int)m - 1024);
    return 0;
}

/* An integer parameter of p->size bytes, signed for the lower-case codes. */
static int pack_integer(const struct param *p, PyObject *o, unsigned char *dst, PyObject *kernel,
                        Py_ssize_t i)
{
    unsigned bits = 8 * (unsigned)p->size;
    uint64_t u = 0;
    int r;
    if (p->code >= 'a' && p->code <= 'z') {
        int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1, s = 0;
        r = read_signed(o, -hi - 1, hi, &s);
        u = (uint64_t)s;
    } else {
        r = read_unsigned(o, bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1, &u);
    }
    if (r != INT_OK)
        return pack_int_error(r, kernel, i);
    /* stored through a value of the parameter's width, so the byte order is the host's */
    switch (bits) {
    case 8: { uint8_t v = (uint8_t)u; memcpy(dst, &v, 1); break; }
    case 16: { uint16_t v = (uint16_t)u; memcpy(dst, &v, 2); break; }
    case 32: { uint32_t v = (uint32_t)u; memcpy(dst, &v, 4); break; }
    default: memcpy(dst, &u, 8); break;
    }
    return 0;
}

/* The int that holds a pointer argument's address without calling into
 * Python (borrowed): an exact int itself, or the slot of one of the
 * contract's memory classes; NULL for anything else, and for freed memory
 * (its slot holds None: the contract's device_pointer raises). */
static PyObject *address_int(PyObject *o)
{
    if (PyLong_CheckExact(o))
        return o;
    for (Py_ssize_t k = 0; k < contract.n_memory; k++) {
        if ((PyObject *)Py_TYPE(o) == contract.memory[k]) {
            PyObject *h = *(PyObject **)((char *)o + contract.memory_slots[k]);
            return h != NULL && PyLong_CheckExact(h) ? h : NULL;
        }
    }
    return NULL;
}

/* The object that fixes the bytes argument o packs to by its identity
 * (borrowed): o itself when it is an exact int, bool, float or bytes (their
 * values never change), for a pointer the int in a cuabi memory object's
 * slot; NULL for anything else, which is converted at every launch. */
static PyObject *cache_key(const struct param *p, PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || t == &PyBytes_Type)
        return o;
    return p->code == 'p' ? address_int(o) : NULL;
}

/* Writes argument i into dst per p->code; same rules as struct.pack with the
 * code, except that a struct given as bytes must have exactly its size. */
static int pack_one(const struct param *p, PyObject *o, unsigned char *dst, PyObject *kernel, Py_ssize_t i)
{
    uint64_t u;
    double d;
    switch (p->code) {
    case 'p': { /* pointer: an int, cuabi memory, or what the contract's device_pointer
                 * understands (it also raises for closed memory) */
        PyObject *owned = NULL, *a = address_int(o);
        if (a == NULL) {
            a = owned = PyObject_CallFunctionObjArgs(contract.device_pointer, o, NULL);
            if (a == NULL)
                return -1;
        }
        int r = read_unsigned(a, UINT64_MAX, &u);
        Py_XDECREF(owned);
        if (r != INT_OK)
            return pack_int_error(r, kernel, i);
        memcpy(dst, &u, 8);
        return 0;
    }
    case 'b': case 'B': case 'h': case 'H': case 'i': case 'I': case 'q': case 'Q':
        return pack_integer(p, o, dst, kernel, i);
    case '?': {
        int t = PyObject_IsTrue(o);
        if (t < 0)
            return -1;
        *dst = (unsigned char)t;
        return 0;
    }
    case 'f': {
        if (pack_double(o, &d, kernel, i) < 0)
            return -1;
        float f = (float)d;
        if (isinf(f) && isfinite(d))
            return bad_argument(kernel, i, "is out of range for float32");
        memcpy(dst, &f, 4);
        return 0;
    }
    case 'd':
        if (pack_double(o, &d, kernel, i) < 0)
            return -1;
        memcpy(dst, &d, 8);
        return 0;
    case 'e': {
        uint16_t h;
        if (pack_double(o, &d, kernel, i) < 0)
            return -1;
        if (pack_half(d, &h) < 0)
            return bad_argument(kernel, i, "is out of range for float16");
        memcpy(dst, &h, 2);
        return 0;
    }
    case 's': /* a struct passed by value, given as bytes of its exact size */
        if (PyBytes_Check(o) && (size_t)PyBytes_Size(o) == p->size) {
            memcpy(dst, PyBytes_AsString(o), p->size);
            return 0;
        }
        if (PyByteArray_Check(o) && (size_t)PyByteArray_Size(o) == p->size) {
            memcpy(dst, PyByteArray_AsString(o), p->size);
            return 0;
        }
        {
            char why[96];
            snprintf(why, sizeof why, "must be bytes of the struct's size (%zu)", p->size);
            return bad_argument(kernel, i, why);
        }
    default:
        PyErr_Format(PyExc_SystemError, "unknown kernel parameter code %c", p->code);
        return -1;
    }
}

/* Reads a launch config's header tuple (grid, block, shared memory, 0) and
 * whether it needs launch_extended, into the layout's cache. */
static int read_config(Layout *self, PyObject *config)
{
    if ((PyObject *)Py_TYPE(config) != contract.config_type) {
        PyObject *t = type_name(config);
        if (t != NULL) {
            PyErr_Format(PyExc_TypeError, "config must be a LaunchConfig, got %.100U", t);
            Py_DECREF(t);
        }
        return -1;
    }
    PyObject *t = PyObject_GetAttr(config, contract.config_header);
    if (t == NULL)
        return -1;
    uint32_t v[8];
    int ok = PyTuple_Check(t) && PyTuple_Size(t) == 8;
    for (Py_ssize_t i = 0; ok && i < 8; i++) {
        unsigned long x = PyLong_AsUnsignedLong(PyTuple_GetItem(t, i));
        ok = !(x == (unsigned long)-1 && PyErr_Occurred()) && x <= UINT32_MAX;
        v[i] = (uint32_t)x;
    }
    Py_DECREF(t);
    if (!ok) {
        PyErr_Clear();
        PyErr_SetString(PyExc_SystemError, "LaunchConfig has a bad header");
        return -1;
    }
    PyObject *ex = PyObject_GetAttr(config, contract.config_extended);
    if (ex == NULL)
        return -1;
    int extended = PyObject_IsTrue(ex);
    Py_DECREF(ex);
    if (extended < 0)
        return -1;
    memcpy(self->last_header.grid, v, 12);
    memcpy(self->last_header.block, v + 3, 12);
    self->last_header.shared_mem_bytes = v[6];
    self->last_header.reserved = v[7];
    self->last_extended = extended;
    PyObject *previous = self->last_config;
    Py_INCREF(config);
    self->last_config = config;
    Py_XDECREF(previous);
    return 0;
}

/* Raises the error for a kernel: `format` gets the kernel's name (%R). */
static PyObject *kernel_error(PyObject *type, const char *format, PyObject *kernel)
{
    PyObject *name = PyObject_GetAttr(kernel, str_name);
    if (name != NULL) {
        PyErr_Format(type, format, name);
        Py_DECREF(name);
    }
    return NULL;
}

static PyObject *launch_error(int code, PyObject *kernel)
{
    PyObject *name = PyObject_GetAttr(kernel, str_name);
    if (name == NULL)
        return NULL;
    PyObject *what = PyUnicode_FromFormat("cuabi_launch_packed(%U)", name);
    Py_DECREF(name);
    if (what == NULL)
        return NULL;
    PyObject *r = PyObject_CallFunction(raise_for, "iO", code, what);
    Py_DECREF(what);
    Py_XDECREF(r);
    if (r != NULL)
        PyErr_Format(PyExc_RuntimeError, "kernel launch failed with code %d", code);
    return NULL;
}

/* Step 1: the CUstream of stream (None, the contract's stream class, or
 * anything its stream_handle takes). */
static int stream_of(PyObject *stream, uint64_t *out)
{
    if (stream == Py_None) {
        *out = 0;
        return 0;
    }
    PyObject *h;
    if ((PyObject *)Py_TYPE(stream) == contract.stream_type) {
        h = read_slot(stream, contract.stream_slot);
        if (h == NULL)
            return -1;
        if (h == Py_None) {
            PyErr_SetString(contract.closed_error, "Stream is closed");
            return -1;
        }
        Py_INCREF(h);
    } else {
        h = PyObject_CallFunctionObjArgs(contract.stream_handle, stream, NULL);
        if (h == NULL)
            return -1;
    }
    unsigned long long v = AS_U64(h);
    Py_DECREF(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* Step 3's arguments: items[0..nparams) packed into block, -1 with the
 * error of the first bad one.  cached: block is the layout's (the caller
 * holds in_use), and an argument given as the same object as last time is
 * not converted again; otherwise block is zeroed and every one is. */
static inline int pack_args(Layout *self, PyObject *kernel, PyObject *const *items, unsigned char *block, int cached)
{
    for (Py_ssize_t i = 0; i < self->nparams; i++) {
        const struct param *p = &self->params[i];
        PyObject *key = NULL;
        if (cached) {
            if (items[i] == self->block_from[i])
                continue; /* the same int, float or bytes: the block holds its bytes already */
            key = cache_key(p, items[i]);
            if (key != NULL && key == self->block_from[i])
                continue; /* a buffer holding the same address */
            Py_CLEAR(self->block_from[i]); /* an int, float or bytes: no code runs */
        }
        if (pack_one(p, items[i], block + p->offset, kernel, i) < 0)
            return -1;
        if (cached) {
            Py_XINCREF(key);
            self->block_from[i] = key;
        }
    }
    return 0;
}

/* Steps 3 to 5 for kernel (its CUfunction f) with layout on stream:
 * pack items[0..nparams) behind config's header, launch, raise on failure. */
static PyObject *launch_with(Layout *self, PyObject *kernel, uint64_t f, uint64_t stream, PyObject *config,
                             PyObject *const *items)
{
    if (config != self->last_config && read_config(self, config) < 0)
        return NULL;

    /* the packet: on the stack unless the parameters are unusually large; the
     * driver reads this copy with the GIL released, while another thread may
     * be packing the layout's block */
    _Alignas(16) unsigned char local[1024];
    unsigned char *packet = local;
    size_t size = (size_t)self->size, block_size = size - CUABI_LAUNCH_HEADER_SIZE;
    if (size > sizeof local) {
        packet = PyMem_Malloc(size);
        if (packet == NULL)
            return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    if (!self->in_use) {
        /* packing may run Python code (__index__, a foreign array's pointer)
         * that launches with this layout again, here or in another thread */
        self->in_use = 1;
        int r = pack_args(self, kernel, items, self->block, 1);
        self->in_use = 0;
        if (r < 0)
            goto done;
        memcpy(packet + CUABI_LAUNCH_HEADER_SIZE, self->block, block_size);
    } else {
        memset(packet + CUABI_LAUNCH_HEADER_SIZE, 0, block_size); /* padding */
        if (pack_args(self, kernel, items, packet + CUABI_LAUNCH_HEADER_SIZE, 0) < 0)
            goto done;
    }
    memcpy(packet, &self->last_header, sizeof self->last_header);
    int rc;
    if (self->last_extended) {
        /* clusters and cooperative launches: cuLaunchKernelEx, from Python */
        PyObject *params = PyBytes_FromStringAndSize((const char *)packet + CUABI_LAUNCH_HEADER_SIZE,
                                                     (Py_ssize_t)(size - CUABI_LAUNCH_HEADER_SIZE));
        if (params == NULL)
            goto done;
        PyObject *r = PyObject_CallFunction(contract.launch_extended, "KKOO", (unsigned long long)f,
                                            (unsigned long long)stream, config, params);
        Py_DECREF(params);
        if (r == NULL)
            goto done;
        rc = (int)PyLong_AsLong(r);
        Py_DECREF(r);
        if (rc == -1 && PyErr_Occurred())
            goto done;
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = launch_packed((CUfunction)(uintptr_t)f, (CUstream)(uintptr_t)stream, packet, size);
        Py_END_ALLOW_THREADS
    }
    if (rc != 0) {
        launch_error(rc, kernel);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (packet != local)
        PyMem_Free(packet);
    return result;
}

/* launch(stream, config, kernel, *args): cuabi.launch. */
static PyObject *launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 3) {
        PyErr_SetString(PyExc_TypeError, "launch(stream, config, kernel, *args) takes at least 3 arguments");
        return NULL;
    }
    if (contract.kernel_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cuabi._cuabi_speedups: register_launch() was not called");
        return NULL;
    }
    PyObject *config = args[1], *kernel = args[2];
    PyObject *const *items = args + 3;
    Py_ssize_t given = nargs - 3;

    /* 1. the stream */
    uint64_t stream;
    if (stream_of(args[0], &stream) < 0)
        return NULL;

    /* 2. the kernel's function and argument layout */
    if ((PyObject *)Py_TYPE(kernel) != contract.kernel_type) {
        PyObject *t = type_name(kernel);
        if (t != NULL) {
            PyErr_Format(PyExc_TypeError, "kernel must be a cuabi.Kernel, got %.100U", t);
            Py_DECREF(t);
        }
        return NULL;
    }
    PyObject *h = read_slot(kernel, contract.kernel_handle_slot);
    if (h == NULL)
        return NULL;
    if (h == Py_None)
        return kernel_error(contract.closed_error, "Kernel %R is closed (its module was unloaded)", kernel);
    unsigned long long f = AS_U64(h);
    if (f == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    PyObject *layout = read_slot(kernel, contract.kernel_layout_slot);
    if (layout == NULL)
        return NULL;
    if (layout == Py_None) { /* no signature: inferred for this launch */
        PyObject *kargs = PyTuple_New(given);
        if (kargs == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < given; i++) {
            Py_INCREF(items[i]);
            PyTuple_SetItem(kargs, i, items[i]); /* steals the reference */
        }
        layout = PyObject_CallFunctionObjArgs(contract.infer_layout, kernel, kargs, NULL);
        Py_DECREF(kargs);
        if (layout == NULL)
            return NULL;
    } else {
        Py_INCREF(layout); /* packing may run Python code that replaces the kernel's */
    }
    PyObject *result = NULL;
    if ((PyObject *)Py_TYPE(layout) != LayoutType) {
        PyObject *t = type_name(layout);
        if (t != NULL) {
            PyErr_Format(PyExc_TypeError, "the kernel's layout is a %.100U, not a compiled Layout", t);
            Py_DECREF(t);
        }
    } else if (given != ((Layout *)layout)->nparams) {
        PyObject *name = PyObject_GetAttr(kernel, str_name);
        if (name != NULL) {
            PyErr_Format(PyExc_TypeError, "kernel %R takes %zd arguments, %zd given", name,
                         ((Layout *)layout)->nparams, given);
            Py_DECREF(name);
        }
    } else {
        /* 3.-5. the packet, the driver call, a failure status */
        result = launch_with((Layout *)layout, kernel, f, stream, config, items);
    }
    Py_DECREF(layout);
    return result;
}

static void layout_dealloc(PyObject *op)
{
    Layout *self = (Layout *)op;
    PyObject *type = (PyObject *)Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    PyMem_Free(self->params);
    Py_XDECREF(self->last_config);
    for (Py_ssize_t i = 0; i < self->nparams; i++)
        Py_XDECREF(self->block_from[i]);
    PyMem_Free(self->block_from);
    PyMem_Free(self->block);
    PyObject_GC_Del(op);
    Py_DECREF(type); /* instances of a heap type hold a reference to it */
}

static int layout_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op)); /* a heap type: its instances hold it */
    Py_VISIT(((Layout *)op)->last_config);
    return 0;
}

static PyMemberDef layout_members[] = {
    { "nparams", Py_T_PYSSIZET, offsetof(Layout, nparams), Py_READONLY, "number of parameters" },
    { "size", Py_T_PYSSIZET, offsetof(Layout, size), Py_READONLY, "packet size: header and parameters" },
    { NULL, 0, 0, 0, NULL },
};

static PyType_Slot layout_slots[] = {
    { Py_tp_dealloc, (void *)layout_dealloc },
    { Py_tp_traverse, (void *)layout_traverse },
    { Py_tp_members, (void *)layout_members },
    { Py_tp_doc, (void *)"How one kernel signature's arguments are packed; made by make_layout()." },
    { 0, NULL },
};

/* Only make_layout() makes one (a Layout() from Python would have no
 * parameters and size 0, which the launch trusts). */
static PyType_Spec layout_spec = {
    "cuabi._cuabi_speedups.Layout", sizeof(Layout), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION, layout_slots,
};

/* make_layout(items, size): items are cuabi._kernel_args.packing()'s
 * (code, offset, size) per parameter, size the packet's. */
static PyObject *make_layout(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *items;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "O!n:make_layout", &PyTuple_Type, &items, &size))
        return NULL;
    if (size < CUABI_LAUNCH_HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "make_layout: size is smaller than the header");
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(items);
    unsigned char *block = NULL;
    PyObject **block_from = NULL;
    struct param *params = PyMem_Calloc(n ? (size_t)n : 1, sizeof *params);
    if (params == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *code;
        Py_ssize_t off, sz;
        if (!PyArg_ParseTuple(PyTuple_GetItem(items, i), "snn:layout item", &code, &off, &sz))
            goto bad;
        if (strlen(code) != 1 || strchr("pbB?hHiIqQfdes", code[0]) == NULL || off < 0 || sz <= 0
            || (size_t)off + (size_t)sz > (size_t)size - CUABI_LAUNCH_HEADER_SIZE) {
            PyErr_Format(PyExc_ValueError, "make_layout: bad layout item %zd", i);
            goto bad;
        }
        size_t want = strchr("bB?", code[0]) ? 1 : strchr("hHe", code[0]) ? 2
                    : strchr("iIf", code[0]) ? 4 : strchr("qQdp", code[0]) ? 8 : (size_t)sz;
        if ((size_t)sz != want) {
            PyErr_Format(PyExc_ValueError, "make_layout: parameter %zd: code %c takes %zu bytes", i,
                         code[0], want);
            goto bad;
        }
        params[i].code = code[0];
        params[i].offset = (size_t)off;
        params[i].size = (size_t)sz;
    }
    /* zeroed: the padding between parameters stays zero */
    block = PyMem_Calloc((size_t)size - CUABI_LAUNCH_HEADER_SIZE + 1, 1);
    block_from = PyMem_Calloc(n ? (size_t)n : 1, sizeof *block_from);
    if (block == NULL || block_from == NULL) {
        PyErr_NoMemory();
        goto bad;
    }
    Layout *self = PyObject_GC_New(Layout, (PyTypeObject *)LayoutType);
    if (self == NULL)
        goto bad;
    self->nparams = n;
    self->size = size;
    self->params = params;
    self->last_config = NULL;
    self->block = block;
    self->block_from = block_from;
    self->in_use = 0;
    PyObject_GC_Track((PyObject *)self);
    return (PyObject *)self;
bad:
    PyMem_Free(params);
    PyMem_Free(block);
    PyMem_Free(block_from);
    return NULL;
}

/* The contract's field `name` (a new reference), or NULL with an error. */
static PyObject *field(PyObject *c, const char *name)
{
    PyObject *v = PyObject_GetAttrString(c, name);
    if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "register_launch: the contract has no field %s", name);
    }
    return v;
}

static void contract_clear(struct contract *c)
{
    Py_CLEAR(c->stream_type);
    Py_CLEAR(c->stream_handle);
    Py_CLEAR(c->kernel_type);
    Py_CLEAR(c->infer_layout);
    Py_CLEAR(c->memory_types);
    Py_CLEAR(c->device_pointer);
    Py_CLEAR(c->config_type);
    Py_CLEAR(c->config_header);
    Py_CLEAR(c->config_extended);
    Py_CLEAR(c->launch_extended);
    Py_CLEAR(c->closed_error);
}

/* The offset of the slot named by field `slot_field` on class type. */
static Py_ssize_t field_slot(PyObject *c, PyObject *type, const char *slot_field)
{
    PyObject *name = field(c, slot_field);
    if (name == NULL)
        return -1;
    Py_ssize_t offset = slot_offset(type, name);
    Py_DECREF(name);
    return offset;
}

/* register_launch(contract): what launch() reads and calls, as a
 * cuabi._compiled.LaunchContract; replaces an earlier one. */
static PyObject *register_launch(PyObject *module, PyObject *c)
{
    (void)module;
    struct contract n = { 0 };
    if ((n.stream_type = field(c, "stream_type")) == NULL || (n.stream_handle = field(c, "stream_handle")) == NULL
        || (n.kernel_type = field(c, "kernel_type")) == NULL || (n.infer_layout = field(c, "infer_layout")) == NULL
        || (n.memory_types = field(c, "memory_types")) == NULL
        || (n.device_pointer = field(c, "device_pointer")) == NULL
        || (n.config_type = field(c, "config_type")) == NULL || (n.config_header = field(c, "config_header")) == NULL
        || (n.config_extended = field(c, "config_extended")) == NULL
        || (n.launch_extended = field(c, "launch_extended")) == NULL
        || (n.closed_error = field(c, "closed_error")) == NULL)
        goto bad;
    if (!PyType_Check(n.config_type) || !PyUnicode_Check(n.config_header) || !PyUnicode_Check(n.config_extended)) {
        PyErr_SetString(PyExc_TypeError, "register_launch: config_type must be a class, its attributes str");
        goto bad;
    }
    if (!PyExceptionClass_Check(n.closed_error)) {
        PyErr_SetString(PyExc_TypeError, "register_launch: closed_error must be an exception class");
        goto bad;
    }
    if (!PyCallable_Check(n.stream_handle) || !PyCallable_Check(n.infer_layout)
        || !PyCallable_Check(n.device_pointer) || !PyCallable_Check(n.launch_extended)) {
        PyErr_SetString(PyExc_TypeError, "register_launch: stream_handle, infer_layout, device_pointer "
                                         "and launch_extended must be callable");
        goto bad;
    }
    if ((n.stream_slot = field_slot(c, n.stream_type, "stream_slot")) < 0
        || (n.kernel_handle_slot = field_slot(c, n.kernel_type, "kernel_handle_slot")) < 0
        || (n.kernel_layout_slot = field_slot(c, n.kernel_type, "kernel_layout_slot")) < 0)
        goto bad;
    if (!PyTuple_Check(n.memory_types) || PyTuple_Size(n.memory_types) > MAX_MEMORY_TYPES) {
        PyErr_Format(PyExc_TypeError, "register_launch: memory_types must be a tuple of at most %d classes",
                     MAX_MEMORY_TYPES);
        goto bad;
    }
    n.n_memory = PyTuple_Size(n.memory_types);
    for (Py_ssize_t k = 0; k < n.n_memory; k++) {
        n.memory[k] = PyTuple_GetItem(n.memory_types, k);
        if ((n.memory_slots[k] = field_slot(c, n.memory[k], "memory_slot")) < 0)
            goto bad;
    }
    contract_clear(&contract);
    contract = n;
    Py_RETURN_NONE;
bad:
    contract_clear(&n);
    return NULL;
}

/* ------------------------------------------------------------------ module */

/* bind(library_path, raise_for, address, cstring): fills the function
 * pointers from the libcuabi at library_path; once per process. */
static PyObject *bind(PyObject *module, PyObject *args)
{
    (void)module;
    const char *path;
    PyObject *rf, *addr, *cstr;
    if (!PyArg_ParseTuple(args, "sOOO:bind", &path, &rf, &addr, &cstr))
        return NULL;
    if (bound)
        Py_RETURN_NONE;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        PyErr_Format(PyExc_OSError, "cuabi speedups: cannot open %s: %s", path, dlerror());
        return NULL;
    }
    *(void **)&launch_packed = dlsym(lib, "cuabi_launch_packed");
    if (launch_packed == NULL) {
        PyErr_Format(PyExc_OSError, "cuabi speedups: %s does not export cuabi_launch_packed", path);
        return NULL;
    }
    for (const struct getter *g = getters; g->name != NULL; g++)
        *g->slot = dlsym(lib, g->symbol); /* NULL: left to the Python wrapper (older library) */
    Py_INCREF(rf);
    raise_for = rf;
    Py_INCREF(addr);
    to_address = addr;
    Py_INCREF(cstr);
    to_cstring = cstr;
    bound = 1;
    Py_RETURN_NONE;
}

/* function(name, doc): the getter for entry point name, with doc as its
 * docstring (the generated wrapper's, with its text signature); None where
 * this module has none or the library lacks the symbol. */
static PyObject *function(PyObject *module, PyObject *args)
{
    const char *name, *doc;
    if (!PyArg_ParseTuple(args, "ss:function", &name, &doc))
        return NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "cuabi._cuabi_speedups: bind() was not called");
        return NULL;
    }
    for (const struct getter *g = getters; g->name != NULL; g++) {
        if (strcmp(g->name, name) != 0)
            continue;
        if (*g->slot == NULL)
            Py_RETURN_NONE;
        /* one method definition per entry point, for the life of the process
         * (the function object points at it) */
        PyMethodDef *def = PyMem_Malloc(sizeof *def);
        char *text = PyMem_Malloc(strlen(doc) + 1);
        if (def == NULL || text == NULL) {
            PyMem_Free(def);
            PyMem_Free(text);
            return PyErr_NoMemory();
        }
        strcpy(text, doc);
        def->ml_name = g->name;
        def->ml_meth = (PyCFunction)(void (*)(void))g->function;
        def->ml_flags = METH_FASTCALL | METH_KEYWORDS;
        def->ml_doc = text;
        PyObject *modname = PyUnicode_FromString("cuabi.driver");
        if (modname == NULL)
            return NULL;
        PyObject *f = PyCFunction_NewEx(def, module, modname);
        Py_DECREF(modname);
        return f;
    }
    Py_RETURN_NONE;
}


static PyMethodDef methods[] = {
    { "bind", bind, METH_VARARGS, "bind(library_path, raise_for, address, cstring)" },
    { "function", function, METH_VARARGS, "function(name, doc): the compiled getter, or None" },
    { "make_layout", make_layout, METH_VARARGS,
      "make_layout(items, size): the Layout of a kernel signature (cuabi._kernel_args.packing)" },
    { "register_launch", register_launch, METH_O,
      "register_launch(contract): what launch() reads and calls (cuabi._compiled.LaunchContract)" },
    { "launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
      "launch(stream, config, kernel, *args)\n--\n\n"
      "Launch kernel with config on stream (None: the NULL stream).  The compiled form of\n"
      "cuabi.launch; see its documentation." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "cuabi._cuabi_speedups",
    "cuabi's compiled fast paths for CPython (see python/speedups/speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cuabi_speedups(void)
{
    if (LayoutType == NULL && (LayoutType = PyType_FromSpec(&layout_spec)) == NULL)
        return NULL;
    str_name = PyUnicode_InternFromString("name");
    if (str_name == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}

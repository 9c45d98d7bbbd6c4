/*
 * cuabi._cuabi_speedups - compiled fast paths for CPython.
 *
 * Built by `python/build_modules.py --compiled` next to cffi's compiled module and
 * used by the cffi backend when present; every backend works without it.  It
 * does two things that cffi cannot do cheaply:
 *
 *  1. Getters.  The driver entry points with a single output (listed in
 *     python/cdef/fast_getters.txt) become METH_FASTCALL functions that convert
 *     their arguments, call libcuabi and return the output, raising the same
 *     cuabi.CUDAError as the Python wrappers on failure.  Their bodies are
 *     generated (getters.h, written by build_modules.py at build time); the pure
 *     getters of cuabi._sig.GIL_HELD run without releasing the GIL, the others
 *     release it around the call.
 *  2. Launches.  A Launcher packs a kernel's arguments, per its parameter
 *     signature, into a packet on the C stack and calls cuabi_launch_packed
 *     with the GIL released: one crossing, no Python object made per launch.
 *     launch() (cuabi.launch) and kernel_launch (Kernel.launch) find the
 *     stream's handle and the kernel's launcher by reading cuabi's __slots__
 *     directly (see `known` below).
 *
 * The module reaches libcuabi through function pointers that bind() fills
 * with dlsym from the copy the package opened, so the library search stays
 * the package's.  It keeps that state (and the Python helpers it calls back
 * into) in file-scope variables rather than module state: they are written
 * once by bind(), under the GIL, before any function here can run, and only
 * read afterwards; the module uses single-phase initialisation, so there is
 * one copy per process.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuabi.h"

/* Python 3.12 names the member types Py_T_*; older versions only T_*. */
#ifndef Py_T_OBJECT_EX
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
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
static PyObject *raise_for;   /* cuabi._driver_rt.raise_for(code, function): raises */
static PyObject *to_address;  /* cuabi._ptr.address(obj) -> (address, keepalive) */
static PyObject *to_cstring;  /* cuabi._ptr.cstring(obj) -> (address, keepalive) */
static int bound;

/* ------------------------------------------------------------ conversions */

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
    if (PyLong_Check(o)) {
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
    if (PyLong_Check(o)) {
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
    if (r == INT_NOT_INT)
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.100s", function, param,
                     Py_TYPE(o)->tp_name);
    else
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
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
        Py_DECREF(r);
        PyErr_Format(PyExc_SystemError, "%s: the address converter returned a bad value", function);
        return -1;
    }
    if (arg_unsigned(PyTuple_GET_ITEM(r, 0), UINT64_MAX, out, function, param) < 0) {
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
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
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

/* ---------------------------------------------------------------- launcher */

static CUresult (*launch_packed)(CUfunction, CUstream, const void *, size_t);

/* One kernel parameter: its struct code (see cuabi._module), offset in the
 * parameter buffer and size in bytes. */
struct param {
    char code;
    size_t offset;
    size_t size;
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t nparams;
    size_t size; /* header + parameter buffer */
    struct param *params;
    PyObject *kernel_pointer; /* _module._kernel_pointer(obj) -> int */
    PyObject *closed_error;   /* cuabi.errors.ClosedError */
    PyObject *config_type;    /* cuabi.LaunchConfig */
    PyObject *launch_ex;      /* _module._launch_ex(f, stream, config, params) -> rc */
    /* The last LaunchConfig seen and its header: configs are immutable, and
     * launching with the same one again is the common case.  The reference
     * keeps the object (and so its address) from being reused. */
    PyObject *last_config;
    cuabi_launch_header last_header;
    int last_extended;
} Launcher;

static PyObject *str_h, *str_name, *str_hdr, *str_ex, *str_go;

/* What configure_launch() tells the launch path about cuabi's classes.  The
 * attributes a launch reads (Stream._h, Kernel._h, Kernel._go, a buffer's _h)
 * are __slots__, and for an object of exactly the class configured a slot is
 * a pointer at a fixed offset in the object, taken once from the class's
 * member descriptor: a load instead of an attribute lookup.  Any other object,
 * and every launch before configure_launch() ran, takes the ordinary lookup.
 * Written once, under the GIL, then only read. */
static struct {
    PyObject *stream_type;     /* cuabi.Stream */
    PyObject *stream_handle;   /* cuabi._core.stream_handle(obj) -> int */
    PyObject *kernel_type;     /* cuabi.Kernel */
    PyObject *closed_error;    /* cuabi.errors.ClosedError */
    PyObject *memory_types;    /* tuple of the classes whose kernel address is their _h */
    Py_ssize_t resource_h;     /* offset of Resource._h: Stream and the memory classes */
    Py_ssize_t kernel_h;       /* offset of Kernel._h */
    Py_ssize_t kernel_go;      /* offset of Kernel._go */
} known = { NULL, NULL, NULL, NULL, NULL, -1, -1, -1 };

/* obj.<name>, read straight from its slot (at offset) when obj's class is
 * exactly type, else looked up.  A new reference, or NULL with an error. */
static PyObject *slot_or_attr(PyObject *obj, PyObject *type, Py_ssize_t offset, PyObject *name)
{
    if (offset >= 0 && (PyObject *)Py_TYPE(obj) == type) {
        PyObject *v = *(PyObject **)((char *)obj + offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(obj, name); /* also raises AttributeError for an unset slot */
}

/* The offset of the object slot `name` of class type; -1 with an error when
 * it is not one. */
static Py_ssize_t slot_offset(PyObject *type, const char *name)
{
    PyObject *d = PyObject_GetAttrString(type, name);
    Py_ssize_t offset = -1;
    if (d == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    } else {
        if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            if (m->type == Py_T_OBJECT_EX)
                offset = m->offset;
        }
        Py_DECREF(d);
    }
    if (offset < 0)
        PyErr_Format(PyExc_TypeError, "%R.%s is not a __slots__ attribute", type, name);
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
    double d = PyFloat_Check(o) ? PyFloat_AS_DOUBLE(o) : PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return bad_argument(kernel, i, "must be a number");
    }
    *v = d;
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
    uint8_t v8 = (uint8_t)u;
    uint16_t v16 = (uint16_t)u;
    uint32_t v32 = (uint32_t)u;
    const void *src = bits == 8 ? (const void *)&v8 : bits == 16 ? (const void *)&v16
                    : bits == 32 ? (const void *)&v32 : (const void *)&u;
    memcpy(dst, src, p->size);
    return 0;
}

/* The int that holds a pointer argument's address without calling into
 * Python (borrowed): an exact int itself, or the handle of cuabi's own open
 * memory; NULL for anything else. */
static PyObject *address_int(PyObject *o)
{
    if (PyLong_CheckExact(o))
        return o;
    if (known.memory_types != NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(known.memory_types); k++) {
            if ((PyObject *)Py_TYPE(o) == PyTuple_GET_ITEM(known.memory_types, k)) {
                PyObject *h = *(PyObject **)((char *)o + known.resource_h);
                return h != NULL && PyLong_CheckExact(h) ? h : NULL; /* closed: None */
            }
        }
    }
    return NULL;
}

/* Writes argument i into dst per p->code; same rules as struct.pack with the
 * code, except that a struct given as bytes must have exactly its size. */
static int pack_one(const Launcher *self, const struct param *p, PyObject *o, unsigned char *dst,
                    PyObject *kernel, Py_ssize_t i)
{
    uint64_t u;
    double d;
    switch (p->code) {
    case 'p': { /* pointer: an int, cuabi memory, or what the Python helper understands
                 * (cuabi._module._kernel_pointer, which also raises for closed memory) */
        PyObject *owned = NULL, *a = address_int(o);
        if (a == NULL) {
            a = owned = PyObject_CallFunctionObjArgs(self->kernel_pointer, o, NULL);
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
    case 'e':
        if (pack_double(o, &d, kernel, i) < 0)
            return -1;
#if PY_VERSION_HEX >= 0x030B0000
        if (PyFloat_Pack2(d, (char *)dst, PY_LITTLE_ENDIAN) < 0) {
#else
        if (_PyFloat_Pack2(d, dst, PY_LITTLE_ENDIAN) < 0) {
#endif
            PyErr_Clear();
            return bad_argument(kernel, i, "is out of range for float16");
        }
        return 0;
    case 's': /* a struct passed by value, given as bytes of its exact size */
        if (PyBytes_Check(o) && (size_t)PyBytes_GET_SIZE(o) == p->size) {
            memcpy(dst, PyBytes_AS_STRING(o), p->size);
            return 0;
        }
        if (PyByteArray_Check(o) && (size_t)PyByteArray_GET_SIZE(o) == p->size) {
            memcpy(dst, PyByteArray_AS_STRING(o), p->size);
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

/* Reads a LaunchConfig's header tuple (grid, block, shared memory, 0) and
 * whether it needs cuLaunchKernelEx, into the launcher's cache. */
static int read_config(Launcher *self, PyObject *config)
{
    if ((PyObject *)Py_TYPE(config) != self->config_type) {
        PyErr_Format(PyExc_TypeError, "config must be a LaunchConfig, got %.100s", Py_TYPE(config)->tp_name);
        return -1;
    }
    PyObject *t = PyObject_GetAttr(config, str_hdr);
    if (t == NULL)
        return -1;
    uint32_t v[8];
    int ok = PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 8;
    for (Py_ssize_t i = 0; ok && i < 8; i++) {
        unsigned long x = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(t, i));
        ok = !(x == (unsigned long)-1 && PyErr_Occurred()) && x <= UINT32_MAX;
        v[i] = (uint32_t)x;
    }
    Py_DECREF(t);
    if (!ok) {
        PyErr_Clear();
        PyErr_SetString(PyExc_SystemError, "LaunchConfig has a bad header");
        return -1;
    }
    PyObject *ex = PyObject_GetAttr(config, str_ex);
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
    Py_INCREF(config);
    Py_XSETREF(self->last_config, config);
    return 0;
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

static PyObject *kernel_closed(PyObject *closed_error, PyObject *kernel)
{
    PyObject *name = PyObject_GetAttr(kernel, str_name);
    if (name != NULL) {
        PyErr_Format(closed_error, "Kernel %R is closed (its module was unloaded)", name);
        Py_DECREF(name);
    }
    return NULL;
}

/* Packs items[0..nparams) behind config's header and launches kernel on
 * stream: the body of every launch through this module. */
static PyObject *launcher_run(Launcher *self, PyObject *kernel, uint64_t stream, PyObject *config,
                              PyObject *const *items)
{
    PyObject *h = slot_or_attr(kernel, known.kernel_type, known.kernel_h, str_h);
    if (h == NULL)
        return NULL;
    if (h == Py_None) {
        Py_DECREF(h);
        return kernel_closed(self->closed_error, kernel);
    }
    unsigned long long f = AS_U64(h);
    Py_DECREF(h);
    if (f == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (config != self->last_config && read_config(self, config) < 0)
        return NULL;

    /* the packet: on the stack unless the parameters are unusually large */
    _Alignas(16) unsigned char local[1024];
    unsigned char *packet = local;
    if (self->size > sizeof local) {
        packet = PyMem_Malloc(self->size);
        if (packet == NULL)
            return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    memcpy(packet, &self->last_header, sizeof self->last_header);
    memset(packet + CUABI_LAUNCH_HEADER_SIZE, 0, self->size - CUABI_LAUNCH_HEADER_SIZE); /* padding */
    for (Py_ssize_t i = 0; i < self->nparams; i++) {
        const struct param *p = &self->params[i];
        if (pack_one(self, p, items[i], packet + CUABI_LAUNCH_HEADER_SIZE + p->offset, kernel, i) < 0)
            goto done;
    }
    int rc;
    if (self->last_extended) {
        /* clusters and cooperative launches: cuLaunchKernelEx, from Python */
        PyObject *params = PyBytes_FromStringAndSize((const char *)packet + CUABI_LAUNCH_HEADER_SIZE,
                                                     (Py_ssize_t)(self->size - CUABI_LAUNCH_HEADER_SIZE));
        if (params == NULL)
            goto done;
        PyObject *r = PyObject_CallFunction(self->launch_ex, "KKOO", f, (unsigned long long)stream,
                                            config, params);
        Py_DECREF(params);
        if (r == NULL)
            goto done;
        rc = (int)PyLong_AsLong(r);
        Py_DECREF(r);
        if (rc == -1 && PyErr_Occurred())
            goto done;
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = launch_packed((CUfunction)(uintptr_t)f, (CUstream)(uintptr_t)stream, packet, self->size);
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

/* launcher(kernel, stream_handle, config, args): the same contract as the
 * Python launchers of cuabi._module. */
static PyObject *launcher_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Launcher *self = (Launcher *)op;
    if (PyVectorcall_NARGS(nargsf) != 4 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "launcher(kernel, stream, config, args)");
        return NULL;
    }
    PyObject *kargs = args[3];
    if (!PyTuple_Check(kargs) || PyTuple_GET_SIZE(kargs) != self->nparams) {
        PyErr_Format(PyExc_TypeError, "kernel takes %zd arguments", self->nparams);
        return NULL;
    }
    unsigned long long stream = AS_U64(args[1]);
    if (stream == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    return launcher_run(self, args[0], stream, args[2], &PyTuple_GET_ITEM(kargs, 0));
}

static void launcher_dealloc(PyObject *op)
{
    Launcher *self = (Launcher *)op;
    PyObject_GC_UnTrack(op);
    PyMem_Free(self->params);
    Py_XDECREF(self->kernel_pointer);
    Py_XDECREF(self->closed_error);
    Py_XDECREF(self->config_type);
    Py_XDECREF(self->launch_ex);
    Py_XDECREF(self->last_config);
    PyObject_GC_Del(op);
}

static int launcher_traverse(PyObject *op, visitproc visit, void *arg)
{
    Launcher *self = (Launcher *)op;
    Py_VISIT(self->kernel_pointer);
    Py_VISIT(self->closed_error);
    Py_VISIT(self->config_type);
    Py_VISIT(self->launch_ex);
    Py_VISIT(self->last_config);
    return 0;
}

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cuabi._cuabi_speedups.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = launcher_dealloc,
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = launcher_traverse,
    .tp_doc = "Packs a kernel's arguments and launches it; made by make_launcher().",
};

/* make_launcher(layout, size, kernel_pointer, ClosedError, LaunchConfig, launch_ex) */
static PyObject *make_launcher(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *layout, *kp, *closed, *config_type, *launch_ex;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "O!nOOOO:make_launcher", &PyTuple_Type, &layout, &size, &kp, &closed,
                          &config_type, &launch_ex))
        return NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "cuabi._cuabi_speedups: bind() was not called");
        return NULL;
    }
    if (size < CUABI_LAUNCH_HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "make_launcher: size is smaller than the header");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(layout);
    struct param *params = PyMem_Calloc(n ? (size_t)n : 1, sizeof *params);
    if (params == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *code;
        Py_ssize_t off, sz;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(layout, i), "snn:layout item", &code, &off, &sz))
            goto bad;
        if (strlen(code) != 1 || strchr("pbB?hHiIqQfdes", code[0]) == NULL || off < 0 || sz <= 0
            || (size_t)off + (size_t)sz > (size_t)size - CUABI_LAUNCH_HEADER_SIZE) {
            PyErr_Format(PyExc_ValueError, "make_launcher: bad layout item %zd", i);
            goto bad;
        }
        size_t want = strchr("bB?", code[0]) ? 1 : strchr("hHe", code[0]) ? 2
                    : strchr("iIf", code[0]) ? 4 : strchr("qQdp", code[0]) ? 8 : (size_t)sz;
        if ((size_t)sz != want) {
            PyErr_Format(PyExc_ValueError, "make_launcher: parameter %zd: code %c takes %zu bytes", i,
                         code[0], want);
            goto bad;
        }
        params[i].code = code[0];
        params[i].offset = (size_t)off;
        params[i].size = (size_t)sz;
    }
    Launcher *self = PyObject_GC_New(Launcher, &LauncherType);
    if (self == NULL)
        goto bad;
    self->vectorcall = launcher_call;
    self->nparams = n;
    self->size = (size_t)size;
    self->params = params;
    Py_INCREF(kp);
    self->kernel_pointer = kp;
    Py_INCREF(closed);
    self->closed_error = closed;
    Py_INCREF(config_type);
    self->config_type = config_type;
    Py_INCREF(launch_ex);
    self->launch_ex = launch_ex;
    self->last_config = NULL;
    PyObject_GC_Track((PyObject *)self);
    return (PyObject *)self;
bad:
    PyMem_Free(params);
    return NULL;
}

/* configure_launch(Stream, stream_handle, Kernel, ClosedError, Resource,
 * memory_types): what the module-level launch() needs.  The arguments are
 * checked on every call; only the first call's are kept. */
static PyObject *configure_launch(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *st, *sh, *kt, *ce, *rt, *mt;
    if (!PyArg_ParseTuple(args, "O!OO!OO!O!:configure_launch", &PyType_Type, &st, &sh, &PyType_Type,
                          &kt, &ce, &PyType_Type, &rt, &PyTuple_Type, &mt))
        return NULL;
    Py_ssize_t resource_h = slot_offset(rt, "_h");
    Py_ssize_t kernel_h = resource_h < 0 ? -1 : slot_offset(kt, "_h");
    Py_ssize_t kernel_go = kernel_h < 0 ? -1 : slot_offset(kt, "_go");
    if (kernel_go < 0)
        return NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(mt); k++) {
        PyObject *t = PyTuple_GET_ITEM(mt, k);
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, (PyTypeObject *)rt)) {
            PyErr_SetString(PyExc_TypeError, "configure_launch: memory_types must be Resource subclasses");
            return NULL;
        }
    }
    if (!PyType_IsSubtype((PyTypeObject *)st, (PyTypeObject *)rt)) {
        PyErr_SetString(PyExc_TypeError, "configure_launch: Stream must be a Resource subclass");
        return NULL;
    }
    if (known.stream_type != NULL)
        Py_RETURN_NONE;
    Py_INCREF(st);
    known.stream_type = st;
    Py_INCREF(sh);
    known.stream_handle = sh;
    Py_INCREF(kt);
    known.kernel_type = kt;
    Py_INCREF(ce);
    known.closed_error = ce;
    Py_INCREF(mt);
    known.memory_types = mt;
    known.resource_h = resource_h;
    known.kernel_h = kernel_h;
    known.kernel_go = kernel_go;
    Py_RETURN_NONE;
}

static int stream_of(PyObject *stream, uint64_t *out)
{
    if (stream == Py_None) {
        *out = 0;
        return 0;
    }
    PyObject *h;
    if ((PyObject *)Py_TYPE(stream) == known.stream_type) {
        h = slot_or_attr(stream, known.stream_type, known.resource_h, str_h);
        if (h == Py_None) {
            Py_DECREF(h);
            PyErr_SetString(known.closed_error, "Stream is closed");
            return -1;
        }
    } else {
        h = PyObject_CallFunctionObjArgs(known.stream_handle, stream, NULL);
    }
    if (h == NULL)
        return -1;
    unsigned long long v = AS_U64(h);
    Py_DECREF(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* Launches kernel with config on stream (None, an int handle, a cuabi.Stream
 * or another library's stream), items[0..given) its arguments: the body of
 * launch() and of Kernel.launch. */
static PyObject *launch_kernel(PyObject *stream_obj, PyObject *config, PyObject *kernel,
                               PyObject *const *items, Py_ssize_t given)
{
    if (known.stream_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cuabi._cuabi_speedups: configure_launch() was not called");
        return NULL;
    }
    uint64_t stream;
    if (stream_of(stream_obj, &stream) < 0)
        return NULL;
    if ((PyObject *)Py_TYPE(kernel) != known.kernel_type) {
        PyErr_Format(PyExc_TypeError, "kernel must be a cuabi.Kernel, got %.100s", Py_TYPE(kernel)->tp_name);
        return NULL;
    }
    PyObject *go = slot_or_attr(kernel, known.kernel_type, known.kernel_go, str_go);
    if (go == NULL)
        return NULL;
    PyObject *result = NULL;
    if (Py_TYPE(go) == &LauncherType) {
        Launcher *launcher = (Launcher *)go;
        if (given != launcher->nparams) {
            PyObject *name = PyObject_GetAttr(kernel, str_name);
            if (name != NULL) {
                PyErr_Format(PyExc_TypeError, "kernel %R takes %zd arguments, %zd given", name,
                             launcher->nparams, given);
                Py_DECREF(name);
            }
        } else {
            result = launcher_run(launcher, kernel, stream, config, items);
        }
    } else {
        /* a kernel without a signature: its Python launcher checks and infers */
        PyObject *kargs = PyTuple_New(given);
        PyObject *s = PyLong_FromUnsignedLongLong(stream);
        if (kargs != NULL && s != NULL) {
            for (Py_ssize_t i = 0; i < given; i++) {
                Py_INCREF(items[i]);
                PyTuple_SET_ITEM(kargs, i, items[i]);
            }
            result = PyObject_CallFunctionObjArgs(go, kernel, s, config, kargs, NULL);
        }
        Py_XDECREF(kargs);
        Py_XDECREF(s);
    }
    Py_DECREF(go);
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
    return launch_kernel(args[0], args[1], args[2], args + 3, nargs - 3);
}

/* Kernel.launch(config, *args, stream=None), a method of cuabi.Kernel made by
 * kernel_launch_method(). */
static PyObject *kernel_launch(PyObject *kernel, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream = Py_None, *config = nargs > 0 ? args[0] : NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        if (PyUnicode_CompareWithASCIIString(key, "stream") == 0) {
            stream = args[nargs + k];
        } else if (PyUnicode_CompareWithASCIIString(key, "config") == 0 && nargs == 0) {
            config = args[nargs + k];
        } else {
            PyErr_Format(PyExc_TypeError, "launch() got an unexpected keyword argument '%U'", key);
            return NULL;
        }
    }
    if (config == NULL) {
        PyErr_SetString(PyExc_TypeError, "launch() missing required argument 'config'");
        return NULL;
    }
    if (nargs == 0) /* config by keyword: no kernel arguments */
        return launch_kernel(stream, config, kernel, args, 0);
    return launch_kernel(stream, config, kernel, args + 1, nargs - 1);
}

static PyMethodDef kernel_launch_def = {
    "launch", (PyCFunction)(void (*)(void))kernel_launch, METH_FASTCALL | METH_KEYWORDS,
    "launch($self, config, *args, stream=None)\n--\n\n"
    "Launch this kernel with config on stream (default: the NULL stream); the\n"
    "same as cuabi.launch(stream, config, kernel, *args).",
};

/* kernel_launch_method(): Kernel.launch for the configured Kernel class, to
 * be set on it. */
static PyObject *kernel_launch_method(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (known.kernel_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cuabi._cuabi_speedups: configure_launch() was not called");
        return NULL;
    }
    return PyDescr_NewMethod((PyTypeObject *)known.kernel_type, &kernel_launch_def);
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
        PyMethodDef *def = PyMem_RawMalloc(sizeof *def);
        char *text = PyMem_RawMalloc(strlen(doc) + 1);
        if (def == NULL || text == NULL) {
            PyMem_RawFree(def);
            PyMem_RawFree(text);
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
    { "make_launcher", make_launcher, METH_VARARGS,
      "make_launcher(layout, size, kernel_pointer, ClosedError, LaunchConfig, launch_ex)" },
    { "configure_launch", configure_launch, METH_VARARGS,
      "configure_launch(Stream, stream_handle, Kernel, ClosedError, Resource, memory_types)" },
    { "kernel_launch_method", kernel_launch_method, METH_NOARGS,
      "kernel_launch_method(): the compiled Kernel.launch, once configure_launch() ran" },
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
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    str_h = PyUnicode_InternFromString("_h");
    str_name = PyUnicode_InternFromString("name");
    str_hdr = PyUnicode_InternFromString("_hdr");
    str_ex = PyUnicode_InternFromString("_ex");
    str_go = PyUnicode_InternFromString("_go");
    if (str_h == NULL || str_name == NULL || str_hdr == NULL || str_ex == NULL || str_go == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}

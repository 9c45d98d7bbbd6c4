/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - tracing every forwarded call (docs/tracing.md).
 *
 * A forwarder calls whatever its slot holds.  With tracing off, that is the
 * library's function itself, so the forwarders cost what they cost without
 * tracing; with tracing on, it is the slot's trace wrapper, which calls the
 * function (kept in the slot's target) and writes a line.  Switching swaps the
 * slots.
 *
 * The wrappers are built here, at run time, one per slot the first time it is
 * traced: a libffi closure of the function's signature (from its row of the
 * generated tables, lib/trace_<library>.c), whose handler calls the target with
 * the same arguments and decodes them as the tables say.  (Generated C wrappers,
 * one per forwarder, would cost as much code again as all the forwarders; libffi,
 * linked for cuabi_call, costs nothing until a call is traced.)  Where a wrapper
 * cannot be built (no memory, or a system that refuses libffi's executable
 * memory), its slot keeps the function: that function's calls go untraced.
 *
 * How a slot's first fill and the switch agree, without a lock on the fill:
 *   fill (cuabi__trace_install): store the target; read `tracing`; put the
 *     target or its wrapper in the slot, only if the slot is still empty (CAS);
 *   switch (set_locked, under the library lock): store `tracing`; then for every
 *     slot whose target is known, store the target or its wrapper.
 * Every access to `tracing`, the targets and the slots here is sequentially
 * consistent, so either the switch sees the target (and sets the slot after the
 * fill's CAS, or makes the CAS fail), or the fill sees the new `tracing`.  A
 * concurrent call sees the slot before or after the swap: a call that loaded the
 * slot before tracing came on is not traced; one that entered a wrapper before
 * tracing went off writes no line (the wrapper checks again at the end).
 */
#include "internal.h"
#include "trace.h"

#include <errno.h>
#include <ffi.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const cuabi_trace_library *const libraries[CUABI__LIBRARY_COUNT] = {
    &cuabi__trace_driver, &cuabi__trace_nvrtc, &cuabi__trace_nvjitlink, &cuabi__trace_nvvm,
    &cuabi__trace_nvml,
};

const struct cuabi_trace_library *cuabi__trace_library(int id)
{
    return libraries[id];
}

/* Where lines go: a file descriptor, or -1 while tracing is off. */
static _Atomic(int) trace_fd = -1;
/* 1 while the slots point at the wrappers. */
static _Atomic(int) tracing;
/* The clock when tracing first came on: a line's time is measured from it. */
static _Atomic(uint64_t) epoch;

static uint64_t now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- switching ---------------------------------------------------------- */

static void *wrapper_of(const cuabi_trace_library *lib, unsigned index);

void *cuabi__trace_install(const struct cuabi_trace_library *lib, unsigned index, void *target)
{
    atomic_store(&lib->targets[index], target);
    void *value = target;
    if (atomic_load(&tracing)) {
        void *wrapper = wrapper_of(lib, index);
        if (wrapper != NULL)
            value = wrapper;
    }
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&lib->slots[index], &expected, value))
        return expected; /* filled first by another thread, or by the switch */
    return value;
}

/* Points every filled slot at its wrapper (on) or its target (off).  The caller
 * holds the library lock. */
static void set_locked(int fd)
{
    uint64_t zero = 0;
    if (fd >= 0)
        atomic_compare_exchange_strong(&epoch, &zero, now());
    atomic_store(&trace_fd, fd);
    atomic_store(&tracing, fd >= 0);
    for (int id = 0; id < CUABI__LIBRARY_COUNT; id++) {
        const cuabi_trace_library *lib = libraries[id];
        for (unsigned i = 0; i < lib->count; i++) {
            void *target = atomic_load(&lib->targets[i]);
            if (target == NULL)
                continue;
            void *wrapper = fd >= 0 ? wrapper_of(lib, i) : NULL;
            atomic_store(&lib->slots[i], wrapper != NULL ? wrapper : target);
        }
    }
}

/* Files opened for tracing stay open for the life of the process: a call in
 * flight may still be writing to one after a switch.  A path opened again
 * reuses its descriptor; a path that cannot be kept here (a ninth one, or one
 * too long) is refused rather than opened, so that no descriptor is lost. */
static struct {
    char path[512];
    int fd;
} files[8];
static unsigned file_count;

/* The descriptor of an absolute path, appended to; -1 with errno when it
 * cannot be opened.  The caller holds the lock. */
static int open_locked(const char *path)
{
    for (unsigned i = 0; i < file_count; i++)
        if (strcmp(files[i].path, path) == 0)
            return files[i].fd;
    if (strlen(path) >= sizeof files[0].path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (file_count == sizeof files / sizeof files[0]) {
        errno = EMFILE;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        strcpy(files[file_count].path, path);
        files[file_count++].fd = fd;
    }
    return fd;
}

/* ---- the environment ------------------------------------------------------ */

static int environment_decided;  /* CUABI_TRACE read, or a program's switch came first */
static CUresult environment_status = CUDA_SUCCESS;
static char environment_line[768];

CUresult cuabi__trace_environment(cuabi_text *report)
{
    if (!environment_decided) {
        environment_decided = 1;
        /* A path, so secure_getenv: a set-user-ID program writes no file the
         * environment names. */
        const char *value = secure_getenv("CUABI_TRACE");
        cuabi_text line;
        cuabi_text_init(&line, environment_line, sizeof environment_line);
        if (value == NULL || value[0] == '\0' || strcmp(value, "0") == 0) {
            /* off: nothing to say */
        } else if (strcmp(value, "1") == 0) {
            set_locked(STDERR_FILENO);
            cuabi_text_append(&line, "tracing: on, to the standard error (CUABI_TRACE=1)\n");
        } else if (value[0] == '/') {
            int fd = open_locked(value);
            if (fd >= 0) {
                set_locked(fd);
                cuabi_text_append(&line, "tracing: on, appended to %s (CUABI_TRACE)\n", value);
            } else {
                cuabi_text_append(&line, "CUABI_TRACE=");
                cuabi_text_append_quoted(&line, value, 256);
                cuabi_text_append(&line, " names a file that cannot be opened for appending (%s); "
                                         "nothing was loaded\n",
                                  strerror(errno));
                environment_status = CUABI_ERROR_BAD_ENVIRONMENT;
            }
        } else {
            cuabi_text_append(&line, "CUABI_TRACE=");
            cuabi_text_append_quoted(&line, value, 256);
            cuabi_text_append(&line, " is not accepted: it must be \"1\" (trace to the standard "
                                     "error), an absolute path (append to that file) or \"0\" (no "
                                     "trace); nothing was loaded\n");
            environment_status = CUABI_ERROR_BAD_ENVIRONMENT;
        }
        cuabi_text_finish(&line);
    }
    cuabi_text_append(report, "%s", environment_line);
    return environment_status;
}

/* ---- the own API ---------------------------------------------------------- */

CUABI_API CUresult CUABI_CALL cuabi_trace_start(const char *path)
{
    if (path != NULL && path[0] != '/')
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    cuabi__lock();
    environment_decided = 1; /* the program's choice wins over CUABI_TRACE */
    int fd = path == NULL ? STDERR_FILENO : open_locked(path);
    if (fd >= 0)
        set_locked(fd);
    else
        rc = CUDA_ERROR_OPERATING_SYSTEM;
    cuabi__unlock();
    return rc;
}

CUABI_API CUresult CUABI_CALL cuabi_trace_stop(void)
{
    cuabi__lock();
    environment_decided = 1;
    set_locked(-1);
    cuabi__unlock();
    return CUDA_SUCCESS;
}

CUABI_API int32_t CUABI_CALL cuabi_trace_enabled(void)
{
    return atomic_load(&tracing);
}

/* ---- the lines ------------------------------------------------------------ */

static _Thread_local long thread_id;

/* value quoted, at most max bytes of it, escaped as the report does. */
static void append_string(cuabi_text *line, const char *value)
{
    if (value == NULL)
        cuabi_text_append(line, "NULL");
    else
        cuabi_text_append_quoted(line, value, CUABI_TRACE_STRING_MAX);
}

const char *cuabi__trace_enum_name(const cuabi_trace_library *lib, unsigned e, int64_t value)
{
    const cuabi_trace_enum *en = &lib->enums[e];
    /* An enum's values fit in 32 bits; a value may come sign- or zero-extended. */
    for (uint32_t i = en->first; i < en->first + en->count; i++)
        if (lib->enum_values[i] == value || (uint32_t)lib->enum_values[i] == (uint32_t)value)
            return lib->strings + lib->enum_names[i];
    return NULL;
}

static void append_enum(cuabi_text *line, const cuabi_trace_library *lib, unsigned e, int64_t value)
{
    const char *name = cuabi__trace_enum_name(lib, e, value);
    const cuabi_code_info *own = value > CUABI_ERROR_BASE && value < CUABI_ERROR_BASE + 1000
                                     ? cuabi__code_info((CUresult)value) : NULL;
    if (name == NULL && own != NULL)
        name = own->name;
    if (name != NULL)
        cuabi_text_append(line, "%s", name);
    else
        cuabi_text_append(line, "%lld", (long long)value);
}

/* One value of a scalar kind, from its bits. */
static void append_value(cuabi_text *line, const cuabi_trace_library *lib, int kind, unsigned aux,
                         uint64_t bits)
{
    switch (kind) {
    case CUABI_TRACE_INT:
        cuabi_text_append(line, "%lld", (long long)(int64_t)bits);
        break;
    case CUABI_TRACE_UINT:
    case CUABI_TRACE_SIZE:
        cuabi_text_append(line, "%llu", (unsigned long long)bits);
        break;
    case CUABI_TRACE_ENUM:
        append_enum(line, lib, aux, (int64_t)bits);
        break;
    case CUABI_TRACE_FLOAT: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, sizeof f);
        cuabi_text_append(line, "%g", (double)f);
        break;
    }
    case CUABI_TRACE_DOUBLE: {
        double d;
        memcpy(&d, &bits, sizeof d);
        cuabi_text_append(line, "%g", d);
        break;
    }
    case CUABI_TRACE_STRING:
        append_string(line, (const char *)(uintptr_t)bits);
        break;
    case CUABI_TRACE_POINTER:
        if (bits == 0)
            cuabi_text_append(line, "NULL");
        else
            cuabi_text_append(line, "0x%llx", (unsigned long long)bits);
        break;
    default:
        cuabi_text_append(line, "0x%llx", (unsigned long long)bits);
        break;
    }
}

/* The value an output parameter points at, read after a successful call. */
static uint64_t read_pointee(const void *p, unsigned width, int kind)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64 = 0;
    switch (width) {
    case 1:
        memcpy(&u8, p, 1);
        return u8;
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return kind == CUABI_TRACE_INT || kind == CUABI_TRACE_ENUM ? (uint64_t)(int64_t)(int32_t)u32
                                                                   : u32;
    default:
        memcpy(&u64, p, sizeof u64);
        return u64;
    }
}

static void append_param(cuabi_text *line, const cuabi_trace_library *lib, const cuabi_trace_fn *fn,
                         unsigned k, const uint64_t *args, int succeeded)
{
    const cuabi_trace_param *p = &lib->params[fn->first + k];
    uint64_t bits = args[k];
    cuabi_text_append(line, "%s%s=", k != 0 ? ", " : "", lib->strings + p->name);
    switch (p->kind) {
    case CUABI_TRACE_OUT:
        append_value(line, lib, CUABI_TRACE_POINTER, 0, bits);
        if (succeeded && bits != 0) {
            cuabi_text_append(line, "->");
            append_value(line, lib, p->pointee, p->aux,
                         read_pointee((const void *)(uintptr_t)bits, p->width, p->pointee));
        }
        break;
    case CUABI_TRACE_STRINGS: {
        append_value(line, lib, CUABI_TRACE_POINTER, 0, bits);
        int64_t n = (int64_t)args[p->aux];
        const char *const *strings = (const char *const *)(uintptr_t)bits;
        if (strings == NULL || n <= 0)
            break;
        cuabi_text_append(line, "[");
        for (int64_t i = 0; i < n && i < CUABI_TRACE_STRINGS_MAX; i++) {
            cuabi_text_append(line, "%s", i != 0 ? ", " : "");
            append_string(line, strings[i]);
        }
        cuabi_text_append(line, "%s]", n > CUABI_TRACE_STRINGS_MAX ? ", ..." : "");
        break;
    }
    case CUABI_TRACE_STRUCT: {
        const unsigned char *bytes = (const unsigned char *)(uintptr_t)bits;
        cuabi_text_append(line, "{");
        for (unsigned i = 0; i < p->aux; i++)
            cuabi_text_append(line, "%s%02x", i != 0 && i % 4 == 0 ? " " : "", bytes[i]);
        cuabi_text_append(line, "}");
        break;
    }
    default:
        append_value(line, lib, p->kind, p->aux, bits);
        break;
    }
}

static void write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        text += n;
        len -= (size_t)n;
    }
}

/* Writes the line of a call of slot `index` of `lib` that started at `started`, with
 * its arguments' bits and its result's; nothing when tracing was switched off
 * meanwhile.  Keeps errno. */
static void write_line(const cuabi_trace_library *lib, unsigned index, uint64_t started,
                       const uint64_t *args, uint64_t result)
{
    /* (args NULL: the function was not called, its library or itself missing) */
    uint64_t ended = now();
    int fd = atomic_load_explicit(&trace_fd, memory_order_acquire);
    if (fd < 0)
        return;
    int saved_errno = errno;
    if (thread_id == 0)
        thread_id = syscall(SYS_gettid);
    const cuabi_trace_fn *fn = &lib->fns[index];
    uint64_t since = started - atomic_load_explicit(&epoch, memory_order_relaxed);
    char buf[CUABI_TRACE_LINE_MAX];
    cuabi_text line;
    cuabi_text_init(&line, buf, sizeof buf - 5); /* room for "...\n" */
    cuabi_text_append(&line, "cuabi-trace %llu.%06llu %ld %s %s(",
                      (unsigned long long)(since / 1000000000u),
                      (unsigned long long)(since % 1000000000u / 1000u), thread_id, lib->name,
                      lib->strings + fn->name);
    /* Outputs are read after a successful call only: every family's success is 0. */
    int succeeded = fn->returns == CUABI_TRACE_ENUM && result == 0;
    for (unsigned k = 0; args != NULL && k < fn->count; k++)
        append_param(&line, lib, fn, k, args, succeeded);
    if (args == NULL && fn->count > 0)
        cuabi_text_append(&line, "...");
    cuabi_text_append(&line, ") = ");
    if (fn->returns == CUABI_TRACE_STRING) {
        append_string(&line, (const char *)(uintptr_t)result);
    } else {
        append_enum(&line, lib, 0, (int64_t)result);
        cuabi_text_append(&line, " (%lld)", (long long)(int64_t)result);
    }
    uint64_t took = ended - started;
    if (args == NULL)
        cuabi_text_append(&line, " not called\n");
    else
        cuabi_text_append(&line, " %llu.%03lluus\n", (unsigned long long)(took / 1000u),
                          (unsigned long long)(took % 1000u));
    if (line.truncated)
        line.len += (size_t)snprintf(buf + line.len, 5, "...\n");
    write_all(fd, buf, line.len);
    errno = saved_errno;
}

/* ---- the wrappers ----------------------------------------------------------- */

/* CUABI_CALL_MAX_PARAMS in cuabi.h bounds a signature; the tables' do not reach it. */
typedef struct wrapper {
    struct wrapper *next; /* every wrapper built, for the life of the process */
    ffi_closure *closure;
    void *code;
    ffi_cif cif;
    ffi_type *types[CUABI_CALL_MAX_PARAMS];
    void *struct_types;
    const cuabi_trace_library *lib;
    unsigned index;
    char letters[CUABI_CALL_MAX_PARAMS]; /* each parameter's letter, '{' for a struct */
} wrapper;

static _Atomic(wrapper *) built;

CUABI_INTERNAL int cuabi__signature_cif(const char *signature, ffi_type *returns, ffi_cif *cif,
                                        ffi_type **args, void **storage);

/* The bits of one argument, as the decoding expects them (trace.h): integers
 * zero- or sign-extended by their letter, floats as their bits, a struct passed
 * by value as its address. */
static uint64_t bits_of(char letter, const void *value)
{
    uint64_t u = 0;
    switch (letter) {
    case 'B': return *(const uint8_t *)value;
    case 'H': return *(const uint16_t *)value;
    case 'i': return (uint64_t)(int64_t)*(const int32_t *)value;
    case 'I': return *(const uint32_t *)value;
    case 'f': return *(const uint32_t *)value;
    case '{': return (uint64_t)(uintptr_t)value;
    default:
        memcpy(&u, value, sizeof u); /* q Q z p d: eight bytes */
        return u;
    }
}

static void call_and_trace(ffi_cif *cif, void *ret, void **args, void *data)
{
    const wrapper *w = data;
    const cuabi_trace_library *lib = w->lib;
    uint64_t started = now();
    void *target = atomic_load_explicit(&lib->targets[w->index], memory_order_acquire);
    ffi_call(cif, FFI_FN(target), ret, args);
    uint64_t bits[CUABI_CALL_MAX_PARAMS];
    for (unsigned k = 0; k < cif->nargs; k++)
        bits[k] = bits_of(w->letters[k], args[k]);
    /* libffi returns a result narrower than a register widened to ffi_arg. */
    uint64_t result = lib->fns[w->index].returns == CUABI_TRACE_STRING
                          ? (uint64_t)(uintptr_t)*(void **)ret
                          : (uint64_t)(int64_t)(int32_t)*(ffi_arg *)ret;
    write_line(lib, w->index, started, bits, result);
}

/* libffi sets up its closure allocator on the first allocation, and a later
 * allocation in another thread checks a plain flag to see that it was done: an
 * unordered read (a data race in C11 terms, and what ThreadSanitizer reports
 * when tracing starts while other threads fill slots).  One allocation under
 * pthread_once, before any other, orders that setup before every thread's
 * first closure. */
static pthread_once_t closures_ready = PTHREAD_ONCE_INIT;

static void prepare_closures(void)
{
    void *code;
    void *closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
    if (closure != NULL)
        ffi_closure_free(closure);
}

/* The wrapper of slot `index` of `lib`, built the first time; NULL when it cannot be. */
static void *wrapper_of(const cuabi_trace_library *lib, unsigned index)
{
    void *code = atomic_load(&lib->wrappers[index]);
    if (code != NULL)
        return code;
    const cuabi_trace_fn *fn = &lib->fns[index];
    wrapper *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->lib = lib;
    w->index = index;
    const char *signature = lib->strings + fn->signature;
    unsigned k = 0;
    for (int depth = 0; *signature != '\0' && k < CUABI_CALL_MAX_PARAMS; signature++) {
        if (depth == 0)
            w->letters[k] = *signature;
        depth += *signature == '{' ? 1 : *signature == '}' ? -1 : 0;
        k += depth == 0;
    }
    ffi_type *returns = fn->returns == CUABI_TRACE_STRING ? &ffi_type_pointer : &ffi_type_uint32;
    pthread_once(&closures_ready, prepare_closures);
    w->closure = ffi_closure_alloc(sizeof(ffi_closure), &w->code);
    if (w->closure == NULL ||
        cuabi__signature_cif(lib->strings + fn->signature, returns, &w->cif, w->types,
                             &w->struct_types) < 0 ||
        ffi_prep_closure_loc(w->closure, &w->cif, call_and_trace, w, w->code) != FFI_OK) {
        if (w->closure != NULL)
            ffi_closure_free(w->closure);
        free(w->struct_types);
        free(w);
        return NULL;
    }
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&lib->wrappers[index], &expected, w->code)) {
        ffi_closure_free(w->closure); /* another thread built it first */
        free(w->struct_types);
        free(w);
        return expected;
    }
    w->next = atomic_load(&built);
    while (!atomic_compare_exchange_weak(&built, &w->next, w))
        ;
    return w->code;
}

void cuabi__trace_not_called(int library, unsigned index, int result)
{
    if (atomic_load_explicit(&trace_fd, memory_order_acquire) >= 0 &&
        index < libraries[library]->count)
        write_line(libraries[library], index, now(), NULL, (uint64_t)(int64_t)result);
}

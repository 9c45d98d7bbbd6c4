/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c - loading each library once: the library's one lock, the load itself
 * and its report, for the driver (with its default stream mode and version) and
 * for each family (NVRTC, nvJitLink, NVVM, NVML), which are instances of the same
 * load with their own search and report lines (families.c).
 *
 * Nothing runs when the library is loaded.  The first call that needs a library
 * takes the lock, decides what comes before (the driver: the stream mode; every
 * library: CUABI_TRACE), opens it (loader/), writes the report, and publishes all
 * of it with a release store of that library's load_finished; every later call
 * reads it after an acquire load, without the lock.  Only codes.c (names and
 * advice for the report), trace.c (CUABI_TRACE), families.c (the families' search
 * and report lines) and loader/ are below this file.
 */
#include "internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the lock ----------------------------------------------------------
 * One mutex guards the load, the stream-mode request and cuabi_call cache
 * inserts.  fork(): a child must never wait for a lock held by a thread
 * that did not survive the fork, so fork handlers take the lock before
 * fork and release it on both sides.  They are registered the first time
 * anyone takes the lock, before taking it (not at library load time); a
 * fork can therefore never copy a held lock without our handlers having
 * waited for it. */
static pthread_mutex_t library_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
    pthread_mutex_lock(&library_lock);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&library_lock);
}

static void register_fork_handlers(void)
{
    /* Can only fail for lack of memory; then a fork in the middle of a
     * load could leave the child's lock held (documented). */
    (void)pthread_atfork(before_fork, after_fork, after_fork);
}

void cuabi__lock(void)
{
    pthread_once(&fork_handlers_once, register_fork_handlers);
    pthread_mutex_lock(&library_lock);
}

void cuabi__unlock(void)
{
    pthread_mutex_unlock(&library_lock);
}

/* ---- load state --------------------------------------------------------
 * One per library (the driver, then the families).  Written once, under the
 * lock, before load_finished becomes 1; read-only afterwards.  requested_mode
 * is written under the lock before the driver's load. */
static struct library {
    _Atomic(int) load_finished;
    CUresult load_status;
    cuabi_opened opened;
    /* 16 KiB holds a full search (about ten candidate lines of up to a few
     * hundred bytes each) many times over; longer texts end with a note. */
    char report_buf[16384];
} libraries[CUABI__LIBRARY_COUNT];
static struct library *const driver = &libraries[CUABI_LIBRARY_DRIVER];
static int requested_mode = -1; /* cuabi_set_default_stream_mode(), or -1 */
static int effective_mode = -1; /* 0 legacy, 1 per-thread, -1 the environment was invalid */

/* Decides the default stream mode; called once, by the load. */
static CUresult decide_stream_mode(cuabi_text *report)
{
    if (requested_mode >= 0) {
        effective_mode = requested_mode;
        cuabi_text_append(report, "default stream: %s (cuabi_set_default_stream_mode(%d))\n",
                          effective_mode ? "per-thread" : "legacy", effective_mode);
        return CUDA_SUCCESS;
    }
    /* Not a path and not security-relevant, so plain getenv. */
    const char *env = getenv("CUABI_PER_THREAD_DEFAULT_STREAM");
    if (env == NULL) {
        effective_mode = 0;
        cuabi_text_append(report,
                          "default stream: legacy (CUABI_PER_THREAD_DEFAULT_STREAM not set)\n");
        return CUDA_SUCCESS;
    }
    if (strcmp(env, "0") == 0 || strcmp(env, "1") == 0) {
        effective_mode = env[0] - '0';
        cuabi_text_append(report, "default stream: %s (CUABI_PER_THREAD_DEFAULT_STREAM=%s)\n",
                          effective_mode ? "per-thread" : "legacy", env);
        return CUDA_SUCCESS;
    }
    cuabi_text_append(report, "CUABI_PER_THREAD_DEFAULT_STREAM=");
    cuabi_text_append_quoted(report, env, 128);
    cuabi_text_append(report, " is not accepted: it must be \"0\" (legacy default stream) or "
                              "\"1\" (per-thread default stream); the driver was not loaded\n");
    return CUABI_ERROR_BAD_ENVIRONMENT;
}

static void append_advice(cuabi_text *report, CUresult status, int named_path)
{
    if (status == CUDA_SUCCESS)
        return;
    const cuabi_code_info *info = cuabi__code_info(status);
    cuabi_text_append(report, "no usable CUDA driver: %s (%d): %s\n",
                      info != NULL ? info->name : "?", (int)status,
                      info != NULL ? info->text : "?");
    /* A driver named by the user that could not be opened: the path is what to check. */
    if (named_path && status == CUABI_ERROR_DRIVER_NOT_FOUND) {
        cuabi_text_append(report, "what to do: check the path named above (it must be the NVIDIA "
                                  "driver's libcuda.so.1), or unset CUABI_LIBCUDA to let cuabi "
                                  "search the usual places\n");
        return;
    }
    if (info != NULL && info->advice != NULL)
        cuabi_text_append(report, "what to do: %s\n", info->advice);
}

/* The driver's and the families' environment variables name a library whose
 * failure to open is to be reported as such, not searched around. */
static int named_by_environment(int id)
{
    const char *name = id == CUABI_LIBRARY_DRIVER ? "CUABI_LIBCUDA" : cuabi__family_specs[id - 1].env;
    const char *env = secure_getenv(name);
    return env != NULL && env[0] != '\0';
}

/* Runs library id's load if nobody has; the caller holds the lock. */
static void load_locked(int id, const char *explicit_path)
{
    struct library *lib = &libraries[id];
    if (atomic_load_explicit(&lib->load_finished, memory_order_relaxed))
        return;

    cuabi_text report;
    cuabi_text_init(&report, lib->report_buf, sizeof lib->report_buf);
    CUresult status = CUDA_SUCCESS;
    if (id == CUABI_LIBRARY_DRIVER) {
        cuabi_text_append(&report, "cuabi %d.%d.%d: loading the CUDA driver\n", CUABI_VERSION_MAJOR,
                          CUABI_VERSION_MINOR, CUABI_VERSION_PATCH);
        status = decide_stream_mode(&report);
    } else {
        cuabi__family_begin(id, &report);
    }
    if (status == CUDA_SUCCESS)
        status = cuabi__trace_environment(&report);
    if (status == CUDA_SUCCESS) {
        const cuabi_search *search =
            id == CUABI_LIBRARY_DRIVER ? &cuabi_loader_driver : cuabi__family_search(id);
        status = cuabi_loader_search(search, explicit_path, &lib->opened, &report);
        if (status == CUDA_SUCCESS && id == CUABI_LIBRARY_DRIVER)
            cuabi_text_append(&report, "using %s, %s default stream\n", lib->opened.path,
                              effective_mode == 1 ? "per-thread" : "legacy");
        else if (status == CUDA_SUCCESS)
            cuabi__family_loaded(id, &lib->opened, &report);
    }
    int named = explicit_path != NULL || named_by_environment(id);
    if (id == CUABI_LIBRARY_DRIVER)
        append_advice(&report, status, named);
    else if (status != CUDA_SUCCESS)
        cuabi__family_advice(id, status, named, &report);
    cuabi_text_finish(&report);

    lib->load_status = status;
    atomic_store_explicit(&lib->load_finished, 1, memory_order_release);
}

CUresult cuabi__library_ensure(int id)
{
    struct library *lib = &libraries[id];
    if (CUABI_LIKELY(atomic_load_explicit(&lib->load_finished, memory_order_acquire)))
        return lib->load_status;
    cuabi__lock();
    load_locked(id, NULL);
    cuabi__unlock();
    return lib->load_status;
}

CUresult cuabi__ensure_loaded(void)
{
    return cuabi__library_ensure(CUABI_LIBRARY_DRIVER);
}

/* Nonzero if path names the file of the loaded library. */
static int is_loaded_file(const struct library *lib, const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real) == NULL)
        return 0;
    return strcmp(real, lib->opened.path) == 0;
}

CUresult cuabi__library_load(int id, const char *path)
{
    struct library *lib = &libraries[id];
    cuabi__lock();
    int was_loaded = atomic_load_explicit(&lib->load_finished, memory_order_relaxed);
    load_locked(id, path);
    cuabi__unlock();

    if (was_loaded && path != NULL && lib->load_status == CUDA_SUCCESS && !is_loaded_file(lib, path))
        return CUABI_ERROR_ALREADY_LOADED;
    return lib->load_status;
}

CUresult cuabi__load(const char *path)
{
    return cuabi__library_load(CUABI_LIBRARY_DRIVER, path);
}

int cuabi__library_load_finished(int id)
{
    return atomic_load_explicit(&libraries[id].load_finished, memory_order_acquire);
}

int cuabi__load_finished(void)
{
    return cuabi__library_load_finished(CUABI_LIBRARY_DRIVER);
}

const char *cuabi__library_report(int id)
{
    cuabi__library_ensure(id);
    return libraries[id].report_buf;
}

const char *cuabi__report(void)
{
    return cuabi__library_report(CUABI_LIBRARY_DRIVER);
}

const char *cuabi__library_path(int id)
{
    return cuabi__library_ensure(id) == CUDA_SUCCESS ? libraries[id].opened.path : NULL;
}

const char *cuabi__driver_path(void)
{
    return cuabi__library_path(CUABI_LIBRARY_DRIVER);
}

void *cuabi__library_handle(int id)
{
    return cuabi__library_ensure(id) == CUDA_SUCCESS ? libraries[id].opened.handle : NULL;
}

cuabi_get_proc_address_fn cuabi__driver_get_proc(void)
{
    return (cuabi_get_proc_address_fn)driver->opened.entry;
}

/* ---- default stream mode ----------------------------------------------- */

CUresult cuabi__request_stream_mode(int per_thread)
{
    CUresult rc = CUDA_SUCCESS;
    cuabi__lock();
    if (!atomic_load_explicit(&driver->load_finished, memory_order_relaxed))
        requested_mode = per_thread;
    else if (effective_mode != per_thread)
        rc = CUABI_ERROR_ALREADY_LOADED;
    cuabi__unlock();
    return rc;
}

int cuabi__stream_mode(void)
{
    cuabi__ensure_loaded();
    return effective_mode;
}

uint64_t cuabi__stream_flags(void)
{
    return effective_mode == 1 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
}

/* ---- the driver's version ----------------------------------------------
 * Fetched on first need, straight through cuGetProcAddress_v2 (not through a
 * forwarder, so that a failure here cannot lead back into a lookup), and
 * kept once known: 0 = not yet; a race fetches it twice and stores the same
 * number.  The one way cuabi reads it: for cuabi_driver_version(), for
 * cuabi_get_proc()'s version 0 and for telling a too-old driver apart. */
static _Atomic(int) driver_version;

CUresult cuabi__driver_version(int *version)
{
    int v = atomic_load_explicit(&driver_version, memory_order_relaxed);
    if (v == 0) {
        CUresult rc = cuabi__ensure_loaded();
        if (rc != CUDA_SUCCESS)
            return rc;
        void *found = NULL;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
        rc = cuabi__driver_get_proc()("cuDriverGetVersion", &found, 2020,
                                      CU_GET_PROC_ADDRESS_DEFAULT, &status);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (found == NULL)
            return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
        CUresult (*get_version)(int *) = (CUresult(*)(int *))found;
        rc = get_version(&v);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (v <= 0)
            return CUDA_ERROR_UNKNOWN;
        atomic_store_explicit(&driver_version, v, memory_order_relaxed);
    }
    *version = v;
    return CUDA_SUCCESS;
}

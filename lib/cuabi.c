/*
 * cuabi.c - the own API around loading: version, load, status, report,
 * path, driver version, default stream mode, get_proc; and the one lock.
 *
 * Nothing runs when the library is loaded.  The first call that needs the
 * driver takes the lock, loads, writes the results, and publishes them with
 * a release store of load_finished; every later call reads them after an
 * acquire load, without the lock.
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
 * Written once, under the lock, before load_finished becomes 1; read-only
 * afterwards. */
static _Atomic(int) load_finished;
static CUresult load_status = CUABI_ERROR_DRIVER_NOT_FOUND;
static cuabi_driver_lib driver;
/* 16 KiB holds a full search (about ten candidate lines of up to a few
 * hundred bytes each) many times over; longer texts end with a note. */
static char report_buf[16384];

static void append_advice(cuabi_text *report, CUresult status, int named_path)
{
    if (status == CUDA_SUCCESS)
        return;
    cuabi_text_append(report, "no usable CUDA driver: %s (%d): %s\n", cuabi_error_name(status),
                      (int)status, cuabi_error_string(status));
    /* A driver named by the user that could not be opened: the path is what to check. */
    if (named_path && status == CUABI_ERROR_DRIVER_NOT_FOUND) {
        cuabi_text_append(report, "what to do: check the path named above (it must be the NVIDIA "
                                  "driver's libcuda.so.1), or unset CUABI_LIBCUDA to let cuabi "
                                  "search the usual places\n");
        return;
    }
    const char *advice = cuabi__error_advice(status);
    if (advice != NULL)
        cuabi_text_append(report, "what to do: %s\n", advice);
}

/* Runs the load if nobody has; the caller holds the lock. */
static void load_locked(const char *explicit_path)
{
    if (atomic_load_explicit(&load_finished, memory_order_relaxed))
        return;

    cuabi_text report;
    cuabi_text_init(&report, report_buf, sizeof report_buf);
    cuabi_text_append(&report, "cuabi %d.%d.%d: loading the CUDA driver\n", CUABI_VERSION_MAJOR,
                      CUABI_VERSION_MINOR, CUABI_VERSION_PATCH);

    CUresult status = cuabi__decide_stream_mode(&report);
    if (status == CUDA_SUCCESS) {
        status = cuabi_loader_open(explicit_path, &driver, &report);
        if (status == CUDA_SUCCESS)
            cuabi_text_append(&report, "using %s, %s default stream\n", driver.path,
                              cuabi__stream_mode() == 1 ? "per-thread" : "legacy");
    }
    const char *env = secure_getenv("CUABI_LIBCUDA");
    append_advice(&report, status, explicit_path != NULL || (env != NULL && env[0] != '\0'));
    cuabi_text_finish(&report);

    load_status = status;
    atomic_store_explicit(&load_finished, 1, memory_order_release);
}

CUresult cuabi__ensure_loaded(void)
{
    if (CUABI_LIKELY(atomic_load_explicit(&load_finished, memory_order_acquire)))
        return load_status;
    cuabi__lock();
    load_locked(NULL);
    cuabi__unlock();
    return load_status;
}

int cuabi__load_finished(void)
{
    return atomic_load_explicit(&load_finished, memory_order_acquire);
}

cuabi_get_proc_address_fn cuabi__driver_get_proc(void)
{
    return driver.get_proc;
}

/* ---- own API ----------------------------------------------------------- */

CUABI_API uint32_t CUABI_CALL cuabi_version(void)
{
    return CUABI_VERSION;
}

/* Nonzero if path names the file of the loaded driver. */
static int is_loaded_driver(const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real) == NULL)
        return 0;
    return strcmp(real, driver.path) == 0;
}

CUABI_API CUresult CUABI_CALL cuabi_load(const char *path)
{
    /* A relative path would depend on the current folder; refuse it
     * without using up the one load. */
    if (path != NULL && path[0] != '/')
        return CUDA_ERROR_INVALID_VALUE;

    cuabi__lock();
    int was_loaded = atomic_load_explicit(&load_finished, memory_order_relaxed);
    load_locked(path);
    cuabi__unlock();

    if (was_loaded && path != NULL && load_status == CUDA_SUCCESS && !is_loaded_driver(path))
        return CUABI_ERROR_ALREADY_LOADED;
    return load_status;
}

CUABI_API CUresult CUABI_CALL cuabi_driver_status(void)
{
    return cuabi__ensure_loaded();
}

CUABI_API const char *CUABI_CALL cuabi_driver_report(void)
{
    cuabi__ensure_loaded();
    return report_buf;
}

CUABI_API const char *CUABI_CALL cuabi_driver_path(void)
{
    return cuabi__ensure_loaded() == CUDA_SUCCESS ? driver.path : NULL;
}

CUABI_API CUresult CUABI_CALL cuabi_driver_version(int32_t *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi_cuDriverGetVersion(version);
}

CUABI_API CUresult CUABI_CALL cuabi_set_default_stream_mode(int32_t per_thread)
{
    if (per_thread != 0 && per_thread != 1)
        return CUDA_ERROR_INVALID_VALUE;

    CUresult rc = CUDA_SUCCESS;
    cuabi__lock();
    if (!atomic_load_explicit(&load_finished, memory_order_relaxed))
        rc = cuabi__request_stream_mode(per_thread);
    else if (cuabi__stream_mode() != per_thread)
        rc = CUABI_ERROR_ALREADY_LOADED;
    cuabi__unlock();
    return rc;
}

CUABI_API int32_t CUABI_CALL cuabi_default_stream_mode(void)
{
    cuabi__ensure_loaded();
    return cuabi__stream_mode();
}

CUABI_API CUresult CUABI_CALL cuabi_get_proc(const char *name, int32_t cuda_version,
                                             uint64_t flags, void **fn)
{
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *fn = NULL;
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return cuabi__get_proc(name, cuda_version, flags, fn);
}

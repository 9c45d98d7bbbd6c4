/*
 * resolve.c - entry-point lookup: the slot array the forwarders read, the
 * slow path that fills it, and the per-thread default stream mode that
 * decides which variant of an entry point is asked for.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Resolved entry points, one per row of cuabi__entry_points.  Filled
 * lazily; a race between two first calls stores the same address twice. */
_Atomic(void *) cuabi__slots[CUABI__ENTRY_POINT_COUNT];

/* Per slot: 0 while unknown or resolved, else the answer "this driver lacks
 * it" (ENTRY_POINT_NOT_FOUND or DRIVER_TOO_OLD), which cannot change while
 * the process runs, so the driver is asked only once.  Other failures are
 * not remembered: the next call asks again. */
static _Atomic(int) slot_failure[CUABI__ENTRY_POINT_COUNT];

/* ---- default stream mode ------------------------------------------------
 * requested_mode is written by cuabi_set_default_stream_mode() before the
 * load, effective_mode once by the load; both under the library lock.
 * Readers of effective_mode come after the load's release store, so they
 * see its final value without the lock. */
static int requested_mode = -1;
static int effective_mode = -1;

CUresult cuabi__request_stream_mode(int per_thread)
{
    requested_mode = per_thread;
    return CUDA_SUCCESS;
}

CUresult cuabi__decide_stream_mode(cuabi_text *report)
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

int cuabi__stream_mode(void)
{
    return effective_mode;
}

uint64_t cuabi__stream_flags(void)
{
    return effective_mode == 1 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                               : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
}

/* ---- lookup ------------------------------------------------------------ */

/* The driver's version, fetched once for cuda_version 0 and for telling a
 * too-new version apart from other refusals.  0 = not yet; a race fetches
 * it twice and stores the same number.  Asked straight through
 * cuGetProcAddress_v2 (not the forwarder), so that a lookup failure here
 * cannot lead back into cuabi__get_proc. */
static _Atomic(int) driver_version;

static CUresult own_driver_version(int *version)
{
    int v = atomic_load_explicit(&driver_version, memory_order_relaxed);
    if (v == 0) {
        void *found = NULL;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
        CUresult rc = cuabi__driver_get_proc()("cuDriverGetVersion", &found, 2020,
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

CUresult cuabi__get_proc(const char *name, int cuda_version, uint64_t flags, void **fn)
{
    *fn = NULL;
    CUresult rc = cuabi__ensure_loaded();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (cuda_version < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (cuda_version == 0) {
        rc = own_driver_version(&cuda_version);
        if (rc != CUDA_SUCCESS)
            return rc;
    }

    void *found = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    rc = cuabi__driver_get_proc()(name, &found, cuda_version, flags, &status);
    if (status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        return CUABI_ERROR_DRIVER_TOO_OLD;
    if (rc == CUDA_ERROR_NOT_FOUND)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    /* The driver refuses a version newer than its own with
     * CUDA_ERROR_INVALID_VALUE, without necessarily setting the status: a
     * pinned entry point from a newer CUDA on an older driver. */
    int own = 0;
    if (rc == CUDA_ERROR_INVALID_VALUE && own_driver_version(&own) == CUDA_SUCCESS &&
        cuda_version > own)
        return CUABI_ERROR_DRIVER_TOO_OLD;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (found == NULL)
        return CUABI_ERROR_ENTRY_POINT_NOT_FOUND;
    *fn = found;
    return CUDA_SUCCESS;
}

CUresult cuabi__resolve(unsigned index, void **fn)
{
    if (index >= CUABI__ENTRY_POINT_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = cuabi__ensure_loaded();
    if (rc != CUDA_SUCCESS)
        return rc;
    int failed = atomic_load_explicit(&slot_failure[index], memory_order_relaxed);
    if (failed != 0)
        return (CUresult)failed;

    /* In per-thread mode the driver hands out the _ptds/_ptsz variant for
     * the flags below; its version is the one of that variant's typedef. */
    const cuabi_entry_point *ep = &cuabi__entry_points[index];
    int per_thread = cuabi__stream_mode() == 1;
    int version = per_thread && ep->ptds_version != 0 ? ep->ptds_version : ep->version;

    void *found;
    rc = cuabi__get_proc(ep->driver_name, version, cuabi__stream_flags(), &found);
    if (rc != CUDA_SUCCESS) {
        if (rc == CUABI_ERROR_ENTRY_POINT_NOT_FOUND || rc == CUABI_ERROR_DRIVER_TOO_OLD)
            atomic_store_explicit(&slot_failure[index], (int)rc, memory_order_relaxed);
        return rc;
    }
    atomic_store_explicit(&cuabi__slots[index], found, memory_order_release);
    *fn = found;
    return CUDA_SUCCESS;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake driver's front door: settings, initialisation, error names and
 * cuGetProcAddress_v2 with per-symbol versions and statuses.
 *
 * cuGetProcAddress_v2 follows what cuda.h 13.0 documents for the real one:
 *   - a cudaVersion above the driver's own version: CUDA_ERROR_INVALID_VALUE
 *     (the status is set to CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
 *   - an unknown symbol: CUDA_SUCCESS, *pfn = NULL, status SYMBOL_NOT_FOUND;
 *   - a known symbol whose every variant is newer than cudaVersion:
 *     CUDA_SUCCESS, *pfn = NULL, status VERSION_NOT_SUFFICIENT;
 *   - otherwise the newest variant not newer than cudaVersion, preferring the
 *     per-thread-default-stream variant when flags ask for it.
 * Variants newer than FAKECUDA_DRIVER_VERSION do not exist in the pretended driver.
 */
#include "fake_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- settings */

static struct fake_settings settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock;

static void fake_fatal(const char *what, const char *value)
{
    fprintf(stderr, "fakecuda: bad setting %s=%s\n", what, value);
    abort();
}

static long long env_integer(const char *name, long long fallback, long long lo, long long hi)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    errno = 0;
    char *end = NULL;
    long long value = strtoll(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || value < lo || value > hi)
        fake_fatal(name, text);
    return value;
}

static void init_lock(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

/* A fork while another thread holds the lock must not leave the child with
 * a lock nobody will release (the fork tests fork during calls), so the
 * child starts with a fresh one. The parent does not take the lock around
 * fork(): cuabi's own fork handler takes cuabi's lock, which is held while
 * cuabi calls into the fake, so taking the fake's lock there too would
 * order the two locks both ways. The fake's critical sections are short
 * updates of its tables; a child forked in the middle of one is a risk the
 * tests accept, as programs accept it with a real driver. */
static void reset_lock_in_child(void)
{
    init_lock();
}

static void settings_init(void)
{
    init_lock();
    pthread_atfork(NULL, NULL, reset_lock_in_child);

    const char *mode = getenv("FAKECUDA_MODE");
    if (mode == NULL || *mode == '\0' || strcmp(mode, "functional") == 0)
        settings.record_mode = 0;
    else if (strcmp(mode, "record") == 0)
        settings.record_mode = 1;
    else
        fake_fatal("FAKECUDA_MODE", mode);
    settings.driver_version = (int)env_integer("FAKECUDA_DRIVER_VERSION", 13000, 1000, 99990);
    settings.device_count = (int)env_integer("FAKECUDA_DEVICE_COUNT", 1, 0, FAKE_MAX_DEVICES);
    settings.init_result = (int)env_integer("FAKECUDA_INIT_RESULT", 0, 0, INT_MAX);
    settings.total_mem = (size_t)env_integer("FAKECUDA_TOTAL_MEM", 8LL << 30, 1 << 20, LLONG_MAX);
    settings.probe_delay_ms = (int)env_integer("FAKECUDA_PROBE_DELAY_MS", 0, 0, 10000);
}

const struct fake_settings *fake_settings(void)
{
    pthread_once(&settings_once, settings_init);
    return &settings;
}

void fake_lock(void)
{
    fake_settings();
    pthread_mutex_lock(&lock);
}

void fake_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ errors */

struct error_name {
    const char *name;
    long long value;
    char text[80];
};

#define FAKE_MAX_ERRORS 256
static struct error_name errors[FAKE_MAX_ERRORS];
static unsigned error_count;
static pthread_once_t errors_once = PTHREAD_ONCE_INIT;

static void add_error(const char *name, long long value)
{
    if (strcmp(name, "CUDA_SUCCESS") != 0 && strncmp(name, "CUDA_ERROR_", 11) != 0)
        return;
    if (error_count == FAKE_MAX_ERRORS)
        return;
    struct error_name *e = &errors[error_count++];
    e->name = name;
    e->value = value;
    /* The description is the name in words: CUDA_ERROR_OUT_OF_MEMORY -> "out of memory". */
    const char *words = strcmp(name, "CUDA_SUCCESS") == 0 ? "no error" : name + 11;
    size_t i = 0;
    for (; words[i] != '\0' && i + 1 < sizeof e->text; i++) {
        char c = words[i];
        e->text[i] = c == '_' ? ' ' : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    e->text[i] = '\0';
}

static void errors_init(void)
{
    /* The list of every enumerator of cuda.h comes from the generated probe list;
     * only CUresult's members (CUDA_SUCCESS, CUDA_ERROR_*) are kept. */
#define CUABI_PROBE_TYPE(T)
#define CUABI_PROBE_FIELD(T, member)
#define CUABI_PROBE_DEFINE(NAME)
#define CUABI_PROBE_ENUM(NAME) add_error(#NAME, (long long)(NAME));
#include "generated/layout_probe.h"
#undef CUABI_PROBE_TYPE
#undef CUABI_PROBE_FIELD
#undef CUABI_PROBE_DEFINE
#undef CUABI_PROBE_ENUM
}

static const struct error_name *find_error(CUresult code)
{
    pthread_once(&errors_once, errors_init);
    /* A pretended driver does not know the codes of a newer CUDA: 13.0's two newest,
     * and the five 13.5 added. */
    if (fake_settings()->driver_version < 13000 &&
        (code == CUDA_ERROR_TENSOR_MEMORY_LEAK || code == CUDA_ERROR_KEY_ROTATION))
        return NULL;
    if (fake_settings()->driver_version < 13050 &&
        (code == CUDA_ERROR_MULTICAST_RESOURCE_FULL || code == CUDA_ERROR_INSUFFICIENT_LOADER_VERSION ||
         code == CUDA_ERROR_STREAM_DETACHED || code == CUDA_ERROR_GRAPH_RECAPTURE_FAILURE ||
         code == CUDA_ERROR_FABRIC_NOT_READY))
        return NULL;
    for (unsigned i = 0; i < error_count; i++)
        if (errors[i].value == (long long)code)
            return &errors[i];
    return NULL;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_name *e = find_error(error);
    *pStr = e != NULL ? e->name : NULL;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (pStr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_name *e = find_error(error);
    *pStr = e != NULL ? e->text : NULL;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------ init/version */

static _Atomic int initialized;

int fake_is_initialized(void)
{
    return atomic_load(&initialized);
}

FAKE_EXPORT CUresult cuInit(unsigned int Flags)
{
    const struct fake_settings *s = fake_settings();
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->init_result != CUDA_SUCCESS)
        return (CUresult)s->init_result;
    if (s->device_count == 0)
        return CUDA_ERROR_NO_DEVICE;
    atomic_store(&initialized, 1);
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = fake_settings()->driver_version;
    return CUDA_SUCCESS;
}

static CUresult fake_cuProfilerStart(void)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    fake_unlock();
    return r;
}

static CUresult fake_cuProfilerStop(void)
{
    return fake_cuProfilerStart();
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);

const struct fake_impl fake_impls_driver[] = {
    FAKE_IMPL("cuInit", 2000, cuInit),
    FAKE_IMPL("cuDriverGetVersion", 2020, cuDriverGetVersion),
    FAKE_IMPL("cuGetErrorName", 6000, cuGetErrorName),
    FAKE_IMPL("cuGetErrorString", 6000, cuGetErrorString),
    FAKE_IMPL("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    FAKE_IMPL("cuProfilerStart", 4000, fake_cuProfilerStart),
    FAKE_IMPL("cuProfilerStop", 4000, fake_cuProfilerStop),
    FAKE_IMPL_END,
};

/* ---------------------------------------------------------- request ledger */

struct request_slot {
    char *name;
    struct fakecuda_request info;
};

#define REQUEST_SLOTS 2048
static struct request_slot requests[REQUEST_SLOTS];
static uint64_t request_total;

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Caller holds the lock. NULL when the ledger is full (then nothing is noted). */
static struct request_slot *request_slot(const char *name, int create)
{
    uint32_t h = name_hash(name);
    for (unsigned probe = 0; probe < REQUEST_SLOTS; probe++) {
        struct request_slot *slot = &requests[(h + probe) % REQUEST_SLOTS];
        if (slot->name == NULL) {
            if (!create)
                return NULL;
            slot->name = strdup(name);
            return slot->name != NULL ? slot : NULL;
        }
        if (strcmp(slot->name, name) == 0)
            return slot;
    }
    return NULL;
}

static void note_request(const char *symbol, int version, unsigned long long flags, CUresult result,
                         CUdriverProcAddressQueryResult status)
{
    fake_lock();
    request_total++;
    struct request_slot *slot = symbol != NULL ? request_slot(symbol, 1) : NULL;
    if (slot != NULL) {
        slot->info.count++;
        slot->info.version = version;
        slot->info.flags = flags;
        slot->info.result = (int)result;
        slot->info.status = (int)status;
    }
    fake_unlock();
}

FAKE_EXPORT int fakecuda_request_info(const char *name, struct fakecuda_request *out)
{
    if (name == NULL || out == NULL)
        return 0;
    fake_lock();
    struct request_slot *slot = request_slot(name, 0);
    if (slot != NULL)
        *out = slot->info;
    fake_unlock();
    return slot != NULL;
}

FAKE_EXPORT uint64_t fakecuda_request_total(void)
{
    fake_lock();
    uint64_t total = request_total;
    fake_unlock();
    return total;
}

/* Injected failures: the next `remaining` requests for `name` fail with
 * `result` (fakecuda_fail_requests). Caller holds the lock. */
#define FAILURE_SLOTS 8
static struct {
    char name[FAKECUDA_NAME_MAX];
    int result;
    unsigned remaining;
} failures[FAILURE_SLOTS];

FAKE_EXPORT int fakecuda_fail_requests(const char *name, int result, unsigned times)
{
    int done = 0;
    if (name == NULL || strlen(name) >= FAKECUDA_NAME_MAX)
        return 0;
    fake_lock();
    for (unsigned i = 0; i < FAILURE_SLOTS && !done; i++) {
        if (failures[i].remaining == 0 || strcmp(failures[i].name, name) == 0) {
            strcpy(failures[i].name, name);
            failures[i].result = result;
            failures[i].remaining = times;
            done = 1;
        }
    }
    fake_unlock();
    return done;
}

/* The injected failure for symbol, using one up; CUDA_SUCCESS when none. */
static CUresult injected_failure(const char *symbol)
{
    CUresult r = CUDA_SUCCESS;
    fake_lock();
    for (unsigned i = 0; i < FAILURE_SLOTS; i++) {
        if (failures[i].remaining != 0 && strcmp(failures[i].name, symbol) == 0) {
            failures[i].remaining--;
            r = (CUresult)failures[i].result;
            break;
        }
    }
    fake_unlock();
    return r;
}

FAKE_EXPORT int fakecuda_is_record_mode(void)
{
    return fake_settings()->record_mode;
}

/* ------------------------------------------------------------- resolution */

static const struct fake_impl *const impl_tables[] = {
    fake_impls_driver, fake_impls_context, fake_impls_memory, fake_impls_stream, fake_impls_module,
    fake_impls_ipc, fake_impls_graph, fake_impls_vmm, fake_impls_green,
};

/* The variant a request gets; *known says whether the pretended driver has any variant. */
static const struct fake_impl *choose_impl(const char *symbol, int version, unsigned long long flags,
                                           int *known)
{
    const int driver_version = fake_settings()->driver_version;
    const int want_per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct fake_impl *best = NULL;
    *known = 0;
    for (size_t t = 0; t < sizeof impl_tables / sizeof impl_tables[0]; t++) {
        for (const struct fake_impl *impl = impl_tables[t]; impl->name != NULL; impl++) {
            if (strcmp(impl->name, symbol) != 0 || impl->version > driver_version)
                continue;
            *known = 1;
            if (impl->version > version || (impl->per_thread && !want_per_thread))
                continue;
            if (best == NULL || impl->version > best->version ||
                (impl->version == best->version && impl->per_thread))
                best = impl;
        }
    }
    return best;
}

FAKE_EXPORT int fakecuda_impl_version(const char *name, unsigned long long flags, int version)
{
    int known = 0;
    if (name == NULL)
        return -1;
    const struct fake_impl *impl = choose_impl(name, version, flags, &known);
    if (!known)
        return -1;
    return impl != NULL ? impl->version : 0;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    const struct fake_settings *s = fake_settings();
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result;

    if (pfn != NULL)
        *pfn = NULL;
    if (symbol != NULL && s->probe_delay_ms > 0 && strcmp(symbol, "cuGetProcAddress") == 0) {
        /* A driver slow to answer the loader's first question: widens the
         * window in which concurrent first calls could load twice. */
        struct timespec delay = { s->probe_delay_ms / 1000, (long)(s->probe_delay_ms % 1000) * 1000000L };
        nanosleep(&delay, NULL);
    }
    if (symbol != NULL && (result = injected_failure(symbol)) != CUDA_SUCCESS) {
        /* A driver failing before it looks the symbol up: no status written. */
        note_request(symbol, cudaVersion, flags, result, (CUdriverProcAddressQueryResult)-1);
        return result;
    }
    if (symbol == NULL || pfn == NULL ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0 ||
        flags == (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else if (cudaVersion > s->driver_version) {
        status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        result = CUDA_ERROR_INVALID_VALUE;
    } else if (strncmp(symbol, FAKECUDA_ECHO_PREFIX, strlen(FAKECUDA_ECHO_PREFIX)) == 0) {
        result = fake_echo_resolve(symbol, cudaVersion, flags, pfn, &status);
    } else if (s->record_mode) {
        result = fake_record_resolve(symbol, cudaVersion, flags, pfn, &status);
    } else {
        int known = 0;
        const struct fake_impl *impl = choose_impl(symbol, cudaVersion, flags, &known);
        result = CUDA_SUCCESS;
        if (impl != NULL) {
            *pfn = impl->fn;
            status = CU_GET_PROC_ADDRESS_SUCCESS;
        } else {
            status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        }
    }
    if (symbolStatus != NULL)
        *symbolStatus = status;
    note_request(symbol, cudaVersion, flags, result, status);
    return result;
}

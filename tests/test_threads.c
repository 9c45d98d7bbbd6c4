/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads and the one load (a process each, argv[1] picks):
 *
 *   first-calls   64 threads make their first calls at the same moment: the
 *                 driver is loaded once, every thread sees the same result,
 *                 and the calls that race to resolve the same entry points
 *                 (and to fill the cuabi_call cache) all work. ctest runs it
 *                 twice, once with the fake's answer to the loader's probe
 *                 slowed down (FAKECUDA_PROBE_DELAY_MS), so that all 64
 *                 arrive while the load is in progress.
 *   late-reader   one thread loads; another, told so through a relaxed
 *                 atomic (which orders nothing), then reads the load's
 *                 results on the lock-free path. Only the load's release
 *                 store and the reader's acquire load order the results'
 *                 writes before those reads: under ThreadSanitizer, which
 *                 CI runs it with, a weaker load is a reported data race.
 */
#define _GNU_SOURCE
#include "support.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define THREADS 64

static pthread_barrier_t start;

struct result {
    CUresult status, init, version_rc, count_rc, call_rc, ctx_rc, alloc_rc, copy_rc;
    int version, count, call_version;
    unsigned checksum;
};

static void *first_calls(void *arg)
{
    struct result *r = arg;
    pthread_barrier_wait(&start);
    /* Every thread's very first cuabi call, all at once. */
    r->version_rc = cuabi_cuDriverGetVersion(&r->version);
    r->status = cuabi_driver_status();
    r->init = cuabi_cuInit(0);
    r->count_rc = cuabi_cuDeviceGetCount(&r->count);
    int *pv = &r->call_version;
    void *args[] = { &pv };
    r->call_rc = cuabi_call("cuDriverGetVersion", 0, "p", args);

    /* Each thread its own work on the shared primary context. */
    CUcontext ctx;
    r->ctx_rc = cuabi_cuDevicePrimaryCtxRetain(&ctx, 0);
    if (r->ctx_rc == CUDA_SUCCESS)
        r->ctx_rc = cuabi_cuCtxSetCurrent(ctx);
    CUdeviceptr d = 0;
    unsigned host[32], back[32];
    for (unsigned i = 0; i < 32; i++)
        host[i] = i ^ (unsigned)(uintptr_t)r;
    r->alloc_rc = cuabi_cuMemAlloc(&d, sizeof host);
    if (r->alloc_rc == CUDA_SUCCESS) {
        r->copy_rc = cuabi_cuMemcpyHtoD(d, host, sizeof host);
        if (r->copy_rc == CUDA_SUCCESS)
            r->copy_rc = cuabi_cuMemcpyDtoH(back, d, sizeof back);
        r->checksum = memcmp(host, back, sizeof host) == 0;
        cuabi_cuMemFree(d);
    }
    if (r->ctx_rc == CUDA_SUCCESS) {
        cuabi_cuCtxSetCurrent(NULL);
        cuabi_cuDevicePrimaryCtxRelease(0);
    }
    return NULL;
}

static void test_first_calls_at_once(void **state)
{
    (void)state;
    static struct result results[THREADS];
    pthread_t threads[THREADS];
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, first_calls, &results[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < THREADS; i++) {
        const struct result *r = &results[i];
        check_cu(r->status);
        check_cu(r->init);
        check_cu(r->version_rc);
        check_cu(r->count_rc);
        check_cu(r->call_rc);
        check_cu(r->ctx_rc);
        check_cu(r->alloc_rc);
        check_cu(r->copy_rc);
        assert_int_equal(r->version, 13000);
        assert_int_equal(r->call_version, 13000);
        assert_int_equal(r->count, 1);
        assert_int_equal(r->checksum, 1);
    }
    /* One load: the loader's probe reached the driver exactly once. */
    struct fakecuda_request probe;
    assert_true(fake_request_info("cuGetProcAddress", &probe));
    assert_int_equal(probe.count, 1);
    /* Racing first calls may each resolve, but never more than once per thread. */
    struct fakecuda_request init;
    assert_true(fake_request_info("cuInit", &init));
    assert_in_range(init.count, 1, THREADS);
    assert_int_equal(fake_live_allocations(), 0);
}

static atomic_int loaded; /* only ever accessed relaxed: it orders nothing */
static CUresult loader_status;
static CUresult reader_status;
static const char *reader_path;
static int reader_mode;

static void *load_once(void *arg)
{
    (void)arg;
    loader_status = cuabi_driver_status();
    atomic_store_explicit(&loaded, 1, memory_order_relaxed);
    return NULL;
}

static void *read_after_load(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&loaded, memory_order_relaxed))
        sched_yield();
    /* The load is over: these take the lock-free path. */
    reader_status = cuabi_driver_status();
    reader_path = cuabi_driver_path();
    reader_mode = cuabi_default_stream_mode();
    return NULL;
}

/* A thread that never took the lock sees everything the load wrote. */
static void test_late_reader_sees_the_load(void **state)
{
    (void)state;
    pthread_t loader, reader;
    assert_int_equal(pthread_create(&reader, NULL, read_after_load, NULL), 0);
    assert_int_equal(pthread_create(&loader, NULL, load_once, NULL), 0);
    assert_int_equal(pthread_join(loader, NULL), 0);
    assert_int_equal(pthread_join(reader, NULL), 0);
    check_cu(loader_status);
    check_cu(reader_status);
    assert_string_equal(reader_path, cuabi_driver_path());
    assert_int_equal(reader_mode, 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "first-calls";
    const struct CMUnitTest first_calls[] = {
        cmocka_unit_test(test_first_calls_at_once),
    };
    const struct CMUnitTest late_reader[] = {
        cmocka_unit_test(test_late_reader_sees_the_load),
    };
    if (strcmp(mode, "first-calls") == 0)
        return cmocka_run_group_tests_name("threads: first calls", first_calls, NULL, NULL);
    if (strcmp(mode, "late-reader") == 0)
        return cmocka_run_group_tests_name("threads: late reader", late_reader, NULL, NULL);
    fprintf(stderr, "usage: test_threads [first-calls|late-reader]\n");
    return 2;
}

/*
 * 64 threads make their first calls at the same moment: the driver is
 * loaded once, every thread sees the same result, and the calls that race to
 * resolve the same entry points (and to fill the cuabi_call cache) all work.
 * Also run under ThreadSanitizer in CI.
 */
#define _GNU_SOURCE
#include "support.h"

#include <pthread.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_calls_at_once),
    };
    return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}

/*
 * cuabi_call (any entry point by name and signature, through libffi) and
 * cuabi_get_proc, on the functional fake driver: malformed signatures are
 * refused before anything is looked up, good ones reach the driver with
 * their arguments, and look-up failures come back as cuabi's own codes.
 */
#define _GNU_SOURCE
#include "support.h"

#include <string.h>

static void test_malformed_signatures(void **state)
{
    (void)state;
    int version = 0;
    void *args[40];
    for (int i = 0; i < 40; i++)
        args[i] = &version;
    uint64_t asked = ((fakecuda_request_total_fn)fake_symbol("fakecuda_request_total"))();
    static const char *const bad[] = {
        "x", "p?", "pp ", " p", "P", "ppv", "iIqQzpfdX", "\xff", "p\n",
        /* 33 letters: one more than CUABI_CALL_MAX_PARAMS */
        "ppppppppppppppppppppppppppppppppp",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_cu(CUABI_ERROR_BAD_SIGNATURE, cuabi_call("cuDriverGetVersion", 0, bad[i], args));
        assert_cu(CUABI_ERROR_BAD_SIGNATURE, cuabi_call("noSuchEntryPoint", 0, bad[i], args));
    }
    /* Nothing was looked up for any of them. */
    assert_int_equal(((fakecuda_request_total_fn)fake_symbol("fakecuda_request_total"))(), asked);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call("cuDriverGetVersion", 0, NULL, args));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call(NULL, 0, "p", args));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call("cuDriverGetVersion", 0, "p", NULL));
    void *null_arg[] = { NULL };
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call("cuDriverGetVersion", 0, "p", null_arg));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call("cuDriverGetVersion", -1, "p", args));
    /* 32 letters is the documented maximum: well formed, so it gets as far as the look-up. */
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND,
              cuabi_call("noSuchEntryPoint", 0, "pppppppppppppppppppppppppppppppp", args));
}

static void test_good_calls(void **state)
{
    (void)state;
    int version = 0;
    int *pversion = &version;
    void *args1[] = { &pversion };
    check_cu(cuabi_call("cuDriverGetVersion", 0, "p", args1));
    assert_int_equal(version, 13000);
    /* Cached the second time: the driver is asked once per (name, version, signature). */
    struct fakecuda_request before, after;
    assert_true(fake_request_info("cuDriverGetVersion", &before));
    version = 0;
    check_cu(cuabi_call("cuDriverGetVersion", 0, "p", args1));
    assert_int_equal(version, 13000);
    assert_true(fake_request_info("cuDriverGetVersion", &after));
    assert_int_equal(after.count, before.count);

    unsigned flags = 0;
    void *args_init[] = { &flags };
    check_cu(cuabi_call("cuInit", 2000, "I", args_init));

    /* Integers, a size_t and a 64-bit device pointer through one signature. */
    CUdevice dev;
    CUcontext ctx;
    check_cu(cuabi_cuDeviceGet(&dev, 0));
    check_cu(cuabi_cuDevicePrimaryCtxRetain(&ctx, dev));
    check_cu(cuabi_cuCtxSetCurrent(ctx));
    CUdeviceptr d = 0;
    CUdeviceptr *pd = &d;
    size_t bytes = 256;
    void *args_alloc[] = { &pd, &bytes };
    check_cu(cuabi_call("cuMemAlloc", 3020, "pz", args_alloc));
    assert_true(d != 0);
    unsigned value = 0xABCD1234u;
    size_t count = 64;
    void *args_set[] = { &d, &value, &count };
    check_cu(cuabi_call("cuMemsetD32", 3020, "QIz", args_set));
    unsigned back[64];
    check_cu(cuabi_cuMemcpyDtoH(back, d, sizeof back));
    for (int i = 0; i < 64; i++)
        assert_int_equal(back[i], 0xABCD1234u);
    /* The driver's own result comes back unchanged. */
    bytes = 0;
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_call("cuMemAlloc", 3020, "pz", args_alloc));
    void *args_free[] = { &d };
    check_cu(cuabi_call("cuMemFree", 3020, "Q", args_free));

    /* An entry point without parameters: the empty signature. */
    check_cu(cuabi_call("cuCtxSynchronize", 2000, "", NULL));
    check_cu(cuabi_cuCtxSetCurrent(NULL));
    check_cu(cuabi_cuDevicePrimaryCtxRelease(dev));
}

static void test_lookup_failures(void **state)
{
    (void)state;
    void *fn = (void *)&fn;
    int version = 0;
    int *pversion = &version;
    void *args[] = { &pversion };
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_call("cuNoSuchThing", 0, "p", args));
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_get_proc("cuNoSuchThing", 0, 0, &fn));
    assert_null(fn);
    /* The fake implements cuMemAlloc only in its 3020 form: an older ABI is refused. */
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_get_proc("cuMemAlloc", 2000, 0, &fn));
    /* A version above the driver's own is refused by the driver. */
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_get_proc("cuMemAlloc", 99000, 0, &fn));
    check_cu(cuabi_get_proc("cuMemAlloc", 3020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &fn));
    assert_non_null(fn);
    /* The per-thread variant where one exists. */
    void *legacy = NULL, *per_thread = NULL;
    check_cu(cuabi_get_proc("cuMemcpyHtoD", 3020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &legacy));
    check_cu(cuabi_get_proc("cuMemcpyHtoD", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &per_thread));
    assert_non_null(legacy);
    assert_non_null(per_thread);
    struct fakecuda_request info;
    assert_true(fake_request_info("cuMemcpyHtoD", &info));
    assert_int_equal(info.flags, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    assert_int_equal(info.version, 7000);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_get_proc(NULL, 0, 0, &fn));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_get_proc("cuMemAlloc", 3020, 0, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_signatures),
        cmocka_unit_test(test_good_calls),
        cmocka_unit_test(test_lookup_failures),
    };
    return cmocka_run_group_tests_name("cuabi_call and cuabi_get_proc", tests, NULL, NULL);
}

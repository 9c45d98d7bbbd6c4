/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi_call (any entry point by name and signature, through libffi) and
 * cuabi_get_proc, on the functional fake driver: malformed signatures are
 * refused before anything is looked up, good ones reach the driver with
 * their arguments, and look-up failures come back as cuabi's own codes.
 */
#define _GNU_SOURCE
#include "support.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

static struct fakecuda_call last_echo(void)
{
    struct fakecuda_call call;
    memset(&call, 0, sizeof call);
    assert_true(((fakecuda_record_last_fn)fake_symbol("fakecuda_record_last"))(&call));
    return call;
}

static uint64_t bits_of_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t bits_of_double(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* A copy of the size bytes at value, placed so that they end where an
 * inaccessible page begins: reading the argument wider than its letter
 * says (a float read as a double) faults instead of passing unnoticed. */
static void *at_page_end(const void *value, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(two != MAP_FAILED);
    assert_int_equal(mprotect(two + page, (size_t)page, PROT_NONE), 0);
    unsigned char *at = two + page - size;
    memcpy(at, value, size);
    return at;
}

/* Every signature letter reaches the callee as its C type, in registers and on the stack. */
static void test_every_letter_reaches_the_callee(void **state)
{
    (void)state;
    /* Values that only survive when passed at their full width and in the
     * right register class: 64-bit ones beyond 32 bits, a float that is not
     * a double's low half, negative 32-bit ones. */
    int32_t i = -123456;
    uint32_t u = 0x89ABCDEFu;
    int64_t q = -(INT64_C(1) << 40) - 5;
    uint64_t Q = UINT64_C(0xFEDCBA9876543210);
    size_t z = ((size_t)1 << 40) + 7;
    void *p = (void *)(uintptr_t)0x7F0011223344u;
    float f = 1.25f;
    double d = -2.0e100;
    /* 24 parameters: more than the argument registers of both classes. */
    static const char sig[] = "dqzfiIQpdqzfiIQpdqzfiIQp";
    void *args[24];
    uint64_t expected[24];
    void *guarded[8] = { at_page_end(&d, sizeof d), at_page_end(&q, sizeof q), at_page_end(&z, sizeof z),
                         at_page_end(&f, sizeof f), at_page_end(&i, sizeof i), at_page_end(&u, sizeof u),
                         at_page_end(&Q, sizeof Q), at_page_end(&p, sizeof p) };
    for (int k = 0; k < 24; k += 8) {
        void *group[8];
        memcpy(group, guarded, sizeof group);
        uint64_t bits[8] = { bits_of_double(d), (uint64_t)q, (uint64_t)z, bits_of_float(f),
                             (uint32_t)i, u, Q, (uint64_t)(uintptr_t)p };
        memcpy(&args[k], group, sizeof group);
        memcpy(&expected[k], bits, sizeof bits);
    }
    char name[64];
    snprintf(name, sizeof name, "%s%s", FAKECUDA_ECHO_PREFIX, sig);
    check_cu(cuabi_call(name, 0, sig, args));
    struct fakecuda_call call = last_echo();
    assert_string_equal(call.name, name);
    assert_int_equal(call.nargs, 24);
    for (int k = 0; k < 24; k++) {
        if (call.args[k] != expected[k])
            fail_msg("argument %d ('%c'): passed %#llx, the callee got %#llx", k, sig[k],
                     (unsigned long long)expected[k], (unsigned long long)call.args[k]);
    }
    /* Each letter alone, as the only parameter. */
    for (int k = 0; k < 8; k++) {
        char one[2] = { sig[k], '\0' };
        snprintf(name, sizeof name, "%s%s", FAKECUDA_ECHO_PREFIX, one);
        check_cu(cuabi_call(name, 0, one, &args[k]));
        call = last_echo();
        assert_int_equal(call.nargs, 1);
        if (call.args[0] != expected[k])
            fail_msg("'%c' alone: passed %#llx, the callee got %#llx", sig[k],
                     (unsigned long long)expected[k], (unsigned long long)call.args[0]);
    }
    /* The callee's result comes back unchanged. */
    ((fakecuda_record_set_result_fn)fake_symbol("fakecuda_record_set_result"))(CUDA_ERROR_NOT_READY);
    assert_cu(CUDA_ERROR_NOT_READY, cuabi_call(name, 0, "p", &args[7]));
    ((fakecuda_record_set_result_fn)fake_symbol("fakecuda_record_set_result"))(CUDA_SUCCESS);
}

static unsigned requests_for(const char *name)
{
    struct fakecuda_request info;
    return fake_request_info(name, &info) ? info.count : 0;
}

/* The cache tells calls apart by version and by signature, not only by name. */
static void test_cache_key_has_version_and_signature(void **state)
{
    (void)state;
    const char *name = FAKECUDA_ECHO_PREFIX "Q";
    const unsigned before = requests_for(name);
    uint64_t value = 42;
    void *args[] = { &value };
    check_cu(cuabi_call(name, 12000, "Q", args));
    check_cu(cuabi_call(name, 12000, "Q", args));
    assert_int_equal(requests_for(name), before + 1); /* the second call came from the cache */
    assert_int_equal(last_echo().requested_version, 12000);

    check_cu(cuabi_call(name, 12080, "Q", args)); /* another version: looked up again */
    assert_int_equal(requests_for(name), before + 2);
    assert_int_equal(last_echo().requested_version, 12080);
    check_cu(cuabi_call(name, 12000, "Q", args)); /* and the first is still cached as it was */
    assert_int_equal(requests_for(name), before + 2);
    assert_int_equal(last_echo().requested_version, 12000);

    check_cu(cuabi_call(name, 12000, "p", args)); /* another signature: looked up again */
    assert_int_equal(requests_for(name), before + 3);
    check_cu(cuabi_call(name, 12000, "z", args));
    assert_int_equal(requests_for(name), before + 4);
    assert_int_equal(last_echo().args[0], 42);
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

/* B and H: cuMemsetD8 ("QBz") and cuMemsetD16 ("QHz") write their value. */
static void test_small_integer_letters(void **state)
{
    (void)state;
    setup_primary_context();
    CUdeviceptr d = 0;
    check_cu(cuabi_cuMemAlloc(&d, 64));
    uint8_t byte = 0xA7;
    size_t count = 64;
    void *args8[] = { &d, &byte, &count };
    check_cu(cuabi_call("cuMemsetD8", 3020, "QBz", args8));
    uint8_t back8[64];
    check_cu(cuabi_cuMemcpyDtoH(back8, d, sizeof back8));
    for (int i = 0; i < 64; i++)
        assert_int_equal(back8[i], 0xA7);
    uint16_t half = 0xBEEF;
    count = 32;
    void *args16[] = { &d, &half, &count };
    check_cu(cuabi_call("cuMemsetD16", 3020, "QHz", args16));
    uint16_t back16[32];
    check_cu(cuabi_cuMemcpyDtoH(back16, d, sizeof back16));
    for (int i = 0; i < 32; i++)
        assert_int_equal(back16[i], 0xBEEF);
    check_cu(cuabi_cuMemFree(d));
    release_primary_context();
}

/* Structs by value, on a real launch: cuLaunchKernel's first six parameters fill the six
 * integer registers of x86-64, so blockDimZ and sharedMemBytes travel in two 8-byte stack
 * slots, which a 16-byte struct fills the same way ({[16]} with the bytes of both, or
 * {{Q}{Q}}). A struct member of the wrong size or a nested struct built wrongly moves
 * every later argument, and the kernel launch_info reports what the driver received. */
static void test_structs_by_value(void **state)
{
    (void)state;
#if defined(__x86_64__) && defined(__linux__)
    setup_primary_context();
    CUmodule mod;
    CUfunction info;
    check_cu(cuabi_cuModuleLoadData(&mod, fake_module_image));
    check_cu(cuabi_cuModuleGetFunction(&info, mod, "launch_info"));
    CUdeviceptr out;
    check_cu(cuabi_cuMemAlloc(&out, 8 * sizeof(uint32_t)));
    void *kernel_args[] = { &out };
    void **params = kernel_args, **extra = NULL;
    CUstream stream = NULL;
    uint32_t grid[3] = { 2, 3, 4 }, block[2] = { 5, 6 };
    const uint32_t block_z = 7, shared = 96;
    unsigned char bytes[16] = { 0 };
    memcpy(bytes, &block_z, 4);
    memcpy(bytes + 8, &shared, 4);
    struct { uint64_t z, shared; } nested = { block_z, shared };
    const char *signatures[] = { "pIIIIIIIppp", "pIIIII{[16]}ppp", "pIIIII{{Q}{Q}}ppp" };
    for (int s = 0; s < 3; s++) {
        void *args[11] = { &info, &grid[0], &grid[1], &grid[2], &block[0], &block[1] };
        if (s == 0) {
            args[6] = (void *)&block_z;
            args[7] = (void *)&shared;
        } else {
            args[6] = s == 1 ? (void *)bytes : (void *)&nested;
        }
        int next = s == 0 ? 8 : 7;
        args[next++] = &stream;
        args[next++] = &params;
        args[next++] = &extra;
        check_cu(cuabi_cuMemsetD32(out, 0, 8));
        check_cu(cuabi_call("cuLaunchKernel", 4000, signatures[s], args));
        uint32_t seen[8];
        check_cu(cuabi_cuMemcpyDtoH(seen, out, sizeof seen));
        const uint32_t want[7] = { 2, 3, 4, 5, 6, block_z, shared };
        for (int k = 0; k < 7; k++)
            if (seen[k] != want[k])
                fail_msg("%s: launch_info word %d is %u, want %u", signatures[s], k, seen[k], want[k]);
    }
    check_cu(cuabi_cuMemFree(out));
    check_cu(cuabi_cuModuleUnload(mod));
    release_primary_context();
#else
    skip();
#endif
}

/* Struct signatures that are not well formed, or over the limits, are refused before any
 * look-up; those at the limits are accepted. */
static void test_malformed_struct_signatures(void **state)
{
    (void)state;
    static unsigned char storage[8192];
    void *args[40];
    for (int i = 0; i < 40; i++)
        args[i] = storage;
    uint64_t asked = ((fakecuda_request_total_fn)fake_symbol("fakecuda_request_total"))();
    static const char *const bad[] = {
        "{", "}", "{}", "p}", "{p", "{p}}", "{{p}", "[4]", "p[4]", "{[]}", "{[0]}", "{[01]}",
        "{[4}", "{[4]]}", "{[-4]}", "{[+4]}", "{[ 4]}", "{[4 ]}", "{[x]}", "{]}", "{[4]x}", "{P}",
        "{[1025]}",                  /* more than CUABI_CALL_MAX_STRUCT_MEMBERS */
        "{[1000]}{[25]}",            /* the same, over two structs */
        "{[99999999999999999999]}",  /* a count that overflows */
        "{{{{{{{{{{p}}}}}}}}}}",     /* ten levels: nested too deep */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (cuabi_call("cuIpcOpenEventHandle", 0, bad[i], args) != CUABI_ERROR_BAD_SIGNATURE)
            fail_msg("\"%s\" was not refused as a bad signature", bad[i]);
        assert_cu(CUABI_ERROR_BAD_SIGNATURE, cuabi_call("noSuchEntryPoint", 0, bad[i], args));
    }
    assert_int_equal(((fakecuda_request_total_fn)fake_symbol("fakecuda_request_total"))(), asked);
    /* At the limits: well formed, so they reach the look-up. */
    static const char *const good[] = {
        "{[1024]}", "{[1000]}{[24]}", "{{{{{{{{{p}}}}}}}}}", "BH{BHiIqQzpfd[3]{d}}", "{[1]}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (cuabi_call("noSuchEntryPoint", 0, good[i], args) != CUABI_ERROR_ENTRY_POINT_NOT_FOUND)
            fail_msg("\"%s\" was refused", good[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_signatures),
        cmocka_unit_test(test_good_calls),
        cmocka_unit_test(test_every_letter_reaches_the_callee),
        cmocka_unit_test(test_cache_key_has_version_and_signature),
        cmocka_unit_test(test_lookup_failures),
        cmocka_unit_test(test_small_integer_letters),
        cmocka_unit_test(test_structs_by_value),
        cmocka_unit_test(test_malformed_struct_signatures),
    };
    return cmocka_run_group_tests_name("cuabi_call and cuabi_get_proc", tests, NULL, NULL);
}

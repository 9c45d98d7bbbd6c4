/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resolving entry points: which failures cuabi remembers. docs/abi.md: an
 * entry point the driver lacks (or has only in a newer ABI) is asked for once
 * and refused on every call after; any other failure of the look-up is not
 * remembered, and the next call asks the driver again. The same holds for
 * cuabi_call, whose cache keeps only successful look-ups. The fake driver
 * makes a look-up fail on demand (fakecuda_fail_requests).
 */
#define _GNU_SOURCE
#include "support.h"

static unsigned requests_for(const char *name)
{
    struct fakecuda_request info;
    return fake_request_info(name, &info) ? info.count : 0;
}

static void fail_next_requests(const char *name, CUresult result, unsigned times)
{
    assert_true(((fakecuda_fail_requests_fn)fake_symbol("fakecuda_fail_requests"))(name, (int)result, times));
}

/* A forwarder whose look-up failed for a passing reason asks again on its next call. */
static void test_forwarder_retries_transient_failure(void **state)
{
    (void)state;
    unsigned flags = 0;
    fail_next_requests("cuCtxGetFlags", CUDA_ERROR_OUT_OF_MEMORY, 2);
    assert_cu(CUDA_ERROR_OUT_OF_MEMORY, cuabi_cuCtxGetFlags(&flags));
    assert_cu(CUDA_ERROR_OUT_OF_MEMORY, cuabi_cuCtxGetFlags(&flags));
    assert_int_equal(requests_for("cuCtxGetFlags"), 2);
    check_cu(cuabi_cuCtxGetFlags(&flags)); /* the driver answers now */
    check_cu(cuabi_cuCtxGetFlags(&flags));
    assert_int_equal(requests_for("cuCtxGetFlags"), 3); /* resolved once, then from the slot */
}

/* An entry point the driver lacks is asked for once and refused on every call. */
static void test_forwarder_remembers_missing_entry_point(void **state)
{
    (void)state;
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_cuArrayCreate(NULL, NULL));
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_cuArrayCreate(NULL, NULL));
    assert_int_equal(requests_for("cuArrayCreate"), 1);
}

/* cuabi_call does not cache a failed look-up: the next call asks again and works. */
static void test_call_retries_failed_lookup(void **state)
{
    (void)state;
    int version = 0, *pversion = &version;
    void *args[] = { &pversion };
    const unsigned before = requests_for("cuDriverGetVersion");
    fail_next_requests("cuDriverGetVersion", CUDA_ERROR_NOT_PERMITTED, 1);
    assert_cu(CUDA_ERROR_NOT_PERMITTED, cuabi_call("cuDriverGetVersion", 2020, "p", args));
    check_cu(cuabi_call("cuDriverGetVersion", 2020, "p", args));
    assert_int_equal(version, 13000);
    check_cu(cuabi_call("cuDriverGetVersion", 2020, "p", args));
    assert_int_equal(requests_for("cuDriverGetVersion"), before + 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forwarder_retries_transient_failure),
        cmocka_unit_test(test_forwarder_remembers_missing_entry_point),
        cmocka_unit_test(test_call_retries_failed_lookup),
    };
    return cmocka_run_group_tests_name("resolve: which failures are remembered", tests,
                                       group_setup_primary_context, group_release_primary_context);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Versions: the library's own, the pinned driver ABI versions of a sample of
 * entry points against what CUDA 13.0's cudaTypedefs.h says, and the fake
 * driver's functional entry points against the generated table (so that the
 * fake implements exactly the signature each forwarder is pinned to).
 */
#define _GNU_SOURCE
#include "support.h"

#include <string.h>

struct entry {
    const char *name;
    const char *driver_name;
    int version;
    int ptds_version;
    const char *signature;
};

#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    { #name, driver_name, version, ptds_version, signature },
static const struct entry entries[] = {
#include "generated/entry_points.h"
};
#undef CUABI_ENTRY

static const struct entry *find(const char *name)
{
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    return NULL;
}

static void test_library_version(void **state)
{
    (void)state;
    /* The build's project version, the header's macros and the library agree. */
    assert_int_equal(cuabi_version(), CUABI_PROJECT_VERSION_NUMBER);
    assert_int_equal(cuabi_version(), CUABI_VERSION);
    assert_int_equal(CUABI_VERSION, CUABI_MAKE_VERSION(1, 1, 0));
}

/* Facts read off cudaTypedefs.h of CUDA 13.0 (the PFN_cuXxx_vNNNN typedef
 * whose parameters match cuda.h's declaration), checked independently of the
 * generator that wrote the table. */
static void test_pinned_versions(void **state)
{
    (void)state;
    static const struct {
        const char *name, *driver_name;
        int version, ptds_version;
        const char *signature;
    } facts[] = {
        { "cuMemAlloc", "cuMemAlloc", 3020, 3020, "pz" },            /* _v2, size_t bytes */
        { "cuCtxCreate", "cuCtxCreate", 12050, 12050, "ppIi" },      /* _v4, with CUctxCreateParams */
        { "cuGraphInstantiate", "cuGraphInstantiateWithFlags", 11040, 11040, "ppQ" },
        { "cuMemcpyHtoD", "cuMemcpyHtoD", 3020, 7000, "Qpz" },       /* _v2; _v7000_ptds */
        { "cuLaunchKernel", "cuLaunchKernel", 4000, 7000, "pIIIIIIIppp" },
        { "cuStreamBeginCapture", "cuStreamBeginCapture", 10010, 10010, "pI" },
        { "cuEventElapsedTime", "cuEventElapsedTime", 12080, 12080, "ppp" },
        { "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 11000, 11000, "i" },
        { "cuGetProcAddress", "cuGetProcAddress", 12000, 12000, "ppiQp" },
        { "cuCtxSynchronize", "cuCtxSynchronize", 2000, 2000, "" },
        { "cuMemAllocAsync", "cuMemAllocAsync", 11020, 11020, "pzp" },
        { "cuDeviceTotalMem", "cuDeviceTotalMem", 3020, 3020, "pi" },
    };
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        const struct entry *e = find(facts[i].name);
        if (e == NULL)
            print_error("%s is not in the table\n", facts[i].name);
        assert_non_null(e);
        assert_string_equal(e->driver_name, facts[i].driver_name);
        assert_int_equal(e->version, facts[i].version);
        assert_int_equal(e->ptds_version, facts[i].ptds_version);
        assert_string_equal(e->signature, facts[i].signature);
    }
}

static void test_fake_matches_table(void **state)
{
    (void)state;
    fakecuda_impl_version_fn impl_version = (fakecuda_impl_version_fn)fake_symbol("fakecuda_impl_version");
    unsigned implemented = 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const struct entry *e = &entries[i];
        if (impl_version(e->driver_name, CU_GET_PROC_ADDRESS_LEGACY_STREAM, 99999) < 0)
            continue; /* not in the fake's functional subset */
        implemented++;
        int legacy = impl_version(e->driver_name, CU_GET_PROC_ADDRESS_LEGACY_STREAM, e->version);
        int per_thread = impl_version(e->driver_name, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                      e->ptds_version);
        if (legacy != e->version || per_thread != e->ptds_version)
            print_error("%s: the table pins %d/%d, the fake answers %d/%d\n", e->name, e->version,
                        e->ptds_version, legacy, per_thread);
        assert_int_equal(legacy, e->version);
        assert_int_equal(per_thread, e->ptds_version);
        /* And through cuabi, with the same flags a forwarder uses. */
        void *fn = NULL;
        check_cu(cuabi_get_proc(e->driver_name, e->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &fn));
        assert_non_null(fn);
    }
    assert_true(implemented >= 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_version),
        cmocka_unit_test(test_pinned_versions),
        cmocka_unit_test(test_fake_matches_table),
    };
    return cmocka_run_group_tests_name("versions", tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every forwarder of every library family (NVRTC, nvJitLink, NVVM, NVML) passes
 * every argument through unchanged, returns the library's result unchanged, calls
 * the very symbol it is pinned to (__nvJitLinkCreate_13_0, nvmlInit_v2, ...), and
 * jumps into the library rather than calling it.
 *
 * The families' fakes run in record mode (FAKEFAM_MODE=record): each exported
 * function records its symbol and the raw bits of its arguments.  For each row of
 * tests/generated/family_functions.h the test finds cuabi_<name> with dlsym, calls
 * it through libffi with sentinel values that differ per function and argument
 * (tests/support.c), and compares what the fake saw.  The four families load in
 * one process, each from its own environment variable.
 */
#define _GNU_SOURCE
#include "support.h"

#include <dlfcn.h>
#include <ffi.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fake/signature.h"
#include "generated/family_functions.h"

struct row {
    int32_t library;
    unsigned index;
    const char *name;
    const char *symbol;
    const char *signature;
    const char *returns; /* "I" the family's result type, "p" a const char * */
};

#define ROW(library, index, name, symbol, sig, ret) { library, index, #name, #symbol, sig, #ret },
#define NVRTC_ROW(index, name, symbol, sig, ret, params, bits) \
    ROW(CUABI_LIBRARY_NVRTC, index, name, symbol, sig, ret)
#define NVJITLINK_ROW(index, name, symbol, sig, ret, params, bits) \
    ROW(CUABI_LIBRARY_NVJITLINK, index, name, symbol, sig, ret)
#define NVVM_ROW(index, name, symbol, sig, ret, params, bits) \
    ROW(CUABI_LIBRARY_NVVM, index, name, symbol, sig, ret)
#define NVML_ROW(index, name, symbol, sig, ret, params, bits) \
    ROW(CUABI_LIBRARY_NVML, index, name, symbol, sig, ret)
static const struct row rows[] = {
    CUABI_NVRTC_FUNCTIONS(NVRTC_ROW) CUABI_NVJITLINK_FUNCTIONS(NVJITLINK_ROW)
    CUABI_NVVM_FUNCTIONS(NVVM_ROW) CUABI_NVML_FUNCTIONS(NVML_ROW)
};
#define ROW_COUNT (sizeof rows / sizeof rows[0])

static char library_file[PATH_MAX]; /* libcuabi's, to tell a jump from a call */

static int group_setup(void **state)
{
    (void)state;
    for (int32_t library = CUABI_LIBRARY_NVRTC; library <= CUABI_LIBRARY_NVML; library++) {
        if (!((fakefam_is_record_mode_fn)family_fake_symbol(library, "fakefam_is_record_mode"))()) {
            fprintf(stderr, "the families' fakes must run with FAKEFAM_MODE=record\n");
            return -1;
        }
        if (cuabi_library_status(library) != CUDA_SUCCESS) {
            fprintf(stderr, "cuabi could not load a family's fake:\n%s", cuabi_library_report(library));
            return -1;
        }
    }
    Dl_info info;
    if (dladdr((void *)cuabi_library_status, &info) == 0 || realpath(info.dli_fname, library_file) == NULL)
        return -1;
    return 0;
}

/* Calls row e's forwarder with sentinels; returns its result, bits the sent bits. */
static uint64_t call_row(const struct row *e, void *fn, uint64_t *bits)
{
    static struct signature sig;
    union sentinel_value values[FAKECUDA_MAX_ARGS];
    void *argv[FAKECUDA_MAX_ARGS];
    if (signature_parse(e->signature, &sig) != 0)
        fail_msg("%s: cannot parse the signature \"%s\"", e->name, e->signature);
    for (unsigned k = 0; k < sig.nargs; k++) {
        sentinel(e->index + 1000u * (unsigned)e->library, k, e->signature[k], &values[k], &bits[k]);
        argv[k] = &values[k];
    }
    ffi_cif cif;
    ffi_type *returns = e->returns[0] == 'p' ? &ffi_type_pointer : &ffi_type_uint32;
    assert_int_equal(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, sig.nargs, returns, sig.args), FFI_OK);
    ffi_arg ret = 0;
    ffi_call(&cif, FFI_FN(fn), &ret, argv);
    return e->returns[0] == 'p' ? (uint64_t)(uintptr_t)(void *)ret : (uint64_t)(uint32_t)ret;
}

static void check_recorded(const struct row *e, const uint64_t *bits, int from_slot)
{
    static struct fakecuda_call call;
    assert_true(((fakefam_record_last_fn)family_fake_symbol(e->library, "fakefam_record_last"))(&call));
    assert_string_equal(call.name, e->symbol);
    assert_string_equal(call.signature, e->signature);
    assert_int_equal(call.nargs, strlen(e->signature));
    for (unsigned k = 0; k < call.nargs; k++) {
        if (call.args[k] != bits[k])
            print_error("%s argument %u ('%c'): the library saw 0x%016llx, sent 0x%016llx\n", e->name,
                        k, e->signature[k], (unsigned long long)call.args[k],
                        (unsigned long long)bits[k]);
        assert_true(call.args[k] == bits[k]);
    }
    /* From its slot, the forwarder jumps into the library: the library returns to the
     * forwarder's caller, never into libcuabi (its first call goes through libcuabi, and
     * the code-to-text functions are wrapped: lib/family_wrapped.c). Only where the
     * build optimises: at -O0 (Debug) the forwarder calls (tests/CMakeLists.txt). */
    if (!from_slot || e->returns[0] == 'p' || !CUABI_TEST_FORWARDERS_JUMP)
        return;
    Dl_info info;
    char file[PATH_MAX];
    void *to = ((fakefam_last_return_address_fn)family_fake_symbol(e->library, "fakefam_last_return_address"))();
    if (dladdr(to, &info) != 0 && realpath(info.dli_fname, file) != NULL && strcmp(file, library_file) == 0)
        fail_msg("%s: the library returned into libcuabi (%p): the forwarder called it", e->name, to);
}

static void test_forwarder(void **state)
{
    const struct row *e = *state;
    void *fn = exported_forwarder(e->name);
    fakefam_record_set_result_fn set_result =
        (fakefam_record_set_result_fn)family_fake_symbol(e->library, "fakefam_record_set_result");
    uint64_t (*count)(void) = (fakefam_record_count_fn)family_fake_symbol(e->library, "fakefam_record_count");
    uint64_t bits[FAKECUDA_MAX_ARGS];

    for (int round = 0; round < 2; round++) {
        /* The result is distinct per function on the first call (the library resolved
         * then), 0 on the second (from the slot). */
        int result = round == 0 ? (int)(1000 + e->index) : 0;
        set_result(result);
        uint64_t before = count();
        uint64_t got = call_row(e, fn, bits);
        assert_int_equal(count(), before + 1);
        check_recorded(e, bits, round == 1);
        if (e->returns[0] == 'p') {
            /* A code-to-text function: a code of the family's own is the library's to answer. */
            char expected[128];
            snprintf(expected, sizeof expected, "fakefam:%s", e->symbol);
            assert_string_equal((const char *)(uintptr_t)got, expected);
        } else {
            assert_int_equal(got, (uint64_t)result);
        }
    }
}

/* The generated list is the one the fakes were built from: one row per slot, in order. */
static void test_rows_are_dense(void **state)
{
    (void)state;
    unsigned expected = 0;
    for (size_t i = 0; i < ROW_COUNT; i++) {
        if (i > 0 && rows[i].library != rows[i - 1].library)
            expected = 0;
        assert_int_equal(rows[i].index, expected++);
    }
    assert_true(ROW_COUNT > 400);
}

int main(void)
{
    const size_t count = ROW_COUNT + 1;
    struct CMUnitTest *tests = calloc(count, sizeof *tests);
    if (tests == NULL)
        return 1;
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_rows_are_dense);
    for (size_t i = 0; i < ROW_COUNT; i++) {
        tests[i + 1].name = rows[i].name;
        tests[i + 1].test_func = test_forwarder;
        tests[i + 1].initial_state = (void *)&rows[i];
    }
    int failed = _cmocka_run_group_tests("family forwarders", tests, count, group_setup, NULL);
    free(tests);
    return failed;
}

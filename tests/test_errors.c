/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi_error_name / cuabi_error_string: never NULL, never load the driver,
 * cuabi's own codes in their reserved range, CUDA's codes from a built-in
 * table before the driver is loaded and from the driver once it is.
 */
#define _GNU_SOURCE
#include "support.h"

#include <dlfcn.h>
#include <string.h>

static const CUresult own_codes[] = {
    CUABI_ERROR_DRIVER_NOT_FOUND, CUABI_ERROR_DRIVER_STUB,     CUABI_ERROR_DRIVER_UNUSABLE,
    CUABI_ERROR_ENTRY_POINT_NOT_FOUND, CUABI_ERROR_DRIVER_TOO_OLD, CUABI_ERROR_BAD_ENVIRONMENT,
    CUABI_ERROR_BAD_SIGNATURE,   CUABI_ERROR_ALREADY_LOADED,  CUABI_ERROR_LIBRARY_MISSING,
    CUABI_ERROR_LIBRARY_TOO_OLD, CUABI_ERROR_FUNCTION_MISSING,
};
static const char *const own_names[] = {
    "CUABI_ERROR_DRIVER_NOT_FOUND", "CUABI_ERROR_DRIVER_STUB",     "CUABI_ERROR_DRIVER_UNUSABLE",
    "CUABI_ERROR_ENTRY_POINT_NOT_FOUND", "CUABI_ERROR_DRIVER_TOO_OLD", "CUABI_ERROR_BAD_ENVIRONMENT",
    "CUABI_ERROR_BAD_SIGNATURE",   "CUABI_ERROR_ALREADY_LOADED",  "CUABI_ERROR_LIBRARY_MISSING",
    "CUABI_ERROR_LIBRARY_TOO_OLD", "CUABI_ERROR_FUNCTION_MISSING",
};

static int driver_in_process(void)
{
    void *h = dlopen(fake_path(), RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL)
        dlclose(h); /* drops only the reference RTLD_NOLOAD added */
    return h != NULL;
}

/* Runs first, before anything in this process loads the driver. */
static void test_before_load(void **state)
{
    (void)state;
    assert_false(driver_in_process());
    for (size_t i = 0; i < sizeof own_codes / sizeof own_codes[0]; i++) {
        /* The frozen numbers: 100001 upwards, in the reserved range. */
        assert_int_equal((int)own_codes[i], 100001 + (int)i);
        assert_string_equal(cuabi_error_name(own_codes[i]), own_names[i]);
        assert_true(strlen(cuabi_error_string(own_codes[i])) > 20);
    }
    assert_string_equal(cuabi_error_name(CUDA_SUCCESS), "CUDA_SUCCESS");
    assert_string_equal(cuabi_error_name(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
    assert_string_equal(cuabi_error_name(CUDA_ERROR_STUB_LIBRARY), "CUDA_ERROR_STUB_LIBRARY");
    assert_string_equal(cuabi_error_name(CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
    assert_string_equal(cuabi_error_name((CUresult)123456), "CUABI_UNKNOWN_RESULT_CODE");
    assert_string_equal(cuabi_error_name((CUresult)100999), "CUABI_UNKNOWN_RESULT_CODE");
    assert_non_null(cuabi_error_string((CUresult)123456));
    assert_non_null(cuabi_error_string(CUDA_ERROR_OUT_OF_MEMORY));
    /* cuabi_version does not load either. */
    assert_int_equal(cuabi_version(), CUABI_VERSION);
    assert_false(driver_in_process());
}

/* Every row of cuabi/result_codes.h: its enumerator has its value, and the
 * name and text functions answer with that row's name and text. */
static void test_own_codes_answer_from_their_row(void **state)
{
    (void)state;
    size_t rows = 0;
#define CHECK_ROW(name, value, kind, text, advice)                                   \
    assert_int_equal((int)CUABI_ERROR_##name, value);                               \
    assert_string_equal(cuabi_error_name(CUABI_ERROR_##name), "CUABI_ERROR_" #name); \
    assert_string_equal(cuabi_error_string(CUABI_ERROR_##name), text);              \
    rows++;
    CUABI_RESULT_CODE_MAP(CHECK_ROW)
#undef CHECK_ROW
    assert_int_equal(rows, sizeof own_codes / sizeof own_codes[0]);
}

/* The built-in table names every CUresult enumerator of cuda.h 13.0 (the list
 * the generator took from the headers) by its own name, with a text of its
 * own, before any driver is loaded. */
static void test_builtin_table_covers_every_cuda_code(void **state)
{
    (void)state;
    static const struct {
        CUresult code;
        const char *name;
    } codes[] = {
#define CUABI_PROBE_TYPE(T)
#define CUABI_PROBE_FIELD(T, member)
#define CUABI_PROBE_DEFINE(NAME)
#define CUABI_PROBE_ENUM(NAME) { (CUresult)(NAME), #NAME },
#include "generated/layout_probe.h"
#undef CUABI_PROBE_TYPE
#undef CUABI_PROBE_FIELD
#undef CUABI_PROBE_DEFINE
#undef CUABI_PROBE_ENUM
    };
    const char *unknown = cuabi_error_string((CUresult)123456);
    size_t checked = 0;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (strncmp(codes[i].name, "CUDA_ERROR_", 11) != 0 && strcmp(codes[i].name, "CUDA_SUCCESS") != 0)
            continue;
        if (strcmp(cuabi_error_name(codes[i].code), codes[i].name) != 0)
            print_error("%s (%d) is named %s\n", codes[i].name, (int)codes[i].code,
                        cuabi_error_name(codes[i].code));
        assert_string_equal(cuabi_error_name(codes[i].code), codes[i].name);
        const char *text = cuabi_error_string(codes[i].code);
        assert_string_not_equal(text, unknown);
        for (size_t j = 0; j < i; j++)
            if (strncmp(codes[j].name, "CUDA_", 5) == 0 && codes[j].code != codes[i].code &&
                strcmp(cuabi_error_string(codes[j].code), text) == 0)
                fail_msg("%s and %s share the text \"%s\"", codes[i].name, codes[j].name, text);
        checked++;
    }
    assert_true(checked >= 100);
    assert_false(driver_in_process());
}

/* Once the driver is loaded, CUDA's codes are described by the driver: the
 * fake describes them in its own words, which differ from cuabi's table. */
static void test_after_load(void **state)
{
    (void)state;
    const char *builtin = cuabi_error_string(CUDA_ERROR_OUT_OF_MEMORY);
    char saved[256];
    snprintf(saved, sizeof saved, "%s", builtin);
    check_cu(cuabi_driver_status());
    assert_true(driver_in_process());
    assert_string_equal(cuabi_error_string(CUDA_ERROR_OUT_OF_MEMORY), "out of memory");
    assert_string_not_equal(saved, "out of memory");
    assert_string_equal(cuabi_error_name(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
    /* Own codes never go to the driver. */
    assert_string_equal(cuabi_error_name(CUABI_ERROR_DRIVER_TOO_OLD), "CUABI_ERROR_DRIVER_TOO_OLD");
    /* A code the driver does not know falls back to the table, still not NULL. */
    assert_string_equal(cuabi_error_name((CUresult)123456), "CUABI_UNKNOWN_RESULT_CODE");
}

/* cuGetErrorName/cuGetErrorString through cuabi name cuabi's own codes
 * themselves: the driver has never heard of them. */
static void test_driver_functions_name_own_codes(void **state)
{
    (void)state;
    const char *s = NULL;
    check_cu(cuabi_cuGetErrorName(CUABI_ERROR_BAD_SIGNATURE, &s));
    assert_string_equal(s, "CUABI_ERROR_BAD_SIGNATURE");
    check_cu(cuabi_cuGetErrorString(CUABI_ERROR_BAD_SIGNATURE, &s));
    assert_string_equal(s, cuabi_error_string(CUABI_ERROR_BAD_SIGNATURE));
}

/* With a driver, CUDA's codes are the driver's to describe (the fake uses
 * its own words). */
static void test_driver_functions_ask_the_driver_for_cuda_codes(void **state)
{
    (void)state;
    const char *s = NULL;
    check_cu(cuabi_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, "out of memory");
    check_cu(cuabi_cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
}

/* A code nobody knows gets the driver's own answer: invalid value, NULL. */
static void test_driver_functions_refuse_unknown_codes(void **state)
{
    (void)state;
    const char *s = "unchanged";
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGetErrorName((CUresult)123456, &s));
    assert_null(s);
    s = "unchanged";
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGetErrorString((CUresult)100999, &s));
    assert_null(s);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_load),
        cmocka_unit_test(test_own_codes_answer_from_their_row),
        cmocka_unit_test(test_builtin_table_covers_every_cuda_code),
        cmocka_unit_test(test_after_load),
        cmocka_unit_test(test_driver_functions_name_own_codes),
        cmocka_unit_test(test_driver_functions_ask_the_driver_for_cuda_codes),
        cmocka_unit_test(test_driver_functions_refuse_unknown_codes),
    };
    return cmocka_run_group_tests_name("error names and strings", tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layout: every driver type, field, enumerator and integer #define of cuabi's
 * headers has the size, alignment, offset or value that the CUDA toolkit's
 * cuda.h gives it. Built only where the toolkit headers exist (elsewhere
 * ctest reports the test as skipped, saying why).
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

static const char *const kinds[] = { "type", "field", "enum", "define" };

static void test_layout_matches_toolkit(void **state)
{
    (void)state;
    size_t n_toolkit = layout_toolkit(NULL, 0);
    size_t n_cuabi = layout_cuabi(NULL, 0);
    assert_int_equal(n_toolkit, n_cuabi);
    struct layout_row *t = calloc(n_toolkit, sizeof *t);
    struct layout_row *c = calloc(n_cuabi, sizeof *c);
    assert_non_null(t);
    assert_non_null(c);
    layout_toolkit(t, n_toolkit);
    layout_cuabi(c, n_cuabi);

    size_t mismatches = 0, counts[4] = { 0 };
    for (size_t i = 0; i < n_toolkit; i++) {
        assert_string_equal(t[i].name, c[i].name);
        counts[t[i].kind]++;
        if (t[i].a != c[i].a || t[i].b != c[i].b) {
            print_error("%s %s: toolkit %llu/%llu, cuabi %llu/%llu\n", kinds[t[i].kind], t[i].name, t[i].a,
                        t[i].b, c[i].a, c[i].b);
            mismatches++;
        }
    }
    print_message("compared %zu types, %zu fields, %zu enumerators, %zu defines\n", counts[LAYOUT_TYPE],
                  counts[LAYOUT_FIELD], counts[LAYOUT_ENUM], counts[LAYOUT_DEFINE]);
    free(t);
    free(c);
    assert_int_equal(mismatches, 0);
    /* The probe list covers the API, not a sample of it. */
    assert_true(counts[LAYOUT_TYPE] >= 200);
    assert_true(counts[LAYOUT_FIELD] >= 400);
    assert_true(counts[LAYOUT_ENUM] >= 800);
    assert_true(counts[LAYOUT_DEFINE] >= 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_matches_toolkit),
    };
    return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}

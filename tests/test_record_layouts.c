/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Record layouts: the size, alignment and field offsets that driver_api.json gives every
 * struct and union (tools/gen_driver_api.py computes them for LP64) are what the compiler
 * makes of cuabi's own headers.  With the layout test, which holds cuabi's headers against
 * the toolkit's cuda.h, this ties the JSON's numbers to CUDA's real layouts; it needs no
 * toolkit, so it runs everywhere.
 */
#include "support.h"

#include <stdalign.h>

struct record_row {
    const char *what;
    size_t expected;
    size_t actual;
};

#define CUABI_RECORD(T, size, align) { #T " size", size, sizeof(T) }, { #T " align", align, alignof(T) },
#define CUABI_RECORD_FIELD(T, member, offset, size)                                               \
    { #T "." #member " offset", offset, offsetof(T, member) },                                    \
    { #T "." #member " size", size, sizeof(((T *)0)->member) },

static const struct record_row rows[] = {
#include "generated/record_layouts.h"
};

static void test_json_record_layouts_match_the_compiler(void **state)
{
    (void)state;
    size_t count = sizeof rows / sizeof rows[0], mismatches = 0;
    for (size_t i = 0; i < count; i++) {
        if (rows[i].expected != rows[i].actual) {
            print_error("%s: driver_api.json says %zu, the compiler %zu\n", rows[i].what,
                        rows[i].expected, rows[i].actual);
            mismatches++;
        }
    }
    print_message("compared %zu sizes, alignments and offsets\n", count);
    assert_int_equal(mismatches, 0);
    assert_true(count >= 2000); /* every record, not a sample */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_record_layouts_match_the_compiler),
    };
    return cmocka_run_group_tests_name("record_layouts", tests, NULL, NULL);
}

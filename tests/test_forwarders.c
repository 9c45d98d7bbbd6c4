/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every forwarder passes every argument through unchanged, returns the
 * driver's result unchanged, and resolves its entry point once, with the
 * pinned version and the stream-mode flags.
 *
 * The fake driver runs in record mode (FAKECUDA_MODE=record): each entry point
 * it hands out is a libffi closure that records the raw bits of its arguments
 * and how it was requested. For each row of tests/generated/entry_points.h the
 * test finds cuabi_<name> with dlsym, calls it through libffi with sentinel
 * values that differ per entry and per argument, and compares what the driver
 * saw. ctest runs this program twice, in separate processes: once as is
 * (legacy default stream) and once with CUABI_PER_THREAD_DEFAULT_STREAM=1,
 * because the stream mode is chosen once per process.
 *
 * Each entry point is also called through cuabi_call() with the signature
 * string driver_api.json gives it, so that every signature the table uses
 * (small integers, structs by value, byte arrays) is known to work there.
 */
#define _GNU_SOURCE
#include "support.h"
#include "fake/signature.h"

#include <dlfcn.h>
#include <ffi.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    unsigned index;
    const char *name;
    const char *driver_name;
    int version;
    int ptds_version;
    const char *signature;
};

#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    { index, #name, driver_name, version, ptds_version, signature },
static const struct entry entries[] = {
#include "generated/entry_points.h"
};
#undef CUABI_ENTRY

#define ENTRY_COUNT (sizeof entries / sizeof entries[0])

static fakecuda_record_set_result_fn set_result;
static fakecuda_record_count_fn record_count;
static fakecuda_record_last_fn record_last;
static fakecuda_record_struct_arg_fn record_struct_arg;
static int per_thread;

static int group_setup(void **state)
{
    (void)state;
    set_result = (fakecuda_record_set_result_fn)fake_symbol("fakecuda_record_set_result");
    record_count = (fakecuda_record_count_fn)fake_symbol("fakecuda_record_count");
    record_last = (fakecuda_record_last_fn)fake_symbol("fakecuda_record_last");
    record_struct_arg = (fakecuda_record_struct_arg_fn)fake_symbol("fakecuda_record_struct_arg");
    if (!((fakecuda_is_record_mode_fn)fake_symbol("fakecuda_is_record_mode"))()) {
        fprintf(stderr, "the fake driver must run with FAKECUDA_MODE=record\n");
        return -1;
    }
    if (cuabi_driver_status() != CUDA_SUCCESS) {
        fprintf(stderr, "cuabi could not load the fake driver:\n%s", cuabi_driver_report());
        return -1;
    }
    per_thread = cuabi_default_stream_mode();
    const char *env = getenv("CUABI_PER_THREAD_DEFAULT_STREAM");
    int expected = env != NULL && strcmp(env, "1") == 0;
    if (per_thread != expected) {
        fprintf(stderr, "stream mode %d, expected %d\n", per_thread, expected);
        return -1;
    }
    return 0;
}

/* The leaves (scalar members and bytes) of a struct type: their offsets and sizes. */
struct leaf {
    size_t offset, size;
};

static void struct_leaves(ffi_type *t, size_t base, struct leaf *leaves, unsigned *n)
{
    size_t offsets[SIG_MAX_ELEMENTS];
    assert_int_equal(ffi_get_struct_offsets(FFI_DEFAULT_ABI, t, offsets), FFI_OK);
    for (unsigned k = 0; t->elements[k] != NULL; k++) {
        ffi_type *m = t->elements[k];
        if (m->type == FFI_TYPE_STRUCT) {
            struct_leaves(m, base + offsets[k], leaves, n);
        } else {
            assert_true(*n < SIG_MAX_ELEMENTS);
            leaves[*n].offset = base + offsets[k];
            leaves[*n].size = m->size;
            (*n)++;
        }
    }
}

/* What was sent, to compare with what the driver saw. */
struct sent {
    uint64_t bits[FAKECUDA_MAX_ARGS];
    unsigned char structs[FAKECUDA_MAX_ARGS][FAKECUDA_MAX_STRUCT];
};

/* How call_forwarder calls the entry point: its forwarder, through libffi, or
 * cuabi_call() with a signature string (the entry's own, or call_signature). */
enum call_route { THROUGH_FORWARDER, THROUGH_CUABI_CALL };
static const char *call_signature; /* NULL: the entry's */

static void call_entry_point(const struct entry *e, enum call_route route, void *fn, CUresult result,
                             struct sent *sent)
{
    static struct signature sig; /* large; parsed per call */
    union sentinel_value values[FAKECUDA_MAX_ARGS];
    void *argv[FAKECUDA_MAX_ARGS];
    if (signature_parse(e->signature, &sig) != 0)
        fail_msg("%s: cannot parse the signature \"%s\"", e->name, e->signature);
    assert_true(sig.nargs <= FAKECUDA_MAX_ARGS);
    ffi_cif cif;
    assert_int_equal(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, sig.nargs, &ffi_type_uint32, sig.args), FFI_OK);
    memset(sent, 0, sizeof *sent);
    for (unsigned k = 0; k < sig.nargs; k++) {
        if (sig.codes[k] == '{') {
            /* Every byte of every member gets a value of its own. */
            struct leaf leaves[SIG_MAX_ELEMENTS];
            unsigned n = 0;
            assert_true(sig.args[k]->size <= FAKECUDA_MAX_STRUCT);
            struct_leaves(sig.args[k], 0, leaves, &n);
            for (unsigned l = 0; l < n; l++)
                for (size_t b = 0; b < leaves[l].size; b++)
                    sent->structs[k][leaves[l].offset + b] = (unsigned char)(e->index * 31u + l * 7u + b + 1u);
            sent->bits[k] = sig.args[k]->size;
            argv[k] = sent->structs[k];
        } else {
            sentinel(e->index, k, sig.codes[k], &values[k], &sent->bits[k]);
            argv[k] = &values[k];
        }
    }
    set_result((int)result);
    if (route == THROUGH_CUABI_CALL) {
        int version = per_thread ? e->ptds_version : e->version;
        const char *signature = call_signature != NULL ? call_signature : e->signature;
        assert_cu(result, cuabi_call(e->driver_name, version, signature, argv));
        return;
    }
    ffi_arg ret = 0;
    ffi_call(&cif, FFI_FN(fn), &ret, argv);
    assert_cu(result, (CUresult)(uint32_t)ret);
}

static void call_forwarder(const struct entry *e, void *fn, CUresult result, struct sent *sent)
{
    call_entry_point(e, THROUGH_FORWARDER, fn, result, sent);
}

static void check_recorded(const struct entry *e, const struct sent *sent)
{
    static struct signature sig;
    static struct fakecuda_call call;
    assert_int_equal(signature_parse(e->signature, &sig), 0);
    assert_true(record_last(&call));
    assert_string_equal(call.name, e->driver_name);
    assert_string_equal(call.signature, e->signature);
    assert_int_equal(call.nargs, sig.nargs);
    for (unsigned k = 0; k < call.nargs; k++) {
        if (call.args[k] != sent->bits[k])
            print_error("%s argument %u ('%c'): driver saw 0x%016llx, sent 0x%016llx\n", e->name, k,
                        sig.codes[k], (unsigned long long)call.args[k], (unsigned long long)sent->bits[k]);
        assert_true(call.args[k] == sent->bits[k]);
        if (sig.codes[k] == '{') {
            unsigned char seen[FAKECUDA_MAX_STRUCT];
            struct leaf leaves[SIG_MAX_ELEMENTS];
            unsigned n = 0;
            struct_leaves(sig.args[k], 0, leaves, &n); /* also lays the type out: size */
            assert_int_equal(record_struct_arg(k, seen, sizeof seen), sig.args[k]->size);
            for (unsigned l = 0; l < n; l++)
                assert_memory_equal(seen + leaves[l].offset, sent->structs[k] + leaves[l].offset, leaves[l].size);
        }
    }
    /* Resolved with the pinned version and the flags of the process's mode. */
    int pinned = per_thread ? e->ptds_version : e->version;
    unsigned long long flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                          : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    assert_int_equal(call.requested_version, pinned);
    assert_int_equal(call.requested_flags, flags);
    assert_int_equal(call.impl_version, pinned);
    assert_int_equal(call.per_thread, per_thread);
}

static void test_forwarder(void **state)
{
    const struct entry *e = *state;
    void *fn = exported_forwarder(e->name);

    struct fakecuda_request before, after;
    int asked_before = fake_request_info(e->driver_name, &before);
    uint64_t count = record_count();
    static struct sent sent;

    /* First call: resolves, then calls. The result is distinct per entry. */
    call_forwarder(e, fn, (CUresult)(1000 + e->index), &sent);
    assert_int_equal(record_count(), count + 1);
    check_recorded(e, &sent);
    assert_true(fake_request_info(e->driver_name, &after));
    assert_int_equal(after.count, (asked_before ? before.count : 0) + 1);
    assert_int_equal(after.version, per_thread ? e->ptds_version : e->version);

    /* Second call: served from the cached slot, the driver is not asked again. */
    call_forwarder(e, fn, CUDA_SUCCESS, &sent);
    assert_int_equal(record_count(), count + 2);
    check_recorded(e, &sent);
    struct fakecuda_request again;
    assert_true(fake_request_info(e->driver_name, &again));
    assert_int_equal(again.count, after.count);
}

/* The same entry point through cuabi_call() with the signature driver_api.json
 * gives it: every letter and every struct passed by value reaches the driver
 * unchanged (the recording closure is built from the same signature). */
static void test_cuabi_call(void **state)
{
    const struct entry *e = *state;
    static struct sent sent;
    uint64_t count = record_count();
    call_entry_point(e, THROUGH_CUABI_CALL, NULL, (CUresult)(2000 + e->index), &sent);
    assert_int_equal(record_count(), count + 1);
    check_recorded(e, &sent);
    /* Again, from cuabi_call's cache. */
    call_entry_point(e, THROUGH_CUABI_CALL, NULL, CUDA_SUCCESS, &sent);
    check_recorded(e, &sent);
    if (strchr(e->signature, '{') == NULL)
        return;
    /* Each struct wrapped in one more: {{Ii}} has {Ii}'s bytes and passes the same way, so
     * the driver must see the same values (nested structs in cuabi_call's signatures). */
    char nested[2 * FAKECUDA_MAX_ARGS + 64];
    size_t n = 0;
    for (const char *c = e->signature; *c != '\0'; c++) {
        if (*c == '{')
            nested[n++] = '{';
        nested[n++] = *c;
        if (*c == '}')
            nested[n++] = '}';
        assert_true(n + 2 < sizeof nested);
    }
    nested[n] = '\0';
    call_signature = nested;
    call_entry_point(e, THROUGH_CUABI_CALL, NULL, (CUresult)(3000 + e->index), &sent);
    call_signature = NULL;
    check_recorded(e, &sent);
}

/* Once cuabi_call's cache is full (4096 entries), calls still work: their libffi types
 * are built for the one call. Structs by value take that path here. */
static void test_cuabi_call_cache_full(void **state)
{
    (void)state;
    /* Fill the cache: one entry per (name, version, signature). */
    int device = 0;
    int *pdevice = &device;
    void *argv_fill[] = { &pdevice };
    for (int version = 6000; version < 6000 + 4096; version++)
        check_cu(cuabi_call("cuCtxGetDevice", version, "p", argv_fill));
    static struct sent sent;
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        if (strchr(entries[i].signature, '{') == NULL)
            continue;
        call_entry_point(&entries[i], THROUGH_CUABI_CALL, NULL, (CUresult)(4000 + i), &sent);
        check_recorded(&entries[i], &sent);
    }
}

/* The table is complete: as many forwarders as the generated table has rows,
 * and every index appears once, in order. */
static void test_table_is_dense(void **state)
{
    (void)state;
    assert_true(ENTRY_COUNT >= 443);
    for (size_t i = 0; i < ENTRY_COUNT; i++)
        assert_int_equal(entries[i].index, i);
}

int main(void)
{
    /* Per entry point: its forwarder, then cuabi_call with its signature; the cache-full
     * test last, since it fills the process's cuabi_call cache. */
    const size_t count = 2 * ENTRY_COUNT + 2;
    struct CMUnitTest *tests = calloc(count, sizeof *tests);
    static char names[ENTRY_COUNT][160];
    if (tests == NULL)
        return 1;
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_table_is_dense);
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        tests[2 * i + 1].name = entries[i].name;
        tests[2 * i + 1].test_func = test_forwarder;
        tests[2 * i + 1].initial_state = (void *)&entries[i];
        snprintf(names[i], sizeof names[i], "cuabi_call %s \"%s\"", entries[i].driver_name,
                 entries[i].signature);
        tests[2 * i + 2].name = names[i];
        tests[2 * i + 2].test_func = test_cuabi_call;
        tests[2 * i + 2].initial_state = (void *)&entries[i];
    }
    tests[count - 1] = (struct CMUnitTest)cmocka_unit_test(test_cuabi_call_cache_full);
    int failed = _cmocka_run_group_tests(getenv("CUABI_PER_THREAD_DEFAULT_STREAM") ? "forwarders (per-thread)"
                                                                                : "forwarders (legacy)",
                                         tests, count, group_setup, NULL);
    free(tests);
    return failed;
}

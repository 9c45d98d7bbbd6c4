/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Record mode (FAKECUDA_MODE=record): every entry point of the generated table
 * tests/generated/entry_points.h resolves to a libffi closure built from the
 * entry's signature letters. Calling it records the raw bits of every argument,
 * with the name, version and flags it was requested with, and returns the
 * result set by fakecuda_record_set_result().
 *
 * Each entry has one variant at its table version and one at its per-thread
 * version; the usual cuGetProcAddress_v2 rules (driver.c) pick between them.
 *
 * In both modes, names FAKECUDA_ECHO_PREFIX + letters ("fakecuda_echo_dqzf")
 * resolve to a recording closure with those signature letters, at any
 * version: entry points no driver has, for testing that cuabi_call passes
 * every kind of argument (the driver API has no double or int64 parameter).
 */
#include "fake_internal.h"
#include "signature.h"

#include <ffi.h>
#include <stdlib.h>
#include <string.h>

struct record_entry {
    const char *name;
    const char *driver_name;
    int version;
    int ptds_version;
    const char *signature;
};

#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    { #name, driver_name, version, ptds_version, signature },
static const struct record_entry entries[] = {
#include "generated/entry_points.h"
};
#undef CUABI_ENTRY

#define ENTRY_COUNT (sizeof entries / sizeof entries[0])

struct record_closure {
    ffi_closure *closure;
    void *code;
    ffi_cif cif;
    struct signature sig;
    const struct record_entry *entry;
    int requested_version;
    unsigned long long requested_flags;
    int impl_version;
    int per_thread;
    struct record_closure *next;
};

static struct record_closure *closures;
static struct fakecuda_call last_call;
static unsigned char last_structs[FAKECUDA_MAX_ARGS][FAKECUDA_MAX_STRUCT];
static uint64_t call_count;
static int call_result;

/* The raw bits of one argument, widened to 64 bits without sign extension. */
static uint64_t raw_bits(char c, const void *value)
{
    uint32_t u32;
    uint64_t u64;
    switch (c) {
    case 'B':
        return *(const uint8_t *)value;
    case 'H': {
        uint16_t u16;
        memcpy(&u16, value, 2);
        return u16;
    }
    case 'i':
    case 'I':
    case 'f':
        memcpy(&u32, value, 4);
        return u32;
    case 'p': {
        void *p;
        memcpy(&p, value, sizeof p);
        return (uint64_t)(uintptr_t)p;
    }
    case 'z': {
        size_t z;
        memcpy(&z, value, sizeof z);
        return (uint64_t)z;
    }
    default:
        memcpy(&u64, value, 8);
        return u64;
    }
}

static void record_call(ffi_cif *cif, void *ret, void **args, void *user_data)
{
    const struct record_closure *rc = user_data;
    fake_lock();
    memset(&last_call, 0, sizeof last_call);
    strncpy(last_call.name, rc->entry->driver_name, sizeof last_call.name - 1);
    last_call.requested_version = rc->requested_version;
    last_call.requested_flags = rc->requested_flags;
    last_call.impl_version = rc->impl_version;
    last_call.per_thread = rc->per_thread;
    last_call.nargs = cif->nargs;
    strncpy(last_call.signature, rc->entry->signature, sizeof last_call.signature - 1);
    for (unsigned i = 0; i < cif->nargs; i++) {
        if (rc->sig.codes[i] == '{') {
            size_t size = cif->arg_types[i]->size;
            last_call.args[i] = size;
            memcpy(last_structs[i], args[i], size < FAKECUDA_MAX_STRUCT ? size : FAKECUDA_MAX_STRUCT);
        } else {
            last_call.args[i] = raw_bits(rc->sig.codes[i], args[i]);
        }
    }
    call_count++;
    *(ffi_arg *)ret = (ffi_arg)(unsigned)call_result;
    fake_unlock();
}

/* Caller holds the lock. */
static struct record_closure *closure_for(const struct record_entry *e, int version, unsigned long long flags,
                                          int impl_version, int per_thread)
{
    for (struct record_closure *rc = closures; rc != NULL; rc = rc->next)
        if (rc->entry == e && rc->requested_version == version && rc->requested_flags == flags &&
            rc->impl_version == impl_version && rc->per_thread == per_thread)
            return rc;

    struct record_closure *rc = calloc(1, sizeof *rc);
    if (rc == NULL)
        return NULL;
    if (signature_parse(e->signature, &rc->sig) != 0 || rc->sig.nargs > FAKECUDA_MAX_ARGS) {
        free(rc);
        return NULL;
    }
    rc->entry = e;
    rc->requested_version = version;
    rc->requested_flags = flags;
    rc->impl_version = impl_version;
    rc->per_thread = per_thread;
    rc->closure = ffi_closure_alloc(sizeof(ffi_closure), &rc->code);
    if (rc->closure == NULL ||
        ffi_prep_cif(&rc->cif, FFI_DEFAULT_ABI, rc->sig.nargs, &ffi_type_uint32, rc->sig.args) != FFI_OK ||
        ffi_prep_closure_loc(rc->closure, &rc->cif, record_call, rc, rc->code) != FFI_OK) {
        if (rc->closure != NULL)
            ffi_closure_free(rc->closure);
        free(rc);
        return NULL;
    }
    rc->next = closures;
    closures = rc;
    return rc;
}

/* The echo entry points, one record_entry each, made on first request and
 * kept (closures point at them). Caller holds the lock. */
struct echo_entry {
    struct record_entry entry;
    struct echo_entry *next;
    char name[FAKECUDA_NAME_MAX];
};
static struct echo_entry *echoes;

CUresult fake_echo_resolve(const char *symbol, int version, unsigned long long flags, void **pfn,
                           CUdriverProcAddressQueryResult *status)
{
    const char *letters = symbol + strlen(FAKECUDA_ECHO_PREFIX);
    struct signature sig;
    if (strlen(symbol) >= FAKECUDA_NAME_MAX || strlen(letters) > FAKECUDA_MAX_ARGS ||
        strchr(letters, '{') != NULL || signature_parse(letters, &sig) != 0) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; /* not a signature: no such entry point */
        return CUDA_SUCCESS;
    }
    fake_lock();
    struct echo_entry *e = echoes;
    while (e != NULL && strcmp(e->name, symbol) != 0)
        e = e->next;
    if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
        strcpy(e->name, symbol);
        e->entry.name = e->entry.driver_name = e->name;
        e->entry.signature = e->name + strlen(FAKECUDA_ECHO_PREFIX);
        e->entry.version = e->entry.ptds_version = version;
        e->next = echoes;
        echoes = e;
    }
    struct record_closure *rc = e != NULL ? closure_for(&e->entry, version, flags, version, 0) : NULL;
    fake_unlock();
    if (rc == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pfn = rc->code;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult fake_record_resolve(const char *symbol, int version, unsigned long long flags, void **pfn,
                             CUdriverProcAddressQueryResult *status)
{
    const int driver_version = fake_settings()->driver_version;
    const int want_per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct record_entry *best = NULL;
    int best_version = 0, best_pt = 0, known = 0;

    /* Several user names may end at one driver name (cuGraphInstantiate and
     * cuGraphInstantiateWithFlags); they share its variants. */
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        const struct record_entry *e = &entries[i];
        if (strcmp(e->driver_name, symbol) != 0)
            continue;
        const int variants[2][2] = { { e->version, 0 }, { e->ptds_version, 1 } };
        for (int v = 0; v < 2; v++) {
            int vv = variants[v][0], pt = variants[v][1];
            if (vv > driver_version)
                continue;
            known = 1;
            if (vv > version || (pt && !want_per_thread))
                continue;
            if (best == NULL || vv > best_version || (vv == best_version && pt && !best_pt)) {
                best = e;
                best_version = vv;
                best_pt = pt;
            }
        }
    }
    if (best == NULL) {
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    fake_lock();
    struct record_closure *rc = closure_for(best, version, flags, best_version, best_pt);
    fake_unlock();
    if (rc == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pfn = rc->code;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FAKE_EXPORT void fakecuda_record_set_result(int result)
{
    fake_lock();
    call_result = result;
    fake_unlock();
}

FAKE_EXPORT uint64_t fakecuda_record_count(void)
{
    fake_lock();
    uint64_t n = call_count;
    fake_unlock();
    return n;
}

FAKE_EXPORT size_t fakecuda_record_struct_arg(unsigned index, void *out, size_t size)
{
    size_t struct_size = 0;
    fake_lock();
    if (call_count != 0 && index < last_call.nargs && last_call.signature[0] != '\0') {
        /* The index-th top-level argument is a struct when the closure saw one. */
        struct signature sig;
        if (signature_parse(last_call.signature, &sig) == 0 && index < sig.nargs && sig.codes[index] == '{') {
            struct_size = (size_t)last_call.args[index];
            size_t n = struct_size < size ? struct_size : size;
            if (n > FAKECUDA_MAX_STRUCT)
                n = FAKECUDA_MAX_STRUCT;
            memcpy(out, last_structs[index], n);
        }
    }
    fake_unlock();
    return struct_size;
}

FAKE_EXPORT int fakecuda_record_last(struct fakecuda_call *out)
{
    if (out == NULL)
        return 0;
    fake_lock();
    int have = call_count != 0;
    if (have)
        *out = last_call;
    fake_unlock();
    return have;
}

/*
 * call.c - cuabi_call(): any driver entry point by name and signature
 * string, through libffi.
 *
 * Each distinct (name, cuda_version, signature) is resolved and its
 * ffi_cif prepared once, then kept in a small hash table for the life of
 * the process.  Readers walk the table without the lock: an entry is fully
 * built before it is published with a release store, and never changes or
 * goes away afterwards.  Inserts happen under the library lock.  The table
 * holds at most CACHE_LIMIT entries; beyond that calls still work, but
 * prepare their call interface on the stack each time.
 */
#include "internal.h"

#include <ffi.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 256 /* power of two */
#define CACHE_LIMIT 4096

typedef struct call_entry {
    struct call_entry *next; /* older entry in the same bucket */
    uint64_t hash;
    int32_t cuda_version;
    void *fn;
    ffi_cif cif;
    ffi_type *types[CUABI_CALL_MAX_PARAMS];
    const char *name;      /* copies, stored after the struct */
    const char *signature;
} call_entry;

static _Atomic(call_entry *) buckets[BUCKETS];
static unsigned cached_entries; /* under the library lock */

/* Maps the signature letters to libffi types; returns the count, or -1 if
 * the string is malformed (unknown letter, too many). */
static int parse_signature(const char *signature, ffi_type **types)
{
    int n = 0;
    for (const char *c = signature; *c != '\0'; c++, n++) {
        if (n == CUABI_CALL_MAX_PARAMS)
            return -1;
        switch (*c) {
        case 'i': types[n] = &ffi_type_sint32; break;
        case 'I': types[n] = &ffi_type_uint32; break;
        case 'q': types[n] = &ffi_type_sint64; break;
        case 'Q': types[n] = &ffi_type_uint64; break;
        case 'z': types[n] = sizeof(size_t) == 8 ? &ffi_type_uint64 : &ffi_type_uint32; break;
        case 'p': types[n] = &ffi_type_pointer; break;
        case 'f': types[n] = &ffi_type_float; break;
        case 'd': types[n] = &ffi_type_double; break;
        default: return -1;
        }
    }
    return n;
}

/* FNV-1a over the name, the signature and the version. */
static uint64_t hash_key(const char *name, const char *signature, int32_t cuda_version)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const char *c = name; *c != '\0'; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3u;
    h = (h ^ 0xff) * 0x100000001b3u; /* separator: ("ab","c") != ("a","bc") */
    for (const char *c = signature; *c != '\0'; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3u;
    return (h ^ (uint32_t)cuda_version) * 0x100000001b3u;
}

static call_entry *find_entry(call_entry *e, uint64_t hash, const char *name,
                              const char *signature, int32_t cuda_version)
{
    for (; e != NULL; e = e->next)
        if (e->hash == hash && e->cuda_version == cuda_version &&
            strcmp(e->name, name) == 0 && strcmp(e->signature, signature) == 0)
            return e;
    return NULL;
}

/* Builds an entry for a resolved entry point and publishes it; returns the
 * entry to call through, or NULL when the cache is full or memory is short
 * (the caller then prepares a one-off call interface). */
static call_entry *insert(uint64_t hash, const char *name, const char *signature,
                          int32_t cuda_version, void *fn, ffi_type *const *types, int nargs)
{
    _Atomic(call_entry *) *bucket = &buckets[hash & (BUCKETS - 1)];
    call_entry *result = NULL;

    cuabi__lock();
    /* Another thread may have inserted the same key meanwhile. */
    result = find_entry(atomic_load_explicit(bucket, memory_order_relaxed), hash, name,
                        signature, cuda_version);
    if (result == NULL && cached_entries < CACHE_LIMIT) {
        size_t name_len = strlen(name) + 1, sig_len = strlen(signature) + 1;
        call_entry *e = malloc(sizeof *e + name_len + sig_len);
        if (e != NULL) {
            char *strings = (char *)(e + 1);
            memcpy(strings, name, name_len);
            memcpy(strings + name_len, signature, sig_len);
            e->name = strings;
            e->signature = strings + name_len;
            e->hash = hash;
            e->cuda_version = cuda_version;
            e->fn = fn;
            memcpy(e->types, types, (size_t)nargs * sizeof types[0]);
            if (ffi_prep_cif(&e->cif, FFI_DEFAULT_ABI, (unsigned)nargs, &ffi_type_uint32,
                             e->types) == FFI_OK) {
                e->next = atomic_load_explicit(bucket, memory_order_relaxed);
                atomic_store_explicit(bucket, e, memory_order_release);
                cached_entries++;
                result = e;
            } else {
                free(e);
            }
        }
    }
    cuabi__unlock();
    return result;
}

static CUresult invoke(ffi_cif *cif, void *fn, void *const *args)
{
    /* libffi widens integer results narrower than a register to ffi_arg.
     * CUresult is an unsigned int-sized enum. */
    ffi_arg result = 0;
    ffi_call(cif, FFI_FN(fn), &result, (void **)args);
    return (CUresult)(uint32_t)result;
}

CUABI_API CUresult CUABI_CALL cuabi_call(const char *name, int32_t cuda_version,
                                         const char *signature, void *const *args)
{
    if (name == NULL || signature == NULL)
        return CUDA_ERROR_INVALID_VALUE;

    /* A malformed signature is reported as such whatever else is wrong. */
    ffi_type *types[CUABI_CALL_MAX_PARAMS];
    int nargs = parse_signature(signature, types);
    if (nargs < 0)
        return CUABI_ERROR_BAD_SIGNATURE;
    if (cuda_version < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (nargs > 0 && args == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (int k = 0; k < nargs; k++)
        if (args[k] == NULL)
            return CUDA_ERROR_INVALID_VALUE;

    /* Fast path: a call seen before. */
    uint64_t hash = hash_key(name, signature, cuda_version);
    call_entry *e = find_entry(atomic_load_explicit(&buckets[hash & (BUCKETS - 1)],
                                                    memory_order_acquire),
                               hash, name, signature, cuda_version);
    if (CUABI_LIKELY(e != NULL))
        return invoke(&e->cif, e->fn, args);

    /* First time: look the entry point up with the process's stream mode. */
    CUresult rc = cuabi__ensure_loaded();
    if (rc != CUDA_SUCCESS)
        return rc;
    void *fn = NULL;
    rc = cuabi__get_proc(name, cuda_version, cuabi__stream_flags(), &fn);
    if (rc != CUDA_SUCCESS)
        return rc;

    e = insert(hash, name, signature, cuda_version, fn, types, nargs);
    if (e != NULL)
        return invoke(&e->cif, e->fn, args);

    ffi_cif cif;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)nargs, &ffi_type_uint32, types) != FFI_OK)
        return CUABI_ERROR_BAD_SIGNATURE;
    return invoke(&cif, fn, args);
}

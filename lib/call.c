/* SPDX-License-Identifier: Apache-2.0 */
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
 * prepare their call interface each time.  An entry also holds the libffi
 * types of the structs its signature passes by value.
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
    /* then the struct types of the signature and their member lists (signature_types) */
} call_entry;

static _Atomic(call_entry *) buckets[BUCKETS];
static unsigned cached_entries; /* under the library lock */

/*
 * Signatures (docs/abi.md): one letter per parameter, or {...} for a struct
 * passed by value, whose members are letters, [N] (N bytes, 1 <= N) or
 * nested {...}.  Checking a signature (scan_signature) counts the libffi
 * types it needs; building them (fill_signature) writes them into storage
 * of exactly that size, in a cache entry or, when the cache is full, in a
 * block freed after the call.
 */
#define MAX_STRUCT_DEPTH 8

typedef struct signature_shape {
    int nargs;    /* parameters */
    int nstructs; /* struct types, nested ones included */
    int nmembers; /* members of all of them (a [N] counts N) */
} signature_shape;

static ffi_type *letter_type(char c)
{
    switch (c) {
    case 'B': return &ffi_type_uint8;
    case 'H': return &ffi_type_uint16;
    case 'i': return &ffi_type_sint32;
    case 'I': return &ffi_type_uint32;
    case 'q': return &ffi_type_sint64;
    case 'Q': return &ffi_type_uint64;
    case 'z': return sizeof(size_t) == 8 ? &ffi_type_uint64 : &ffi_type_uint32;
    case 'p': return &ffi_type_pointer;
    case 'f': return &ffi_type_float;
    case 'd': return &ffi_type_double;
    default: return NULL;
    }
}

/* The N of "[N]" at s (plain decimal digits, no leading zero, 1..limit); *end
 * is set past the ']'.  0 when malformed or out of range. */
static int array_length(const char *s, int limit, const char **end)
{
    long n = 0;
    const char *c = s + 1;
    if (*c < '1' || *c > '9')
        return 0;
    for (; *c >= '0' && *c <= '9'; c++) {
        n = n * 10 + (*c - '0');
        if (n > limit)
            return 0;
    }
    if (*c != ']')
        return 0;
    *end = c + 1;
    return (int)n;
}

/* Checks the struct body after a '{' and counts what it needs; returns the
 * text after its '}', or NULL when malformed or over the limits. */
static const char *scan_struct(const char *s, int depth, signature_shape *shape)
{
    int members = 0;
    if (depth > MAX_STRUCT_DEPTH)
        return NULL;
    shape->nstructs++;
    while (*s != '}') {
        if (*s == '{') {
            s = scan_struct(s + 1, depth + 1, shape);
            if (s == NULL)
                return NULL;
            members++;
        } else if (*s == '[') {
            int n = array_length(s, CUABI_CALL_MAX_STRUCT_MEMBERS, &s);
            if (n == 0)
                return NULL;
            members += n;
        } else if (letter_type(*s) != NULL) {
            members++;
            s++;
        } else {
            return NULL; /* the end of the text, a stray ']' or another letter */
        }
        if (members > CUABI_CALL_MAX_STRUCT_MEMBERS)
            return NULL;
    }
    if (members == 0)
        return NULL;
    shape->nmembers += members;
    if (shape->nmembers > CUABI_CALL_MAX_STRUCT_MEMBERS)
        return NULL;
    return s + 1;
}

/* Checks a whole signature; 0 with *shape filled, -1 when malformed. */
static int scan_signature(const char *signature, signature_shape *shape)
{
    shape->nargs = shape->nstructs = shape->nmembers = 0;
    for (const char *s = signature; *s != '\0'; shape->nargs++) {
        if (shape->nargs == CUABI_CALL_MAX_PARAMS)
            return -1;
        if (*s == '{') {
            s = scan_struct(s + 1, 0, shape);
            if (s == NULL)
                return -1;
        } else if (letter_type(*s) != NULL) {
            s++;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Where fill_signature writes the struct types and their member lists. */
typedef struct signature_types {
    ffi_type *structs;
    ffi_type **members;
} signature_types;

/* Bytes of storage for the struct types and their member lists (each ends in NULL). */
static size_t types_size(const signature_shape *shape)
{
    return (size_t)shape->nstructs * sizeof(ffi_type) +
           (size_t)(shape->nmembers + shape->nstructs) * sizeof(ffi_type *);
}

static signature_types types_at(void *storage, const signature_shape *shape)
{
    signature_types t = { NULL, NULL };
    if (shape->nstructs > 0) { /* else there is no storage, and nothing to point into */
        t.structs = storage;
        t.members = (ffi_type **)(t.structs + shape->nstructs);
    }
    return t;
}

/* The direct members of the struct body at s (after its '{'). */
static int direct_members(const char *s)
{
    int count = 0, depth = 0;
    for (; depth > 0 || *s != '}'; s++) {
        if (*s == '{') {
            if (depth++ == 0)
                count++;
        } else if (*s == '}') {
            depth--;
        } else if (depth == 0 && *s == '[') {
            const char *end = s;
            count += array_length(s, CUABI_CALL_MAX_STRUCT_MEMBERS, &end);
            s = end - 1; /* the ']'; the loop steps past it */
        } else if (depth == 0) {
            count++;
        }
    }
    return count;
}

/* Builds the struct type whose body starts at *s (after its '{'). */
static ffi_type *fill_struct(const char **s, signature_types *out)
{
    ffi_type *type = out->structs++;
    int count = direct_members(*s);
    ffi_type **members = out->members;
    out->members += count + 1;
    const char *c = *s;
    int k = 0;
    while (*c != '}') {
        if (*c == '{') {
            c++;
            members[k++] = fill_struct(&c, out);
        } else if (*c == '[') {
            for (int n = array_length(c, CUABI_CALL_MAX_STRUCT_MEMBERS, &c); n > 0; n--)
                members[k++] = &ffi_type_uint8;
        } else {
            members[k++] = letter_type(*c++);
        }
    }
    members[k] = NULL;
    type->size = 0;
    type->alignment = 0;
    type->type = FFI_TYPE_STRUCT;
    type->elements = members;
    *s = c + 1;
    return type;
}

/* The libffi type of each parameter of a signature scan_signature accepted. */
static void fill_signature(const char *signature, ffi_type **args, signature_types out)
{
    int n = 0;
    for (const char *s = signature; *s != '\0'; n++) {
        if (*s == '{') {
            s++;
            args[n] = fill_struct(&s, &out);
        } else {
            args[n] = letter_type(*s++);
        }
    }
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
                          int32_t cuda_version, void *fn, const signature_shape *shape)
{
    _Atomic(call_entry *) *bucket = &buckets[hash & (BUCKETS - 1)];
    call_entry *result = NULL;

    cuabi__lock();
    /* Another thread may have inserted the same key meanwhile. */
    result = find_entry(atomic_load_explicit(bucket, memory_order_relaxed), hash, name,
                        signature, cuda_version);
    if (result == NULL && cached_entries < CACHE_LIMIT) {
        /* The struct types first (pointer-aligned, right after the entry), then the strings. */
        size_t types_bytes = types_size(shape);
        size_t name_len = strlen(name) + 1, sig_len = strlen(signature) + 1;
        call_entry *e = malloc(sizeof *e + types_bytes + name_len + sig_len);
        if (e != NULL) {
            char *strings = (char *)(e + 1) + types_bytes;
            memcpy(strings, name, name_len);
            memcpy(strings + name_len, signature, sig_len);
            e->name = strings;
            e->signature = strings + name_len;
            e->hash = hash;
            e->cuda_version = cuda_version;
            e->fn = fn;
            fill_signature(signature, e->types, types_at(e + 1, shape));
            if (ffi_prep_cif(&e->cif, FFI_DEFAULT_ABI, (unsigned)shape->nargs, &ffi_type_uint32,
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

/* A call the cache cannot hold: its types in a block of their own, freed afterwards. */
static CUresult invoke_uncached(void *fn, const char *signature, const signature_shape *shape,
                                void *const *args)
{
    ffi_type *types[CUABI_CALL_MAX_PARAMS];
    void *storage = NULL;
    if (shape->nstructs > 0) {
        storage = malloc(types_size(shape));
        if (storage == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fill_signature(signature, types, types_at(storage, shape));
    ffi_cif cif;
    CUresult rc = CUABI_ERROR_BAD_SIGNATURE;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)shape->nargs, &ffi_type_uint32, types) == FFI_OK)
        rc = invoke(&cif, fn, args);
    free(storage);
    return rc;
}

CUABI_API CUresult CUABI_CALL cuabi_call(const char *name, int32_t cuda_version,
                                         const char *signature, void *const *args)
{
    if (name == NULL || signature == NULL)
        return CUDA_ERROR_INVALID_VALUE;

    /* A malformed signature is reported as such whatever else is wrong. */
    signature_shape shape;
    if (scan_signature(signature, &shape) != 0)
        return CUABI_ERROR_BAD_SIGNATURE;
    if (cuda_version < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (shape.nargs > 0 && args == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (int k = 0; k < shape.nargs; k++)
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

    e = insert(hash, name, signature, cuda_version, fn, &shape);
    if (e != NULL)
        return invoke(&e->cif, e->fn, args);
    return invoke_uncached(fn, signature, &shape, args);
}

/* ---- for trace.c: a call interface from a signature --------------------- */

/* Prepares *cif for a function of `signature` returning `returns`, its parameter
 * types in args (CUABI_CALL_MAX_PARAMS of room) and its struct types in a block
 * from malloc, *storage (NULL without structs), which lives as long as the cif.
 * Returns the number of parameters, or -1 when the signature is malformed or
 * memory is short. */
CUABI_INTERNAL int cuabi__signature_cif(const char *signature, ffi_type *returns, ffi_cif *cif,
                                        ffi_type **args, void **storage);
CUABI_INTERNAL int cuabi__signature_cif(const char *signature, ffi_type *returns, ffi_cif *cif,
                                        ffi_type **args, void **storage)
{
    signature_shape shape;
    *storage = NULL;
    if (scan_signature(signature, &shape) != 0)
        return -1;
    if (shape.nstructs > 0 && (*storage = malloc(types_size(&shape))) == NULL)
        return -1;
    fill_signature(signature, args, types_at(*storage, &shape));
    if (ffi_prep_cif(cif, FFI_DEFAULT_ABI, (unsigned)shape.nargs, returns, args) != FFI_OK) {
        free(*storage);
        *storage = NULL;
        return -1;
    }
    return shape.nargs;
}

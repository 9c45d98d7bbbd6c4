/* SPDX-License-Identifier: Apache-2.0 */
#include "signature.h"

#include <stdlib.h>
#include <string.h>

ffi_type *signature_letter_type(char c)
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

/* Parses one struct body after its '{'; *text ends after the '}'. */
static ffi_type *parse_struct(const char **text, struct signature *sig, int depth)
{
    ffi_type *members[SIG_MAX_ELEMENTS];
    unsigned n = 0;
    const char *s = *text;
    if (depth > 4 || sig->nstructs == SIG_MAX_STRUCTS)
        return NULL;
    while (*s != '}') {
        if (*s == '\0')
            return NULL;
        if (*s == '{') {
            s++;
            ffi_type *inner = parse_struct(&s, sig, depth + 1);
            if (inner == NULL || n == SIG_MAX_ELEMENTS)
                return NULL;
            members[n++] = inner;
        } else if (*s == '[') {
            char *end = NULL;
            unsigned long count = strtoul(s + 1, &end, 10);
            if (end == s + 1 || *end != ']' || count == 0 || count > SIG_MAX_ELEMENTS - n)
                return NULL;
            for (unsigned long k = 0; k < count; k++)
                members[n++] = &ffi_type_uint8;
            s = end + 1;
        } else {
            ffi_type *t = signature_letter_type(*s);
            if (t == NULL || n == SIG_MAX_ELEMENTS)
                return NULL;
            members[n++] = t;
            s++;
        }
    }
    if (n == 0 || sig->nelements + n + 1 > SIG_MAX_ELEMENTS || sig->nstructs == SIG_MAX_STRUCTS)
        return NULL;
    ffi_type *st = &sig->structs[sig->nstructs++];
    memset(st, 0, sizeof *st);
    st->type = FFI_TYPE_STRUCT;
    st->elements = &sig->elements[sig->nelements];
    memcpy(st->elements, members, n * sizeof members[0]);
    st->elements[n] = NULL;
    sig->nelements += n + 1;
    *text = s + 1;
    return st;
}

int signature_parse(const char *text, struct signature *out)
{
    memset(out, 0, sizeof *out);
    const char *s = text;
    while (*s != '\0') {
        if (out->nargs == SIG_MAX_ARGS)
            return -1;
        ffi_type *t;
        char code = *s;
        if (*s == '{') {
            s++;
            t = parse_struct(&s, out, 0);
        } else {
            t = signature_letter_type(*s);
            s++;
        }
        if (t == NULL)
            return -1;
        out->codes[out->nargs] = code;
        out->args[out->nargs++] = t;
    }
    return 0;
}

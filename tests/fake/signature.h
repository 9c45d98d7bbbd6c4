/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signature.h - the signature strings of tests/generated/entry_points.h as
 * libffi types, for the fake's recording closures and the forwarder test.
 *
 * Letters (docs/generator.md): B uint8, H uint16, i int32, I uint32, q int64,
 * Q uint64, z size_t, p pointer, f float, d double; {...} a struct passed by
 * value with its members' letters inside, where [N] is an array of N bytes.
 */
#ifndef FAKE_SIGNATURE_H
#define FAKE_SIGNATURE_H

#include <ffi.h>

#define SIG_MAX_ARGS 32
#define SIG_MAX_STRUCTS 16
#define SIG_MAX_ELEMENTS 512

struct signature {
    unsigned nargs;
    ffi_type *args[SIG_MAX_ARGS];
    char codes[SIG_MAX_ARGS];        /* the letter, or '{' for a struct */
    /* storage the struct types point into; a parsed signature must not move */
    ffi_type structs[SIG_MAX_STRUCTS];
    unsigned nstructs;
    ffi_type *elements[SIG_MAX_ELEMENTS];
    unsigned nelements;
};

/* 0 on success, -1 when the text is malformed or too big. */
int signature_parse(const char *text, struct signature *out);
/* The libffi type of a scalar letter, NULL for anything else. */
ffi_type *signature_letter_type(char c);

#endif

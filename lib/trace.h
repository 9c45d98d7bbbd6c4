/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - what the generated trace wrappers (lib/trace_<library>.c) and trace.c
 * share: how a call's arguments are described, and the calls a wrapper makes.
 * docs/tracing.md has the line format.
 */
#ifndef CUABI_TRACE_H
#define CUABI_TRACE_H

#include <stdint.h>
#include <string.h>

/* How one argument (or a result) is written. */
enum {
    CUABI_TRACE_NONE,
    CUABI_TRACE_INT,     /* signed, in decimal */
    CUABI_TRACE_UINT,    /* unsigned, in decimal */
    CUABI_TRACE_SIZE,    /* a size_t, in decimal */
    CUABI_TRACE_HEX,     /* a device address or flags: 0x... */
    CUABI_TRACE_POINTER, /* a handle or a pointer: 0x..., or NULL */
    CUABI_TRACE_ENUM,    /* an enumerator's name (aux: the library's enum), else decimal */
    CUABI_TRACE_FLOAT,
    CUABI_TRACE_DOUBLE,
    CUABI_TRACE_STRING,  /* a const char *: quoted, at most CUABI_TRACE_STRING_MAX bytes */
    CUABI_TRACE_STRINGS, /* an array of strings, its length the parameter numbered aux */
    CUABI_TRACE_OUT,     /* a pointer the call writes through: 0x...->the value written (a
                          * `pointee` of `width` bytes), read after a successful call */
    CUABI_TRACE_STRUCT,  /* a struct passed by value: its aux bytes in hex */
};

#define CUABI_TRACE_STRING_MAX 64  /* bytes of a string written, then "..." */
#define CUABI_TRACE_STRINGS_MAX 8  /* strings of an array written, then ... */
#define CUABI_TRACE_LINE_MAX 4096  /* a longer line ends with "...": one write() each */

/* The tables of lib/trace_<library>.c (generated).  Names are offsets into the
 * library's one string array. */
typedef struct cuabi_trace_param {
    uint32_t name;
    uint8_t kind;    /* CUABI_TRACE_* */
    uint8_t pointee; /* OUT: how the value written is written */
    uint8_t width;   /* OUT: its size in bytes */
    uint16_t aux;    /* see the kinds */
} cuabi_trace_param;

typedef struct cuabi_trace_fn {
    uint32_t name;
    uint32_t signature; /* its signature letters (docs/generator.md) */
    uint32_t first;     /* its first parameter in the params table */
    uint8_t count;
    uint8_t returns;    /* ENUM: the library's result type (its enum 0); STRING: a const char * */
} cuabi_trace_fn;

typedef struct cuabi_trace_enum {
    uint32_t name;
    uint32_t first; /* its first value in the enum_values and enum_names tables */
    uint32_t count; /* ascending values from there */
} cuabi_trace_enum;

/* One library's trace tables: the second field of its lines, its slots and
 * targets, the wrappers built so far, and how to decode each call. */
typedef struct cuabi_trace_library {
    const char *name;
    unsigned count;
    _Atomic(void *) *slots;
    _Atomic(void *) *targets;
    _Atomic(void *) *wrappers; /* per slot: its wrapper once built (trace.c), else NULL */
    const char *strings;
    const cuabi_trace_fn *fns;
    const cuabi_trace_param *params;
    const cuabi_trace_enum *enums;
    const int64_t *enum_values;
    const uint32_t *enum_names;
} cuabi_trace_library;

extern CUABI_INTERNAL const cuabi_trace_library cuabi__trace_driver, cuabi__trace_nvrtc,
    cuabi__trace_nvjitlink, cuabi__trace_nvvm, cuabi__trace_nvml;

/* The name of value `value` of enum `e` of `lib`, or NULL. */
CUABI_INTERNAL const char *cuabi__trace_enum_name(const cuabi_trace_library *lib, unsigned e,
                                                  int64_t value);

#endif /* CUABI_TRACE_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * layout.h - one row per fact the layout test compares: the size and
 * alignment of every driver type, the offset and size of every field, the
 * value of every enumerator and integer #define. layout_toolkit.c fills the
 * table from the toolkit's cuda.h, layout_cuabi.c from cuabi's headers; both
 * expand the same generated list, tests/generated/layout_probe.h.
 */
#ifndef CUABI_TEST_LAYOUT_H
#define CUABI_TEST_LAYOUT_H

#include <stddef.h>

enum layout_kind { LAYOUT_TYPE, LAYOUT_FIELD, LAYOUT_ENUM, LAYOUT_DEFINE };

struct layout_row {
    enum layout_kind kind;
    const char *name;        /* "CUdevprop", "CUdevprop.maxThreadsPerBlock", ... */
    unsigned long long a;    /* sizeof, offsetof, or the value */
    unsigned long long b;    /* _Alignof or the field's size; 0 otherwise */
};

/* Fill up to cap rows; return how many the list has. */
size_t layout_toolkit(struct layout_row *rows, size_t cap);
size_t layout_cuabi(struct layout_row *rows, size_t cap);

#endif

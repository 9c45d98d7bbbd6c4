/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.h - a bounded text buffer.  The loader writes its line per candidate
 * into one; lib/load.c writes the rest of cuabi_driver_report() around it.
 * Appends never overflow: what does not fit is dropped and `truncated` is
 * set, so that the text can end by saying so.
 */
#ifndef CUABI_TEXT_H
#define CUABI_TEXT_H

#include <stddef.h>

typedef struct cuabi_text {
    char *buf;
    size_t cap;
    size_t len;
    int truncated;
} cuabi_text;

void cuabi_text_init(cuabi_text *text, char *buf, size_t cap);
void cuabi_text_append(cuabi_text *text, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends at most max_bytes of value, printable ASCII kept, other bytes
 * written as \xNN, so that an odd environment value is shown exactly. */
void cuabi_text_append_quoted(cuabi_text *text, const char *value, size_t max_bytes);
/* Marks the end of the text as truncated if anything was dropped. */
void cuabi_text_finish(cuabi_text *text);

#endif /* CUABI_TEXT_H */

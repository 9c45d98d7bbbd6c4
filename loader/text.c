/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.c - the bounded text buffer of text.h.
 */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cuabi_text_init(cuabi_text *text, char *buf, size_t cap)
{
    text->buf = buf;
    text->cap = cap;
    text->len = 0;
    text->truncated = 0;
    if (cap > 0)
        buf[0] = '\0';
}

void cuabi_text_append(cuabi_text *text, const char *fmt, ...)
{
    if (text->cap == 0 || text->truncated)
        return;
    size_t room = text->cap - text->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text->buf + text->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        text->buf[text->len] = '\0';
        text->truncated = 1;
    } else if ((size_t)n >= room) {
        /* vsnprintf kept what fit and terminated it. */
        text->len = text->cap - 1;
        text->truncated = 1;
    } else {
        text->len += (size_t)n;
    }
}

void cuabi_text_append_quoted(cuabi_text *text, const char *value, size_t max_bytes)
{
    cuabi_text_append(text, "\"");
    size_t i = 0;
    for (; value[i] != '\0' && i < max_bytes; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c == '"' || c == '\\')
            cuabi_text_append(text, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            cuabi_text_append(text, "%c", c);
        else
            cuabi_text_append(text, "\\x%02x", c);
    }
    cuabi_text_append(text, value[i] != '\0' ? "\"..." : "\"");
}

void cuabi_text_finish(cuabi_text *text)
{
    static const char note[] = "\n[report truncated]\n";
    if (!text->truncated || text->cap < sizeof note)
        return;
    /* Overwrite the tail so the reader knows lines are missing. */
    size_t at = text->cap - sizeof note;
    if (at > text->len)
        at = text->len;
    memcpy(text->buf + at, note, sizeof note);
    text->len = at + sizeof note - 1;
}


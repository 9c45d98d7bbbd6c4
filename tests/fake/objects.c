/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry of every handle the fake hands out. A handle is only ever
 * dereferenced after the registry says it is live, so a stale or invented
 * handle gets an error code, as with a real driver, instead of a crash.
 */
#include "fake_internal.h"

#include <stdlib.h>

#define FAKE_MAGIC 0xFA4ECD0Du

static struct fake_object *objects;
static uint64_t live_counts[FAKE_KIND_COUNT];

void *fake_object_new(enum fake_kind kind, size_t size, struct fake_context *owner, int counted)
{
    struct fake_object *o = calloc(1, size);
    if (o == NULL)
        return NULL;
    o->magic = FAKE_MAGIC;
    o->kind = kind;
    o->owner = owner;
    o->counted = counted;
    fake_lock();
    o->next = objects;
    if (objects != NULL)
        objects->prev = o;
    objects = o;
    if (counted)
        live_counts[kind]++;
    fake_unlock();
    return o;
}

int fake_object_valid(const void *p, enum fake_kind kind)
{
    if (p == NULL)
        return 0;
    for (const struct fake_object *o = objects; o != NULL; o = o->next)
        if (o == p)
            return o->magic == FAKE_MAGIC && o->kind == kind;
    return 0;
}

void fake_object_each(enum fake_kind kind, void (*visit)(void *object, void *arg), void *arg)
{
    for (struct fake_object *o = objects; o != NULL; o = o->next)
        if (o->kind == kind)
            visit(o, arg);
}

void fake_object_delete(void *object)
{
    struct fake_object *o = object;
    if (o == NULL)
        return;
    if (o->prev != NULL)
        o->prev->next = o->next;
    else
        objects = o->next;
    if (o->next != NULL)
        o->next->prev = o->prev;
    if (o->counted)
        live_counts[o->kind]--;
    if (o->destroy != NULL)
        o->destroy(o);
    o->magic = 0;
    free(o);
}

void fake_object_delete_owned_by(struct fake_context *ctx)
{
    /* Deleting one object may delete others (a module takes its functions
     * along), so restart the walk after every deletion. */
    for (;;) {
        struct fake_object *victim = NULL;
        for (struct fake_object *o = objects; o != NULL; o = o->next) {
            if (o->owner == ctx && (struct fake_object *)ctx != o && o->kind != FAKE_FUNCTION &&
                o->kind != FAKE_GRAPH_NODE) {
                victim = o;
                break;
            }
        }
        if (victim == NULL)
            return;
        fake_object_delete(victim);
    }
}

uint64_t fake_object_count(enum fake_kind kind)
{
    fake_lock();
    uint64_t n = live_counts[kind];
    fake_unlock();
    return n;
}

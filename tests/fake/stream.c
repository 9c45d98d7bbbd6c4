/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streams, events, stream capture and graphs.
 *
 * The fake runs every operation to completion before the call that issued it
 * returns, so streams only order nothing and synchronisation has nothing to
 * wait for. What streams do carry is capture: work issued to a capturing
 * stream is recorded into a graph instead of being run, and launching an
 * instantiated graph runs the recorded work again, in order.
 *
 * A graph's nodes keep their creation order and their dependencies (the
 * nodes they depend on, in the order given). A dependency always exists
 * before the node that names it, so creation order is a topological order
 * and replaying in it respects every edge. A captured node depends on the
 * node captured before it, as on one stream.
 */
#include "fake_internal.h"
#include "fake_graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fake_stream {
    struct fake_object obj;
    unsigned flags;
    int priority;
    unsigned long long id;
    struct fake_graph *capture;  /* graph being captured into, or NULL */
    int capture_invalidated;
    CUstreamCaptureMode capture_mode; /* while capturing: the mode it began with */
    pthread_t capture_thread;         /* and the thread that began it */
};

/* This thread's capture mode for unsafe calls (cuThreadExchangeStreamCaptureMode). */
static _Thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

struct fake_event {
    struct fake_object obj;
    unsigned flags;
    int recorded;
    struct timespec when;
};

static unsigned long long next_stream_id = 1;

/* ----------------------------------------------------------- operations */

static void op_release(struct fake_op *op)
{
    fake_graph_op_release(op);
    if (op->kind == FAKE_OP_MEM_ALLOC)
        fake_graph_mem_hold(op, -1);
    if (op->kind == FAKE_OP_KERNEL) {
        free(op->u.kernel.params);
        op->u.kernel.params = NULL;
    }
}

static int op_copy(struct fake_op *dst, const struct fake_op *src)
{
    *dst = *src;
    if (src->kind == FAKE_OP_CHILD || src->kind == FAKE_OP_CONDITIONAL)
        return fake_graph_op_copy(dst, src);
    if (src->kind == FAKE_OP_MEM_ALLOC)
        fake_graph_mem_hold(src, 1);
    if (src->kind == FAKE_OP_KERNEL && src->u.kernel.params_size != 0) {
        dst->u.kernel.params = malloc(src->u.kernel.params_size);
        if (dst->u.kernel.params == NULL)
            return 0;
        memcpy(dst->u.kernel.params, src->u.kernel.params, src->u.kernel.params_size);
    }
    return 1;
}

void fake_event_stamp(CUevent event)
{
    struct fake_event *e = (struct fake_event *)event;
    if (!fake_object_valid(e, FAKE_EVENT))
        return; /* destroyed since it was captured: nothing to stamp */
    clock_gettime(CLOCK_MONOTONIC, &e->when);
    e->recorded = 1;
}

CUresult fake_run_op(const struct fake_op *op)
{
    CUresult r = CUDA_SUCCESS;
    switch (op->kind) {
    case FAKE_OP_KERNEL: {
        size_t offsets[FAKE_KERNEL_MAX_PARAMS];
        void *args[FAKE_KERNEL_MAX_PARAMS];
        const struct fake_kernel *k = op->u.kernel.kernel;
        fake_kernel_layout(k, offsets);
        for (unsigned i = 0; i < k->nparams; i++)
            args[i] = op->u.kernel.params + offsets[i];
        r = k->run(&op->u.kernel.launch, args);
        fake_count_launch();
        break;
    }
    case FAKE_OP_MEMCPY:
        memmove(op->u.memcpy.dst, op->u.memcpy.src, op->u.memcpy.bytes);
        break;
    case FAKE_OP_MEMSET: {
        unsigned char *d = op->u.memset.dst;
        size_t n = op->u.memset.count;
        if (op->u.memset.element_size == 1) {
            memset(d, (int)(op->u.memset.value & 0xFF), n);
        } else if (op->u.memset.element_size == 2) {
            uint16_t v = (uint16_t)op->u.memset.value;
            for (size_t i = 0; i < n; i++)
                memcpy(d + 2 * i, &v, 2);
        } else {
            uint32_t v = op->u.memset.value;
            for (size_t i = 0; i < n; i++)
                memcpy(d + 4 * i, &v, 4);
        }
        break;
    }
    case FAKE_OP_HOST:
        op->u.host.fn(op->u.host.user_data);
        break;
    case FAKE_OP_EVENT_RECORD:
        fake_event_stamp(op->u.event.event);
        break;
    case FAKE_OP_EMPTY:
    case FAKE_OP_EVENT_WAIT: /* the fake's work is done when issued: nothing to wait for */
        break;
    case FAKE_OP_CHILD:
    case FAKE_OP_CONDITIONAL:
        r = fake_run_graph_op(op);
        break;
    case FAKE_OP_MEM_ALLOC:
    case FAKE_OP_MEM_FREE:
        r = fake_graph_mem_run(op);
        break;
    }
    return r;
}

static void node_destroy(struct fake_object *self)
{
    struct fake_graph_node *node = (struct fake_graph_node *)self;
    op_release(&node->op);
    free(node->deps);
}

/* Appends a node running op after the ndeps nodes deps (of g). Caller holds
 * the lock. Takes ownership of op's parameter buffer, also on failure. */
CUresult fake_graph_append(struct fake_graph *g, struct fake_op *op, struct fake_graph_node *const *deps,
                             size_t ndeps, struct fake_graph_node **out)
{
    struct fake_graph_node *node = NULL;
    if (g->count == g->capacity) {
        size_t capacity = g->capacity ? 2 * g->capacity : 8;
        struct fake_graph_node **nodes = realloc(g->nodes, capacity * sizeof *nodes);
        if (nodes == NULL)
            goto out_of_memory;
        g->nodes = nodes;
        g->capacity = capacity;
    }
    node = fake_object_new(FAKE_GRAPH_NODE, sizeof *node, NULL, 0);
    if (node == NULL)
        goto out_of_memory;
    node->deps = ndeps != 0 ? malloc(ndeps * sizeof *node->deps) : NULL;
    if (ndeps != 0 && node->deps == NULL)
        goto out_of_memory;
    if (ndeps != 0)
        memcpy(node->deps, deps, ndeps * sizeof *deps);
    node->ndeps = ndeps;
    node->obj.destroy = node_destroy;
    node->graph = g;
    node->index = g->count;
    node->op = *op;
    if (op->kind == FAKE_OP_KERNEL)
        op->u.kernel.params = NULL; /* now owned by the node */
    g->nodes[g->count++] = node;
    if (out != NULL)
        *out = node;
    return CUDA_SUCCESS;
out_of_memory:
    fake_object_delete(node);
    op_release(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fake_submit(struct fake_stream *s, struct fake_op *op)
{
    if (fake_stream_capturing(s)) {
        struct fake_graph *g = s->capture;
        CUresult r = fake_graph_append(g, op, g->count != 0 ? &g->nodes[g->count - 1] : NULL,
                                  g->count != 0, NULL);
        if (r != CUDA_SUCCESS)
            s->capture_invalidated = 1;
        return r;
    }
    CUresult r = fake_run_op(op);
    op_release(op);
    return r;
}

/* -------------------------------------------------------------- streams */

int fake_stream_capturing(const struct fake_stream *s)
{
    return s != NULL && s->capture != NULL;
}

CUresult fake_check_stream(CUstream s, struct fake_stream **out)
{
    *out = NULL;
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    if (!fake_object_valid(s, FAKE_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = (struct fake_stream *)s;
    return CUDA_SUCCESS;
}

static void stream_destroy(struct fake_object *self)
{
    struct fake_stream *s = (struct fake_stream *)self;
    if (s->capture != NULL)
        fake_object_delete(s->capture); /* an unfinished capture dies with its stream */
}

static CUresult stream_create(CUstream *phStream, unsigned flags, int priority)
{
    struct fake_context *ctx;
    if (phStream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        struct fake_stream *s = fake_object_new(FAKE_STREAM, sizeof *s, ctx, 1);
        if (s == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            s->obj.destroy = stream_destroy;
            s->flags = flags;
            /* Priorities outside [greatest, least] = [-5, 0] are clamped, as documented. */
            s->priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
            s->id = next_stream_id++;
            *phStream = (CUstream)s;
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

static CUresult fake_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return stream_create(phStream, flags, priority);
}

/* Common prologue: lock, require a context, resolve the stream. On failure the
 * lock is released and the error returned. */
static CUresult stream_enter(CUstream stream, struct fake_stream **s)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(stream, s);
    if (r != CUDA_SUCCESS)
        fake_unlock();
    return r;
}

static CUresult fake_cuStreamDestroy(CUstream hStream)
{
    struct fake_stream *s;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s == NULL)
        r = CUDA_ERROR_INVALID_HANDLE; /* the default streams cannot be destroyed */
    else
        fake_object_delete(s);
    fake_unlock();
    return r;
}

static CUresult stream_wait(CUstream hStream)
{
    struct fake_stream *s;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (fake_stream_capturing(s)) {
        /* Waiting on a capturing stream is not allowed and spoils the capture. */
        s->capture_invalidated = 1;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuStreamSynchronize(CUstream hStream)
{
    return stream_wait(hStream);
}

static CUresult fake_cuStreamQuery(CUstream hStream)
{
    return stream_wait(hStream);
}

static CUresult fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    struct fake_stream *s;
    if ((Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fake_object_valid(hEvent, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    fake_unlock();
    return r;
}

static CUresult fake_cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    struct fake_stream *s;
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    *flags = s != NULL ? s->flags : 0;
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamGetPriority(CUstream hStream, int *priority)
{
    struct fake_stream *s;
    if (priority == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    *priority = s != NULL ? s->priority : 0;
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    struct fake_stream *s;
    if (streamId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    *streamId = s != NULL ? s->id : 0;
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamGetCtx(CUstream hStream, CUcontext *pctx, CUgreenCtx *pGreenCtx)
{
    struct fake_stream *s;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    *pctx = (CUcontext)(s != NULL ? s->obj.owner : fake_current_context_raw());
    if (pGreenCtx != NULL)
        *pGreenCtx = NULL; /* the fake has no green contexts */
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamGetCtx_v1(CUstream hStream, CUcontext *pctx)
{
    return fake_cuStreamGetCtx(hStream, pctx, NULL);
}

static CUresult fake_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    struct fake_stream *s;
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct fake_op op = { .kind = FAKE_OP_HOST };
    op.u.host.fn = fn;
    op.u.host.user_data = userData;
    r = fake_submit(s, &op);
    fake_unlock();
    return r;
}

/* CUDA 13.1's form: how the driver waits for the function; everything here runs at once. */
static CUresult fake_cuLaunchHostFunc_v2(CUstream hStream, CUhostFn fn, void *userData,
                                         unsigned int syncMode)
{
    if (syncMode != CU_HOST_TASK_BLOCKING && syncMode != CU_HOST_TASK_SPINWAIT)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_cuLaunchHostFunc(hStream, fn, userData);
}

/* -------------------------------------------------------------- capture */

static void graph_destroy(struct fake_object *self)
{
    struct fake_graph *g = (struct fake_graph *)self;
    for (size_t i = 0; i < g->count; i++)
        fake_object_delete(g->nodes[i]);
    free(g->nodes);
}

struct fake_graph *fake_graph_new(int counted)
{
    struct fake_graph *g = fake_object_new(FAKE_GRAPH, sizeof *g, NULL, counted);
    if (g != NULL)
        g->obj.destroy = graph_destroy;
    return g;
}

static CUresult fake_cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    struct fake_stream *s;
    if ((int)mode < (int)CU_STREAM_CAPTURE_MODE_GLOBAL || (int)mode > (int)CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s == NULL) {
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the default streams cannot be captured */
    } else if (s->capture != NULL) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        s->capture = fake_graph_new(1);
        s->capture_invalidated = 0;
        s->capture_mode = mode;
        s->capture_thread = pthread_self();
        if (s->capture == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    struct fake_stream *s;
    if (phGraph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s == NULL || s->capture == NULL) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
               !pthread_equal(s->capture_thread, pthread_self())) {
        fake_unlock(); /* a global or thread-local capture ends in the thread that began it */
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else if (s->capture_invalidated) {
        fake_object_delete(s->capture);
        *phGraph = NULL;
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
        *phGraph = (CUgraph)s->capture;
    }
    if (s != NULL)
        s->capture = NULL;
    fake_unlock();
    return r;
}

struct unsafe_call_check {
    pthread_t self;
    int refused;
};

static void forbid_if_capturing(void *object, void *arg)
{
    struct fake_stream *s = object;
    struct unsafe_call_check *c = arg;
    if (s->capture == NULL)
        return;
    int own = pthread_equal(s->capture_thread, c->self);
    if ((own && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
        (!own && s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
         thread_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        s->capture_invalidated = 1;
        c->refused = 1;
    }
}

CUresult fake_capture_allows_unsafe_call(void)
{
    struct unsafe_call_check c = {pthread_self(), 0};
    fake_lock();
    fake_object_each(FAKE_STREAM, forbid_if_capturing, &c);
    fake_unlock();
    return c.refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult fake_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (mode == NULL || (int)*mode < (int)CU_STREAM_CAPTURE_MODE_GLOBAL ||
        (int)*mode > (int)CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    struct fake_stream *s;
    if (captureStatus == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fake_stream_capturing(s))
        *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    else if (s->capture_invalidated)
        *captureStatus = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    else
        *captureStatus = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    fake_unlock();
    return CUDA_SUCCESS;
}

/* --------------------------------------------------------------- events */

static CUresult fake_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    struct fake_context *ctx;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (phEvent == NULL || (Flags & ~known) != 0 ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        struct fake_event *e = fake_object_new(FAKE_EVENT, sizeof *e, ctx, 1);
        if (e == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            e->flags = Flags;
            *phEvent = (CUevent)e;
        }
    }
    fake_unlock();
    return r;
}

/* For ipc.c. Caller holds the lock. */
int fake_event_flags(CUevent event)
{
    return fake_object_valid(event, FAKE_EVENT) ? (int)((const struct fake_event *)event)->flags : -1;
}

CUresult fake_event_create(CUevent *out, unsigned flags)
{
    return fake_cuEventCreate(out, flags);
}

static CUresult fake_cuEventDestroy(CUevent hEvent)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!fake_object_valid(hEvent, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        fake_object_delete(hEvent);
    fake_unlock();
    return r;
}

static CUresult fake_cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    struct fake_stream *s;
    if ((flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fake_object_valid(hEvent, FAKE_EVENT)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (fake_stream_capturing(s) && !(flags & CU_EVENT_RECORD_EXTERNAL)) {
        /* Inside a capture a plain record only expresses ordering, which the
         * fake's in-order graphs keep anyway: no node. */
    } else {
        struct fake_op op = { .kind = FAKE_OP_EVENT_RECORD };
        op.u.event.event = hEvent;
        r = fake_submit(s, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return fake_cuEventRecordWithFlags(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

static CUresult event_check(CUevent hEvent)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!fake_object_valid(hEvent, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    fake_unlock();
    return r;
}

static CUresult fake_cuEventQuery(CUevent hEvent)
{
    return event_check(hEvent);
}

static CUresult fake_cuEventSynchronize(CUevent hEvent)
{
    return event_check(hEvent);
}

static CUresult fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (pMilliseconds == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_event *a = (const struct fake_event *)hStart;
    const struct fake_event *b = (const struct fake_event *)hEnd;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!fake_object_valid(a, FAKE_EVENT) || !fake_object_valid(b, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!a->recorded || !b->recorded)
        r = CUDA_ERROR_INVALID_HANDLE;
    else {
        double ms = (double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                    (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6;
        *pMilliseconds = (float)ms;
    }
    fake_unlock();
    return r;
}

/* --------------------------------------------------------------- graphs */

static CUresult fake_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    struct fake_context *ctx;
    if (phGraph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        struct fake_graph *g = fake_graph_new(1);
        if (g == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            *phGraph = (CUgraph)g;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphDestroy(CUgraph hGraph)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(hGraph, FAKE_GRAPH))
        r = CUDA_ERROR_INVALID_VALUE;
    else
        fake_object_delete(hGraph);
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    if (numNodes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_graph *g = (struct fake_graph *)hGraph;
    if (!fake_object_valid(g, FAKE_GRAPH)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (nodes != NULL)
            for (size_t i = 0; i < *numNodes; i++)
                nodes[i] = i < g->count ? (CUgraphNode)g->nodes[i] : NULL;
        *numNodes = g->count;
    }
    fake_unlock();
    return r;
}

/* Whether n is a live node of g. Caller holds the lock. */
static int node_of(const void *n, const struct fake_graph *g)
{
    return fake_object_valid(n, FAKE_GRAPH_NODE) && ((const struct fake_graph_node *)n)->graph == g;
}

CUresult fake_graph_check_dependencies(const struct fake_graph *g, const CUgraphNode *deps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!node_of(deps[i], g))
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies)
{
    if (phGraphNode == NULL || (numDependencies != 0 && dependencies == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_graph *g = (struct fake_graph *)hGraph;
    if (!fake_object_valid(g, FAKE_GRAPH))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = fake_graph_check_dependencies(g, dependencies, numDependencies);
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = FAKE_OP_EMPTY };
        struct fake_graph_node *node;
        r = fake_graph_append(g, &op, (struct fake_graph_node *const *)dependencies, numDependencies, &node);
        if (r == CUDA_SUCCESS)
            *phGraphNode = (CUgraphNode)node;
    }
    fake_unlock();
    return r;
}

/* Copies g's nodes into clone (empty), each remembering its original. */
static CUresult copy_nodes(struct fake_graph *clone, const struct fake_graph *g)
{
    CUresult r = CUDA_SUCCESS;
    struct fake_graph_node *deps[64], **many = NULL;
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->count; i++) {
        const struct fake_graph_node *n = g->nodes[i];
        struct fake_graph_node **d = deps;
        if (n->ndeps > sizeof deps / sizeof deps[0]) {
            free(many);
            d = many = malloc(n->ndeps * sizeof *many);
            if (many == NULL) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
        }
        for (size_t j = 0; j < n->ndeps; j++)
            d[j] = clone->nodes[n->deps[j]->index];
        struct fake_op op;
        struct fake_graph_node *copy;
        if (!op_copy(&op, &n->op))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((r = fake_graph_append(clone, &op, d, n->ndeps, &copy)) == CUDA_SUCCESS)
            copy->original = n;
    }
    free(many);
    return r;
}

struct fake_graph *fake_graph_copy(const struct fake_graph *g, int counted)
{
    struct fake_graph *clone = fake_graph_new(counted);
    if (clone != NULL && copy_nodes(clone, g) != CUDA_SUCCESS) {
        fake_object_delete(clone);
        clone = NULL;
    }
    return clone;
}

static CUresult fake_cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    if (phGraphClone == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_graph *g = (const struct fake_graph *)originalGraph;
    struct fake_graph *clone = NULL;
    if (!fake_object_valid(g, FAKE_GRAPH))
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((clone = fake_graph_copy(g, 1)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *phGraphClone = (CUgraph)clone;
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph)
{
    if (phNode == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    const struct fake_graph *clone = (const struct fake_graph *)hClonedGraph;
    if (fake_object_valid(hOriginalNode, FAKE_GRAPH_NODE) && fake_object_valid(clone, FAKE_GRAPH)) {
        for (size_t i = 0; i < clone->count; i++) {
            if (clone->nodes[i]->original == (const struct fake_graph_node *)hOriginalNode) {
                *phNode = (CUgraphNode)clone->nodes[i];
                r = CUDA_SUCCESS;
                break;
            }
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                                CUgraphEdgeData *edgeData, size_t *numDependencies)
{
    if (numDependencies == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_graph_node *n = (const struct fake_graph_node *)hNode;
    if (!fake_object_valid(n, FAKE_GRAPH_NODE)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (dependencies == NULL) {
        *numDependencies = n->ndeps;
    } else {
        /* Asked for more than there are: the rest is NULL and the count says how many. */
        for (size_t i = 0; i < *numDependencies; i++) {
            dependencies[i] = i < n->ndeps ? (CUgraphNode)n->deps[i] : NULL;
            if (edgeData != NULL)
                memset(&edgeData[i], 0, sizeof edgeData[i]); /* the fake's edges are all default */
        }
        if (*numDependencies > n->ndeps)
            *numDependencies = n->ndeps;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    if (type == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_graph_node *n = (const struct fake_graph_node *)hNode;
    if (!fake_object_valid(n, FAKE_GRAPH_NODE)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (n->op.kind) {
        case FAKE_OP_KERNEL: *type = CU_GRAPH_NODE_TYPE_KERNEL; break;
        case FAKE_OP_MEMCPY: *type = CU_GRAPH_NODE_TYPE_MEMCPY; break;
        case FAKE_OP_MEMSET: *type = CU_GRAPH_NODE_TYPE_MEMSET; break;
        case FAKE_OP_HOST: *type = CU_GRAPH_NODE_TYPE_HOST; break;
        case FAKE_OP_EVENT_RECORD: *type = CU_GRAPH_NODE_TYPE_EVENT_RECORD; break;
        case FAKE_OP_EMPTY: *type = CU_GRAPH_NODE_TYPE_EMPTY; break;
        case FAKE_OP_EVENT_WAIT: *type = CU_GRAPH_NODE_TYPE_WAIT_EVENT; break;
        case FAKE_OP_CHILD: *type = CU_GRAPH_NODE_TYPE_GRAPH; break;
        case FAKE_OP_CONDITIONAL: *type = CU_GRAPH_NODE_TYPE_CONDITIONAL; break;
        case FAKE_OP_MEM_ALLOC: *type = CU_GRAPH_NODE_TYPE_MEM_ALLOC; break;
        case FAKE_OP_MEM_FREE: *type = CU_GRAPH_NODE_TYPE_MEM_FREE; break;
        }
    }
    fake_unlock();
    return r;
}

static void exec_nodes_free(struct fake_exec_node *nodes, size_t count)
{
    for (size_t i = 0; nodes != NULL && i < count; i++) {
        op_release(&nodes[i].op);
        free(nodes[i].deps);
    }
    free(nodes);
}

static void exec_destroy(struct fake_object *self)
{
    struct fake_graph_exec *x = (struct fake_graph_exec *)self;
    exec_nodes_free(x->nodes, x->count);
}

/* A snapshot of g's nodes: operations and dependency indices. NULL when
 * memory runs out. Caller holds the lock. */
static struct fake_exec_node *exec_nodes_of(const struct fake_graph *g)
{
    struct fake_exec_node *nodes = calloc(g->count ? g->count : 1, sizeof *nodes);
    for (size_t i = 0; nodes != NULL && i < g->count; i++) {
        const struct fake_graph_node *n = g->nodes[i];
        nodes[i].deps = n->ndeps != 0 ? malloc(n->ndeps * sizeof *nodes[i].deps) : NULL;
        if ((n->ndeps != 0 && nodes[i].deps == NULL) || !op_copy(&nodes[i].op, &n->op)) {
            nodes[i].op.kind = FAKE_OP_EMPTY; /* nothing of this one to release */
            exec_nodes_free(nodes, i + 1);
            return NULL;
        }
        nodes[i].ndeps = n->ndeps;
        for (size_t j = 0; j < n->ndeps; j++)
            nodes[i].deps[j] = n->deps[j]->index;
    }
    return nodes;
}

static CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    struct fake_context *ctx;
    if (phGraphExec == NULL || (flags & ~0xFULL) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    const struct fake_graph *g = (const struct fake_graph *)hGraph;
    if (r == CUDA_SUCCESS && !fake_object_valid(g, FAKE_GRAPH))
        r = CUDA_ERROR_INVALID_VALUE;
    struct fake_graph_exec *x = NULL;
    if (r == CUDA_SUCCESS) {
        x = fake_object_new(FAKE_GRAPH_EXEC, sizeof *x, NULL, 1);
        if (x == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        /* An executable graph is a snapshot: later edits of the graph do not reach it. */
        x->obj.destroy = exec_destroy;
        x->origin = g;
        x->nodes = exec_nodes_of(g);
        x->count = x->nodes != NULL ? g->count : 0;
        if (x->nodes == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            fake_object_delete(x);
        } else {
            *phGraphExec = (CUgraphExec)x;
        }
    }
    fake_unlock();
    return r;
}

/* cuGraphExecUpdate's rules for one pair of nodes of the same type: what
 * may not change (cuda.h 13.0). CU_GRAPH_EXEC_UPDATE_SUCCESS if the update
 * may take new's parameters. */
static CUgraphExecUpdateResult update_verdict(const struct fake_op *old, const struct fake_op *new)
{
    switch (old->kind) {
    case FAKE_OP_KERNEL:
        /* The function's owning context may not change. */
        return old->where[0] == new->where[0] ? CU_GRAPH_EXEC_UPDATE_SUCCESS
                                              : CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
    case FAKE_OP_MEMCPY:
    case FAKE_OP_MEMSET:
        /* Operands stay in allocations of the same contexts (or in host memory);
         * a memset keeps its element size. */
        if (old->where[0] != new->where[0] || old->where[1] != new->where[1] ||
            (old->kind == FAKE_OP_MEMSET && old->u.memset.element_size != new->u.memset.element_size))
            return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        return CU_GRAPH_EXEC_UPDATE_SUCCESS;
    default:
        return CU_GRAPH_EXEC_UPDATE_SUCCESS; /* host functions, events, empty nodes */
    }
}

/* Whether g has x's topology; if not, fills info. Caller holds the lock. */
static int same_topology(const struct fake_graph_exec *x, const struct fake_graph *g,
                         CUgraphExecUpdateResultInfo *info)
{
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    if (x->count != g->count)
        return 0; /* errorNode stays NULL */
    /* Nodes pair up in creation order, dependencies in the order they were given. */
    for (size_t i = 0; i < g->count; i++) {
        const struct fake_graph_node *n = g->nodes[i];
        info->errorNode = (CUgraphNode)n;
        if (n->ndeps != x->nodes[i].ndeps)
            return 0;
        for (size_t j = 0; j < n->ndeps; j++) {
            if (n->deps[j]->index != x->nodes[i].deps[j]) {
                info->errorFromNode = (CUgraphNode)n->deps[j];
                return 0;
            }
        }
    }
    info->errorNode = NULL;
    info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return 1;
}

static CUresult fake_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                       CUgraphExecUpdateResultInfo *resultInfo)
{
    if (resultInfo == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    resultInfo->errorNode = NULL;
    resultInfo->errorFromNode = NULL;
    fake_lock();
    struct fake_graph_exec *x = (struct fake_graph_exec *)hGraphExec;
    const struct fake_graph *g = (const struct fake_graph *)hGraph;
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(x, FAKE_GRAPH_EXEC) || !fake_object_valid(g, FAKE_GRAPH)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!same_topology(x, g, resultInfo)) {
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    } else {
        for (size_t i = 0; i < g->count; i++) {
            const struct fake_op *old = &x->nodes[i].op, *new = &g->nodes[i]->op;
            CUgraphExecUpdateResult verdict = old->kind != new->kind ? CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
                                                                     : update_verdict(old, new);
            if (verdict != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
                resultInfo->result = verdict;
                resultInfo->errorNode = (CUgraphNode)g->nodes[i];
                r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
                break;
            }
        }
    }
    if (r == CUDA_SUCCESS) {
        /* All or nothing: the new parameters replace the old only when all are allowed. */
        struct fake_exec_node *nodes = exec_nodes_of(g);
        if (nodes == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR;
        } else {
            for (size_t i = 0; i < x->count; i++)
                nodes[i].disabled = x->nodes[i].disabled; /* an update keeps what was disabled */
            exec_nodes_free(x->nodes, x->count);
            x->nodes = nodes;
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    struct fake_stream *s;
    CUresult r = stream_enter(hStream, &s);
    if (r != CUDA_SUCCESS)
        return r;
    const struct fake_graph_exec *x = (const struct fake_graph_exec *)hGraphExec;
    if (!fake_object_valid(x, FAKE_GRAPH_EXEC))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (fake_stream_capturing(s))
        r = CUDA_ERROR_NOT_SUPPORTED; /* the fake does not capture a graph launch */
    else {
        for (size_t i = 0; i < x->count; i++) {
            const struct fake_op *op = &x->nodes[i].op;
            fake_conditional_defaults(&op, 1);
        }
        for (size_t i = 0; r == CUDA_SUCCESS && i < x->count; i++)
            if (!x->nodes[i].disabled)
                r = fake_run_op(&x->nodes[i].op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(hGraphExec, FAKE_GRAPH_EXEC))
        r = CUDA_ERROR_INVALID_VALUE;
    else
        fake_object_delete(hGraphExec);
    fake_unlock();
    return r;
}

FAKE_EXPORT uint64_t fakecuda_live_objects(const char *kind)
{
    static const struct { const char *name; enum fake_kind kind; } kinds[] = {
        { "contexts", FAKE_CONTEXT }, { "streams", FAKE_STREAM }, { "events", FAKE_EVENT },
        { "modules", FAKE_MODULE }, { "graphs", FAKE_GRAPH }, { "graph_execs", FAKE_GRAPH_EXEC },
        { "pools", FAKE_POOL },
    };
    for (size_t i = 0; kind != NULL && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind, kinds[i].name) == 0)
            return fake_object_count(kinds[i].kind);
    return (uint64_t)-1;
}

const struct fake_impl fake_impls_stream[] = {
    FAKE_IMPL("cuStreamCreate", 2000, fake_cuStreamCreate),
    FAKE_IMPL("cuStreamCreateWithPriority", 5050, fake_cuStreamCreateWithPriority),
    FAKE_IMPL("cuStreamDestroy", 4000, fake_cuStreamDestroy),
    FAKE_IMPL("cuStreamSynchronize", 2000, fake_cuStreamSynchronize),
    FAKE_IMPL_PT("cuStreamSynchronize", 7000, fake_cuStreamSynchronize),
    FAKE_IMPL("cuStreamQuery", 2000, fake_cuStreamQuery),
    FAKE_IMPL_PT("cuStreamQuery", 7000, fake_cuStreamQuery),
    FAKE_IMPL("cuStreamWaitEvent", 3020, fake_cuStreamWaitEvent),
    FAKE_IMPL_PT("cuStreamWaitEvent", 7000, fake_cuStreamWaitEvent),
    FAKE_IMPL("cuStreamGetFlags", 5050, fake_cuStreamGetFlags),
    FAKE_IMPL_PT("cuStreamGetFlags", 7000, fake_cuStreamGetFlags),
    FAKE_IMPL("cuStreamGetPriority", 5050, fake_cuStreamGetPriority),
    FAKE_IMPL_PT("cuStreamGetPriority", 7000, fake_cuStreamGetPriority),
    FAKE_IMPL("cuStreamGetId", 12000, fake_cuStreamGetId),
    FAKE_IMPL_PT("cuStreamGetId", 12000, fake_cuStreamGetId),
    FAKE_IMPL("cuStreamGetCtx", 9020, fake_cuStreamGetCtx_v1),
    FAKE_IMPL_PT("cuStreamGetCtx", 9020, fake_cuStreamGetCtx_v1),
    FAKE_IMPL("cuStreamGetCtx", 12050, fake_cuStreamGetCtx),
    FAKE_IMPL_PT("cuStreamGetCtx", 12050, fake_cuStreamGetCtx),
    FAKE_IMPL("cuLaunchHostFunc", 10000, fake_cuLaunchHostFunc),
    FAKE_IMPL_PT("cuLaunchHostFunc", 10000, fake_cuLaunchHostFunc),
    FAKE_IMPL("cuLaunchHostFunc", 13010, fake_cuLaunchHostFunc_v2),
    FAKE_IMPL_PT("cuLaunchHostFunc", 13010, fake_cuLaunchHostFunc_v2),
    FAKE_IMPL("cuStreamBeginCapture", 10010, fake_cuStreamBeginCapture),
    FAKE_IMPL("cuThreadExchangeStreamCaptureMode", 10010, fake_cuThreadExchangeStreamCaptureMode),
    FAKE_IMPL_PT("cuStreamBeginCapture", 10010, fake_cuStreamBeginCapture),
    FAKE_IMPL("cuStreamEndCapture", 10000, fake_cuStreamEndCapture),
    FAKE_IMPL_PT("cuStreamEndCapture", 10000, fake_cuStreamEndCapture),
    FAKE_IMPL("cuStreamIsCapturing", 10000, fake_cuStreamIsCapturing),
    FAKE_IMPL_PT("cuStreamIsCapturing", 10000, fake_cuStreamIsCapturing),
    FAKE_IMPL("cuEventCreate", 2000, fake_cuEventCreate),
    FAKE_IMPL("cuEventDestroy", 4000, fake_cuEventDestroy),
    FAKE_IMPL("cuEventRecord", 2000, fake_cuEventRecord),
    FAKE_IMPL_PT("cuEventRecord", 7000, fake_cuEventRecord),
    FAKE_IMPL("cuEventRecordWithFlags", 11010, fake_cuEventRecordWithFlags),
    FAKE_IMPL_PT("cuEventRecordWithFlags", 11010, fake_cuEventRecordWithFlags),
    FAKE_IMPL("cuEventQuery", 2000, fake_cuEventQuery),
    FAKE_IMPL("cuEventSynchronize", 2000, fake_cuEventSynchronize),
    FAKE_IMPL("cuEventElapsedTime", 2000, fake_cuEventElapsedTime),
    FAKE_IMPL("cuEventElapsedTime", 12080, fake_cuEventElapsedTime),
    FAKE_IMPL("cuGraphCreate", 10000, fake_cuGraphCreate),
    FAKE_IMPL("cuGraphDestroy", 10000, fake_cuGraphDestroy),
    FAKE_IMPL("cuGraphGetNodes", 10000, fake_cuGraphGetNodes),
    FAKE_IMPL("cuGraphNodeGetType", 10000, fake_cuGraphNodeGetType),
    FAKE_IMPL("cuGraphInstantiateWithFlags", 11040, fake_cuGraphInstantiateWithFlags),
    FAKE_IMPL("cuGraphLaunch", 10000, fake_cuGraphLaunch),
    FAKE_IMPL_PT("cuGraphLaunch", 10000, fake_cuGraphLaunch),
    FAKE_IMPL("cuGraphExecDestroy", 10000, fake_cuGraphExecDestroy),
    FAKE_IMPL("cuGraphAddEmptyNode", 10000, fake_cuGraphAddEmptyNode),
    FAKE_IMPL("cuGraphClone", 10000, fake_cuGraphClone),
    FAKE_IMPL("cuGraphNodeFindInClone", 10000, fake_cuGraphNodeFindInClone),
    FAKE_IMPL("cuGraphNodeGetDependencies", 12030, fake_cuGraphNodeGetDependencies),
    FAKE_IMPL("cuGraphExecUpdate", 12000, fake_cuGraphExecUpdate),
    FAKE_IMPL_END,
};

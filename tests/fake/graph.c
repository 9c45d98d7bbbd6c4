/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Explicit graph construction: kernel, memset, memcpy, host, child-graph,
 * event and conditional nodes, the debug dot print, and per-node changes of
 * an executable graph (kernel parameters, enabling and disabling).
 *
 * A launch runs a graph's nodes in creation order (stream.c). A child-graph
 * node holds a copy of its graph taken when it was added, as the driver's
 * does. A conditional node owns its body graphs, which the caller fills
 * through the handles cuGraphAddNode returns; launching it runs
 *   if:     body 0 when the condition is non-zero, else body 1 when there is one;
 *   while:  body 0 for as long as the condition is non-zero (tested first);
 *   switch: body n when the condition is n < size, else nothing.
 * The condition is set from "device code" by the fake kernels set_condition
 * and count_to (kernels.c), through fake_set_conditional, and reset to its
 * default at each launch of a graph using it when created with
 * CU_GRAPH_COND_ASSIGN_DEFAULT. A body takes no host or event nodes
 * (CUDA_ERROR_NOT_SUPPORTED when one is added), also inside child graphs.
 *
 * What the fake leaves out, answered CUDA_ERROR_NOT_SUPPORTED: 2D/3D memsets
 * and copies, kernel nodes given a CUkernel instead of a CUfunction, and
 * cuGraphAddNode for node types other than conditional.
 */
#include "fake_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------- conditional handles */

struct fake_conditional {
    unsigned value, default_value, flags;
    const struct fake_graph *graph; /* the graph it was created for */
};

#define MAX_CONDITIONALS 4096
#define MAX_WHILE_ROUNDS 1000000 /* a loop this long in the fake is a test's bug */
static struct fake_conditional conditionals[MAX_CONDITIONALS];
static size_t conditional_count;

/* Handles are 1-based indices, so that 0 is never one. */
static struct fake_conditional *conditional_of(unsigned long long handle)
{
    return handle != 0 && handle <= conditional_count ? &conditionals[handle - 1] : NULL;
}

CUresult fake_set_conditional(unsigned long long handle, unsigned value)
{
    struct fake_conditional *c = conditional_of(handle);
    if (c == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    c->value = value;
    return CUDA_SUCCESS;
}

static void defaults_of_graph(const struct fake_graph *g)
{
    for (size_t i = 0; g != NULL && i < g->count; i++) {
        const struct fake_op *op = &g->nodes[i]->op;
        fake_conditional_defaults(&op, 1);
    }
}

void fake_conditional_defaults(const struct fake_op *const *ops, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const struct fake_op *op = ops[i];
        if (op->kind == FAKE_OP_CHILD) {
            defaults_of_graph(op->u.child.graph);
        } else if (op->kind == FAKE_OP_CONDITIONAL) {
            struct fake_conditional *c = op->u.conditional.handle;
            if (c->flags & CU_GRAPH_COND_ASSIGN_DEFAULT)
                c->value = c->default_value;
            for (unsigned b = 0; b < op->u.conditional.size; b++)
                defaults_of_graph(op->u.conditional.bodies[b]);
        }
    }
}

static CUresult fake_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph,
                                                    CUcontext ctx, unsigned int defaultLaunchValue,
                                                    unsigned int flags)
{
    if (pHandle_out == NULL || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(hGraph, FAKE_GRAPH) || !fake_object_valid(ctx, FAKE_CONTEXT))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (conditional_count == MAX_CONDITIONALS)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        struct fake_conditional *c = &conditionals[conditional_count++];
        c->value = c->default_value = defaultLaunchValue;
        c->flags = flags;
        c->graph = (const struct fake_graph *)hGraph;
        *pHandle_out = conditional_count;
    }
    fake_unlock();
    return r;
}

/* ------------------------------------------ what the new node kinds own */

int fake_graph_op_copy(struct fake_op *dst, const struct fake_op *src)
{
    *dst = *src;
    if (src->kind == FAKE_OP_CHILD) {
        dst->u.child.graph = fake_graph_copy(src->u.child.graph, 0);
        return dst->u.child.graph != NULL;
    }
    if (src->kind == FAKE_OP_CONDITIONAL) {
        for (unsigned b = 0; b < src->u.conditional.size; b++) {
            dst->u.conditional.bodies[b] = fake_graph_copy(src->u.conditional.bodies[b], 0);
            if (dst->u.conditional.bodies[b] == NULL) {
                dst->u.conditional.size = b;
                fake_graph_op_release(dst);
                return 0;
            }
        }
    }
    return 1;
}

void fake_graph_op_release(struct fake_op *op)
{
    if (op->kind == FAKE_OP_CHILD && op->u.child.graph != NULL) {
        fake_object_delete(op->u.child.graph);
        op->u.child.graph = NULL;
    } else if (op->kind == FAKE_OP_CONDITIONAL) {
        for (unsigned b = 0; b < op->u.conditional.size; b++) {
            if (op->u.conditional.bodies[b] != NULL)
                fake_object_delete(op->u.conditional.bodies[b]);
            op->u.conditional.bodies[b] = NULL;
        }
    }
}

static CUresult run_graph(const struct fake_graph *g)
{
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->count; i++)
        r = fake_run_op(&g->nodes[i]->op);
    return r;
}

CUresult fake_run_graph_op(const struct fake_op *op)
{
    if (op->kind == FAKE_OP_CHILD)
        return run_graph(op->u.child.graph);
    const struct fake_conditional *c = op->u.conditional.handle;
    struct fake_graph *const *bodies = op->u.conditional.bodies;
    switch (op->u.conditional.type) {
    case CU_GRAPH_COND_TYPE_IF:
        if (c->value != 0)
            return run_graph(bodies[0]);
        return op->u.conditional.size == 2 ? run_graph(bodies[1]) : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_WHILE:
        for (unsigned round = 0; c->value != 0; round++) {
            if (round == MAX_WHILE_ROUNDS)
                return CUDA_ERROR_LAUNCH_TIMEOUT;
            CUresult r = run_graph(bodies[0]);
            if (r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_SWITCH:
        return c->value < op->u.conditional.size ? run_graph(bodies[c->value]) : CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------- adding nodes */

/* Whether op may go into a conditional node's body: kernel, empty, child
 * graph, memset, memcpy and conditional nodes, recursively (cuda.h 13.0,
 * CUDA_CONDITIONAL_NODE_PARAMS). */
static int allowed_in_body(const struct fake_op *op)
{
    if (op->kind == FAKE_OP_HOST || op->kind == FAKE_OP_EVENT_RECORD || op->kind == FAKE_OP_EVENT_WAIT)
        return 0;
    if (op->kind == FAKE_OP_CHILD)
        for (size_t i = 0; i < op->u.child.graph->count; i++)
            if (!allowed_in_body(&op->u.child.graph->nodes[i]->op))
                return 0;
    return 1; /* a conditional's own bodies were checked as they were filled */
}

/* Checks the graph and its dependencies (nodes of it, none twice), then
 * appends op. Takes ownership of what op owns. Caller holds the lock. */
static CUresult add_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         size_t numDependencies, struct fake_op *op)
{
    struct fake_graph *g = (struct fake_graph *)hGraph;
    CUresult r = fake_graph_check_dependencies(g, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && g->body && !allowed_in_body(op))
        r = CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) {
        fake_graph_op_release(op);
        if (op->kind == FAKE_OP_KERNEL)
            free(op->u.kernel.params);
        return r;
    }
    struct fake_graph_node *node;
    r = fake_graph_append(g, op, (struct fake_graph_node *const *)dependencies, numDependencies, &node);
    if (r == CUDA_SUCCESS)
        *phGraphNode = (CUgraphNode)node;
    return r;
}

/* The checks every cuGraphAdd*Node makes first: output, dependency array,
 * a live graph. Caller holds the lock. */
static CUresult node_args(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                          size_t numDependencies)
{
    if (phGraphNode == NULL || (numDependencies != 0 && dependencies == NULL) ||
        !fake_object_valid(hGraph, FAKE_GRAPH))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult kernel_op_of(const CUDA_KERNEL_NODE_PARAMS *p, struct fake_op *op)
{
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->func == NULL)
        return p->kern != NULL ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = { p->gridDimX, p->gridDimY, p->gridDimZ };
    const unsigned block[3] = { p->blockDimX, p->blockDimY, p->blockDimZ };
    return fake_kernel_op(p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra, NULL, NULL, op);
}

static CUresult fake_cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    struct fake_op op;
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS)
        r = kernel_op_of(nodeParams, &op);
    if (r == CUDA_SUCCESS)
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && (p == NULL || !fake_object_valid(ctx, FAKE_CONTEXT) ||
                              (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
                              p->width == 0 || p->height == 0))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (r == CUDA_SUCCESS && p->height != 1)
        r = CUDA_ERROR_NOT_SUPPORTED;
    const struct fake_allocation *a = NULL;
    if (r == CUDA_SUCCESS) {
        size_t bytes = p->width * p->elementSize;
        a = fake_find_allocation((uintptr_t)p->dst, bytes);
        if (a == NULL || bytes / p->elementSize != p->width)
            r = CUDA_ERROR_INVALID_VALUE; /* memory the driver allocated, as cuMemsetD*Async */
    }
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = FAKE_OP_MEMSET };
        op.where[0] = a->kind == FAKE_MEM_HOST ? NULL : a->ctx;
        op.u.memset.dst = (void *)(uintptr_t)p->dst;
        op.u.memset.value = p->value;
        op.u.memset.element_size = p->elementSize;
        op.u.memset.count = p->width;
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    }
    fake_unlock();
    return r;
}

/* One side of a 1D copy: its address, and the context of the allocation
 * holding it (NULL for host memory). */
static CUresult copy_side(CUmemorytype type, const void *host, CUdeviceptr device, size_t bytes,
                          uintptr_t *address, struct fake_context **where)
{
    uintptr_t p = type == CU_MEMORYTYPE_HOST ? (uintptr_t)host : (uintptr_t)device;
    if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return type == CU_MEMORYTYPE_ARRAY ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    const struct fake_allocation *a = fake_find_allocation(p, bytes);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE; /* graphs copy memory the driver knows */
    if (type == CU_MEMORYTYPE_DEVICE && a->kind == FAKE_MEM_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    *address = p;
    *where = a->kind == FAKE_MEM_HOST ? NULL : a->ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && (p == NULL || !fake_object_valid(ctx, FAKE_CONTEXT) || p->WidthInBytes == 0))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (r == CUDA_SUCCESS && (p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY || p->dstZ ||
                                   p->srcXInBytes || p->dstXInBytes))
        r = CUDA_ERROR_NOT_SUPPORTED; /* the fake copies one row */
    struct fake_op op = { .kind = FAKE_OP_MEMCPY };
    uintptr_t dst = 0, src = 0;
    if (r == CUDA_SUCCESS)
        r = copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->WidthInBytes, &dst, &op.where[0]);
    if (r == CUDA_SUCCESS)
        r = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->WidthInBytes, &src, &op.where[1]);
    if (r == CUDA_SUCCESS) {
        op.u.memcpy.dst = (void *)dst;
        op.u.memcpy.src = (const void *)src;
        op.u.memcpy.bytes = p->WidthInBytes;
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                        size_t numDependencies, const CUDA_HOST_NODE_PARAMS *p)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && (p == NULL || p->fn == NULL))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = FAKE_OP_HOST };
        op.u.host.fn = p->fn;
        op.u.host.user_data = p->userData;
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies, size_t numDependencies,
                                              CUgraph childGraph)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && (!fake_object_valid(childGraph, FAKE_GRAPH) || childGraph == hGraph))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = FAKE_OP_CHILD };
        op.u.child.graph = fake_graph_copy((const struct fake_graph *)childGraph, 0);
        r = op.u.child.graph == NULL ? CUDA_ERROR_OUT_OF_MEMORY
                                     : add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    }
    fake_unlock();
    return r;
}

static CUresult add_event_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUevent event, enum fake_op_kind kind)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && !fake_object_valid(event, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = kind };
        op.u.event.event = event;
        r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                               const CUgraphNode *dependencies, size_t numDependencies,
                                               CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, FAKE_OP_EVENT_RECORD);
}

static CUresult fake_cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, FAKE_OP_EVENT_WAIT);
}

/* cuGraphAddNode: only conditional nodes in the fake. */
static CUresult fake_cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                    const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                    CUgraphNodeParams *nodeParams)
{
    fake_lock();
    CUresult r = node_args(phGraphNode, hGraph, dependencies, numDependencies);
    if (r == CUDA_SUCCESS && nodeParams == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (r == CUDA_SUCCESS && (nodeParams->type != CU_GRAPH_NODE_TYPE_CONDITIONAL || dependencyData != NULL))
        r = CUDA_ERROR_NOT_SUPPORTED;
    CUDA_CONDITIONAL_NODE_PARAMS *p = r == CUDA_SUCCESS ? &nodeParams->conditional : NULL;
    struct fake_conditional *c = p != NULL ? conditional_of(p->handle) : NULL;
    if (r == CUDA_SUCCESS) {
        unsigned n = p->size;
        int size_ok = p->type == CU_GRAPH_COND_TYPE_WHILE ? n == 1
                    : p->type == CU_GRAPH_COND_TYPE_IF     ? n == 1 || n == 2
                    : p->type == CU_GRAPH_COND_TYPE_SWITCH ? n >= 1
                                                           : 0;
        if (c == NULL || c->graph != (const struct fake_graph *)hGraph || !size_ok ||
            !fake_object_valid(p->ctx, FAKE_CONTEXT))
            r = CUDA_ERROR_INVALID_VALUE;
        else if (n > FAKE_CONDITIONAL_MAX_BODIES)
            r = CUDA_ERROR_NOT_SUPPORTED;
    }
    if (r == CUDA_SUCCESS) {
        struct fake_op op = { .kind = FAKE_OP_CONDITIONAL };
        op.u.conditional.handle = c;
        op.u.conditional.type = p->type;
        for (unsigned b = 0; b < p->size && r == CUDA_SUCCESS; b++) {
            op.u.conditional.bodies[b] = fake_graph_new(0);
            op.u.conditional.size = b + 1;
            if (op.u.conditional.bodies[b] == NULL)
                r = CUDA_ERROR_OUT_OF_MEMORY;
            else
                op.u.conditional.bodies[b]->body = 1;
        }
        if (r != CUDA_SUCCESS)
            fake_graph_op_release(&op);
        else
            r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
        if (r == CUDA_SUCCESS) {
            /* phGraph_out is an output: the driver's own array of the bodies, valid while
             * the node lives (the caller's value is not read) */
            struct fake_graph_node *node = (struct fake_graph_node *)*phGraphNode;
            p->phGraph_out = (CUgraph *)(void *)node->op.u.conditional.bodies;
        }
    }
    fake_unlock();
    return r;
}

/* ------------------------------------------------------ the dot print */

static const char *op_name(enum fake_op_kind kind)
{
    switch (kind) {
    case FAKE_OP_KERNEL: return "kernel";
    case FAKE_OP_MEMCPY: return "memcpy";
    case FAKE_OP_MEMSET: return "memset";
    case FAKE_OP_HOST: return "host";
    case FAKE_OP_EVENT_RECORD: return "event_record";
    case FAKE_OP_EMPTY: return "empty";
    case FAKE_OP_EVENT_WAIT: return "event_wait";
    case FAKE_OP_CHILD: return "graph";
    case FAKE_OP_CONDITIONAL: return "conditional";
    case FAKE_OP_MEM_ALLOC: return "mem_alloc";
    case FAKE_OP_MEM_FREE: return "mem_free";
    }
    return "?";
}

static void dot_graph(FILE *f, const struct fake_graph *g, const char *prefix)
{
    for (size_t i = 0; i < g->count; i++) {
        const struct fake_graph_node *n = g->nodes[i];
        const char *label = n->op.kind == FAKE_OP_KERNEL ? n->op.u.kernel.kernel->name : op_name(n->op.kind);
        fprintf(f, "  \"%sn%zu\" [label=\"%s\\n%s\"];\n", prefix, i, op_name(n->op.kind), label);
        for (size_t j = 0; j < n->ndeps; j++)
            fprintf(f, "  \"%sn%zu\" -> \"%sn%zu\";\n", prefix, n->deps[j]->index, prefix, i);
        const struct fake_graph *inner[FAKE_CONDITIONAL_MAX_BODIES];
        unsigned count = 0;
        if (n->op.kind == FAKE_OP_CHILD)
            inner[count++] = n->op.u.child.graph;
        for (unsigned b = 0; n->op.kind == FAKE_OP_CONDITIONAL && b < n->op.u.conditional.size; b++)
            inner[count++] = n->op.u.conditional.bodies[b];
        for (unsigned b = 0; b < count; b++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%sn%zu_%u_", prefix, i, b);
            fprintf(f, "  subgraph \"cluster_%s\" {\n", sub);
            dot_graph(f, inner[b], sub);
            fprintf(f, "  }\n");
        }
    }
}

static CUresult fake_cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    (void)flags; /* the fake writes one level of detail */
    if (path == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    FILE *f = NULL;
    if (!fake_object_valid(hGraph, FAKE_GRAPH))
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((f = fopen(path, "w")) == NULL)
        r = CUDA_ERROR_OPERATING_SYSTEM;
    else {
        fprintf(f, "digraph fakecuda {\n");
        dot_graph(f, (const struct fake_graph *)hGraph, "");
        fprintf(f, "}\n");
        if (fclose(f) != 0)
            r = CUDA_ERROR_OPERATING_SYSTEM;
    }
    fake_unlock();
    return r;
}

/* ------------------------------------------- per-node executable changes */

/* The executable graph's node for hNode (a node of the graph it was
 * instantiated from), or NULL. Caller holds the lock. */
static struct fake_exec_node *exec_node(CUgraphExec hGraphExec, CUgraphNode hNode)
{
    struct fake_graph_exec *x = (struct fake_graph_exec *)hGraphExec;
    if (!fake_object_valid(x, FAKE_GRAPH_EXEC) || !fake_object_valid(hNode, FAKE_GRAPH_NODE))
        return NULL;
    const struct fake_graph_node *n = (const struct fake_graph_node *)hNode;
    if (n->graph != x->origin || n->index >= x->count)
        return NULL;
    return &x->nodes[n->index];
}

static CUresult fake_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                    const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    struct fake_op op;
    fake_lock();
    struct fake_exec_node *e = exec_node(hGraphExec, hNode);
    CUresult r = e == NULL || e->op.kind != FAKE_OP_KERNEL ? CUDA_ERROR_INVALID_VALUE : kernel_op_of(nodeParams, &op);
    if (r == CUDA_SUCCESS && op.where[0] != e->op.where[0]) {
        free(op.u.kernel.params); /* the function's context may not change */
        r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r == CUDA_SUCCESS) {
        free(e->op.u.kernel.params);
        e->op = op;
    }
    fake_unlock();
    return r;
}

static int can_disable(enum fake_op_kind kind)
{
    return kind == FAKE_OP_KERNEL || kind == FAKE_OP_MEMSET || kind == FAKE_OP_MEMCPY;
}

static CUresult fake_cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
{
    fake_lock();
    struct fake_exec_node *e = exec_node(hGraphExec, hNode);
    CUresult r = e == NULL || !can_disable(e->op.kind) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        e->disabled = isEnabled == 0;
    fake_unlock();
    return r;
}

static CUresult fake_cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled)
{
    if (isEnabled == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    const struct fake_exec_node *e = exec_node(hGraphExec, hNode);
    CUresult r = e == NULL || !can_disable(e->op.kind) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        *isEnabled = !e->disabled;
    fake_unlock();
    return r;
}

const struct fake_impl fake_impls_graph[] = {
    FAKE_IMPL("cuGraphAddKernelNode", 12000, fake_cuGraphAddKernelNode),
    FAKE_IMPL("cuGraphAddMemsetNode", 10000, fake_cuGraphAddMemsetNode),
    FAKE_IMPL("cuGraphAddMemcpyNode", 10000, fake_cuGraphAddMemcpyNode),
    FAKE_IMPL("cuGraphAddHostNode", 10000, fake_cuGraphAddHostNode),
    FAKE_IMPL("cuGraphAddChildGraphNode", 10000, fake_cuGraphAddChildGraphNode),
    FAKE_IMPL("cuGraphAddEventRecordNode", 11010, fake_cuGraphAddEventRecordNode),
    FAKE_IMPL("cuGraphAddEventWaitNode", 11010, fake_cuGraphAddEventWaitNode),
    FAKE_IMPL("cuGraphConditionalHandleCreate", 12030, fake_cuGraphConditionalHandleCreate),
    FAKE_IMPL("cuGraphAddNode", 12030, fake_cuGraphAddNode),
    FAKE_IMPL("cuGraphAddNode", 13040, fake_cuGraphAddNode), /* _v3: the same parameters */
    FAKE_IMPL("cuGraphDebugDotPrint", 11030, fake_cuGraphDebugDotPrint),
    FAKE_IMPL("cuGraphExecKernelNodeSetParams", 12000, fake_cuGraphExecKernelNodeSetParams),
    FAKE_IMPL("cuGraphNodeSetEnabled", 11060, fake_cuGraphNodeSetEnabled),
    FAKE_IMPL("cuGraphNodeGetEnabled", 11060, fake_cuGraphNodeGetEnabled),
    FAKE_IMPL_END,
};

/* SPDX-License-Identifier: Apache-2.0 */
/* The fake's graphs, shared by stream.c (capture, instantiate, update,
 * launch) and graph.c (explicit nodes, conditionals, per-node update). */
#ifndef FAKE_GRAPH_H
#define FAKE_GRAPH_H

#include "fake_internal.h"

struct fake_graph_node {
    struct fake_object obj;
    struct fake_graph *graph;
    size_t index;                      /* in graph->nodes: creation order */
    struct fake_op op;
    struct fake_graph_node **deps;     /* the nodes this one depends on */
    size_t ndeps;
    const struct fake_graph_node *original; /* the node it was cloned from */
};

struct fake_graph {
    struct fake_object obj;
    struct fake_graph_node **nodes;
    size_t count, capacity;
    int body; /* a conditional node's body: no host or event nodes, at any depth */
};

/* One node of an executable graph: its operation, whether it runs
 * (cuGraphNodeSetEnabled) and, for cuGraphExecUpdate, its dependencies as
 * indices into the graph it came from. */
struct fake_exec_node {
    struct fake_op op;
    size_t *deps;
    size_t ndeps;
    int disabled;
};

struct fake_graph_exec {
    struct fake_object obj;
    struct fake_exec_node *nodes;
    size_t count;
    const struct fake_graph *origin; /* the graph instantiated: its nodes name ours by index */
};

/* All of these: the caller holds the lock. */
/* counted: whether it counts in fakecuda_live_objects (not the graphs nodes own). */
struct fake_graph *fake_graph_new(int counted);
/* Appends a node running op after the ndeps nodes deps (of g). Takes
 * ownership of what op owns, also on failure. */
CUresult fake_graph_append(struct fake_graph *g, struct fake_op *op, struct fake_graph_node *const *deps,
                           size_t ndeps, struct fake_graph_node **out);
/* Every one of the n nodes deps a node of g, none named twice: else
 * CUDA_ERROR_INVALID_VALUE. */
CUresult fake_graph_check_dependencies(const struct fake_graph *g, const CUgraphNode *deps, size_t n);
/* A deep copy of g (cuGraphClone's), NULL when memory runs out. */
struct fake_graph *fake_graph_copy(const struct fake_graph *g, int counted);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Graphs built and edited through cuabi on the functional fake: empty nodes
 * and their dependencies, clones, and whole-graph update of an executable
 * graph with the result info cuda.h 13.0 documents (which node, which edge,
 * what changed). Capture and replay are in test_functional.c.
 */
#define _GNU_SOURCE
#include "support.h"

#include <string.h>

static CUmodule mod;
static CUfunction add_u32;
static CUstream stream;

static int setup(void **state)
{
    (void)state;
    setup_primary_context();
    if (cuabi_cuModuleLoadData(&mod, fake_module_image) != CUDA_SUCCESS ||
        cuabi_cuModuleGetFunction(&add_u32, mod, "add_u32") != CUDA_SUCCESS ||
        cuabi_cuStreamCreate(&stream, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cuabi_cuStreamDestroy(stream);
    cuabi_cuModuleUnload(mod);
    release_primary_context();
    return 0;
}

/* A graph captured from stream: add_u32(d, v, 32), then, with memset_width
 * 1, 2 or 4, a memset of the first element to 9 (0: no memset). */
static CUgraph capture(CUdeviceptr d, unsigned v, unsigned memset_width)
{
    CUgraph g = NULL;
    size_t n = 32;
    void *params[] = { &d, &v, &n };
    check_cu(cuabi_cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    check_cu(cuabi_cuLaunchKernel(add_u32, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL));
    if (memset_width == 1)
        check_cu(cuabi_cuMemsetD8Async(d, 9, 1, stream));
    else if (memset_width == 2)
        check_cu(cuabi_cuMemsetD16Async(d, 9, 1, stream));
    else if (memset_width == 4)
        check_cu(cuabi_cuMemsetD32Async(d, 9, 1, stream));
    check_cu(cuabi_cuStreamEndCapture(stream, &g));
    return g;
}

static size_t dependencies_of(CUgraphNode node, CUgraphNode *deps, size_t cap)
{
    size_t n = cap;
    check_cu(cuabi_cuGraphNodeGetDependencies(node, deps, NULL, &n));
    return n;
}

/* Empty nodes join a graph with the dependencies they are given, in order. */
static void test_empty_nodes_and_dependencies(void **state)
{
    (void)state;
    CUgraph g, other;
    CUgraphNode a, b, c, foreign, deps[4];
    CUgraphNodeType type;
    check_cu(cuabi_cuGraphCreate(&g, 0));
    check_cu(cuabi_cuGraphCreate(&other, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&a, g, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&b, g, &a, 1));
    CUgraphNode ab[] = { b, a };
    check_cu(cuabi_cuGraphAddEmptyNode(&c, g, ab, 2));
    check_cu(cuabi_cuGraphAddEmptyNode(&foreign, other, NULL, 0));
    check_cu(cuabi_cuGraphNodeGetType(c, &type));
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_EMPTY);

    size_t count = 0;
    check_cu(cuabi_cuGraphGetNodes(g, NULL, &count));
    assert_int_equal(count, 3);
    assert_int_equal(dependencies_of(a, deps, 4), 0);
    assert_int_equal(dependencies_of(c, deps, 4), 2);
    assert_ptr_equal(deps[0], b);
    assert_ptr_equal(deps[1], a);
    assert_null(deps[2]); /* asked for more than there are */
    size_t n = 0;
    check_cu(cuabi_cuGraphNodeGetDependencies(c, NULL, NULL, &n));
    assert_int_equal(n, 2);

    /* A dependency must be a node of the same graph, named once. */
    CUgraphNode x;
    CUgraphNode twice[] = { a, a };
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphAddEmptyNode(&x, g, &foreign, 1));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphAddEmptyNode(&x, g, twice, 2));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphAddEmptyNode(&x, g, NULL, 1));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphAddEmptyNode(NULL, g, NULL, 0));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphAddEmptyNode(&x, (CUgraph)&x, NULL, 0));
    check_cu(cuabi_cuGraphGetNodes(g, NULL, &count));
    assert_int_equal(count, 3); /* refused nodes are not added */

    /* A graph of empty nodes instantiates and launches, doing nothing. */
    CUgraphExec exec;
    uint64_t launches = fake_launch_count();
    check_cu(cuabi_cuGraphInstantiate(&exec, g, 0));
    check_cu(cuabi_cuGraphLaunch(exec, stream));
    assert_int_equal(fake_launch_count(), launches);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g));
    check_cu(cuabi_cuGraphDestroy(other));
}

/* Captured work forms a chain: each node depends on the one captured before. */
static void test_captured_nodes_form_a_chain(void **state)
{
    (void)state;
    CUdeviceptr d;
    CUgraphNode nodes[2], deps[2];
    check_cu(cuabi_cuMemAlloc(&d, 128));
    CUgraph g = capture(d, 1, 4);
    size_t count = 2;
    check_cu(cuabi_cuGraphGetNodes(g, nodes, &count));
    assert_int_equal(count, 2);
    assert_int_equal(dependencies_of(nodes[0], deps, 2), 0);
    assert_int_equal(dependencies_of(nodes[1], deps, 2), 1);
    assert_ptr_equal(deps[0], nodes[0]);
    check_cu(cuabi_cuGraphDestroy(g));
    check_cu(cuabi_cuMemFree(d));
}

/* A clone has the same nodes, edges and work, and outlives its original. */
static void test_clone(void **state)
{
    (void)state;
    CUdeviceptr d;
    unsigned host[32];
    check_cu(cuabi_cuMemAlloc(&d, sizeof host));
    check_cu(cuabi_cuMemsetD32(d, 0, 32));
    CUgraph g = capture(d, 3, 0);
    CUgraphNode kernel, empty, in_clone, deps[2];
    size_t count = 1;
    check_cu(cuabi_cuGraphGetNodes(g, &kernel, &count));
    check_cu(cuabi_cuGraphAddEmptyNode(&empty, g, &kernel, 1));

    CUgraph clone;
    check_cu(cuabi_cuGraphClone(&clone, g));
    count = 0;
    check_cu(cuabi_cuGraphGetNodes(clone, NULL, &count));
    assert_int_equal(count, 2);
    check_cu(cuabi_cuGraphNodeFindInClone(&in_clone, empty, clone));
    assert_true(in_clone != empty);
    assert_int_equal(dependencies_of(in_clone, deps, 2), 1);
    CUgraphNode kernel_in_clone;
    check_cu(cuabi_cuGraphNodeFindInClone(&kernel_in_clone, kernel, clone));
    assert_ptr_equal(deps[0], kernel_in_clone);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphNodeFindInClone(&in_clone, in_clone, g));

    check_cu(cuabi_cuGraphDestroy(g));
    CUgraphExec exec;
    check_cu(cuabi_cuGraphInstantiate(&exec, clone, 0));
    check_cu(cuabi_cuGraphLaunch(exec, stream));
    check_cu(cuabi_cuMemcpyDtoH(host, d, sizeof host));
    for (int i = 0; i < 32; i++)
        assert_int_equal(host[i], 3);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(clone));
    check_cu(cuabi_cuMemFree(d));
    assert_int_equal(fake_live_objects("graphs"), 0);
}

/* An update with the same topology takes the new parameters, all at once. */
static void test_update_takes_new_parameters(void **state)
{
    (void)state;
    CUdeviceptr d;
    unsigned host[32];
    CUgraphExec exec;
    CUgraphExecUpdateResultInfo info;
    check_cu(cuabi_cuMemAlloc(&d, sizeof host));
    check_cu(cuabi_cuMemsetD32(d, 0, 32));
    CUgraph g1 = capture(d, 1, 4), g2 = capture(d, 100, 4);
    check_cu(cuabi_cuGraphInstantiate(&exec, g1, 0));
    memset(&info, 0xEE, sizeof info);
    check_cu(cuabi_cuGraphExecUpdate(exec, g2, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_null(info.errorNode);
    assert_null(info.errorFromNode);
    check_cu(cuabi_cuGraphDestroy(g2)); /* the executable graph keeps its own copy */
    check_cu(cuabi_cuGraphLaunch(exec, stream));
    check_cu(cuabi_cuMemcpyDtoH(host, d, sizeof host));
    assert_int_equal(host[0], 9);
    for (int i = 1; i < 32; i++)
        assert_int_equal(host[i], 100);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g1));
    check_cu(cuabi_cuMemFree(d));
}

/* Node counts that differ: topology changed, with no node to blame. */
static void test_update_refuses_other_node_count(void **state)
{
    (void)state;
    CUdeviceptr d;
    CUgraphExec exec;
    CUgraphExecUpdateResultInfo info;
    check_cu(cuabi_cuMemAlloc(&d, 128));
    CUgraph g1 = capture(d, 1, 4), g2 = capture(d, 1, 0);
    check_cu(cuabi_cuGraphInstantiate(&exec, g1, 0));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g2, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_null(info.errorNode);
    assert_null(info.errorFromNode);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g1));
    check_cu(cuabi_cuGraphDestroy(g2));
    check_cu(cuabi_cuMemFree(d));
}

/* Same count, other edges: topology changed, naming the node and the edge. */
static void test_update_refuses_other_edges(void **state)
{
    (void)state;
    CUgraph g1, g2, g3;
    CUgraphNode a1, b1, c1, a2, b2, c2, a3, b3, c3;
    (void)b1;
    CUgraphExec exec;
    CUgraphExecUpdateResultInfo info;
    check_cu(cuabi_cuGraphCreate(&g1, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&a1, g1, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&b1, g1, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&c1, g1, &a1, 1));
    check_cu(cuabi_cuGraphInstantiate(&exec, g1, 0));
    /* c depends on b instead of a */
    check_cu(cuabi_cuGraphCreate(&g2, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&a2, g2, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&b2, g2, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&c2, g2, &b2, 1));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g2, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_ptr_equal(info.errorNode, c2);
    assert_ptr_equal(info.errorFromNode, b2);
    /* c depends on a and b: another number of dependencies */
    check_cu(cuabi_cuGraphCreate(&g3, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&a3, g3, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&b3, g3, NULL, 0));
    CUgraphNode ab[] = { a3, b3 };
    check_cu(cuabi_cuGraphAddEmptyNode(&c3, g3, ab, 2));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g3, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_ptr_equal(info.errorNode, c3);
    assert_null(info.errorFromNode);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g1));
    check_cu(cuabi_cuGraphDestroy(g2));
    check_cu(cuabi_cuGraphDestroy(g3));
}

/* A node of another type, or a memset of another width, is refused by node. */
static void test_update_refuses_changed_nodes(void **state)
{
    (void)state;
    CUdeviceptr d;
    CUgraph g1, g2, g3;
    CUgraphNode a, b, nodes[2];
    CUgraphExec exec;
    CUgraphExecUpdateResultInfo info;
    unsigned host[32];
    check_cu(cuabi_cuMemAlloc(&d, sizeof host));
    check_cu(cuabi_cuMemsetD32(d, 0, 32));
    g1 = capture(d, 1, 4);
    check_cu(cuabi_cuGraphInstantiate(&exec, g1, 0));
    /* the kernel node replaced by an empty one */
    check_cu(cuabi_cuGraphCreate(&g2, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&a, g2, NULL, 0));
    check_cu(cuabi_cuGraphAddEmptyNode(&b, g2, &a, 1));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g2, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    assert_ptr_equal(info.errorNode, a);
    /* a 16-bit memset where a 32-bit one was */
    g3 = capture(d, 50, 2);
    size_t count = 2;
    check_cu(cuabi_cuGraphGetNodes(g3, nodes, &count));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g3, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
    assert_ptr_equal(info.errorNode, nodes[1]);
    assert_null(info.errorFromNode);
    /* Refused updates change nothing: the kernel still adds 1. */
    check_cu(cuabi_cuGraphLaunch(exec, stream));
    check_cu(cuabi_cuMemcpyDtoH(host, d, sizeof host));
    assert_int_equal(host[1], 1);
    /* Bad arguments: no result info to write, or handles that are not graphs. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphExecUpdate(exec, g3, NULL));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGraphExecUpdate(exec, (CUgraph)exec, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g1));
    check_cu(cuabi_cuGraphDestroy(g2));
    check_cu(cuabi_cuGraphDestroy(g3));
    check_cu(cuabi_cuMemFree(d));
}

/* A kernel from a module of another context cannot replace the original. */
static void test_update_refuses_kernel_of_other_context(void **state)
{
    (void)state;
    CUdeviceptr d;
    CUcontext primary, other;
    CUmodule other_mod;
    CUfunction other_add;
    CUgraph g1, g2 = NULL;
    CUgraphExec exec;
    CUgraphExecUpdateResultInfo info;
    check_cu(cuabi_cuMemAlloc(&d, 128));
    g1 = capture(d, 1, 0);
    check_cu(cuabi_cuGraphInstantiate(&exec, g1, 0));
    check_cu(cuabi_cuCtxGetCurrent(&primary));
    check_cu(cuabi_cuCtxCreate(&other, NULL, 0, 0));
    check_cu(cuabi_cuModuleLoadData(&other_mod, fake_module_image));
    check_cu(cuabi_cuModuleGetFunction(&other_add, other_mod, "add_u32"));
    check_cu(cuabi_cuCtxSetCurrent(primary));
    CUgraphNode node;
    CUstream s2;
    check_cu(cuabi_cuStreamCreate(&s2, 0));
    check_cu(cuabi_cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    unsigned v = 1;
    size_t n = 32;
    void *params[] = { &d, &v, &n };
    check_cu(cuabi_cuLaunchKernel(other_add, 1, 1, 1, 32, 1, 1, 0, s2, params, NULL));
    check_cu(cuabi_cuStreamEndCapture(s2, &g2));
    size_t count = 1;
    check_cu(cuabi_cuGraphGetNodes(g2, &node, &count));
    assert_cu(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuabi_cuGraphExecUpdate(exec, g2, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);
    assert_ptr_equal(info.errorNode, node);
    check_cu(cuabi_cuGraphExecDestroy(exec));
    check_cu(cuabi_cuGraphDestroy(g1));
    check_cu(cuabi_cuGraphDestroy(g2));
    check_cu(cuabi_cuStreamDestroy(s2));
    check_cu(cuabi_cuCtxDestroy(other));
    check_cu(cuabi_cuCtxSetCurrent(primary));
    check_cu(cuabi_cuMemFree(d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_nodes_and_dependencies),
        cmocka_unit_test(test_captured_nodes_form_a_chain),
        cmocka_unit_test(test_clone),
        cmocka_unit_test(test_update_takes_new_parameters),
        cmocka_unit_test(test_update_refuses_other_node_count),
        cmocka_unit_test(test_update_refuses_other_edges),
        cmocka_unit_test(test_update_refuses_changed_nodes),
        cmocka_unit_test(test_update_refuses_kernel_of_other_context),
    };
    return cmocka_run_group_tests_name("graphs: empty nodes, clones, update", tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_driver.c - the two C contenders of bench/run, from one source.
 *
 * Built twice by bench/runner.py:
 *   bench_c_direct  -DBENCH_DIRECT: opens libcuda.so.1 itself (or the absolute
 *                   path in CUABI_LIBCUDA) and calls each entry point through
 *                   the pointer cuGetProcAddress_v2 gives for the same name,
 *                   version and flags that cuabi pins: the floor.
 *   bench_c_cuabi   calls cuabi_cuXxx, linked against libcuabi.so.1.
 * Only the CU() macro differs between the two, so both run the same loops.
 *
 * Modes:
 *   probe                 initialise, print the driver version and device 0's
 *                         name as one JSON line (exit 1 and an "error" if not)
 *   startup               one fresh-process measurement as one JSON line: time
 *                         to the first successful cuInit, time to first use
 *                         (primary context current + a 1 MiB allocation), RSS
 *   worker KERNELS.ptx    the line protocol of bench/worker.py on stdin/stdout
 *
 * Types and enum values come from cuabi.h, which declares the driver API under
 * CUDA's names, so no CUDA toolkit is needed to build either program.
 */
#define _GNU_SOURCE
#include <cuabi.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every entry point used: name, the driver's name for it, the ABI version
 * cuabi pins (include/cuabi/driver_api.json). */
#define ENTRY_POINTS(X)                                                   \
    X(cuInit, "cuInit", 2000)                                             \
    X(cuGetErrorName, "cuGetErrorName", 6000)                             \
    X(cuDriverGetVersion, "cuDriverGetVersion", 2020)                     \
    X(cuDeviceGet, "cuDeviceGet", 2000)                                   \
    X(cuDeviceGetName, "cuDeviceGetName", 2000)                           \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000)                 \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000)         \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000)                           \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", 4000)                           \
    X(cuCtxSynchronize, "cuCtxSynchronize", 2000)                         \
    X(cuStreamCreate, "cuStreamCreate", 2000)                             \
    X(cuStreamQuery, "cuStreamQuery", 2000)                               \
    X(cuStreamSynchronize, "cuStreamSynchronize", 2000)                   \
    X(cuEventCreate, "cuEventCreate", 2000)                               \
    X(cuEventDestroy, "cuEventDestroy", 4000)                             \
    X(cuEventQuery, "cuEventQuery", 2000)                                 \
    X(cuEventRecord, "cuEventRecord", 2000)                               \
    X(cuModuleLoadData, "cuModuleLoadData", 2000)                         \
    X(cuModuleGetFunction, "cuModuleGetFunction", 2000)                   \
    X(cuLaunchKernel, "cuLaunchKernel", 4000)                             \
    X(cuStreamBeginCapture, "cuStreamBeginCapture", 10010)                \
    X(cuStreamEndCapture, "cuStreamEndCapture", 10000)                    \
    X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", 11040)           \
    X(cuGraphLaunch, "cuGraphLaunch", 10000)                              \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", 10000)                    \
    X(cuMemAlloc, "cuMemAlloc", 3020)                                     \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020)                             \
    X(cuMemcpyHtoD, "cuMemcpyHtoD", 3020)                                 \
    X(cuMemcpyDtoH, "cuMemcpyDtoH", 3020)                                 \
    X(cuMemcpyDtoD, "cuMemcpyDtoD", 3020)                                 \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020)                          \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020)

#ifdef BENCH_DIRECT
#define CONTENDER "c_direct"
#define DECLARE_POINTER(name, driver_name, version) static __typeof__(cuabi_##name) *p_##name;
ENTRY_POINTS(DECLARE_POINTER)
#define CU(name) p_##name
#else
#define CONTENDER "c_cuabi"
#define CU(name) cuabi_##name
#endif

#define SMALL_BYTES ((size_t)4096)
#define BIG_BYTES ((size_t)256 << 20)
#define ALLOC_BYTES ((size_t)1 << 20)
#define GRAPH_NODES 100

static char failure[512];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* Records what failed in `failure` and returns 0; returns 1 on success. */
static int ok(CUresult r, const char *what)
{
    const char *name = NULL;
    if (r == CUDA_SUCCESS)
        return 1;
#ifdef BENCH_DIRECT
    if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
#else
    name = cuabi_error_name(r);
#endif
    snprintf(failure, sizeof failure, "%s failed: %d %s", what, (int)r, name ? name : "");
    return 0;
}

#ifdef BENCH_DIRECT
static void *libcuda;
static __typeof__(cuabi_cuGetProcAddress) *p_cuGetProcAddress;

/* dlopen + dlsym("cuInit") + cuInit(0): what a program linked to libcuda pays
 * on its first call, apart from the dynamic loader's own start-up. */
static int open_driver_and_init(void)
{
    const char *path = getenv("CUABI_LIBCUDA");
    if (path == NULL || path[0] == '\0')
        path = "libcuda.so.1";
    libcuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (libcuda == NULL) {
        snprintf(failure, sizeof failure, "dlopen(%s): %s", path, dlerror());
        return 0;
    }
    *(void **)&p_cuInit = dlsym(libcuda, "cuInit");
    if (p_cuInit == NULL) {
        snprintf(failure, sizeof failure, "%s has no cuInit", path);
        return 0;
    }
    return ok(p_cuInit(0), "cuInit");
}

static int resolve_all(void)
{
    CUdriverProcAddressQueryResult status;
    *(void **)&p_cuGetProcAddress = dlsym(libcuda, "cuGetProcAddress_v2");
    if (p_cuGetProcAddress == NULL) {
        snprintf(failure, sizeof failure, "the driver has no cuGetProcAddress_v2");
        return 0;
    }
#define RESOLVE(name, driver_name, version)                                            \
    if (p_cuGetProcAddress(driver_name, (void **)&p_##name, version,                    \
                           CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS || \
        p_##name == NULL) {                                                             \
        snprintf(failure, sizeof failure, "cuGetProcAddress_v2(%s) failed", driver_name); \
        return 0;                                                                        \
    }
    ENTRY_POINTS(RESOLVE)
#undef RESOLVE
    return 1;
}
#endif

/* The first successful driver call: what a fresh process pays for cuInit. */
static int first_call(void)
{
#ifdef BENCH_DIRECT
    return open_driver_and_init();
#else
    return ok(cuabi_cuInit(0), "cuabi_cuInit");
#endif
}

/* Looks up every entry point the loops use (cuabi does this lazily, on each
 * entry point's first call, so it has nothing to do here). */
static int prepare_calls(void)
{
#ifdef BENCH_DIRECT
    return resolve_all();
#else
    return 1;
#endif
}

static CUdevice device;
static CUcontext context;

static int make_context_current(void)
{
    return ok(CU(cuDeviceGet)(&device, 0), "cuDeviceGet") &&
           ok(CU(cuDevicePrimaryCtxRetain)(&context, device), "cuDevicePrimaryCtxRetain") &&
           ok(CU(cuCtxSetCurrent)(context), "cuCtxSetCurrent");
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned)(unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

static int fail_json(void)
{
    printf("{\"error\": ");
    print_json_string(failure);
    printf("}\n");
    return 1;
}

static int mode_probe(void)
{
    char name[256];
    int version = 0;
    if (!first_call() || !prepare_calls() || !make_context_current() ||
        !ok(CU(cuDriverGetVersion)(&version), "cuDriverGetVersion") ||
        !ok(CU(cuDeviceGetName)(name, (int)sizeof name, device), "cuDeviceGetName"))
        return fail_json();
    printf("{\"driver_version\": %d, \"device\": ", version);
    print_json_string(name);
    printf("}\n");
    return 0;
}

static int mode_startup(void)
{
    CUdeviceptr p;
    long rss_start = rss_kb();
    uint64_t t0 = now_ns();
    uint64_t t_first, t_use;
    if (!first_call())
        return fail_json();
    t_first = now_ns();
    if (!prepare_calls() || !make_context_current() ||
        !ok(CU(cuMemAlloc)(&p, ALLOC_BYTES), "cuMemAlloc"))
        return fail_json();
    t_use = now_ns();
    /* There is no import for C: the dynamic loader maps libcuabi before main
     * (and the direct program opens libcuda inside the first call). */
    printf("{\"import_ns\": null, \"first_call_ns\": %llu, \"use_ns\": %llu, "
           "\"rss_start_kb\": %ld, \"rss_import_kb\": %ld, \"rss_use_kb\": %ld}\n",
           (unsigned long long)(t_first - t0), (unsigned long long)(t_use - t0), rss_start,
           rss_start, rss_kb());
    return 0;
}

/* ------------------------------------------------------------------ worker */

enum op_id {
    OP_CTX_GET_CURRENT,
    OP_DEVICE_GET_ATTRIBUTE,
    OP_EVENT_CREATE_DESTROY,
    OP_EVENT_QUERY,
    OP_STREAM_QUERY,
    OP_LAUNCH_0,
    OP_LAUNCH_3,
    OP_LAUNCH_16,
    OP_GRAPH_INSTANTIATE,
    OP_GRAPH_LAUNCH,
    OP_H2D_4K_PINNED,
    OP_H2D_4K_PAGEABLE,
    OP_D2H_4K_PINNED,
    OP_D2H_4K_PAGEABLE,
    OP_H2D_256M_PINNED,
    OP_H2D_256M_PAGEABLE,
    OP_D2H_256M_PINNED,
    OP_D2H_256M_PAGEABLE,
    OP_D2D_256M,
    OP_ALLOC_FREE_1M,
    OP_COUNT
};

static const struct {
    const char *name;
    const char *how;
} ops[OP_COUNT] = {
    [OP_CTX_GET_CURRENT] = {"ctx_get_current", "cuCtxGetCurrent(&ctx)"},
    [OP_DEVICE_GET_ATTRIBUTE] = {"device_get_attribute",
                                 "cuDeviceGetAttribute(&v, MULTIPROCESSOR_COUNT, dev)"},
    [OP_EVENT_CREATE_DESTROY] = {"event_create_destroy",
                                 "cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); cuEventDestroy(e)"},
    [OP_EVENT_QUERY] = {"event_query", "cuEventQuery(e)"},
    [OP_STREAM_QUERY] = {"stream_query", "cuStreamQuery(s)"},
    [OP_LAUNCH_0] = {"launch_0", "cuLaunchKernel(f, 1,1,1, 1,1,1, 0, s, NULL, NULL)"},
    [OP_LAUNCH_3] = {"launch_3", "cuLaunchKernel(..., params) with a prepared void *params[3]"},
    [OP_LAUNCH_16] = {"launch_16", "cuLaunchKernel(..., params) with a prepared void *params[16]"},
    [OP_GRAPH_INSTANTIATE] = {"graph_instantiate",
                              "cuGraphInstantiate(&g, graph, 0); cuGraphExecDestroy(g)"},
    [OP_GRAPH_LAUNCH] = {"graph_launch", "cuGraphLaunch(g, s)"},
    [OP_H2D_4K_PINNED] = {"h2d_4k_pinned", "cuMemcpyHtoD from cuMemHostAlloc memory"},
    [OP_H2D_4K_PAGEABLE] = {"h2d_4k_pageable", "cuMemcpyHtoD from malloc memory"},
    [OP_D2H_4K_PINNED] = {"d2h_4k_pinned", "cuMemcpyDtoH to cuMemHostAlloc memory"},
    [OP_D2H_4K_PAGEABLE] = {"d2h_4k_pageable", "cuMemcpyDtoH to malloc memory"},
    [OP_H2D_256M_PINNED] = {"h2d_256m_pinned", "cuMemcpyHtoD from cuMemHostAlloc memory"},
    [OP_H2D_256M_PAGEABLE] = {"h2d_256m_pageable", "cuMemcpyHtoD from malloc memory"},
    [OP_D2H_256M_PINNED] = {"d2h_256m_pinned", "cuMemcpyDtoH to cuMemHostAlloc memory"},
    [OP_D2H_256M_PAGEABLE] = {"d2h_256m_pageable", "cuMemcpyDtoH to malloc memory"},
    [OP_D2D_256M] = {"d2d_256m", "cuMemcpyDtoD"},
    [OP_ALLOC_FREE_1M] = {"alloc_free_1m", "cuMemAllocAsync(&p, 1 MiB, s); cuMemFreeAsync(p, s)"},
};

static char skip_reason[OP_COUNT][512];

static CUstream stream;
static CUevent done_event;
static CUfunction kernel0, kernel3, kernel16;
static CUgraphExec graph_exec;
static CUgraph graph;
static CUdeviceptr dev_small, dev_big, dev_big2;
static void *pinned_small, *pinned_big, *pageable_small, *pageable_big;

/* Kernel parameters, prepared once as a caller would. */
static CUdeviceptr arg_ptr[8];
static uint32_t arg_count[4];
static float arg_scale[4];
static void *params3[3];
static void *params16[16];

static CUresult launch(CUfunction f, void **params)
{
    return CU(cuLaunchKernel)(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
}

/* Runs n iterations of op; returns 0 when every call succeeded. */
static unsigned run_iterations(int op, long n)
{
    unsigned bad = 0;
    long i;
    switch (op) {
    case OP_CTX_GET_CURRENT: {
        CUcontext c;
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuCtxGetCurrent)(&c);
        break;
    }
    case OP_DEVICE_GET_ATTRIBUTE: {
        int v;
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuDeviceGetAttribute)(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                      device);
        break;
    }
    case OP_EVENT_CREATE_DESTROY: {
        CUevent e;
        for (i = 0; i < n; i++) {
            bad |= (unsigned)CU(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING);
            bad |= (unsigned)CU(cuEventDestroy)(e);
        }
        break;
    }
    case OP_EVENT_QUERY:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuEventQuery)(done_event);
        break;
    case OP_STREAM_QUERY:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuStreamQuery)(stream);
        break;
    case OP_LAUNCH_0:
        for (i = 0; i < n; i++)
            bad |= (unsigned)launch(kernel0, NULL);
        break;
    case OP_LAUNCH_3:
        for (i = 0; i < n; i++)
            bad |= (unsigned)launch(kernel3, params3);
        break;
    case OP_LAUNCH_16:
        for (i = 0; i < n; i++)
            bad |= (unsigned)launch(kernel16, params16);
        break;
    case OP_GRAPH_INSTANTIATE: {
        CUgraphExec g;
        for (i = 0; i < n; i++) {
            bad |= (unsigned)CU(cuGraphInstantiate)(&g, graph, 0);
            bad |= (unsigned)CU(cuGraphExecDestroy)(g);
        }
        break;
    }
    case OP_GRAPH_LAUNCH:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuGraphLaunch)(graph_exec, stream);
        break;
    case OP_H2D_4K_PINNED:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyHtoD)(dev_small, pinned_small, SMALL_BYTES);
        break;
    case OP_H2D_4K_PAGEABLE:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyHtoD)(dev_small, pageable_small, SMALL_BYTES);
        break;
    case OP_D2H_4K_PINNED:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyDtoH)(pinned_small, dev_small, SMALL_BYTES);
        break;
    case OP_D2H_4K_PAGEABLE:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyDtoH)(pageable_small, dev_small, SMALL_BYTES);
        break;
    case OP_H2D_256M_PINNED:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyHtoD)(dev_big, pinned_big, BIG_BYTES);
        break;
    case OP_H2D_256M_PAGEABLE:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyHtoD)(dev_big, pageable_big, BIG_BYTES);
        break;
    case OP_D2H_256M_PINNED:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyDtoH)(pinned_big, dev_big, BIG_BYTES);
        break;
    case OP_D2H_256M_PAGEABLE:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyDtoH)(pageable_big, dev_big, BIG_BYTES);
        break;
    case OP_D2D_256M:
        for (i = 0; i < n; i++)
            bad |= (unsigned)CU(cuMemcpyDtoD)(dev_big2, dev_big, BIG_BYTES);
        break;
    case OP_ALLOC_FREE_1M: {
        CUdeviceptr p;
        for (i = 0; i < n; i++) {
            bad |= (unsigned)CU(cuMemAllocAsync)(&p, ALLOC_BYTES, stream);
            bad |= (unsigned)CU(cuMemFreeAsync)(p, stream);
        }
        break;
    }
    default:
        bad = 1;
    }
    return bad;
}

static int sync_all(void)
{
    return ok(CU(cuCtxSynchronize)(), "cuCtxSynchronize");
}

/* Marks the ops in [first, last] skipped with the current failure text. */
static void skip_ops(int first, int last)
{
    for (int op = first; op <= last; op++)
        if (skip_reason[op][0] == '\0')
            snprintf(skip_reason[op], sizeof skip_reason[op], "%s", failure);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long size;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        snprintf(failure, sizeof failure, "cannot read %s", path);
        if (f != NULL)
            fclose(f);
        return NULL;
    }
    text = malloc((size_t)size + 1);
    if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
        snprintf(failure, sizeof failure, "cannot read %s", path);
        free(text);
        fclose(f);
        return NULL;
    }
    text[size] = '\0';
    fclose(f);
    return text;
}

static int setup_kernels(const char *ptx_path)
{
    CUmodule module;
    char *ptx = read_file(ptx_path);
    int i;
    if (ptx == NULL || !ok(CU(cuModuleLoadData)(&module, ptx), "cuModuleLoadData") ||
        !ok(CU(cuModuleGetFunction)(&kernel0, module, "empty_0"), "cuModuleGetFunction(empty_0)") ||
        !ok(CU(cuModuleGetFunction)(&kernel3, module, "empty_3"), "cuModuleGetFunction(empty_3)") ||
        !ok(CU(cuModuleGetFunction)(&kernel16, module, "empty_16"),
            "cuModuleGetFunction(empty_16)")) {
        free(ptx);
        return 0;
    }
    free(ptx);
    for (i = 0; i < 8; i++)
        arg_ptr[i] = dev_small;
    for (i = 0; i < 4; i++) {
        arg_count[i] = (uint32_t)i;
        arg_scale[i] = 1.0f;
    }
    params3[0] = &arg_ptr[0];
    params3[1] = &arg_count[0];
    params3[2] = &arg_scale[0];
    for (i = 0; i < 8; i++)
        params16[i] = &arg_ptr[i];
    for (i = 0; i < 4; i++) {
        params16[8 + i] = &arg_count[i];
        params16[12 + i] = &arg_scale[i];
    }
    return 1;
}

static int setup_graph(void)
{
    int i;
    if (!ok(CU(cuStreamBeginCapture)(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture"))
        return 0;
    for (i = 0; i < GRAPH_NODES; i++)
        if (!ok(launch(kernel0, NULL), "cuLaunchKernel during capture"))
            break;
    if (!ok(CU(cuStreamEndCapture)(stream, &graph), "cuStreamEndCapture") || i < GRAPH_NODES)
        return 0;
    return ok(CU(cuGraphInstantiate)(&graph_exec, graph, 0), "cuGraphInstantiate");
}

static void *host_pageable(size_t bytes)
{
    void *p = malloc(bytes);
    if (p == NULL)
        snprintf(failure, sizeof failure, "malloc(%zu) failed", bytes);
    else
        memset(p, 1, bytes); /* touch every page before timing */
    return p;
}

/* Sets everything up; an op whose resources failed gets a skip reason. */
static int setup_worker(const char *ptx_path)
{
    if (!first_call() || !prepare_calls() || !make_context_current() ||
        !ok(CU(cuStreamCreate)(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        !ok(CU(cuMemAlloc)(&dev_small, SMALL_BYTES), "cuMemAlloc(4 KiB)"))
        return 0;
    if (!ok(CU(cuEventCreate)(&done_event, CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
        !ok(CU(cuEventRecord)(done_event, stream), "cuEventRecord"))
        skip_ops(OP_EVENT_QUERY, OP_EVENT_QUERY);
    if (!setup_kernels(ptx_path))
        skip_ops(OP_LAUNCH_0, OP_GRAPH_LAUNCH);
    else if (!setup_graph())
        skip_ops(OP_GRAPH_INSTANTIATE, OP_GRAPH_LAUNCH);
    if (!ok(CU(cuMemHostAlloc)(&pinned_small, SMALL_BYTES, 0), "cuMemHostAlloc(4 KiB)")) {
        skip_ops(OP_H2D_4K_PINNED, OP_H2D_4K_PINNED);
        skip_ops(OP_D2H_4K_PINNED, OP_D2H_4K_PINNED);
    }
    if ((pageable_small = host_pageable(SMALL_BYTES)) == NULL) {
        skip_ops(OP_H2D_4K_PAGEABLE, OP_H2D_4K_PAGEABLE);
        skip_ops(OP_D2H_4K_PAGEABLE, OP_D2H_4K_PAGEABLE);
    }
    if (!ok(CU(cuMemAlloc)(&dev_big, BIG_BYTES), "cuMemAlloc(256 MiB)") ||
        !ok(CU(cuMemAlloc)(&dev_big2, BIG_BYTES), "cuMemAlloc(256 MiB)"))
        skip_ops(OP_H2D_256M_PINNED, OP_D2D_256M);
    if (!ok(CU(cuMemHostAlloc)(&pinned_big, BIG_BYTES, 0), "cuMemHostAlloc(256 MiB)")) {
        skip_ops(OP_H2D_256M_PINNED, OP_H2D_256M_PINNED);
        skip_ops(OP_D2H_256M_PINNED, OP_D2H_256M_PINNED);
    }
    if ((pageable_big = host_pageable(BIG_BYTES)) == NULL) {
        skip_ops(OP_H2D_256M_PAGEABLE, OP_H2D_256M_PAGEABLE);
        skip_ops(OP_D2H_256M_PAGEABLE, OP_D2H_256M_PAGEABLE);
    }
    if (!sync_all())
        return 0;
    /* One call of each op before timing: an op that fails is skipped with
     * the reason, rather than timed failing fast. */
    for (int op = 0; op < OP_COUNT; op++) {
        if (skip_reason[op][0] == '\0' && (run_iterations(op, 1) != 0 || !sync_all())) {
            snprintf(skip_reason[op], sizeof skip_reason[op], "one call of %s failed",
                     ops[op].how);
            if (!sync_all())
                return 0;
        }
    }
    return 1;
}

static int find_op(const char *name)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (strcmp(ops[op].name, name) == 0)
            return op;
    return -1;
}

/* run NAME N WARM CHUNK TIMED_SYNC: see bench/worker.py for the contract. */
static void command_run(int op, long n, long warm, long chunk, int timed_sync)
{
    uint64_t total = 0;
    if (chunk <= 0)
        chunk = n > 0 ? n : 1;
    if (!sync_all() || (warm > 0 && run_iterations(op, warm) != 0) || !sync_all()) {
        printf("err warm-up of %s failed: %s\n", ops[op].name, failure);
        return;
    }
    for (long left = n; left > 0;) {
        long k = left < chunk ? left : chunk;
        uint64_t t0 = now_ns();
        unsigned bad = run_iterations(op, k);
        if (timed_sync && !sync_all()) {
            printf("err %s\n", failure);
            return;
        }
        total += now_ns() - t0;
        if (bad != 0 || (!timed_sync && !sync_all())) {
            printf("err %s failed during timing %s\n", ops[op].name, failure);
            return;
        }
        left -= k;
    }
    printf("ok %llu\n", (unsigned long long)total);
}

static int mode_worker(const char *ptx_path)
{
    char line[256], name[64];
    long n, warm, chunk;
    int timed_sync, version = 0;
    if (!setup_worker(ptx_path)) {
        printf("fail %s\n", failure);
        return 1;
    }
    if (CU(cuDriverGetVersion)(&version) == CUDA_SUCCESS)
        printf("info driver_version %d\n", version);
    if (CU(cuDeviceGetName)(line, (int)sizeof line, device) == CUDA_SUCCESS)
        printf("info device %s\n", line);
    for (int op = 0; op < OP_COUNT; op++) {
        if (skip_reason[op][0] != '\0')
            printf("skip %s %s\n", ops[op].name, skip_reason[op]);
        else
            printf("op %s %s\n", ops[op].name, ops[op].how);
    }
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
        if (strncmp(line, "quit", 4) == 0)
            break;
        if (sscanf(line, "run %63s %ld %ld %ld %d", name, &n, &warm, &chunk, &timed_sync) == 5) {
            int op = find_op(name);
            if (op < 0 || skip_reason[op][0] != '\0')
                printf("err %s is not offered\n", name);
            else
                command_run(op, n, warm, chunk, timed_sync);
        } else {
            printf("err bad command\n");
        }
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "probe") == 0)
        return mode_probe();
    if (argc == 2 && strcmp(argv[1], "startup") == 0)
        return mode_startup();
    if (argc == 3 && strcmp(argv[1], "worker") == 0)
        return mode_worker(argv[2]);
    fprintf(stderr, "usage: %s probe | startup | worker KERNELS.ptx   (" CONTENDER ")\n", argv[0]);
    return 2;
}

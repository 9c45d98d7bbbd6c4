/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forward_cost - what a cuabi forwarder costs over calling the driver's
 * function through a pointer, as a program that binds libcuda by hand does.
 *
 * The loops call the same driver function twice over: once through the
 * forwarder cuabi_cuXxx, once through the address cuabi_get_proc returns
 * for the same entry point, version and flags. The forwarder is resolved
 * before measuring, so only its steady state is measured.
 *
 *   forward_cost cuabi N    N calls of cuabi_cuCtxGetCurrent, in bench_cuabi()
 *   forward_cost direct N   N calls through the pointer, in bench_direct()
 *   forward_cost time N     both, interleaved, timed; prints ns per call
 *   forward_cost trace N    N calls of cuabi_cuCtxGetCurrent with tracing off and
 *                           on (cuabi_trace_start("/dev/null")), interleaved,
 *                           timed; prints ns per call and what tracing adds
 *   forward_cost each N     N calls of every entry point of MEASURED below,
 *                           through the forwarder (bench_cuabi_<name>) and
 *                           through the pointer (bench_direct_<name>); only on
 *                           the fake driver in record mode, whose recording
 *                           closures accept any argument values
 *
 * cuabi and direct run against any driver (cuCtxGetCurrent is harmless);
 * they and each exist for callgrind (--toggle-collect=bench_*);
 * check_forward_cost.py turns their instruction counts into instructions
 * per call. MEASURED covers the shapes a forwarder can have: one to three
 * register arguments, five, a struct by value, floats, and cuLaunchKernel's
 * eleven, five of them on the stack.
 */
#define _GNU_SOURCE
#include <cuabi.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*ctx_get_current_fn)(CUcontext *);

/* Results go somewhere the compiler cannot see through. */
static volatile uintptr_t sink;

__attribute__((noinline)) unsigned long bench_cuabi(unsigned long n)
{
    unsigned long failures = 0;
    CUcontext ctx;
    for (unsigned long i = 0; i < n; i++) {
        failures += cuabi_cuCtxGetCurrent(&ctx) != CUDA_SUCCESS;
        sink = (uintptr_t)ctx;
    }
    return failures;
}

__attribute__((noinline)) unsigned long bench_direct(ctx_get_current_fn fn, unsigned long n)
{
    unsigned long failures = 0;
    CUcontext ctx;
    for (unsigned long i = 0; i < n; i++) {
        failures += fn(&ctx) != CUDA_SUCCESS;
        sink = (uintptr_t)ctx;
    }
    return failures;
}

/* Entry points measured by "each": name, pinned version (driver_api.json),
 * and the arguments (never looked at by the recording closures). */
#define MEASURED(X)                                                                   \
    X(cuCtxGetCurrent, 4000, (&ctx))                                                  \
    X(cuMemAlloc, 3020, (&dptr, 4096))                                                \
    X(cuMemcpyHtoD, 3020, (dptr, &ctx, 64))                                           \
    X(cuMemsetD2D32, 3020, (dptr, 512, 7u, 16, 16))                                   \
    X(cuMemAdvise, 12020, (dptr, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, location))      \
    X(cuTexRefSetMipmapLevelClamp, 5000, (NULL, 0.5f, 2.0f))                          \
    X(cuLaunchKernel, 4000, (NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))

/* One measured loop: n calls of callee with the arguments args. */
#define BENCH_LOOP(function, callee, args)                                           \
    __attribute__((noinline)) unsigned long function(unsigned long n)                \
    {                                                                                 \
        unsigned long failures = 0;                                                   \
        CUcontext ctx = NULL;                                                         \
        CUdeviceptr dptr = 0x10000;                                                   \
        CUmemLocation location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };                  \
        (void)ctx, (void)dptr, (void)location;                                        \
        for (unsigned long i = 0; i < n; i++)                                         \
            failures += callee args != CUDA_SUCCESS;                                  \
        return failures;                                                              \
    }
#define DEFINE_BENCH(name, version, args)                                            \
    static __typeof__(cuabi_##name) *direct_##name;                                   \
    BENCH_LOOP(bench_cuabi_##name, cuabi_##name, args)                                \
    BENCH_LOOP(bench_direct_##name, direct_##name, args)
MEASURED(DEFINE_BENCH)

/* Resolves every measured forwarder and its direct pointer; 0 on success. */
static int prepare_each(uint64_t flags)
{
    CUcontext ctx;
    CUdeviceptr dptr = 0x10000;
    CUmemLocation location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    void *fn;
    (void)ctx, (void)dptr, (void)location;
#define PREPARE(name, version, args)                                                 \
    if (cuabi_##name args != CUDA_SUCCESS ||                                          \
        cuabi_get_proc(#name, version, flags, &fn) != CUDA_SUCCESS) {                 \
        fprintf(stderr, "%s could not be resolved\n", #name);                         \
        return 1;                                                                     \
    }                                                                                 \
    direct_##name = (__typeof__(direct_##name))fn;
    MEASURED(PREPARE)
#undef PREPARE
    return 0;
}

/* Whether the driver in use is the fake in record mode. */
static int fake_in_record_mode(void)
{
    void *handle = dlopen(cuabi_driver_path(), RTLD_NOW | RTLD_NOLOAD);
    int (*is_record_mode)(void) = NULL;
    if (handle != NULL)
        *(void **)&is_record_mode = dlsym(handle, "fakecuda_is_record_mode");
    return is_record_mode != NULL && is_record_mode();
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "cuabi") != 0 && strcmp(argv[1], "direct") != 0 &&
                      strcmp(argv[1], "time") != 0 && strcmp(argv[1], "each") != 0 &&
                      strcmp(argv[1], "trace") != 0)) {
        fprintf(stderr, "usage: forward_cost cuabi|direct|time|trace|each N\n");
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10);

    /* Load, initialise and resolve outside the measured functions. */
    CUresult rc = cuabi_cuInit(0);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "cuInit: %s\n%s", cuabi_error_name(rc), cuabi_driver_report());
        return 1;
    }
    CUcontext ctx;
    rc = cuabi_cuCtxGetCurrent(&ctx);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "cuCtxGetCurrent: %s\n", cuabi_error_name(rc));
        return 1;
    }
    /* The entry point the forwarder ends at: its pinned version (4000) and
     * the process's stream flags. */
    void *fn = NULL;
    uint64_t flags = cuabi_default_stream_mode() == 1 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                      : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    rc = cuabi_get_proc("cuCtxGetCurrent", 4000, flags, &fn);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "cuabi_get_proc: %s\n", cuabi_error_name(rc));
        return 1;
    }
    ctx_get_current_fn direct = (ctx_get_current_fn)fn;

    if (strcmp(argv[1], "each") == 0) {
        if (!fake_in_record_mode()) {
            fprintf(stderr, "forward_cost each: only on the fake driver with FAKECUDA_MODE=record "
                            "(it calls entry points with made-up arguments)\n");
            return 2;
        }
        if (prepare_each(flags) != 0)
            return 1;
        unsigned long failures = 0;
#define RUN(name, version, args) failures += bench_cuabi_##name(n) + bench_direct_##name(n);
        MEASURED(RUN)
#undef RUN
        return failures != 0;
    }
    if (strcmp(argv[1], "cuabi") == 0)
        return bench_cuabi(n) != 0;
    if (strcmp(argv[1], "direct") == 0)
        return bench_direct(direct, n) != 0;

    /* Interleaved rounds, so that both see the same machine state; the
     * median of the per-round difference.  "trace": the forwarder with tracing
     * off, then on (its lines written to /dev/null: the cost of making them). */
    enum { ROUNDS = 31 };
    int traced = strcmp(argv[1], "trace") == 0;
    double via[ROUNDS], plain[ROUNDS], diff[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        unsigned long f1 = bench_cuabi(n);
        double t1 = now_ns();
        if (traced && cuabi_trace_start("/dev/null") != CUDA_SUCCESS)
            return 1;
        unsigned long f2 = traced ? bench_cuabi(n) : bench_direct(direct, n);
        double t2 = now_ns();
        if ((traced && cuabi_trace_stop() != CUDA_SUCCESS) || f1 || f2)
            return 1;
        /* via: the traced loop (the second) or the forwarder; plain: the other */
        via[r] = (traced ? t2 - t1 : t1 - t0) / (double)n;
        plain[r] = (traced ? t1 - t0 : t2 - t1) / (double)n;
        diff[r] = via[r] - plain[r];
    }
    qsort(via, ROUNDS, sizeof via[0], compare);
    qsort(plain, ROUNDS, sizeof plain[0], compare);
    qsort(diff, ROUNDS, sizeof diff[0], compare);
    printf("driver: %s\n", cuabi_driver_path());
    if (traced) {
        printf("traced call of cuabi_cuCtxGetCurrent: %.2f ns/call (median of %d rounds of %lu)\n",
               via[ROUNDS / 2], ROUNDS, n);
        printf("untraced call:                        %.2f ns/call\n", plain[ROUNDS / 2]);
        printf("tracing overhead:                     %.2f ns/call (median of per-round "
               "differences)\n", diff[ROUNDS / 2]);
        return 0;
    }
    printf("through cuabi_cuCtxGetCurrent: %.2f ns/call (median of %d rounds of %lu)\n", via[ROUNDS / 2],
           ROUNDS, n);
    printf("through a function pointer:    %.2f ns/call\n", plain[ROUNDS / 2]);
    printf("forwarder overhead:            %.2f ns/call (median of per-round differences)\n",
           diff[ROUNDS / 2]);
    return 0;
}

/*
 * forward_cost - what a cuabi forwarder costs over calling the driver's
 * function through a pointer, as a program that binds libcuda by hand does.
 *
 * Both loops call the same driver function, cuCtxGetCurrent of the driver
 * cuabi loaded (the fake in the test suite, libcuda.so.1 on a GPU machine):
 * one through cuabi_cuCtxGetCurrent, one through the address cuabi_get_proc
 * returns for the same entry point, version and flags. The forwarder is
 * resolved before measuring, so only its steady state is measured.
 *
 *   forward_cost cuabi N    N calls through the forwarder, in bench_cuabi()
 *   forward_cost direct N   N calls through the pointer, in bench_direct()
 *   forward_cost time N     both, interleaved, timed; prints ns per call
 *
 * The first two exist for callgrind (--toggle-collect=bench_cuabi or
 * bench_direct); check_forward_cost.py turns their instruction counts into
 * instructions per call.
 */
#define _GNU_SOURCE
#include <cuabi.h>

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
                      strcmp(argv[1], "time") != 0)) {
        fprintf(stderr, "usage: forward_cost cuabi|direct|time N\n");
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

    if (strcmp(argv[1], "cuabi") == 0)
        return bench_cuabi(n) != 0;
    if (strcmp(argv[1], "direct") == 0)
        return bench_direct(direct, n) != 0;

    /* Interleaved rounds, so that both see the same machine state; the
     * median of the per-round difference. */
    enum { ROUNDS = 31 };
    double via[ROUNDS], plain[ROUNDS], diff[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        unsigned long f1 = bench_cuabi(n);
        double t1 = now_ns();
        unsigned long f2 = bench_direct(direct, n);
        double t2 = now_ns();
        if (f1 || f2)
            return 1;
        via[r] = (t1 - t0) / (double)n;
        plain[r] = (t2 - t1) / (double)n;
        diff[r] = via[r] - plain[r];
    }
    qsort(via, ROUNDS, sizeof via[0], compare);
    qsort(plain, ROUNDS, sizeof plain[0], compare);
    qsort(diff, ROUNDS, sizeof diff[0], compare);
    printf("driver: %s\n", cuabi_driver_path());
    printf("through cuabi_cuCtxGetCurrent: %.2f ns/call (median of %d rounds of %lu)\n", via[ROUNDS / 2],
           ROUNDS, n);
    printf("through a function pointer:    %.2f ns/call\n", plain[ROUNDS / 2]);
    printf("forwarder overhead:            %.2f ns/call (median of per-round differences)\n",
           diff[ROUNDS / 2]);
    return 0;
}

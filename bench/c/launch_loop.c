/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_loop.c - the C floor of bench/launch_cost.py, as a shared library
 * that the Python process loads, so that C and Python launches run in one
 * process, interleaved, and are compared round by round.
 *
 * bench_launch_loop() calls the driver's cuLaunchKernel (the pointer the
 * caller got from cuGetProcAddress) n times with a 1x1x1 grid and block and
 * the given parameter array, as the C contender of bench_driver.c does, and
 * returns the nanoseconds the loop took, or minus the first error code.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef int (*launch_kernel_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shared, void *stream,
                                void **params, void **extra);

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t bench_launch_loop(void *launch_kernel, void *f, void *stream, void **params, int n)
{
    launch_kernel_fn launch = (launch_kernel_fn)launch_kernel;
    int first_error = 0;
    int64_t start = now_ns();
    for (int i = 0; i < n; i++) {
        int rc = launch(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
        if (rc != 0 && first_error == 0)
            first_error = rc;
    }
    int64_t elapsed = now_ns() - start;
    return first_error ? -(int64_t)first_error : elapsed;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The C library's checks against a real driver and GPU (run by tests/gpu/run on a GPU machine).
 *
 * 1. Loads the driver and resolves every entry point the way the forwarders do (its name,
 *    pinned version and the stream mode's flags), and lists those this driver lacks.
 * 2. Allocates, copies, and launches kernels from tests/gpu/kernels.ptx through
 *    cuabi_cuLaunchKernel and through cuabi_launch_packed, and checks the results.
 *
 * Usage: gpu_check path/to/kernels.ptx
 * Ends with "N passed, M failed"; exit status 0 only when nothing failed. */

#include <cuabi.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, CUresult code)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL: %s (%d %s: %s)\n", what, (int)code, cuabi_error_name(code),
           cuabi_error_string(code));
}

#define CHECK_CU(call)                                   \
    do {                                                 \
        CUresult r_ = (call);                            \
        check(r_ == CUDA_SUCCESS, #call, r_);            \
        if (r_ != CUDA_SUCCESS)                          \
            return;                                      \
    } while (0)

struct entry {
    const char *name;
    const char *driver_name;
    int version;
    int ptds_version;
};

static const struct entry entries[] = {
#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    { #name, driver_name, version, ptds_version },
#include "entry_points.h"
#undef CUABI_ENTRY
};

/* The version nodes: entry points [first, first + count) come from that CUDA version. */
static const struct {
    const char *name;
    int cuda_version;
    size_t first, count;
} nodes[] = {
#define CUABI_NODE(name, cuda_version, first, count) { name, cuda_version, first, count },
#include "entry_nodes.h"
#undef CUABI_NODE
};

static void resolve_all(void)
{
    int per_thread = cuabi_default_stream_mode();
    int driver = 0;
    if (cuabi_driver_version(&driver) != CUDA_SUCCESS)
        driver = 0;
    /* The entry points of the nodes whose CUDA version this driver has; the newer ones
     * answer DRIVER_TOO_OLD or ENTRY_POINT_NOT_FOUND (tests/newer_entry_points.c). */
    size_t count = 0;
    for (size_t n = 0; n < sizeof nodes / sizeof nodes[0]; n++)
        if (nodes[n].cuda_version <= driver && nodes[n].first == count)
            count += nodes[n].count;
    size_t resolved = 0;
    for (size_t i = 0; i < count; i++) {
        void *fn = NULL;
        int version = per_thread ? entries[i].ptds_version : entries[i].version;
        uint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                    : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
        CUresult r = cuabi_get_proc(entries[i].driver_name, version, flags, &fn);
        if (r == CUDA_SUCCESS && fn != NULL)
            resolved++;
        else
            printf("not resolved: %s (%s v%d): %s\n", entries[i].name, entries[i].driver_name,
                   version, cuabi_error_name(r));
    }
    printf("resolved %zu of %zu entry points (%s default stream; those of the nodes up to "
           "CUDA %d)\n", resolved, count, per_thread ? "per-thread" : "legacy", driver);
    /* Every entry point of a node's cuda.h exists in a driver of that CUDA version. */
    check(count > 0, "a node this driver is new enough for", CUABI_ERROR_DRIVER_TOO_OLD);
    check(resolved == count, "every entry point resolves", CUABI_ERROR_ENTRY_POINT_NOT_FOUND);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) == (size_t)size)
        text[size] = '\0';
    else {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

/* The packed launch: a 32-byte header, then the kernel's parameters at their offsets. */
struct add_one_packet {
    uint32_t grid[3], block[3], shared_mem, reserved;
    CUdeviceptr data;   /* offset 0 of the parameter buffer */
    uint32_t n;         /* offset 8 */
    uint32_t pad;
};

struct saxpy_packet {
    uint32_t grid[3], block[3], shared_mem, reserved;
    float a;            /* offset 0 */
    uint32_t pad;
    CUdeviceptr x;      /* offset 8 */
    CUdeviceptr y;      /* offset 16 */
    uint32_t n;         /* offset 24 */
    uint32_t pad2;
};

static void compute(const char *ptx_path)
{
    enum { N = 1 << 20 };
    int version = 0;
    CHECK_CU(cuabi_driver_version(&version));
    printf("driver version %d, library %s\n", version, cuabi_driver_path());

    CHECK_CU(cuabi_cuInit(0));
    int devices = 0;
    CHECK_CU(cuabi_cuDeviceGetCount(&devices));
    check(devices > 0, "at least one device", CUDA_ERROR_NO_DEVICE);
    CUdevice dev;
    CHECK_CU(cuabi_cuDeviceGet(&dev, 0));
    char name[256];
    CHECK_CU(cuabi_cuDeviceGetName(name, (int)sizeof name, dev));
    printf("device 0: %s\n", name);

    CUcontext ctx;
    CHECK_CU(cuabi_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuabi_cuCtxSetCurrent(ctx));

    char *ptx = read_file(ptx_path);
    check(ptx != NULL, "read kernels.ptx", CUDA_ERROR_FILE_NOT_FOUND);
    if (!ptx)
        return;
    CUmodule module;
    CUresult r = cuabi_cuModuleLoadData(&module, ptx);
    free(ptx);
    check(r == CUDA_SUCCESS, "cuModuleLoadData(kernels.ptx)", r);
    if (r != CUDA_SUCCESS)
        return;
    CUfunction add_one, saxpy;
    CHECK_CU(cuabi_cuModuleGetFunction(&add_one, module, "add_one"));
    CHECK_CU(cuabi_cuModuleGetFunction(&saxpy, module, "saxpy"));

    uint32_t *host = malloc(N * sizeof *host);
    float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys);
    if (!host || !xs || !ys) {
        check(0, "host allocation", CUDA_ERROR_OUT_OF_MEMORY);
        return;
    }
    for (uint32_t i = 0; i < N; i++) {
        host[i] = i;
        xs[i] = (float)i;
        ys[i] = 1.0f;
    }
    CUdeviceptr d_data, d_x, d_y;
    CHECK_CU(cuabi_cuMemAlloc(&d_data, N * sizeof *host));
    CHECK_CU(cuabi_cuMemAlloc(&d_x, N * sizeof *xs));
    CHECK_CU(cuabi_cuMemAlloc(&d_y, N * sizeof *ys));
    CHECK_CU(cuabi_cuMemcpyHtoD(d_data, host, N * sizeof *host));
    CHECK_CU(cuabi_cuMemcpyHtoD(d_x, xs, N * sizeof *xs));
    CHECK_CU(cuabi_cuMemcpyHtoD(d_y, ys, N * sizeof *ys));

    /* add_one through the plain forwarder, then through the packed entry: +2 in all. */
    unsigned int n = N;
    void *params[] = { &d_data, &n };
    CHECK_CU(cuabi_cuLaunchKernel(add_one, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    struct add_one_packet p1 = { { N / 256, 1, 1 }, { 256, 1, 1 }, 0, 0, d_data, N, 0 };
    /* the parameter buffer ends where the kernel's last parameter ends */
    CHECK_CU(cuabi_launch_packed(add_one, NULL, &p1, offsetof(struct add_one_packet, pad)));

    struct saxpy_packet p2 = { { N / 256, 1, 1 }, { 256, 1, 1 }, 0, 0, 2.0f, 0, d_x, d_y, N, 0 };
    CHECK_CU(cuabi_launch_packed(saxpy, NULL, &p2, offsetof(struct saxpy_packet, pad2)));
    CHECK_CU(cuabi_cuCtxSynchronize());

    CHECK_CU(cuabi_cuMemcpyDtoH(host, d_data, N * sizeof *host));
    CHECK_CU(cuabi_cuMemcpyDtoH(ys, d_y, N * sizeof *ys));
    size_t bad_int = 0, bad_float = 0;
    for (uint32_t i = 0; i < N; i++) {
        bad_int += host[i] != i + 2;
        bad_float += ys[i] != 2.0f * (float)i + 1.0f;
    }
    check(bad_int == 0, "add_one twice (cuLaunchKernel + packed) gives i + 2", CUDA_ERROR_UNKNOWN);
    check(bad_float == 0, "saxpy (packed) gives 2 * x + y", CUDA_ERROR_UNKNOWN);

    /* A header that lies about its size is refused, not launched. */
    r = cuabi_launch_packed(add_one, NULL, &p1, 16);
    check(r != CUDA_SUCCESS, "packed launch shorter than its header is refused", r);

    CHECK_CU(cuabi_cuMemFree(d_data));
    CHECK_CU(cuabi_cuMemFree(d_x));
    CHECK_CU(cuabi_cuMemFree(d_y));
    CHECK_CU(cuabi_cuModuleUnload(module));
    CHECK_CU(cuabi_cuDevicePrimaryCtxRelease(dev));
    free(host);
    free(xs);
    free(ys);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/kernels.ptx\n", argv[0]);
        return 2;
    }
    CUresult r = cuabi_load(NULL);
    printf("%s\n", cuabi_driver_report());
    check(r == CUDA_SUCCESS, "cuabi_load", r);
    if (r == CUDA_SUCCESS) {
        resolve_all();
        compute(argv[1]);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

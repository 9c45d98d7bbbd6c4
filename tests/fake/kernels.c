/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake's kernels: host functions standing in for device code. A module
 * image names them (README.md); a launch runs the host function once, and it
 * does the work of the whole grid. Like the usual one-dimensional CUDA kernel,
 * each computes element i for i = blockIdx.x * blockDim.x + threadIdx.x, so a
 * grid too small for n elements leaves the rest untouched, as on a GPU.
 *
 * Before touching memory a kernel checks that every range it will access lies
 * inside one allocation the fake made; if not, the launch fails with
 * CUDA_ERROR_ILLEGAL_ADDRESS instead of crashing the test process.
 */
#include "fake_internal.h"

#include <string.h>

static uint64_t launches;

void fake_count_launch(void)
{
    launches++; /* the caller holds the lock */
}

FAKE_EXPORT uint64_t fakecuda_launch_count(void)
{
    fake_lock();
    uint64_t n = launches;
    fake_unlock();
    return n;
}

/* Where sm_90 puts the parameter buffer in its constant bank (c[0x0][0x210]): a parameter is
 * aligned in the bank, not in the buffer, which shows only for alignments above 16 (a
 * 64-byte aligned struct after a pointer lands at offset 48 of the buffer, as on an H200). */
#define FAKE_PARAM_BANK_BASE 0x210u

size_t fake_kernel_layout(const struct fake_kernel *k, size_t offsets[FAKE_KERNEL_MAX_PARAMS])
{
    size_t end = 0;
    for (unsigned i = 0; i < k->nparams; i++) {
        size_t align = k->param_align[i];
        end = (FAKE_PARAM_BANK_BASE + end + align - 1) / align * align - FAKE_PARAM_BANK_BASE;
        offsets[i] = end;
        end += k->param_size[i];
    }
    return end;
}

/* ------------------------------------------------------------------ helpers */

static uint64_t threads_x(const struct fake_launch *l)
{
    return (uint64_t)l->grid[0] * l->block[0];
}

static uint64_t elements(const struct fake_launch *l, uint64_t n)
{
    uint64_t t = threads_x(l);
    return n < t ? n : t;
}

/* Parameter values are read with memcpy: a packed buffer need not align them
 * for the host. */
#define DEFINE_ARG(name, type) \
    static type name(void *const *args, unsigned i) \
    { \
        type v; \
        memcpy(&v, args[i], sizeof v); \
        return v; \
    }
DEFINE_ARG(arg_u8, unsigned char)
DEFINE_ARG(arg_u16, unsigned short)
DEFINE_ARG(arg_i32, int)
DEFINE_ARG(arg_u32, unsigned)
DEFINE_ARG(arg_size, size_t)
DEFINE_ARG(arg_f32, float)
DEFINE_ARG(arg_f64, double)
DEFINE_ARG(arg_ptr, void *)

static int range_ok(const void *p, uint64_t bytes)
{
    if (bytes == 0)
        return 1;
    return bytes <= SIZE_MAX && fake_find_allocation((uintptr_t)p, (size_t)bytes) != NULL;
}

/* ------------------------------------------------------------------ kernels */

static CUresult run_empty(const struct fake_launch *l, void *const *args)
{
    (void)l;
    (void)args;
    return CUDA_SUCCESS;
}

static CUresult run_saxpy(const struct fake_launch *l, void *const *args)
{
    float a = arg_f32(args, 0);
    const float *x = arg_ptr(args, 1);
    float *y = arg_ptr(args, 2);
    int n = arg_i32(args, 3);
    uint64_t m = n > 0 ? elements(l, (uint64_t)n) : 0;
    if (!range_ok(x, m * sizeof *x) || !range_ok(y, m * sizeof *y))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

static CUresult run_add_f32(const struct fake_launch *l, void *const *args)
{
    const float *a = arg_ptr(args, 0);
    const float *b = arg_ptr(args, 1);
    float *out = arg_ptr(args, 2);
    int n = arg_i32(args, 3);
    uint64_t m = n > 0 ? elements(l, (uint64_t)n) : 0;
    if (!range_ok(a, m * sizeof *a) || !range_ok(b, m * sizeof *b) || !range_ok(out, m * sizeof *out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        out[i] = a[i] + b[i];
    return CUDA_SUCCESS;
}

static CUresult run_fill_u32(const struct fake_launch *l, void *const *args)
{
    unsigned *p = arg_ptr(args, 0);
    unsigned v = arg_u32(args, 1);
    uint64_t m = elements(l, arg_size(args, 2));
    if (!range_ok(p, m * sizeof *p))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}

static CUresult run_add_u32(const struct fake_launch *l, void *const *args)
{
    unsigned *p = arg_ptr(args, 0);
    unsigned v = arg_u32(args, 1);
    uint64_t m = elements(l, arg_size(args, 2));
    if (!range_ok(p, m * sizeof *p))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        p[i] += v;
    return CUDA_SUCCESS;
}

static CUresult run_iota_u32(const struct fake_launch *l, void *const *args)
{
    unsigned *p = arg_ptr(args, 0);
    uint64_t m = elements(l, arg_size(args, 1));
    if (!range_ok(p, m * sizeof *p))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        p[i] = (unsigned)i;
    return CUDA_SUCCESS;
}

static CUresult run_scale_f64(const struct fake_launch *l, void *const *args)
{
    double *x = arg_ptr(args, 0);
    double s = arg_f64(args, 1);
    uint64_t m = elements(l, arg_size(args, 2));
    if (!range_ok(x, m * sizeof *x))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < m; i++)
        x[i] *= s;
    return CUDA_SUCCESS;
}

/* Writes its scalar arguments out, so a test sees exactly what arrived:
 * out[0] = a, out[1] = the bits of b, out[2] = c, out[3] = d sign-extended. */
static CUresult run_store_mixed(const struct fake_launch *l, void *const *args)
{
    (void)l;
    unsigned char a = arg_u8(args, 0);
    double b = arg_f64(args, 1);
    unsigned short c = arg_u16(args, 2);
    int d = arg_i32(args, 3);
    unsigned long long *out = arg_ptr(args, 4);
    if (!range_ok(out, 4 * sizeof *out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    uint64_t bits;
    memcpy(&bits, &b, sizeof bits);
    out[0] = a;
    out[1] = bits;
    out[2] = c;
    out[3] = (unsigned long long)(long long)d;
    return CUDA_SUCCESS;
}

/* out[0..2] = grid, out[3..5] = block, out[6] = dynamic shared memory bytes. */
static CUresult run_launch_info(const struct fake_launch *l, void *const *args)
{
    unsigned *out = arg_ptr(args, 0);
    if (!range_ok(out, 7 * sizeof *out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int i = 0; i < 3; i++) {
        out[i] = l->grid[i];
        out[3 + i] = l->block[i];
    }
    out[6] = l->shared_mem;
    return CUDA_SUCCESS;
}

/* read_map(unsigned long long *out, CUtensorMap map, int n): out[i] = the map's i-th
 * 64-bit word for i < n (at most 16), as a kernel taking a tensor map by value reads it. */
static CUresult run_read_map(const struct fake_launch *l, void *const *args)
{
    (void)l;
    unsigned long long *out = arg_ptr(args, 0);
    int n = arg_i32(args, 2);
    if (n < 0 || n > 16 || !range_ok(out, (size_t)n * sizeof *out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    memcpy(out, args[1], (size_t)n * sizeof *out);
    return CUDA_SUCCESS;
}

/* A graph's conditional value, set as device code does with
 * cudaGraphSetConditional (graph.c). */
static CUresult run_set_condition(const struct fake_launch *l, void *const *args)
{
    (void)l;
    return fake_set_conditional(arg_size(args, 0), arg_u32(args, 1));
}

/* One round of a counting loop: ++*counter, and the condition stays
 * non-zero while *counter < limit. */
static CUresult run_count_to(const struct fake_launch *l, void *const *args)
{
    (void)l;
    unsigned *counter = arg_ptr(args, 1);
    if (!range_ok(counter, sizeof *counter))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    *counter += 1;
    return fake_set_conditional(arg_size(args, 0), *counter < arg_u32(args, 2));
}

static const struct fake_kernel kernels[] = {
    { "empty", 0, { 0 }, { 0 }, "empty()", run_empty },
    { "saxpy", 4, { 4, 8, 8, 4 }, { 4, 8, 8, 4 },
      "saxpy(float a, const float *x, float *y, int n)", run_saxpy },
    { "add_f32", 4, { 8, 8, 8, 4 }, { 8, 8, 8, 4 },
      "add_f32(const float *a, const float *b, float *out, int n)", run_add_f32 },
    { "fill_u32", 3, { 8, 4, 8 }, { 8, 4, 8 },
      "fill_u32(unsigned *p, unsigned v, size_t n)", run_fill_u32 },
    { "add_u32", 3, { 8, 4, 8 }, { 8, 4, 8 },
      "add_u32(unsigned *p, unsigned v, size_t n)", run_add_u32 },
    { "iota_u32", 2, { 8, 8 }, { 8, 8 },
      "iota_u32(unsigned *p, size_t n)", run_iota_u32 },
    { "scale_f64", 3, { 8, 8, 8 }, { 8, 8, 8 },
      "scale_f64(double *x, double s, size_t n)", run_scale_f64 },
    { "store_mixed", 5, { 1, 8, 2, 4, 8 }, { 1, 8, 2, 4, 8 },
      "store_mixed(unsigned char a, double b, unsigned short c, int d, unsigned long long *out)",
      run_store_mixed },
    { "launch_info", 1, { 8 }, { 8 },
      "launch_info(unsigned *out)", run_launch_info },
    { "read_map", 3, { 8, 128, 4 }, { 8, 64, 4 },
      "read_map(unsigned long long *out, const __grid_constant__ CUtensorMap map, int n)", run_read_map },
    { "set_condition", 2, { 8, 4 }, { 8, 4 },
      "set_condition(unsigned long long handle, unsigned value)", run_set_condition },
    { "count_to", 3, { 8, 8, 4 }, { 8, 8, 4 },
      "count_to(unsigned long long handle, unsigned *counter, unsigned limit)", run_count_to },
    /* the empty kernels of bench/kernels.ptx, so bench/run --fake can launch */
    { "empty_0", 0, { 0 }, { 0 }, "empty_0()", run_empty },
    { "empty_3", 3, { 8, 4, 4 }, { 8, 4, 4 },
      "empty_3(unsigned long long p, unsigned n, float f)", run_empty },
    { "empty_16", 16, { 8, 8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4 },
      { 8, 8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4 },
      "empty_16(8 x unsigned long long, 4 x unsigned, 4 x float)", run_empty },
};

const struct fake_kernel *fake_find_kernel(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (strlen(kernels[i].name) == len && memcmp(kernels[i].name, name, len) == 0)
            return &kernels[i];
    return NULL;
}

size_t fake_kernel_names(char *buffer, size_t size)
{
    size_t used = 0;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        size_t len = strlen(kernels[i].name);
        if (size != 0 && used + len + 2 < size) {
            memcpy(buffer + used, kernels[i].name, len);
            used += len;
            if (i + 1 < sizeof kernels / sizeof kernels[0])
                buffer[used++] = ' ';
        }
    }
    if (size != 0)
        buffer[used] = '\0';
    return used;
}

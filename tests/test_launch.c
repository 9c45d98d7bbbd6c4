/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuabi_launch_packed: a 32-byte header (grid, block, shared memory,
 * reserved) followed by the kernel's parameter buffer, one call into C per
 * launch. Checked on the fake driver, whose kernels report what they were
 * given (launch_info, store_mixed) or compute something (saxpy).
 */
#define _GNU_SOURCE
#include "support.h"

#include <string.h>

static CUmodule mod;

static int setup(void **state)
{
    (void)state;
    setup_primary_context();
    return cuabi_cuModuleLoadData(&mod, fake_module_image) == CUDA_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    check_cu(cuabi_cuModuleUnload(mod));
    release_primary_context();
    return 0;
}

static CUfunction kernel(const char *name)
{
    CUfunction f;
    check_cu(cuabi_cuModuleGetFunction(&f, mod, name));
    return f;
}

/* Writes the header into a packet and returns where the parameters start. */
static unsigned char *header(unsigned char *packet, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared)
{
    cuabi_launch_header h = { { gx, gy, gz }, { bx, by, bz }, shared, 0 };
    memcpy(packet, &h, sizeof h);
    return packet + CUABI_LAUNCH_HEADER_SIZE;
}

static void test_header_reaches_the_kernel(void **state)
{
    (void)state;
    CUdeviceptr out;
    unsigned got[7];
    check_cu(cuabi_cuMemAlloc(&out, sizeof got));
    unsigned char packet[CUABI_LAUNCH_HEADER_SIZE + 8];
    unsigned char *params = header(packet, 7, 5, 3, 16, 8, 4, 1024);
    memcpy(params, &out, sizeof out);
    check_cu(cuabi_launch_packed(kernel("launch_info"), NULL, packet, sizeof packet));
    check_cu(cuabi_cuMemcpyDtoH(got, out, sizeof got));
    const unsigned expected[7] = { 7, 5, 3, 16, 8, 4, 1024 };
    assert_memory_equal(got, expected, sizeof got);
    check_cu(cuabi_cuMemFree(out));
}

static void test_parameters_at_natural_alignment(void **state)
{
    (void)state;
    /* store_mixed(unsigned char a, double b, unsigned short c, int d, unsigned long long *out):
     * offsets 0, 8, 16, 20, 24; 32 bytes. */
    CUdeviceptr out;
    unsigned long long got[4];
    check_cu(cuabi_cuMemAlloc(&out, sizeof got));
    unsigned char packet[CUABI_LAUNCH_HEADER_SIZE + 32];
    memset(packet, 0xEE, sizeof packet);
    unsigned char *p = header(packet, 1, 1, 1, 1, 1, 1, 0);
    unsigned char a = 0xA7;
    double b = -1.5e300;
    unsigned short c = 0xBEEF;
    int d = -123456;
    memcpy(p + 0, &a, sizeof a);
    memcpy(p + 8, &b, sizeof b);
    memcpy(p + 16, &c, sizeof c);
    memcpy(p + 20, &d, sizeof d);
    memcpy(p + 24, &out, sizeof out);
    check_cu(cuabi_launch_packed(kernel("store_mixed"), NULL, packet, sizeof packet));
    check_cu(cuabi_cuMemcpyDtoH(got, out, sizeof got));
    unsigned long long bbits;
    memcpy(&bbits, &b, sizeof bbits);
    assert_int_equal(got[0], 0xA7);
    assert_true(got[1] == bbits);
    assert_int_equal(got[2], 0xBEEF);
    assert_true(got[3] == (unsigned long long)(long long)-123456);
    check_cu(cuabi_cuMemFree(out));
}

static void test_saxpy_and_unaligned_packet(void **state)
{
    (void)state;
    enum { N = 300 };
    float hx[N], hy[N];
    for (int i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 0.5f;
    }
    CUdeviceptr x, y;
    check_cu(cuabi_cuMemAlloc(&x, sizeof hx));
    check_cu(cuabi_cuMemAlloc(&y, sizeof hy));
    check_cu(cuabi_cuMemcpyHtoD(x, hx, sizeof hx));
    check_cu(cuabi_cuMemcpyHtoD(y, hy, sizeof hy));
    /* The packet may sit at any address: start it one byte into a buffer. */
    unsigned char storage[1 + CUABI_LAUNCH_HEADER_SIZE + 28];
    unsigned char *packet = storage + 1;
    unsigned char *p = header(packet, 3, 1, 1, 128, 1, 1, 0);
    float alpha = 3.0f;
    int n = N;
    memcpy(p + 0, &alpha, 4);
    memcpy(p + 8, &x, 8);
    memcpy(p + 16, &y, 8);
    memcpy(p + 24, &n, 4);
    CUstream s;
    check_cu(cuabi_cuStreamCreate(&s, 0));
    check_cu(cuabi_launch_packed(kernel("saxpy"), s, packet, CUABI_LAUNCH_HEADER_SIZE + 28));
    check_cu(cuabi_cuStreamSynchronize(s));
    check_cu(cuabi_cuMemcpyDtoH(hy, y, sizeof hy));
    for (int i = 0; i < N; i++)
        assert_true(hy[i] == 3.0f * (float)i + 0.5f);
    check_cu(cuabi_cuStreamDestroy(s));
    check_cu(cuabi_cuMemFree(x));
    check_cu(cuabi_cuMemFree(y));
}

static void test_kernel_without_parameters(void **state)
{
    (void)state;
    unsigned char packet[CUABI_LAUNCH_HEADER_SIZE];
    header(packet, 1, 1, 1, 32, 1, 1, 0);
    uint64_t launches = fake_launch_count();
    check_cu(cuabi_launch_packed(kernel("empty"), NULL, packet, sizeof packet));
    assert_int_equal(fake_launch_count(), launches + 1);
}

static void test_bad_packets(void **state)
{
    (void)state;
    unsigned char packet[CUABI_LAUNCH_HEADER_SIZE + 24];
    memset(packet, 0, sizeof packet);
    header(packet, 1, 1, 1, 1, 1, 1, 0);
    CUfunction fill = kernel("fill_u32");
    uint64_t launches = fake_launch_count();
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_launch_packed(fill, NULL, NULL, sizeof packet));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_launch_packed(fill, NULL, packet, CUABI_LAUNCH_HEADER_SIZE - 1));
    /* The parameter buffer is shorter than the kernel's parameters: the driver refuses. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_launch_packed(fill, NULL, packet, CUABI_LAUNCH_HEADER_SIZE + 16));
    /* The reserved word must be 0. */
    cuabi_launch_header h = { { 1, 1, 1 }, { 1, 1, 1 }, 0, 1 };
    memcpy(packet, &h, sizeof h);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_launch_packed(fill, NULL, packet, sizeof packet));
    /* A zero grid. */
    header(packet, 0, 1, 1, 1, 1, 1, 0);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_launch_packed(fill, NULL, packet, sizeof packet));
    assert_int_equal(fake_launch_count(), launches);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_reaches_the_kernel),
        cmocka_unit_test(test_parameters_at_natural_alignment),
        cmocka_unit_test(test_saxpy_and_unaligned_packet),
        cmocka_unit_test(test_kernel_without_parameters),
        cmocka_unit_test(test_bad_packets),
    };
    return cmocka_run_group_tests_name("cuabi_launch_packed", tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The functional fake driver, driven through cuabi's forwarders as a program
 * (or the Python layer) would: devices, contexts, host-backed memory, copies,
 * memsets, streams, events, modules, launches, stream capture into graphs,
 * managed-memory prefetch, kernel parameter info, memory pools, and the
 * fake's live-allocation counter (graph editing: test_graphs.c). This is what makes
 * the fake trustworthy for the layers above: it refuses what a driver
 * refuses, and what it computes is checked here.
 */
#define _GNU_SOURCE
#include "support.h"

#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- devices */

static void test_devices(void **state)
{
    (void)state;
    int count = 0, value = 0, version = 0;
    char name[64];
    size_t total = 0;
    CUdevice dev;
    CUuuid uuid;
    check_cu(cuabi_cuDeviceGetCount(&count));
    assert_int_equal(count, 1);
    check_cu(cuabi_cuDeviceGet(&dev, 0));
    assert_cu(CUDA_ERROR_INVALID_DEVICE, cuabi_cuDeviceGet(&dev, 1));
    check_cu(cuabi_cuDeviceGetName(name, sizeof name, dev));
    assert_string_equal(name, "cuabi fake device 0");
    check_cu(cuabi_cuDeviceTotalMem(&total, dev));
    assert_true(total == (size_t)8 << 30);
    check_cu(cuabi_cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    assert_int_equal(value, 32);
    check_cu(cuabi_cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    assert_int_equal(value, 9);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, dev));
    check_cu(cuabi_cuDeviceGetUuid(&uuid, dev));
    assert_memory_equal(uuid.bytes, "cuabi-fake-dev-0", 16);
    check_cu(cuabi_cuDriverGetVersion(&version));
    assert_int_equal(version, 13000);
}

static void test_contexts(void **state)
{
    (void)state;
    CUcontext primary, current, created, popped;
    unsigned long long id1 = 0, id2 = 0;
    CUdevice dev = -1;
    check_cu(cuabi_cuCtxGetCurrent(&primary));
    assert_non_null(primary);

    check_cu(cuabi_cuCtxCreate(&created, NULL, 0, 0));
    check_cu(cuabi_cuCtxGetCurrent(&current));
    assert_ptr_equal(current, created); /* cuCtxCreate pushes */
    check_cu(cuabi_cuCtxGetDevice(&dev));
    assert_int_equal(dev, 0);
    check_cu(cuabi_cuCtxGetId(created, &id1));
    check_cu(cuabi_cuCtxGetId(primary, &id2));
    assert_true(id1 != id2);
    check_cu(cuabi_cuCtxSynchronize());
    check_cu(cuabi_cuCtxPopCurrent(&popped));
    assert_ptr_equal(popped, created);
    check_cu(cuabi_cuCtxGetCurrent(&current));
    assert_ptr_equal(current, primary);
    assert_int_equal(fake_live_objects("contexts"), 1);
    check_cu(cuabi_cuCtxDestroy(created));
    assert_int_equal(fake_live_objects("contexts"), 0);
    /* A destroyed context is no longer a context. */
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuCtxPushCurrent(created));
    /* The primary context is released, not destroyed. */
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuCtxDestroy(primary));
}

/* The deprecated usage count that PyCUDA still releases its contexts with. */
static void test_context_attach_detach(void **state)
{
    (void)state;
    CUcontext primary, created, attached, current;
    int major = 0, minor = -1;
    check_cu(cuabi_cuDeviceComputeCapability(&major, &minor, 0));
    assert_int_equal(major, 9);
    assert_int_equal(minor, 0);
    assert_cu(CUDA_ERROR_INVALID_DEVICE, cuabi_cuDeviceComputeCapability(&major, &minor, 1));
    check_cu(cuabi_cuCtxGetCurrent(&primary));
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuCtxAttach(&attached, 0)); /* primary */
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuCtxDetach(primary));

    check_cu(cuabi_cuCtxCreate(&created, NULL, 0, 0));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuCtxAttach(&attached, 1));
    check_cu(cuabi_cuCtxAttach(&attached, 0));
    assert_ptr_equal(attached, created);
    check_cu(cuabi_cuCtxDetach(created)); /* usage 2 -> 1: stays, and stays current */
    assert_int_equal(fake_live_objects("contexts"), 1);
    check_cu(cuabi_cuCtxGetCurrent(&current));
    assert_ptr_equal(current, created);
    check_cu(cuabi_cuCtxPopCurrent(NULL));
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuCtxDetach(created)); /* not current */
    check_cu(cuabi_cuCtxPushCurrent(created));
    check_cu(cuabi_cuCtxDetach(created)); /* usage 1 -> 0: destroyed and popped */
    assert_int_equal(fake_live_objects("contexts"), 0);
    check_cu(cuabi_cuCtxGetCurrent(&current));
    assert_ptr_equal(current, primary);
}

/* ------------------------------------------------------------------ memory */

static void test_memory_roundtrip(void **state)
{
    (void)state;
    uint64_t live = fake_live_allocations();
    CUdeviceptr a, b;
    unsigned host[64], back[64];
    for (unsigned i = 0; i < 64; i++)
        host[i] = i * 7u + 1u;
    check_cu(cuabi_cuMemAlloc(&a, sizeof host));
    check_cu(cuabi_cuMemAlloc(&b, sizeof host));
    assert_int_equal(fake_live_allocations(), live + 2);
    check_cu(cuabi_cuMemcpyHtoD(a, host, sizeof host));
    check_cu(cuabi_cuMemcpyDtoD(b, a, sizeof host));
    memset(back, 0, sizeof back);
    check_cu(cuabi_cuMemcpyDtoH(back, b, sizeof back));
    assert_memory_equal(back, host, sizeof host);

    /* Device pointers are host addresses: the fake's memory can be read directly. */
    assert_memory_equal((const void *)(uintptr_t)a, host, sizeof host);

    check_cu(cuabi_cuMemsetD32(a, 0xDEADBEEFu, 64));
    check_cu(cuabi_cuMemcpyDtoH(back, a, sizeof back));
    for (unsigned i = 0; i < 64; i++)
        assert_int_equal(back[i], 0xDEADBEEFu);
    check_cu(cuabi_cuMemsetD8(a + 1, 0x11, 2));
    check_cu(cuabi_cuMemcpyDtoH(back, a, 4));
    assert_int_equal(back[0], 0xDE1111EFu);
    check_cu(cuabi_cuMemsetD16(a, 0x2233, 2));
    check_cu(cuabi_cuMemcpyDtoH(back, a, 4));
    assert_int_equal(back[0], 0x22332233u);
    /* Misaligned 16/32-bit memsets are refused, as by the driver. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemsetD32(a + 2, 0, 1));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemsetD16(a + 1, 0, 1));

    /* Copies that leave the allocation are refused instead of corrupting memory. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemcpyHtoD(a + 8, host, sizeof host));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemcpyDtoH(back, a + 4, sizeof back));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemcpyHtoD((CUdeviceptr)(uintptr_t)host, host, 4));

    /* cuMemcpy with unified addresses: device to host and host to device. */
    check_cu(cuabi_cuMemcpy((CUdeviceptr)(uintptr_t)back, b, sizeof back));
    assert_memory_equal(back, host, sizeof host);

    CUdeviceptr base = 0;
    size_t size = 0;
    check_cu(cuabi_cuMemGetAddressRange(&base, &size, a + 100));
    assert_true(base == a);
    assert_int_equal(size, sizeof host);

    check_cu(cuabi_cuMemFree(a));
    check_cu(cuabi_cuMemFree(b));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemFree(a)); /* freed twice */
    assert_int_equal(fake_live_allocations(), live);
}

static void test_memory_kinds(void **state)
{
    (void)state;
    uint64_t live = fake_live_allocations();
    void *host = NULL, *mapped = NULL;
    CUdeviceptr managed, pitched, dev_alias;
    size_t pitch = 0, free_before = 0, free_after = 0, total = 0;
    unsigned type = 0, is_managed = 7;

    check_cu(cuabi_cuMemGetInfo(&free_before, &total));
    check_cu(cuabi_cuMemAllocHost(&host, 1000));
    check_cu(cuabi_cuMemHostAlloc(&mapped, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    check_cu(cuabi_cuMemHostGetDevicePointer(&dev_alias, mapped, 0));
    assert_true(dev_alias == (CUdeviceptr)(uintptr_t)mapped);
    check_cu(cuabi_cuMemAllocManaged(&managed, 512, CU_MEM_ATTACH_GLOBAL));
    check_cu(cuabi_cuMemAllocPitch(&pitched, &pitch, 100, 3, 4));
    assert_int_equal(pitch, 512);
    assert_int_equal(fake_live_allocations(), live + 4);
    check_cu(cuabi_cuMemGetInfo(&free_after, &total));
    assert_true(free_after < free_before); /* host memory does not count, the rest does */

    check_cu(cuabi_cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)host));
    assert_int_equal(type, CU_MEMORYTYPE_HOST);
    check_cu(cuabi_cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pitched));
    assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
    check_cu(cuabi_cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed));
    assert_int_equal(is_managed, 1);
    unsigned int local = 0;
    assert_cu(CUDA_ERROR_INVALID_VALUE,
              cuabi_cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&local));

    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemFreeHost(&local));
    check_cu(cuabi_cuMemFreeHost(host));
    check_cu(cuabi_cuMemFreeHost(mapped));
    check_cu(cuabi_cuMemFree(managed));
    check_cu(cuabi_cuMemFree(pitched));
    assert_int_equal(fake_live_allocations(), live);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemAlloc(&managed, 0));
    assert_cu(CUDA_ERROR_OUT_OF_MEMORY, cuabi_cuMemAlloc(&managed, (size_t)64 << 30));
}

static void test_memory_needs_context(void **state)
{
    (void)state;
    CUdeviceptr p;
    CUcontext saved;
    check_cu(cuabi_cuCtxPopCurrent(&saved));
    assert_cu(CUDA_ERROR_INVALID_CONTEXT, cuabi_cuMemAlloc(&p, 16));
    check_cu(cuabi_cuCtxPushCurrent(saved));
}

/* ---------------------------------------------------------- streams/events */

static void test_streams_and_events(void **state)
{
    (void)state;
    CUstream s, prio;
    CUevent start, stop, untimed;
    unsigned flags = 99;
    int priority = 99, least, greatest;
    float ms = -1.0f;
    unsigned char src[256], dst[256];
    CUdeviceptr d;
    for (unsigned i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(255 - i);

    check_cu(cuabi_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    check_cu(cuabi_cuStreamGetFlags(s, &flags));
    assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
    check_cu(cuabi_cuCtxGetStreamPriorityRange(&least, &greatest));
    check_cu(cuabi_cuStreamCreateWithPriority(&prio, 0, greatest - 10));
    check_cu(cuabi_cuStreamGetPriority(prio, &priority));
    assert_int_equal(priority, greatest); /* clamped into the range */
    assert_int_equal(fake_live_objects("streams"), 2);

    check_cu(cuabi_cuEventCreate(&start, CU_EVENT_DEFAULT));
    check_cu(cuabi_cuEventCreate(&stop, CU_EVENT_DEFAULT));
    check_cu(cuabi_cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuEventElapsedTime(&ms, start, stop)); /* not recorded */

    check_cu(cuabi_cuMemAlloc(&d, sizeof src));
    check_cu(cuabi_cuEventRecord(start, s));
    check_cu(cuabi_cuMemcpyHtoDAsync(d, src, sizeof src, s));
    check_cu(cuabi_cuMemsetD8Async(d, 0x5A, 16, s));
    check_cu(cuabi_cuMemcpyDtoHAsync(dst, d, sizeof dst, s));
    check_cu(cuabi_cuEventRecord(stop, s));
    check_cu(cuabi_cuEventRecord(untimed, s));
    check_cu(cuabi_cuStreamWaitEvent(prio, stop, 0));
    check_cu(cuabi_cuStreamSynchronize(s));
    check_cu(cuabi_cuStreamQuery(s));
    check_cu(cuabi_cuEventSynchronize(stop));
    check_cu(cuabi_cuEventQuery(stop));
    for (unsigned i = 0; i < 16; i++)
        assert_int_equal(dst[i], 0x5A);
    assert_memory_equal(dst + 16, src + 16, sizeof src - 16);

    check_cu(cuabi_cuEventElapsedTime(&ms, start, stop));
    assert_true(ms >= 0.0f && ms < 10000.0f);
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuEventElapsedTime(&ms, start, untimed));

    /* The default streams are valid everywhere a stream is. */
    check_cu(cuabi_cuMemsetD8Async(d, 1, 1, NULL));
    check_cu(cuabi_cuMemsetD8Async(d, 1, 1, CU_STREAM_LEGACY));
    check_cu(cuabi_cuMemsetD8Async(d, 1, 1, CU_STREAM_PER_THREAD));
    check_cu(cuabi_cuStreamSynchronize(NULL));

    check_cu(cuabi_cuEventDestroy(start));
    check_cu(cuabi_cuEventDestroy(stop));
    check_cu(cuabi_cuEventDestroy(untimed));
    check_cu(cuabi_cuStreamDestroy(s));
    check_cu(cuabi_cuStreamDestroy(prio));
    check_cu(cuabi_cuMemFree(d));
    assert_int_equal(fake_live_objects("streams"), 0);
    assert_int_equal(fake_live_objects("events"), 0);
    /* A destroyed stream is an invalid handle, not a crash. */
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuStreamSynchronize(s));
}

static void count_calls(void *user_data)
{
    ++*(int *)user_data;
}

static void test_host_function(void **state)
{
    (void)state;
    int calls = 0;
    check_cu(cuabi_cuLaunchHostFunc(NULL, count_calls, &calls));
    assert_int_equal(calls, 1);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchHostFunc(NULL, NULL, &calls));
}

/* ---------------------------------------------------------- modules/launch */

static void test_module_and_launch(void **state)
{
    (void)state;
    CUmodule mod;
    CUfunction saxpy, fill, nope;
    CUdeviceptr x, y, counter;
    size_t counter_size = 0;
    float hx[100], hy[100];
    const char *fname = NULL;
    int nregs = 0;
    unsigned count = 0;
    for (int i = 0; i < 100; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
    }
    uint64_t launches = fake_launch_count();
    check_cu(cuabi_cuModuleLoadData(&mod, fake_module_image));
    assert_int_equal(fake_live_objects("modules"), 1);
    check_cu(cuabi_cuModuleGetFunctionCount(&count, mod));
    assert_int_equal(count, 8);
    check_cu(cuabi_cuModuleGetFunction(&saxpy, mod, "saxpy"));
    check_cu(cuabi_cuModuleGetFunction(&fill, mod, "fill_u32"));
    assert_cu(CUDA_ERROR_NOT_FOUND, cuabi_cuModuleGetFunction(&nope, mod, "no_such_kernel"));
    check_cu(cuabi_cuFuncGetName(&fname, saxpy));
    assert_string_equal(fname, "saxpy");
    check_cu(cuabi_cuFuncGetAttribute(&nregs, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy));
    assert_int_equal(nregs, 1024);
    check_cu(cuabi_cuFuncSetBlockShape(saxpy, 32, 8, 4));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuFuncSetBlockShape(saxpy, 64, 8, 4)); /* 2048 threads */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuFuncSetBlockShape(saxpy, 0, 1, 1));
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuFuncSetBlockShape((CUfunction)mod, 1, 1, 1));
    check_cu(cuabi_cuModuleGetGlobal(&counter, &counter_size, mod, "counter"));
    assert_int_equal(counter_size, 16);
    assert_int_equal(*(const unsigned char *)(uintptr_t)counter, 0); /* globals start zeroed */

    check_cu(cuabi_cuMemAlloc(&x, sizeof hx));
    check_cu(cuabi_cuMemAlloc(&y, sizeof hy));
    check_cu(cuabi_cuMemcpyHtoD(x, hx, sizeof hx));
    check_cu(cuabi_cuMemcpyHtoD(y, hy, sizeof hy));

    /* kernelParams: one pointer per parameter. 2 blocks of 32 threads cover
     * only 64 of the 100 elements, as on a GPU. */
    float a = 2.0f;
    int n = 100;
    void *params[] = { &a, &x, &y, &n };
    check_cu(cuabi_cuLaunchKernel(saxpy, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    check_cu(cuabi_cuMemcpyDtoH(hy, y, sizeof hy));
    for (int i = 0; i < 100; i++)
        assert_true(hy[i] == (i < 64 ? 2.0f * (float)i + 1.0f : 1.0f));

    /* extra: the packed parameter buffer (the kernel knows its layout). */
    struct {
        unsigned *p;
        unsigned v;
        size_t n;
    } packed = { (unsigned *)(uintptr_t)y, 0xC0FFEEu, 100 };
    size_t packed_size = sizeof packed;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                      CU_LAUNCH_PARAM_END };
    check_cu(cuabi_cuLaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
    unsigned words[100];
    check_cu(cuabi_cuMemcpyDtoH(words, y, sizeof words));
    for (int i = 0; i < 100; i++)
        assert_int_equal(words[i], 0xC0FFEEu);
    assert_int_equal(fake_launch_count(), launches + 2);

    /* Launches the driver refuses. */
    size_t short_size = sizeof packed - 8;
    void *short_extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                            CU_LAUNCH_PARAM_END };
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, short_extra));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(saxpy, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(saxpy, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuLaunchKernel(saxpy, 1, 1, 1, 1, 1, 1, 1 << 20, NULL, params, NULL));
    /* A kernel given memory the driver never allocated faults, it does not crash. */
    CUdeviceptr wild = (CUdeviceptr)(uintptr_t)hx;
    void *wild_params[] = { &a, &wild, &y, &n };
    assert_cu(CUDA_ERROR_ILLEGAL_ADDRESS, cuabi_cuLaunchKernel(saxpy, 1, 1, 1, 100, 1, 1, 0, NULL, wild_params, NULL));

    check_cu(cuabi_cuMemFree(x));
    check_cu(cuabi_cuMemFree(y));
    uint64_t live = fake_live_allocations();
    check_cu(cuabi_cuModuleUnload(mod));
    assert_int_equal(fake_live_allocations(), live - 1); /* the global went with it */
    assert_int_equal(fake_live_objects("modules"), 0);
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuModuleUnload(mod));
}

static void test_bad_images(void **state)
{
    (void)state;
    CUmodule mod;
    char log[512] = "";
    CUjit_option options[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
    void *values[] = { log, (void *)(uintptr_t)sizeof log };
    assert_cu(CUDA_ERROR_INVALID_IMAGE, cuabi_cuModuleLoadData(&mod, "not a module at all"));
    assert_cu(CUDA_ERROR_INVALID_IMAGE,
              cuabi_cuModuleLoadDataEx(&mod, "fakecuda-module\nkernel warp_drive\n", 2, options, values));
    assert_contains(log, "warp_drive");
    assert_contains(log, "saxpy"); /* the log lists the kernels there are */
    assert_cu(CUDA_ERROR_INVALID_IMAGE, cuabi_cuModuleLoadData(&mod, "fakecuda-module\nkernel saxpy\nkernel saxpy\n"));
    assert_cu(CUDA_ERROR_INVALID_IMAGE, cuabi_cuModuleLoadData(&mod, "fakecuda-module\nglobal g zero\n"));
    static const unsigned char elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
    assert_cu(CUDA_ERROR_NO_BINARY_FOR_GPU, cuabi_cuModuleLoadData(&mod, elf));
    /* PTX whose entry has the wrong parameters for the fake's kernel. */
    assert_cu(CUDA_ERROR_INVALID_PTX,
              cuabi_cuModuleLoadData(&mod, ".version 8.0\n.target sm_90\n.address_size 64\n"
                                           ".visible .entry saxpy(.param .u64 p)\n{\n ret;\n}\n"));
    assert_cu(CUDA_ERROR_FILE_NOT_FOUND, cuabi_cuModuleLoad(&mod, "/no/such/module.ptx"));
    assert_int_equal(fake_live_objects("modules"), 0);
}

static const char saxpy_ptx[] =
    "// a PTX module: the fake maps each .entry to its host kernel\n"
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .global .align 4 .b8 table[64];\n"
    "\n"
    ".visible .entry saxpy(\n"
    "    .param .f32 saxpy_a,\n"
    "    .param .u64 .ptr .global .align 4 saxpy_x,\n"
    "    .param .u64 saxpy_y,\n"
    "    .param .u32 saxpy_n\n"
    ")\n"
    "{\n"
    "    ret;\n"
    "}\n"
    ".visible .entry empty()\n"
    "{\n"
    "    /* nothing */ ret;\n"
    "}\n";

static void test_ptx_and_library(void **state)
{
    (void)state;
    CUmodule mod;
    CUlibrary lib;
    CUkernel kernel;
    CUfunction fn, from_kernel;
    CUdeviceptr table;
    size_t table_size = 0;
    check_cu(cuabi_cuModuleLoadData(&mod, saxpy_ptx));
    check_cu(cuabi_cuModuleGetFunction(&fn, mod, "saxpy"));
    check_cu(cuabi_cuModuleGetFunction(&fn, mod, "empty"));
    check_cu(cuabi_cuModuleGetGlobal(&table, &table_size, mod, "table"));
    assert_int_equal(table_size, 64);
    check_cu(cuabi_cuModuleUnload(mod));

    check_cu(cuabi_cuLibraryLoadData(&lib, saxpy_ptx, NULL, NULL, 0, NULL, NULL, 0));
    check_cu(cuabi_cuLibraryGetKernel(&kernel, lib, "empty"));
    check_cu(cuabi_cuKernelGetFunction(&from_kernel, kernel));
    uint64_t launches = fake_launch_count();
    check_cu(cuabi_cuLaunchKernel(from_kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    /* A CUkernel may be passed where a CUfunction is expected. */
    check_cu(cuabi_cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_int_equal(fake_launch_count(), launches + 2);
    check_cu(cuabi_cuLibraryGetGlobal(&table, &table_size, lib, "table"));
    assert_int_equal(table_size, 64);
    check_cu(cuabi_cuLibraryUnload(lib));
    assert_int_equal(fake_live_objects("modules"), 0);
}

static void test_launch_ex(void **state)
{
    (void)state;
    CUmodule mod;
    CUfunction info;
    CUdeviceptr out;
    unsigned got[7];
    check_cu(cuabi_cuModuleLoadData(&mod, fake_module_image));
    check_cu(cuabi_cuModuleGetFunction(&info, mod, "launch_info"));
    check_cu(cuabi_cuMemAlloc(&out, sizeof got));
    CUlaunchConfig config = { 3, 2, 1, 8, 4, 2, 256, NULL, NULL, 0 };
    void *params[] = { &out };
    check_cu(cuabi_cuLaunchKernelEx(&config, info, params, NULL));
    check_cu(cuabi_cuMemcpyDtoH(got, out, sizeof got));
    const unsigned expected[7] = { 3, 2, 1, 8, 4, 2, 256 };
    assert_memory_equal(got, expected, sizeof got);
    check_cu(cuabi_cuMemFree(out));
    check_cu(cuabi_cuModuleUnload(mod));
}

/* ------------------------------------------------------------------ graphs */

static void test_graph_capture_and_replay(void **state)
{
    (void)state;
    CUmodule mod;
    CUfunction add;
    CUstream s;
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr d;
    CUstreamCaptureStatus status;
    unsigned host[32];
    int host_calls = 0;
    check_cu(cuabi_cuModuleLoadData(&mod, fake_module_image));
    check_cu(cuabi_cuModuleGetFunction(&add, mod, "add_u32"));
    check_cu(cuabi_cuStreamCreate(&s, 0));
    check_cu(cuabi_cuMemAlloc(&d, sizeof host));
    check_cu(cuabi_cuMemsetD32(d, 0, 32));
    uint64_t launches = fake_launch_count();

    check_cu(cuabi_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    check_cu(cuabi_cuStreamIsCapturing(s, &status));
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    unsigned v = 5;
    size_t n = 32;
    void *params[] = { &d, &v, &n };
    check_cu(cuabi_cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    v = 1000; /* parameters were copied at capture: this does not reach the graph */
    check_cu(cuabi_cuMemsetD32Async(d, 7, 1, s));
    check_cu(cuabi_cuLaunchHostFunc(s, count_calls, &host_calls));
    /* Captured, not run. */
    assert_int_equal(fake_launch_count(), launches);
    assert_int_equal(host_calls, 0);
    assert_cu(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuabi_cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    check_cu(cuabi_cuStreamEndCapture(s, &graph));
    check_cu(cuabi_cuStreamIsCapturing(s, &status));
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_NONE);

    size_t count = 0;
    check_cu(cuabi_cuGraphGetNodes(graph, NULL, &count));
    assert_int_equal(count, 3);
    CUgraphNode nodes[3];
    CUgraphNodeType type;
    check_cu(cuabi_cuGraphGetNodes(graph, nodes, &count));
    check_cu(cuabi_cuGraphNodeGetType(nodes[0], &type));
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_KERNEL);
    check_cu(cuabi_cuGraphNodeGetType(nodes[1], &type));
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_MEMSET);
    check_cu(cuabi_cuGraphNodeGetType(nodes[2], &type));
    assert_int_equal(type, CU_GRAPH_NODE_TYPE_HOST);

    check_cu(cuabi_cuGraphInstantiate(&exec, graph, 0));
    check_cu(cuabi_cuGraphDestroy(graph)); /* the executable graph is a snapshot */
    check_cu(cuabi_cuGraphLaunch(exec, s));
    check_cu(cuabi_cuGraphLaunch(exec, s));
    check_cu(cuabi_cuStreamSynchronize(s));
    check_cu(cuabi_cuMemcpyDtoH(host, d, sizeof host));
    assert_int_equal(host[0], 7);
    for (int i = 1; i < 32; i++)
        assert_int_equal(host[i], 10);
    assert_int_equal(fake_launch_count(), launches + 2);
    assert_int_equal(host_calls, 2);

    check_cu(cuabi_cuGraphExecDestroy(exec));
    assert_int_equal(fake_live_objects("graphs"), 0);
    assert_int_equal(fake_live_objects("graph_execs"), 0);

    /* Synchronising a capturing stream is refused and spoils the capture. */
    check_cu(cuabi_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    assert_cu(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuabi_cuStreamSynchronize(s));
    assert_cu(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuabi_cuStreamEndCapture(s, &graph));
    assert_null(graph);
    assert_cu(CUDA_ERROR_ILLEGAL_STATE, cuabi_cuStreamEndCapture(s, &graph));

    check_cu(cuabi_cuMemFree(d));
    check_cu(cuabi_cuStreamDestroy(s));
    check_cu(cuabi_cuModuleUnload(mod));
    assert_int_equal(fake_live_objects("graphs"), 0);
}

/* --------------------------------------------------------- managed memory */

static int last_prefetch(CUmem_range_attribute attribute, CUdeviceptr p, size_t n)
{
    int value = 12345;
    check_cu(cuabi_cuMemRangeGetAttribute(&value, sizeof value, attribute, p, n));
    return value;
}

/* Prefetching checks its arguments and leaves the range's last prefetch location. */
static void test_prefetch(void **state)
{
    (void)state;
    CUdeviceptr m, d;
    CUstream s;
    const CUmemLocation device0 = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    const CUmemLocation host = { .type = CU_MEM_LOCATION_TYPE_HOST, .id = 77 }; /* the id is ignored */
    const CUmem_range_attribute where = CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION;
    check_cu(cuabi_cuMemAllocManaged(&m, 3 * 4096, CU_MEM_ATTACH_GLOBAL));
    check_cu(cuabi_cuMemAlloc(&d, 4096));
    check_cu(cuabi_cuStreamCreate(&s, 0));
    assert_int_equal(last_prefetch(where, m, 3 * 4096), CU_DEVICE_INVALID); /* never prefetched */

    check_cu(cuabi_cuMemPrefetchAsync(m, 3 * 4096, device0, 0, s));
    assert_int_equal(last_prefetch(where, m, 3 * 4096), 0);
    assert_int_equal(last_prefetch(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 3 * 4096),
                     CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(last_prefetch(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, m, 3 * 4096), 0);
    /* The middle page to the host: the whole range has no single location any more. */
    check_cu(cuabi_cuMemPrefetchAsync(m + 4096 + 100, 10, host, 0, NULL));
    assert_int_equal(last_prefetch(where, m + 4096, 4096), CU_DEVICE_CPU);
    assert_int_equal(last_prefetch(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m + 4096, 1),
                     CU_MEM_LOCATION_TYPE_HOST);
    assert_int_equal(last_prefetch(where, m, 3 * 4096), CU_DEVICE_INVALID);
    assert_int_equal(last_prefetch(where, m + 2 * 4096, 4096), 0);

    /* What a driver refuses. */
    const CUmemLocation bad_device = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 5 };
    const CUmemLocation bad_type = { .type = CU_MEM_LOCATION_TYPE_INVALID, .id = 0 };
    const CUmemLocation bad_numa = { .type = CU_MEM_LOCATION_TYPE_HOST_NUMA, .id = 3 };
    assert_cu(CUDA_ERROR_INVALID_DEVICE, cuabi_cuMemPrefetchAsync(m, 4096, bad_device, 0, s));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(m, 4096, bad_type, 0, s));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(m, 4096, bad_numa, 0, s));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(m, 4096, device0, 1, s));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(d, 4096, device0, 0, s)); /* not managed */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(m, 4 * 4096, device0, 0, s)); /* too long */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPrefetchAsync(m, 0, device0, 0, s));
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuMemPrefetchAsync(m, 4096, device0, 0, (CUstream)&s));
    assert_int_equal(last_prefetch(where, m + 2 * 4096, 4096), 0); /* refused calls moved nothing */
    int value;
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemRangeGetAttribute(&value, 8, where, m, 4096));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemRangeGetAttribute(&value, 4, where, d, 4096));

    check_cu(cuabi_cuStreamDestroy(s));
    check_cu(cuabi_cuMemFree(d));
    check_cu(cuabi_cuMemFree(m));
}

/* ------------------------------------------------------- kernel parameters */

/* The parameter layout comes from the fake's kernel signatures, past the end is refused. */
static void test_param_info(void **state)
{
    (void)state;
    CUmodule mod;
    CUlibrary lib;
    CUfunction saxpy;
    CUkernel mixed;
    size_t offset = 99, size = 99;
    static const size_t saxpy_offsets[] = { 0, 8, 16, 24 }, saxpy_sizes[] = { 4, 8, 8, 4 };
    check_cu(cuabi_cuModuleLoadData(&mod, fake_module_image));
    check_cu(cuabi_cuModuleGetFunction(&saxpy, mod, "saxpy"));
    for (size_t i = 0; i < 4; i++) {
        check_cu(cuabi_cuFuncGetParamInfo(saxpy, i, &offset, &size));
        assert_int_equal(offset, saxpy_offsets[i]);
        assert_int_equal(size, saxpy_sizes[i]);
    }
    check_cu(cuabi_cuFuncGetParamInfo(saxpy, 1, &offset, NULL)); /* the size is optional */
    assert_int_equal(offset, 8);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuFuncGetParamInfo(saxpy, 4, &offset, &size));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuFuncGetParamInfo(saxpy, 0, NULL, &size));
    assert_cu(CUDA_ERROR_INVALID_HANDLE, cuabi_cuFuncGetParamInfo((CUfunction)&mod, 0, &offset, &size));

    /* store_mixed: u8 @0, f64 @8, u16 @16, s32 @20, pointer @24; through a CUkernel */
    check_cu(cuabi_cuLibraryLoadData(&lib, fake_module_image, NULL, NULL, 0, NULL, NULL, 0));
    check_cu(cuabi_cuLibraryGetKernel(&mixed, lib, "store_mixed"));
    static const size_t mixed_offsets[] = { 0, 8, 16, 20, 24 }, mixed_sizes[] = { 1, 8, 2, 4, 8 };
    for (size_t i = 0; i < 5; i++) {
        check_cu(cuabi_cuKernelGetParamInfo(mixed, i, &offset, &size));
        assert_int_equal(offset, mixed_offsets[i]);
        assert_int_equal(size, mixed_sizes[i]);
    }
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuKernelGetParamInfo(mixed, 5, &offset, &size));
    check_cu(cuabi_cuLibraryUnload(lib));
    check_cu(cuabi_cuModuleUnload(mod));
}

/* ------------------------------------------------------------------- pools */

static void test_memory_pools(void **state)
{
    (void)state;
    CUmemoryPool def, cur, pool, owner;
    CUdeviceptr a, b;
    cuuint64_t used = 1, high = 0, reserved = 0, threshold = 1 << 20;
    uint64_t live = fake_live_allocations();
    check_cu(cuabi_cuDeviceGetDefaultMemPool(&def, 0));
    check_cu(cuabi_cuDeviceGetMemPool(&cur, 0));
    assert_ptr_equal(def, cur);

    check_cu(cuabi_cuMemAllocAsync(&a, 1000, NULL));
    check_cu(cuabi_cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    assert_int_equal(used, 1000);
    check_cu(cuabi_cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    assert_ptr_equal(owner, def);
    assert_int_equal(fake_live_allocations(), live + 1);
    check_cu(cuabi_cuMemFreeAsync(a, NULL));
    assert_int_equal(fake_live_allocations(), live);
    check_cu(cuabi_cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    assert_int_equal(used, 0);
    check_cu(cuabi_cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    assert_int_equal(high, 1000);

    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    check_cu(cuabi_cuMemPoolCreate(&pool, &props));
    assert_int_equal(fake_live_objects("pools"), 1);
    check_cu(cuabi_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    check_cu(cuabi_cuMemAllocFromPoolAsync(&b, 4096, pool, NULL));
    check_cu(cuabi_cuMemFreeAsync(b, NULL));
    /* Below the release threshold the pool keeps freed memory reserved... */
    check_cu(cuabi_cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    assert_int_equal(reserved, 4096);
    /* ...until trimmed. */
    check_cu(cuabi_cuMemPoolTrimTo(pool, 0));
    check_cu(cuabi_cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    assert_int_equal(reserved, 0);

    check_cu(cuabi_cuDeviceSetMemPool(0, pool));
    check_cu(cuabi_cuMemAllocAsync(&a, 64, NULL));
    check_cu(cuabi_cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    assert_ptr_equal(owner, pool);
    check_cu(cuabi_cuMemFree(a)); /* cuMemFree also takes stream-ordered memory */
    check_cu(cuabi_cuDeviceSetMemPool(0, def));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemPoolDestroy(def));
    check_cu(cuabi_cuMemPoolDestroy(pool));
    assert_int_equal(fake_live_objects("pools"), 0);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuMemFreeAsync(a, NULL));
    assert_int_equal(fake_live_allocations(), live);
}

/* Releasing the primary context takes its memory along, as with a driver. */
static void test_release_frees_context_memory(void **state)
{
    (void)state;
    CUdeviceptr p;
    CUstream s;
    CUcontext ctx;
    uint64_t live = fake_live_allocations();
    check_cu(cuabi_cuDevicePrimaryCtxRetain(&ctx, 0)); /* second reference */
    check_cu(cuabi_cuMemAlloc(&p, 64));
    check_cu(cuabi_cuStreamCreate(&s, 0));
    check_cu(cuabi_cuDevicePrimaryCtxRelease(0)); /* one reference left: nothing goes */
    assert_int_equal(fake_live_allocations(), live + 1);
    release_primary_context();                 /* last reference: everything goes */
    assert_int_equal(fake_live_allocations(), live);
    assert_int_equal(fake_live_objects("streams"), 0);
    setup_primary_context();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_contexts),
        cmocka_unit_test(test_context_attach_detach),
        cmocka_unit_test(test_memory_roundtrip),
        cmocka_unit_test(test_memory_kinds),
        cmocka_unit_test(test_memory_needs_context),
        cmocka_unit_test(test_streams_and_events),
        cmocka_unit_test(test_host_function),
        cmocka_unit_test(test_module_and_launch),
        cmocka_unit_test(test_bad_images),
        cmocka_unit_test(test_ptx_and_library),
        cmocka_unit_test(test_launch_ex),
        cmocka_unit_test(test_graph_capture_and_replay),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_param_info),
        cmocka_unit_test(test_memory_pools),
        cmocka_unit_test(test_release_frees_context_memory),
    };
    return cmocka_run_group_tests_name("functional fake driver", tests,
                                       group_setup_primary_context, group_release_primary_context);
}

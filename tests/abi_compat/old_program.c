/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program as it was built against release 1.0: compiled with the 1.0 headers
 * (tests/fixtures/cuabi-1.0/include, its compat cuda.h first) and linked with a
 * library that has exactly the 1.0 node (a stub made from the snapshot's abi.map), so
 * that it imports every symbol it uses at CUABI_1.0, as a program linked against the
 * released library does. It runs on the library of this tree, unchanged.
 *
 * It uses the API where 1.1 changed what is around it: the types CUDA 13.5 changed
 * (CUmemLocation by value, CUmemPoolProps), an entry point that 1.1 has a newer version
 * of (cuLaunchHostFunc, next to cuLaunchHostFunc_v2), a kernel launch, and a result code
 * CUDA 13.5 added, which 1.0's headers do not name. symbols_1_0.c (written from the
 * snapshot's abi.map) takes the address of every symbol of the 1.0 node, so the dynamic
 * loader must find each of them at CUABI_1.0 in the library it runs on.
 *
 *   old_program [--expect-library VERSION] [kernels.ptx]
 *
 * Without a PTX file it loads the fake driver's own module format (saxpy); with one
 * (tests/gpu/kernels.ptx on a GPU) it loads that. Ends with "N passed, M failed".
 */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built against the 1.0 headers, or this test tests nothing. */
_Static_assert(CUABI_VERSION == CUABI_MAKE_VERSION(1, 0, 0), "old_program needs the 1.0 headers");
_Static_assert(CUDA_VERSION == 13000, "the 1.0 headers describe CUDA 13.0");

extern void (*const abi_1_0_symbols[])(void);
extern const unsigned abi_1_0_symbol_count;

static unsigned passed, failed;

static int check(int ok, const char *what, CUresult rc)
{
    if (ok) {
        passed++;
        return 1;
    }
    failed++;
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    printf("FAIL: %s (%d %s)\n", what, (int)rc, name != NULL ? name : "?");
    return 0;
}

#define CHECK(call) (rc = (call), check(rc == CUDA_SUCCESS, #call, rc))

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) != NULL) {
            if (fread(text, 1, (size_t)size, f) == (size_t)size) {
                text[size] = '\0';
            } else {
                free(text);
                text = NULL;
            }
        }
    }
    fclose(f);
    return text;
}

static void CUDA_CB count_call(void *data)
{
    ++*(int *)data;
}

/* y = a * x + y with the saxpy kernel of the module. */
static void launch(CUmodule module)
{
    enum { N = 4096 };
    static float x[N], y[N];
    CUresult rc;
    CUfunction saxpy;
    CUdeviceptr dx, dy;
    if (!CHECK(cuModuleGetFunction(&saxpy, module, "saxpy")))
        return;
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    if (!CHECK(cuMemAlloc(&dx, sizeof x)) || !CHECK(cuMemAlloc(&dy, sizeof y)))
        return;
    CHECK(cuMemcpyHtoD(dx, x, sizeof x));
    CHECK(cuMemcpyHtoD(dy, y, sizeof y));
    float a = 3.0f;
    int n = N;
    void *params[] = { &a, &dx, &dy, &n };
    CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(y, dy, sizeof y));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += y[i] != 3.0f * (float)i + 1.0f;
    check(wrong == 0, "saxpy computed y = 3x + 1", CUDA_ERROR_UNKNOWN);
    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
}

/* The types CUDA 13.5 changed, filled as a 1.0 program fills them. */
static void changed_types(CUdevice device)
{
    CUresult rc;
    CUstream stream;
    if (!CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)))
        return;

    /* CUmemLocation by value: {type, id} in 1.0, {type, union {id, localized}} in 1.1. */
    CUdeviceptr managed;
    if (CHECK(cuMemAllocManaged(&managed, 1 << 16, CU_MEM_ATTACH_GLOBAL))) {
        CUmemLocation location;
        memset(&location, 0, sizeof location);
        location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        location.id = (int)device;
        CHECK(cuMemPrefetchAsync(managed, 1 << 16, location, 0, stream));
        CHECK(cuStreamSynchronize(stream));
        CHECK(cuMemFree(managed));
    }

    /* CUmemPoolProps: 1.1 put gpuDirectRDMACapable in bytes 1.0 reserved (zeroed here). */
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = (int)device;
    CUmemoryPool pool;
    if (CHECK(cuMemPoolCreate(&pool, &props))) {
        CUdeviceptr p;
        if (CHECK(cuMemAllocFromPoolAsync(&p, 4096, pool, stream)))
            CHECK(cuMemFreeAsync(p, stream));
        CHECK(cuStreamSynchronize(stream));
        CHECK(cuMemPoolDestroy(pool));
    }

    /* cuLaunchHostFunc: the 1.0 form, which stays what it was next to 1.1's _v2. */
    int calls = 0;
    CHECK(cuLaunchHostFunc(stream, count_call, &calls));
    CHECK(cuStreamSynchronize(stream));
    check(calls == 1, "the host function ran once", CUDA_ERROR_UNKNOWN);
    CHECK(cuStreamDestroy(stream));
}

int main(int argc, char **argv)
{
    CUresult rc;
    unsigned expect = 0;
    const char *ptx_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-library") == 0 && i + 1 < argc)
            expect = (unsigned)strtoul(argv[++i], NULL, 0);
        else
            ptx_path = argv[i];
    }

    /* The library it runs on: 1.x with x >= 0, this tree's when the test says which. */
    uint32_t library = cuabi_version();
    printf("built against cuabi %u.%u.%u, running on %u.%u.%u\n", CUABI_VERSION_MAJOR,
           CUABI_VERSION_MINOR, CUABI_VERSION_PATCH, library >> 16, (library >> 8) & 0xFF, library & 0xFF);
    check(library >> 16 == 1 && library >= CUABI_VERSION, "a 1.x library, not older than 1.0", 0);
    if (expect != 0)
        check(library == expect, "the library of this build", 0);
    unsigned present = 0;
    for (unsigned i = 0; i < abi_1_0_symbol_count; i++)
        present += abi_1_0_symbols[i] != NULL;
    printf("%u of the 1.0 node's %u symbols bound\n", present, abi_1_0_symbol_count);
    check(present == abi_1_0_symbol_count && present > 400, "every symbol of the 1.0 node bound", 0);

    if (!CHECK(cuInit(0))) {
        printf("%s", cuabi_driver_report());
        printf("%u passed, %u failed\n", passed, failed);
        return 1;
    }
    CUdevice device;
    CUcontext context;
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));

    char *ptx = ptx_path != NULL ? read_file(ptx_path) : NULL;
    check(ptx_path == NULL || ptx != NULL, "read the PTX file", CUDA_ERROR_FILE_NOT_FOUND);
    CUmodule module;
    if (CHECK(cuModuleLoadData(&module, ptx != NULL ? ptx : "fakecuda-module\nkernel saxpy\n"))) {
        launch(module);
        CHECK(cuModuleUnload(module));
    }
    free(ptx);
    changed_types(device);

    /* A code CUDA 13.5 added (CUDA_ERROR_FABRIC_NOT_READY, 919): unknown to the 1.0
     * headers, named by a 1.1 library even where the driver does not know it. */
    if (library >= CUABI_MAKE_VERSION(1, 1, 0)) {
        const char *name = NULL;
        CHECK(cuGetErrorName((CUresult)919, &name));
        check(name != NULL && strcmp(name, "CUDA_ERROR_FABRIC_NOT_READY") == 0, "a 13.5 code named", 0);
    }

    CHECK(cuDevicePrimaryCtxRelease(device));
    printf("%u passed, %u failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

#define _GNU_SOURCE
#include "support.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

const char *fake_path(void)
{
    const char *path = getenv("CUABI_LIBCUDA");
    if (path == NULL || path[0] != '/') {
        fprintf(stderr, "this test needs CUABI_LIBCUDA=/abs/path/libfakecuda.so (ctest sets it)\n");
        abort();
    }
    return path;
}

void *fake_symbol(const char *name)
{
    static void *handle;
    if (handle == NULL) {
        /* Opening the same path cuabi opens gives the same library instance. */
        handle = dlopen(fake_path(), RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            fprintf(stderr, "cannot open the fake driver: %s\n", dlerror());
            abort();
        }
    }
    void *sym = dlsym(handle, name);
    if (sym == NULL) {
        fprintf(stderr, "the fake driver has no %s\n", name);
        abort();
    }
    return sym;
}

uint64_t fake_live_allocations(void)
{
    return ((fakecuda_live_allocations_fn)fake_symbol("fakecuda_live_allocations"))();
}

uint64_t fake_live_objects(const char *kind)
{
    return ((fakecuda_live_objects_fn)fake_symbol("fakecuda_live_objects"))(kind);
}

uint64_t fake_launch_count(void)
{
    return ((fakecuda_launch_count_fn)fake_symbol("fakecuda_launch_count"))();
}

int fake_request_info(const char *name, struct fakecuda_request *out)
{
    return ((fakecuda_request_info_fn)fake_symbol("fakecuda_request_info"))(name, out);
}

void assert_cu_at(CUresult expected, CUresult actual, const char *what, const char *file, int line)
{
    if (expected == actual)
        return;
    char expected_name[96];
    snprintf(expected_name, sizeof expected_name, "%s", cuabi_error_name(expected));
    print_error("%s returned %s (%d), expected %s (%d)\n", what, cuabi_error_name(actual), (int)actual,
                expected_name, (int)expected);
    _fail(file, line);
}

void assert_contains_at(const char *haystack, const char *needle, const char *file, int line)
{
    if (haystack != NULL && needle != NULL && strstr(haystack, needle) != NULL)
        return;
    print_error("expected to find \"%s\" in:\n%s\n", needle ? needle : "(null)",
                haystack ? haystack : "(null)");
    _fail(file, line);
}

CUcontext setup_primary_context(void)
{
    CUdevice dev;
    CUcontext ctx;
    check_cu(cuabi_cuInit(0));
    check_cu(cuabi_cuDeviceGet(&dev, 0));
    check_cu(cuabi_cuDevicePrimaryCtxRetain(&ctx, dev));
    check_cu(cuabi_cuCtxSetCurrent(ctx));
    return ctx;
}

void release_primary_context(void)
{
    check_cu(cuabi_cuCtxSetCurrent(NULL));
    check_cu(cuabi_cuDevicePrimaryCtxRelease(0));
}

int group_setup_primary_context(void **state)
{
    (void)state;
    setup_primary_context();
    return 0;
}

int group_release_primary_context(void **state)
{
    (void)state;
    release_primary_context();
    return 0;
}

const char fake_module_image[] =
    "fakecuda-module\n"
    "# the kernels of tests/fake/kernels.c used by the tests\n"
    "kernel empty\n"
    "kernel saxpy\n"
    "kernel fill_u32\n"
    "kernel add_u32\n"
    "kernel iota_u32\n"
    "kernel scale_f64\n"
    "kernel store_mixed\n"
    "kernel launch_info\n"
    "global counter 16\n";

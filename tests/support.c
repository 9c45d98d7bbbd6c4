/* SPDX-License-Identifier: Apache-2.0 */
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

const char *library_env(int32_t library)
{
    static const char *const names[] = { "CUABI_LIBCUDA", "CUABI_LIBNVRTC", "CUABI_LIBNVJITLINK",
                                         "CUABI_LIBNVVM", "CUABI_LIBNVML" };
    return library >= 0 && library < (int32_t)(sizeof names / sizeof names[0]) ? names[library] : NULL;
}

void *family_fake_symbol(int32_t library, const char *name)
{
    static void *handles[5];
    const char *env = library_env(library);
    const char *path = env != NULL ? getenv(env) : NULL;
    if (path == NULL || path[0] != '/') {
        fprintf(stderr, "this test needs %s=/abs/path to the family's fake (ctest sets it)\n",
                env != NULL ? env : "(an unknown library)");
        abort();
    }
    if (handles[library] == NULL && (handles[library] = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
        abort();
    }
    void *sym = dlsym(handles[library], name);
    if (sym == NULL) {
        fprintf(stderr, "%s has no %s\n", path, name);
        abort();
    }
    return sym;
}

void *exported_forwarder(const char *name)
{
    char symbol[160];
    snprintf(symbol, sizeof symbol, "cuabi_%s", name);
    void *fn = dlsym(RTLD_DEFAULT, symbol);
    if (fn == NULL)
        print_error("libcuabi does not export %s\n", symbol);
    assert_non_null(fn);
    return fn;
}

void sentinel(unsigned entry, unsigned arg, char c, union sentinel_value *v, uint64_t *bits)
{
    uint64_t tag = ((uint64_t)entry << 8) | arg;
    memset(v, 0, sizeof *v);
    switch (c) {
    case 'B':
        v->B = (uint8_t)(0x80 | (tag & 0x7F));
        *bits = v->B;
        break;
    case 'H':
        v->H = (uint16_t)(0x8000 | (tag & 0x7FFF));
        *bits = v->H;
        break;
    case 'i':
        v->i = (int32_t)(0x80000000u | (uint32_t)tag); /* negative: no sign extension */
        *bits = (uint32_t)v->i;
        break;
    case 'I':
        v->u = 0x40000000u | (uint32_t)tag;
        *bits = v->u;
        break;
    case 'q':
        v->q = (int64_t)(0xC0DE000000000000ull | tag << 4 | 0x9);
        *bits = (uint64_t)v->q;
        break;
    case 'Q':
        v->Q = 0xB0BA000000000000ull | tag << 4 | 0xA;
        *bits = v->Q;
        break;
    case 'z':
        v->z = (size_t)(0xA11C000000000000ull | tag << 4 | 0xB);
        *bits = (uint64_t)v->z;
        break;
    case 'p':
        /* Never dereferenced: neither the forwarder nor the library looks behind it. */
        v->p = (void *)(uintptr_t)(0x00007E5700000000ull | tag << 4 | 0xC);
        *bits = (uint64_t)(uintptr_t)v->p;
        break;
    case 'f': {
        uint32_t u;
        v->f = (float)tag + 0.5f;
        memcpy(&u, &v->f, sizeof u);
        *bits = u;
        break;
    }
    case 'd':
        v->d = (double)tag * 3.0 + 0.25;
        memcpy(bits, &v->d, sizeof *bits);
        break;
    }
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

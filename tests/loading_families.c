/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loading scenarios of the library families (NVRTC, nvJitLink, NVVM, NVML)
 * and of CUABI_TRACE: the functions of the rows of tests/test_loading.c's table
 * (the one registry), one process each.  A family scenario reads its family from
 * CUABI_TEST_FAMILY (a CUABI_LIBRARY_* number) and checks the status, what the
 * family's functions answer (in its own result type, docs/families.md) and what
 * its report says.
 */
#define _GNU_SOURCE
#include "support.h"
#include "loading_families.h"

#include <cuabi/nvjitlink.h>
#include <cuabi/nvml.h>
#include <cuabi/nvrtc.h>
#include <cuabi/nvvm.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_of(const char *name)
{
    const char *value = getenv(name);
    if (value == NULL)
        fail_msg("this scenario needs %s in the environment", name);
    return value;
}

static const char *real_path(const char *path)
{
    static char buf[PATH_MAX];
    if (realpath(path, buf) == NULL)
        fail_msg("realpath(%s) failed", path);
    return buf;
}

/* What each family is, for the scenarios. */
static const struct family {
    const char *title, *soname;
    int answers[4]; /* library missing, too old, function missing, bad environment */
} families[] = {
    [CUABI_LIBRARY_NVRTC] = { "NVRTC", "libnvrtc.so.13",
                              { CUABI_NVRTC_LIBRARY_MISSING, CUABI_NVRTC_LIBRARY_TOO_OLD,
                                CUABI_NVRTC_FUNCTION_MISSING, CUABI_NVRTC_BAD_ENVIRONMENT } },
    [CUABI_LIBRARY_NVJITLINK] = { "nvJitLink", "libnvJitLink.so.13",
                                  { CUABI_NVJITLINK_LIBRARY_MISSING, CUABI_NVJITLINK_LIBRARY_TOO_OLD,
                                    CUABI_NVJITLINK_FUNCTION_MISSING, CUABI_NVJITLINK_BAD_ENVIRONMENT } },
    [CUABI_LIBRARY_NVVM] = { "NVVM", "libnvvm.so.4",
                             { CUABI_NVVM_LIBRARY_MISSING, CUABI_NVVM_LIBRARY_TOO_OLD,
                               CUABI_NVVM_FUNCTION_MISSING, CUABI_NVVM_BAD_ENVIRONMENT } },
    [CUABI_LIBRARY_NVML] = { "NVML", "libnvidia-ml.so.1",
                             { CUABI_NVML_LIBRARY_MISSING, CUABI_NVML_LIBRARY_TOO_OLD,
                               CUABI_NVML_FUNCTION_MISSING, CUABI_NVML_BAD_ENVIRONMENT } },
};
enum { MISSING, TOO_OLD, FUNCTION_MISSING, BAD_ENVIRONMENT };

static int32_t family(void)
{
    int32_t f = atoi(env_of("CUABI_TEST_FAMILY"));
    if (f < CUABI_LIBRARY_NVRTC || f > CUABI_LIBRARY_NVML)
        fail_msg("CUABI_TEST_FAMILY=%d names no family", f);
    return f;
}

/* Calls a function every version of the family has, with safe arguments; its result. */
static int call_family(int32_t f)
{
    int major = -1, minor = -1;
    unsigned umajor = 0, uminor = 0;
    switch (f) {
    case CUABI_LIBRARY_NVRTC:
        return cuabi_nvrtcVersion(&major, &minor);
    case CUABI_LIBRARY_NVJITLINK:
        return cuabi_nvJitLinkVersion(&umajor, &uminor);
    case CUABI_LIBRARY_NVVM:
        return cuabi_nvvmVersion(&major, &minor);
    default:
        return cuabi_nvmlInit();
    }
}

/* Calls the function the family's "partial" fake lacks (tests/CMakeLists.txt). */
static int call_newest(int32_t f)
{
    size_t size = 0;
    int major = 0;
    switch (f) {
    case CUABI_LIBRARY_NVRTC:
        return cuabi_nvrtcGetTileIRSize(NULL, &size);
    case CUABI_LIBRARY_NVJITLINK:
        return cuabi_nvJitLinkGetLinkedLTOIRSize(NULL, &size);
    case CUABI_LIBRARY_NVVM:
        return cuabi_nvvmLLVMVersion("compute_80", &major);
    default:
        return cuabi_nvmlEventSetWait_v3(NULL, NULL);
    }
}

static const char *newest_name(int32_t f)
{
    static const char *const names[] = { NULL, "nvrtcGetTileIRSize", "nvJitLinkGetLinkedLTOIRSize",
                                         "nvvmLLVMVersion", "nvmlEventSetWait_v3" };
    return names[f];
}

/* A failed load: the status, every function's answer, the report naming the code. */
static void assert_fails_with(int32_t f, CUresult status, int answer)
{
    assert_cu(status, cuabi_library_status(f));
    assert_int_equal(call_family(f), families[f].answers[answer]);
    assert_int_equal(call_newest(f), families[f].answers[answer]); /* again: the same */
    assert_null(cuabi_library_path(f));
    assert_cu(status, cuabi_load_library(f, NULL)); /* the outcome is final */
    const char *report = cuabi_library_report(f);
    assert_contains(report, cuabi_error_name(status));
    assert_contains(report, "what to do");
    assert_contains(report, families[f].title);
    /* the driver is none of its business */
    assert_false(cuabi__test_driver_loaded());
}

int cuabi__test_driver_loaded(void)
{
    const char *path = getenv("CUABI_LIBCUDA");
    void *h = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h != NULL)
        dlclose(h);
    return h != NULL;
}

/* ------------------------------------------------------------- scenarios */

void family_env_override(void)
{
    int32_t f = family();
    const char *path = env_of(library_env(f));
    check_cu(cuabi_library_status(f));
    assert_string_equal(cuabi_library_path(f), real_path(path));
    const char *report = cuabi_library_report(f);
    char expected[64];
    snprintf(expected, sizeof expected, "%s=", library_env(f));
    assert_contains(report, expected);
    assert_contains(report, "opened");
    assert_contains(report, real_path(path));
    assert_contains(report, "using ");
    assert_int_equal(call_family(f), 0);
    /* The call reached the fake. */
    assert_true(((fakefam_record_count_fn)family_fake_symbol(f, "fakefam_record_count"))() >= 1);
    /* Later load requests: the same library is fine, another is refused, a relative path
     * and an unknown library are invalid. */
    check_cu(cuabi_load_library(f, NULL));
    check_cu(cuabi_load_library(f, path));
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_load_library(f, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_load_library(f, families[f].soname));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_load_library(CUABI_LIBRARY_NVML + 1, NULL));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_library_status(-1));
    assert_null(cuabi_library_path(CUABI_LIBRARY_NVML + 1));
    assert_contains(cuabi_library_report(CUABI_LIBRARY_NVML + 1), "unknown library");
    assert_false(cuabi__test_driver_loaded());
}

void family_explicit_path(void)
{
    int32_t f = family();
    const char *path = env_of("FAKE_FAMILY");
    assert_null(getenv(library_env(f)));
    /* A relative path is refused without using up the one load. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_load_library(f, families[f].soname));
    check_cu(cuabi_load_library(f, path));
    assert_string_equal(cuabi_library_path(f), real_path(path));
    assert_contains(cuabi_library_report(f), "cuabi_load_library(");
    check_cu(cuabi_load_library(f, path));
    assert_int_equal(call_family(f), 0);
}

void family_explicit_beats_env(void)
{
    int32_t f = family();
    const char *path = env_of("FAKE_FAMILY");
    check_cu(cuabi_load_library(f, path));
    assert_string_equal(cuabi_library_path(f), real_path(path));
    assert_contains(cuabi_library_report(f), "is set but ignored");
}

void family_relative_env(void)
{
    int32_t f = family();
    assert_fails_with(f, CUABI_ERROR_BAD_ENVIRONMENT, BAD_ENVIRONMENT);
    assert_contains(cuabi_library_report(f), "not an absolute path");
}

void family_missing_file(void)
{
    int32_t f = family();
    assert_fails_with(f, CUABI_ERROR_LIBRARY_MISSING, MISSING);
    assert_contains(cuabi_library_report(f), env_of(library_env(f)));
    assert_contains(cuabi_library_report(f), "dlopen failed");
    assert_contains(cuabi_library_report(f), "check the path named above");
}

void family_too_old(void)
{
    int32_t f = family();
    assert_fails_with(f, CUABI_ERROR_LIBRARY_TOO_OLD, TOO_OLD);
    assert_contains(cuabi_library_report(f), "older than cuabi's");
    assert_contains(cuabi_library_report(f), "skipped");
}

void family_function_missing(void)
{
    int32_t f = family();
    check_cu(cuabi_library_status(f));
    assert_int_equal(call_newest(f), families[f].answers[FUNCTION_MISSING]);
    assert_int_equal(call_newest(f), families[f].answers[FUNCTION_MISSING]); /* remembered */
    assert_int_equal(call_family(f), 0);                                      /* the rest works */
    const char *report = cuabi_library_report(f);
    assert_contains(report, "not in this library:");
    assert_contains(report, newest_name(f));
    /* The answer's name, in the family's result type. */
    assert_contains(report, f == CUABI_LIBRARY_NVML ? "NVML_ERROR_FUNCTION_NOT_FOUND"
                                                    : "CUABI_ERROR_FUNCTION_MISSING");
}

void family_already_in_process(void)
{
    int32_t f = family();
    const char *path = env_of("FAKE_SYSFAMILY");
    assert_null(getenv(library_env(f)));
    void *mine = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    assert_non_null(mine);
    check_cu(cuabi_library_status(f));
    char expected[128];
    snprintf(expected, sizeof expected, "%s already in this process: opened", families[f].soname);
    assert_contains(cuabi_library_report(f), expected);
    assert_string_equal(cuabi_library_path(f), real_path(path));
    assert_int_equal(call_family(f), 0);
}

void family_system_search(void)
{
    int32_t f = family();
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "%s/%s", env_of("FAKE_SYSFAMILIES_DIR"), families[f].soname);
    check_cu(cuabi_library_status(f));
    assert_string_equal(cuabi_library_path(f), real_path(expected));
    snprintf(expected, sizeof expected, "%s through the system search: opened", families[f].soname);
    assert_contains(cuabi_library_report(f), expected);
}

void family_wrong_soname(void)
{
    /* Only unversioned names (libnvrtc.so) and other versions (libnvrtc.so.11) are on
     * LD_LIBRARY_PATH: none is ever opened (whatever else the machine has is). */
    int32_t f = family();
    const char *dir = real_path(env_of("FAKE_WRONGNAME_DIR"));
    char opened[PATH_MAX + 16];
    snprintf(opened, sizeof opened, "opened %s", dir);
    cuabi_library_status(f);
    const char *path = cuabi_library_path(f);
    if (path != NULL && strncmp(path, dir, strlen(dir)) == 0)
        fail_msg("%s was opened from %s", path, dir);
    if (strstr(cuabi_library_report(f), opened) != NULL)
        fail_msg("the report says a library of %s was opened:\n%s", dir, cuabi_library_report(f));
}

void family_absent(void)
{
    /* (A placeholder where the machine has the library: tests/test_loading.c.) */
    int32_t f = family();
    assert_fails_with(f, CUABI_ERROR_LIBRARY_MISSING, MISSING);
    char expected[128];
    snprintf(expected, sizeof expected, "%s through the system search: dlopen failed", families[f].soname);
    assert_contains(cuabi_library_report(f), expected);
    assert_contains(cuabi_library_report(f), "not present");
    assert_contains(cuabi_library_report(f), "what to do: install");
}

void family_real_library(void)
{
    /* The machine's own library (a placeholder where it has none): the functions cuabi
     * pinned are the ones it exports. */
    int32_t f = family();
    check_cu(cuabi_library_status(f));
    printf("%s", cuabi_library_report(f));
    if (f == CUABI_LIBRARY_NVRTC) {
        nvrtcProgram prog = NULL;
        const char *src = "extern \"C\" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }";
        const char *options[] = { "-default-device" };
        assert_int_equal(cuabi_nvrtcCreateProgram(&prog, src, "twice.cu", 0, NULL, NULL), NVRTC_SUCCESS);
        assert_int_equal(cuabi_nvrtcCompileProgram(prog, 1, options), NVRTC_SUCCESS);
        size_t size = 0;
        assert_int_equal(cuabi_nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
        char *ptx = malloc(size);
        assert_non_null(ptx);
        assert_int_equal(cuabi_nvrtcGetPTX(prog, ptx), NVRTC_SUCCESS);
        assert_contains(ptx, ".entry twice");
        free(ptx);
        assert_int_equal(cuabi_nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
        assert_null(prog);
        assert_string_equal(cuabi_nvrtcGetErrorString(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
    } else if (f == CUABI_LIBRARY_NVJITLINK) {
        /* Its symbols are versioned: a 13.x library has cuabi's pins (__nvJitLinkCreate_13_0). */
        nvJitLinkHandle h = NULL;
        const char *options[] = { "-arch=sm_80" };
        assert_int_equal(cuabi_nvJitLinkCreate(&h, 1, options), NVJITLINK_SUCCESS);
        const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                           ".visible .entry nothing()\n{\n\tret;\n}\n";
        assert_int_equal(cuabi_nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, sizeof ptx, "nothing.ptx"),
                         NVJITLINK_SUCCESS);
        assert_int_equal(cuabi_nvJitLinkComplete(h), NVJITLINK_SUCCESS);
        size_t size = 0;
        assert_int_equal(cuabi_nvJitLinkGetLinkedCubinSize(h, &size), NVJITLINK_SUCCESS);
        assert_true(size > 0);
        assert_int_equal(cuabi_nvJitLinkDestroy(&h), NVJITLINK_SUCCESS);
    } else if (f == CUABI_LIBRARY_NVVM) {
        int v[4];
        assert_int_equal(cuabi_nvvmIRVersion(&v[0], &v[1], &v[2], &v[3]), NVVM_SUCCESS);
        nvvmProgram prog = NULL;
        assert_int_equal(cuabi_nvvmCreateProgram(&prog), NVVM_SUCCESS);
        assert_int_equal(cuabi_nvvmDestroyProgram(&prog), NVVM_SUCCESS);
    } else {
        unsigned count = 0;
        assert_int_equal(cuabi_nvmlInit(), NVML_SUCCESS);
        assert_int_equal(cuabi_nvmlDeviceGetCount(&count), NVML_SUCCESS);
        assert_int_equal(cuabi_nvmlShutdown(), NVML_SUCCESS);
    }
}

void driver_load_library(void)
{
    /* The driver is library 0 of the same calls. */
    const char *path = env_of("FAKE_DRIVER");
    check_cu(cuabi_load_library(CUABI_LIBRARY_DRIVER, path));
    check_cu(cuabi_library_status(CUABI_LIBRARY_DRIVER));
    assert_string_equal(cuabi_library_path(CUABI_LIBRARY_DRIVER), cuabi_driver_path());
    assert_string_equal(cuabi_library_report(CUABI_LIBRARY_DRIVER), cuabi_driver_report());
    assert_contains(cuabi_driver_report(), "cuabi_load(");
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_load_library(CUABI_LIBRARY_DRIVER,
                                                             "/usr/lib/x86_64-linux-gnu/libc.so.6"));
    /* The families are loaded apart: none is. */
    for (int32_t f = CUABI_LIBRARY_NVRTC; f <= CUABI_LIBRARY_NVML; f++)
        assert_null(dlopen(families[f].soname, RTLD_NOW | RTLD_NOLOAD));
}

/* ---- CUABI_TRACE -------------------------------------------------------------- */

/* The whole of a file. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot read %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A few calls of the driver and of NVRTC, whose lines tracing writes. */
static void traced_calls(void)
{
    check_cu(cuabi_cuInit(0));
    int version = 0;
    check_cu(cuabi_cuDriverGetVersion(&version));
    int major = 0, minor = 0;
    assert_int_equal(cuabi_nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
}

static void assert_traced(const char *text)
{
    assert_contains(text, "cuabi-trace ");
    assert_contains(text, " driver cuInit(Flags=0x0) = CUDA_SUCCESS (0) ");
    assert_contains(text, " driver cuDriverGetVersion(driverVersion=0x");
    assert_contains(text, "->13000) = CUDA_SUCCESS (0) ");
    assert_contains(text, " nvrtc nvrtcVersion(major=0x");
    assert_contains(text, "->13, minor=0x");
    assert_contains(text, "->5) = NVRTC_SUCCESS (0) ");
    assert_contains(text, "us\n");
}

void trace_to_stderr(void)
{
    /* The standard error, into a file of the scenario's, before anything loads. */
    const char *path = env_of("FAKE_TRACE_FILE");
    unlink(path);
    FILE *f = freopen(path, "w", stderr);
    assert_non_null(f);
    traced_calls();
    assert_int_equal(cuabi_trace_enabled(), 1);
    assert_contains(cuabi_driver_report(), "tracing: on, to the standard error (CUABI_TRACE=1)");
    assert_contains(cuabi_library_report(CUABI_LIBRARY_NVRTC), "tracing: on");
    fflush(stderr);
    assert_traced(read_file(path));
}

void trace_to_file(void)
{
    const char *path = env_of("CUABI_TRACE");
    unlink(path); /* before the first load opens it: only this run's lines */
    traced_calls();
    assert_int_equal(cuabi_trace_enabled(), 1);
    assert_traced(read_file(path));
    /* Off: no more lines. */
    check_cu(cuabi_trace_stop());
    assert_int_equal(cuabi_trace_enabled(), 0);
    size_t before = strlen(read_file(path));
    traced_calls();
    assert_int_equal(strlen(read_file(path)), before);
}

static void assert_bad_trace_setting(const char *quoted)
{
    assert_cu(CUABI_ERROR_BAD_ENVIRONMENT, cuabi_driver_status());
    assert_cu(CUABI_ERROR_BAD_ENVIRONMENT, cuabi_cuInit(0));
    assert_int_equal(cuabi_nvrtcVersion(NULL, NULL), CUABI_NVRTC_BAD_ENVIRONMENT);
    assert_int_equal(cuabi_nvmlInit(), CUABI_NVML_BAD_ENVIRONMENT);
    assert_contains(cuabi_driver_report(), quoted);
    assert_contains(cuabi_library_report(CUABI_LIBRARY_NVRTC), quoted);
    assert_int_equal(cuabi_trace_enabled(), 0);
    /* Nothing was opened. */
    assert_false(cuabi__test_driver_loaded());
}

void trace_relative_path(void)
{
    assert_bad_trace_setting("CUABI_TRACE=\"trace.log\" is not accepted");
    assert_contains(cuabi_driver_report(), "an absolute path (append to that file)");
}

void trace_bad_value(void)
{
    assert_bad_trace_setting("CUABI_TRACE=\"yes\" is not accepted");
}

void trace_unopenable_file(void)
{
    assert_bad_trace_setting("names a file that cannot be opened for appending");
}

void trace_program_wins(void)
{
    /* cuabi_trace_stop() before the first load: CUABI_TRACE=1 is not applied. */
    const char *path = env_of("FAKE_TRACE_FILE");
    unlink(path);
    FILE *f = freopen(path, "w", stderr);
    assert_non_null(f);
    check_cu(cuabi_trace_stop());
    traced_calls();
    assert_int_equal(cuabi_trace_enabled(), 0);
    fflush(stderr);
    if (strstr(read_file(path), "cuabi-trace") != NULL)
        fail_msg("traced although the program switched tracing off:\n%s", read_file(path));
    assert_true(strstr(cuabi_driver_report(), "tracing:") == NULL);
}

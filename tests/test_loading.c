/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading the driver, one scenario per process.  Each checks the status code
 * docs/abi.md documents, that cuabi_driver_report() names the cause, and that
 * calls keep returning that code without crashing.
 *
 * The table `scenarios` at the end is the one registry: each row names a
 * scenario, its function and the environment its process needs.  The build
 * asks this program for the list (`test_loading --ctest FILE KEY=VALUE...`,
 * see tests/CMakeLists.txt), which becomes one ctest entry per row;
 * `test_loading NAME` runs one.
 */
#define _GNU_SOURCE
#include "support.h"
#include "loading_families.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *scenario;

static void skip_with(const char *why)
{
    printf("skipped: %s\n", why);
    fflush(stdout);
    exit(TEST_SKIPPED);
}

static const char *env(const char *name)
{
    const char *value = getenv(name);
    if (value == NULL)
        fail_msg("the scenario %s needs %s in the environment", scenario, name);
    return value;
}

static char *real(const char *path)
{
    static char buf[PATH_MAX];
    if (realpath(path, buf) == NULL)
        fail_msg("realpath(%s) failed", path);
    return buf;
}

/* A failed load answers every kind of call with the load's status. */
static void assert_every_call_fails_with(CUresult status)
{
    CUdeviceptr p;
    int version = 0;
    void *fn = NULL;
    int *pv = &version;
    void *args[] = { &pv };
    assert_cu(status, cuabi_driver_status());
    assert_cu(status, cuabi_cuInit(0));
    assert_cu(status, cuabi_cuMemAlloc(&p, 16));
    assert_cu(status, cuabi_cuDriverGetVersion(&version));
    assert_cu(status, cuabi_driver_version(&version));
    assert_cu(status, cuabi_get_proc("cuInit", 2000, 0, &fn));
    assert_cu(status, cuabi_call("cuDriverGetVersion", 0, "p", args));
    unsigned char packet[CUABI_LAUNCH_HEADER_SIZE] = { 0 };
    assert_cu(status, cuabi_launch_packed(NULL, NULL, packet, sizeof packet));
    assert_null(cuabi_driver_path());
    assert_cu(status, cuabi_load(NULL)); /* the outcome is final */
    /* The report explains the code by name. */
    assert_contains(cuabi_driver_report(), cuabi_error_name(status));
    assert_contains(cuabi_driver_report(), "what to do");
}

static int driver_library_in_process(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL)
        dlclose(h);
    return h != NULL;
}

/* Whether this machine has a libcuda.so.1 the search would find: asked of
 * cuabi itself, in a child started with an empty environment (so neither this
 * scenario's variables nor LD_LIBRARY_PATH steer the search), so that this
 * process loads nothing.  In a cross build the child is started through the
 * emulator that runs this program (CUABI_TEST_EMULATOR, its words separated
 * by spaces, set by write_ctest_file): qemu-user cannot execute a foreign
 * program by itself. */
static int system_has_driver(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            _exit(2);
        self[n] = '\0';
        char words[1024], *argv[16];
        int argc = 0;
        const char *emulator = getenv("CUABI_TEST_EMULATOR");
        if (emulator != NULL && strlen(emulator) < sizeof words) {
            strcpy(words, emulator);
            for (char *w = strtok(words, " "); w != NULL && argc < 13; w = strtok(NULL, " "))
                argv[argc++] = w;
        }
        argv[argc++] = self;
        argv[argc++] = "--probe-system-driver";
        argv[argc] = NULL;
        char *const envp[] = { NULL };
        execvpe(argv[0], argv, envp); /* the emulator from this process's PATH */
        _exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
        fail_msg("could not ask a child process whether this machine has a driver");
    return WEXITSTATUS(status) == 1;
}

/* ------------------------------------------------------------- scenarios */

static void fake_driver(void)
{
    const char *path = env("CUABI_LIBCUDA");
    check_cu(cuabi_driver_status());
    assert_string_equal(cuabi_driver_path(), real(path));
    const char *report = cuabi_driver_report();
    assert_contains(report, "CUABI_LIBCUDA=");
    assert_contains(report, "opened");
    assert_contains(report, real(path));
    assert_contains(report, "legacy");
    int version = 0;
    check_cu(cuabi_driver_version(&version));
    assert_int_equal(version, 13000);
    assert_int_equal(cuabi_default_stream_mode(), 0);
    /* Later load requests: the same driver is fine, another is refused. */
    check_cu(cuabi_load(NULL));
    check_cu(cuabi_load(path));
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_load("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_load("libcuda.so.1"));
    check_cu(cuabi_set_default_stream_mode(0));
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_set_default_stream_mode(1));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_set_default_stream_mode(2));
    check_cu(cuabi_cuInit(0));
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_driver_version(NULL));
    /* A code CUDA 13.5 added, which this 13.0 driver does not know: named from cuabi's table. */
    const char *newer = NULL;
    check_cu(cuabi_cuGetErrorName(CUDA_ERROR_FABRIC_NOT_READY, &newer));
    assert_string_equal(newer, "CUDA_ERROR_FABRIC_NOT_READY");
    check_cu(cuabi_cuGetErrorString(CUDA_ERROR_STREAM_DETACHED, &newer));
    assert_string_equal(newer, cuabi_error_string(CUDA_ERROR_STREAM_DETACHED));
    /* In legacy mode cuGetProcAddress's flags reach the driver as given. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult found;
    struct fakecuda_request request;
    /* Nothing was resolved eagerly: a handful of look-ups, not one per entry point. */
    uint64_t asked = ((fakecuda_request_total_fn)fake_symbol("fakecuda_request_total"))();
    assert_in_range(asked, 1, 8);
    check_cu(cuabi_cuGetProcAddress("cuStreamQuery", &fn, 7000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    assert_true(fake_request_info("cuStreamQuery", &request));
    assert_int_equal(request.flags, CU_GET_PROC_ADDRESS_DEFAULT);
}

static void report_loads_the_driver(void)
{
    /* The report as the very first call: it loads the driver, then tells how. */
    const char *report = cuabi_driver_report();
    assert_contains(report, "opened");
    assert_contains(report, real(env("CUABI_LIBCUDA")));
    assert_true(driver_library_in_process(env("CUABI_LIBCUDA")));
}

static void no_driver(void)
{
    if (system_has_driver())
        skip_with("this machine has a libcuda.so.1 the search finds; the no-driver case cannot be staged here");
    assert_every_call_fails_with(CUABI_ERROR_DRIVER_NOT_FOUND);
    const char *report = cuabi_driver_report();
    assert_contains(report, "libcuda.so.1 through the system search: dlopen failed");
    assert_contains(report, "/usr/local/nvidia/lib64/libcuda.so.1: not present");
    assert_contains(report, "install the NVIDIA driver");
    /* The idiom cuGetErrorName(rc, &s); printf("%s", s) names the code with no driver. */
    const char *s = NULL;
    check_cu(cuabi_cuGetErrorName(CUABI_ERROR_DRIVER_NOT_FOUND, &s));
    assert_string_equal(s, "CUABI_ERROR_DRIVER_NOT_FOUND");
    check_cu(cuabi_cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
    check_cu(cuabi_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, cuabi_error_string(CUDA_ERROR_OUT_OF_MEMORY));
    s = "unchanged";
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGetErrorName((CUresult)123456, &s));
    assert_null(s);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, NULL));
}

static void toolkit_stub(void)
{
    const char *stub = env("CUABI_LIBCUDA");
    assert_every_call_fails_with(CUABI_ERROR_DRIVER_STUB);
    assert_contains(cuabi_driver_report(), "toolkit stub");
    assert_contains(cuabi_driver_report(), real(stub));
}

static void relative_path(void)
{
    assert_every_call_fails_with(CUABI_ERROR_BAD_ENVIRONMENT);
    assert_contains(cuabi_driver_report(), "CUABI_LIBCUDA=\"libcuda.so.1\"");
    assert_contains(cuabi_driver_report(), "not an absolute path");
}

static void missing_file(void)
{
    assert_every_call_fails_with(CUABI_ERROR_DRIVER_NOT_FOUND);
    assert_contains(cuabi_driver_report(), env("CUABI_LIBCUDA"));
    assert_contains(cuabi_driver_report(), "dlopen failed");
    assert_contains(cuabi_driver_report(), "check the path named above");
}

static void not_a_library(void)
{
    assert_every_call_fails_with(CUABI_ERROR_DRIVER_NOT_FOUND);
    assert_contains(cuabi_driver_report(), env("CUABI_LIBCUDA"));
    /* The dynamic loader's own words for a file that is not ELF. */
    const char *report = cuabi_driver_report();
    if (strstr(report, "invalid ELF header") == NULL && strstr(report, "file too short") == NULL)
        fail_msg("the report does not say why the file could not be loaded:\n%s", report);
}

static void no_get_proc_address(void)
{
    assert_every_call_fails_with(CUABI_ERROR_DRIVER_UNUSABLE);
    assert_contains(cuabi_driver_report(), "no cuGetProcAddress_v2");
    assert_contains(cuabi_driver_report(), real(env("CUABI_LIBCUDA")));
}

static void old_driver(void)
{
    /* A 12.0 driver: entry points pinned to newer ABIs are refused one by
     * one, everything else works. */
    check_cu(cuabi_driver_status());
    int version = 0;
    check_cu(cuabi_driver_version(&version));
    assert_int_equal(version, 12000);
    check_cu(cuabi_cuInit(0));
    CUcontext ctx = NULL;
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_cuCtxCreate(&ctx, NULL, 0, 0)); /* pinned 12050 */
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_cuCtxCreate(&ctx, NULL, 0, 0)); /* remembered */
    struct fakecuda_request asked;
    assert_true(fake_request_info("cuCtxCreate", &asked));
    assert_int_equal(asked.count, 1);
    assert_int_equal(asked.version, 12050);
    float ms;
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_cuEventElapsedTime(&ms, NULL, NULL)); /* 12080 */
    assert_cu(CUABI_ERROR_DRIVER_TOO_OLD, cuabi_cuCtxSynchronize_v2(NULL));           /* 13000 */
    assert_string_equal(cuabi_error_name(CUABI_ERROR_DRIVER_TOO_OLD), "CUABI_ERROR_DRIVER_TOO_OLD");
    assert_contains(cuabi_error_string(CUABI_ERROR_DRIVER_TOO_OLD), "update the driver");
    /* Older entry points work. */
    CUdeviceptr p;
    check_cu(cuabi_cuDevicePrimaryCtxRetain(&ctx, 0));
    check_cu(cuabi_cuCtxSetCurrent(ctx));
    check_cu(cuabi_cuMemAlloc(&p, 64));
    check_cu(cuabi_cuMemFree(p));
    check_cu(cuabi_cuCtxSynchronize());
    check_cu(cuabi_cuDevicePrimaryCtxRelease(0));
    /* An entry point the driver does not have at all. */
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_cuArrayCreate(NULL, NULL));
    assert_cu(CUABI_ERROR_ENTRY_POINT_NOT_FOUND, cuabi_cuArrayCreate(NULL, NULL));
    assert_true(fake_request_info("cuArrayCreate", &asked));
    assert_int_equal(asked.count, 1); /* remembered, not asked again */
    assert_contains(cuabi_driver_report(), "opened");
    /* Codes newer than this driver are named from cuabi's table. */
    const char *s = NULL;
    check_cu(cuabi_cuGetErrorName(CUDA_ERROR_KEY_ROTATION, &s));
    assert_string_equal(s, "CUDA_ERROR_KEY_ROTATION");
    check_cu(cuabi_cuGetErrorString(CUDA_ERROR_KEY_ROTATION, &s));
    assert_string_equal(s, cuabi_error_string(CUDA_ERROR_KEY_ROTATION));
}

static void bad_stream_mode(const char *value)
{
    assert_every_call_fails_with(CUABI_ERROR_BAD_ENVIRONMENT);
    assert_int_equal(cuabi_default_stream_mode(), -1);
    char expected[64];
    snprintf(expected, sizeof expected, "CUABI_PER_THREAD_DEFAULT_STREAM=\"%s\"", value);
    assert_contains(cuabi_driver_report(), expected);
    assert_contains(cuabi_driver_report(), "must be \"0\"");
    /* The driver was not even opened. */
    assert_false(driver_library_in_process(env("CUABI_LIBCUDA")));
}

static void per_thread_mode(void)
{
    check_cu(cuabi_driver_status());
    assert_int_equal(cuabi_default_stream_mode(), 1);
    assert_contains(cuabi_driver_report(), "per-thread");
    check_cu(cuabi_set_default_stream_mode(1));
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_set_default_stream_mode(0));
    check_cu(cuabi_cuInit(0));
    struct fakecuda_request asked;
    assert_true(fake_request_info("cuInit", &asked));
    assert_int_equal(asked.flags, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUstream s = NULL;
    CUcontext ctx;
    check_cu(cuabi_cuDevicePrimaryCtxRetain(&ctx, 0));
    check_cu(cuabi_cuCtxSetCurrent(ctx));
    check_cu(cuabi_cuStreamSynchronize(s));
    assert_true(fake_request_info("cuStreamSynchronize", &asked));
    assert_int_equal(asked.version, 7000); /* the _ptsz variant */
    check_cu(cuabi_cuDevicePrimaryCtxRelease(0));
    /* cuGetProcAddress without a stream flag gets the per-thread one, as with
     * cuda.h's inline cuGetProcAddress_v2_ptsz; an explicit flag stays. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult found;
    check_cu(cuabi_cuGetProcAddress("cuStreamQuery", &fn, 7000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    assert_true(fake_request_info("cuStreamQuery", &asked));
    assert_int_equal(asked.flags, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    check_cu(cuabi_cuGetProcAddress("cuStreamQuery", &fn, 7000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found));
    assert_true(fake_request_info("cuStreamQuery", &asked));
    assert_int_equal(asked.flags, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
}

static void set_mode_beats_env(void)
{
    check_cu(cuabi_set_default_stream_mode(1)); /* before the load: wins over the environment */
    check_cu(cuabi_driver_status());
    assert_int_equal(cuabi_default_stream_mode(), 1);
    assert_contains(cuabi_driver_report(), "cuabi_set_default_stream_mode(1)");
}

static void explicit_load(void)
{
    const char *path = env("FAKE_DRIVER");
    assert_null(getenv("CUABI_LIBCUDA"));
    check_cu(cuabi_load(path));
    assert_string_equal(cuabi_driver_path(), real(path));
    assert_contains(cuabi_driver_report(), "cuabi_load(");
    check_cu(cuabi_load(path));
    assert_cu(CUABI_ERROR_ALREADY_LOADED, cuabi_load("/usr/lib/x86_64-linux-gnu/libc.so.6"));
}

static void explicit_load_relative(void)
{
    /* A relative path is refused without using up the one load. */
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_load("libfakecuda.so"));
    check_cu(cuabi_load(env("FAKE_DRIVER")));
    assert_string_equal(cuabi_driver_path(), real(env("FAKE_DRIVER")));
}

static void already_in_process(void)
{
    const char *path = env("FAKE_SYSDRIVER");
    assert_null(getenv("CUABI_LIBCUDA"));
    void *mine = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    assert_non_null(mine);
    check_cu(cuabi_driver_status());
    assert_contains(cuabi_driver_report(), "libcuda.so.1 already in this process: opened");
    assert_string_equal(cuabi_driver_path(), real(path));
    int version = 0;
    check_cu(cuabi_driver_version(&version));
    assert_int_equal(version, 13000);
}

static void system_search(void)
{
    assert_null(getenv("CUABI_LIBCUDA"));
    char expected[PATH_MAX + 32];
    /* (LD_LIBRARY_PATH names the same folder, but tools such as valgrind add to it.) */
    snprintf(expected, sizeof expected, "%s/libcuda.so.1", env("FAKE_SYSDRIVER_DIR"));
    check_cu(cuabi_driver_status());
    assert_contains(cuabi_driver_report(), "libcuda.so.1 through the system search: opened");
    assert_string_equal(cuabi_driver_path(), real(expected));
}

static void no_device(void)
{
    check_cu(cuabi_driver_status());
    assert_cu(CUDA_ERROR_NO_DEVICE, cuabi_cuInit(0)); /* the driver's answer, passed through */
    assert_string_equal(cuabi_error_name(CUDA_ERROR_NO_DEVICE), "CUDA_ERROR_NO_DEVICE");
    int count = -1;
    assert_cu(CUDA_ERROR_NOT_INITIALIZED, cuabi_cuDeviceGetCount(&count));
}

static void bad_stream_mode_yes(void)
{
    bad_stream_mode("yes");
}

static void bad_stream_mode_empty(void)
{
    bad_stream_mode("");
}

/* The registry.  env: the scenario's environment, entries separated by
 * spaces; @KEY@ stands for a path the build passes in (tests/CMakeLists.txt),
 * and where the build has none (an empty value), the scenario becomes a
 * placeholder that says `unavailable`.  A family's "absent" scenario needs the
 * machine without the family's library where cuabi's search looks, its
 * "real_library" scenario needs it there: where that is not so, the scenario is a
 * placeholder that says why, decided when the build writes the entries
 * (system_condition). */
static const struct scenario {
    const char *name;
    void (*run)(void);
    const char *env;
    const char *unavailable; /* why it cannot run where a path of env is not given */
} scenarios[] = {
    { "fake_driver", fake_driver, "CUABI_LIBCUDA=@FAKE@", NULL },
    { "report_loads_the_driver", report_loads_the_driver, "CUABI_LIBCUDA=@FAKE@", NULL },
    { "no_driver", no_driver, "", NULL },
    { "toolkit_stub", toolkit_stub, "CUABI_LIBCUDA=@STUB@",
      "the CUDA toolkit's stub libcuda.so is not installed here" },
    { "relative_path", relative_path, "CUABI_LIBCUDA=libcuda.so.1", NULL },
    { "missing_file", missing_file, "CUABI_LIBCUDA=@MISSING@", NULL },
    { "not_a_library", not_a_library, "CUABI_LIBCUDA=@NOT_A_LIBRARY@", NULL },
    { "no_get_proc_address", no_get_proc_address, "CUABI_LIBCUDA=@NOGPA@", NULL },
    { "old_driver", old_driver, "CUABI_LIBCUDA=@FAKE@ FAKECUDA_DRIVER_VERSION=12000", NULL },
    { "bad_stream_mode", bad_stream_mode_yes,
      "CUABI_LIBCUDA=@FAKE@ CUABI_PER_THREAD_DEFAULT_STREAM=yes", NULL },
    { "empty_stream_mode", bad_stream_mode_empty,
      "CUABI_LIBCUDA=@FAKE@ CUABI_PER_THREAD_DEFAULT_STREAM=", NULL },
    { "per_thread_mode", per_thread_mode, "CUABI_LIBCUDA=@FAKE@ CUABI_PER_THREAD_DEFAULT_STREAM=1", NULL },
    { "set_mode_beats_env", set_mode_beats_env,
      "CUABI_LIBCUDA=@FAKE@ CUABI_PER_THREAD_DEFAULT_STREAM=0", NULL },
    { "explicit_load", explicit_load, "FAKE_DRIVER=@FAKE@", NULL },
    { "explicit_load_relative", explicit_load_relative, "FAKE_DRIVER=@FAKE@", NULL },
    { "already_in_process", already_in_process, "FAKE_SYSDRIVER=@SYSDRIVER@", NULL },
    { "system_search", system_search,
      "LD_LIBRARY_PATH=@SYSDRIVER_DIR@ FAKE_SYSDRIVER_DIR=@SYSDRIVER_DIR@", NULL },
    { "no_device", no_device, "CUABI_LIBCUDA=@FAKE@ FAKECUDA_DEVICE_COUNT=0", NULL },
    { "driver.load_library", driver_load_library, "FAKE_DRIVER=@FAKE@", NULL },
/* The library families (tests/loading_families.c), each scenario once per family: F its
 * name in the ctest entry, V its environment variable's suffix and its fakes' key, N its
 * CUABI_LIBRARY_* number, OLD what makes its fake too old. */
#define FAMILY_SCENARIOS(F, V, N, OLD)                                                           \
    { F ".env_override", family_env_override, "CUABI_TEST_FAMILY=" #N " CUABI_LIB" V "=@FAKE" V "@", NULL }, \
    { F ".explicit_path", family_explicit_path, "CUABI_TEST_FAMILY=" #N " FAKE_FAMILY=@FAKE" V "@", NULL }, \
    { F ".explicit_path_beats_env", family_explicit_beats_env,                                  \
      "CUABI_TEST_FAMILY=" #N " CUABI_LIB" V "=@MISSING@ FAKE_FAMILY=@FAKE" V "@", NULL },       \
    { F ".relative_env", family_relative_env, "CUABI_TEST_FAMILY=" #N " CUABI_LIB" V "=lib" F ".so", NULL }, \
    { F ".missing_file", family_missing_file, "CUABI_TEST_FAMILY=" #N " CUABI_LIB" V "=@MISSING@", NULL }, \
    { F ".too_old", family_too_old, "CUABI_TEST_FAMILY=" #N " " OLD, NULL },                     \
    { F ".function_missing", family_function_missing,                                            \
      "CUABI_TEST_FAMILY=" #N " CUABI_LIB" V "=@PARTIAL" V "@", NULL },                          \
    { F ".already_in_process", family_already_in_process,                                        \
      "CUABI_TEST_FAMILY=" #N " FAKE_SYSFAMILY=@SYS" V "@", NULL },                              \
    { F ".system_search", family_system_search,                                                  \
      "CUABI_TEST_FAMILY=" #N " LD_LIBRARY_PATH=@SYSFAMILIES_DIR@ FAKE_SYSFAMILIES_DIR=@SYSFAMILIES_DIR@", NULL }, \
    { F ".wrong_soname", family_wrong_soname,                                                    \
      "CUABI_TEST_FAMILY=" #N " LD_LIBRARY_PATH=@WRONGNAME_DIR@ FAKE_WRONGNAME_DIR=@WRONGNAME_DIR@", NULL }, \
    { F ".absent", family_absent, "CUABI_TEST_FAMILY=" #N, NULL },                               \
    { F ".real_library", family_real_library, "CUABI_TEST_FAMILY=" #N, NULL },
    FAMILY_SCENARIOS("nvrtc", "NVRTC", 1, "CUABI_LIBNVRTC=@FAKENVRTC@ FAKEFAM_VERSION=11.8")
    FAMILY_SCENARIOS("nvjitlink", "NVJITLINK", 2, "CUABI_LIBNVJITLINK=@FAKENVJITLINK@ FAKEFAM_VERSION=12.9")
    FAMILY_SCENARIOS("nvvm", "NVVM", 3, "CUABI_LIBNVVM=@FAKENVVM@ FAKEFAM_VERSION=1.9")
    FAMILY_SCENARIOS("nvml", "NVML", 4, "CUABI_LIBNVML=@OLDNVML@")
#undef FAMILY_SCENARIOS
/* CUABI_TRACE (docs/tracing.md), on the fake driver and the fake NVRTC. */
#define TRACE_FAKES "CUABI_LIBCUDA=@FAKE@ CUABI_LIBNVRTC=@FAKENVRTC@ CUABI_LIBNVML=@FAKENVML@"
    { "trace.to_stderr", trace_to_stderr, TRACE_FAKES " CUABI_TRACE=1 FAKE_TRACE_FILE=@TRACE_DIR@/to_stderr.log", NULL },
    { "trace.to_file", trace_to_file, TRACE_FAKES " CUABI_TRACE=@TRACE_DIR@/to_file.log", NULL },
    { "trace.relative_path", trace_relative_path, TRACE_FAKES " CUABI_TRACE=trace.log", NULL },
    { "trace.bad_value", trace_bad_value, TRACE_FAKES " CUABI_TRACE=yes", NULL },
    { "trace.unopenable_file", trace_unopenable_file,
      TRACE_FAKES " CUABI_TRACE=@MISSING@.trace", NULL },
    { "trace.program_wins", trace_program_wins,
      TRACE_FAKES " CUABI_TRACE=1 FAKE_TRACE_FILE=@TRACE_DIR@/program_wins.log", NULL },
#undef TRACE_FAKES
};
#define SCENARIO_COUNT (sizeof scenarios / sizeof scenarios[0])

static void test_scenario(void **state)
{
    (void)state;
    for (size_t i = 0; i < SCENARIO_COUNT; i++) {
        if (strcmp(scenarios[i].name, scenario) == 0) {
            scenarios[i].run();
            return;
        }
    }
    fail_msg("unknown scenario %s", scenario);
}

/* Whether cuabi's search finds library `library` on this machine: asked of a child
 * started with an empty environment, as system_has_driver() does (`emulator`: the
 * words that run this program in a cross build, or ""). */
static int system_has_library(int library, const char *self, const char *emulator)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char words[1024], number[16], *argv[16];
        int argc = 0;
        if (strlen(emulator) < sizeof words) {
            strcpy(words, emulator);
            for (char *w = strtok(words, " "); w != NULL && argc < 12; w = strtok(NULL, " "))
                argv[argc++] = w;
        }
        snprintf(number, sizeof number, "%d", library);
        argv[argc++] = (char *)self;
        argv[argc++] = "--probe-system-library";
        argv[argc++] = number;
        argv[argc] = NULL;
        char *const envp[] = { NULL };
        execvpe(argv[0], argv, envp);
        _exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

/* N > 0: the scenario needs library N (CUABI_LIBRARY_*) on this machine, where
 * cuabi's search finds it; -N: it needs the machine without it; 0: neither. */
static int system_condition(const struct scenario *s)
{
    const char *family = strstr(s->env, "CUABI_TEST_FAMILY=");
    int library = family != NULL ? atoi(family + strlen("CUABI_TEST_FAMILY=")) : 0;
    if (s->run == family_absent)
        return -library;
    if (s->run == family_real_library)
        return library;
    return 0;
}

/* The value given for @KEY@ (`key` points just past the '@', `len` long), or NULL. */
static const char *key_value(const char *key, size_t len, int nkeys, char **keys)
{
    for (int k = 0; k < nkeys; k++)
        if (strncmp(keys[k], key, len) == 0 && keys[k][len] == '=')
            return keys[k] + len + 1;
    return NULL;
}

/* The first @KEY@ of `env` given an empty value (a path this build does not
 * have), or NULL when every one has a value. */
static const char *unavailable_key(const char *env, int nkeys, char **keys, size_t *len)
{
    for (const char *c = strchr(env, '@'); c != NULL; c = strchr(c + 1, '@')) {
        const char *close = strchr(c + 1, '@');
        if (close == NULL)
            return NULL;
        const char *value = key_value(c + 1, (size_t)(close - c - 1), nkeys, keys);
        if (value != NULL && value[0] == '\0') {
            *len = (size_t)(close - c - 1);
            return c + 1;
        }
        c = close;
    }
    return NULL;
}

/* Writes `value` with each @KEY@ replaced by the KEY=VALUE among keys. */
static int write_filled(FILE *out, const char *value, int nkeys, char **keys)
{
    for (const char *c = value; *c != '\0'; c++) {
        const char *close = *c == '@' ? strchr(c + 1, '@') : NULL;
        if (close == NULL) {
            fputc(*c, out);
            continue;
        }
        size_t len = (size_t)(close - c - 1);
        int found = 0;
        for (int k = 0; k < nkeys && !found; k++) {
            if (strncmp(keys[k], c + 1, len) == 0 && keys[k][len] == '=') {
                fputs(keys[k] + len + 1, out);
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "test_loading --ctest: no value given for @%.*s@\n", (int)len, c + 1);
            return -1;
        }
        c = close;
    }
    return 0;
}

/* --ctest FILE KEY=VALUE...: writes one ctest entry per scenario into FILE,
 * which ctest includes (TEST_INCLUDE_FILES). */
static int write_ctest_file(const char *path, const char *self, int nkeys, char **keys)
{
    /* EMULATOR=...: what runs the program where the build cannot (qemu for a
     * cross build), written before it; the words are a CMake list there. */
    const char *emulator = "";
    for (int k = 0; k < nkeys; k++)
        if (strncmp(keys[k], "EMULATOR=", 9) == 0 && keys[k][9] != '\0')
            emulator = keys[k] + 9;
    const char *emulator_words = emulator; /* for system_has_driver's child */
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s%s", emulator, emulator[0] != '\0' ? " " : "");
    emulator = prefix;
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        perror(path);
        return 2;
    }
    fprintf(out, "# Written by test_loading --ctest from its scenario table. Do not edit.\n");
    int rc = 0;
    const char *skipped_sh = key_value("SKIPPED_SH", 10, nkeys, keys);
    for (size_t i = 0; i < SCENARIO_COUNT && rc == 0; i++) {
        const struct scenario *s = &scenarios[i];
        size_t len = 0;
        const char *missing = unavailable_key(s->env, nkeys, keys, &len);
        int system = system_condition(s);
        int library = system < 0 ? -system : system;
        if (library != 0 && skipped_sh != NULL &&
            system_has_library(library, self, emulator_words) != (system > 0)) {
            /* A placeholder: this machine has (or lacks) the library the scenario needs
             * it to lack (or have). */
            fprintf(out, "add_test(loading.%s sh \"%s\" \"this machine %s library %d "
                         "(CUABI_LIBRARY_*) where cuabi's search finds it: the scenario needs it %s\")\n",
                    s->name, skipped_sh, system > 0 ? "has no" : "has the", library,
                    system > 0 ? "there" : "absent");
            fprintf(out, "set_tests_properties(loading.%s PROPERTIES LABELS \"placeholder;script;loading\" "
                         "SKIP_RETURN_CODE 77)\n", s->name);
            continue;
        }
        if (missing != NULL && skipped_sh != NULL) {
            /* A placeholder: reported Skipped, saying why (tests/CMakeLists.txt). */
            fprintf(out, "add_test(loading.%s sh \"%s\" \"%s: this build has no %.*s path\")\n",
                    s->name, skipped_sh, s->unavailable, (int)len, missing);
            fprintf(out, "set_tests_properties(loading.%s PROPERTIES LABELS \"placeholder;script;loading\" "
                         "SKIP_RETURN_CODE 77)\n", s->name);
            continue;
        }
        fprintf(out, "add_test(loading.%s %s\"%s\" %s)\n", s->name, emulator, self, s->name);
        fprintf(out, "set_tests_properties(loading.%s PROPERTIES LABELS \"c;loading\" "
                     "SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT \"CUABI_TEST_SCENARIO=%s",
                s->name, s->name);
        if (emulator_words[0] != '\0')
            fprintf(out, ";CUABI_TEST_EMULATOR=%s", emulator_words);
        for (const char *c = s->env; *c != '\0' && rc == 0; c++) {
            const char *end = strchr(c, ' ');
            size_t len = end != NULL ? (size_t)(end - c) : strlen(c);
            char entry[512];
            if (len >= sizeof entry) {
                rc = 2;
                break;
            }
            memcpy(entry, c, len);
            entry[len] = '\0';
            fputc(';', out);
            if (write_filled(out, entry, nkeys, keys) != 0)
                rc = 2;
            c += len;
            if (*c == '\0')
                break;
        }
        fprintf(out, "\")\n");
    }
    if (fclose(out) != 0)
        rc = 2;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--ctest") == 0) {
        char self[PATH_MAX];
        if (realpath(argv[0], self) == NULL) {
            perror(argv[0]);
            return 2;
        }
        return write_ctest_file(argv[2], self, argc - 3, argv + 3);
    }
    if (argc == 2 && strcmp(argv[1], "--probe-system-driver") == 0)
        return cuabi_driver_status() == CUDA_SUCCESS ? 1 : 0;
    if (argc == 3 && strcmp(argv[1], "--probe-system-library") == 0)
        return cuabi_library_status(atoi(argv[2])) == CUDA_SUCCESS ? 1 : 0;
    if (argc != 2) {
        fprintf(stderr, "usage: test_loading SCENARIO | --ctest FILE KEY=VALUE... "
                        "(scenarios: the table at the end of tests/test_loading.c)\n");
        return 2;
    }
    scenario = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenario),
    };
    return cmocka_run_group_tests_name(scenario, tests, NULL, NULL);
}

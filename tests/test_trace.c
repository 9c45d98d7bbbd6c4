/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tracing switched at run time (docs/tracing.md): cuabi_trace_start() makes every
 * forwarded call write a line, decoded from the tables (enumerators by name,
 * handles and pointers in hex, strings quoted, outputs after a successful call),
 * with its result by name and its duration; cuabi_trace_stop() puts the slots
 * back, so that a forwarder jumps straight into the library again.
 *
 *   test_trace lines    the lines of calls of the fake driver and the families'
 *                       fakes (functional), and of calls that never reached a
 *                       library; the fast path before, during and after
 *   test_trace threads  threads calling forwarders while another switches tracing
 *                       on and off (run under TSan too): every line written whole
 *
 * The environment (tests/CMakeLists.txt) names the fakes, a missing NVML and a
 * partial NVRTC, and CUABI_TEST_TRACE_FILE, where the lines go.
 */
#define _GNU_SOURCE
#include "support.h"

#include <cuabi/nvjitlink.h>
#include <cuabi/nvml.h>
#include <cuabi/nvrtc.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *trace_file(void)
{
    const char *path = getenv("CUABI_TEST_TRACE_FILE");
    if (path == NULL || path[0] != '/')
        fail_msg("this test needs CUABI_TEST_TRACE_FILE=/abs/path (ctest sets it)");
    return path;
}

/* The whole trace, in a buffer of its own until the next call. */
static char *buf;

static char *read_trace(void)
{
    free(buf);
    FILE *f = fopen(trace_file(), "r");
    long size = 0;
    if (f != NULL && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    size_t n = 0;
    if (f != NULL && fseek(f, 0, SEEK_SET) == 0)
        n = fread(buf, 1, (size_t)size, f);
    buf[n] = '\0';
    if (f != NULL)
        fclose(f);
    return buf;
}

/* The line of the last call of `name` in the trace. */
static const char *last_line_of(const char *name)
{
    static char line[8192];
    char needle[160];
    snprintf(needle, sizeof needle, " %s(", name);
    const char *text = read_trace(), *found = NULL;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        found = at;
    if (found == NULL)
        fail_msg("no line of %s in the trace:\n%s", name, text);
    while (found > text && found[-1] != '\n')
        found--;
    size_t len = strcspn(found, "\n");
    snprintf(line, sizeof line, "%.*s", (int)len, found);
    return line;
}

/* Where the fake NVJITLINK's last call returned to: this program when the forwarder
 * jumped straight into it, elsewhere (libffi) when a trace wrapper called it. */
static int returned_into_this_program(void)
{
    char self[PATH_MAX], file[PATH_MAX];
    Dl_info info;
    void *to = ((fakefam_last_return_address_fn)family_fake_symbol(CUABI_LIBRARY_NVJITLINK,
                                                                   "fakefam_last_return_address"))();
    if (realpath("/proc/self/exe", self) == NULL || dladdr(to, &info) == 0 ||
        realpath(info.dli_fname, file) == NULL)
        fail_msg("cannot tell where %p is", to);
    return strcmp(self, file) == 0;
}

static __attribute__((noinline)) unsigned jit_version(void)
{
    unsigned major = 0, minor = 0;
    nvJitLinkResult rc = cuabi_nvJitLinkVersion(&major, &minor);
    assert_int_equal(rc, NVJITLINK_SUCCESS);
    return major * 1000 + minor * 10;
}

/* How many descriptors this process has open. */
static int open_descriptors(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

static void test_lines(void **state)
{
    (void)state;
    unlink(trace_file());
    assert_int_equal(cuabi_trace_enabled(), 0);
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_trace_start("trace.log"));
    assert_cu(CUDA_ERROR_OPERATING_SYSTEM, cuabi_trace_start("/no/such/folder/trace.log"));
    assert_int_equal(cuabi_trace_enabled(), 0);

    /* Off: from its slot (after the first call, which fills it) the forwarder jumps
     * into the library. */
    assert_int_equal(jit_version(), 13050);
    assert_int_equal(jit_version(), 13050);
    assert_true(returned_into_this_program() || !CUABI_TEST_FORWARDERS_JUMP);

    check_cu(cuabi_trace_start(trace_file()));
    assert_int_equal(cuabi_trace_enabled(), 1);
    /* On: a slot filled before tracing came on now points at its wrapper. */
    assert_int_equal(jit_version(), 13050);
    assert_false(returned_into_this_program());
    const char *line = last_line_of("nvJitLinkVersion");
    assert_contains(line, "cuabi-trace ");
    assert_contains(line, " nvjitlink nvJitLinkVersion(major=0x");
    assert_contains(line, "->13, minor=0x");
    assert_contains(line, "->5) = NVJITLINK_SUCCESS (0) ");
    assert_contains(line, "us");

    /* Enumerators, strings, arrays of strings, handles written through, sizes. */
    nvJitLinkHandle h = NULL;
    const char *options[] = { "-arch=sm_80", "-lto" };
    assert_int_equal(cuabi_nvJitLinkCreate(&h, 2, options), NVJITLINK_SUCCESS);
    assert_contains(last_line_of("nvJitLinkCreate"), "numOptions=2, options=0x");
    assert_contains(last_line_of("nvJitLinkCreate"), "[\"-arch=sm_80\", \"-lto\"]) = NVJITLINK_SUCCESS");
    char handle_text[64];
    snprintf(handle_text, sizeof handle_text, "->%p", (void *)h);
    assert_contains(last_line_of("nvJitLinkCreate"), handle_text);
    const char ptx[] = ".version 8.0\n";
    assert_int_equal(cuabi_nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, sizeof ptx, "k.ptx"), NVJITLINK_SUCCESS);
    line = last_line_of("nvJitLinkAddData");
    assert_contains(line, "inputType=NVJITLINK_INPUT_PTX, data=0x");
    char size_text[32];
    snprintf(size_text, sizeof size_text, "size=%zu, name=\"k.ptx\")", sizeof ptx);
    assert_contains(line, size_text);
    /* A failure: its code by name, and no output read. */
    assert_int_equal(cuabi_nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, NULL, 0, NULL), NVJITLINK_ERROR_INVALID_INPUT);
    assert_contains(last_line_of("nvJitLinkAddData"), "data=NULL, size=0, name=NULL) = NVJITLINK_ERROR_INVALID_INPUT (3)");
    size_t cubin = 0;
    assert_int_equal(cuabi_nvJitLinkGetLinkedCubinSize(h, &cubin), NVJITLINK_SUCCESS);
    snprintf(size_text, sizeof size_text, "->%zu) = NVJITLINK_SUCCESS", cubin);
    assert_contains(last_line_of("nvJitLinkGetLinkedCubinSize"), size_text);
    assert_int_equal(cuabi_nvJitLinkDestroy(&h), NVJITLINK_SUCCESS);
    assert_contains(last_line_of("nvJitLinkDestroy"), "->NULL) = NVJITLINK_SUCCESS (0)");
    /* A long string: at most 64 bytes of it. */
    char long_name[200];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    assert_int_equal(cuabi_nvJitLinkAddFile(NULL, NVJITLINK_INPUT_CUBIN, long_name), NVJITLINK_SUCCESS);
    assert_contains(last_line_of("nvJitLinkAddFile"), "nnnnnnnn\"...) = NVJITLINK_SUCCESS");

    /* The driver: an enum argument, a device handle, the result by name. */
    check_cu(cuabi_cuInit(0));
    int warp = 0;
    check_cu(cuabi_cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    line = last_line_of("cuDeviceGetAttribute");
    assert_contains(line, " driver cuDeviceGetAttribute(pi=0x");
    assert_contains(line, "->32, attrib=CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev=0) = CUDA_SUCCESS (0) ");
    assert_cu(CUDA_ERROR_INVALID_VALUE, cuabi_cuDeviceGetAttribute(&warp, (CUdevice_attribute)100000, 0));
    assert_contains(last_line_of("cuDeviceGetAttribute"), "attrib=100000, dev=0) = CUDA_ERROR_INVALID_VALUE (1)");
    if (strstr(last_line_of("cuDeviceGetAttribute"), "->") != NULL) /* outputs of a success only */
        fail_msg("an output read after a failed call: %s", last_line_of("cuDeviceGetAttribute"));
    /* A struct passed by value reaches the driver through the wrapper as without it. */
    CUmemLocation where = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 7 };
    CUresult traced = cuabi_cuMemPrefetchAsync((CUdeviceptr)16, 64, where, 0, NULL);
    assert_contains(last_line_of("cuMemPrefetchAsync"), "location={01000000 07000000}");
    /* cuabi's own codes by name: a function the library lacks, a library missing. */
    size_t tile = 0;
    assert_int_equal(cuabi_nvrtcGetTileIRSize(NULL, &tile), CUABI_NVRTC_FUNCTION_MISSING);
    assert_contains(last_line_of("nvrtcGetTileIRSize"),
                    " nvrtc nvrtcGetTileIRSize(...) = CUABI_ERROR_FUNCTION_MISSING (100011) not called");
    assert_int_equal(cuabi_nvmlInit(), NVML_ERROR_LIBRARY_NOT_FOUND);
    assert_contains(last_line_of("nvmlInit"), " nvml nvmlInit() = NVML_ERROR_LIBRARY_NOT_FOUND (12) not called");
    /* The code-to-text functions, wrapped, are traced through their forwarder. */
    assert_string_equal(cuabi_nvrtcGetErrorString(NVRTC_ERROR_COMPILATION), "fake family library: an error");
    assert_contains(last_line_of("nvrtcGetErrorString"),
                    "(result=NVRTC_ERROR_COMPILATION) = \"fake family library: an error\"");

    /* Off again: no more lines, and the forwarders jump into the library again. */
    check_cu(cuabi_trace_stop());
    assert_int_equal(cuabi_trace_enabled(), 0);
    size_t before = strlen(read_trace());
    assert_int_equal(jit_version(), 13050);
    assert_true(returned_into_this_program() || !CUABI_TEST_FORWARDERS_JUMP);
    int version = 0;
    check_cu(cuabi_cuDriverGetVersion(&version));
    assert_cu(traced, cuabi_cuMemPrefetchAsync((CUdeviceptr)16, 64, where, 0, NULL));
    assert_int_equal(strlen(read_trace()), before);
    /* And on once more, to the same file: the wrappers built before serve again. */
    check_cu(cuabi_trace_start(trace_file()));
    assert_int_equal(jit_version(), 13050);
    assert_false(returned_into_this_program());
    check_cu(cuabi_trace_stop());
    assert_true(strlen(read_trace()) > before);

    /* At most 8 distinct files per process: a further one is refused without
     * opening it (no descriptor lost, however often it is tried), and a path
     * already kept still serves. */
    char dir[] = "/tmp/cuabi-trace-files-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    unsigned accepted = 0;
    CUresult refused = CUDA_SUCCESS;
    for (unsigned i = 0; i < 9 && refused == CUDA_SUCCESS; i++) {
        snprintf(path, sizeof path, "%s/%u.log", dir, i);
        refused = cuabi_trace_start(path);
        accepted += refused == CUDA_SUCCESS;
    }
    assert_cu(CUDA_ERROR_OPERATING_SYSTEM, refused);
    assert_in_range(accepted, 1, 7); /* trace_file() holds one of the 8 */
    assert_int_equal(access(path, F_OK), -1);
    int fds_before = open_descriptors();
    for (int i = 0; i < 20; i++)
        assert_cu(CUDA_ERROR_OPERATING_SYSTEM, cuabi_trace_start(path));
    assert_int_equal(open_descriptors(), fds_before);
    check_cu(cuabi_trace_start(trace_file()));
    check_cu(cuabi_trace_stop());
    for (unsigned i = 0; i < accepted; i++) {
        snprintf(path, sizeof path, "%s/%u.log", dir, i);
        unlink(path);
    }
    rmdir(dir);
}

/* ---- threads -------------------------------------------------------------------- */

static _Atomic(int) stop_calling;

static void *calls(void *arg)
{
    (void)arg;
    unsigned major, minor;
    int version;
    while (!atomic_load(&stop_calling)) {
        if (cuabi_nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS || major != 13)
            return (void *)1;
        if (cuabi_cuDriverGetVersion(&version) != CUDA_SUCCESS || version != 13000)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    unlink(trace_file());
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, calls, NULL), 0);
    for (int round = 0; round < 200; round++) {
        check_cu(cuabi_trace_start(trace_file()));
        usleep(100);
        check_cu(cuabi_trace_stop());
    }
    atomic_store(&stop_calling, 1);
    for (int i = 0; i < 4; i++) {
        void *failed = NULL;
        pthread_join(threads[i], &failed);
        assert_null(failed);
    }
    /* Every line whole: one write each. */
    const char *text = read_trace();
    assert_true(strlen(text) > 0);
    unsigned lines = 0;
    for (const char *at = text; *at != '\0'; lines++) {
        size_t len = strcspn(at, "\n");
        if (strncmp(at, "cuabi-trace ", 12) != 0 || len < 3 || strncmp(at + len - 2, "us", 2) != 0)
            fail_msg("a broken line: %.*s", (int)len, at);
        at += len + (at[len] == '\n');
    }
    print_message("%u lines\n", lines);
}

static int free_trace(void **state)
{
    (void)state;
    free(buf);
    buf = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "lines") == 0) {
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_lines) };
        return cmocka_run_group_tests_name("trace lines", tests, NULL, free_trace);
    }
    if (argc == 2 && strcmp(argv[1], "threads") == 0) {
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_threads) };
        return cmocka_run_group_tests_name("trace threads", tests, NULL, free_trace);
    }
    fprintf(stderr, "usage: test_trace lines|threads\n");
    return 2;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * families_check - cuabi's library families (NVRTC, nvJitLink, NVML) on a real GPU, run by
 * tests/gpu/run, and on the fakes by ctest (gpu.families_check_on_fakes):
 *
 *   1. NVRTC compiles saxpy for device 0's architecture, once to LTO IR (-dlto) and once to PTX;
 *   2. nvJitLink links the LTO IR into a cubin for that architecture (-lto);
 *   3. the driver loads the cubin with cuModuleLoadData, launches saxpy, and the result is
 *      checked; the same with NVRTC's PTX;
 *   4. NVML: init, device count (the driver's), name, memory, temperature, driver version;
 *   5. with CUABI_TRACE=/abs/file: every family's calls above are in the trace, decoded.
 *
 * A family whose library this machine lacks (or has only in a version too old for cuabi) is
 * reported with the first lines of its cuabi_library_report() and its steps count as skipped,
 * never as passed.  Each step prints "ok", "FAIL" or "skip"; the last line is
 * "N passed, M failed, K skipped"; the exit status is 1 when anything failed.
 *
 * usage: [CUABI_LIBNVRTC=/abs/libnvrtc.so.13] [CUABI_LIBNVJITLINK=/abs/libnvJitLink.so.13]
 *        [CUABI_TRACE=/abs/trace.log] families_check
 * (the trace file is emptied first: cuabi appends to it, and only this run's lines count)
 */
#include <cuabi.h>
#include <cuabi/nvjitlink.h>
#include <cuabi/nvml.h>
#include <cuabi/nvrtc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned passed, failed, skipped;

static int check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        passed++;
    else
        failed++;
    return ok;
}

static void skip(const char *what, const char *why)
{
    printf("skip %s: %s\n", what, why);
    skipped++;
}

/* Whether the family's library is usable here; if not, says why (a missing or too old
 * library is the machine's, not cuabi's: its steps are skipped; anything else fails). */
static int family_present(int32_t family, const char *name)
{
    CUresult status = cuabi_library_status(family);
    if (status == CUDA_SUCCESS) {
        printf("%s: %s\n", name, cuabi_library_path(family));
        return 1;
    }
    const char *report = cuabi_library_report(family);
    if (status == CUABI_ERROR_LIBRARY_MISSING || status == CUABI_ERROR_LIBRARY_TOO_OLD) {
        printf("%s is not on this machine (%s); its steps are skipped. cuabi's report:\n%s", name,
               status == CUABI_ERROR_LIBRARY_MISSING ? "not found" : "too old for cuabi", report);
        return 0;
    }
    check(0, name);
    printf("%s could not be loaded: %s\n%s", name, cuabi_error_name(status), report);
    return 0;
}

static const char saxpy_source[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n";

/* Compiles saxpy with the options; returns its LTO IR (lto) or its PTX, malloc'd, or NULL. */
static char *nvrtc_compile(int lto, int noptions, const char *const *options, size_t *size)
{
    nvrtcProgram prog = NULL;
    char *out = NULL;
    *size = 0;
    nvrtcResult rc = cuabi_nvrtcCreateProgram(&prog, saxpy_source, "saxpy.cu", 0, NULL, NULL);
    if (rc == NVRTC_SUCCESS)
        rc = cuabi_nvrtcCompileProgram(prog, noptions, options);
    if (rc == NVRTC_ERROR_COMPILATION) {
        size_t log_size = 0;
        char *log = NULL;
        if (cuabi_nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && (log = malloc(log_size + 1)) != NULL &&
            cuabi_nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
            printf("NVRTC's log:\n%s\n", log);
        free(log);
    }
    if (rc == NVRTC_SUCCESS)
        rc = lto ? cuabi_nvrtcGetLTOIRSize(prog, size) : cuabi_nvrtcGetPTXSize(prog, size);
    if (rc == NVRTC_SUCCESS && *size > 0 && (out = malloc(*size)) != NULL)
        rc = lto ? cuabi_nvrtcGetLTOIR(prog, out) : cuabi_nvrtcGetPTX(prog, out);
    if (prog != NULL && cuabi_nvrtcDestroyProgram(&prog) != NVRTC_SUCCESS)
        rc = NVRTC_ERROR_INVALID_PROGRAM;
    if (rc != NVRTC_SUCCESS) {
        printf("NVRTC: %s\n", cuabi_nvrtcGetErrorString(rc));
        free(out);
        return NULL;
    }
    return out;
}

/* Links the LTO IR into a cubin for sm; returns it, malloc'd, or NULL. */
static void *nvjitlink_link(const char *sm, const char *ltoir, size_t ltoir_size, size_t *size)
{
    nvJitLinkHandle link = NULL;
    void *cubin = NULL;
    const char *options[] = { "-lto", sm };
    nvJitLinkResult rc = cuabi_nvJitLinkCreate(&link, 2, options);
    if (rc == NVJITLINK_SUCCESS)
        rc = cuabi_nvJitLinkAddData(link, NVJITLINK_INPUT_LTOIR, ltoir, ltoir_size, "saxpy.ltoir");
    if (rc == NVJITLINK_SUCCESS)
        rc = cuabi_nvJitLinkComplete(link);
    if (rc == NVJITLINK_SUCCESS)
        rc = cuabi_nvJitLinkGetLinkedCubinSize(link, size);
    if (rc == NVJITLINK_SUCCESS && *size > 0 && (cubin = malloc(*size)) != NULL)
        rc = cuabi_nvJitLinkGetLinkedCubin(link, cubin);
    if (rc != NVJITLINK_SUCCESS) {
        size_t log_size = 0;
        char *log = NULL;
        printf("nvJitLink: result %d\n", (int)rc);
        if (link != NULL && cuabi_nvJitLinkGetErrorLogSize(link, &log_size) == NVJITLINK_SUCCESS &&
            (log = malloc(log_size + 1)) != NULL && cuabi_nvJitLinkGetErrorLog(link, log) == NVJITLINK_SUCCESS)
            printf("nvJitLink's log:\n%s\n", log);
        free(log);
        free(cubin);
        cubin = NULL;
    }
    if (link != NULL && cuabi_nvJitLinkDestroy(&link) != NVJITLINK_SUCCESS) {
        free(cubin);
        cubin = NULL;
    }
    return cubin;
}

/* Loads the image, runs saxpy on it (y = 2x + 1) and checks every element. */
static int run_saxpy(const void *image, const char *what)
{
    enum { N = 1000 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    CUmodule module = NULL;
    CUfunction saxpy = NULL;
    CUdeviceptr dx = 0, dy = 0;
    CUresult rc = cuabi_cuModuleLoadData(&module, image);
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuModuleGetFunction(&saxpy, module, "saxpy");
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuMemAlloc(&dx, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuMemAlloc(&dy, sizeof y);
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuMemcpyHtoD(dx, x, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuMemcpyHtoD(dy, y, sizeof y);
    float a = 2.0f;
    int n = N;
    void *args[] = { &a, &dx, &dy, &n };
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuLaunchKernel(saxpy, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuCtxSynchronize();
    if (rc == CUDA_SUCCESS)
        rc = cuabi_cuMemcpyDtoH(y, dy, sizeof y);
    int wrong = 0;
    for (int i = 0; rc == CUDA_SUCCESS && i < N; i++)
        wrong += fabsf(y[i] - (2.0f * (float)i + 1.0f)) > 1e-3f;
    if (rc != CUDA_SUCCESS)
        printf("%s: %s\n", what, cuabi_error_name(rc));
    else if (wrong != 0)
        printf("%s: %d of %d elements wrong (y[1] = %g)\n", what, wrong, N, (double)y[1]);
    if (dx != 0)
        cuabi_cuMemFree(dx);
    if (dy != 0)
        cuabi_cuMemFree(dy);
    if (module != NULL)
        cuabi_cuModuleUnload(module);
    return rc == CUDA_SUCCESS && wrong == 0;
}

/* NVML's description of rc, in parentheses, where rc is an error; else nothing. */
static const char *nvml_failure(nvmlReturn_t rc)
{
    static char text[160];
    if (rc == NVML_SUCCESS)
        return "";
    snprintf(text, sizeof text, " (%s)", cuabi_nvmlErrorString(rc));
    return text;
}

static void nvml_steps(int driver_devices)
{
    nvmlReturn_t rc = cuabi_nvmlInit();
    if (!check(rc == NVML_SUCCESS, "NVML: nvmlInit")) {
        printf("NVML:%s\n", nvml_failure(rc));
        return;
    }
    unsigned count = 0;
    rc = cuabi_nvmlDeviceGetCount(&count);
    check(rc == NVML_SUCCESS && count > 0 && (int)count == driver_devices, "NVML: device count is the driver's");
    printf("NVML: %u devices, the driver %d%s\n", count, driver_devices, nvml_failure(rc));
    nvmlDevice_t device = NULL;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE] = "";
    rc = cuabi_nvmlDeviceGetHandleByIndex(0, &device);
    if (rc == NVML_SUCCESS)
        rc = cuabi_nvmlDeviceGetName(device, name, sizeof name);
    check(rc == NVML_SUCCESS && name[0] != '\0', "NVML: device 0's name");
    printf("NVML: device 0 \"%s\"%s\n", name, nvml_failure(rc));
    nvmlMemory_t memory = { 0, 0, 0 };
    rc = device != NULL ? cuabi_nvmlDeviceGetMemoryInfo(device, &memory) : NVML_ERROR_INVALID_ARGUMENT;
    check(rc == NVML_SUCCESS && memory.total > 0 && memory.free <= memory.total && memory.used <= memory.total,
          "NVML: device 0's memory (total > 0, free and used within it)");
    printf("NVML: %llu MiB total, %llu MiB free, %llu MiB used%s\n", memory.total >> 20, memory.free >> 20,
           memory.used >> 20, nvml_failure(rc));
    unsigned temperature = 0;
    rc = device != NULL ? cuabi_nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &temperature)
                        : NVML_ERROR_INVALID_ARGUMENT;
    check(rc == NVML_SUCCESS && temperature > 0 && temperature < 130, "NVML: device 0's temperature (1-129 C)");
    printf("NVML: %u C%s\n", temperature, nvml_failure(rc));
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    rc = cuabi_nvmlSystemGetDriverVersion(version, sizeof version);
    check(rc == NVML_SUCCESS && version[0] >= '0' && version[0] <= '9' && strchr(version, '.') != NULL,
          "NVML: the driver's version (N.N...)");
    printf("NVML: driver %s%s\n", version, nvml_failure(rc));
    check(cuabi_nvmlShutdown() == NVML_SUCCESS, "NVML: nvmlShutdown");
}

/* 5: each family that ran left its calls in the trace, with decoded arguments and results. */
static void trace_steps(const char *trace, int nvrtc, int nvjitlink, int nvml)
{
    check(cuabi_trace_enabled() == 1, "trace: CUABI_TRACE turned tracing on");
    cuabi_trace_stop();
    static char text[1 << 22];
    FILE *f = fopen(trace, "r");
    size_t len = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
    text[len] = '\0';
    if (f != NULL)
        fclose(f);
    static const struct {
        int family; /* 0 driver, 1 NVRTC, 2 nvJitLink, 3 NVML */
        const char *text;
    } expected[] = {
        { 0, " driver cuInit(Flags=0x0) = CUDA_SUCCESS (0) " },
        { 0, " driver cuLaunchKernel(f=0x" },
        { 1, " nvrtc nvrtcCompileProgram(prog=0x" },
        { 1, "\"-dlto\"" },
        { 2, " nvjitlink nvJitLinkAddData(handle=0x" },
        { 2, "inputType=NVJITLINK_INPUT_LTOIR" },
        { 3, " nvml nvmlInit() = NVML_SUCCESS (0) " },
        { 3, " nvml nvmlDeviceGetName(device=0x" },
    };
    const int ran[] = { 1, nvrtc, nvjitlink, nvml };
    int all = 1;
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (ran[expected[i].family] && strstr(text, expected[i].text) == NULL) {
            printf("not in the trace %s: %s\n", trace, expected[i].text);
            all = 0;
        }
    check(all, "trace: the calls of every family that ran are in it, decoded");
}

int main(void)
{
    /* cuabi appends to the trace file: empty it first, so that only this run's lines count. */
    const char *trace = getenv("CUABI_TRACE");
    if (trace != NULL && trace[0] == '/') {
        FILE *f = fopen(trace, "w");
        if (f == NULL || fclose(f) != 0) {
            printf("FAIL cannot empty the trace file %s\n0 passed, 1 failed, 0 skipped\n", trace);
            return 1;
        }
    }
    CUresult rc = cuabi_cuInit(0);
    if (rc != CUDA_SUCCESS) {
        printf("FAIL no usable driver: %s\n%s0 passed, 1 failed, 0 skipped\n", cuabi_error_name(rc),
               cuabi_driver_report());
        return 1;
    }
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    int major = 0, minor = 0, devices = 0;
    check(cuabi_cuDeviceGetCount(&devices) == CUDA_SUCCESS && devices > 0 &&
              cuabi_cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
              cuabi_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
              cuabi_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS &&
              cuabi_cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuabi_cuCtxSetCurrent(ctx) == CUDA_SUCCESS,
          "driver: device 0, its compute capability, its primary context");
    printf("driver: %s, %d devices, device 0 is sm_%d%d\n", cuabi_driver_path(), devices, major, minor);
    char compute[32], sm[32];
    snprintf(compute, sizeof compute, "-arch=compute_%d%d", major, minor);
    snprintf(sm, sizeof sm, "-arch=sm_%d%d", major, minor);

    /* 1. NVRTC */
    char *ltoir = NULL, *ptx = NULL;
    size_t ltoir_size = 0, ptx_size = 0;
    int nvrtc = family_present(CUABI_LIBRARY_NVRTC, "NVRTC");
    if (nvrtc) {
        int major_v = 0, minor_v = 0;
        check(cuabi_nvrtcVersion(&major_v, &minor_v) == NVRTC_SUCCESS && major_v >= 12, "NVRTC: nvrtcVersion");
        printf("NVRTC %d.%d\n", major_v, minor_v);
        const char *lto_options[] = { compute, "-dlto", "-rdc=true" };
        ltoir = nvrtc_compile(1, 3, lto_options, &ltoir_size);
        check(ltoir != NULL && ltoir_size > 0, "NVRTC: saxpy to LTO IR (-dlto)");
        const char *ptx_options[] = { compute };
        ptx = nvrtc_compile(0, 1, ptx_options, &ptx_size);
        check(ptx != NULL && strstr(ptx, ".entry saxpy") != NULL, "NVRTC: saxpy to PTX, with its .entry");
    } else {
        skip("NVRTC: saxpy to LTO IR and to PTX", "no NVRTC");
    }

    /* 2. nvJitLink */
    void *cubin = NULL;
    size_t cubin_size = 0;
    int nvjitlink = family_present(CUABI_LIBRARY_NVJITLINK, "nvJitLink");
    if (nvjitlink && ltoir != NULL) {
        unsigned major_v = 0, minor_v = 0;
        check(cuabi_nvJitLinkVersion(&major_v, &minor_v) == NVJITLINK_SUCCESS && major_v >= 13,
              "nvJitLink: nvJitLinkVersion");
        printf("nvJitLink %u.%u\n", major_v, minor_v);
        cubin = nvjitlink_link(sm, ltoir, ltoir_size, &cubin_size);
        check(cubin != NULL && cubin_size > 0, "nvJitLink: the LTO IR linked into a cubin (-lto)");
    } else {
        skip("nvJitLink: link the LTO IR into a cubin", nvjitlink ? "no LTO IR from NVRTC" : "no nvJitLink");
    }

    /* 3. the driver runs what they made */
    if (cubin != NULL)
        check(run_saxpy(cubin, "the linked cubin"), "driver: cuModuleLoadData(linked cubin), saxpy's result");
    else
        skip("driver: run the linked cubin", "no cubin (NVRTC or nvJitLink absent or failed)");
    if (ptx != NULL)
        check(run_saxpy(ptx, "NVRTC's PTX"), "driver: cuModuleLoadData(NVRTC's PTX), saxpy's result");
    else
        skip("driver: run NVRTC's PTX", "no PTX (NVRTC absent or failed)");
    if (ctx != NULL)
        cuabi_cuDevicePrimaryCtxRelease(dev);

    /* 4. NVML */
    int nvml = family_present(CUABI_LIBRARY_NVML, "NVML");
    if (nvml)
        nvml_steps(devices);
    else
        skip("NVML: init, count, name, memory, temperature, driver version", "no NVML");

    /* 5. the trace */
    if (trace != NULL && trace[0] == '/')
        trace_steps(trace, nvrtc, nvjitlink && ltoir != NULL, nvml);
    free(ltoir);
    free(ptx);
    free(cubin);
    printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
    return failed != 0;
}

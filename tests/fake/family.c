/* SPDX-License-Identifier: Apache-2.0 */
/*
 * family.c - the fake libraries of the families (README.md, "The families'
 * fakes"): libfakenvrtc.so, libfakenvjitlink.so, libfakenvvm.so and
 * libfakenvml.so, one build of this file each (FAKEFAM_NVRTC, FAKEFAM_NVJITLINK,
 * FAKEFAM_NVVM or FAKEFAM_NVML defined).
 *
 * Every function of the family (tests/generated/family_functions.h) is exported
 * under the symbol cuabi asks for (__nvJitLinkCreate_13_0, nvmlInit_v2, ...) and
 * records each call: the symbol, the raw bits of every argument, and the address
 * it returns to (so that a test can tell a forwarder's tail jump from a trace
 * wrapper's call).  Then:
 *
 *   FAKEFAM_MODE=record      every function returns what fakefam_record_set_result
 *                            set (default 0), and never looks behind a pointer;
 *   FAKEFAM_MODE=functional  (the default) a few functions do what the family's
 *                            do, enough for the loading scenarios and the compat
 *                            programs (the table `implemented` below); the rest
 *                            return 0.
 *
 * FAKEFAM_VERSION=MAJOR.MINOR is what the version function answers (default
 * NVRTC and nvJitLink 13.5, NVVM 2.0).  A string-returning function (the error
 * strings) returns "fakefam:<symbol>" in record mode.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"
#include "generated/family_functions.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

#if defined(FAKEFAM_NVRTC)
#define FAMILY_FUNCTIONS CUABI_NVRTC_FUNCTIONS
#define FAMILY_VERSION "13.5"
#elif defined(FAKEFAM_NVJITLINK)
#define FAMILY_FUNCTIONS CUABI_NVJITLINK_FUNCTIONS
#define FAMILY_VERSION "13.5"
#elif defined(FAKEFAM_NVVM)
#define FAMILY_FUNCTIONS CUABI_NVVM_FUNCTIONS
#define FAMILY_VERSION "2.0"
#elif defined(FAKEFAM_NVML)
#define FAMILY_FUNCTIONS CUABI_NVML_FUNCTIONS
#define FAMILY_VERSION "13.5"
#else
#error "define FAKEFAM_NVRTC, FAKEFAM_NVJITLINK, FAKEFAM_NVVM or FAKEFAM_NVML"
#endif

/* ---- settings and the record ------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static int record_mode;
static int version_major, version_minor;

static struct fakecuda_call last_call;
static void *last_return_address;
static uint64_t call_count;
static int call_result;

/* Calls per function, by slot. */
#define COUNT_ROW(index, name, symbol, sig, ret, params, bits) +1
enum { FUNCTION_COUNT = 0 FAMILY_FUNCTIONS(COUNT_ROW) };
#undef COUNT_ROW
static uint64_t calls_of[FUNCTION_COUNT];
#define NAME_ROW(index, name, symbol, sig, ret, params, bits) #symbol,
static const char *const symbols[FUNCTION_COUNT] = { FAMILY_FUNCTIONS(NAME_ROW) };
#undef NAME_ROW

static void bad_setting(const char *name, const char *value)
{
    fprintf(stderr, "fake family library: bad setting %s=%s\n", name, value);
    abort();
}

static void settings_init(void)
{
    const char *mode = getenv("FAKEFAM_MODE");
    if (mode == NULL || *mode == '\0' || strcmp(mode, "functional") == 0)
        record_mode = 0;
    else if (strcmp(mode, "record") == 0)
        record_mode = 1;
    else
        bad_setting("FAKEFAM_MODE", mode);
    const char *version = getenv("FAKEFAM_VERSION");
    if (version == NULL || *version == '\0')
        version = FAMILY_VERSION;
    char end;
    if (sscanf(version, "%d.%d%c", &version_major, &version_minor, &end) != 2)
        bad_setting("FAKEFAM_VERSION", version);
}

static void record(unsigned index, const char *signature, const uint64_t *bits, unsigned n,
                   void *return_address)
{
    pthread_once(&settings_once, settings_init);
    pthread_mutex_lock(&lock);
    memset(&last_call, 0, sizeof last_call);
    snprintf(last_call.name, sizeof last_call.name, "%s", symbols[index]);
    snprintf(last_call.signature, sizeof last_call.signature, "%s", signature);
    last_call.nargs = n;
    for (unsigned k = 0; k < n && k < FAKECUDA_MAX_ARGS; k++)
        last_call.args[k] = bits[k];
    last_return_address = return_address;
    call_count++;
    calls_of[index]++;
    pthread_mutex_unlock(&lock);
}

static int recorded_result(void)
{
    pthread_mutex_lock(&lock);
    int result = call_result;
    pthread_mutex_unlock(&lock);
    return result;
}

/* ---- what functional mode does ------------------------------------------------ */

#define ARG(type, k) ((type)(uintptr_t)a[k])

__attribute__((unused)) static int set_version(const uint64_t *a)
{
    if (a[0] != 0)
        *ARG(int *, 0) = version_major;
    if (a[1] != 0)
        *ARG(int *, 1) = version_minor;
    return 0;
}

/* A program (NVRTC, NVVM) or a link (nvJitLink): what it was given, what it made.
 * NVRTC's compile and nvJitLink's link also write what they were given (options,
 * inputs) into their outputs (NVRTC's cubin, nvJitLink's linked code, as a PTX
 * comment), so that the Python layer's tests can check what reached the library. */
struct program {
    char output[2048];
    char log[128];
    int failed;
    int lto; /* NVRTC: compiled with -dlto */
    char given[1024];       /* options and inputs, as text */
    char info[256];         /* nvJitLink's info log */
    char names[8][128];     /* NVRTC's name expressions */
    char lowered[8][160];
    int nnames;
    char cubin[1400];       /* NVRTC's cubin */
};

/* noinline: inlined into nvvm_options, where p comes from an integer argument, gcc 12 at -O3
 * takes p->given for an object of size 0 and fails the build with -Wstringop-overread. */
__attribute__((unused, noinline)) static void given_add(struct program *p, const char *what, const char *text)
{
    if (p == NULL)
        return;
    size_t at = strlen(p->given);
    snprintf(p->given + at, sizeof p->given - at, "%s%s=%s", at ? ";" : "", what, text);
}

__attribute__((unused)) static int copy_out(const char *text, size_t *size, char *out)
{
    if (size != NULL)
        *size = strlen(text) + 1;
    if (out != NULL)
        memcpy(out, text, strlen(text) + 1);
    return 0;
}

/* The fake's LTO IR: this line, then the PTX the program would have had, which the fake
 * nvJitLink takes out again as its "cubin" (the fake driver runs PTX, not binaries). */
__attribute__((unused)) static const char lto_magic[] = "fake LTO IR\n";

__attribute__((unused)) static int create(void **out)
{
    struct program *p = calloc(1, sizeof *p);
    if (p == NULL)
        return 1;
    *out = p;
    return 0;
}

__attribute__((unused)) static int destroy(void **handle)
{
    free(*handle);
    *handle = NULL;
    return 0;
}

__attribute__((unused)) static int output_size(const struct program *p, size_t *size)
{
    *size = strlen(p->output) + 1;
    return 0;
}

__attribute__((unused)) static int output(const struct program *p, char *out)
{
    memcpy(out, p->output, strlen(p->output) + 1);
    return 0;
}

#if defined(FAKEFAM_NVRTC)
/* The PTX type of one C parameter, by its spelling: enough for the fake driver, which
 * checks each .entry's parameter sizes against its own kernel of that name. */
static const char *ptx_type(const char *param, size_t len)
{
    char text[128];
    snprintf(text, sizeof text, "%.*s", (int)len, param);
    if (strchr(text, '*') != NULL || strstr(text, "size_t") != NULL || strstr(text, "long long") != NULL)
        return ".u64";
    if (strstr(text, "double") != NULL)
        return ".f64";
    if (strstr(text, "float") != NULL)
        return ".f32";
    if (strstr(text, "short") != NULL)
        return ".u16";
    if (strstr(text, "char") != NULL)
        return ".u8";
    return ".u32";
}

/* Appends to out one ".visible .entry" per `__global__ void NAME(PARAMS)` of src. */
static void append_entries(char *out, size_t size, const char *src)
{
    static const char marker[] = "__global__ void ";
    for (const char *at = strstr(src, marker); at != NULL; at = strstr(at, marker)) {
        at += sizeof marker - 1;
        size_t name_len = strcspn(at, "( \t\n");
        const char *params = strchr(at, '(');
        const char *end = params != NULL ? strchr(params, ')') : NULL;
        if (end == NULL)
            break;
        size_t used = strlen(out);
        snprintf(out + used, size - used, ".visible .entry %.*s(", (int)name_len, at);
        unsigned k = 0;
        for (const char *param = params + 1; param < end;) {
            size_t len = strcspn(param, ",)");
            if (strspn(param, " \t\n") < len) {
                used = strlen(out);
                snprintf(out + used, size - used, "%s\n\t.param %s %.*s_param_%u", k == 0 ? "" : ",",
                         ptx_type(param, len), (int)name_len, at, k);
                k++;
            }
            param += len + (param[len] == ',');
        }
        used = strlen(out);
        snprintf(out + used, size - used, "\n)\n{\n\tret;\n}\n");
        at = end;
    }
}

/* nvrtcCreateProgram(prog, src, name, ...): compiling "fails" when the source says #error;
 * the PTX has an entry for every kernel of the source, with nothing in it. */
static int nvrtc_create(const uint64_t *a)
{
    if (create(ARG(void **, 0)) != 0)
        return 1;
    struct program *p = *ARG(struct program **, 0);
    const char *src = ARG(const char *, 1);
    p->failed = src != NULL && strstr(src, "#error") != NULL;
    given_add(p, "name", a[2] != 0 ? ARG(const char *, 2) : "(unnamed)");
    for (int k = 0; k < (int)a[3] && a[5] != 0; k++)
        given_add(p, "header", ARG(const char *const *, 5)[k]);
    snprintf(p->output, sizeof p->output, ".version 8.0\n.target sm_80\n.address_size 64\n// fake NVRTC: %s\n",
             a[2] != 0 ? ARG(const char *, 2) : "(unnamed)");
    if (src != NULL)
        append_entries(p->output, sizeof p->output, src);
    return 0;
}

/* nvrtcCompileProgram(prog, n, options): "-dlto" makes LTO IR instead of PTX. */
static int nvrtc_compile(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    const char *const *options = ARG(const char *const *, 2);
    for (uint32_t i = 0; i < (uint32_t)a[1]; i++) {
        if (options[i] != NULL && strcmp(options[i], "-dlto") == 0)
            p->lto = 1;
        given_add(p, "option", options[i] != NULL ? options[i] : "(null)");
    }
    snprintf(p->log, sizeof p->log, "%s", p->failed ? "fake NVRTC: error: #error in the source\n" : "");
    snprintf(p->cubin, sizeof p->cubin, "\177ELF fake cubin;%s", p->given);
    for (int k = 0; k < p->nnames; k++)
        snprintf(p->lowered[k], sizeof p->lowered[k], "_fake_lowered_%s", p->names[k]);
    return p->failed ? 6 /* NVRTC_ERROR_COMPILATION */ : 0;
}
static int nvrtc_add_name(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    if (a[1] == 0)
        return 3; /* NVRTC_ERROR_INVALID_INPUT */
    if (p->nnames == 8)
        return 1;
    snprintf(p->names[p->nnames++], sizeof p->names[0], "%s", ARG(const char *, 1));
    return 0;
}

static int nvrtc_lowered(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    for (int k = 0; k < p->nnames; k++)
        if (strcmp(p->names[k], ARG(const char *, 1)) == 0) {
            *ARG(const char **, 2) = p->lowered[k];
            return 0;
        }
    return 10; /* NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION, near enough */
}

static int nvrtc_cubin_size(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->cubin, ARG(size_t *, 1), NULL);
}

static int nvrtc_cubin(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->cubin, NULL, ARG(char *, 1));
}

static const int supported_archs[] = { 75, 80, 90 };

static int nvrtc_num_archs(const uint64_t *a)
{
    *ARG(int *, 0) = (int)(sizeof supported_archs / sizeof supported_archs[0]);
    return 0;
}

static int nvrtc_archs(const uint64_t *a)
{
    memcpy(ARG(int *, 0), supported_archs, sizeof supported_archs);
    return 0;
}

/* nvrtcGetLTOIR(Size): LTO IR only after -dlto; without it the size is 0, as NVRTC's. */
static int nvrtc_lto_size(const uint64_t *a)
{
    const struct program *p = ARG(struct program *, 0);
    *ARG(size_t *, 1) = p->lto ? sizeof lto_magic - 1 + strlen(p->output) + 1 : 0;
    return 0;
}

static int nvrtc_lto(const uint64_t *a)
{
    const struct program *p = ARG(struct program *, 0);
    if (!p->lto)
        return 0;
    char *out = ARG(char *, 1);
    memcpy(out, lto_magic, sizeof lto_magic - 1);
    memcpy(out + sizeof lto_magic - 1, p->output, strlen(p->output) + 1);
    return 0;
}

static int nvrtc_log_size(const uint64_t *a)
{
    *ARG(size_t *, 1) = strlen(ARG(struct program *, 0)->log) + 1;
    return 0;
}

static int nvrtc_log(const uint64_t *a)
{
    const struct program *p = ARG(struct program *, 0);
    memcpy(ARG(char *, 1), p->log, strlen(p->log) + 1);
    return 0;
}

static int nvrtc_ptx_size(const uint64_t *a)
{
    return output_size(ARG(struct program *, 0), ARG(size_t *, 1));
}

static int nvrtc_ptx(const uint64_t *a)
{
    return output(ARG(struct program *, 0), ARG(char *, 1));
}

static int nvrtc_destroy(const uint64_t *a)
{
    return destroy(ARG(void **, 0));
}
#endif

#if defined(FAKEFAM_NVJITLINK)
static int jit_create(const uint64_t *a)
{
    if (create(ARG(void **, 0)) != 0)
        return 1;
    struct program *p = *ARG(struct program **, 0);
    const char *const *options = ARG(const char *const *, 2);
    for (unsigned k = 0; k < (unsigned)a[1] && options != NULL; k++)
        given_add(p, "option", options[k]);
    return 0;
}

/* nvJitLinkAddData(handle, type, data, size, name): PTX, or the fake NVRTC's LTO IR, is
 * kept; the "cubin" is what was added, as PTX text (the fake driver runs only PTX). A
 * cubin, fatbin, object or library is recorded only. An input whose bytes say "#error"
 * fails the link (NVJITLINK_ERROR_PTX_COMPILE), with an error log naming it. */
static int jit_add_data(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    const char *data = ARG(const char *, 2);
    size_t size = (size_t)a[3];
    if (data == NULL || size == 0)
        return 3; /* NVJITLINK_ERROR_INVALID_INPUT */
    if (p == NULL)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "%u:%s:%u", (unsigned)a[1], a[4] != 0 ? ARG(const char *, 4) : "(unnamed)",
             (unsigned)size);
    given_add(p, "input", what);
    for (size_t k = 0; k + 6 <= size; k++)
        if (memcmp(data + k, "#error", 6) == 0) {
            p->failed = 1;
            snprintf(p->log, sizeof p->log, "fake nvJitLink: error: %s says #error\n",
                     a[4] != 0 ? ARG(const char *, 4) : "(unnamed)");
        }
    if (a[1] == 1 || a[1] >= 4) /* NVJITLINK_INPUT_CUBIN, _FATBIN, _OBJECT, _LIBRARY */
        return 0;
    if (a[1] == 3 /* NVJITLINK_INPUT_LTOIR */) {
        if (size < sizeof lto_magic || memcmp(data, lto_magic, sizeof lto_magic - 1) != 0)
            return 3;
        data += sizeof lto_magic - 1;
        size -= sizeof lto_magic - 1;
    } else if (a[1] != 2 /* NVJITLINK_INPUT_PTX */) {
        return 3;
    }
    const char *nul = memchr(data, '\0', size);
    size_t len = nul != NULL ? (size_t)(nul - data) : size, used = strlen(p->output);
    snprintf(p->output + used, sizeof p->output - used, "%.*s", (int)len, data);
    return 0;
}

static int jit_add_file(const uint64_t *a)
{
    char what[160];
    snprintf(what, sizeof what, "%u:%s", (unsigned)a[1], a[2] != 0 ? ARG(const char *, 2) : "(null)");
    given_add(ARG(struct program *, 0), "file", what);
    return 0;
}

static int jit_complete(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    if (p == NULL)
        return 0;
    snprintf(p->info, sizeof p->info, "fake nvJitLink: info: linked\n");
    size_t used = strlen(p->output);
    snprintf(p->output + used, sizeof p->output - used, "// fake nvJitLink: %s\n", p->given);
    return p->failed ? 4 /* NVJITLINK_ERROR_PTX_COMPILE */ : 0;
}

static int jit_error_log_size(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->log, ARG(size_t *, 1), NULL);
}

static int jit_error_log(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->log, NULL, ARG(char *, 1));
}

static int jit_info_log_size(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->info, ARG(size_t *, 1), NULL);
}

static int jit_info_log(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->info, NULL, ARG(char *, 1));
}

static int jit_size(const uint64_t *a)
{
    return output_size(ARG(struct program *, 0), ARG(size_t *, 1));
}

static int jit_cubin(const uint64_t *a)
{
    return output(ARG(struct program *, 0), ARG(char *, 1));
}

static int jit_destroy(const uint64_t *a)
{
    return destroy(ARG(void **, 0));
}
#endif

#if defined(FAKEFAM_NVVM)
static int nvvm_ir_version(const uint64_t *a)
{
    for (int k = 0; k < 4; k++)
        *ARG(int *, k) = k < 2 ? 2 : 3;
    return 0;
}

static int nvvm_create(const uint64_t *a)
{
    return create(ARG(void **, 0));
}

/* nvvmAddModuleToProgram / nvvmLazyAddModuleToProgram(prog, buffer, size, name): the
 * module's name is recorded; a module saying "#error" fails the compilation, one saying
 * "!invalid" fails verification too (NVVM_ERROR_INVALID_IR). */
static int nvvm_add_module(const uint64_t *a, const char *what)
{
    struct program *p = ARG(struct program *, 0);
    const char *ir = ARG(const char *, 1);
    size_t size = (size_t)a[2];
    if (p == NULL)
        return 5; /* NVVM_ERROR_INVALID_PROGRAM */
    if (ir == NULL || size == 0)
        return 4; /* NVVM_ERROR_INVALID_INPUT */
    given_add(p, what, a[3] != 0 ? ARG(const char *, 3) : "(unnamed)");
    for (size_t k = 0; k + 6 <= size; k++)
        if (memcmp(ir + k, "#error", 6) == 0)
            p->failed |= 1;
    for (size_t k = 0; k + 8 <= size; k++)
        if (memcmp(ir + k, "!invalid", 8) == 0)
            p->failed |= 2;
    return 0;
}

static int nvvm_add(const uint64_t *a)
{
    return nvvm_add_module(a, "module");
}

static int nvvm_lazy_add(const uint64_t *a)
{
    return nvvm_add_module(a, "lazy-module");
}

static void nvvm_options(struct program *p, const uint64_t *a)
{
    const char *const *options = ARG(const char *const *, 2);
    for (uint32_t i = 0; i < (uint32_t)a[1] && options != NULL; i++) {
        if (options[i] != NULL && strcmp(options[i], "-gen-lto") == 0)
            p->lto = 1;
        given_add(p, "option", options[i] != NULL ? options[i] : "(null)");
    }
}

/* nvvmVerifyProgram(prog, n, options): fails on a module saying "!invalid". */
static int nvvm_verify(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    if (p->given[0] == '\0')
        return 8; /* NVVM_ERROR_NO_MODULE_IN_PROGRAM */
    nvvm_options(p, a);
    snprintf(p->log, sizeof p->log, "%s", p->failed & 2 ? "fake NVVM: error: invalid IR\n" : "");
    return p->failed & 2 ? 6 /* NVVM_ERROR_INVALID_IR */ : 0;
}

/* nvvmCompileProgram(prog, n, options): the "PTX" names what the program was given (its
 * modules and options), as a comment; with -gen-lto it is the fake's LTO IR instead. */
static int nvvm_compile(const uint64_t *a)
{
    struct program *p = ARG(struct program *, 0);
    if (p->given[0] == '\0')
        return 8; /* NVVM_ERROR_NO_MODULE_IN_PROGRAM */
    nvvm_options(p, a);
    if (p->failed) {
        snprintf(p->log, sizeof p->log, "fake NVVM: error: %s\n", p->failed & 2 ? "invalid IR" : "#error in a module");
        return p->failed & 2 ? 6 /* NVVM_ERROR_INVALID_IR */ : 9 /* NVVM_ERROR_COMPILATION */;
    }
    snprintf(p->log, sizeof p->log, "fake NVVM: info: compiled\n");
    snprintf(p->output, sizeof p->output, "%s.version 8.0\n.target sm_80\n.address_size 64\n// fake NVVM: %s\n",
             p->lto ? lto_magic : "", p->given);
    return 0;
}

static int nvvm_log_size(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->log, ARG(size_t *, 1), NULL);
}

static int nvvm_log(const uint64_t *a)
{
    return copy_out(ARG(struct program *, 0)->log, NULL, ARG(char *, 1));
}

static int nvvm_size(const uint64_t *a)
{
    return output_size(ARG(struct program *, 0), ARG(size_t *, 1));
}

static int nvvm_result(const uint64_t *a)
{
    return output(ARG(struct program *, 0), ARG(char *, 1));
}

static int nvvm_destroy(const uint64_t *a)
{
    return destroy(ARG(void **, 0));
}
#endif

#if defined(FAKEFAM_NVML)
static atomic_int nvml_initialised; /* also the one device's handle: its address */

static int nvml_init(const uint64_t *a)
{
    (void)a;
    nvml_initialised = 1;
    return 0;
}

static int nvml_shutdown(const uint64_t *a)
{
    (void)a;
    nvml_initialised = 0;
    return 0;
}

static int nvml_count(const uint64_t *a)
{
    if (!nvml_initialised)
        return 1; /* NVML_ERROR_UNINITIALIZED */
    *ARG(unsigned *, 0) = 1;
    return 0;
}

static int nvml_handle(const uint64_t *a)
{
    if (!nvml_initialised)
        return 1;
    if (a[0] != 0)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *ARG(void **, 1) = (void *)&nvml_initialised;
    return 0;
}

static int nvml_name(const uint64_t *a)
{
    if (ARG(void *, 0) != (void *)&nvml_initialised)
        return 2;
    snprintf(ARG(char *, 1), (size_t)(uint32_t)a[2], "Fake GPU 0");
    return 0;
}

/* The device's queries, for cuabi.system's tests. FAKEFAM_NVML_UNSUPPORTED names
 * symbols (comma-separated) that answer NVML_ERROR_NOT_SUPPORTED (3), as a GPU
 * without that sensor does. */
static int nvml_device(const uint64_t *a, const char *symbol)
{
    if (!nvml_initialised)
        return 1;
    if (ARG(void *, 0) != (void *)&nvml_initialised)
        return 2;
    const char *unsupported = getenv("FAKEFAM_NVML_UNSUPPORTED");
    if (unsupported != NULL) {
        size_t n = strlen(symbol);
        for (const char *at = strstr(unsupported, symbol); at != NULL; at = strstr(at + 1, symbol))
            if ((at == unsupported || at[-1] == ',') && (at[n] == '\0' || at[n] == ','))
                return 3;
    }
    return 0;
}

static int nvml_string(char *out, uint64_t length, const char *text)
{
    if (length < strlen(text) + 1)
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    memcpy(out, text, strlen(text) + 1);
    return 0;
}

static int nvml_driver_version(const uint64_t *a)
{
    return nvml_initialised ? nvml_string(ARG(char *, 0), a[1], "580.65.06-fake") : 1;
}

static int nvml_cuda_version(const uint64_t *a)
{
    *ARG(int *, 0) = 13000;
    return 0;
}

static int nvml_uuid(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetUUID");
    return rc ? rc : nvml_string(ARG(char *, 1), a[2], "GPU-fa4e0000-1111-2222-3333-444455556666");
}

static int nvml_index(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetIndex");
    if (rc == 0)
        *ARG(unsigned *, 1) = 0;
    return rc;
}

#define FAKE_GIB (1024ull * 1024 * 1024)

static int nvml_memory(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetMemoryInfo");
    if (rc == 0) {
        unsigned long long *m = ARG(unsigned long long *, 1); /* total, free, used */
        m[0] = 80 * FAKE_GIB;
        m[1] = 79 * FAKE_GIB;
        m[2] = 1 * FAKE_GIB;
    }
    return rc;
}

static int nvml_memory_v2(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetMemoryInfo_v2");
    if (rc != 0)
        return rc;
    unsigned char *m = ARG(unsigned char *, 1);
    unsigned version;
    memcpy(&version, m, sizeof version);
    if (version != (40u | 2u << 24))
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    unsigned long long v[4] = { 80 * FAKE_GIB, FAKE_GIB / 2, 78 * FAKE_GIB, FAKE_GIB + FAKE_GIB / 2 };
    memcpy(m + 8, v, sizeof v); /* total, reserved, free, used */
    return 0;
}

static int nvml_utilization(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetUtilizationRates");
    if (rc == 0) {
        ARG(unsigned *, 1)[0] = 37;
        ARG(unsigned *, 1)[1] = 12;
    }
    return rc;
}

static int nvml_temperature(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetTemperature");
    if (rc == 0 && a[1] != 0)
        return 2;
    if (rc == 0)
        *ARG(unsigned *, 2) = 41;
    return rc;
}

static int nvml_power(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetPowerUsage");
    if (rc == 0)
        *ARG(unsigned *, 1) = 123456;
    return rc;
}

static int nvml_power_limit(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetEnforcedPowerLimit");
    if (rc == 0)
        *ARG(unsigned *, 1) = 700000;
    return rc;
}

/* Compute processes (two, or FAKEFAM_NVML_PROCESSES of them): the count first
 * (NVML_ERROR_INSUFFICIENT_SIZE when the array is too small), then pid, used
 * memory, GPU and compute instance. */
static int nvml_compute_processes(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (rc != 0)
        return rc;
    const char *setting = getenv("FAKEFAM_NVML_PROCESSES");
    unsigned n = setting != NULL && *setting != '\0' ? (unsigned)strtoul(setting, NULL, 10) : 2;
    unsigned *count = ARG(unsigned *, 1);
    unsigned have = *count;
    *count = n;
    if (have < n)
        return 7;
    unsigned char *infos = ARG(unsigned char *, 2);
    for (unsigned k = 0; k < n; k++) {
        unsigned pid = 4242 + k, gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu;
        unsigned long long used = (k + 1) * 256ull * 1024 * 1024;
        memcpy(infos + 24 * k, &pid, 4);
        memcpy(infos + 24 * k + 8, &used, 8);
        memcpy(infos + 24 * k + 16, &gi, 4);
        memcpy(infos + 24 * k + 20, &ci, 4);
    }
    return 0;
}

static int nvml_graphics_processes(const uint64_t *a)
{
    int rc = nvml_device(a, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    if (rc == 0)
        *ARG(unsigned *, 1) = 0;
    return rc;
}

static int nvml_process_name(const uint64_t *a)
{
    char text[64];
    snprintf(text, sizeof text, "fake-process-%u", (unsigned)a[0]);
    return nvml_string(ARG(char *, 1), a[2], text);
}
#endif

/* The functions functional mode implements, by symbol. */
static const struct implemented {
    const char *symbol;
    int (*fn)(const uint64_t *args);
} implemented[] = {
#if defined(FAKEFAM_NVRTC)
    { "nvrtcVersion", set_version },
    { "nvrtcCreateProgram", nvrtc_create },
    { "nvrtcCompileProgram", nvrtc_compile },
    { "nvrtcGetProgramLogSize", nvrtc_log_size },
    { "nvrtcGetProgramLog", nvrtc_log },
    { "nvrtcGetPTXSize", nvrtc_ptx_size },
    { "nvrtcGetPTX", nvrtc_ptx },
    { "nvrtcGetLTOIRSize", nvrtc_lto_size },
    { "nvrtcGetLTOIR", nvrtc_lto },
    { "nvrtcDestroyProgram", nvrtc_destroy },
    { "nvrtcAddNameExpression", nvrtc_add_name },
    { "nvrtcGetLoweredName", nvrtc_lowered },
    { "nvrtcGetCUBINSize", nvrtc_cubin_size },
    { "nvrtcGetCUBIN", nvrtc_cubin },
    { "nvrtcGetNumSupportedArchs", nvrtc_num_archs },
    { "nvrtcGetSupportedArchs", nvrtc_archs },
#elif defined(FAKEFAM_NVJITLINK)
    { "nvJitLinkVersion", set_version },
    { "__nvJitLinkCreate_13_0", jit_create },
    { "__nvJitLinkAddData_13_0", jit_add_data },
    { "__nvJitLinkAddFile_13_0", jit_add_file },
    { "__nvJitLinkComplete_13_0", jit_complete },
    { "__nvJitLinkGetErrorLogSize_13_0", jit_error_log_size },
    { "__nvJitLinkGetErrorLog_13_0", jit_error_log },
    { "__nvJitLinkGetInfoLogSize_13_0", jit_info_log_size },
    { "__nvJitLinkGetInfoLog_13_0", jit_info_log },
    { "__nvJitLinkGetLinkedCubinSize_13_0", jit_size },
    { "__nvJitLinkGetLinkedCubin_13_0", jit_cubin },
    { "__nvJitLinkDestroy_13_0", jit_destroy },
#elif defined(FAKEFAM_NVVM)
    { "nvvmVersion", set_version },
    { "nvvmIRVersion", nvvm_ir_version },
    { "nvvmCreateProgram", nvvm_create },
    { "nvvmAddModuleToProgram", nvvm_add },
    { "nvvmLazyAddModuleToProgram", nvvm_lazy_add },
    { "nvvmVerifyProgram", nvvm_verify },
    { "nvvmCompileProgram", nvvm_compile },
    { "nvvmGetProgramLogSize", nvvm_log_size },
    { "nvvmGetProgramLog", nvvm_log },
    { "nvvmGetCompiledResultSize", nvvm_size },
    { "nvvmGetCompiledResult", nvvm_result },
    { "nvvmDestroyProgram", nvvm_destroy },
#elif defined(FAKEFAM_NVML)
    { "nvmlInit_v2", nvml_init },
    { "nvmlShutdown", nvml_shutdown },
    { "nvmlDeviceGetCount_v2", nvml_count },
    { "nvmlDeviceGetHandleByIndex_v2", nvml_handle },
    { "nvmlDeviceGetName", nvml_name },
    { "nvmlDeviceGetMemoryInfo", nvml_memory },
    { "nvmlDeviceGetTemperature", nvml_temperature },
    { "nvmlSystemGetDriverVersion", nvml_driver_version },
    { "nvmlSystemGetCudaDriverVersion", nvml_cuda_version },
    { "nvmlSystemGetProcessName", nvml_process_name },
    { "nvmlDeviceGetUUID", nvml_uuid },
    { "nvmlDeviceGetIndex", nvml_index },
    { "nvmlDeviceGetMemoryInfo_v2", nvml_memory_v2 },
    { "nvmlDeviceGetUtilizationRates", nvml_utilization },
    { "nvmlDeviceGetPowerUsage", nvml_power },
    { "nvmlDeviceGetEnforcedPowerLimit", nvml_power_limit },
    { "nvmlDeviceGetComputeRunningProcesses_v3", nvml_compute_processes },
    { "nvmlDeviceGetGraphicsRunningProcesses_v3", nvml_graphics_processes },
#endif
};

/* ---- the exported functions ------------------------------------------------------ */

static int call_I(unsigned index, const char *signature, const uint64_t *bits, unsigned n,
                  void *return_address)
{
    record(index, signature, bits, n, return_address);
    if (record_mode)
        return recorded_result();
    for (size_t i = 0; i < sizeof implemented / sizeof implemented[0]; i++)
        if (strcmp(implemented[i].symbol, symbols[index]) == 0)
            return implemented[i].fn(bits);
    return 0;
}

__attribute__((unused)) static const char *call_p(unsigned index, const char *signature, const uint64_t *bits, unsigned n,
                          void *return_address)
{
    static char texts[FUNCTION_COUNT][64];
    record(index, signature, bits, n, return_address);
    if (record_mode) {
        /* Under the lock: threads calling the same function write the same text. */
        pthread_mutex_lock(&lock);
        snprintf(texts[index], sizeof texts[index], "fakefam:%s", symbols[index]);
        pthread_mutex_unlock(&lock);
        return texts[index];
    }
    return "fake family library: an error";
}

__attribute__((unused)) static inline uint64_t bits_f(float value)
{
    uint32_t u;
    memcpy(&u, &value, sizeof u);
    return u;
}

__attribute__((unused)) static inline uint64_t bits_d(double value)
{
    uint64_t u;
    memcpy(&u, &value, sizeof u);
    return u;
}

/* Raw bits, zero-extended from the width of the letter (as the driver fake records them). */
#define FAKE_BITS_B(x) ((uint64_t)(x))
#define FAKE_BITS_H(x) ((uint64_t)(x))
#define FAKE_BITS_i(x) ((uint64_t)(uint32_t)(x))
#define FAKE_BITS_I(x) ((uint64_t)(x))
#define FAKE_BITS_q(x) ((uint64_t)(x))
#define FAKE_BITS_Q(x) ((uint64_t)(x))
#define FAKE_BITS_z(x) ((uint64_t)(x))
#define FAKE_BITS_p(x) ((uint64_t)(uintptr_t)(x))
#define FAKE_BITS_f(x) bits_f(x)
#define FAKE_BITS_d(x) bits_d(x)
#define FAKE_RETURN_I uint32_t
#define FAKE_RETURN_p const char *
#define FAKE_UNWRAP(...) __VA_ARGS__

/* noinline: each function's return address is its caller's. */
#define DEFINE(index, name, symbol, sig, ret, params, bits)                                      \
    FAKE_EXPORT __attribute__((noinline)) FAKE_RETURN_##ret symbol params;                      \
    FAKE_EXPORT __attribute__((noinline)) FAKE_RETURN_##ret symbol params                       \
    {                                                                                         \
        const uint64_t recorded[] = { FAKE_UNWRAP bits };                                     \
        return (FAKE_RETURN_##ret)call_##ret(index, sig, recorded + 1,                       \
                                             sizeof recorded / sizeof recorded[0] - 1,        \
                                             __builtin_return_address(0));                   \
    }
FAMILY_FUNCTIONS(DEFINE)
#undef DEFINE

/* ---- the test API (tests/fake/fakecuda.h) --------------------------------------------- */

FAKE_EXPORT int fakefam_is_record_mode(void)
{
    pthread_once(&settings_once, settings_init);
    return record_mode;
}

FAKE_EXPORT void fakefam_record_set_result(int result)
{
    pthread_mutex_lock(&lock);
    call_result = result;
    pthread_mutex_unlock(&lock);
}

FAKE_EXPORT uint64_t fakefam_record_count(void)
{
    pthread_mutex_lock(&lock);
    uint64_t n = call_count;
    pthread_mutex_unlock(&lock);
    return n;
}

FAKE_EXPORT int fakefam_record_last(struct fakecuda_call *out)
{
    pthread_mutex_lock(&lock);
    int have = call_count != 0;
    if (have && out != NULL)
        *out = last_call;
    pthread_mutex_unlock(&lock);
    return have;
}

FAKE_EXPORT void *fakefam_last_return_address(void)
{
    pthread_mutex_lock(&lock);
    void *address = last_return_address;
    pthread_mutex_unlock(&lock);
    return address;
}

FAKE_EXPORT uint64_t fakefam_calls(const char *symbol)
{
    uint64_t n = 0;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < FUNCTION_COUNT; i++)
        if (strcmp(symbols[i], symbol) == 0)
            n = calls_of[i];
    pthread_mutex_unlock(&lock);
    return n;
}

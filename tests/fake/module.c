/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Modules, libraries, functions and launches.
 *
 * A module image is NUL-terminated text in one of two forms (README.md):
 *   - the fake's own format, first line "fakecuda-module", then lines
 *     "kernel NAME" and "global NAME SIZE";
 *   - PTX: every ".entry NAME(...)" must be one of the fake's kernels, with
 *     parameters of the same sizes, and ".global" variables get zeroed memory.
 *     The PTX instructions are not executed: the host kernel of the same name
 *     does the work, so the same PTX runs on a GPU and on the fake.
 * A binary image (ELF cubin or fatbinary) gets CUDA_ERROR_NO_BINARY_FOR_GPU:
 * the fake runs no device code.
 */
#include "fake_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128
#define LOG_MAX 512

struct fake_function {
    struct fake_object obj;
    struct fake_module *module;
    const struct fake_kernel *kernel;
    char name[NAME_MAX_LEN];
    int max_dynamic_shared;
    int carveout;
    int non_portable_cluster; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
};

struct fake_global {
    char name[NAME_MAX_LEN];
    void *ptr;
    size_t size;
};

struct fake_module {
    struct fake_object obj;
    int is_library;
    size_t nfunctions;
    struct fake_function *functions[32];
    size_t nglobals;
    struct fake_global globals[32];
};

#define STATIC_SHARED_LIMIT (48 * 1024)
#define OPTIN_SHARED_LIMIT (227 * 1024)
/* The occupancy model's multiprocessor (context.c's device attributes). */
#define SM_COUNT 4
#define SM_SHARED (228 * 1024)
#define SM_THREADS 2048
#define SM_BLOCKS 32
#define SM_REGISTERS 65536
#define REGS_PER_THREAD 16 /* CU_FUNC_ATTRIBUTE_NUM_REGS */
#define PORTABLE_CLUSTER 8
#define NON_PORTABLE_CLUSTER 16

/* ------------------------------------------------------------ image parsing */

struct parse {
    struct fake_module *module;
    struct fake_context *ctx;
    CUdevice device;
    char log[LOG_MAX];
};

static CUresult parse_fail(struct parse *p, CUresult code, const char *fmt, const char *a, size_t alen)
{
    if (p->log[0] == '\0')
        snprintf(p->log, sizeof p->log, fmt, (int)alen, a);
    return code;
}

static CUresult add_kernel(struct parse *p, const char *name, size_t len, CUresult bad)
{
    const struct fake_kernel *k = fake_find_kernel(name, len);
    if (k == NULL) {
        char names[256];
        fake_kernel_names(names, sizeof names);
        parse_fail(p, bad, "fakecuda: no kernel named '%.*s'", name, len);
        size_t used = strlen(p->log);
        snprintf(p->log + used, sizeof p->log - used, "; the fake's kernels are: %s", names);
        return bad;
    }
    struct fake_module *m = p->module;
    for (size_t i = 0; i < m->nfunctions; i++)
        if (m->functions[i]->kernel == k)
            return parse_fail(p, bad, "fakecuda: kernel '%.*s' appears twice", name, len);
    if (m->nfunctions == sizeof m->functions / sizeof m->functions[0])
        return parse_fail(p, bad, "fakecuda: too many kernels at '%.*s'", name, len);
    struct fake_function *f = fake_object_new(FAKE_FUNCTION, sizeof *f, NULL, 0);
    if (f == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    f->module = m;
    f->kernel = k;
    snprintf(f->name, sizeof f->name, "%s", k->name);
    m->functions[m->nfunctions++] = f;
    return CUDA_SUCCESS;
}

static CUresult add_global(struct parse *p, const char *name, size_t len, size_t size, CUresult bad)
{
    struct fake_module *m = p->module;
    if (len == 0 || len >= NAME_MAX_LEN || size == 0)
        return parse_fail(p, bad, "fakecuda: bad global '%.*s'", name, len);
    for (size_t i = 0; i < m->nglobals; i++)
        if (strlen(m->globals[i].name) == len && memcmp(m->globals[i].name, name, len) == 0)
            return parse_fail(p, bad, "fakecuda: global '%.*s' appears twice", name, len);
    if (m->nglobals == sizeof m->globals / sizeof m->globals[0])
        return parse_fail(p, bad, "fakecuda: too many globals at '%.*s'", name, len);
    struct fake_global *g = &m->globals[m->nglobals];
    CUresult r = fake_alloc_device(p->ctx, p->device, size, &g->ptr);
    if (r != CUDA_SUCCESS)
        return r;
    memcpy(g->name, name, len);
    g->name[len] = '\0';
    g->size = size;
    m->nglobals++;
    return CUDA_SUCCESS;
}

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

static const char *skip_space(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
        s++;
    return s;
}

static CUresult parse_fake_format(struct parse *p, const char *text)
{
    const char *line = strchr(text, '\n');
    line = line != NULL ? line + 1 : text + strlen(text);
    while (*line != '\0') {
        const char *eol = strchr(line, '\n');
        if (eol == NULL)
            eol = line + strlen(line);
        const char *s = skip_space(line, eol);
        if (s < eol && *s != '#') {
            const char *word = s;
            while (s < eol && is_ident(*s))
                s++;
            size_t wlen = (size_t)(s - word);
            s = skip_space(s, eol);
            const char *name = s;
            while (s < eol && is_ident(*s))
                s++;
            size_t nlen = (size_t)(s - name);
            s = skip_space(s, eol);
            CUresult r;
            if (wlen == 6 && memcmp(word, "kernel", 6) == 0 && nlen > 0 && s == eol) {
                r = add_kernel(p, name, nlen, CUDA_ERROR_INVALID_IMAGE);
            } else if (wlen == 6 && memcmp(word, "global", 6) == 0 && nlen > 0) {
                char *after = NULL;
                unsigned long long size = strtoull(s, &after, 10);
                after = (char *)skip_space(after, eol);
                if (!isdigit((unsigned char)*s) || after != eol)
                    return parse_fail(p, CUDA_ERROR_INVALID_IMAGE, "fakecuda: bad line '%.*s'", line,
                                      (size_t)(eol - line));
                r = add_global(p, name, nlen, (size_t)size, CUDA_ERROR_INVALID_IMAGE);
            } else {
                return parse_fail(p, CUDA_ERROR_INVALID_IMAGE, "fakecuda: bad line '%.*s'", line,
                                  (size_t)(eol - line));
            }
            if (r != CUDA_SUCCESS)
                return r;
        }
        line = *eol == '\n' ? eol + 1 : eol;
    }
    return CUDA_SUCCESS;
}

/* Copies PTX without comments, so that the scanner below sees only code. */
static char *strip_ptx_comments(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (text[i] == '/' && text[i + 1] == '/') {
            while (i < n && text[i] != '\n')
                i++;
        } else if (text[i] == '/' && text[i + 1] == '*') {
            i += 2;
            while (i < n && !(text[i] == '*' && text[i + 1] == '/'))
                i++;
            i = i < n ? i + 2 : n;
            out[o++] = ' ';
        } else {
            out[o++] = text[i++];
        }
    }
    out[o] = '\0';
    return out;
}

/* The size in bytes of a PTX scalar type token such as ".f32", or 0. */
static size_t ptx_type_size(const char *t, size_t len)
{
    static const struct { const char *name; size_t size; } types[] = {
        { ".b8", 1 },  { ".u8", 1 },  { ".s8", 1 },  { ".b16", 2 }, { ".u16", 2 }, { ".s16", 2 },
        { ".f16", 2 }, { ".bf16", 2 }, { ".b32", 4 }, { ".u32", 4 }, { ".s32", 4 }, { ".f32", 4 },
        { ".b64", 8 }, { ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == len && memcmp(types[i].name, t, len) == 0)
            return types[i].size;
    return 0;
}

/* Parses "<qualifiers> .TYPE name[N]" (a parameter or a variable) into the
 * name and its size in bytes. Returns 0 when it cannot. */
static int ptx_declaration(const char *s, const char *end, const char **name, size_t *nlen, size_t *size)
{
    size_t elem = 0;
    *name = NULL;
    for (;;) {
        while (s < end && isspace((unsigned char)*s))
            s++;
        if (s >= end)
            break;
        const char *tok = s;
        while (s < end && !isspace((unsigned char)*s) && *s != '[' && *s != ',')
            s++;
        size_t tlen = (size_t)(s - tok);
        if (tok[0] == '.') {
            size_t sz = ptx_type_size(tok, tlen);
            if (sz != 0)
                elem = sz;
            continue; /* .param, .align, .ptr, .global, .visible, ... */
        }
        if (isdigit((unsigned char)tok[0]))
            continue; /* the operand of .align */
        if (tlen == 0)
            return 0;
        *name = tok;
        *nlen = tlen;
        size_t count = 1;
        s = skip_space(s, end);
        if (s < end && *s == '[') {
            char *after = NULL;
            count = (size_t)strtoull(s + 1, &after, 10);
            if (after == s + 1 || *after != ']')
                return 0;
        }
        *size = elem * count;
        return elem != 0;
    }
    return 0;
}

static CUresult ptx_entry(struct parse *p, const char *entry, const char *end)
{
    const char *s = entry + 6;
    while (s < end && isspace((unsigned char)*s))
        s++;
    const char *name = s;
    while (s < end && is_ident(*s))
        s++;
    size_t nlen = (size_t)(s - name);
    if (nlen == 0)
        return parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: .entry without a name%.*s", "", 0);
    CUresult r = add_kernel(p, name, nlen, CUDA_ERROR_INVALID_PTX);
    if (r != CUDA_SUCCESS)
        return r;
    const struct fake_kernel *k = p->module->functions[p->module->nfunctions - 1]->kernel;
    const char *open = memchr(s, '(', (size_t)(end - s));
    const char *close = open != NULL ? memchr(open, ')', (size_t)(end - open)) : NULL;
    unsigned count = 0;
    if (open != NULL && close != NULL) {
        const char *param = open + 1;
        while (param < close) {
            const char *comma = memchr(param, ',', (size_t)(close - param));
            const char *pend = comma != NULL ? comma : close;
            const char *pname;
            size_t plen, psize;
            const char *q = param;
            while (q < pend && isspace((unsigned char)*q))
                q++;
            if (q < pend) {
                if (!ptx_declaration(q, pend, &pname, &plen, &psize))
                    return parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: cannot read parameter '%.*s'",
                                      q, (size_t)(pend - q));
                if (count >= k->nparams || psize != k->param_size[count])
                    return parse_fail(p, CUDA_ERROR_INVALID_PTX,
                                      "fakecuda: the parameters of '%.*s' do not match the fake's kernel",
                                      name, nlen);
                count++;
            }
            param = pend + 1;
        }
    }
    if (count != k->nparams)
        return parse_fail(p, CUDA_ERROR_INVALID_PTX,
                          "fakecuda: the parameters of '%.*s' do not match the fake's kernel", name, nlen);
    return CUDA_SUCCESS;
}

/* Where token stands as a whole word in [s, end), or NULL. */
static const char *find_token(const char *s, const char *end, const char *token)
{
    size_t tl = strlen(token);
    for (const char *q = s; q + tl <= end; q++) {
        if (memcmp(q, token, tl) == 0 && (q == s || isspace((unsigned char)q[-1])) &&
            (q + tl == end || isspace((unsigned char)q[tl])))
            return q;
    }
    return NULL;
}

/* The start of the line holding p (directives such as .version end at a
 * newline, not a semicolon, so a statement may begin with a few of them). */
static const char *line_start(const char *stmt, const char *p)
{
    while (p > stmt && p[-1] != '\n')
        p--;
    return p;
}

static CUresult parse_ptx(struct parse *p, const char *original)
{
    char *text = strip_ptx_comments(original);
    if (text == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    int depth = 0;
    const char *stmt = text;
    for (const char *c = text; *c != '\0' && r == CUDA_SUCCESS; c++) {
        if (*c == '{') {
            const char *entry = depth++ == 0 ? find_token(stmt, c, ".entry") : NULL;
            if (entry != NULL)
                r = ptx_entry(p, entry, c);
        } else if (*c == '}') {
            if (--depth < 0)
                r = parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: unbalanced braces%.*s", "", 0);
            if (depth == 0)
                stmt = c + 1;
        } else if (*c == ';' && depth == 0) {
            const char *global = find_token(stmt, c, ".global");
            if (global != NULL) {
                const char *name;
                stmt = line_start(stmt, global);
                size_t nlen, size;
                if (memchr(stmt, '=', (size_t)(c - stmt)) != NULL)
                    r = parse_fail(p, CUDA_ERROR_INVALID_PTX,
                                   "fakecuda: initialised globals are not supported: '%.*s'", stmt,
                                   (size_t)(c - stmt));
                else if (!ptx_declaration(stmt, c, &name, &nlen, &size))
                    r = parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: cannot read '%.*s'", stmt,
                                   (size_t)(c - stmt));
                else
                    r = add_global(p, name, nlen, size, CUDA_ERROR_INVALID_PTX);
            }
            stmt = c + 1;
        }
    }
    if (r == CUDA_SUCCESS && depth != 0)
        r = parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: unbalanced braces%.*s", "", 0);
    if (r == CUDA_SUCCESS && p->module->nfunctions == 0 && p->module->nglobals == 0)
        r = parse_fail(p, CUDA_ERROR_INVALID_PTX, "fakecuda: no .entry in the PTX%.*s", "", 0);
    free(text);
    return r;
}

static void module_destroy(struct fake_object *self)
{
    struct fake_module *m = (struct fake_module *)self;
    for (size_t i = 0; i < m->nfunctions; i++)
        fake_object_delete(m->functions[i]);
    for (size_t i = 0; i < m->nglobals; i++)
        fake_free_device(m->globals[i].ptr);
}

/* Caller holds the lock. ctx is NULL for a library (context independent). */
static CUresult load_image(const void *image, struct fake_context *ctx, int is_library, struct fake_module **out,
                           char *log, size_t log_size)
{
    if (image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned char *bytes = image;
    struct parse p = { .ctx = ctx, .device = ctx != NULL ? ctx->device : 0 };
    p.module = fake_object_new(FAKE_MODULE, sizeof *p.module, ctx, 1);
    if (p.module == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p.module->obj.destroy = module_destroy;
    p.module->is_library = is_library;

    CUresult r;
    const char *text = image;
    static const unsigned char fatbin_magic[4] = { 0x50, 0xED, 0x55, 0xBA };
    if (memcmp(bytes, "\x7f" "ELF", 4) == 0 || memcmp(bytes, fatbin_magic, 4) == 0) {
        r = parse_fail(&p, CUDA_ERROR_NO_BINARY_FOR_GPU,
                       "fakecuda: binary images cannot run on the fake; give PTX or a fakecuda-module text%.*s",
                       "", 0);
    } else if (strncmp(text, "fakecuda-module", 15) == 0 && (text[15] == '\n' || text[15] == '\0' ||
                                                             text[15] == '\r' || text[15] == ' ')) {
        r = parse_fake_format(&p, text);
    } else if (strstr(text, ".entry") != NULL || strstr(text, ".version") != NULL) {
        r = parse_ptx(&p, text);
    } else {
        r = parse_fail(&p, CUDA_ERROR_INVALID_IMAGE,
                       "fakecuda: not a module image (neither PTX nor fakecuda-module text)%.*s", "", 0);
    }
    if (log != NULL && log_size != 0)
        snprintf(log, log_size, "%s", p.log);
    if (r != CUDA_SUCCESS) {
        fake_object_delete(p.module);
        return r;
    }
    *out = p.module;
    return CUDA_SUCCESS;
}

/* Writes text into the JIT log buffer options, if given, and reports the length back. */
static void write_jit_log(unsigned n, CUjit_option *options, void **values, CUjit_option buffer_opt,
                          CUjit_option size_opt, const char *text)
{
    char *buffer = NULL;
    int size_index = -1;
    for (unsigned i = 0; options != NULL && values != NULL && i < n; i++) {
        if (options[i] == buffer_opt)
            buffer = values[i];
        else if (options[i] == size_opt)
            size_index = (int)i;
    }
    if (buffer == NULL || size_index < 0)
        return;
    size_t size = (size_t)(uintptr_t)values[size_index];
    if (size == 0)
        return;
    int written = snprintf(buffer, size, "%s", text);
    size_t used = (size_t)written < size ? (size_t)written + 1 : size;
    values[size_index] = (void *)(uintptr_t)used;
}

static CUresult module_load(CUmodule *module, const void *image, unsigned numOptions, CUjit_option *options,
                            void **optionValues)
{
    struct fake_context *ctx;
    struct fake_module *m = NULL;
    char log[LOG_MAX] = "";
    if (module == NULL || (numOptions != 0 && (options == NULL || optionValues == NULL)))
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = load_image(image, ctx, 0, &m, log, sizeof log);
    if (r == CUDA_SUCCESS)
        *module = (CUmodule)m;
    fake_unlock();
    write_jit_log(numOptions, options, optionValues, CU_JIT_ERROR_LOG_BUFFER,
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log);
    if (r == CUDA_SUCCESS) {
        char info[96];
        snprintf(info, sizeof info, "fakecuda: loaded %zu kernel(s) and %zu global(s)", m->nfunctions, m->nglobals);
        write_jit_log(numOptions, options, optionValues, CU_JIT_INFO_LOG_BUFFER,
                      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, info);
    }
    return r;
}

static CUresult fake_cuModuleLoadData(CUmodule *module, const void *image)
{
    return module_load(module, image, 0, NULL, NULL);
}

static CUresult fake_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                        CUjit_option *options, void **optionValues)
{
    return module_load(module, image, numOptions, options, optionValues);
}

static CUresult fake_cuModuleLoad(CUmodule *module, const char *fname)
{
    if (module == NULL || fname == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(fname, "rb");
    if (f == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    while (text != NULL) {
        n += fread(text + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = realloc(text, cap * 2);
        if (bigger == NULL) {
            free(text);
            text = NULL;
            break;
        }
        text = bigger;
        cap *= 2;
    }
    fclose(f);
    if (text == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    text[n] = '\0';
    CUresult r = module_load(module, text, 0, NULL, NULL);
    free(text);
    return r;
}

static int valid_module(const struct fake_module *m, int is_library)
{
    return fake_object_valid(m, FAKE_MODULE) && (is_library < 0 || m->is_library == is_library);
}

static CUresult fake_cuModuleUnload(CUmodule hmod)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!valid_module((const struct fake_module *)hmod, 0))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        fake_object_delete(hmod);
    fake_unlock();
    return r;
}

static CUresult find_function(const struct fake_module *m, const char *name, struct fake_function **out)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < m->nfunctions; i++) {
        if (strcmp(m->functions[i]->name, name) == 0) {
            *out = m->functions[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult find_global(const struct fake_module *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < m->nglobals; i++) {
        if (strcmp(m->globals[i].name, name) == 0) {
            if (dptr != NULL)
                *dptr = (CUdeviceptr)(uintptr_t)m->globals[i].ptr;
            if (bytes != NULL)
                *bytes = m->globals[i].size;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    struct fake_function *f = NULL;
    if (hfunc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!valid_module((const struct fake_module *)hmod, -1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        r = find_function((const struct fake_module *)hmod, name, &f);
    if (r == CUDA_SUCCESS)
        *hfunc = (CUfunction)f;
    fake_unlock();
    return r;
}

static CUresult fake_cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!valid_module((const struct fake_module *)hmod, -1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        *count = (unsigned)((const struct fake_module *)hmod)->nfunctions;
    fake_unlock();
    return r;
}

static CUresult fake_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!valid_module((const struct fake_module *)hmod, -1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        r = find_global((const struct fake_module *)hmod, name, dptr, bytes);
    fake_unlock();
    return r;
}

/* ------------------------------------------------------------- libraries */

static CUresult fake_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                       void **jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
    struct fake_module *m = NULL;
    char log[LOG_MAX] = "";
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (library == NULL || (numJitOptions != 0 && (jitOptions == NULL || jitOptionsValues == NULL)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = load_image(code, NULL, 1, &m, log, sizeof log);
    if (r == CUDA_SUCCESS)
        *library = (CUlibrary)m;
    fake_unlock();
    write_jit_log(numJitOptions, jitOptions, jitOptionsValues, CU_JIT_ERROR_LOG_BUFFER,
                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log);
    return r;
}

static CUresult fake_cuLibraryUnload(CUlibrary library)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!valid_module((const struct fake_module *)library, 1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        fake_object_delete(library);
    fake_unlock();
    return r;
}

static CUresult fake_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    struct fake_function *f = NULL;
    if (pKernel == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!valid_module((const struct fake_module *)library, 1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        r = find_function((const struct fake_module *)library, name, &f);
    if (r == CUDA_SUCCESS)
        *pKernel = (CUkernel)f; /* a CUkernel may be used where a CUfunction is expected */
    fake_unlock();
    return r;
}

static CUresult fake_cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    if (pMod == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS && !valid_module((const struct fake_module *)library, 1))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        *pMod = (CUmodule)library;
    fake_unlock();
    return r;
}

static CUresult fake_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    if (pFunc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS && !fake_object_valid(kernel, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        *pFunc = (CUfunction)kernel;
    fake_unlock();
    return r;
}

static CUresult fake_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!valid_module((const struct fake_module *)library, 1))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        r = find_global((const struct fake_module *)library, name, dptr, bytes);
    fake_unlock();
    return r;
}

/* ------------------------------------------------------------- functions */

static CUresult fake_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = (const struct fake_function *)hfunc;
    if (!fake_object_valid(f, FAKE_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = REGS_PER_THREAD; break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_shared; break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = f->non_portable_cluster; break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            *pi = 0; /* the host kernels use no static shared, constant or local memory */
            break;
        default:
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_function *f = (struct fake_function *)hfunc;
    if (!fake_object_valid(f, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 && value <= OPTIN_SHARED_LIMIT)
        f->max_dynamic_shared = value;
    else if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && value >= -1 && value <= 100)
        f->carveout = value;
    else if (attrib == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED && (value == 0 || value == 1))
        f->non_portable_cluster = value;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    fake_unlock();
    return r;
}

static CUresult fake_cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = (const struct fake_function *)hfunc;
    if (!fake_object_valid(f, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        *name = f->name;
    fake_unlock();
    return r;
}

/* The pre-4.0 launch API's block shape. PyCUDA still sets it before every
 * cuLaunchKernel; the fake checks it as a launch would and keeps nothing, as
 * it has no cuLaunch/cuLaunchGrid that would use it. */
static CUresult fake_cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(hfunc, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (x <= 0 || y <= 0 || z <= 0 || x > 1024 || y > 1024 || z > 64 || (int64_t)x * y * z > 1024)
        r = CUDA_ERROR_INVALID_VALUE;
    fake_unlock();
    return r;
}

/* The offset and size of parameter paramIndex in the kernel's parameter
 * buffer (cuFuncGetParamInfo, cuKernelGetParamInfo: a CUkernel is also a
 * CUfunction here). */
static CUresult param_info(const void *handle, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    if (paramOffset == NULL)
        return CUDA_ERROR_INVALID_VALUE; /* paramSize is optional, the offset is not */
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = handle;
    if (!fake_object_valid(f, FAKE_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (paramIndex >= f->kernel->nparams) {
        r = CUDA_ERROR_INVALID_VALUE; /* past the last parameter */
    } else {
        size_t offsets[FAKE_KERNEL_MAX_PARAMS];
        fake_kernel_layout(f->kernel, offsets);
        *paramOffset = offsets[paramIndex];
        if (paramSize != NULL)
            *paramSize = f->kernel->param_size[paramIndex];
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    return param_info(func, paramIndex, paramOffset, paramSize);
}

static CUresult fake_cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    return param_info(kernel, paramIndex, paramOffset, paramSize);
}


/* -------------------------------------------------------------- occupancy */

/* A simple occupancy model: a block takes its threads rounded up to whole
 * warps, REGS_PER_THREAD registers a thread and its dynamic shared memory;
 * a multiprocessor holds what fits of SM_THREADS, SM_BLOCKS, SM_REGISTERS and
 * SM_SHARED. Dynamic shared memory above the function's limit (48 KiB until
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES raises it) fits no block,
 * as on a GPU. Caller holds the lock. */
static int blocks_per_sm(const struct fake_function *f, int block_size, size_t dynamic_shared)
{
    size_t shared_limit = f->max_dynamic_shared > STATIC_SHARED_LIMIT ? (size_t)f->max_dynamic_shared
                                                                       : STATIC_SHARED_LIMIT;
    if (block_size <= 0 || block_size > 1024 || dynamic_shared > shared_limit)
        return 0;
    int threads = (block_size + 31) / 32 * 32;
    int n = SM_BLOCKS;
    if (SM_THREADS / threads < n)
        n = SM_THREADS / threads;
    if (SM_REGISTERS / (REGS_PER_THREAD * threads) < n)
        n = SM_REGISTERS / (REGS_PER_THREAD * threads);
    if (dynamic_shared != 0 && (int)(SM_SHARED / dynamic_shared) < n)
        n = (int)(SM_SHARED / dynamic_shared);
    return n;
}

static CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                           int blockSize, size_t dynamicSMemSize,
                                                                           unsigned int flags)
{
    if (numBlocks == NULL || blockSize <= 0 || flags > 1) /* 1: CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE */
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(func, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        *numBlocks = blocks_per_sm((const struct fake_function *)func, blockSize, dynamicSMemSize);
    fake_unlock();
    return r;
}

static CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                                 size_t dynamicSMemSize)
{
    return fake_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

/* The block size (a multiple of the warp, or the limit itself) that keeps
 * the most threads resident, the largest on a tie; the callback, when
 * given, says the dynamic shared memory each block size needs. */
static CUresult fake_cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                               CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                               size_t dynamicSMemSize, int blockSizeLimit,
                                                               unsigned int flags)
{
    if (minGridSize == NULL || blockSize == NULL || blockSizeLimit < 0 || flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(func, FAKE_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        const struct fake_function *f = (const struct fake_function *)func;
        int limit = blockSizeLimit == 0 || blockSizeLimit > 1024 ? 1024 : blockSizeLimit;
        int best = 0, best_size = 0, best_blocks = 0;
        for (int bs = limit; bs > 0; bs = (bs % 32) ? bs / 32 * 32 : bs - 32) {
            size_t shared = blockSizeToDynamicSMemSize != NULL ? blockSizeToDynamicSMemSize(bs) : dynamicSMemSize;
            int n = blocks_per_sm(f, bs, shared);
            if (n * bs > best) {
                best = n * bs;
                best_size = bs;
                best_blocks = n;
            }
        }
        *blockSize = best_size;
        *minGridSize = best_blocks * SM_COUNT;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                      size_t dynamicSMemSize, int blockSizeLimit)
{
    return fake_cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                                          dynamicSMemSize, blockSizeLimit, 0);
}

static CUresult fake_cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                             int blockSize)
{
    if (dynamicSmemSize == NULL || numBlocks <= 0 || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(func, FAKE_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (blocks_per_sm((const struct fake_function *)func, blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0; /* that many blocks do not fit even without shared memory */
    } else {
        size_t each = SM_SHARED / (size_t)numBlocks;
        *dynamicSmemSize = each < OPTIN_SHARED_LIMIT ? each : OPTIN_SHARED_LIMIT;
    }
    fake_unlock();
    return r;
}

/* The cluster dimension attribute of a launch config (NULL: none). */
static const CUlaunchAttribute *find_attribute(const CUlaunchConfig *config, CUlaunchAttributeID id)
{
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == id)
            return &config->attrs[i];
    return NULL;
}

static CUresult fake_cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
    if (clusterSize == NULL || config == NULL || (config->numAttrs != 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = (const struct fake_function *)func;
    if (!fake_object_valid(f, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (blocks_per_sm(f, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
                           config->sharedMemBytes) == 0)
        *clusterSize = 0;
    else
        *clusterSize = f->non_portable_cluster ? NON_PORTABLE_CLUSTER : PORTABLE_CLUSTER;
    fake_unlock();
    return r;
}

static CUresult fake_cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    if (numClusters == NULL || config == NULL || (config->numAttrs != 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    const CUlaunchAttribute *a = find_attribute(config, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    if (a == NULL)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE; /* the fake's kernels have no compile-time cluster */
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = (const struct fake_function *)func;
    uint64_t size = (uint64_t)a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z;
    int max_size = f->non_portable_cluster ? NON_PORTABLE_CLUSTER : PORTABLE_CLUSTER;
    if (!fake_object_valid(f, FAKE_FUNCTION))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (size == 0 || size > (uint64_t)max_size)
        r = CUDA_ERROR_INVALID_CLUSTER_SIZE;
    else
        *numClusters = (int)((uint64_t)SM_COUNT *
                             blocks_per_sm(f, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
                                           config->sharedMemBytes) / size);
    fake_unlock();
    return r;
}

/* The launch attributes of the last launch (fakecuda_last_launch). */
static struct fakecuda_launch last_launch;

FAKE_EXPORT int fakecuda_last_launch(struct fakecuda_launch *out)
{
    fake_lock();
    *out = last_launch;
    fake_unlock();
    return 1;
}

/* Checks cuLaunchKernelEx's attributes as a driver does and fills *seen.
 * Caller holds the lock. */
static CUresult launch_attributes(const struct fake_function *f, const CUlaunchConfig *config,
                                  struct fakecuda_launch *seen)
{
    const unsigned grid[3] = { config->gridDimX, config->gridDimY, config->gridDimZ };
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
            const unsigned c[3] = { a->value.clusterDim.x, a->value.clusterDim.y, a->value.clusterDim.z };
            uint64_t size = (uint64_t)c[0] * c[1] * c[2];
            int max_size = f->non_portable_cluster ? NON_PORTABLE_CLUSTER : PORTABLE_CLUSTER;
            if (size == 0 || size > (uint64_t)max_size)
                return CUDA_ERROR_INVALID_CLUSTER_SIZE;
            for (int d = 0; d < 3; d++) {
                if (grid[d] % c[d])
                    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
                seen->cluster[d] = c[d];
            }
            break;
        }
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: {
            seen->cooperative = a->value.cooperative;
            uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
            int per_sm = blocks_per_sm(f, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
                                       config->sharedMemBytes);
            if (a->value.cooperative && blocks > (uint64_t)per_sm * SM_COUNT)
                return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
            break;
        }
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
            seen->priority = a->value.priority;
            seen->has_priority = 1;
            break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            if (a->value.programmaticStreamSerializationAllowed != 0 &&
                a->value.programmaticStreamSerializationAllowed != 1)
                return CUDA_ERROR_INVALID_VALUE;
            seen->programmatic = a->value.programmaticStreamSerializationAllowed;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE; /* an attribute the fake does not model */
        }
    }
    return CUDA_SUCCESS;
}

/* --------------------------------------------------------------- launches */

CUresult fake_kernel_op(CUfunction fn, const unsigned grid[3], const unsigned block[3], unsigned shared,
                        void **kernelParams, void **extra, const CUlaunchConfig *config,
                        struct fakecuda_launch *seen_out, struct fake_op *out)
{
    struct fakecuda_launch seen = { .cluster = { 1, 1, 1 } };
    CUresult r = CUDA_SUCCESS;
    const struct fake_function *f = (const struct fake_function *)fn;
    if (!fake_object_valid(f, FAKE_FUNCTION))
        return CUDA_ERROR_INVALID_HANDLE;

    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    unsigned shared_limit = f->max_dynamic_shared > STATIC_SHARED_LIMIT ? (unsigned)f->max_dynamic_shared
                                                                         : STATIC_SHARED_LIMIT;
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[1] > 65535 || grid[2] > 65535 ||
        grid[0] > 2147483647u || block[0] == 0 || block[1] == 0 || block[2] == 0 || block[0] > 1024 ||
        block[1] > 1024 || block[2] > 64 || threads > 1024 || shared > shared_limit) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto done;
    }
    if (config != NULL && (r = launch_attributes(f, config, &seen)) != CUDA_SUCCESS)
        goto done;

    const struct fake_kernel *k = f->kernel;
    size_t offsets[FAKE_KERNEL_MAX_PARAMS];
    size_t size = fake_kernel_layout(k, offsets);
    const unsigned char *buffer = NULL;
    size_t buffer_size = 0;
    int have_buffer = 0, have_size = 0;
    if (kernelParams != NULL && extra != NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto done;
    }
    if (extra != NULL) {
        for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (i >= 64) {
                r = CUDA_ERROR_INVALID_VALUE; /* no END marker in sight */
                goto done;
            }
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
                buffer = extra[i + 1];
                have_buffer = 1;
            } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL) {
                buffer_size = *(const size_t *)extra[i + 1];
                have_size = 1;
            } else {
                r = CUDA_ERROR_INVALID_VALUE;
                goto done;
            }
        }
        if (k->nparams > 0 && (!have_buffer || !have_size || buffer == NULL || buffer_size < size)) {
            r = CUDA_ERROR_INVALID_VALUE;
            goto done;
        }
        if (k->nparams > 0 && buffer_size > size) {
            /* the H200 (driver 580) answers a buffer larger than the kernel's parameters
             * with this (seen with a struct placed past where the kernel has it) */
            r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
            goto done;
        }
    } else if (k->nparams > 0 && kernelParams == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto done;
    }

    struct fake_op op = { .kind = FAKE_OP_KERNEL };
    op.where[0] = f->module->obj.owner;
    op.u.kernel.kernel = k;
    op.u.kernel.launch.shared_mem = shared;
    for (int i = 0; i < 3; i++) {
        op.u.kernel.launch.grid[i] = grid[i];
        op.u.kernel.launch.block[i] = block[i];
    }
    /* Parameters are copied at launch (and at capture), as the driver does. */
    op.u.kernel.params_size = size;
    op.u.kernel.params = size != 0 ? malloc(size) : NULL;
    if (size != 0 && op.u.kernel.params == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (unsigned i = 0; i < k->nparams; i++) {
        const void *src = buffer != NULL ? (const void *)(buffer + offsets[i]) : kernelParams[i];
        if (src == NULL) {
            free(op.u.kernel.params);
            r = CUDA_ERROR_INVALID_VALUE;
            goto done;
        }
        memcpy(op.u.kernel.params + offsets[i], src, k->param_size[i]);
    }
    for (int i = 0; i < 3; i++) {
        seen.grid[i] = grid[i];
        seen.block[i] = block[i];
    }
    seen.shared = shared;
    seen.extended = config != NULL;
    if (seen_out != NULL)
        *seen_out = seen;
    *out = op;
done:
    return r;
}

static CUresult launch(CUfunction fn, const unsigned grid[3], const unsigned block[3], unsigned shared,
                       CUstream hStream, void **kernelParams, void **extra, const CUlaunchConfig *config)
{
    struct fakecuda_launch seen;
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    struct fake_op op;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(hStream, &s);
    if (r == CUDA_SUCCESS)
        r = fake_kernel_op(fn, grid, block, shared, kernelParams, extra, config, &seen, &op);
    if (r == CUDA_SUCCESS)
        r = fake_submit(s, &op);
    if (r == CUDA_SUCCESS)
        last_launch = seen;
    fake_unlock();
    return r;
}


static CUresult fake_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
    const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, NULL);
}

static CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (config == NULL || (config->numAttrs != 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = { config->gridDimX, config->gridDimY, config->gridDimZ };
    const unsigned block[3] = { config->blockDimX, config->blockDimY, config->blockDimZ };
    return launch(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams, extra, config);
}

const struct fake_impl fake_impls_module[] = {
    FAKE_IMPL("cuModuleLoad", 2000, fake_cuModuleLoad),
    FAKE_IMPL("cuModuleLoadData", 2000, fake_cuModuleLoadData),
    FAKE_IMPL("cuModuleLoadDataEx", 2010, fake_cuModuleLoadDataEx),
    FAKE_IMPL("cuModuleUnload", 2000, fake_cuModuleUnload),
    FAKE_IMPL("cuModuleGetFunction", 2000, fake_cuModuleGetFunction),
    FAKE_IMPL("cuModuleGetFunctionCount", 12040, fake_cuModuleGetFunctionCount),
    FAKE_IMPL("cuModuleGetGlobal", 3020, fake_cuModuleGetGlobal),
    FAKE_IMPL("cuLibraryLoadData", 12000, fake_cuLibraryLoadData),
    FAKE_IMPL("cuLibraryUnload", 12000, fake_cuLibraryUnload),
    FAKE_IMPL("cuLibraryGetKernel", 12000, fake_cuLibraryGetKernel),
    FAKE_IMPL("cuLibraryGetModule", 12000, fake_cuLibraryGetModule),
    FAKE_IMPL("cuLibraryGetGlobal", 12000, fake_cuLibraryGetGlobal),
    FAKE_IMPL("cuKernelGetFunction", 12000, fake_cuKernelGetFunction),
    FAKE_IMPL("cuFuncGetAttribute", 2020, fake_cuFuncGetAttribute),
    FAKE_IMPL("cuFuncSetAttribute", 9000, fake_cuFuncSetAttribute),
    FAKE_IMPL("cuFuncGetName", 12030, fake_cuFuncGetName),
    FAKE_IMPL("cuFuncSetBlockShape", 2000, fake_cuFuncSetBlockShape),
    FAKE_IMPL("cuFuncGetParamInfo", 12040, fake_cuFuncGetParamInfo),
    FAKE_IMPL("cuKernelGetParamInfo", 12040, fake_cuKernelGetParamInfo),
    FAKE_IMPL("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, fake_cuOccupancyMaxActiveBlocksPerMultiprocessor),
    FAKE_IMPL("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000,
              fake_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
    FAKE_IMPL("cuOccupancyMaxPotentialBlockSize", 6050, fake_cuOccupancyMaxPotentialBlockSize),
    FAKE_IMPL("cuOccupancyMaxPotentialBlockSizeWithFlags", 7000, fake_cuOccupancyMaxPotentialBlockSizeWithFlags),
    FAKE_IMPL("cuOccupancyAvailableDynamicSMemPerBlock", 10020, fake_cuOccupancyAvailableDynamicSMemPerBlock),
    FAKE_IMPL("cuOccupancyMaxPotentialClusterSize", 11070, fake_cuOccupancyMaxPotentialClusterSize),
    FAKE_IMPL("cuOccupancyMaxActiveClusters", 11070, fake_cuOccupancyMaxActiveClusters),
    FAKE_IMPL("cuLaunchKernel", 4000, fake_cuLaunchKernel),
    FAKE_IMPL_PT("cuLaunchKernel", 7000, fake_cuLaunchKernel),
    FAKE_IMPL("cuLaunchKernelEx", 11060, fake_cuLaunchKernelEx),
    FAKE_IMPL_PT("cuLaunchKernelEx", 11060, fake_cuLaunchKernelEx),
    FAKE_IMPL_END,
};

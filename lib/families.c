/* SPDX-License-Identifier: Apache-2.0 */
/*
 * families.c - the library families (NVRTC, nvJitLink, NVVM, NVML;
 * docs/families.md): what their load adds to load.c's (the search, the report
 * lines) and the lookup of their functions.
 *
 * A family's load is load.c's, with the search built here from its row of the
 * family table (lib/family_table.c, generated): its environment variable, its
 * sonames, its folders, and what makes a library acceptable (its required
 * symbols and its minimum version).  An accepted library is asked, once, for
 * every function's symbol, so that the report says what it lacks; the
 * forwarders still look each function up on its first call, with dlsym.
 */
#include "internal.h"
#include "family_table.h"
#include "trace.h"

#include <dlfcn.h>
#include <string.h>

static const cuabi_family_spec *spec_of(int library)
{
    return &cuabi__family_specs[library - 1];
}

/* ---- the search ----------------------------------------------------------- */

/* Built on first use, under the lock (load.c calls cuabi__family_search from its load). */
static const char *required_symbols[CUABI__FAMILY_COUNT][4];
static cuabi_family_check checks[CUABI__FAMILY_COUNT];
static cuabi_search searches[CUABI__FAMILY_COUNT];

const cuabi_search *cuabi__family_search(int library)
{
    const cuabi_family_spec *f = spec_of(library);
    cuabi_search *s = &searches[library - 1];
    if (s->examine != NULL)
        return s;
    cuabi_family_check *c = &checks[library - 1];
    for (unsigned i = 0; i < f->required_count && i < 4; i++)
        required_symbols[library - 1][i] = f->functions[f->required[i]].symbol;
    c->title = f->title;
    c->required = required_symbols[library - 1];
    c->required_count = f->required_count < 4 ? f->required_count : 4;
    c->version_symbol = f->version_function;
    c->minimum_major = f->minimum_major;
    c->minimum_minor = f->minimum_minor;
    s->env = f->env;
    s->load_call = "cuabi_load_library";
    s->sonames = f->sonames;
    s->soname_count = f->soname_count;
    s->folders = f->folders;
    s->folder_count = f->folder_count;
    s->driver_folders = f->driver_folders;
    s->context = c;
    s->status_of[CUABI_OUTCOME_NOT_FOUND] = CUABI_ERROR_LIBRARY_MISSING;
    s->status_of[CUABI_OUTCOME_STUB] = CUABI_ERROR_LIBRARY_MISSING;
    s->status_of[CUABI_OUTCOME_UNUSABLE] = CUABI_ERROR_LIBRARY_TOO_OLD;
    s->status_of[CUABI_OUTCOME_ACCEPTED] = CUDA_SUCCESS;
    s->examine = cuabi_loader_examine_family;
    return s;
}

/* ---- the report ----------------------------------------------------------- */

/* The name of a value of a family's result type: cuabi's own code, or its enumerator. */
static const char *answer_name(int library, int value)
{
    if (value > CUABI_ERROR_BASE && value < CUABI_ERROR_BASE + 1000) {
        const cuabi_code_info *own = cuabi__code_info((CUresult)value);
        return own != NULL ? own->name : "?";
    }
    const char *name = cuabi__trace_enum_name(cuabi__trace_library(library), 0, value);
    return name != NULL ? name : "?";
}

void cuabi__family_begin(int library, cuabi_text *report)
{
    const cuabi_family_spec *f = spec_of(library);
    cuabi_text_append(report, "cuabi %d.%d.%d: loading %s (", CUABI_VERSION_MAJOR,
                      CUABI_VERSION_MINOR, CUABI_VERSION_PATCH, f->title);
    for (unsigned i = 0; i < f->soname_count; i++)
        cuabi_text_append(report, "%s%s", i == 0 ? "" : " or ", f->sonames[i]);
    cuabi_text_append(report, ")\n");
}

void cuabi__family_loaded(int library, const cuabi_opened *opened, cuabi_text *report)
{
    const cuabi_family_spec *f = spec_of(library);
    cuabi_text_append(report, "using %s", opened->path);
    if (opened->version_major >= 0)
        cuabi_text_append(report, ", %s %d.%d", f->title, opened->version_major,
                          opened->version_minor);
    cuabi_text_append(report, "\n");
    /* What this library lacks: asked now, once, so that the report says it. */
    unsigned missing = 0;
    for (unsigned i = 0; i < f->count; i++) {
        dlerror();
        if (dlsym(opened->handle, f->functions[i].symbol) != NULL)
            continue;
        cuabi_text_append(report, "%s %s", missing == 0 ? "not in this library:" : ",",
                          f->functions[i].name);
        if (strcmp(f->functions[i].symbol, f->functions[i].name) != 0)
            cuabi_text_append(report, " (%s)", f->functions[i].symbol);
        missing++;
    }
    if (missing == 0)
        return;
    int answer = f->answers[CUABI__ANSWER_FUNCTION_MISSING];
    cuabi_text_append(report, "\n  %u of its %u functions: they answer %s (%d)", missing, f->count,
                      answer_name(library, answer), answer);
    if (f->version_is_cuda && opened->version_major >= 0 &&
        opened->version_major * 1000 + opened->version_minor * 10 < f->cuda_version)
        cuabi_text_append(report, "; this %s, %d.%d, is older than CUDA %d.%d, whose %s cuabi "
                                  "takes them from: a newer %s has them",
                          f->title, opened->version_major, opened->version_minor,
                          f->cuda_version / 1000, f->cuda_version % 1000 / 10, f->header, f->title);
    else
        cuabi_text_append(report, "; cuabi takes them from CUDA %d.%d's %s: a newer %s may have "
                                  "them",
                          f->cuda_version / 1000, f->cuda_version % 1000 / 10, f->header, f->title);
    cuabi_text_append(report, "\n");
}

void cuabi__family_advice(int library, CUresult status, int named_path, cuabi_text *report)
{
    const cuabi_family_spec *f = spec_of(library);
    const cuabi_code_info *info = cuabi__code_info(status);
    int answer = cuabi__family_answer(library, status);
    cuabi_text_append(report, "no usable %s: %s (%d)", f->title, info != NULL ? info->name : "?",
                      (int)status);
    if (answer != (int)status)
        cuabi_text_append(report, ", which its functions answer as %s (%d)",
                          answer_name(library, answer), answer);
    cuabi_text_append(report, ": %s\n", info != NULL ? info->text : "?");
    if (status == CUABI_ERROR_BAD_ENVIRONMENT) {
        cuabi_text_append(report, "what to do: fix or unset the variable quoted above\n");
    } else if (named_path && status == CUABI_ERROR_LIBRARY_MISSING) {
        cuabi_text_append(report, "what to do: check the path named above (it must be %s's %s), "
                                  "or unset %s to let cuabi search the usual places\n",
                          f->title, f->sonames[0], f->env);
    } else {
        cuabi_text_append(report, "what to do: install %s, or set %s=/abs/path/%s (or call "
                                  "cuabi_load_library(CUABI_LIBRARY_", f->install, f->env, f->sonames[0]);
        for (const char *c = f->key; *c != '\0'; c++)
            cuabi_text_append(report, "%c", *c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
        cuabi_text_append(report, ", path) before its first call)\n");
    }
}

/* ---- lookup ---------------------------------------------------------------- */

int cuabi__family_answer(int library, CUresult status)
{
    const cuabi_family_spec *f = spec_of(library);
    switch ((int)status) {
    case CUABI_ERROR_LIBRARY_MISSING:
        return f->answers[CUABI__ANSWER_LIBRARY_MISSING];
    case CUABI_ERROR_LIBRARY_TOO_OLD:
        return f->answers[CUABI__ANSWER_LIBRARY_TOO_OLD];
    case CUABI_ERROR_FUNCTION_MISSING:
        return f->answers[CUABI__ANSWER_FUNCTION_MISSING];
    case CUABI_ERROR_BAD_ENVIRONMENT:
        return f->answers[CUABI__ANSWER_BAD_ENVIRONMENT];
    default:
        return (int)status;
    }
}

static int lookup(int library, unsigned index, void **fn)
{
    const cuabi_family_spec *f = spec_of(library);
    CUresult rc = cuabi__library_ensure(library);
    if (rc != CUDA_SUCCESS)
        return cuabi__family_answer(library, rc);
    /* "This library lacks it" cannot change while the process runs: asked once. */
    int failed = atomic_load_explicit(&f->failures[index], memory_order_relaxed);
    if (failed != 0)
        return failed;
    dlerror();
    void *found = dlsym(cuabi__library_handle(library), f->functions[index].symbol);
    if (found == NULL) {
        failed = f->answers[CUABI__ANSWER_FUNCTION_MISSING];
        atomic_store_explicit(&f->failures[index], failed, memory_order_relaxed);
        return failed;
    }
    *fn = cuabi__trace_install(cuabi__trace_library(library), index, found);
    return 0;
}

int cuabi__family_resolve(int library, unsigned index, void **fn)
{
    int rc = lookup(library, index, fn);
    if (rc != 0)
        cuabi__trace_not_called(library, index, rc);
    return rc;
}

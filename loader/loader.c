/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader.c - finds and opens a library: the driver and the families' libraries;
 * see loader.h, docs/abi.md ("Loading the driver") and docs/families.md.
 *
 * Candidates are tried in order and each leaves one line in the report.  What
 * makes a candidate acceptable is its library's: the driver's when it exports
 * cuGetProcAddress_v2 and that function does not answer CUDA_ERROR_STUB_LIBRARY;
 * a family's when it exports its required symbols and is not older than its
 * minimum version.  Rejected candidates are closed again; the accepted one never
 * is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* secure_getenv, RTLD_NOLOAD, dlinfo, dladdr */
#endif

#include "loader.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- candidates -------------------------------------------------------- */

static const char *last_dl_error(void)
{
    const char *err = dlerror();
    return err != NULL ? err : "(no message from the dynamic loader)";
}

/* Writes the resolved file path of an opened library into out. */
static void resolve_path(void *handle, void *symbol, const char *fallback, char *out, size_t cap)
{
    const char *name = NULL;
    struct link_map *map = NULL;
    Dl_info info;

    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL &&
        map->l_name[0] != '\0')
        name = map->l_name;
    else if (symbol != NULL && dladdr(symbol, &info) != 0 && info.dli_fname != NULL)
        name = info.dli_fname;
    if (name == NULL)
        name = fallback;

    char real[PATH_MAX];
    if (realpath(name, real) != NULL)
        name = real;
    snprintf(out, cap, "%s", name);
}

/*
 * Tries one candidate: `file` is what dlopen gets, `label` how the report
 * names it.  With RTLD_NOLOAD in dl_flags it only picks up a library that
 * is already loaded.  The library's examine function decides on it.
 */
static cuabi_outcome try_candidate(const cuabi_search *search, const char *file, const char *label,
                                   int dl_flags, cuabi_opened *out, cuabi_text *report)
{
    cuabi_text_append(report, "  %s: ", label);

    dlerror(); /* clear any stale message */
    void *handle = dlopen(file, dl_flags);
    if (handle == NULL) {
        if (dl_flags & RTLD_NOLOAD)
            cuabi_text_append(report, "not loaded\n");
        else
            cuabi_text_append(report, "dlopen failed: %s\n", last_dl_error());
        return CUABI_OUTCOME_NOT_FOUND;
    }
    out->version_major = out->version_minor = -1;
    cuabi_outcome outcome = search->examine(handle, file, out, report, search->context);
    if (outcome != CUABI_OUTCOME_ACCEPTED) {
        dlclose(handle);
        memset(out, 0, sizeof *out);
        return outcome;
    }
    out->handle = handle;
    return CUABI_OUTCOME_ACCEPTED;
}

/* ---- the driver --------------------------------------------------------- */

static cuabi_outcome examine_driver(void *handle, const char *file, cuabi_opened *out,
                                    cuabi_text *report, const void *context)
{
    (void)context;
    dlerror();
    /* POSIX guarantees that a data pointer from dlsym converts to a
     * function pointer. */
    cuabi_get_proc_address_fn get_proc =
        (cuabi_get_proc_address_fn)dlsym(handle, "cuGetProcAddress_v2");
    if (get_proc == NULL) {
        char path[CUABI_LOADER_PATH_MAX];
        resolve_path(handle, NULL, file, path, sizeof path);
        cuabi_text_append(report,
                          "no cuGetProcAddress_v2 in %s: driver older than CUDA 12.0 "
                          "or not a CUDA driver, skipped\n",
                          path);
        return CUABI_OUTCOME_UNUSABLE;
    }

    /* The toolkit's stub exports every entry point but answers every call
     * with CUDA_ERROR_STUB_LIBRARY; a real driver finds its own lookup
     * function.  cuGetProcAddress needs no cuInit. */
    void *probe = NULL;
    CUdriverProcAddressQueryResult probe_status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = get_proc("cuGetProcAddress", &probe, 12000, CU_GET_PROC_ADDRESS_DEFAULT,
                           &probe_status);
    if (rc == CUDA_ERROR_STUB_LIBRARY) {
        char path[CUABI_LOADER_PATH_MAX];
        resolve_path(handle, (void *)get_proc, file, path, sizeof path);
        cuabi_text_append(report,
                          "%s is the toolkit stub library (returns CUDA_ERROR_STUB_LIBRARY), "
                          "skipped\n",
                          path);
        return CUABI_OUTCOME_STUB;
    }

    out->entry = (void *)get_proc;
    resolve_path(handle, (void *)get_proc, file, out->path, sizeof out->path);
    cuabi_text_append(report, "opened %s", out->path);
    if (rc != CUDA_SUCCESS)
        cuabi_text_append(report, " (note: its cuGetProcAddress_v2 answered %d to a probe)",
                          (int)rc);
    cuabi_text_append(report, "\n");
    return CUABI_OUTCOME_ACCEPTED;
}

static const char *const driver_sonames[] = { "libcuda.so.1" };

const cuabi_search cuabi_loader_driver = {
    "CUABI_LIBCUDA", "cuabi_load", driver_sonames, 1, NULL, 0, 1, examine_driver, NULL,
    { CUABI_ERROR_DRIVER_NOT_FOUND, CUABI_ERROR_DRIVER_STUB, CUABI_ERROR_DRIVER_UNUSABLE,
      CUDA_SUCCESS },
};

/* ---- the families -------------------------------------------------------- */

cuabi_outcome cuabi_loader_examine_family(void *handle, const char *file, cuabi_opened *out,
                                          cuabi_text *report, const void *context)
{
    const cuabi_family_check *check = context;
    resolve_path(handle, NULL, file, out->path, sizeof out->path);
    if (check->version_symbol != NULL) {
        /* Every family's version function is (int *major, int *minor) or its unsigned
         * twin, and needs nothing before it. */
        dlerror();
        int (*version)(int *, int *) = (int (*)(int *, int *))dlsym(handle, check->version_symbol);
        int major = -1, minor = -1;
        if (version != NULL && version(&major, &minor) == 0 && major >= 0 && minor >= 0) {
            out->version_major = major;
            out->version_minor = minor;
        }
    }
    for (size_t i = 0; i < check->required_count; i++) {
        dlerror();
        if (dlsym(handle, check->required[i]) != NULL)
            continue;
        cuabi_text_append(report, "%s lacks %s", out->path, check->required[i]);
        if (out->version_major >= 0)
            cuabi_text_append(report, " (it says it is %s %d.%d)", check->title,
                              out->version_major, out->version_minor);
        cuabi_text_append(report, ": not %s, or older than cuabi's %s forwarders need (%s "
                                  "%d.%d or newer), skipped\n",
                          check->title, check->title, check->title, check->minimum_major,
                          check->minimum_minor);
        return CUABI_OUTCOME_UNUSABLE;
    }
    if (out->version_major >= 0 &&
        (out->version_major < check->minimum_major ||
         (out->version_major == check->minimum_major && out->version_minor < check->minimum_minor))) {
        cuabi_text_append(report, "%s is %s %d.%d, older than cuabi's %s forwarders need (%s "
                                  "%d.%d or newer), skipped\n",
                          out->path, check->title, out->version_major, out->version_minor,
                          check->title, check->title, check->minimum_major, check->minimum_minor);
        return CUABI_OUTCOME_UNUSABLE;
    }
    cuabi_text_append(report, "opened %s", out->path);
    if (out->version_major >= 0)
        cuabi_text_append(report, " (%s %d.%d)", check->title, out->version_major,
                          out->version_minor);
    else if (check->version_symbol != NULL)
        cuabi_text_append(report, " (its %s did not say its version)", check->version_symbol);
    cuabi_text_append(report, "\n");
    return CUABI_OUTCOME_ACCEPTED;
}

/* Folders where driver packages put libcuda.so.1 when the system loader
 * does not know them (containers, WSL, some distributions). */
static const char *const driver_folders[] = {
    "/usr/lib/wsl/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib64/nvidia",
#if defined(__x86_64__)
    "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu",
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
    "/usr/lib/powerpc64le-linux-gnu",
#endif
    "/usr/lib64",
    "/usr/lib",
};

/* The only candidate when the caller or the environment variable names one. */
static CUresult open_only(const cuabi_search *search, const char *path, const char *label,
                          cuabi_opened *out, cuabi_text *report)
{
    if (path[0] != '/') {
        cuabi_text_append(report, "  %s: not an absolute path; refused (a relative path would "
                                  "depend on the current folder)\n",
                          label);
        return CUABI_ERROR_BAD_ENVIRONMENT;
    }
    return search->status_of[try_candidate(search, path, label, RTLD_NOW | RTLD_LOCAL, out, report)];
}

/* Tries each soname in `folder`; the best outcome, ACCEPTED at the first that is. */
static cuabi_outcome try_folder(const cuabi_search *search, const char *folder, cuabi_opened *out,
                                cuabi_text *report)
{
    cuabi_outcome best = CUABI_OUTCOME_NOT_FOUND;
    for (size_t n = 0; n < search->soname_count; n++) {
        char path[PATH_MAX];
        int len = snprintf(path, sizeof path, "%s/%s", folder, search->sonames[n]);
        if (len < 0 || (size_t)len >= sizeof path)
            continue; /* a folder as long as a path can be (from $CUDA_HOME): no file there */
        if (access(path, F_OK) != 0) {
            cuabi_text_append(report, "  %s: not present\n", path);
            continue;
        }
        cuabi_outcome o = try_candidate(search, path, path, RTLD_NOW | RTLD_LOCAL, out, report);
        if (o == CUABI_OUTCOME_ACCEPTED)
            return o;
        if (o > best)
            best = o;
    }
    return best;
}

/* "$VAR/sub": the folder an environment variable names, into `out`; NULL when the variable
 * is unset or empty, or not an absolute path (which the report then says). */
static const char *expand_folder(const char *folder, char *out, size_t cap, cuabi_text *report)
{
    if (folder[0] != '$')
        return folder;
    const char *slash = strchr(folder, '/');
    size_t len = slash != NULL ? (size_t)(slash - folder - 1) : strlen(folder + 1);
    char name[64];
    if (len == 0 || len >= sizeof name)
        return NULL;
    memcpy(name, folder + 1, len);
    name[len] = '\0';
    const char *value = secure_getenv(name);
    if (value == NULL || value[0] == '\0')
        return NULL;
    if (value[0] != '/') {
        cuabi_text_append(report, "  %s: %s=", folder, name);
        cuabi_text_append_quoted(report, value, 256);
        cuabi_text_append(report, " is not an absolute path, not searched\n");
        return NULL;
    }
    int written = snprintf(out, cap, "%s%s", value, slash != NULL ? slash : "");
    return written >= 0 && (size_t)written < cap ? out : NULL;
}

CUresult cuabi_loader_search(const cuabi_search *search, const char *explicit_path,
                             cuabi_opened *out, cuabi_text *report)
{
    char label[CUABI_LOADER_PATH_MAX + 64];
    memset(out, 0, sizeof *out);

    const char *env = secure_getenv(search->env);
    if (explicit_path != NULL) {
        if (env != NULL && env[0] != '\0')
            cuabi_text_append(report, "  %s is set but ignored: the program named a path with %s()\n",
                              search->env, search->load_call);
        cuabi_text label_text;
        cuabi_text_init(&label_text, label, sizeof label);
        cuabi_text_append(&label_text, "%s(", search->load_call);
        cuabi_text_append_quoted(&label_text, explicit_path, 512);
        cuabi_text_append(&label_text, ")");
        return open_only(search, explicit_path, label, out, report);
    }
    if (env != NULL && env[0] != '\0') {
        cuabi_text label_text;
        cuabi_text_init(&label_text, label, sizeof label);
        cuabi_text_append(&label_text, "%s=", search->env);
        cuabi_text_append_quoted(&label_text, env, 512);
        return open_only(search, env, label, out, report);
    }
    if (env != NULL)
        cuabi_text_append(report, "  %s is set but empty: ignored, searching\n", search->env);

    /* 1. A library the process already has: reuse it rather than load a
     *    second copy. */
    cuabi_outcome best = CUABI_OUTCOME_NOT_FOUND, o;
    for (size_t n = 0; n < search->soname_count; n++) {
        snprintf(label, sizeof label, "%s already in this process", search->sonames[n]);
        o = try_candidate(search, search->sonames[n], label, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD,
                          out, report);
        if (o == CUABI_OUTCOME_ACCEPTED)
            return CUDA_SUCCESS;
        if (o > best)
            best = o;
    }

    /* 2. The system's own search (LD_LIBRARY_PATH, ld.so.cache, ...). */
    for (size_t n = 0; n < search->soname_count; n++) {
        snprintf(label, sizeof label, "%s through the system search", search->sonames[n]);
        o = try_candidate(search, search->sonames[n], label, RTLD_NOW | RTLD_LOCAL, out, report);
        if (o == CUABI_OUTCOME_ACCEPTED)
            return CUDA_SUCCESS;
        if (o > best)
            best = o;
    }

    /* 3. Well-known folders.  Never an unversioned name (libcuda.so, a
     *    development link, often to the stub) and never the current folder. */
    size_t driver_count = search->driver_folders ? sizeof driver_folders / sizeof driver_folders[0] : 0;
    for (size_t i = 0; i < driver_count + search->folder_count; i++) {
        char expanded[PATH_MAX];
        const char *folder = i < driver_count ? driver_folders[i]
                                              : expand_folder(search->folders[i - driver_count],
                                                              expanded, sizeof expanded, report);
        if (folder == NULL)
            continue;
        o = try_folder(search, folder, out, report);
        if (o == CUABI_OUTCOME_ACCEPTED)
            return CUDA_SUCCESS;
        if (o > best)
            best = o;
    }
    return search->status_of[best];
}

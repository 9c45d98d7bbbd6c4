/*
 * loader.c - finds and opens libcuda.so.1; see loader.h and docs/abi.md.
 *
 * Candidates are tried in order and each leaves one line in the report.
 * A candidate is accepted when it opens, exports cuGetProcAddress_v2, and
 * that function does not answer CUDA_ERROR_STUB_LIBRARY.  Rejected
 * candidates are closed again; the accepted one never is.
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

/* Outcome of one candidate, in increasing order of how much it tells the
 * user when nothing better is found (the final status is the highest). */
enum outcome {
    OUTCOME_NOT_FOUND = 0, /* could not be opened */
    OUTCOME_STUB,          /* the toolkit's stub */
    OUTCOME_UNUSABLE,      /* opened, but no cuGetProcAddress_v2 */
    OUTCOME_ACCEPTED,
};

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
    else if (dladdr(symbol, &info) != 0 && info.dli_fname != NULL)
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
 * is already loaded.
 */
static enum outcome try_candidate(const char *file, const char *label, int dl_flags,
                                  cuabi_driver_lib *out, cuabi_text *report)
{
    cuabi_text_append(report, "  %s: ", label);

    dlerror(); /* clear any stale message */
    void *handle = dlopen(file, dl_flags);
    if (handle == NULL) {
        if (dl_flags & RTLD_NOLOAD)
            cuabi_text_append(report, "not loaded\n");
        else
            cuabi_text_append(report, "dlopen failed: %s\n", last_dl_error());
        return OUTCOME_NOT_FOUND;
    }

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
        dlclose(handle);
        return OUTCOME_UNUSABLE;
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
        dlclose(handle);
        return OUTCOME_STUB;
    }

    out->handle = handle;
    out->get_proc = get_proc;
    resolve_path(handle, (void *)get_proc, file, out->path, sizeof out->path);
    cuabi_text_append(report, "opened %s", out->path);
    if (rc != CUDA_SUCCESS)
        cuabi_text_append(report, " (note: its cuGetProcAddress_v2 answered %d to a probe)",
                          (int)rc);
    cuabi_text_append(report, "\n");
    return OUTCOME_ACCEPTED;
}

static CUresult status_of(enum outcome worst)
{
    switch (worst) {
    case OUTCOME_ACCEPTED:
        return CUDA_SUCCESS;
    case OUTCOME_UNUSABLE:
        return CUABI_ERROR_DRIVER_UNUSABLE;
    case OUTCOME_STUB:
        return CUABI_ERROR_DRIVER_STUB;
    case OUTCOME_NOT_FOUND:
    default:
        return CUABI_ERROR_DRIVER_NOT_FOUND;
    }
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

/* The only candidate when the caller or CUABI_LIBCUDA names one. */
static CUresult open_only(const char *path, const char *label, cuabi_driver_lib *out,
                          cuabi_text *report)
{
    if (path[0] != '/') {
        cuabi_text_append(report, "  %s: not an absolute path; refused (a relative path would "
                                  "depend on the current folder)\n",
                          label);
        return CUABI_ERROR_BAD_ENVIRONMENT;
    }
    return status_of(try_candidate(path, label, RTLD_NOW | RTLD_LOCAL, out, report));
}

CUresult cuabi_loader_open(const char *explicit_path, cuabi_driver_lib *out, cuabi_text *report)
{
    char label[CUABI_LOADER_PATH_MAX + 64];
    memset(out, 0, sizeof *out);

    const char *env = secure_getenv("CUABI_LIBCUDA");
    if (explicit_path != NULL) {
        if (env != NULL && env[0] != '\0')
            cuabi_text_append(report, "  CUABI_LIBCUDA is set but ignored: the program "
                                      "named a path with cuabi_load()\n");
        cuabi_text label_text;
        cuabi_text_init(&label_text, label, sizeof label);
        cuabi_text_append(&label_text, "cuabi_load(");
        cuabi_text_append_quoted(&label_text, explicit_path, 512);
        cuabi_text_append(&label_text, ")");
        return open_only(explicit_path, label, out, report);
    }
    if (env != NULL && env[0] != '\0') {
        cuabi_text label_text;
        cuabi_text_init(&label_text, label, sizeof label);
        cuabi_text_append(&label_text, "CUABI_LIBCUDA=");
        cuabi_text_append_quoted(&label_text, env, 512);
        return open_only(env, label, out, report);
    }
    if (env != NULL)
        cuabi_text_append(report, "  CUABI_LIBCUDA is set but empty: ignored, searching\n");

    /* 1. A driver the process already has: reuse it rather than load a
     *    second copy. */
    enum outcome best = try_candidate("libcuda.so.1", "libcuda.so.1 already in this process",
                                      RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, out, report);
    if (best == OUTCOME_ACCEPTED)
        return CUDA_SUCCESS;

    /* 2. The system's own search (LD_LIBRARY_PATH, ld.so.cache, ...). */
    enum outcome o = try_candidate("libcuda.so.1", "libcuda.so.1 through the system search",
                                   RTLD_NOW | RTLD_LOCAL, out, report);
    if (o == OUTCOME_ACCEPTED)
        return CUDA_SUCCESS;
    if (o > best)
        best = o;

    /* 3. Well-known driver folders.  Never the unversioned libcuda.so (a
     *    development link, often to the stub) and never the current folder. */
    for (size_t i = 0; i < sizeof driver_folders / sizeof driver_folders[0]; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/libcuda.so.1", driver_folders[i]);
        if (access(path, F_OK) != 0) {
            cuabi_text_append(report, "  %s: not present\n", path);
            continue;
        }
        o = try_candidate(path, path, RTLD_NOW | RTLD_LOCAL, out, report);
        if (o == OUTCOME_ACCEPTED)
            return CUDA_SUCCESS;
        if (o > best)
            best = o;
    }
    return status_of(best);
}

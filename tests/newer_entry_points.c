/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every entry point newer than the loaded driver answers, through its forwarder,
 * CUABI_ERROR_DRIVER_TOO_OLD or CUABI_ERROR_ENTRY_POINT_NOT_FOUND, and never
 * crashes.
 *
 * The entry points checked are those of every version node whose CUDA version is
 * newer than the driver's (tests/generated/entry_nodes.h): on a CUDA 13.0 driver, the
 * 43 of CUABI_1.1 (CUDA 13.5). Each is called through its exported forwarder
 * (cuabi_cuXxx, linked by address, so the program imports every one at its node's
 * version), through libffi, with every argument zero: null pointers, zero handles,
 * zeroed structs by value. Each call runs in a child process of its own, so that a
 * crash is seen as a crash and the calls cannot disturb one another; the child reports
 * the result code in a pipe.
 *
 * An entry point whose pinned version the driver is new enough for is not called:
 * with null arguments, a real driver might crash, and that would say nothing about
 * cuabi. Ends with "N passed, M failed"; exit status 0 only when every checked entry
 * point answered as it should and at least one was checked.
 *
 *   on the fake:  CUABI_LIBCUDA=build/tests/libfakecuda.so FAKECUDA_DRIVER_VERSION=13000 \
 *                 build/tests/newer_entry_points
 *   on a GPU:     build/tests/newer_entry_points            (the installed driver)
 */
#define _GNU_SOURCE
#include <cuabi.h>

#include <errno.h>
#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake/signature.h"

struct entry {
    unsigned index;
    const char *name;
    int version;
    int ptds_version;
    const char *signature;
    void (*fn)(void);
};

/* Every forwarder is referenced weakly: one that libcuabi does not export links as
 * a null address, which main reports, instead of failing the link of this program. */
#define PRAGMA(text) _Pragma(#text)
#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    PRAGMA(weak cuabi_##name)
#include "generated/entry_points.h"
#undef CUABI_ENTRY

#define CUABI_ENTRY(index, name, driver_name, version, ptds_version, signature) \
    { index, #name, version, ptds_version, signature, (void (*)(void))cuabi_##name },
static const struct entry entries[] = {
#include "generated/entry_points.h"
};
#undef CUABI_ENTRY

struct node {
    const char *name;
    int cuda_version;
    unsigned first, count;
};

#define CUABI_NODE(name, cuda_version, first, count) { name, cuda_version, first, count },
static const struct node nodes[] = {
#include "generated/entry_nodes.h"
};
#undef CUABI_NODE

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Calls the forwarder with zero arguments; the result code, in the child. */
static CUresult call_with_zeros(const struct entry *e)
{
    static struct signature sig;
    static unsigned char zeros[SIG_MAX_ARGS][1024];
    void *argv[SIG_MAX_ARGS];
    if (signature_parse(e->signature, &sig) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ffi_cif cif;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, sig.nargs, &ffi_type_uint32, sig.args) != FFI_OK)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned k = 0; k < sig.nargs; k++) {
        if (sig.args[k]->size > sizeof zeros[k])
            return CUDA_ERROR_INVALID_VALUE;
        argv[k] = zeros[k]; /* every type's zero is all-zero bytes */
    }
    ffi_arg ret = 0;
    ffi_call(&cif, FFI_FN(e->fn), &ret, argv);
    return (CUresult)(uint32_t)ret;
}

/* Runs one call in a child: 0 when it answered as it should, 1 otherwise. */
static int check_one(const struct entry *e, const char *node)
{
    int fds[2];
    if (pipe(fds) != 0) {
        printf("FAIL: %s: pipe: %s\n", e->name, strerror(errno));
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL: %s: fork: %s\n", e->name, strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        CUresult rc = call_with_zeros(e);
        ssize_t written = write(fds[1], &rc, sizeof rc);
        _exit(written == (ssize_t)sizeof rc ? 0 : 3);
    }
    close(fds[1]);
    CUresult rc = CUDA_SUCCESS;
    ssize_t got = read(fds[0], &rc, sizeof rc);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        printf("FAIL: %s (%s): the call crashed (signal %d)\n", e->name, node, WTERMSIG(status));
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof rc) {
        printf("FAIL: %s (%s): the child did not report (status %d)\n", e->name, node, status);
        return 1;
    }
    if (rc != CUABI_ERROR_DRIVER_TOO_OLD && rc != CUABI_ERROR_ENTRY_POINT_NOT_FOUND) {
        printf("FAIL: %s (%s): answered %d %s, not DRIVER_TOO_OLD or ENTRY_POINT_NOT_FOUND\n", e->name,
               node, (int)rc, cuabi_error_name(rc));
        return 1;
    }
    printf("ok: %s (%s, pinned %d) answers %s\n", e->name, node, e->version, cuabi_error_name(rc));
    return 0;
}

int main(void)
{
    CUresult rc = cuabi_driver_status();
    if (rc != CUDA_SUCCESS) {
        printf("no usable driver: %s\n%s", cuabi_error_name(rc), cuabi_driver_report());
        printf("0 passed, 1 failed\n");
        return 1;
    }
    int driver = 0;
    rc = cuabi_driver_version(&driver);
    if (rc != CUDA_SUCCESS) {
        printf("cuabi_driver_version: %s\n0 passed, 1 failed\n", cuabi_error_name(rc));
        return 1;
    }
    int per_thread = cuabi_default_stream_mode() == 1;
    unsigned version = (unsigned)cuabi_version();
    printf("driver %s: CUDA %d, %s default stream; library %u.%u.%u\n", cuabi_driver_path(), driver,
           per_thread ? "per-thread" : "legacy", version >> 16, (version >> 8) & 0xFFu,
           version & 0xFFu);
    unsigned passed = 0, failed = 0, not_called = 0;
    for (size_t i = 0; i < COUNT(entries); i++) {
        if (entries[i].fn == NULL) {
            printf("FAIL: cuabi_%s is not exported by %s\n", entries[i].name, "libcuabi.so.1");
            failed++;
        }
    }
    for (size_t n = 0; n < COUNT(nodes); n++) {
        if (nodes[n].cuda_version <= driver)
            continue; /* a node this driver is new enough for */
        if (nodes[n].first + nodes[n].count > COUNT(entries)) {
            printf("FAIL: entry_nodes.h and entry_points.h disagree\n");
            failed++;
            continue;
        }
        for (unsigned i = nodes[n].first; i < nodes[n].first + nodes[n].count; i++) {
            const struct entry *e = &entries[i];
            int pinned = per_thread ? e->ptds_version : e->version;
            if (e->fn == NULL)
                continue; /* reported above */
            if (pinned <= driver) {
                printf("not called: %s (%s) is pinned at %d, which this driver has\n", e->name,
                       nodes[n].name, pinned);
                not_called++;
                continue;
            }
            if (check_one(e, nodes[n].name) == 0)
                passed++;
            else
                failed++;
        }
    }
    printf("entry points newer than this driver (CUDA %d): %u answered DRIVER_TOO_OLD or "
           "ENTRY_POINT_NOT_FOUND, %u did not; %u not called\n", driver, passed, failed, not_called);
    if (passed + failed == 0) {
        printf("FAIL: no entry point is newer than this driver: nothing was checked\n");
        failed++;
    }
    printf("%u passed, %u failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

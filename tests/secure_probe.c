/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secure_probe LIBCUABI - loads libcuabi.so.1 from an absolute path with
 * dlopen and prints, one "key=value" per line: AT_SECURE (whether glibc
 * runs this process in secure mode, as for set-user-ID programs), the load
 * status, the driver path in use ("-" when none) and the report.
 * check_secure_mode.py runs a set-user-ID copy of it; dlopen by path keeps
 * it independent of LD_LIBRARY_PATH and RUNPATH, which secure mode ignores.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: secure_probe /abs/path/libcuabi.so.1\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("error=%s\n", dlerror());
        return 1;
    }
    int (*status)(void) = NULL;
    const char *(*path)(void) = NULL;
    const char *(*report)(void) = NULL;
    *(void **)&status = dlsym(lib, "cuabi_driver_status");
    *(void **)&path = dlsym(lib, "cuabi_driver_path");
    *(void **)&report = dlsym(lib, "cuabi_driver_report");
    if (status == NULL || path == NULL || report == NULL) {
        printf("error=libcuabi lacks the own API\n");
        return 1;
    }
    printf("AT_SECURE=%lu\n", getauxval(AT_SECURE));
    printf("status=%d\n", status());
    printf("path=%s\n", path() != NULL ? path() : "-");
    printf("report=\n%s", report());
    return 0;
}

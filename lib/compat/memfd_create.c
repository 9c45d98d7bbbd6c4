/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memfd_create.c - built into libcuabi only where the C library lacks memfd_create
 * (glibc before 2.27, such as the 2.17 the x86_64 manylinux wheel targets; CMakeLists.txt
 * decides). The trace wrappers are libffi closures (lib/trace.c), and libffi's static
 * closures.o calls memfd_create to get executable memory. This hidden definition makes the
 * system call itself; a kernel without it answers ENOSYS, and libffi then takes its other
 * ways. Not exported: only the libffi linked into libcuabi sees it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) int memfd_create(const char *name, unsigned int flags);

__attribute__((visibility("hidden"))) int memfd_create(const char *name, unsigned int flags)
{
#ifdef SYS_memfd_create
    return (int)syscall(SYS_memfd_create, name, flags);
#else
    (void)name;
    (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

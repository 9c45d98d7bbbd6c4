/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interprocess memory pools and events.
 *
 * The fake's device memory is host memory, so an interprocess pool (one
 * created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) is a shared region:
 * a memfd, mapped MAP_SHARED. Its allocations are carved from that mapping,
 * cuMemPoolExportToShareableHandle hands out a duplicate of the memfd, and
 * another process that imports it (cuMemPoolImportFromShareableHandle) maps
 * the same file at its own address. A pointer's export data names the region
 * and the allocation's offset and size in it; cuMemPoolImportPointer turns
 * that into an address in the importer's mapping: both processes see the same
 * bytes, at different addresses, as on a real device.
 *
 * The region starts with one page of header (a magic number, a random
 * identity that the export data must match, the capacity and the device);
 * allocations follow, taken in order (a bump allocator that starts over when
 * the region holds no allocation). Its capacity is the pool's maxSize, or
 * FAKE_IPC_CAPACITY; the file is sparse, so untouched capacity costs nothing.
 *
 * Events: the handle of an event made with CU_EVENT_INTERPROCESS names the
 * exporting process; opening it in another process gives a local event with
 * timing disabled. The fake runs all work at once, so the opened event is
 * always complete; opening a handle whose process has exited fails with
 * CUDA_ERROR_INVALID_HANDLE.
 */
#include "fake_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FAKE_IPC_HEADER 4096
#define FAKE_IPC_CAPACITY ((size_t)256 << 20)
#define FAKE_IPC_POOL_MAGIC 0x4c4f4f5043504946ull  /* "FIPCPOOL" */
#define FAKE_IPC_PTR_MAGIC 0x5254504350494646ull   /* "FFIPCPTR" */
#define FAKE_IPC_EVENT_MAGIC 0x544e564543504946ull /* "FIPCEVNT" */

struct fake_ipc_header {
    uint64_t magic;
    uint64_t uid;
    uint64_t capacity;
    int32_t device;
};

struct fake_ipc_region {
    int fd;
    unsigned char *map;
    size_t capacity;   /* bytes after the header */
    size_t next;       /* offset of the next allocation (exporter only) */
    size_t live;       /* allocations carved and not released */
    unsigned refs;     /* the pool's, and one per allocation */
    uint64_t uid;
    CUdevice device;
    int exported;      /* cuMemPoolExportToShareableHandle has handed the pool out */
};

/* What cuMemPoolExportPointer writes into the 64 bytes of CUmemPoolPtrExportData. */
struct fake_ipc_pointer {
    uint64_t magic;
    uint64_t uid;
    uint64_t offset;
    uint64_t size;
};

/* What cuIpcGetEventHandle writes into the 64 bytes of CUipcEventHandle. */
struct fake_ipc_event {
    uint64_t magic;
    int64_t pid;
    uint64_t event;
};

_Static_assert(sizeof(struct fake_ipc_pointer) <= sizeof(CUmemPoolPtrExportData), "export data");
_Static_assert(sizeof(struct fake_ipc_event) <= sizeof(CUipcEventHandle), "event handle");

static uint64_t new_uid(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_nsec << 8) ^ ++counter;
}

static struct fake_ipc_region *region_map(int fd, size_t capacity)
{
    struct fake_ipc_region *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    void *map = mmap(NULL, FAKE_IPC_HEADER + capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        free(r);
        return NULL;
    }
    r->fd = fd;
    r->map = map;
    r->capacity = capacity;
    r->refs = 1;
    return r;
}

struct fake_ipc_region *fake_ipc_region_new(size_t capacity, CUdevice dev)
{
    if (capacity == 0)
        capacity = FAKE_IPC_CAPACITY;
    int fd = memfd_create("fakecuda-ipc-pool", MFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (ftruncate(fd, (off_t)(FAKE_IPC_HEADER + capacity)) != 0) {
        close(fd);
        return NULL;
    }
    struct fake_ipc_region *r = region_map(fd, capacity);
    if (r == NULL) {
        close(fd);
        return NULL;
    }
    r->uid = new_uid();
    r->device = dev;
    struct fake_ipc_header h = { FAKE_IPC_POOL_MAGIC, r->uid, capacity, dev };
    memcpy(r->map, &h, sizeof h);
    return r;
}

void *fake_ipc_carve(struct fake_ipc_region *r, size_t rounded)
{
    if (rounded > r->capacity - r->next)
        return NULL;
    void *p = r->map + FAKE_IPC_HEADER + r->next;
    r->next += rounded;
    r->live++;
    r->refs++;
    return p;
}

void fake_ipc_release(struct fake_ipc_region *r, int carved)
{
    if (carved && --r->live == 0)
        r->next = 0;
    if (--r->refs == 0) {
        munmap(r->map, FAKE_IPC_HEADER + r->capacity);
        close(r->fd);
        free(r);
    }
}

/* ------------------------------------------------------------------ pools */

static CUresult fake_cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                      CUmemAllocationHandleType handleType,
                                                      unsigned long long flags)
{
    if (handle_out == NULL || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_is_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    int imported = 0;
    struct fake_ipc_region *region = r == CUDA_SUCCESS ? fake_pool_region(pool, &imported) : NULL;
    if (r == CUDA_SUCCESS && (region == NULL || imported))
        r = CUDA_ERROR_INVALID_VALUE; /* not an interprocess pool of this process */
    if (r == CUDA_SUCCESS) {
        int fd = fcntl(region->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            *(int *)handle_out = fd;
            region->exported = 1;
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                        CUmemAllocationHandleType handleType,
                                                        unsigned long long flags)
{
    if (pool_out == NULL || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)(intptr_t)handle;
    struct fake_ipc_header h;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        h.magic != FAKE_IPC_POOL_MAGIC || (uint64_t)st.st_size != FAKE_IPC_HEADER + h.capacity)
        return CUDA_ERROR_INVALID_VALUE; /* not a pool's handle */
    fake_lock();
    CUresult r = fake_is_initialized() ? fake_check_device(h.device) : CUDA_ERROR_NOT_INITIALIZED;
    if (r == CUDA_ERROR_INVALID_DEVICE)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        int own = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the caller keeps (and closes) its descriptor */
        struct fake_ipc_region *region = own < 0 ? NULL : region_map(own, (size_t)h.capacity);
        if (region == NULL) {
            if (own >= 0)
                close(own);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            region->uid = h.uid;
            region->device = h.device;
            region->next = region->capacity; /* nothing is carved on this side */
            r = fake_pool_import(region, h.device, pool_out);
            if (r != CUDA_SUCCESS)
                fake_ipc_release(region, 0);
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    if (shareData_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_is_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    struct fake_allocation *a = r == CUDA_SUCCESS ? fake_find_allocation((uintptr_t)ptr, 1) : NULL;
    /* driver 580 also refuses a pointer of a pool never exported (seen on the H200) */
    if (r == CUDA_SUCCESS && (a == NULL || a->ipc == NULL || a->ipc_imported || !a->ipc->exported ||
                              (uintptr_t)a->base != (uintptr_t)ptr))
        r = CUDA_ERROR_INVALID_VALUE; /* not the start of an allocation of an interprocess pool */
    if (r == CUDA_SUCCESS) {
        struct fake_ipc_pointer d = {
            FAKE_IPC_PTR_MAGIC, a->ipc->uid,
            (uint64_t)((unsigned char *)a->base - (a->ipc->map + FAKE_IPC_HEADER)), a->size,
        };
        memset(shareData_out, 0, sizeof *shareData_out);
        memcpy(shareData_out, &d, sizeof d);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                            CUmemPoolPtrExportData *shareData)
{
    if (ptr_out == NULL || shareData == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_ipc_pointer d;
    memcpy(&d, shareData, sizeof d);
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    int imported = 0;
    struct fake_ipc_region *region = r == CUDA_SUCCESS ? fake_pool_region(pool, &imported) : NULL;
    if (r == CUDA_SUCCESS && (region == NULL || !imported))
        r = CUDA_ERROR_INVALID_VALUE; /* pointers are imported into an imported pool */
    if (r == CUDA_SUCCESS && (d.magic != FAKE_IPC_PTR_MAGIC || d.uid != region->uid || d.size == 0 ||
                              d.offset > region->capacity || d.size > region->capacity - d.offset))
        r = CUDA_ERROR_INVALID_VALUE; /* not export data of an allocation of this pool */
    if (r == CUDA_SUCCESS) {
        region->refs++;
        r = fake_pool_adopt_import(ctx, pool, region->map + FAKE_IPC_HEADER + d.offset, (size_t)d.size,
                                   ptr_out);
        if (r != CUDA_SUCCESS)
            fake_ipc_release(region, 0);
    }
    fake_unlock();
    return r;
}

/* ----------------------------------------------------------------- events */

static CUresult fake_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    if (pHandle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_is_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    int flags = r == CUDA_SUCCESS ? fake_event_flags(event) : 0;
    if (r == CUDA_SUCCESS && flags < 0)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (r == CUDA_SUCCESS && !((unsigned)flags & CU_EVENT_INTERPROCESS))
        r = CUDA_ERROR_INVALID_VALUE; /* made without CU_EVENT_INTERPROCESS */
    if (r == CUDA_SUCCESS) {
        struct fake_ipc_event h = { FAKE_IPC_EVENT_MAGIC, (int64_t)getpid(), (uint64_t)(uintptr_t)event };
        memset(pHandle, 0, sizeof *pHandle);
        memcpy(pHandle, &h, sizeof h);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    if (phEvent == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_ipc_event h;
    memcpy(&h, &handle, sizeof h);
    if (h.magic != FAKE_IPC_EVENT_MAGIC || h.pid <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (kill((pid_t)h.pid, 0) != 0 && errno == ESRCH)
        return CUDA_ERROR_INVALID_HANDLE; /* the exporting process has exited, its event with it */
    return fake_event_create(phEvent, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS);
}

const struct fake_impl fake_impls_ipc[] = {
    FAKE_IMPL("cuMemPoolExportToShareableHandle", 11020, fake_cuMemPoolExportToShareableHandle),
    FAKE_IMPL("cuMemPoolImportFromShareableHandle", 11020, fake_cuMemPoolImportFromShareableHandle),
    FAKE_IMPL("cuMemPoolExportPointer", 11020, fake_cuMemPoolExportPointer),
    FAKE_IMPL("cuMemPoolImportPointer", 11020, fake_cuMemPoolImportPointer),
    FAKE_IMPL("cuIpcGetEventHandle", 4010, fake_cuIpcGetEventHandle),
    FAKE_IMPL("cuIpcOpenEventHandle", 4010, fake_cuIpcOpenEventHandle),
    FAKE_IMPL_END
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host-backed memory: a device pointer is the address of host memory the fake
 * allocated, so tests can look at it directly. Every allocation is registered;
 * copies and memsets check that the device side lies inside one allocation,
 * as a real driver rejects a bad device pointer, and memory pools keep the
 * counters their attributes report. Pools live on a device, on the host or
 * hold managed memory (CUDA 13.0); allocations made during stream capture
 * are graph memory, allocated and freed by the graph's nodes when it runs.
 */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

#define FAKE_ALLOC_ALIGN 256
#define FAKE_PITCH_ALIGN 512
/* New memory is filled with this byte: like a real driver's, it is not zeroed,
 * and a fixed pattern keeps runs repeatable. */
#define FAKE_FRESH_BYTE 0xA5

struct fake_pool {
    struct fake_object obj;
    CUdevice device;
    int is_default;
    CUmemAllocationType type;                 /* pinned or managed */
    CUmemLocation location;                   /* device, host, host NUMA node 0, none (managed) */
    CUmemAccess_flags access[FAKE_MAX_DEVICES]; /* what each device may do with the memory */
    cuuint64_t release_threshold;
    cuuint64_t used, used_high;
    cuuint64_t retained;      /* freed bytes the pool keeps for reuse */
    cuuint64_t reserved_high;
    int reuse[3];             /* the three CU_MEMPOOL_ATTR_REUSE_* switches */
    struct fake_ipc_region *ipc; /* interprocess pools: the shared region (ipc.c) */
    int imported;                /* cuMemPoolImportFromShareableHandle's: no allocations */
};

static struct fake_allocation *allocations;
static uint64_t live_allocations;
static unsigned long long next_allocation_id = 1;
static size_t device_used[FAKE_MAX_DEVICES];
static struct fake_pool *default_pools[FAKE_MAX_DEVICES];
static struct fake_pool *current_pools[FAKE_MAX_DEVICES];

/* ------------------------------------------------------------- allocations */

static int counts_against_device(enum fake_memory_kind kind)
{
    return kind != FAKE_MEM_HOST;
}

/* Caller holds the lock. */
static CUresult allocation_new(enum fake_memory_kind kind, size_t size, struct fake_context *ctx,
                               CUdevice dev, struct fake_pool *pool, struct fake_allocation **out)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > SIZE_MAX - FAKE_ALLOC_ALIGN)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t rounded = (size + FAKE_ALLOC_ALIGN - 1) / FAKE_ALLOC_ALIGN * FAKE_ALLOC_ALIGN;
    if (counts_against_device(kind) && rounded > fake_settings()->total_mem - device_used[dev])
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_allocation *a = calloc(1, sizeof *a);
    struct fake_ipc_region *ipc = pool != NULL ? pool->ipc : NULL;
    void *base = ipc != NULL ? fake_ipc_carve(ipc, rounded) : aligned_alloc(FAKE_ALLOC_ALIGN, rounded);
    if (a == NULL || base == NULL) {
        free(a);
        if (ipc != NULL && base != NULL)
            fake_ipc_release(ipc, 1);
        else
            free(base);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->ipc = ipc;
    memset(base, FAKE_FRESH_BYTE, rounded);
    a->base = base;
    a->size = size;
    a->kind = kind;
    a->ctx = ctx;
    a->pool = pool;
    a->device = dev;
    a->id = next_allocation_id++;
    a->next = allocations;
    allocations = a;
    live_allocations++;
    if (counts_against_device(kind))
        device_used[dev] += rounded;
    *out = a;
    return CUDA_SUCCESS;
}

static size_t rounded_size(const struct fake_allocation *a)
{
    return (a->size + FAKE_ALLOC_ALIGN - 1) / FAKE_ALLOC_ALIGN * FAKE_ALLOC_ALIGN;
}

static void pool_release(struct fake_pool *pool, size_t size);
static void graph_forget(const struct fake_allocation *a);

/* Caller holds the lock. */
static void allocation_delete(struct fake_allocation *victim)
{
    graph_forget(victim);
    for (struct fake_allocation **link = &allocations; *link != NULL; link = &(*link)->next) {
        if (*link == victim) {
            *link = victim->next;
            break;
        }
    }
    if (counts_against_device(victim->kind) && !victim->ipc_imported)
        device_used[victim->device] -= rounded_size(victim);
    if (victim->pool != NULL)
        pool_release(victim->pool, victim->size);
    live_allocations--;
    free(victim->prefetched);
    free(victim->advice);
    if (victim->ipc != NULL)
        fake_ipc_release(victim->ipc, !victim->ipc_imported);
    else
        free(victim->base);
    free(victim);
}

struct fake_allocation *fake_find_allocation(uintptr_t p, size_t n)
{
    for (struct fake_allocation *a = allocations; a != NULL; a = a->next) {
        uintptr_t base = (uintptr_t)a->base;
        if (p >= base && p - base < a->size)
            return (n <= a->size - (p - base)) ? a : NULL;
    }
    return fake_vmm_find(p, n);
}

struct fake_context *fake_memory_context(uintptr_t p)
{
    struct fake_allocation *a = fake_find_allocation(p, 1);
    return a != NULL ? a->ctx : NULL;
}

static struct fake_allocation *find_base(uintptr_t p, enum fake_memory_kind kind)
{
    for (struct fake_allocation *a = allocations; a != NULL; a = a->next)
        if ((uintptr_t)a->base == p && a->kind == kind)
            return a;
    return NULL;
}

void fake_free_allocations_of(struct fake_context *ctx)
{
    struct fake_allocation *a = allocations;
    while (a != NULL) {
        struct fake_allocation *next = a->next;
        if (a->ctx == ctx)
            allocation_delete(a);
        a = next;
    }
}

CUresult fake_alloc_device(struct fake_context *ctx, CUdevice dev, size_t size, void **out)
{
    struct fake_allocation *a;
    fake_lock();
    CUresult r = allocation_new(FAKE_MEM_DEVICE, size, ctx, dev, NULL, &a);
    if (r == CUDA_SUCCESS) {
        memset(a->base, 0, size); /* module globals start zeroed, as in a real image */
        *out = a->base;
    }
    fake_unlock();
    return r;
}

void fake_free_device(void *p)
{
    fake_lock();
    struct fake_allocation *a = find_base((uintptr_t)p, FAKE_MEM_DEVICE);
    if (a != NULL)
        allocation_delete(a);
    fake_unlock();
}

FAKE_EXPORT uint64_t fakecuda_live_allocations(void)
{
    fake_lock();
    uint64_t n = live_allocations;
    fake_unlock();
    return n;
}

/* Allocation entry points share: lock, require a context, allocate, unlock.
 * Like every synchronous allocation, they are unsafe during stream capture. */
static CUresult allocate(enum fake_memory_kind kind, size_t size, void **out)
{
    struct fake_context *ctx;
    struct fake_allocation *a = NULL;
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_capture_allows_unsafe_call();
    if (r == CUDA_SUCCESS)
        r = allocation_new(kind, size, ctx, ctx->device, NULL, &a);
    if (r == CUDA_SUCCESS)
        *out = a->base;
    fake_unlock();
    return r;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    void *p;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = allocate(FAKE_MEM_DEVICE, bytesize, &p);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

static CUresult fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    void *p;
    if (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = allocate(FAKE_MEM_MANAGED, bytesize, &p);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

static CUresult fake_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                     unsigned int ElementSizeBytes)
{
    void *p;
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (WidthInBytes > SIZE_MAX / 2)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t pitch = (WidthInBytes + FAKE_PITCH_ALIGN - 1) / FAKE_PITCH_ALIGN * FAKE_PITCH_ALIGN;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = allocate(FAKE_MEM_DEVICE, pitch * Height, &p);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)(uintptr_t)p;
        *pPitch = pitch;
    }
    return r;
}

static struct fake_allocation *find_stream_ordered(uintptr_t p)
{
    for (struct fake_allocation *a = allocations; a != NULL; a = a->next)
        if ((uintptr_t)a->base == p && a->stream_ordered)
            return a;
    return NULL;
}

struct graph_alloc;
static struct graph_alloc *graph_alloc_of(const struct fake_allocation *a);
static CUresult graph_free(struct fake_allocation *a);

static CUresult free_kind(uintptr_t p, enum fake_memory_kind kind)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_capture_allows_unsafe_call(); /* synchronous frees are unsafe during capture */
    if (r == CUDA_SUCCESS) {
        struct fake_allocation *a = find_base(p, kind);
        /* cuMemFree also frees managed memory, and stream-ordered allocations
         * of every pool (after the work before it, which in the fake is
         * always done); cuMemFreeHost frees only cuMemHostAlloc memory. */
        if (a == NULL && kind == FAKE_MEM_DEVICE)
            a = find_base(p, FAKE_MEM_MANAGED);
        if (a == NULL && kind == FAKE_MEM_DEVICE)
            a = find_stream_ordered(p);
        if (a != NULL && kind == FAKE_MEM_HOST && a->stream_ordered)
            a = NULL;
        if (a == NULL)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (graph_alloc_of(a) != NULL)
            r = graph_free(a);
        else
            allocation_delete(a);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemFree(CUdeviceptr dptr)
{
    if (dptr == 0)
        return CUDA_SUCCESS; /* like free(NULL) */
    return free_kind((uintptr_t)dptr, FAKE_MEM_DEVICE);
}

static CUresult fake_cuMemAllocHost(void **pp, size_t bytesize)
{
    return allocate(FAKE_MEM_HOST, bytesize, pp);
}

static CUresult fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if ((Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return allocate(FAKE_MEM_HOST, bytesize, pp);
}

static CUresult fake_cuMemFreeHost(void *p)
{
    if (p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return free_kind((uintptr_t)p, FAKE_MEM_HOST);
}

static CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    struct fake_context *ctx;
    if (pdptr == NULL || p == NULL || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        struct fake_allocation *a = fake_find_allocation((uintptr_t)p, 1);
        if (a == NULL || a->kind != FAKE_MEM_HOST)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    struct fake_context *ctx;
    if (free_bytes == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        *total = fake_settings()->total_mem;
        *free_bytes = *total - device_used[ctx->device];
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS) {
        struct fake_allocation *a = fake_find_allocation((uintptr_t)dptr, 1);
        if (a == NULL || a->kind == FAKE_MEM_HOST) {
            r = CUDA_ERROR_NOT_FOUND;
        } else {
            if (pbase != NULL)
                *pbase = (CUdeviceptr)(uintptr_t)a->base;
            if (psize != NULL)
                *psize = a->size;
        }
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_allocation *a = fake_find_allocation((uintptr_t)ptr, 1);
    if (a == NULL) {
        r = CUDA_ERROR_INVALID_VALUE; /* memory the driver does not know */
        goto done;
    }
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)a->ctx;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = a->kind == FAKE_MEM_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a->kind == FAKE_MEM_DEVICE || a->kind == FAKE_MEM_POOL)
            r = CUDA_ERROR_INVALID_VALUE; /* device memory has no host mapping */
        else
            *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = a->kind == FAKE_MEM_MANAGED;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = (int)a->device;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = a->id;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a->base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a->size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = (CUmemoryPool)a->pool;
        break;
    default:
        r = CUDA_ERROR_NOT_SUPPORTED;
        break;
    }
done:
    fake_unlock();
    return r;
}

/* ------------------------------------------------------- copies and memsets */

/* A device-side range must lie inside one allocation (host-allocated memory
 * counts: with unified addressing it is device accessible). */
static int device_range_ok(uintptr_t p, size_t n)
{
    return fake_find_allocation(p, n == 0 ? 1 : n) != NULL;
}

/* A range given to a unified-address copy is either inside one allocation or
 * host memory the driver does not know; straddling an allocation's end is an error. */
static int unified_range_ok(uintptr_t p, size_t n)
{
    if (p == 0)
        return 0;
    if (fake_find_allocation(p, 1) != NULL)
        return device_range_ok(p, n);
    return 1;
}

/* The device side of a directed copy (cuMemcpyHtoD, DtoH, DtoD and their
 * Async forms): as device_range_ok, except host memory from a pool, which
 * driver 580 refuses there with CUDA_ERROR_INVALID_VALUE (cuMemcpy takes it). */
static int directed_range_ok(uintptr_t p, size_t n)
{
    const struct fake_allocation *a = fake_find_allocation(p, n == 0 ? 1 : n);
    return a != NULL && !(a->pool != NULL && a->kind == FAKE_MEM_HOST);
}

enum copy_kind { COPY_UNIFIED, COPY_HTOD, COPY_DTOH, COPY_DTOD };

static CUresult copy(enum copy_kind kind, uintptr_t dst, uintptr_t src, size_t n, CUstream stream, int async)
{
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS && async)
        r = fake_check_stream(stream, &s);
    if (r == CUDA_SUCCESS && n != 0) {
        int ok;
        switch (kind) {
        case COPY_HTOD: ok = src != 0 && directed_range_ok(dst, n); break;
        case COPY_DTOH: ok = dst != 0 && directed_range_ok(src, n); break;
        case COPY_DTOD: ok = directed_range_ok(dst, n) && directed_range_ok(src, n); break;
        default: ok = unified_range_ok(dst, n) && unified_range_ok(src, n); break;
        }
        if (!ok)
            r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r == CUDA_SUCCESS && n != 0) {
        struct fake_op op = { .kind = FAKE_OP_MEMCPY };
        op.where[0] = fake_memory_context(dst);
        op.where[1] = fake_memory_context(src);
        op.u.memcpy.dst = (void *)dst;
        op.u.memcpy.src = (const void *)src;
        op.u.memcpy.bytes = n;
        r = fake_submit(s, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy(COPY_UNIFIED, (uintptr_t)dst, (uintptr_t)src, n, NULL, 0);
}
static CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
    return copy(COPY_HTOD, (uintptr_t)dst, (uintptr_t)src, n, NULL, 0);
}
static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    return copy(COPY_DTOH, (uintptr_t)dst, (uintptr_t)src, n, NULL, 0);
}
static CUresult fake_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy(COPY_DTOD, (uintptr_t)dst, (uintptr_t)src, n, NULL, 0);
}
static CUresult fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy(COPY_UNIFIED, (uintptr_t)dst, (uintptr_t)src, n, s, 1);
}
static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return copy(COPY_HTOD, (uintptr_t)dst, (uintptr_t)src, n, s, 1);
}
static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy(COPY_DTOH, (uintptr_t)dst, (uintptr_t)src, n, s, 1);
}
static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy(COPY_DTOD, (uintptr_t)dst, (uintptr_t)src, n, s, 1);
}

static CUresult fill(uintptr_t dst, unsigned value, unsigned element_size, size_t count, CUstream stream, int async)
{
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS && async)
        r = fake_check_stream(stream, &s);
    if (r == CUDA_SUCCESS && count != 0) {
        if (dst % element_size != 0 || count > SIZE_MAX / element_size ||
            !device_range_ok(dst, count * element_size))
            r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r == CUDA_SUCCESS && count != 0) {
        struct fake_op op = { .kind = FAKE_OP_MEMSET };
        op.where[0] = fake_memory_context(dst);
        op.u.memset.dst = (void *)dst;
        op.u.memset.value = value;
        op.u.memset.element_size = element_size;
        op.u.memset.count = count;
        r = fake_submit(s, &op);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { return fill(d, v, 1, n, NULL, 0); }
static CUresult fake_cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) { return fill(d, v, 2, n, NULL, 0); }
static CUresult fake_cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) { return fill(d, v, 4, n, NULL, 0); }
static CUresult fake_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return fill(d, v, 1, n, s, 1); }
static CUresult fake_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { return fill(d, v, 2, n, s, 1); }
static CUresult fake_cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) { return fill(d, v, 4, n, s, 1); }

/* ---------------------------------------------------------- managed memory */

/* Where a page of managed memory was last prefetched to (the page's byte in
 * fake_allocation.prefetched). */
enum fake_prefetch { PREFETCH_NEVER = 0, PREFETCH_HOST, PREFETCH_HOST_NUMA0, PREFETCH_DEVICE0 };

/* The managed allocation holding [p, p + n) and its first and last page
 * (CPU pages, as the driver rounds), or NULL. Caller holds the lock. */
static struct fake_allocation *managed_pages(uintptr_t p, size_t n, size_t *first, size_t *last)
{
    struct fake_allocation *a = n != 0 ? fake_find_allocation(p, n) : NULL;
    if (a == NULL || a->kind != FAKE_MEM_MANAGED)
        return NULL;
    size_t offset = p - (uintptr_t)a->base;
    *first = offset / FAKE_PAGE_SIZE;
    *last = (offset + n - 1) / FAKE_PAGE_SIZE;
    return a;
}

/* A CUmemLocation as a page's location byte (enum fake_prefetch). */
static CUresult location_code(CUmemLocation location, unsigned char *where)
{
    CUresult r;
    switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if ((r = fake_check_device(location.id)) != CUDA_SUCCESS)
            return r; /* CUDA_ERROR_INVALID_DEVICE for an ordinal out of range */
        *where = (unsigned char)(PREFETCH_DEVICE0 + location.id);
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
        *where = PREFETCH_HOST; /* the id is ignored */
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (location.id != 0)
            return CUDA_ERROR_INVALID_VALUE; /* the fake's host has one NUMA node, 0 */
        *where = PREFETCH_HOST_NUMA0;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *where = PREFETCH_HOST_NUMA0; /* the id is ignored */
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The context and stream checks of an asynchronous managed-memory
 * operation. Caller holds the lock. */
static CUresult managed_stream_ok(CUstream hStream)
{
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(hStream, &s);
    if (r == CUDA_SUCCESS && fake_stream_capturing(s))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the fake has no prefetch nodes */
    return r;
}

/* Marks [devPtr, devPtr + count) as prefetched to where (with discard: as
 * discarded, its contents 0xDD). Caller holds the lock. */
static CUresult prefetch_range(CUdeviceptr devPtr, size_t count, unsigned char where, int discard)
{
    size_t first = 0, last = 0;
    struct fake_allocation *a = managed_pages((uintptr_t)devPtr, count, &first, &last);
    if (a == NULL)
        return CUDA_ERROR_INVALID_VALUE; /* only managed memory can be prefetched or discarded */
    if (a->prefetched == NULL) {
        a->prefetched = calloc((a->size + FAKE_PAGE_SIZE - 1) / FAKE_PAGE_SIZE, 1);
        if (a->prefetched == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (discard)
        memset((unsigned char *)(uintptr_t)devPtr, 0xDD, count);
    memset(a->prefetched + first, discard ? PREFETCH_NEVER : where, last - first + 1);
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                        unsigned int flags, CUstream hStream)
{
    unsigned char where;
    CUresult r;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE; /* reserved, must be 0 */
    if ((r = location_code(location, &where)) != CUDA_SUCCESS)
        return r;
    fake_lock();
    r = managed_stream_ok(hStream);
    if (r == CUDA_SUCCESS)
        r = prefetch_range(devPtr, count, where, 0);
    fake_unlock();
    return r;
}

/* The batch forms (CUDA 13.0): prefetchLocs[k] applies to the operations
 * from prefetchLocIdxs[k] to the next entry's index; the first index is 0.
 * Ranges are checked before any is touched. As on an H200 with driver 580,
 * the legacy NULL stream is refused (NULL through the legacy variant, or
 * CU_STREAM_LEGACY); per_thread says which variant was called. */
static CUresult batch(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
                      size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream,
                      int discard, int prefetch, int per_thread)
{
    if (dptrs == NULL || sizes == NULL || count == 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (hStream == CU_STREAM_LEGACY || (hStream == NULL && !per_thread))
        return CUDA_ERROR_INVALID_VALUE;
    if (prefetch && (prefetchLocs == NULL || prefetchLocIdxs == NULL || numPrefetchLocs == 0 ||
                     numPrefetchLocs > count || prefetchLocIdxs[0] != 0))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char where = 0;
    CUresult r = CUDA_SUCCESS;
    for (size_t k = 0; prefetch && k < numPrefetchLocs && r == CUDA_SUCCESS; k++) {
        if (k > 0 && (prefetchLocIdxs[k] <= prefetchLocIdxs[k - 1] || prefetchLocIdxs[k] >= count))
            r = CUDA_ERROR_INVALID_VALUE;
        else
            r = location_code(prefetchLocs[k], &where);
    }
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    r = managed_stream_ok(hStream);
    size_t first, last;
    for (size_t i = 0; i < count && r == CUDA_SUCCESS; i++)
        if (managed_pages((uintptr_t)dptrs[i], sizes[i], &first, &last) == NULL)
            r = CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (size_t i = 0; i < count && r == CUDA_SUCCESS; i++) {
        if (discard)
            r = prefetch_range(dptrs[i], sizes[i], 0, 1);
        if (prefetch && r == CUDA_SUCCESS) {
            while (k + 1 < numPrefetchLocs && prefetchLocIdxs[k + 1] <= i)
                k++;
            location_code(prefetchLocs[k], &where);
            r = prefetch_range(dptrs[i], sizes[i], where, 0);
        }
    }
    fake_unlock();
    return r;
}

#define BATCH_FUNCTIONS(suffix, per_thread)                                                                    \
    static CUresult fake_cuMemPrefetchBatchAsync##suffix(CUdeviceptr *dptrs, size_t *sizes, size_t count,       \
                                                         CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,   \
                                                         size_t numPrefetchLocs, unsigned long long flags,       \
                                                         CUstream hStream)                                       \
    {                                                                                                            \
        return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream, 0, 1, \
                     per_thread);                                                                                \
    }                                                                                                            \
    static CUresult fake_cuMemDiscardBatchAsync##suffix(CUdeviceptr *dptrs, size_t *sizes, size_t count,        \
                                                        unsigned long long flags, CUstream hStream)              \
    {                                                                                                            \
        return batch(dptrs, sizes, count, NULL, NULL, 0, flags, hStream, 1, 0, per_thread);                     \
    }                                                                                                            \
    static CUresult fake_cuMemDiscardAndPrefetchBatchAsync##suffix(                                              \
        CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,  \
        size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)                                      \
    {                                                                                                            \
        return batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream, 1, 1, \
                     per_thread);                                                                                \
    }
BATCH_FUNCTIONS(, 0)
BATCH_FUNCTIONS(_ptsz, 1)

/* Advice, kept per page: read-mostly, a preferred location, the devices (and
 * the host) that access the range. */
static CUresult fake_cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    unsigned char where = 0;
    CUresult r = CUDA_SUCCESS;
    int needs_location = advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION || advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                         advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    if (needs_location && (r = location_code(location, &where)) != CUDA_SUCCESS)
        return r;
    if (needs_location && advice != CU_MEM_ADVISE_SET_PREFERRED_LOCATION && where == PREFETCH_HOST_NUMA0)
        return CUDA_ERROR_INVALID_VALUE; /* accessed-by takes a device or the host */
    fake_lock();
    size_t first = 0, last = 0;
    struct fake_allocation *a = managed_pages((uintptr_t)devPtr, count, &first, &last);
    if (a == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (a->pool != NULL)
        r = CUDA_ERROR_NOT_SUPPORTED; /* driver 580 takes no advice for managed pool memory */
    if (r == CUDA_SUCCESS && a->advice == NULL) {
        a->advice = calloc((a->size + FAKE_PAGE_SIZE - 1) / FAKE_PAGE_SIZE, sizeof *a->advice);
        if (a->advice == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    unsigned short bit = where == PREFETCH_HOST ? 0x8000 : (unsigned short)(1u << ((where - PREFETCH_DEVICE0) & 15));
    for (size_t i = first; r == CUDA_SUCCESS && i <= last; i++) {
        struct fake_advice *p = &a->advice[i];
        switch (advice) {
        case CU_MEM_ADVISE_SET_READ_MOSTLY: p->read_mostly = 1; break;
        case CU_MEM_ADVISE_UNSET_READ_MOSTLY: p->read_mostly = 0; break;
        case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: p->preferred = where; break;
        case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: p->preferred = 0; break;
        case CU_MEM_ADVISE_SET_ACCESSED_BY: p->accessed_by |= bit; break;
        default: p->accessed_by &= (unsigned short)~bit; break;
        }
    }
    fake_unlock();
    return r;
}

/* The advice attributes of a range: read-mostly and the preferred location
 * where every page has them, the devices every page is accessed by. Caller
 * holds the lock. */
static CUresult advice_attribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                 const struct fake_allocation *a, size_t first, size_t last)
{
    static const struct fake_advice none = { 0, 0, 0 };
    int read_mostly = 1, preferred = -1;
    unsigned short accessed = 0xFFFF;
    for (size_t i = first; i <= last; i++) {
        const struct fake_advice *p = a->advice != NULL ? &a->advice[i] : &none;
        read_mostly &= p->read_mostly;
        preferred = preferred == -1 || preferred == p->preferred ? p->preferred : 0;
        accessed &= p->accessed_by;
    }
    if (attribute == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        if (dataSize % 4 != 0)
            return CUDA_ERROR_INVALID_VALUE;
        int *out = data;
        size_t n = 0;
        for (int bit = 0; bit < 16; bit++)
            if (accessed & (1u << bit)) {
                if (n == dataSize / 4)
                    return CUDA_ERROR_INVALID_VALUE;
                out[n++] = bit == 15 ? (int)CU_DEVICE_CPU : bit;
            }
        while (n < dataSize / 4)
            out[n++] = (int)CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    if (dataSize != 4)
        return CUDA_ERROR_INVALID_VALUE;
    int value;
    if (attribute == CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY)
        value = read_mostly;
    else if (attribute == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)
        value = preferred <= 0 ? (int)CU_DEVICE_INVALID
                : preferred >= PREFETCH_DEVICE0 ? preferred - PREFETCH_DEVICE0 : (int)CU_DEVICE_CPU;
    else
        return CUDA_ERROR_NOT_SUPPORTED;
    memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                            CUdeviceptr devPtr, size_t count)
{
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (attribute == CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY || attribute == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION ||
        attribute == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        size_t first = 0, last = 0;
        fake_lock();
        const struct fake_allocation *a = managed_pages((uintptr_t)devPtr, count, &first, &last);
        CUresult r = a == NULL ? CUDA_ERROR_INVALID_VALUE
                               : advice_attribute(data, dataSize, attribute, a, first, last);
        fake_unlock();
        return r;
    }
    if (dataSize != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (attribute != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION &&
        attribute != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE &&
        attribute != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID)
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake models prefetching only (README) */
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    size_t first = 0, last = 0;
    struct fake_allocation *a = managed_pages((uintptr_t)devPtr, count, &first, &last);
    /* One location for the whole range, or none (never prefetched, or pages in
     * different places). */
    int where = PREFETCH_NEVER;
    if (a == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (a->prefetched != NULL) {
        where = a->prefetched[first];
        for (size_t i = first + 1; i <= last; i++)
            if (a->prefetched[i] != where)
                where = PREFETCH_NEVER;
    }
    if (r == CUDA_SUCCESS) {
        int value;
        if (attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION)
            value = where == PREFETCH_NEVER ? (int)CU_DEVICE_INVALID
                    : where >= PREFETCH_DEVICE0 ? where - PREFETCH_DEVICE0 : (int)CU_DEVICE_CPU;
        else if (attribute == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE)
            value = where == PREFETCH_NEVER ? (int)CU_MEM_LOCATION_TYPE_INVALID
                    : where == PREFETCH_HOST ? (int)CU_MEM_LOCATION_TYPE_HOST
                    : where == PREFETCH_HOST_NUMA0 ? (int)CU_MEM_LOCATION_TYPE_HOST_NUMA
                                                   : (int)CU_MEM_LOCATION_TYPE_DEVICE;
        else
            value = where >= PREFETCH_DEVICE0 ? where - PREFETCH_DEVICE0 : 0;
        memcpy(data, &value, sizeof value);
    }
    fake_unlock();
    return r;
}

/* ------------------------------------------------------------ memory pools */

static void pool_release(struct fake_pool *pool, size_t size)
{
    pool->used -= size;
    pool->retained += size;
    /* Freed memory beyond the release threshold goes back to the system. */
    if (pool->used + pool->retained > pool->release_threshold)
        pool->retained = pool->release_threshold > pool->used ? pool->release_threshold - pool->used : 0;
}

static void pool_destroy(struct fake_object *self)
{
    /* Allocations outliving their pool stay valid; they no longer feed its counters. */
    for (struct fake_allocation *a = allocations; a != NULL; a = a->next)
        if (a->pool == (struct fake_pool *)self)
            a->pool = NULL;
    struct fake_pool *pool = (struct fake_pool *)self;
    if (pool->ipc != NULL)
        fake_ipc_release(pool->ipc, 0);
}

/* A pool of pinned memory on device dev, as the default pools are. Caller holds the lock. */
static struct fake_pool *pool_new(CUdevice dev, int is_default)
{
    struct fake_pool *pool = fake_object_new(FAKE_POOL, sizeof *pool, NULL, !is_default);
    if (pool == NULL)
        return NULL;
    pool->obj.destroy = pool_destroy;
    pool->device = dev;
    pool->is_default = is_default;
    pool->reuse[0] = pool->reuse[1] = pool->reuse[2] = 1;
    pool->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pool->location.id = dev;
    pool->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return pool;
}

/* Caller holds the lock. */
static struct fake_pool *default_pool(CUdevice dev)
{
    if (default_pools[dev] == NULL)
        default_pools[dev] = pool_new(dev, 1);
    return default_pools[dev];
}

static struct fake_pool *current_pool(CUdevice dev)
{
    if (current_pools[dev] != NULL && fake_object_valid(current_pools[dev], FAKE_POOL))
        return current_pools[dev];
    return default_pool(dev);
}

/* What kind of memory a pool hands out: device memory, pinned host memory,
 * or managed memory. */
static enum fake_memory_kind pool_kind(const struct fake_pool *pool)
{
    if (pool->type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return FAKE_MEM_MANAGED;
    return pool->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? FAKE_MEM_POOL : FAKE_MEM_HOST;
}

/* -------------------------------------------------------------- graph memory */

/* Memory allocated while a stream is captured: its address is fixed at
 * capture; the graph's allocation node makes it live when it runs, and its
 * free node (or a cuMemFreeAsync after the launch) ends that. The memory is
 * held while a graph or executable graph has the allocation node, or while
 * it is live. Per device the driver's four counters: used is the live
 * bytes; reserved is the bytes a launch has backed that no trim gave back. */
struct graph_alloc {
    struct fake_allocation *a;
    int refs;   /* allocation nodes holding it */
    int live;   /* allocated by a launch and not freed since */
    int backed; /* counted in reserved */
    struct graph_alloc *next;
};
static struct graph_alloc *graph_allocs;
static cuuint64_t graph_used[FAKE_MAX_DEVICES], graph_used_high[FAKE_MAX_DEVICES];
static cuuint64_t graph_reserved[FAKE_MAX_DEVICES], graph_reserved_high[FAKE_MAX_DEVICES];

static struct graph_alloc *graph_alloc_of(const struct fake_allocation *a)
{
    for (struct graph_alloc *g = graph_allocs; g != NULL; g = g->next)
        if (g->a == a)
            return g;
    return NULL;
}

static struct graph_alloc *graph_alloc_at(const void *p)
{
    for (struct graph_alloc *g = graph_allocs; g != NULL; g = g->next)
        if (g->a->base == p)
            return g;
    return NULL;
}

/* The allocation is going (its context closed, or it was freed): drop its record and counters. */
static void graph_forget(const struct fake_allocation *a)
{
    for (struct graph_alloc **link = &graph_allocs; *link != NULL; link = &(*link)->next) {
        struct graph_alloc *g = *link;
        if (g->a != a)
            continue;
        if (g->live)
            graph_used[a->device] -= a->size;
        if (g->backed)
            graph_reserved[a->device] -= a->size;
        *link = g->next;
        free(g);
        return;
    }
}

/* Deletes graph memory that no node holds and no launch left live. */
static void graph_collect(struct graph_alloc *g)
{
    if (g->refs == 0 && !g->live)
        allocation_delete(g->a); /* also drops g */
}

static void graph_count(CUdevice dev)
{
    if (graph_used[dev] > graph_used_high[dev])
        graph_used_high[dev] = graph_used[dev];
    if (graph_reserved[dev] > graph_reserved_high[dev])
        graph_reserved_high[dev] = graph_reserved[dev];
}

void fake_graph_mem_hold(const struct fake_op *op, int delta)
{
    struct graph_alloc *g = graph_alloc_at(op->u.mem.ptr);
    if (g == NULL)
        return; /* its context was destroyed and took the memory */
    g->refs += delta;
    graph_collect(g);
}

CUresult fake_graph_mem_run(const struct fake_op *op)
{
    struct graph_alloc *g = graph_alloc_at(op->u.mem.ptr);
    if (g == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice dev = g->a->device;
    if (op->kind == FAKE_OP_MEM_ALLOC) {
        if (g->live)
            return CUDA_ERROR_INVALID_VALUE; /* the last launch's allocation was never freed */
        g->live = 1;
        graph_used[dev] += g->a->size;
        if (!g->backed) {
            g->backed = 1;
            graph_reserved[dev] += g->a->size;
        }
    } else {
        if (!g->live)
            return CUDA_ERROR_INVALID_VALUE;
        g->live = 0;
        graph_used[dev] -= g->a->size;
    }
    graph_count(dev);
    return CUDA_SUCCESS;
}

/* A free outside capture of graph memory a launch allocated. */
static CUresult graph_free(struct fake_allocation *a)
{
    struct graph_alloc *g = graph_alloc_of(a);
    if (!g->live)
        return CUDA_ERROR_INVALID_VALUE; /* not allocated now: no launch, or freed already */
    g->live = 0;
    graph_used[a->device] -= a->size;
    graph_collect(g);
    return CUDA_SUCCESS;
}

/* cuMemAllocAsync during capture: an allocation node. Caller holds the lock. */
static CUresult graph_allocate(CUdeviceptr *dptr, size_t size, struct fake_context *ctx, CUdevice dev,
                               struct fake_stream *s)
{
    struct fake_allocation *a = NULL;
    struct graph_alloc *g = calloc(1, sizeof *g);
    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = allocation_new(FAKE_MEM_POOL, size, ctx, dev, NULL, &a);
    if (r != CUDA_SUCCESS) {
        free(g);
        return r;
    }
    a->stream_ordered = 1;
    g->a = a;
    g->refs = 1; /* the node's, handed to the graph by fake_submit */
    g->next = graph_allocs;
    graph_allocs = g;
    struct fake_op op = { .kind = FAKE_OP_MEM_ALLOC };
    op.where[0] = ctx;
    op.u.mem.ptr = a->base;
    *dptr = (CUdeviceptr)(uintptr_t)a->base;
    return fake_submit(s, &op);
}

static CUresult pool_allocate(CUdeviceptr *dptr, size_t size, struct fake_pool *pool, CUstream stream)
{
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    struct fake_allocation *a = NULL;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(stream, &s);
    if (r == CUDA_SUCCESS && pool == NULL)
        pool = current_pool(ctx->device);
    if (r == CUDA_SUCCESS && pool == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && pool->imported)
        r = CUDA_ERROR_INVALID_VALUE; /* imported pools do not allocate */
    if (r == CUDA_SUCCESS && fake_stream_capturing(s)) {
        /* Graph memory is device memory; the fake captures no host, managed or interprocess pools. */
        r = pool_kind(pool) == FAKE_MEM_POOL && pool->ipc == NULL
                ? graph_allocate(dptr, size, ctx, pool->device, s)
                : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        fake_unlock();
        return r;
    }
    /* Host pools and managed pools without a preferred device serve the caller's device. */
    CUdevice dev = pool != NULL && pool->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? pool->device
                                                                                      : ctx->device;
    if (r == CUDA_SUCCESS)
        r = allocation_new(pool_kind(pool), size, ctx, dev, pool, &a);
    if (r == CUDA_SUCCESS) {
        a->stream_ordered = 1;
        pool->used += size;
        pool->retained = pool->retained > size ? pool->retained - size : 0;
        if (pool->used > pool->used_high)
            pool->used_high = pool->used;
        if (pool->used + pool->retained > pool->reserved_high)
            pool->reserved_high = pool->used + pool->retained;
        *dptr = (CUdeviceptr)(uintptr_t)a->base;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return pool_allocate(dptr, bytesize, NULL, hStream);
}

static CUresult fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    fake_lock();
    int ok = fake_object_valid(pool, FAKE_POOL);
    fake_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_allocate(dptr, bytesize, (struct fake_pool *)pool, hStream);
}

static CUresult fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(hStream, &s);
    struct fake_allocation *a = r == CUDA_SUCCESS ? find_stream_ordered((uintptr_t)dptr) : NULL;
    if (r == CUDA_SUCCESS && a == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (r == CUDA_SUCCESS && fake_stream_capturing(s)) {
        /* A free node, for graph memory; the fake captures no other frees. */
        if (graph_alloc_of(a) != NULL) {
            struct fake_op op = { .kind = FAKE_OP_MEM_FREE };
            op.where[0] = ctx;
            op.u.mem.ptr = a->base;
            r = fake_submit(s, &op);
        } else {
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    } else if (r == CUDA_SUCCESS) {
        if (graph_alloc_of(a) != NULL)
            r = graph_free(a);
        else
            allocation_delete(a);
    }
    fake_unlock();
    return r;
}

/* Sets what a new pool holds and where; host memory is the host's until a
 * device is granted access (cuMemPoolSetAccess), managed memory every device
 * reaches. Caller holds the lock. */
static void pool_place(struct fake_pool *p, CUmemAllocationType type, CUmemLocation location)
{
    int on_device = location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    p->type = type;
    p->location = location;
    for (int d = 0; d < FAKE_MAX_DEVICES; d++)
        if (type == CU_MEM_ALLOCATION_TYPE_MANAGED || (on_device && d == p->device))
            p->access[d] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        else
            p->access[d] = CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

/* The pool locations CUDA 13.0 accepts (cuMemPoolCreate): pinned memory on a
 * device, the host or a host NUMA node (the fake has node 0); managed memory
 * with a preferred device, host or NUMA node, or none. Host pools and
 * managed pools are not IPC capable. */
static CUresult pool_location_ok(const CUmemPoolProps *props)
{
    int managed = props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED;
    if (!managed && props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (managed && props->maxSize != 0)
        return CUDA_ERROR_INVALID_VALUE; /* driver 580 refuses a size limit on managed pools */
    switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: {
        CUresult r = fake_check_device(props->location.id);
        if (r != CUDA_SUCCESS)
            return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
        if (props->handleTypes == CU_MEM_HANDLE_TYPE_NONE)
            return CUDA_SUCCESS;
        if (managed)
            return CUDA_ERROR_INVALID_VALUE;
        /* the fake shares device pools through file descriptors only (ipc.c) */
        return props->handleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? CUDA_SUCCESS
                                                                               : CUDA_ERROR_NOT_SUPPORTED;
    }
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (props->location.id != 0)
            return CUDA_ERROR_INVALID_VALUE;
        /* fall through */
    case CU_MEM_LOCATION_TYPE_HOST:
        return props->handleTypes == CU_MEM_HANDLE_TYPE_NONE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_MEM_LOCATION_TYPE_NONE:
        return managed && props->handleTypes == CU_MEM_HANDLE_TYPE_NONE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE; /* HOST_NUMA_CURRENT among them */
    }
}

static CUresult fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    struct fake_context *ctx = NULL;
    if (pool == NULL || props == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = pool_location_ok(props);
    if (r != CUDA_SUCCESS)
        return r;
    int on_device = props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    fake_lock();
    if (!on_device)
        r = fake_require_context(&ctx); /* a pool away from devices serves the current one */
    struct fake_pool *p = r == CUDA_SUCCESS ? pool_new(on_device ? props->location.id : ctx->device, 0) : NULL;
    if (p != NULL)
        pool_place(p, props->allocType, props->location);
    if (p != NULL && props->handleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        p->ipc = fake_ipc_region_new(props->maxSize, props->location.id);
        if (p->ipc == NULL) {
            fake_object_delete(p);
            p = NULL;
        }
    }
    fake_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    if (map == NULL && count != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || fake_check_device(map[i].location.id) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_DEVICE;
        if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL))
        r = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
        if (p->location.type == CU_MEM_LOCATION_TYPE_DEVICE && map[i].location.id == p->device &&
            map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            r = CUDA_ERROR_INVALID_VALUE; /* a device pool's own device keeps full access */
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
        p->access[map[i].location.id] = map[i].flags;
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    if (flags == NULL || location == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    const struct fake_pool *p = (const struct fake_pool *)memPool;
    if (!fake_object_valid(p, FAKE_POOL))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (location->type == CU_MEM_LOCATION_TYPE_DEVICE && fake_check_device(location->id) == CUDA_SUCCESS)
        *flags = p->access[location->id];
    else if (location->type == CU_MEM_LOCATION_TYPE_HOST || location->type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        *flags = pool_kind(p) == FAKE_MEM_POOL ? CU_MEM_ACCESS_FLAGS_PROT_NONE : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolDestroy(CUmemoryPool pool)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL) || p->is_default) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (int d = 0; d < FAKE_MAX_DEVICES; d++)
            if (current_pools[d] == p)
                current_pools[d] = NULL;
        fake_object_delete(p);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (p->used + p->retained > minBytesToKeep)
        p->retained = minBytesToKeep > p->used ? minBytesToKeep - p->used : 0;
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto done;
    }
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->release_threshold = *(cuuint64_t *)value;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        /* High-water marks may only be reset, to the current value. */
        if (*(cuuint64_t *)value != 0)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
            p->used_high = p->used;
        else
            p->reserved_high = p->used + p->retained;
        break;
    default:
        r = CUDA_ERROR_INVALID_VALUE;
        break;
    }
done:
    fake_unlock();
    return r;
}

static CUresult fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto done;
    }
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->used + p->retained; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
done:
    fake_unlock();
    return r;
}

static CUresult fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pool_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    struct fake_pool *p = default_pool(dev);
    fake_unlock();
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool_out = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

/* The driver's default pools at the other locations (CUDA 13.0), made on
 * first use: [0] pinned on the host, [1] pinned on host NUMA node 0, [2]
 * managed with no preferred location, [3] managed on the host, [4] managed
 * on node 0, [5 + d] managed on device d. */
static struct fake_pool *other_default_pools[2 + 3 + FAKE_MAX_DEVICES];

static CUresult fake_cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type)
{
    if (pool_out == NULL || location == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int managed = type == CU_MEM_ALLOCATION_TYPE_MANAGED;
    if (!managed && type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int slot;
    switch (location->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: {
        CUresult r = fake_check_device(location->id);
        if (r != CUDA_SUCCESS)
            return r;
        if (!managed)
            return fake_cuDeviceGetDefaultMemPool(pool_out, location->id);
        slot = 5 + location->id;
        break;
    }
    case CU_MEM_LOCATION_TYPE_HOST: slot = managed ? 3 : 0; break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (location->id != 0)
            return CUDA_ERROR_INVALID_VALUE;
        slot = managed ? 4 : 1;
        break;
    case CU_MEM_LOCATION_TYPE_NONE:
        if (!managed)
            return CUDA_ERROR_INVALID_VALUE;
        slot = 2;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_lock();
    struct fake_pool *p = other_default_pools[slot];
    if (p == NULL) {
        p = pool_new(location->type == CU_MEM_LOCATION_TYPE_DEVICE ? location->id : 0, 1);
        if (p != NULL) {
            CUmemLocation where = *location;
            if (location->type == CU_MEM_LOCATION_TYPE_HOST)
                where.id = 0; /* ignored for the host */
            pool_place(p, type, where);
        }
        other_default_pools[slot] = p;
    }
    fake_unlock();
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool_out = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    struct fake_pool *p = current_pool(dev);
    fake_unlock();
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    struct fake_pool *p = (struct fake_pool *)pool;
    /* device pools; managed pools on the device are taken too (driver 580), as the
     * device's managed pool, which cuDeviceGetMemPool does not report */
    if (!fake_object_valid(p, FAKE_POOL) || p->device != dev || p->imported
        || !(pool_kind(p) == FAKE_MEM_POOL
             || (pool_kind(p) == FAKE_MEM_MANAGED && p->location.type == CU_MEM_LOCATION_TYPE_DEVICE)))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (pool_kind(p) == FAKE_MEM_POOL)
        current_pools[dev] = p;
    fake_unlock();
    return r;
}

/* ------------------------------------------------- interprocess pools (ipc.c) */

struct fake_ipc_region *fake_pool_region(CUmemoryPool pool, int *imported)
{
    struct fake_pool *p = (struct fake_pool *)pool;
    if (!fake_object_valid(p, FAKE_POOL) || p->ipc == NULL)
        return NULL;
    *imported = p->imported;
    return p->ipc;
}

CUresult fake_pool_import(struct fake_ipc_region *r, CUdevice dev, CUmemoryPool *out)
{
    struct fake_pool *p = pool_new(dev, 0);
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->ipc = r;
    p->imported = 1;
    *out = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

CUresult fake_pool_adopt_import(struct fake_context *ctx, CUmemoryPool pool, void *base, size_t size,
                                CUdeviceptr *out)
{
    struct fake_pool *p = (struct fake_pool *)pool;
    struct fake_allocation *a = calloc(1, sizeof *a);
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->base = base;
    a->size = size;
    a->kind = FAKE_MEM_POOL;
    a->ctx = ctx;
    a->pool = p;
    a->device = p->device;
    a->id = next_allocation_id++;
    a->ipc = p->ipc;
    a->ipc_imported = 1;
    a->stream_ordered = 1; /* pool memory: cuMemFree and cuMemFreeAsync free it */
    a->next = allocations;
    allocations = a;
    live_allocations++;
    p->used += size; /* given back by allocation_delete's pool_release */
    *out = (CUdeviceptr)(uintptr_t)base;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGraphMemTrim(CUdevice device)
{
    CUresult r = fake_check_device(device);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    /* Backing of graph memory no launch holds now goes back to the system. */
    for (struct graph_alloc *g = graph_allocs; g != NULL; g = g->next)
        if (g->a->device == device && g->backed && !g->live) {
            g->backed = 0;
            graph_reserved[device] -= g->a->size;
        }
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    CUresult r = fake_check_device(device);
    if (r != CUDA_SUCCESS)
        return r;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = graph_used[device]; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = graph_used_high[device]; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = graph_reserved[device]; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = graph_reserved_high[device]; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    CUresult r = fake_check_device(device);
    if (r != CUDA_SUCCESS)
        return r;
    /* Only the high-water marks may be set, and only to 0, which resets them to the current value. */
    if (value == NULL || *(cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
        graph_used_high[device] = graph_used[device];
    else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        graph_reserved_high[device] = graph_reserved[device];
    else
        r = CUDA_ERROR_INVALID_VALUE;
    fake_unlock();
    return r;
}

/* cuMemcpyBatchAsync (CUDA 13.0's form): attrs[k] applies to the copies from
 * attrsIdxs[k] to the next entry's index; the first index is 0, the indices
 * rise and stay below count. Every range is checked before any is copied.
 * The legacy NULL stream is refused, as for the other batch calls. */
static CUresult memcpy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                             CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream,
                             int per_thread)
{
    if (dsts == NULL || srcs == NULL || sizes == NULL || count == 0 || attrs == NULL || attrsIdxs == NULL ||
        numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (hStream == CU_STREAM_LEGACY || (hStream == NULL && !per_thread))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < numAttrs; k++) {
        if (k > 0 && (attrsIdxs[k] <= attrsIdxs[k - 1] || attrsIdxs[k] >= count))
            return CUDA_ERROR_INVALID_VALUE;
        if (attrs[k].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
            attrs[k].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
            attrs[k].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
            return CUDA_ERROR_INVALID_VALUE;
        if ((attrs[k].flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) != 0)
            return CUDA_ERROR_INVALID_VALUE;
    }
    struct fake_context *ctx;
    struct fake_stream *s = NULL;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS)
        r = fake_check_stream(hStream, &s);
    fake_unlock();
    /* copied in order up to a bad range, which fails the call: driver 580 had made the
     * copy before a bad one when it refused a batch */
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
        r = sizes[i] == 0 ? CUDA_ERROR_INVALID_VALUE
                          : copy(COPY_UNIFIED, (uintptr_t)dsts[i], (uintptr_t)srcs[i], sizes[i], hStream, 1);
    return r;
}

static CUresult fake_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                        CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                        CUstream hStream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, 0);
}

static CUresult fake_cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                             CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                             CUstream hStream)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream, 1);
}

const struct fake_impl fake_impls_memory[] = {
    FAKE_IMPL("cuMemAlloc", 3020, fake_cuMemAlloc),
    FAKE_IMPL("cuMemAllocManaged", 6000, fake_cuMemAllocManaged),
    FAKE_IMPL("cuMemAllocPitch", 3020, fake_cuMemAllocPitch),
    FAKE_IMPL("cuMemFree", 3020, fake_cuMemFree),
    FAKE_IMPL("cuMemAllocHost", 3020, fake_cuMemAllocHost),
    FAKE_IMPL("cuMemHostAlloc", 2020, fake_cuMemHostAlloc),
    FAKE_IMPL("cuMemFreeHost", 2000, fake_cuMemFreeHost),
    FAKE_IMPL("cuMemHostGetDevicePointer", 3020, fake_cuMemHostGetDevicePointer),
    FAKE_IMPL("cuMemGetInfo", 3020, fake_cuMemGetInfo),
    FAKE_IMPL("cuMemGetAddressRange", 3020, fake_cuMemGetAddressRange),
    FAKE_IMPL("cuPointerGetAttribute", 4000, fake_cuPointerGetAttribute),
    FAKE_IMPL("cuMemcpy", 4000, fake_cuMemcpy),
    FAKE_IMPL_PT("cuMemcpy", 7000, fake_cuMemcpy),
    FAKE_IMPL("cuMemcpyHtoD", 3020, fake_cuMemcpyHtoD),
    FAKE_IMPL_PT("cuMemcpyHtoD", 7000, fake_cuMemcpyHtoD),
    FAKE_IMPL("cuMemcpyDtoH", 3020, fake_cuMemcpyDtoH),
    FAKE_IMPL_PT("cuMemcpyDtoH", 7000, fake_cuMemcpyDtoH),
    FAKE_IMPL("cuMemcpyDtoD", 3020, fake_cuMemcpyDtoD),
    FAKE_IMPL_PT("cuMemcpyDtoD", 7000, fake_cuMemcpyDtoD),
    FAKE_IMPL("cuMemcpyAsync", 4000, fake_cuMemcpyAsync),
    FAKE_IMPL_PT("cuMemcpyAsync", 7000, fake_cuMemcpyAsync),
    FAKE_IMPL("cuMemcpyHtoDAsync", 3020, fake_cuMemcpyHtoDAsync),
    FAKE_IMPL_PT("cuMemcpyHtoDAsync", 7000, fake_cuMemcpyHtoDAsync),
    FAKE_IMPL("cuMemcpyDtoHAsync", 3020, fake_cuMemcpyDtoHAsync),
    FAKE_IMPL_PT("cuMemcpyDtoHAsync", 7000, fake_cuMemcpyDtoHAsync),
    FAKE_IMPL("cuMemcpyDtoDAsync", 3020, fake_cuMemcpyDtoDAsync),
    FAKE_IMPL_PT("cuMemcpyDtoDAsync", 7000, fake_cuMemcpyDtoDAsync),
    FAKE_IMPL("cuMemsetD8", 3020, fake_cuMemsetD8),
    FAKE_IMPL_PT("cuMemsetD8", 7000, fake_cuMemsetD8),
    FAKE_IMPL("cuMemsetD16", 3020, fake_cuMemsetD16),
    FAKE_IMPL_PT("cuMemsetD16", 7000, fake_cuMemsetD16),
    FAKE_IMPL("cuMemsetD32", 3020, fake_cuMemsetD32),
    FAKE_IMPL_PT("cuMemsetD32", 7000, fake_cuMemsetD32),
    FAKE_IMPL("cuMemsetD8Async", 3020, fake_cuMemsetD8Async),
    FAKE_IMPL_PT("cuMemsetD8Async", 7000, fake_cuMemsetD8Async),
    FAKE_IMPL("cuMemsetD16Async", 3020, fake_cuMemsetD16Async),
    FAKE_IMPL_PT("cuMemsetD16Async", 7000, fake_cuMemsetD16Async),
    FAKE_IMPL("cuMemsetD32Async", 3020, fake_cuMemsetD32Async),
    FAKE_IMPL_PT("cuMemsetD32Async", 7000, fake_cuMemsetD32Async),
    FAKE_IMPL("cuMemPrefetchAsync", 12020, fake_cuMemPrefetchAsync),
    FAKE_IMPL_PT("cuMemPrefetchAsync", 12020, fake_cuMemPrefetchAsync),
    FAKE_IMPL("cuMemRangeGetAttribute", 8000, fake_cuMemRangeGetAttribute),
    FAKE_IMPL("cuMemAdvise", 12020, fake_cuMemAdvise),
    FAKE_IMPL("cuMemPrefetchBatchAsync", 13000, fake_cuMemPrefetchBatchAsync),
    FAKE_IMPL_PT("cuMemPrefetchBatchAsync", 13000, fake_cuMemPrefetchBatchAsync_ptsz),
    FAKE_IMPL("cuMemDiscardBatchAsync", 13000, fake_cuMemDiscardBatchAsync),
    FAKE_IMPL_PT("cuMemDiscardBatchAsync", 13000, fake_cuMemDiscardBatchAsync_ptsz),
    FAKE_IMPL("cuMemDiscardAndPrefetchBatchAsync", 13000, fake_cuMemDiscardAndPrefetchBatchAsync),
    FAKE_IMPL_PT("cuMemDiscardAndPrefetchBatchAsync", 13000, fake_cuMemDiscardAndPrefetchBatchAsync_ptsz),
    FAKE_IMPL("cuMemAllocAsync", 11020, fake_cuMemAllocAsync),
    FAKE_IMPL_PT("cuMemAllocAsync", 11020, fake_cuMemAllocAsync),
    FAKE_IMPL("cuMemAllocFromPoolAsync", 11020, fake_cuMemAllocFromPoolAsync),
    FAKE_IMPL_PT("cuMemAllocFromPoolAsync", 11020, fake_cuMemAllocFromPoolAsync),
    FAKE_IMPL("cuMemFreeAsync", 11020, fake_cuMemFreeAsync),
    FAKE_IMPL_PT("cuMemFreeAsync", 11020, fake_cuMemFreeAsync),
    FAKE_IMPL("cuMemPoolCreate", 11020, fake_cuMemPoolCreate),
    FAKE_IMPL("cuMemPoolDestroy", 11020, fake_cuMemPoolDestroy),
    FAKE_IMPL("cuMemPoolTrimTo", 11020, fake_cuMemPoolTrimTo),
    FAKE_IMPL("cuMemPoolSetAttribute", 11020, fake_cuMemPoolSetAttribute),
    FAKE_IMPL("cuMemPoolGetAttribute", 11020, fake_cuMemPoolGetAttribute),
    FAKE_IMPL("cuDeviceGetDefaultMemPool", 11020, fake_cuDeviceGetDefaultMemPool),
    FAKE_IMPL("cuDeviceGetMemPool", 11020, fake_cuDeviceGetMemPool),
    FAKE_IMPL("cuDeviceSetMemPool", 11020, fake_cuDeviceSetMemPool),
    FAKE_IMPL("cuMemGetDefaultMemPool", 13000, fake_cuMemGetDefaultMemPool),
    FAKE_IMPL("cuMemPoolSetAccess", 11020, fake_cuMemPoolSetAccess),
    FAKE_IMPL("cuMemPoolGetAccess", 11020, fake_cuMemPoolGetAccess),
    FAKE_IMPL("cuDeviceGraphMemTrim", 11040, fake_cuDeviceGraphMemTrim),
    FAKE_IMPL("cuDeviceGetGraphMemAttribute", 11040, fake_cuDeviceGetGraphMemAttribute),
    FAKE_IMPL("cuDeviceSetGraphMemAttribute", 11040, fake_cuDeviceSetGraphMemAttribute),
    FAKE_IMPL("cuMemcpyBatchAsync", 13000, fake_cuMemcpyBatchAsync),
    FAKE_IMPL_PT("cuMemcpyBatchAsync", 13000, fake_cuMemcpyBatchAsync_ptsz),
    FAKE_IMPL_END,
};

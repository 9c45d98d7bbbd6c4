/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess and their inverses), modelled with the host's own virtual
 * memory so that a fake device pointer stays a host address:
 *
 * - a reservation is part of one inaccessible host mapping (PROT_NONE),
 *   handed out upwards (see reserve_range);
 * - a physical allocation (a generic allocation handle) is a memfd of its size;
 * - cuMemMap maps the memfd over part of a reservation (MAP_SHARED|MAP_FIXED),
 *   so two mappings of one handle alias, and a handle can be mapped again
 *   elsewhere without copying; cuMemUnmap puts the inaccessible mapping back.
 *
 * Copies and memsets reach mapped memory through fake_vmm_find (called by
 * memory.c's fake_find_allocation): a run of adjacent mappings of one
 * reservation that the calling context's device may access counts as one
 * allocation, as a real copy may cross mappings. Memory mapped without
 * cuMemSetAccess is not accessible, as on a real GPU.
 *
 * The rules checked are the documented ones (sizes and addresses multiples of
 * the granularity, offset 0, flags 0, whole mappings for unmap and set-access,
 * reservations freed with their exact base and size, a released handle no
 * longer usable but its memory kept until its last mapping goes), plus one
 * stricter than the documentation: cuMemAddressFree refuses a reservation that
 * still has mappings, where a real driver leaves that undefined.
 */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define VMM_GRANULARITY ((size_t)2 << 20) /* an H200's minimum and recommended granularity */

struct vmm_handle {
    int fd;
    size_t size;
    CUdevice device;
    int released;           /* cuMemRelease was called: the handle is gone, its memory may not be */
    unsigned mappings;      /* live mappings of it */
    CUmemAllocationHandleType types;
    int counted;            /* its size counts in vmm_used (an imported handle's does not) */
    struct vmm_handle *next;
};

struct vmm_mapping {
    uintptr_t addr;
    size_t size;
    struct vmm_handle *handle;
    unsigned char access[FAKE_MAX_DEVICES]; /* CUmemAccess_flags per device */
    struct vmm_mapping *next;
};

struct vmm_reservation {
    uintptr_t base;
    size_t size;
    struct fake_allocation view; /* what fake_vmm_find last answered inside this reservation */
    struct vmm_reservation *next;
};

static struct vmm_handle *handles;
static struct vmm_mapping *mappings;
static struct vmm_reservation *reservations;
static unsigned live_handles, live_mappings, live_reservations; /* live_handles: memory, released or not */
/* Bytes of chunks per device, held to FAKECUDA_TOTAL_MEM (apart from cuMemAlloc's count). */
static size_t vmm_used[FAKE_MAX_DEVICES];

/* ---------------------------------------------------- injected failures */

/* fakecuda_vmm_fail: the nth next call of one VMM entry point fails. */
#define VMM_FAILURE_SLOTS 4
static struct {
    char name[32];
    unsigned countdown;
    CUresult result;
} failures[VMM_FAILURE_SLOTS];

FAKE_EXPORT int fakecuda_vmm_fail(const char *name, unsigned nth, int result)
{
    if (name == NULL || strlen(name) >= sizeof failures[0].name)
        return 0;
    int done = 0;
    fake_lock();
    for (unsigned i = 0; i < VMM_FAILURE_SLOTS && !done; i++) {
        if (failures[i].countdown == 0 || strcmp(failures[i].name, name) == 0) {
            strcpy(failures[i].name, name);
            failures[i].countdown = nth;
            failures[i].result = (CUresult)result;
            done = 1;
        }
    }
    fake_unlock();
    return done;
}

/* CUDA_SUCCESS, or the failure injected for this call of name. Caller holds the lock. */
static CUresult injected(const char *name)
{
    for (unsigned i = 0; i < VMM_FAILURE_SLOTS; i++)
        if (failures[i].countdown != 0 && strcmp(failures[i].name, name) == 0)
            return --failures[i].countdown == 0 ? failures[i].result : CUDA_SUCCESS;
    return CUDA_SUCCESS;
}

FAKE_EXPORT void fakecuda_vmm_live(unsigned counts[3])
{
    fake_lock();
    counts[0] = live_reservations;
    counts[1] = live_handles;
    counts[2] = live_mappings;
    fake_unlock();
}

/* ------------------------------------------------------------- look-ups */

static int multiple(uintptr_t v)
{
    return v % VMM_GRANULARITY == 0;
}

static struct vmm_handle *find_handle(CUmemGenericAllocationHandle h)
{
    for (struct vmm_handle *p = handles; p != NULL; p = p->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)p == h && !p->released)
            return p;
    return NULL;
}

static struct vmm_reservation *reservation_of(uintptr_t p, size_t n)
{
    for (struct vmm_reservation *r = reservations; r != NULL; r = r->next)
        if (p >= r->base && p - r->base < r->size)
            return n <= r->size - (p - r->base) ? r : NULL;
    return NULL;
}

static struct vmm_mapping *mapping_at(uintptr_t p)
{
    for (struct vmm_mapping *m = mappings; m != NULL; m = m->next)
        if (p >= m->addr && p - m->addr < m->size)
            return m;
    return NULL;
}

/* Whether [p, p + n) is covered exactly by whole mappings, with no hole. */
static int whole_mappings(uintptr_t p, size_t n)
{
    struct vmm_mapping *m = mapping_at(p);
    if (m == NULL || m->addr != p || n == 0)
        return 0;
    uintptr_t end = p + n;
    while (m->addr + m->size < end) {
        m = mapping_at(m->addr + m->size);
        if (m == NULL)
            return 0;
    }
    return m->addr + m->size == end;
}

static int accessible(const struct vmm_mapping *m, CUdevice dev)
{
    return m->access[dev] != CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

struct fake_allocation *fake_vmm_find(uintptr_t p, size_t n)
{
    struct vmm_mapping *m = mapping_at(p);
    struct fake_context *ctx = fake_current_context_raw();
    CUdevice dev = ctx != NULL ? ctx->device : 0;
    if (m == NULL || !accessible(m, dev))
        return NULL;
    struct vmm_reservation *r = reservation_of(p, 1);
    uintptr_t start = m->addr, end = m->addr + m->size;
    /* adjacent mappings count as one range even across reservations (adjacent
     * reservations are how a buffer grows in place) */
    for (struct vmm_mapping *b; (b = mapping_at(start - 1)) != NULL && accessible(b, dev);)
        start = b->addr;
    for (struct vmm_mapping *a; (a = mapping_at(end)) != NULL && accessible(a, dev);)
        end = a->addr + a->size;
    if (n > end - p)
        return NULL;
    memset(&r->view, 0, sizeof r->view);
    r->view.base = (void *)start;
    r->view.size = end - start;
    r->view.kind = FAKE_MEM_DEVICE;
    r->view.device = m->handle->device;
    r->view.id = (unsigned long long)start;
    return &r->view;
}

/* -------------------------------------------------------- entry points */

/* The properties cuMemCreate and cuMemGetAllocationGranularity accept:
 * pinned device memory of a device that exists. */
static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake shares through file descriptors only */
    CUresult r = fake_check_device(prop->location.id);
    return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
}

static CUresult fake_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option)
{
    if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = check_prop(prop);
    if (r == CUDA_SUCCESS)
        *granularity = VMM_GRANULARITY;
    return r;
}

/* Address space: one inaccessible host range (the arena), handed out upwards
 * and never reused, so that the space right after the newest reservation is
 * free (a hint there is granted, as a real driver's usually is) and the space
 * after an older one is taken once a newer one exists. */
#define VMM_ARENA_SIZE ((size_t)1 << 36)
static uintptr_t arena_base, arena_next;

static int reserved(uintptr_t p, size_t n)
{
    for (struct vmm_reservation *r = reservations; r != NULL; r = r->next)
        if (p < r->base + r->size && r->base < p + n)
            return 1;
    return 0;
}

/* The start of size free bytes at hint (when free and aligned) or after every
 * reservation so far, aligned to alignment; 0 when there is no room.
 * Caller holds the lock. */
static uintptr_t reserve_range(size_t size, size_t alignment, uintptr_t hint)
{
    if (arena_base == 0) {
        void *p = mmap(NULL, VMM_ARENA_SIZE + VMM_GRANULARITY, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        arena_base = arena_next = ((uintptr_t)p + VMM_GRANULARITY - 1) / VMM_GRANULARITY * VMM_GRANULARITY;
    }
    uintptr_t end = arena_base + VMM_ARENA_SIZE;
    if (hint != 0 && hint % alignment == 0 && hint >= arena_base && hint < end && size <= end - hint &&
        !reserved(hint, size)) {
        if (hint + size > arena_next)
            arena_next = hint + size;
        return hint;
    }
    uintptr_t p = (arena_next + alignment - 1) / alignment * alignment;
    if (p >= end || size > end - p)
        return 0;
    arena_next = p + size;
    return p;
}

static CUresult fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags)
{
    if (ptr == NULL || size == 0 || flags != 0 || !multiple(size) || !multiple(addr) ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = injected("cuMemAddressReserve");
    struct vmm_reservation *res = NULL;
    uintptr_t p = 0;
    if (r == CUDA_SUCCESS && (res = calloc(1, sizeof *res)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS &&
        (p = reserve_range(size, alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY, (uintptr_t)addr)) == 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        res->base = p;
        res->size = size;
        res->next = reservations;
        reservations = res;
        live_reservations++;
        *ptr = (CUdeviceptr)res->base;
    } else {
        free(res);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct vmm_reservation **link = &reservations;
    while (*link != NULL && (*link)->base != (uintptr_t)ptr)
        link = &(*link)->next;
    struct vmm_reservation *res = *link;
    if (res == NULL || res->size != size) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (struct vmm_mapping *m = mappings; m != NULL; m = m->next)
            if (m->addr >= res->base && m->addr - res->base < res->size)
                r = CUDA_ERROR_INVALID_VALUE; /* still mapped (see the file's comment) */
    }
    if (r == CUDA_SUCCESS) {
        *link = res->next; /* its address space stays inaccessible, and is not handed out again */
        free(res);
        live_reservations--;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags)
{
    if (handle == NULL || size == 0 || flags != 0 || !multiple(size))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    r = injected("cuMemCreate");
    struct vmm_handle *h = NULL;
    if (r == CUDA_SUCCESS && size > fake_settings()->total_mem - vmm_used[prop->location.id])
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && (h = calloc(1, sizeof *h)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        h->fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
        if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
            if (h->fd >= 0)
                close(h->fd);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS) {
        h->size = size;
        h->device = prop->location.id;
        h->types = prop->requestedHandleTypes;
        h->counted = 1;
        vmm_used[h->device] += size;
        h->next = handles;
        handles = h;
        live_handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    } else {
        free(h);
    }
    fake_unlock();
    return r;
}

/* Frees h's memory once it is released and no longer mapped. Caller holds the lock. */
static void handle_drop_if_unused(struct vmm_handle *h)
{
    if (!h->released || h->mappings != 0)
        return;
    for (struct vmm_handle **link = &handles; *link != NULL; link = &(*link)->next) {
        if (*link == h) {
            *link = h->next;
            break;
        }
    }
    close(h->fd);
    if (h->counted)
        vmm_used[h->device] -= h->size;
    free(h);
    live_handles--;
}

static CUresult fake_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    struct vmm_handle *h = find_handle(handle);
    CUresult r = h == NULL ? CUDA_ERROR_INVALID_VALUE : injected("cuMemRelease");
    if (r == CUDA_SUCCESS) {
        h->released = 1; /* mapped memory stays until its last mapping goes */
        handle_drop_if_unused(h);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags)
{
    if (size == 0 || offset != 0 || flags != 0 || !multiple(ptr) || !multiple(size))
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    struct vmm_handle *h = find_handle(handle);
    CUresult r = CUDA_SUCCESS;
    if (h == NULL || size > h->size || reservation_of((uintptr_t)ptr, size) == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    for (uintptr_t p = (uintptr_t)ptr; r == CUDA_SUCCESS && p < (uintptr_t)ptr + size; p += VMM_GRANULARITY)
        if (mapping_at(p) != NULL)
            r = CUDA_ERROR_INVALID_VALUE; /* already mapped */
    if (r == CUDA_SUCCESS)
        r = injected("cuMemMap");
    struct vmm_mapping *m = NULL;
    if (r == CUDA_SUCCESS && (m = calloc(1, sizeof *m)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS &&
        mmap((void *)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, h->fd, 0) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        m->addr = (uintptr_t)ptr;
        m->size = size;
        m->handle = h;
        m->next = mappings;
        mappings = m;
        h->mappings++;
        live_mappings++;
    } else {
        free(m);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = whole_mappings((uintptr_t)ptr, size) ? injected("cuMemUnmap") : CUDA_ERROR_INVALID_VALUE;
    for (struct vmm_mapping **link = &mappings; r == CUDA_SUCCESS && *link != NULL;) {
        struct vmm_mapping *m = *link;
        if (m->addr < (uintptr_t)ptr || m->addr >= (uintptr_t)ptr + size) {
            link = &m->next;
            continue;
        }
        *link = m->next;
        mmap((void *)m->addr, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        m->handle->mappings--;
        handle_drop_if_unused(m->handle);
        free(m);
        live_mappings--;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (desc == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        CUmemAccess_flags f = desc[i].flags;
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        CUresult r = fake_check_device(desc[i].location.id);
        if (r != CUDA_SUCCESS)
            return r;
    }
    fake_lock();
    CUresult r = whole_mappings((uintptr_t)ptr, size) ? injected("cuMemSetAccess") : CUDA_ERROR_INVALID_VALUE;
    for (struct vmm_mapping *m = mappings; r == CUDA_SUCCESS && m != NULL; m = m->next)
        if (m->addr >= (uintptr_t)ptr && m->addr < (uintptr_t)ptr + size)
            for (size_t i = 0; i < count; i++)
                m->access[desc[i].location.id] = (unsigned char)desc[i].flags;
    fake_unlock();
    return r;
}

static CUresult fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    if (flags == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_check_device(location->id);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    struct vmm_mapping *m = mapping_at((uintptr_t)ptr);
    if (m == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        *flags = m->access[location->id];
    fake_unlock();
    return r;
}

/* A POSIX file descriptor for a handle created with that type requested: a
 * duplicate of the memfd behind it (the receiver closes it). */
static CUresult fake_cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType handleType, unsigned long long flags)
{
    if (shareableHandle == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    struct vmm_handle *h = find_handle(handle);
    CUresult r = CUDA_SUCCESS;
    if (h == NULL || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || (h->types & handleType) == 0)
        r = CUDA_ERROR_INVALID_VALUE;
    int fd = r == CUDA_SUCCESS ? dup(h->fd) : -1;
    if (r == CUDA_SUCCESS && fd < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        *(int *)shareableHandle = fd;
    fake_unlock();
    return r;
}

/* A new handle to the memory behind a descriptor cuMemExportToShareableHandle gave
 * (the descriptor is passed as the pointer's value, as the driver takes it). */
static CUresult fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                    CUmemAllocationHandleType shHandleType)
{
    if (handle == NULL || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)(intptr_t)osHandle;
    struct stat st;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct vmm_handle *h = NULL;
    /* only descriptors of the fake's own chunks: same file as a live handle's */
    for (struct vmm_handle *p = handles; p != NULL && h == NULL; p = p->next) {
        struct stat mine;
        if (fstat(fd, &st) == 0 && fstat(p->fd, &mine) == 0 && st.st_ino == mine.st_ino && st.st_dev == mine.st_dev)
            h = p;
    }
    struct vmm_handle *n = NULL;
    if (h == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((n = calloc(1, sizeof *n)) == NULL || (n->fd = dup(fd)) < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        n->size = h->size;
        n->device = h->device;
        n->types = h->types;
        n->next = handles;
        handles = n;
        live_handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)n;
    } else {
        free(n);
    }
    fake_unlock();
    return r;
}

const struct fake_impl fake_impls_vmm[] = {
    FAKE_IMPL("cuMemImportFromShareableHandle", 10020, fake_cuMemImportFromShareableHandle),
    FAKE_IMPL("cuMemGetAllocationGranularity", 10020, fake_cuMemGetAllocationGranularity),
    FAKE_IMPL("cuMemAddressReserve", 10020, fake_cuMemAddressReserve),
    FAKE_IMPL("cuMemAddressFree", 10020, fake_cuMemAddressFree),
    FAKE_IMPL("cuMemCreate", 10020, fake_cuMemCreate),
    FAKE_IMPL("cuMemRelease", 10020, fake_cuMemRelease),
    FAKE_IMPL("cuMemMap", 10020, fake_cuMemMap),
    FAKE_IMPL("cuMemUnmap", 10020, fake_cuMemUnmap),
    FAKE_IMPL("cuMemSetAccess", 10020, fake_cuMemSetAccess),
    FAKE_IMPL("cuMemGetAccess", 10020, fake_cuMemGetAccess),
    FAKE_IMPL("cuMemExportToShareableHandle", 10020, fake_cuMemExportToShareableHandle),
    FAKE_IMPL_END,
};

/* SPDX-License-Identifier: Apache-2.0 */
/* Devices, contexts, the per-thread context stack and primary contexts. */
#include "fake_internal.h"

#include <stdio.h>
#include <string.h>

#define CONTEXT_STACK_MAX 64

static _Thread_local struct fake_context *stack[CONTEXT_STACK_MAX];
static _Thread_local int depth;
static unsigned long long next_context_id = 1;

struct primary_state {
    struct fake_context *ctx;
    unsigned refcount;
    unsigned flags;
};
static struct primary_state primaries[FAKE_MAX_DEVICES];

CUresult fake_check_device(CUdevice dev)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= fake_settings()->device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

struct fake_context *fake_current_context_raw(void)
{
    return depth > 0 ? stack[depth - 1] : NULL;
}

CUresult fake_require_context(struct fake_context **out)
{
    *out = NULL;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct fake_context *ctx = fake_current_context_raw();
    if (ctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_object_valid(ctx, FAKE_CONTEXT))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = ctx;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ devices */

static CUresult fake_cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= fake_settings()->device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *count)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fake_settings()->device_count;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "cuabi fake device %d", (int)dev);
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = fake_settings()->total_mem;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    static const char stem[16] = "cuabi-fake-dev-";
    memcpy(uuid->bytes, stem, sizeof uuid->bytes);
    uuid->bytes[15] = (char)('0' + dev);
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pciBusId == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + (int)dev);
    return CUDA_SUCCESS;
}

static int attribute_value(CUdevice_attribute attrib, CUdevice dev)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 227 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 228 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 4 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 256;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x10 + (int)dev;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    default: return 0; /* features the fake does not model are reported absent */
    }
}

static CUresult fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pi == NULL || (int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
}

/* Deprecated, but still in cuda.h 13.0 and still what PyCUDA asks. */
static CUresult fake_cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (major == NULL || minor == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *major = attribute_value(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    *minor = attribute_value(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return CUDA_SUCCESS;
}

/* ----------------------------------------------------------------- contexts */

static void context_destroy(struct fake_object *self)
{
    struct fake_context *ctx = (struct fake_context *)self;
    fake_object_delete_owned_by(ctx);
    fake_free_allocations_of(ctx);
}

static struct fake_context *context_new(CUdevice dev, unsigned flags, int primary)
{
    struct fake_context *ctx = fake_object_new(FAKE_CONTEXT, sizeof *ctx, NULL, !primary);
    if (ctx == NULL)
        return NULL;
    ctx->obj.destroy = context_destroy;
    ctx->device = dev;
    ctx->flags = flags;
    ctx->primary = primary;
    ctx->usage = 1;
    fake_lock();
    ctx->id = next_context_id++;
    fake_unlock();
    return ctx;
}

static void forget_context_on_this_thread(struct fake_context *ctx)
{
    int kept = 0;
    for (int i = 0; i < depth; i++)
        if (stack[i] != ctx)
            stack[kept++] = stack[i];
    depth = kept;
}

static CUresult fake_cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (params != NULL && (params->numExecAffinityParams != 0 || params->cigParams != NULL))
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake has no execution affinity nor CIG */
    if (depth == CONTEXT_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_context *ctx = context_new(dev, flags, 0);
    if (ctx == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    *pctx = (CUcontext)ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxDestroy(CUcontext ctx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_context *c = (struct fake_context *)ctx;
    if (!fake_object_valid(c, FAKE_CONTEXT))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (c->primary)
        r = CUDA_ERROR_INVALID_CONTEXT; /* primary contexts go through cuDevicePrimaryCtxRelease */
    else {
        forget_context_on_this_thread(c);
        fake_object_delete(c);
    }
    fake_unlock();
    return r;
}

/* The deprecated usage count of created contexts (PyCUDA still releases its
 * contexts with cuCtxDetach).  Primary contexts have retain/release instead. */
static CUresult fake_cuCtxAttach(CUcontext *pctx, unsigned int flags)
{
    if (pctx == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_context *c;
    fake_lock();
    CUresult r = fake_require_context(&c);
    if (r == CUDA_SUCCESS && c->primary)
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS) {
        c->usage++;
        *pctx = (CUcontext)c;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuCtxDetach(CUcontext ctx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct fake_context *c = (struct fake_context *)ctx;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (!fake_object_valid(c, FAKE_CONTEXT) || c->primary || fake_current_context_raw() != c)
        r = CUDA_ERROR_INVALID_CONTEXT; /* it must be a created context, current here */
    else if (--c->usage == 0) {
        forget_context_on_this_thread(c);
        fake_object_delete(c);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *pctx)
{
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    *pctx = (CUcontext)fake_current_context_raw();
    return CUDA_SUCCESS;
}

static CUresult check_context_handle(CUcontext ctx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    int ok = fake_object_valid(ctx, FAKE_CONTEXT);
    fake_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == NULL) {
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    CUresult r = check_context_handle(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = (struct fake_context *)ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPushCurrent(CUcontext ctx)
{
    CUresult r = check_context_handle(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (depth == CONTEXT_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = (struct fake_context *)ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPopCurrent(CUcontext *pctx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_context *top = stack[--depth];
    if (pctx != NULL)
        *pctx = (CUcontext)top;
    return CUDA_SUCCESS;
}

static CUresult with_current(CUresult (*then)(struct fake_context *ctx, void *arg), void *arg)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    if (r == CUDA_SUCCESS && then != NULL)
        r = then(ctx, arg);
    fake_unlock();
    return r;
}

/* Everything the fake does is finished when the call returns, so there is never
 * anything to wait for. */
static CUresult fake_cuCtxSynchronize(void)
{
    return with_current(NULL, NULL);
}

static CUresult fake_cuCtxSynchronize_v2(CUcontext ctx)
{
    if (ctx == NULL)
        return fake_cuCtxSynchronize();
    return check_context_handle(ctx);
}

static CUresult get_device(struct fake_context *ctx, void *arg)
{
    *(CUdevice *)arg = ctx->device;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetDevice(CUdevice *device)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return with_current(get_device, device);
}

static CUresult fake_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx == NULL)
        return fake_cuCtxGetDevice(device);
    CUresult r = check_context_handle(ctx);
    if (r == CUDA_SUCCESS)
        *device = ((struct fake_context *)ctx)->device;
    return r;
}

static CUresult get_flags(struct fake_context *ctx, void *arg)
{
    *(unsigned *)arg = ctx->flags;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetFlags(unsigned int *flags)
{
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return with_current(get_flags, flags);
}

static CUresult fake_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx == NULL) {
        CUresult r = with_current(NULL, NULL);
        if (r != CUDA_SUCCESS)
            return r;
    } else {
        CUresult r = check_context_handle(ctx);
        if (r != CUDA_SUCCESS)
            return r;
    }
    *version = 3020; /* contexts carry the v2 context API since CUDA 3.2 */
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    if (ctxId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_context *c = (struct fake_context *)ctx;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    if (c == NULL)
        r = fake_require_context(&c);
    else if (!fake_is_initialized())
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!fake_object_valid(c, FAKE_CONTEXT))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS)
        *ctxId = c->id;
    fake_unlock();
    return r;
}

static CUresult fake_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult r = with_current(NULL, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (leastPriority != NULL)
        *leastPriority = 0;
    if (greatestPriority != NULL)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* --------------------------------------------------------- primary contexts */

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    struct primary_state *p = &primaries[dev];
    if (p->ctx == NULL || !fake_object_valid(p->ctx, FAKE_CONTEXT))
        p->ctx = context_new(dev, p->flags, 1);
    if (p->ctx != NULL) {
        p->refcount++;
        *pctx = (CUcontext)p->ctx;
    } else {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    struct primary_state *p = &primaries[dev];
    if (p->refcount == 0) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--p->refcount == 0) {
        /* The last release destroys the context and everything in it. */
        forget_context_on_this_thread(p->ctx);
        fake_object_delete(p->ctx);
        p->ctx = NULL;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuDevicePrimaryCtxReset(CUdevice dev)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    struct primary_state *p = &primaries[dev];
    if (p->ctx != NULL) {
        /* Everything allocated in the context goes; the retained handle stays usable. */
        fake_object_delete_owned_by(p->ctx);
        fake_free_allocations_of(p->ctx);
    }
    p->flags = 0;
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    *flags = primaries[dev].flags;
    *active = primaries[dev].refcount > 0;
    fake_unlock();
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    fake_lock();
    primaries[dev].flags = flags;
    if (primaries[dev].ctx != NULL)
        primaries[dev].ctx->flags = flags;
    fake_unlock();
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ peer access */

/* Every pair of distinct fake devices can reach each other's memory; a
 * device and itself is no peer pair (0, as a driver answers). */
static CUresult fake_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    if (canAccessPeer == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_check_device(dev);
    if (r == CUDA_SUCCESS)
        r = fake_check_device(peerDev);
    if (r == CUDA_SUCCESS)
        *canAccessPeer = dev != peerDev;
    return r;
}

/* The slot of peer in ctx's peer list (NULL: not there), or with add, a free one. */
static const struct fake_context **peer_slot(struct fake_context *ctx, const struct fake_context *peer, int add)
{
    for (int i = 0; i < FAKE_MAX_DEVICES; i++)
        if (ctx->peers[i] == peer)
            return &ctx->peers[i];
    if (add)
        for (int i = 0; i < FAKE_MAX_DEVICES; i++)
            if (ctx->peers[i] == NULL)
                return &ctx->peers[i];
    return NULL;
}

static CUresult fake_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    const struct fake_context *peer = (const struct fake_context *)peerContext;
    if (r == CUDA_SUCCESS && !fake_object_valid(peer, FAKE_CONTEXT))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (r == CUDA_SUCCESS && peer->device == ctx->device)
        r = CUDA_ERROR_INVALID_DEVICE;
    else if (r == CUDA_SUCCESS && peer_slot(ctx, peer, 0) != NULL)
        r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else if (r == CUDA_SUCCESS) {
        const struct fake_context **slot = peer_slot(ctx, peer, 1);
        if (slot == NULL)
            r = CUDA_ERROR_TOO_MANY_PEERS;
        else
            *slot = peer;
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuCtxDisablePeerAccess(CUcontext peerContext)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    const struct fake_context **slot = NULL;
    if (r == CUDA_SUCCESS && !fake_object_valid(peerContext, FAKE_CONTEXT))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (r == CUDA_SUCCESS && (slot = peer_slot(ctx, (const struct fake_context *)peerContext, 0)) == NULL)
        r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    else if (r == CUDA_SUCCESS)
        *slot = NULL;
    fake_unlock();
    return r;
}

const struct fake_impl fake_impls_context[] = {
    FAKE_IMPL("cuDeviceGet", 2000, fake_cuDeviceGet),
    FAKE_IMPL("cuDeviceGetCount", 2000, fake_cuDeviceGetCount),
    FAKE_IMPL("cuDeviceGetName", 2000, fake_cuDeviceGetName),
    FAKE_IMPL("cuDeviceTotalMem", 3020, fake_cuDeviceTotalMem),
    FAKE_IMPL("cuDeviceGetUuid", 9020, fake_cuDeviceGetUuid),
    FAKE_IMPL("cuDeviceGetUuid", 11040, fake_cuDeviceGetUuid),
    FAKE_IMPL("cuDeviceGetPCIBusId", 4010, fake_cuDeviceGetPCIBusId),
    FAKE_IMPL("cuDeviceGetAttribute", 2000, fake_cuDeviceGetAttribute),
    FAKE_IMPL("cuDeviceCanAccessPeer", 4000, fake_cuDeviceCanAccessPeer),
    FAKE_IMPL("cuCtxEnablePeerAccess", 4000, fake_cuCtxEnablePeerAccess),
    FAKE_IMPL("cuCtxDisablePeerAccess", 4000, fake_cuCtxDisablePeerAccess),
    FAKE_IMPL("cuDeviceComputeCapability", 2000, fake_cuDeviceComputeCapability),
    FAKE_IMPL("cuCtxCreate", 12050, fake_cuCtxCreate),
    FAKE_IMPL("cuCtxDestroy", 4000, fake_cuCtxDestroy),
    FAKE_IMPL("cuCtxAttach", 2000, fake_cuCtxAttach),
    FAKE_IMPL("cuCtxDetach", 2000, fake_cuCtxDetach),
    FAKE_IMPL("cuCtxGetCurrent", 4000, fake_cuCtxGetCurrent),
    FAKE_IMPL("cuCtxSetCurrent", 4000, fake_cuCtxSetCurrent),
    FAKE_IMPL("cuCtxPushCurrent", 4000, fake_cuCtxPushCurrent),
    FAKE_IMPL("cuCtxPopCurrent", 4000, fake_cuCtxPopCurrent),
    FAKE_IMPL("cuCtxSynchronize", 2000, fake_cuCtxSynchronize),
    FAKE_IMPL("cuCtxSynchronize", 13000, fake_cuCtxSynchronize_v2),
    FAKE_IMPL("cuCtxGetDevice", 2000, fake_cuCtxGetDevice),
    FAKE_IMPL("cuCtxGetDevice", 13000, fake_cuCtxGetDevice_v2),
    FAKE_IMPL("cuCtxGetFlags", 7000, fake_cuCtxGetFlags),
    FAKE_IMPL("cuCtxGetApiVersion", 3020, fake_cuCtxGetApiVersion),
    FAKE_IMPL("cuCtxGetId", 12000, fake_cuCtxGetId),
    FAKE_IMPL("cuCtxGetStreamPriorityRange", 5050, fake_cuCtxGetStreamPriorityRange),
    FAKE_IMPL("cuDevicePrimaryCtxRetain", 7000, fake_cuDevicePrimaryCtxRetain),
    FAKE_IMPL("cuDevicePrimaryCtxRelease", 11000, fake_cuDevicePrimaryCtxRelease),
    FAKE_IMPL("cuDevicePrimaryCtxReset", 11000, fake_cuDevicePrimaryCtxReset),
    FAKE_IMPL("cuDevicePrimaryCtxGetState", 7000, fake_cuDevicePrimaryCtxGetState),
    FAKE_IMPL("cuDevicePrimaryCtxSetFlags", 11000, fake_cuDevicePrimaryCtxSetFlags),
    FAKE_IMPL_END,
};

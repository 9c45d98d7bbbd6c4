/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Green contexts (SM partitions) and tiled tensor maps, as cuda.h 13.0
 * documents them.
 *
 * SM resources: every fake device has as many SMs as its
 * MULTIPROCESSOR_COUNT attribute says (4), numbered 0..3. A CUdevResource
 * the fake fills carries, in the bytes cuda.h leaves to the driver
 * (_internal_padding), a magic number, the device, the set of SMs (a bit
 * mask) and the split it came from (0: none). Partitions are at least
 * FAKE_SM_MIN SMs and a multiple of FAKE_SM_ALIGN (1 and 1 with
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING), the rule cuda.h states
 * for compute capability 8.x scaled down to four SMs.
 *
 * A green context owns a created (not primary) fake context, the CUcontext
 * cuCtxFromGreenCtx gives; everything made in that context goes with it at
 * cuGreenCtxDestroy. The green context retains its device's primary context
 * and releases it when destroyed, as the real driver does. CUgreenCtx and the
 * converted CUcontext are different pointers, so that passing one where the
 * other is expected fails as it does on a driver.
 *
 * cuTensorMapEncodeTiled checks what cuda.h lists for the 13 element types
 * of one or more bytes (the packed 4- and 6-bit types answer
 * CUDA_ERROR_NOT_SUPPORTED here) and writes a deterministic 128-byte blob:
 * the address, dimensions, strides and box, so tests can read them back.
 */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

#define FAKE_SM_MIN 2
#define FAKE_SM_ALIGN 2
#define SM_RESOURCE_MAGIC 0x534d5246u /* "FRMS" */
#define GREEN_MAGIC 0x4e455247u       /* "GREN" */
#define DESC_MAGIC 0x43534544u        /* "DESC" */

/* What the fake keeps in CUdevResource::_internal_padding. */
struct sm_tag {
    uint32_t magic;
    int32_t device;
    uint64_t mask;  /* the SMs of this resource */
    uint32_t split; /* the split that made it; 0: a whole device's or context's resource */
};

struct fake_desc {
    uint32_t magic;
    CUdevice device;
    uint64_t mask;
    struct fake_desc *next;
};

struct fake_green {
    uint32_t magic;
    CUdevice device;
    uint64_t mask;
    struct fake_context *ctx; /* what cuCtxFromGreenCtx gives */
    unsigned long long id;
    struct fake_green *next;
};

static struct fake_desc *descs;   /* descriptors live as long as the process, as on a driver */
static struct fake_green *greens;
static uint32_t next_split = 1;
static unsigned long long next_green_id = 1;

static const void *impl_of(const struct fake_impl *table, const char *name)
{
    for (; table->name != NULL; table++)
        if (strcmp(table->name, name) == 0)
            return table->fn;
    return NULL;
}

static unsigned device_sms(void)
{
    int n = 0;
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice) =
        (CUresult(*)(int *, CUdevice_attribute, CUdevice))impl_of(fake_impls_context, "cuDeviceGetAttribute");
    attr(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    return n > 64 ? 64 : (unsigned)n;
}

static unsigned popcount(uint64_t m)
{
    return (unsigned)__builtin_popcountll(m);
}

static void write_sm(CUdevResource *res, CUdevice dev, uint64_t mask, uint32_t split, unsigned min, unsigned align)
{
    memset(res, 0, sizeof *res);
    res->type = CU_DEV_RESOURCE_TYPE_SM;
    struct sm_tag tag = { SM_RESOURCE_MAGIC, dev, mask, split };
    memcpy(res->_internal_padding, &tag, sizeof tag);
    res->sm.smCount = popcount(mask);
    res->sm.minSmPartitionSize = min;
    res->sm.smCoscheduledAlignment = align;
}

/* The tag of a resource the fake filled, or NULL. */
static const struct sm_tag *sm_tag_of(const CUdevResource *res, struct sm_tag *out)
{
    if (res == NULL || res->type != CU_DEV_RESOURCE_TYPE_SM)
        return NULL;
    memcpy(out, res->_internal_padding, sizeof *out);
    return out->magic == SM_RESOURCE_MAGIC ? out : NULL;
}

static struct fake_green *find_green(const void *handle)
{
    for (struct fake_green *g = greens; g != NULL; g = g->next)
        if (g == handle && g->magic == GREEN_MAGIC)
            return g;
    return NULL;
}

static struct fake_green *green_of_context(const struct fake_context *ctx)
{
    for (struct fake_green *g = greens; g != NULL; g = g->next)
        if (g->ctx == ctx)
            return g;
    return NULL;
}

static CUresult fill_resource(CUdevResource *res, CUdevResourceType type, CUdevice dev, uint64_t mask)
{
    if (res == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    write_sm(res, dev, mask, 0, FAKE_SM_MIN, FAKE_SM_ALIGN);
    return CUDA_SUCCESS;
}

static uint64_t all_sms(void)
{
    unsigned n = device_sms();
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

static CUresult fake_cuDeviceGetDevResource(CUdevice dev, CUdevResource *res, CUdevResourceType type)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    return fill_resource(res, type, dev, all_sms());
}

static CUresult fake_cuCtxGetDevResource(CUcontext hCtx, CUdevResource *res, CUdevResourceType type)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r;
    struct fake_context *ctx = (struct fake_context *)hCtx;
    if (!fake_object_valid(ctx, FAKE_CONTEXT)) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        struct fake_green *g = green_of_context(ctx);
        r = fill_resource(res, type, ctx->device, g != NULL ? g->mask : all_sms());
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *res, CUdevResourceType type)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    struct fake_green *g = find_green(hCtx);
    CUresult r = g == NULL ? CUDA_ERROR_INVALID_CONTEXT : fill_resource(res, type, g->device, g->mask);
    fake_unlock();
    return r;
}

static CUresult fake_cuDevSmResourceSplitByCount(CUdevResource *result, unsigned *nbGroups, const CUdevResource *input,
                                                 CUdevResource *remaining, unsigned useFlags, unsigned minCount)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct sm_tag in;
    if (nbGroups == NULL || input == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (sm_tag_of(input, &in) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (in.split != 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* a group is split again only through a green context */
    if (useFlags & ~(unsigned)(CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                               CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned total = popcount(in.mask);
    if (minCount > total)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    int fine = (useFlags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) != 0;
    unsigned min = fine ? 1 : FAKE_SM_MIN, align = fine ? 1 : FAKE_SM_ALIGN;
    unsigned size = minCount < min ? min : minCount;
    size = (size + align - 1) / align * align; /* rounded up, as the driver does */
    unsigned possible = size <= total ? total / size : 0;
    if (result == NULL) {
        *nbGroups = possible;
        return CUDA_SUCCESS;
    }
    if (*nbGroups == 0)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned made = *nbGroups < possible ? *nbGroups : possible;
    fake_lock();
    uint32_t split = next_split++;
    fake_unlock();
    uint64_t left = in.mask;
    for (unsigned g = 0; g < made; g++) {
        uint64_t group = 0;
        for (unsigned k = 0; k < size; k++) {
            uint64_t low = left & (~left + 1);
            group |= low;
            left &= ~low;
        }
        write_sm(&result[g], (CUdevice)in.device, group, split, min, align);
    }
    if (remaining != NULL)
        write_sm(remaining, (CUdevice)in.device, left, split, min, align);
    *nbGroups = made;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned nb)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (phDesc == NULL || resources == NULL || nb == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sm_tag first, t;
    uint64_t mask = 0;
    for (unsigned i = 0; i < nb; i++) {
        if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM)
            return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        if (sm_tag_of(&resources[i], i == 0 ? &first : &t) == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        if (i > 0 && (t.device != first.device || t.split != first.split || t.split == 0 || (t.mask & mask)))
            return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        mask |= i == 0 ? first.mask : t.mask;
    }
    if (mask == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* an empty remainder */
    struct fake_desc *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->magic = DESC_MAGIC;
    d->device = first.device;
    d->mask = mask;
    fake_lock();
    d->next = descs;
    descs = d;
    fake_unlock();
    *phDesc = (CUdevResourceDesc)d;
    return CUDA_SUCCESS;
}

static const struct fake_desc *find_desc(const void *handle)
{
    for (const struct fake_desc *d = descs; d != NULL; d = d->next)
        if (d == handle)
            return d;
    return NULL;
}

static void green_context_destroy(struct fake_object *self)
{
    struct fake_context *ctx = (struct fake_context *)self;
    fake_object_delete_owned_by(ctx);
    fake_free_allocations_of(ctx);
}

static CUresult fake_cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned flags)
{
    CUresult r = fake_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (phCtx == NULL || flags != CU_GREEN_CTX_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    const struct fake_desc *d = find_desc(desc);
    struct fake_green *g = NULL;
    if (d == NULL)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (d->device != dev)
        r = CUDA_ERROR_INVALID_DEVICE;
    else if ((g = calloc(1, sizeof *g)) == NULL)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        CUcontext primary;
        CUresult (*retain)(CUcontext *, CUdevice) =
            (CUresult(*)(CUcontext *, CUdevice))impl_of(fake_impls_context, "cuDevicePrimaryCtxRetain");
        r = retain(&primary, dev);
        g->ctx = r == CUDA_SUCCESS ? fake_object_new(FAKE_CONTEXT, sizeof *g->ctx, NULL, 1) : NULL;
        if (r == CUDA_SUCCESS && g->ctx == NULL)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        g->magic = GREEN_MAGIC;
        g->device = dev;
        g->mask = d->mask;
        g->id = next_green_id++;
        g->ctx->obj.destroy = green_context_destroy;
        g->ctx->device = dev;
        g->ctx->usage = 1;
        g->ctx->id = (1ull << 40) + g->id; /* apart from the ids of other contexts */
        g->next = greens;
        greens = g;
        *phCtx = (CUgreenCtx)g;
    } else {
        free(g);
    }
    fake_unlock();
    return r;
}

static CUresult fake_cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult r = CUDA_SUCCESS;
    struct fake_green **link = &greens;
    while (*link != NULL && *link != (struct fake_green *)hCtx)
        link = &(*link)->next;
    struct fake_green *g = *link;
    if (g == NULL || g->magic != GREEN_MAGIC) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        *link = g->next;
        fake_object_delete(g->ctx);
        CUresult (*release)(CUdevice) = (CUresult(*)(CUdevice))impl_of(fake_impls_context,
                                                                        "cuDevicePrimaryCtxRelease");
        release(g->device);
        g->magic = 0;
        free(g);
    }
    fake_unlock();
    return r;
}

/* hCtx's converted context or id (either pointer may be NULL, not both). */
static CUresult green_lookup(CUgreenCtx hCtx, CUcontext *pContext, unsigned long long *id)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (pContext == NULL && id == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    struct fake_green *g = find_green(hCtx);
    if (g != NULL && pContext != NULL)
        *pContext = (CUcontext)g->ctx;
    if (g != NULL && id != NULL)
        *id = g->id;
    fake_unlock();
    return g != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult fake_cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    return pContext == NULL ? CUDA_ERROR_INVALID_VALUE : green_lookup(hCtx, pContext, NULL);
}

static CUresult fake_cuGreenCtxGetId(CUgreenCtx hCtx, unsigned long long *id)
{
    return id == NULL ? CUDA_ERROR_INVALID_VALUE : green_lookup(hCtx, NULL, id);
}

/* The stream is made the way cuStreamCreateWithPriority makes one, with the
 * green context's converted context current for the call. */
static CUresult fake_cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx hCtx, unsigned flags, int priority)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (phStream == NULL || flags != CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE; /* cuda.h: CU_STREAM_NON_BLOCKING must be given */
    fake_lock();
    struct fake_green *g = find_green(hCtx);
    CUresult r = g == NULL ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        CUresult (*push)(CUcontext) = (CUresult(*)(CUcontext))impl_of(fake_impls_context, "cuCtxPushCurrent");
        CUresult (*pop)(CUcontext *) = (CUresult(*)(CUcontext *))impl_of(fake_impls_context, "cuCtxPopCurrent");
        CUresult (*create)(CUstream *, unsigned, int) =
            (CUresult(*)(CUstream *, unsigned, int))impl_of(fake_impls_stream, "cuStreamCreateWithPriority");
        r = push((CUcontext)g->ctx);
        if (r == CUDA_SUCCESS) {
            r = create(phStream, flags, priority);
            pop(NULL);
        }
    }
    fake_unlock();
    return r;
}

/* The event must belong to a context of the green context's device (cuda.h:
 * "from the same primary context"). */
static CUresult green_event(CUgreenCtx hCtx, CUevent hEvent, int record)
{
    if (!fake_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    struct fake_green *g = find_green(hCtx);
    const struct fake_object *e = (const struct fake_object *)hEvent;
    CUresult r = CUDA_SUCCESS;
    if (g == NULL)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (!fake_object_valid(e, FAKE_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (record && (e->owner == NULL || e->owner->device != g->device))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (record)
        fake_event_stamp(hEvent); /* the fake's work is done when issued */
    fake_unlock();
    return r;
}

static CUresult fake_cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent)
{
    return green_event(hCtx, hEvent, 1);
}

static CUresult fake_cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent)
{
    return green_event(hCtx, hEvent, 0);
}

/* ------------------------------------------------------------- tensor maps */

static unsigned element_size(CUtensorMapDataType t)
{
    switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static int is_float(CUtensorMapDataType t)
{
    return t == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 || t == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ||
           t == CU_TENSOR_MAP_DATA_TYPE_FLOAT64 || t == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ||
           t == CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ || t == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 ||
           t == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

/* What tiled and im2col maps share: the context, the type, the rank (at
 * least min_rank), the address, dimensions, strides, element strides and
 * option values. *esize gets the element size. */
static CUresult check_map(CUtensorMap *tensorMap, CUtensorMapDataType type, cuuint32_t rank, cuuint32_t min_rank,
                          uintptr_t address, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                          const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                          CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                          CUtensorMapFloatOOBfill oobFill, unsigned *esize)
{
    struct fake_context *ctx;
    fake_lock();
    CUresult r = fake_require_context(&ctx);
    fake_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    if (type >= CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && type <= CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
        return CUDA_ERROR_NOT_SUPPORTED; /* the packed types are not modelled */
    *esize = element_size(type);
    if (tensorMap == NULL || ((uintptr_t)tensorMap & 63) || *esize == 0 || rank < min_rank || rank > 5 ||
        globalDim == NULL || (rank > 1 && globalStrides == NULL) || elementStrides == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)interleave > CU_TENSOR_MAP_INTERLEAVE_32B || (unsigned)swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
        (unsigned)l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
        (unsigned)oobFill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    if (address == 0 || address % align)
        return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++)
        if (globalDim[i] == 0 || globalDim[i] > (1ull << 32) || elementStrides[i] == 0 || elementStrides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 1 < rank; i++)
        if (globalStrides[i] % align || globalStrides[i] >= (1ull << 40))
            return CUDA_ERROR_INVALID_VALUE;
    if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
        return CUDA_ERROR_INVALID_VALUE;
    if (oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float(type))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The innermost extent a copy moves, against the swizzle span. */
static int fits_swizzle(CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, unsigned inner)
{
    if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || swizzle == CU_TENSOR_MAP_SWIZZLE_NONE)
        return 1;
    unsigned span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
    return inner <= span;
}

/* The blob: [0] address, [1] type | rank << 8 | interleave << 16 | swizzle << 24 | l2 << 32 | oob << 40
 * | mode << 48 (0 tiled, 1 im2col), [2..6] dims, [7..10] strides, [11..15] per dimension the box (or
 * for im2col: 0) | element stride << 32. */
static void write_map(CUtensorMap *tensorMap, unsigned mode, CUtensorMapDataType type, cuuint32_t rank,
                      uintptr_t address, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                      const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    cuuint64_t *q = tensorMap->opaque;
    memset(q, 0, sizeof tensorMap->opaque);
    q[0] = address;
    q[1] = (cuuint64_t)type | (cuuint64_t)rank << 8 | (cuuint64_t)interleave << 16 | (cuuint64_t)swizzle << 24 |
           (cuuint64_t)l2Promotion << 32 | (cuuint64_t)oobFill << 40 | (cuuint64_t)mode << 48;
    for (cuuint32_t i = 0; i < rank; i++) {
        q[2 + i] = globalDim[i];
        q[11 + i] = (boxDim != NULL ? boxDim[i] : 0) | (cuuint64_t)elementStrides[i] << 32;
        if (i + 1 < rank)
            q[7 + i] = globalStrides[i];
    }
}

static CUresult fake_cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType type, cuuint32_t rank,
                                            void *globalAddress, const cuuint64_t *globalDim,
                                            const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                            const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                            CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                            CUtensorMapFloatOOBfill oobFill)
{
    unsigned esize;
    uintptr_t address = (uintptr_t)globalAddress;
    CUresult r = check_map(tensorMap, type, rank, 1, address, globalDim, globalStrides, elementStrides, interleave,
                           swizzle, l2Promotion, oobFill, &esize);
    if (r != CUDA_SUCCESS)
        return r;
    if (boxDim == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++)
        if (boxDim[i] == 0 || boxDim[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
    unsigned inner = boxDim[0] * esize;
    if ((interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && inner % 16) || !fits_swizzle(interleave, swizzle, inner))
        return CUDA_ERROR_INVALID_VALUE;
    write_map(tensorMap, 0, type, rank, address, globalDim, globalStrides, boxDim, elementStrides, interleave, swizzle,
              l2Promotion, oobFill);
    return CUDA_SUCCESS;
}

/* The corners: rank-2 offsets, within [-2^15, 2^15) for rank 3, [-2^7, 2^7) for
 * 4, [-2^4, 2^4) for 5. In the blob the low halves of [11] and [12] hold
 * channelsPerPixel and pixelsPerColumn, those of [13] and [14] the lower and
 * upper corners, 32 / (rank - 2) bits a value, innermost first. */
static CUresult fake_cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType type, cuuint32_t rank,
                                             void *globalAddress, const cuuint64_t *globalDim,
                                             const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                                             const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                             cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                             CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                             CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    unsigned esize;
    uintptr_t address = (uintptr_t)globalAddress;
    CUresult r = check_map(tensorMap, type, rank, 3, address, globalDim, globalStrides, elementStrides, interleave,
                           swizzle, l2Promotion, oobFill, &esize);
    if (r != CUDA_SUCCESS)
        return r;
    if (pixelBoxLowerCorner == NULL || pixelBoxUpperCorner == NULL || channelsPerPixel == 0 ||
        channelsPerPixel > 256 || pixelsPerColumn == 0 || pixelsPerColumn > 1024 ||
        !fits_swizzle(interleave, swizzle, channelsPerPixel * esize))
        return CUDA_ERROR_INVALID_VALUE;
    int bound = rank == 3 ? 1 << 15 : rank == 4 ? 1 << 7 : 1 << 4;
    unsigned width = 32 / (rank - 2);
    cuuint64_t lower = 0, upper = 0, mask = width == 32 ? 0xffffffffull : (1ull << width) - 1;
    for (cuuint32_t i = 0; i + 2 < rank; i++) {
        if (pixelBoxLowerCorner[i] < -bound || pixelBoxLowerCorner[i] >= bound || pixelBoxUpperCorner[i] < -bound ||
            pixelBoxUpperCorner[i] >= bound)
            return CUDA_ERROR_INVALID_VALUE;
        lower |= ((cuuint64_t)(uint32_t)pixelBoxLowerCorner[i] & mask) << (width * i);
        upper |= ((cuuint64_t)(uint32_t)pixelBoxUpperCorner[i] & mask) << (width * i);
    }
    write_map(tensorMap, 1, type, rank, address, globalDim, globalStrides, NULL, elementStrides, interleave, swizzle,
              l2Promotion, oobFill);
    tensorMap->opaque[11] |= channelsPerPixel;
    tensorMap->opaque[12] |= pixelsPerColumn;
    tensorMap->opaque[13] |= lower;
    tensorMap->opaque[14] |= upper;
    return CUDA_SUCCESS;
}

const struct fake_impl fake_impls_green[] = {
    FAKE_IMPL("cuDeviceGetDevResource", 12040, fake_cuDeviceGetDevResource),
    FAKE_IMPL("cuCtxGetDevResource", 12040, fake_cuCtxGetDevResource),
    FAKE_IMPL("cuGreenCtxGetDevResource", 12040, fake_cuGreenCtxGetDevResource),
    FAKE_IMPL("cuDevSmResourceSplitByCount", 12040, fake_cuDevSmResourceSplitByCount),
    FAKE_IMPL("cuDevResourceGenerateDesc", 12040, fake_cuDevResourceGenerateDesc),
    FAKE_IMPL("cuGreenCtxCreate", 12040, fake_cuGreenCtxCreate),
    FAKE_IMPL("cuGreenCtxDestroy", 12040, fake_cuGreenCtxDestroy),
    FAKE_IMPL("cuCtxFromGreenCtx", 12040, fake_cuCtxFromGreenCtx),
    FAKE_IMPL("cuGreenCtxGetId", 12090, fake_cuGreenCtxGetId),
    FAKE_IMPL("cuGreenCtxStreamCreate", 12050, fake_cuGreenCtxStreamCreate),
    FAKE_IMPL("cuGreenCtxRecordEvent", 12040, fake_cuGreenCtxRecordEvent),
    FAKE_IMPL("cuGreenCtxWaitEvent", 12040, fake_cuGreenCtxWaitEvent),
    FAKE_IMPL("cuTensorMapEncodeTiled", 12000, fake_cuTensorMapEncodeTiled),
    FAKE_IMPL("cuTensorMapEncodeIm2col", 12000, fake_cuTensorMapEncodeIm2col),
    FAKE_IMPL_END,
};

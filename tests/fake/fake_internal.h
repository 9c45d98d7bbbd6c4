/* SPDX-License-Identifier: Apache-2.0 */
/* Internal declarations shared by the fake driver's source files. */
#ifndef FAKE_INTERNAL_H
#define FAKE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuabi/driver_types.h>

#include "fakecuda.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 8

/* ---- settings (driver.c) ---- */
struct fake_settings {
    int record_mode;
    int driver_version;
    int device_count;
    int init_result;       /* CUDA_SUCCESS unless FAKECUDA_INIT_RESULT says otherwise */
    size_t total_mem;
    int probe_delay_ms;    /* FAKECUDA_PROBE_DELAY_MS: a slow answer to the loader's probe */
};
const struct fake_settings *fake_settings(void);

/* One lock guards all of the fake's shared state: the fake favours being
 * obviously right over being fast. It is recursive so that helpers may be
 * called with it held. */
void fake_lock(void);
void fake_unlock(void);

int fake_is_initialized(void);

/* ---- the handle registry (objects.c) ---- */
enum fake_kind {
    FAKE_CONTEXT = 1,
    FAKE_STREAM,
    FAKE_EVENT,
    FAKE_MODULE,
    FAKE_FUNCTION,
    FAKE_GRAPH,
    FAKE_GRAPH_EXEC,
    FAKE_GRAPH_NODE,
    FAKE_POOL,
    FAKE_KIND_COUNT
};

struct fake_context;

struct fake_object {
    uint32_t magic;
    enum fake_kind kind;
    struct fake_context *owner; /* context whose destruction takes this object along */
    int counted;                /* counts in fakecuda_live_objects() */
    void (*destroy)(struct fake_object *self); /* releases what the object owns */
    struct fake_object *prev, *next;
};

/* Allocates a zeroed object of `size` bytes (a struct starting with fake_object). */
void *fake_object_new(enum fake_kind kind, size_t size, struct fake_context *owner, int counted);
/* Unregisters, runs destroy, frees. Caller holds the lock. */
void fake_object_delete(void *object);
/* Whether p is a live object of that kind. Caller holds the lock. */
int fake_object_valid(const void *p, enum fake_kind kind);
/* Calls visit(object, arg) for every live object of one kind. Caller holds the lock. */
void fake_object_each(enum fake_kind kind, void (*visit)(void *object, void *arg), void *arg);
/* Deletes every object owned by ctx (not ctx itself). Caller holds the lock. */
void fake_object_delete_owned_by(struct fake_context *ctx);
uint64_t fake_object_count(enum fake_kind kind);

/* ---- devices and contexts (context.c) ---- */
struct fake_context {
    struct fake_object obj;
    CUdevice device;
    unsigned flags;
    int primary;
    unsigned usage; /* cuCtxCreate's 1, plus one per cuCtxAttach; cuCtxDetach destroys at 0 */
    unsigned long long id;
    const struct fake_context *peers[FAKE_MAX_DEVICES]; /* cuCtxEnablePeerAccess's, compared only */
};

/* The calling thread's current context, NULL if none (not validated). */
struct fake_context *fake_current_context_raw(void);
/* NOT_INITIALIZED / INVALID_CONTEXT / CONTEXT_IS_DESTROYED, or success with *out set.
 * Caller holds the lock. */
CUresult fake_require_context(struct fake_context **out);
CUresult fake_check_device(CUdevice dev);

/* ---- memory (memory.c) ---- */
enum fake_memory_kind { FAKE_MEM_DEVICE = 1, FAKE_MEM_HOST, FAKE_MEM_MANAGED, FAKE_MEM_POOL };
struct fake_pool;
struct fake_advice {
    unsigned char read_mostly;
    unsigned char preferred;    /* a location as memory.c's enum fake_prefetch; 0: none */
    unsigned short accessed_by; /* bit n: device n; bit 15: the host */
};
struct fake_allocation {
    void *base;
    size_t size;
    enum fake_memory_kind kind;
    struct fake_context *ctx;
    struct fake_pool *pool;
    CUdevice device;
    unsigned long long id;
    /* Managed memory: per page (FAKE_PAGE_SIZE) where it was last prefetched
     * to (enum fake_prefetch), allocated by the first cuMemPrefetchAsync. */
    unsigned char *prefetched;
    /* Managed memory: per page the advice given (cuMemAdvise), allocated by
     * the first advice. */
    struct fake_advice *advice;
    /* Memory of an interprocess pool (ipc.c): its base lies in the pool's
     * shared region instead of coming from aligned_alloc; ipc_imported says
     * that this process imported it (cuMemPoolImportPointer). */
    struct fake_ipc_region *ipc;
    int ipc_imported;
    /* Allocated in stream order (cuMemAllocAsync, cuMemAllocFromPoolAsync). */
    unsigned char stream_ordered;
    struct fake_allocation *next;
};
#define FAKE_PAGE_SIZE 4096
/* The allocation containing [p, p+n), or NULL. Caller holds the lock. */
struct fake_allocation *fake_find_allocation(uintptr_t p, size_t n);
/* Frees every allocation of ctx. Caller holds the lock. */
void fake_free_allocations_of(struct fake_context *ctx);
/* The context of the allocation containing p, NULL when p is not in one.
 * Caller holds the lock. */
struct fake_context *fake_memory_context(uintptr_t p);
/* Device memory for globals of modules: counted like cuMemAlloc memory. */
CUresult fake_alloc_device(struct fake_context *ctx, CUdevice dev, size_t size, void **out);
void fake_free_device(void *p);
/* Mapped virtual memory (vmm.c) holding [p, p+n) that the current context's
 * device may access, as an allocation, or NULL. Caller holds the lock. */
struct fake_allocation *fake_vmm_find(uintptr_t p, size_t n);

/* ---- interprocess pools and events (ipc.c) ---- */
struct fake_ipc_region;
/* A new shared region of `capacity` bytes for a pool created with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, on device dev; NULL on failure. */
struct fake_ipc_region *fake_ipc_region_new(size_t capacity, CUdevice dev);
/* Room for `rounded` bytes in r (a new reference to r), or NULL when it is full. */
void *fake_ipc_carve(struct fake_ipc_region *r, size_t rounded);
/* Drops a reference to r; `carved`: the reference was fake_ipc_carve's. */
void fake_ipc_release(struct fake_ipc_region *r, int carved);
/* memory.c's side: the region of an IPC pool (NULL when pool is not a live
 * IPC pool; *imported: whether it was imported), an imported pool over r (it
 * takes a reference), and an allocation record for imported memory.
 * Caller holds the lock. */
struct fake_ipc_region *fake_pool_region(CUmemoryPool pool, int *imported);
CUresult fake_pool_import(struct fake_ipc_region *r, CUdevice dev, CUmemoryPool *out);
CUresult fake_pool_adopt_import(struct fake_context *ctx, CUmemoryPool pool, void *base, size_t size,
                                CUdeviceptr *out);
/* stream.c's side: an event's creation flags (-1: not a live event), and a new event. */
int fake_event_flags(CUevent event);
CUresult fake_event_create(CUevent *out, unsigned flags);

/* ---- streams, events, graphs (stream.c) ---- */
struct fake_stream;
struct fake_kernel;

/* Resolves a CUstream argument: the legacy/per-thread default streams give NULL.
 * Caller holds the lock. */
CUresult fake_check_stream(CUstream s, struct fake_stream **out);
/* Whether work issued to s is captured rather than run. */
int fake_stream_capturing(const struct fake_stream *s);
/* The driver's rule for "potentially unsafe" calls (cuMemAlloc, cuMemFree and
 * the like) while streams capture: refused when the calling thread captures in
 * a mode other than relaxed, or when its own mode (cuThreadExchangeStreamCaptureMode)
 * is global and another thread captures in global mode. A refused call answers
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the captures that forbade
 * it, as the real driver does. Takes the lock. */
CUresult fake_capture_allows_unsafe_call(void);

/* Operations that can be captured into a graph (FAKE_OP_EMPTY: an empty
 * node, cuGraphAddEmptyNode; the last three exist only as explicit graph
 * nodes, graph.c). */
enum fake_op_kind {
    FAKE_OP_KERNEL = 1, FAKE_OP_MEMCPY, FAKE_OP_MEMSET, FAKE_OP_HOST, FAKE_OP_EVENT_RECORD, FAKE_OP_EMPTY,
    FAKE_OP_EVENT_WAIT, FAKE_OP_CHILD, FAKE_OP_CONDITIONAL,
    /* graph memory (memory.c): allocation and free nodes made by capturing
     * cuMemAllocAsync / cuMemFreeAsync */
    FAKE_OP_MEM_ALLOC, FAKE_OP_MEM_FREE
};
struct fake_graph;
struct fake_conditional;
#define FAKE_CONDITIONAL_MAX_BODIES 8
struct fake_launch {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_mem;
};
struct fake_op {
    enum fake_op_kind kind;
    /* Where the operation's resources live, for cuGraphExecUpdate's rules:
     * a kernel's module's context ([0]); the contexts of a copy's
     * destination and source or a memset's destination allocations (NULL:
     * host memory the fake did not allocate). */
    struct fake_context *where[2];
    union {
        struct {
            const struct fake_kernel *kernel;
            struct fake_launch launch;
            unsigned char *params; /* packed parameter buffer, owned */
            size_t params_size;
        } kernel;
        struct { void *dst; const void *src; size_t bytes; } memcpy;
        struct { void *dst; unsigned value; unsigned element_size; size_t count; } memset;
        struct { CUhostFn fn; void *user_data; } host;
        struct { CUevent event; } event;
        struct { struct fake_graph *graph; } child; /* a copy, owned */
        struct {
            struct fake_conditional *handle;
            CUgraphConditionalNodeType type;
            unsigned size;
            struct fake_graph *bodies[FAKE_CONDITIONAL_MAX_BODIES]; /* owned */
        } conditional;
        struct { void *ptr; } mem; /* FAKE_OP_MEM_ALLOC, FAKE_OP_MEM_FREE */
    } u;
};
/* Runs op now, or appends it to the graph s is capturing. Takes ownership of
 * op->u.kernel.params. Caller holds the lock. */
CUresult fake_submit(struct fake_stream *s, struct fake_op *op);
/* Executes an operation (used by fake_submit and by graph replay). Caller holds the lock. */
CUresult fake_run_op(const struct fake_op *op);
void fake_event_stamp(CUevent event);
/* Graph memory (memory.c): runs an allocation or free node; a node that
 * allocates holds its memory (delta +1 when copied, -1 when released).
 * Caller holds the lock. */
CUresult fake_graph_mem_run(const struct fake_op *op);
void fake_graph_mem_hold(const struct fake_op *op, int delta);

/* ---- explicit graph nodes and conditionals (graph.c) ---- */
/* Runs a child-graph or conditional node: its graphs' nodes, in order.
 * Caller holds the lock. */
CUresult fake_run_graph_op(const struct fake_op *op);
/* Copies and releases what child-graph and conditional nodes own. */
int fake_graph_op_copy(struct fake_op *dst, const struct fake_op *src);
void fake_graph_op_release(struct fake_op *op);
/* What a kernel calls to set a conditional handle's value (its
 * cudaGraphSetConditional). Caller holds the lock. */
CUresult fake_set_conditional(unsigned long long handle, unsigned value);
/* Gives the handles that nodes in ops use and that ask for it their default
 * value, as a graph launch does. Caller holds the lock. */
void fake_conditional_defaults(const struct fake_op *const *ops, size_t count);

/* ---- modules and kernels (module.c, kernels.c) ---- */
#define FAKE_KERNEL_MAX_PARAMS 16
struct fake_kernel {
    const char *name;
    unsigned nparams;
    unsigned param_size[FAKE_KERNEL_MAX_PARAMS];
    unsigned param_align[FAKE_KERNEL_MAX_PARAMS];
    const char *declaration; /* C-like prototype, for messages and README */
    CUresult (*run)(const struct fake_launch *launch, void *const *args);
};
const struct fake_kernel *fake_find_kernel(const char *name, size_t len);
/* The kernel names, space separated, for messages. */
size_t fake_kernel_names(char *buffer, size_t size);
/* Offset of each parameter in the packed buffer and the buffer's size. */
size_t fake_kernel_layout(const struct fake_kernel *k, size_t offsets[FAKE_KERNEL_MAX_PARAMS]);
void fake_count_launch(void);
/* Checks a launch as cuLaunchKernel(Ex) does and builds its operation, with
 * the parameters copied (caller owns op->u.kernel.params). Caller holds the lock. */
CUresult fake_kernel_op(CUfunction fn, const unsigned grid[3], const unsigned block[3], unsigned shared,
                        void **kernelParams, void **extra, const CUlaunchConfig *config,
                        struct fakecuda_launch *seen, struct fake_op *op);

/* ---- resolution (driver.c, record.c) ---- */
struct fake_impl {
    const char *name;
    int version;
    int per_thread; /* the per-thread default stream variant */
    void *fn;
};
/* Each source file contributes its implementations through these tables. */
extern const struct fake_impl fake_impls_context[];
extern const struct fake_impl fake_impls_memory[];
extern const struct fake_impl fake_impls_stream[];
extern const struct fake_impl fake_impls_module[];
extern const struct fake_impl fake_impls_ipc[];
extern const struct fake_impl fake_impls_driver[];
extern const struct fake_impl fake_impls_graph[];
extern const struct fake_impl fake_impls_vmm[];
extern const struct fake_impl fake_impls_green[]; /* green.c: green contexts, tensor maps */

/* Record mode: a closure for symbol (NULL with *status set when there is none). */
CUresult fake_record_resolve(const char *symbol, int version, unsigned long long flags,
                             void **pfn, CUdriverProcAddressQueryResult *status);

/* Both modes: a recording closure for an echo entry point (record.c). */
CUresult fake_echo_resolve(const char *symbol, int version, unsigned long long flags, void **pfn,
                           CUdriverProcAddressQueryResult *status);

#define FAKE_IMPL(name, version, fn) { name, version, 0, (void *)(fn) }
#define FAKE_IMPL_PT(name, version, fn) { name, version, 1, (void *)(fn) }
#define FAKE_IMPL_END { NULL, 0, 0, NULL }

#endif

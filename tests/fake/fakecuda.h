/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakecuda.h - the test-facing interface of libfakecuda.so, the fake CUDA driver
 * that cuabi's tests load through CUABI_LIBCUDA.
 *
 * The fake exports what a driver exports (cuGetProcAddress_v2, cuInit,
 * cuDriverGetVersion, cuGetErrorName, cuGetErrorString) plus the fakecuda_*
 * functions declared here, which tests look up with dlsym() on the fake's handle
 * (see tests/support.h) so that no test links the fake directly.
 *
 * Behaviour is chosen by environment variables read once, on first use:
 *   FAKECUDA_MODE=functional|record   (default functional; see README.md)
 *   FAKECUDA_DRIVER_VERSION=NNNNN     (default 13000)
 *   FAKECUDA_DEVICE_COUNT=N           (default 1, at most 8; 0 makes cuInit fail
 *                                      with CUDA_ERROR_NO_DEVICE)
 *   FAKECUDA_INIT_RESULT=N            (make cuInit return this CUresult)
 *   FAKECUDA_TOTAL_MEM=BYTES          (device memory per device, default 8 GiB)
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKECUDA_MAX_ARGS 32
#define FAKECUDA_NAME_MAX 96
#define FAKECUDA_MAX_STRUCT 128

/* In both modes, cuGetProcAddress_v2 resolves FAKECUDA_ECHO_PREFIX followed
 * by signature letters (B H i I q Q z p f d, at most 32; "fakecuda_echo_dqzf")
 * to a recording closure of that signature, at any version not above the
 * driver's: calls of it are recorded like record mode's (fakecuda_record_last;
 * requested_version and impl_version are the version asked for). An entry
 * point no driver has, for testing cuabi_call with every kind of argument. */
#define FAKECUDA_ECHO_PREFIX "fakecuda_echo_"

/* One call of a recording closure (FAKECUDA_MODE=record). */
struct fakecuda_call {
    char name[FAKECUDA_NAME_MAX];   /* driver name the closure was handed out for */
    int requested_version;          /* cudaVersion passed to cuGetProcAddress_v2 */
    unsigned long long requested_flags; /* flags passed to cuGetProcAddress_v2 */
    int impl_version;               /* version of the variant the fake chose */
    int per_thread;                 /* 1 when the per-thread variant was chosen */
    unsigned nargs;                 /* number of arguments the closure received */
    char signature[FAKECUDA_MAX_ARGS + 1]; /* the signature it was built with */
    uint64_t args[FAKECUDA_MAX_ARGS];  /* raw argument bits: integers zero-extended
                                        from their width, floats as their IEEE bits;
                                        for a struct passed by value, its size (the
                                        bytes: fakecuda_record_struct_arg) */
};

/* What cuGetProcAddress_v2 last answered for one symbol name. */
struct fakecuda_request {
    unsigned count;                 /* how many times the name was asked for */
    int version;                    /* last cudaVersion asked */
    unsigned long long flags;       /* last flags asked */
    int result;                     /* last CUresult returned */
    int status;                     /* last CUdriverProcAddressQueryResult written */
};

typedef int (*fakecuda_is_record_mode_fn)(void);
typedef uint64_t (*fakecuda_live_allocations_fn)(void);
typedef uint64_t (*fakecuda_live_objects_fn)(const char *kind);
typedef uint64_t (*fakecuda_launch_count_fn)(void);
/* What the last successful launch asked for (fakecuda_last_launch). */
struct fakecuda_launch {
    unsigned grid[3], block[3], shared;
    unsigned cluster[3]; /* 1, 1, 1 without a cluster attribute */
    int extended;        /* through cuLaunchKernelEx */
    int cooperative, programmatic, has_priority, priority;
};
typedef int (*fakecuda_last_launch_fn)(struct fakecuda_launch *out);
typedef void (*fakecuda_record_set_result_fn)(int result);
typedef uint64_t (*fakecuda_record_count_fn)(void);
typedef int (*fakecuda_record_last_fn)(struct fakecuda_call *out);
typedef size_t (*fakecuda_record_struct_arg_fn)(unsigned index, void *out, size_t size);
typedef int (*fakecuda_request_info_fn)(const char *name, struct fakecuda_request *out);
typedef uint64_t (*fakecuda_request_total_fn)(void);
typedef int (*fakecuda_impl_version_fn)(const char *name, unsigned long long flags, int version);
typedef int (*fakecuda_fail_requests_fn)(const char *name, int result, unsigned times);

/* The families' fake libraries (libfakenvrtc.so, ...; tests/fake/family.c) export
 * these, each its own: */
typedef int (*fakefam_is_record_mode_fn)(void);
typedef void (*fakefam_record_set_result_fn)(int result);
typedef uint64_t (*fakefam_record_count_fn)(void);
/* the last call: `name` is the symbol called, `args` its raw bits, `signature` its
 * letters (the request fields are 0) */
typedef int (*fakefam_record_last_fn)(struct fakecuda_call *out);
/* the address the last call returned to: the forwarder's caller when the forwarder
 * jumped straight into the library, else whatever called the function */
typedef void *(*fakefam_last_return_address_fn)(void);
/* calls of one symbol so far */
typedef uint64_t (*fakefam_calls_fn)(const char *symbol);

/* 1 in record mode, 0 in functional mode. */
int fakecuda_is_record_mode(void);
/* Memory allocations (device, host, managed, pool) not yet freed. */
uint64_t fakecuda_live_allocations(void);
/* Live objects of one kind: "contexts", "streams", "events", "modules",
 * "graphs", "graph_execs", "pools" (user-created only); (uint64_t)-1 for an unknown kind. */
uint64_t fakecuda_live_objects(const char *kind);
/* Kernel launches executed so far (graph replays included). */
uint64_t fakecuda_launch_count(void);
/* Copies what the last successful launch (cuLaunchKernel or cuLaunchKernelEx,
 * its checked attributes included) asked for into *out; returns 1. */
int fakecuda_last_launch(struct fakecuda_launch *out);
/* Record mode (and echo entry points): the CUresult every recording closure
 * returns from now on. */
void fakecuda_record_set_result(int result);
/* Record mode (and echo entry points): calls recorded so far. */
uint64_t fakecuda_record_count(void);
/* Record mode (and echo entry points): copy of the last recorded call; 0 when
 * there is none. */
int fakecuda_record_last(struct fakecuda_call *out);
/* Record mode: the bytes of argument `index` of the last call when it is a
 * struct passed by value (members at their C offsets); copies at most size
 * bytes and returns the struct's size, 0 when that argument is not a struct. */
size_t fakecuda_record_struct_arg(unsigned index, void *out, size_t size);
/* What cuGetProcAddress_v2 answered for name; 0 when it was never asked. */
int fakecuda_request_info(const char *name, struct fakecuda_request *out);
/* Total cuGetProcAddress_v2 calls so far. */
uint64_t fakecuda_request_total(void);
/* The next `times` requests of cuGetProcAddress_v2 for name fail with result
 * (a CUresult), before the symbol is looked up: *pfn is NULL and the status
 * is not written, as with a driver failing for a reason of its own. 0 when
 * the fake's table of pending failures (8) is full. */
int fakecuda_fail_requests(const char *name, int result, unsigned times);
/* Functional mode: the version of the variant of name that a request with
 * (flags, version) would get, 0 when none would, -1 when the fake does not
 * implement name at all. */
int fakecuda_impl_version(const char *name, unsigned long long flags, int version);

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codes.c - what cuabi knows of every result code: its name, a description in
 * cuabi's words and, for cuabi's own codes, what to do.  Pure data: the bottom
 * layer of lib/, used by the load (for the report) and by errors.c.
 */
#include "internal.h"

#include <stddef.h>

#define CODE(c, text) { c, #c, text, NULL }

/* cuabi's own codes, from the one list in cuabi/result_codes.h. */
static const cuabi_code_info own_codes[] = {
#define OWN_CODE(name, value, kind, text, advice) \
    { CUABI_ERROR_##name, "CUABI_ERROR_" #name, text, advice },
    CUABI_RESULT_CODE_MAP(OWN_CODE)
#undef OWN_CODE
};

/* CUDA's result codes (those of CUDA 13.5's cuda.h, which cuabi's headers describe),
 * described in cuabi's words. */
static const cuabi_code_info cuda_codes[] = {
    CODE(CUDA_SUCCESS, "no error"),
    CODE(CUDA_ERROR_INVALID_VALUE, "an argument is outside its accepted values"),
    CODE(CUDA_ERROR_OUT_OF_MEMORY, "the allocation could not be satisfied"),
    CODE(CUDA_ERROR_NOT_INITIALIZED, "the driver has not been initialised (call cuInit first) "
                                     "or its initialisation failed"),
    CODE(CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"),
    CODE(CUDA_ERROR_PROFILER_DISABLED, "profiling is disabled for this process"),
    CODE(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "the profiler was not initialised (deprecated "
                                              "code)"),
    CODE(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiling was already started (deprecated "
                                              "code)"),
    CODE(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiling was already stopped (deprecated "
                                              "code)"),
    CODE(CUDA_ERROR_STUB_LIBRARY, "the library in use is the toolkit's stub, not a real "
                                  "driver"),
    CODE(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "this call needs a newer driver than the one "
                                                "installed"),
    CODE(CUDA_ERROR_DEVICE_UNAVAILABLE, "the device is busy or not available right now"),
    CODE(CUDA_ERROR_MULTICAST_RESOURCE_FULL, "the hardware has no room left to bind more "
                                             "memory to a multicast object"),
    CODE(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device was found"),
    CODE(CUDA_ERROR_INVALID_DEVICE, "the device ordinal or handle is not valid"),
    CODE(CUDA_ERROR_DEVICE_NOT_LICENSED, "the device lacks a licence needed for this "
                                         "operation"),
    CODE(CUDA_ERROR_INVALID_IMAGE, "the kernel image is not valid for this driver"),
    CODE(CUDA_ERROR_INVALID_CONTEXT, "no valid context is current, or the context given is "
                                     "not valid"),
    CODE(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "the context is already current (deprecated "
                                             "code)"),
    CODE(CUDA_ERROR_MAP_FAILED, "mapping memory failed"),
    CODE(CUDA_ERROR_UNMAP_FAILED, "unmapping memory failed"),
    CODE(CUDA_ERROR_ARRAY_IS_MAPPED, "the array is mapped and cannot be destroyed"),
    CODE(CUDA_ERROR_ALREADY_MAPPED, "the resource is already mapped"),
    CODE(CUDA_ERROR_NO_BINARY_FOR_GPU, "the image has no code this GPU can run"),
    CODE(CUDA_ERROR_ALREADY_ACQUIRED, "the resource has already been acquired"),
    CODE(CUDA_ERROR_NOT_MAPPED, "the resource is not mapped"),
    CODE(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "the mapped resource cannot be used as an array"),
    CODE(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "the mapped resource cannot be used as a pointer"),
    CODE(CUDA_ERROR_ECC_UNCORRECTABLE, "the device found an uncorrectable ECC memory error"),
    CODE(CUDA_ERROR_UNSUPPORTED_LIMIT, "the device does not support this limit"),
    CODE(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "the context is already in use by another thread"),
    CODE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access between these devices is not "
                                             "supported"),
    CODE(CUDA_ERROR_INVALID_PTX, "the PTX could not be compiled"),
    CODE(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "the OpenGL or DirectX context is not valid"),
    CODE(CUDA_ERROR_NVLINK_UNCORRECTABLE, "an uncorrectable NVLink error was detected"),
    CODE(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "the PTX JIT compiler library is missing"),
    CODE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the PTX uses an ISA version the driver does not "
                                             "support"),
    CODE(CUDA_ERROR_JIT_COMPILATION_DISABLED, "JIT compilation of PTX is disabled"),
    CODE(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the execution affinity type is not supported"),
    CODE(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "the code uses device-side synchronisation, "
                                              "which is not supported here"),
    CODE(CUDA_ERROR_CONTAINED, "an error in the device was contained; the process should "
                               "exit"),
    CODE(CUDA_ERROR_INSUFFICIENT_LOADER_VERSION, "the driver's loader is too old for this "
                                                 "fatbinary"),
    CODE(CUDA_ERROR_INVALID_SOURCE, "the kernel source is not valid"),
    CODE(CUDA_ERROR_FILE_NOT_FOUND, "the file was not found"),
    CODE(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "a symbol of a shared object could not be "
                                                    "resolved"),
    CODE(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "a shared object failed to initialise"),
    CODE(CUDA_ERROR_OPERATING_SYSTEM, "an operating system call failed"),
    CODE(CUDA_ERROR_INVALID_HANDLE, "a resource handle is not valid"),
    CODE(CUDA_ERROR_ILLEGAL_STATE, "the resource is not in a state that allows this "
                                   "operation"),
    CODE(CUDA_ERROR_LOSSY_QUERY, "the query cannot be answered without losing information"),
    CODE(CUDA_ERROR_NOT_FOUND, "the named symbol, function or resource was not found"),
    CODE(CUDA_ERROR_NOT_READY, "the asynchronous work has not finished yet (not an error)"),
    CODE(CUDA_ERROR_ILLEGAL_ADDRESS, "a kernel accessed an illegal memory address; the "
                                     "context is unusable"),
    CODE(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "the launch needs more resources (registers, "
                                             "shared memory) than the device has"),
    CODE(CUDA_ERROR_LAUNCH_TIMEOUT, "the kernel ran too long and was stopped; the context "
                                    "is unusable"),
    CODE(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "the launch used an incompatible "
                                                   "texturing mode"),
    CODE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    CODE(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    CODE(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "the primary context is already active"),
    CODE(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the current context has been destroyed or is not "
                                          "initialised yet"),
    CODE(CUDA_ERROR_ASSERT, "a device-side assert failed; the context is unusable"),
    CODE(CUDA_ERROR_TOO_MANY_PEERS, "too many peer mappings for one device"),
    CODE(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "the host memory is already registered"),
    CODE(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "the host memory is not registered"),
    CODE(CUDA_ERROR_HARDWARE_STACK_ERROR, "a kernel hit a call-stack error; the context is "
                                          "unusable"),
    CODE(CUDA_ERROR_ILLEGAL_INSTRUCTION, "a kernel executed an illegal instruction; the "
                                         "context is unusable"),
    CODE(CUDA_ERROR_MISALIGNED_ADDRESS, "a kernel used a misaligned address; the context is "
                                        "unusable"),
    CODE(CUDA_ERROR_INVALID_ADDRESS_SPACE, "a kernel used an address in the wrong address "
                                           "space; the context is unusable"),
    CODE(CUDA_ERROR_INVALID_PC, "a kernel's program counter became invalid; the context is "
                                "unusable"),
    CODE(CUDA_ERROR_LAUNCH_FAILED, "a kernel failed while running; the context is unusable"),
    CODE(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks for a cooperative launch "
                                                  "on this device"),
    CODE(CUDA_ERROR_TENSOR_MEMORY_LEAK, "a kernel exited without releasing its tensor "
                                        "memory"),
    CODE(CUDA_ERROR_NOT_PERMITTED, "the operation is not permitted"),
    CODE(CUDA_ERROR_NOT_SUPPORTED, "the operation is not supported on this device or "
                                   "system"),
    CODE(CUDA_ERROR_SYSTEM_NOT_READY, "the system is not ready for CUDA (check the driver "
                                      "and its services)"),
    CODE(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "the driver library and the kernel module have "
                                            "different versions"),
    CODE(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward-compatibility mode does not "
                                                    "support this device"),
    CODE(CUDA_ERROR_MPS_CONNECTION_FAILED, "connecting to the MPS server failed"),
    CODE(CUDA_ERROR_MPS_RPC_FAILURE, "a call to the MPS server failed"),
    CODE(CUDA_ERROR_MPS_SERVER_NOT_READY, "the MPS server is not ready"),
    CODE(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the MPS server has no room for more clients"),
    CODE(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the MPS server has no room for more "
                                                 "connections"),
    CODE(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client was terminated by the server"),
    CODE(CUDA_ERROR_CDP_NOT_SUPPORTED, "dynamic parallelism is not supported here"),
    CODE(CUDA_ERROR_CDP_VERSION_MISMATCH, "the dynamic-parallelism versions do not match"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the operation is not allowed while a stream "
                                                "is being captured"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the stream capture was invalidated by an "
                                                "earlier error"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_MERGE, "two separate captures would be merged"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "the capture was not started in this stream"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "a forked capture was not joined back"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "the capture would depend on work outside it"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "the capture would wait on the legacy default "
                                             "stream"),
    CODE(CUDA_ERROR_CAPTURED_EVENT, "the event was recorded during a capture and cannot be "
                                    "used this way"),
    CODE(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "the capture was started in another thread "
                                                 "in relaxed mode"),
    CODE(CUDA_ERROR_TIMEOUT, "the wait timed out"),
    CODE(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the executable graph could not be updated "
                                               "in place"),
    CODE(CUDA_ERROR_EXTERNAL_DEVICE, "an external device reported an error"),
    CODE(CUDA_ERROR_INVALID_CLUSTER_SIZE, "the cluster size is not valid"),
    CODE(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function's code is not loaded yet"),
    CODE(CUDA_ERROR_INVALID_RESOURCE_TYPE, "the resource type is not valid here"),
    CODE(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "the resource configuration is not "
                                                    "valid"),
    CODE(CUDA_ERROR_KEY_ROTATION, "a key rotation failed on an encrypted channel"),
    CODE(CUDA_ERROR_STREAM_DETACHED, "the stream is detached (its green context is gone) "
                                     "and cannot do this any more"),
    CODE(CUDA_ERROR_GRAPH_RECAPTURE_FAILURE, "recapturing into the graph failed and was "
                                             "stopped"),
    CODE(CUDA_ERROR_FABRIC_NOT_READY, "the GPU fabric did not become ready in time; try "
                                      "again later"),
    CODE(CUDA_ERROR_UNKNOWN, "an unknown internal error occurred"),
};

#undef CODE

static const cuabi_code_info *find(const cuabi_code_info *table, size_t count, CUresult code)
{
    for (size_t i = 0; i < count; i++)
        if (table[i].code == code)
            return &table[i];
    return NULL;
}

const cuabi_code_info *cuabi__code_info(CUresult code)
{
    const cuabi_code_info *entry = find(own_codes, sizeof own_codes / sizeof own_codes[0], code);
    if (entry == NULL)
        entry = find(cuda_codes, sizeof cuda_codes / sizeof cuda_codes[0], code);
    return entry;
}

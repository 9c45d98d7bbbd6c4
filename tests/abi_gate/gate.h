/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.h - a miniature of cuabi's public header, for the ABI gate's own test
 * (check_abi_gate.py). Each GATE_* macro makes one change that the gate must
 * judge: the incompatible ones must fail, the compatible ones pass.
 */
#ifndef GATE_H
#define GATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gate_props {
    int max_threads;
#if defined(GATE_FIELD_WIDER)
    long total_memory; /* int -> long */
#elif defined(GATE_FIELDS_SWAPPED)
    int pitch;
    int total_memory;
#else
    int total_memory;
#endif
#if !defined(GATE_FIELDS_SWAPPED)
    int pitch;
#endif
    int clock_rate;
} gate_props;

typedef enum gate_kind {
    GATE_KIND_ONE = 1,
    GATE_KIND_TWO = 2,
#if defined(GATE_ENUMERATOR_ADDED)
    GATE_KIND_THREE = 3,
#endif
} gate_kind;

#define GATE_API __attribute__((visibility("default")))

#if defined(GATE_RETURN_WIDER)
GATE_API uint64_t gate_version(void);
#else
GATE_API uint32_t gate_version(void);
#endif

#if defined(GATE_PARAMETER_ADDED)
GATE_API int gate_status(int32_t detail);
#else
GATE_API int gate_status(void);
#endif

#if defined(GATE_SIZE_T_TO_UNSIGNED)
GATE_API int gate_alloc(void **p, unsigned int bytes);
#elif defined(GATE_PARAMETER_RENAMED)
GATE_API int gate_alloc(void **p, size_t nbytes);
#else
GATE_API int gate_alloc(void **p, size_t bytes);
#endif

#if defined(GATE_SIZE_T_TO_UINT32)
GATE_API int gate_launch(const void *packet, uint32_t packet_size);
#else
GATE_API int gate_launch(const void *packet, size_t packet_size);
#endif

GATE_API int gate_properties(gate_props *out, gate_kind kind);

#if !defined(GATE_FUNCTION_REMOVED)
GATE_API int gate_reset(void);
#endif

#if defined(GATE_FUNCTION_ADDED)
GATE_API int gate_new_function(int x);
#endif

#endif

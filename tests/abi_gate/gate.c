/* SPDX-License-Identifier: Apache-2.0 */
/* gate.c - the miniature library of gate.h; see check_abi_gate.py. */
#include "gate.h"

#include <string.h>

#if defined(GATE_RETURN_WIDER)
uint64_t gate_version(void)
#else
uint32_t gate_version(void)
#endif
{
    return 0x010000;
}

#if defined(GATE_PARAMETER_ADDED)
int gate_status(int32_t detail)
{
    return (int)detail;
}
#else
int gate_status(void)
{
    return 0;
}
#endif

#if defined(GATE_SIZE_T_TO_UNSIGNED)
int gate_alloc(void **p, unsigned int bytes)
#elif defined(GATE_PARAMETER_RENAMED)
int gate_alloc(void **p, size_t nbytes)
#else
int gate_alloc(void **p, size_t bytes)
#endif
{
    *p = NULL;
#if defined(GATE_PARAMETER_RENAMED)
    return nbytes == 0;
#else
    return bytes == 0;
#endif
}

#if defined(GATE_SIZE_T_TO_UINT32)
int gate_launch(const void *packet, uint32_t packet_size)
#else
int gate_launch(const void *packet, size_t packet_size)
#endif
{
    return packet == NULL || packet_size < 32;
}

int gate_properties(gate_props *out, gate_kind kind)
{
    memset(out, 0, sizeof *out);
    out->max_threads = kind == GATE_KIND_ONE ? 1024 : 512;
    return 0;
}

#if !defined(GATE_FUNCTION_REMOVED)
int gate_reset(void)
{
    return 0;
}
#endif

#if defined(GATE_FUNCTION_ADDED)
int gate_new_function(int x)
{
    return x + 1;
}
#endif

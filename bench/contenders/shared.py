# SPDX-License-Identifier: Apache-2.0
"""Pieces several Python contenders use: the kernel arguments and host memory
made with ctypes (part of the standard library, so usable by every contender)."""

import ctypes

from common import BIG, SMALL


def kernel_values(device_pointer):
    """The arguments of empty_3 and empty_16 as (kind, value) pairs, kind one
    of 'u64', 'u32', 'f32'; the same values the C program passes."""
    three = [("u64", device_pointer), ("u32", 0), ("f32", 1.0)]
    sixteen = ([("u64", device_pointer)] * 8 + [("u32", i) for i in range(4)] +
               [("f32", 1.0)] * 4)
    return three, sixteen


_CTYPE = {"u64": ctypes.c_uint64, "u32": ctypes.c_uint32, "f32": ctypes.c_float}


class Prepacked:
    """void *params[] arrays for cuLaunchKernel, built once, kept alive.
    addresses[i] is the integer address for kernel i of (empty_0, empty_3,
    empty_16); 0 (NULL) for the kernel without parameters."""

    def __init__(self, device_pointer):
        self.keep = []
        self.addresses = [0]
        for values in kernel_values(device_pointer):
            cvalues = [_CTYPE[kind](value) for kind, value in values]
            array = (ctypes.c_void_p * len(cvalues))(*[ctypes.addressof(v) for v in cvalues])
            self.keep.append((cvalues, array))
            self.addresses.append(ctypes.addressof(array))
        self.arrays = [None] + [array for _, array in self.keep]


def pageable(size):
    """Ordinary (pageable) host memory of `size` bytes, every page touched."""
    buffer = ctypes.create_string_buffer(size)
    ctypes.memset(buffer, 1, size)
    return buffer


def address(host):
    """The address of host memory given as an int or a ctypes object."""
    return host if isinstance(host, int) else ctypes.addressof(host)


class CopyOps:
    """The eight host<->device copy operations, for a contender that defines
    ``_h2d(size, pinned)`` and ``_d2h(size, pinned)`` returning an Op."""

    def op_h2d_4k_pinned(self):
        return self._h2d(SMALL, True)

    def op_h2d_4k_pageable(self):
        return self._h2d(SMALL, False)

    def op_d2h_4k_pinned(self):
        return self._d2h(SMALL, True)

    def op_d2h_4k_pageable(self):
        return self._d2h(SMALL, False)

    def op_h2d_256m_pinned(self):
        return self._h2d(BIG, True)

    def op_h2d_256m_pageable(self):
        return self._h2d(BIG, False)

    def op_d2h_256m_pinned(self):
        return self._d2h(BIG, True)

    def op_d2h_256m_pageable(self):
        return self._d2h(BIG, False)

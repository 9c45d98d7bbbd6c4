# SPDX-License-Identifier: Apache-2.0
"""What a type checker must see of cuabi: real types, not Any.

tests/python/test_types.py runs mypy over this file; each assert_type fails
the check when the name's type is lost (for example to a module __getattr__).
Never executed.
"""

from typing import Optional, Tuple, Type, assert_type

import cuabi
from cuabi import driver as d

dev = cuabi.Device(0)
assert_type(dev, cuabi.Device)
assert_type(dev.context, cuabi.Context)
assert_type(dev.compute_capability, Tuple[int, int])
buf = cuabi.DeviceBuffer(16)
assert_type(buf, cuabi.DeviceBuffer)
assert_type(buf.ptr, int)
assert_type(buf.to_bytes(), bytes)
assert_type(buf.view("f4"), cuabi.DeviceArray)
pinned = cuabi.PinnedBuffer(16)
assert_type(pinned.memoryview(), memoryview)
stream = cuabi.Stream()
assert_type(stream.record(), cuabi.Event)
assert_type(cuabi.LaunchConfig(grid=1, block=1), cuabi.LaunchConfig)
assert_type(cuabi.launch(stream, cuabi.LaunchConfig(), cuabi.Module("x").get_kernel("k"), buf), None)
assert_type(d.cuCtxGetCurrent(), int)
assert_type(d.cuMemAlloc(16), int)
assert_type(d.cuMemGetInfo(), Tuple[int, int])
assert_type(d.cuGetErrorName(1), Optional[str])
assert_type(d.cuEventElapsedTime(0, 0), float)
assert_type(cuabi.errors.by_code(2), Type[cuabi.CUDAError])

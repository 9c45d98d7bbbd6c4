# SPDX-License-Identifier: Apache-2.0
"""PyTorch, where it has an equivalent: events, streams, copies between tensors,
and its caching allocator.  It cannot launch a PTX kernel of its own, and it
exposes no context or raw device-attribute call."""

from common import ALLOC, BIG, Op
from contenders import shared


def load():
    import torch
    return torch


def version(torch):
    return f"{torch.__version__} (CUDA {torch.version.cuda})"


def first_call(torch):
    torch.cuda.init()
    if torch.cuda.device_count() < 1:
        raise RuntimeError("torch sees no CUDA device")


def first_use(torch):
    return torch.empty(ALLOC, dtype=torch.uint8, device="cuda:0")


class Bench(shared.CopyOps):
    NO_EQUIVALENT = {
        "ctx_get_current": "PyTorch exposes no call that reads the current context",
        "device_get_attribute": "torch.cuda.get_device_properties() is cached, not a driver call",
        "event_create_destroy": "torch.cuda.Event creates its CUDA event lazily, at first record",
        "launch_0": "PyTorch cannot launch a PTX kernel by itself",
        "launch_3": "PyTorch cannot launch a PTX kernel by itself",
        "launch_16": "PyTorch cannot launch a PTX kernel by itself",
        "graph_instantiate": "PyTorch graphs capture PyTorch operations, not PTX kernels",
        "graph_launch": "PyTorch graphs capture PyTorch operations, not PTX kernels",
    }

    def __init__(self, torch, ptx):
        self.torch = torch
        self.device = torch.device("cuda:0")
        torch.cuda.set_device(self.device)
        self.stream = torch.cuda.Stream()
        self.tensors = {}

    def sync(self):
        self.torch.cuda.synchronize()

    def check(self, result):
        if result is False:
            raise RuntimeError("query answered not done on idle work")

    def op_event_query(self):
        self.event = self.torch.cuda.Event()
        self.event.record(self.stream)
        self.sync()
        return Op(self.event.query, (), "event.query()")

    def op_stream_query(self):
        return Op(self.stream.query, (), "stream.query()")

    def _device(self, size, key=None):
        key = key or size
        if key not in self.tensors:
            self.tensors[key] = self.torch.empty(size, dtype=self.torch.uint8, device=self.device)
        return self.tensors[key]

    def _host(self, size, pinned):
        key = (size, pinned)
        if key not in self.tensors:
            t = self.torch.empty(size, dtype=self.torch.uint8, pin_memory=pinned)
            t.fill_(1)
            self.tensors[key] = t
        return self.tensors[key]

    def _h2d(self, size, pinned):
        return Op(self._device(size).copy_, (self._host(size, pinned),), "dev.copy_(host)")

    def _d2h(self, size, pinned):
        return Op(self._host(size, pinned).copy_, (self._device(size),), "host.copy_(dev)")

    def op_d2d_256m(self):
        return Op(self._device(BIG, "d2d").copy_, (self._device(BIG),), "dst.copy_(src)")

    def op_alloc_free_1m(self):
        torch = self.torch

        def empty_and_drop(size=ALLOC, empty=torch.empty, dtype=torch.uint8, device=self.device):
            empty(size, dtype=dtype, device=device)
        return Op(empty_and_drop, (), "torch.empty(1 MiB, device=cuda) then dropped "
                                      "(caching allocator, not the driver's pool)")

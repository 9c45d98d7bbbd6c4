# SPDX-License-Identifier: Apache-2.0
"""What compiling or linking made: :class:`ObjectCode` (its own module so that the
program, the linker, NVVM and the program cache share it without importing each other)."""

from __future__ import annotations

from typing import Any, Dict, Optional


class ObjectCode:
    """What :meth:`Program.compile` or :meth:`cuabi.Linker.link` produced: ``code``
    (bytes), ``kind`` (``"ptx"``, ``"cubin"``, ``"ltoir"`` or ``"fatbin"``), the
    compiler's or linker's ``log``, ``name_map`` (name expression -> lowered,
    mangled name) and ``arch`` (``"sm_90"`` style, or ``None`` when unknown)."""

    __slots__ = ("code", "kind", "log", "name_map", "arch")

    def __init__(self, code: bytes, kind: str, log: str, name_map: Dict[str, str],
                 arch: Optional[str] = None):
        self.code = code
        self.kind = kind
        self.log = log
        self.name_map = name_map
        self.arch = arch

    def load(self, device=None):
        """Load as a :class:`cuabi.Module`."""
        from ._module import Module

        if self.kind == "ltoir":
            raise ValueError("LTO IR cannot be loaded as it is: link it first, e.g. "
                             "cuabi.Linker(obj, arch=...).link() gives a cubin that loads")
        return Module(self.code, kind=self.kind, device=device)

    def __repr__(self):
        return "<cuabi.ObjectCode %s, %d bytes>" % (self.kind, len(self.code))


def _read(prog: int, size_fn: Any, get_fn: Any) -> bytes:
    """One of the program's outputs (log, PTX, cubin, LTO IR): its size, then its bytes."""
    n = size_fn(prog)
    buf = bytearray(max(1, n))
    get_fn(prog, buf)
    return bytes(buf[:n])

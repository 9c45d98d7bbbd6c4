# SPDX-License-Identifier: Apache-2.0
"""An on-disk cache of compiled programs: :class:`ProgramCache`.

Opt-in: ``Program.compile(..., cache=ProgramCache("/some/dir"))`` (or
``cache="/some/dir"``), or the environment variable ``CUABI_PROGRAM_CACHE``
naming a directory, used by every ``compile`` not given ``cache=``
(``cache=False`` turns it off for one call).  Nothing is cached otherwise.

One file per entry, named by its key (a SHA-256 made by ``Program.compile``
from the input, its name, the in-memory headers, the final option list, the
target, the name expressions and the versions of the tools that ran).  A file
is the magic line, the SHA-256 of the rest, one JSON line (kind, log,
name_map, arch) and the code.  It is written to a temporary file in the same
directory and renamed into place, so a reader sees a whole entry or none, and
two processes writing the same entry leave one whole entry.  An entry that
does not parse or whose digest does not match is removed and counts as a
miss, so the program is compiled again.  After each write, the least
recently used entries (by modification time, refreshed on every hit) are
removed until the directory holds at most ``max_bytes``; :meth:`clear`
removes every entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any, List, Optional, Tuple

from ._object_code import ObjectCode

_MAGIC = b"cuabi program cache 1\n"
_SUFFIX = ".entry"
ENV = "CUABI_PROGRAM_CACHE"
DEFAULT_MAX_BYTES = 1 << 30


class ProgramCache:
    """Compiled programs kept in ``directory`` (made if missing), at most
    ``max_bytes`` of them (default 1 GiB).  ``hits`` and ``misses`` count this
    object's lookups."""

    def __init__(self, directory: "str | os.PathLike[str]", max_bytes: int = DEFAULT_MAX_BYTES):
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError("directory must be a str or os.PathLike, got %s" % type(directory).__name__)
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
            raise ValueError("max_bytes must be an int > 0, got %r" % (max_bytes,))
        path = os.fspath(directory)
        if not path:
            raise ValueError("the cache directory must not be an empty path")
        self.directory = os.path.abspath(path)
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + _SUFFIX)

    def get(self, key: str) -> Optional[Any]:
        """The :class:`cuabi.ObjectCode` stored under ``key``, or None (missing or corrupt)."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.misses += 1
            return None
        entry = _parse(data)
        if entry is None:  # damaged: remove it, so that the next write replaces it
            try:
                os.unlink(path)
            except OSError:
                pass
            self.misses += 1
            return None
        meta, code = entry
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        self.hits += 1
        return ObjectCode(code, meta["kind"], meta["log"], dict(meta["name_map"]), meta["arch"])

    def put(self, key: str, obj: Any) -> None:
        """Store ``obj`` (an ObjectCode) under ``key``, atomically; then keep the size bound."""
        meta = json.dumps({"kind": obj.kind, "log": obj.log, "name_map": obj.name_map, "arch": obj.arch},
                          sort_keys=True).encode("utf-8")
        body = meta + b"\n" + bytes(obj.code)
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(body).digest() + body)
            os.replace(tmp, self._path(key))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._trim(keep=key)

    def entries(self) -> List[Tuple[str, int, float]]:
        """Every entry: ``(key, size in bytes, modification time)``, oldest first."""
        out = []
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        for name in names:
            if not name.endswith(_SUFFIX) or name.startswith("."):
                continue
            try:
                st = os.stat(os.path.join(self.directory, name))
            except OSError:  # removed meanwhile by another process
                continue
            out.append((name[:-len(_SUFFIX)], st.st_size, st.st_mtime))
        out.sort(key=lambda e: (e[2], e[0]))
        return out

    def size(self) -> int:
        """The bytes the entries take."""
        return sum(e[1] for e in self.entries())

    def _trim(self, keep: str) -> None:
        entries = self.entries()
        total = sum(e[1] for e in entries)
        for key, size, _mtime in entries:
            if total <= self.max_bytes:
                break
            if key == keep:
                continue
            try:
                os.unlink(self._path(key))
            except OSError:
                pass
            total -= size

    def clear(self) -> None:
        """Remove every entry (and temporary files left by writers that died)."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if name.endswith(_SUFFIX):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError:
                    pass

    def __repr__(self) -> str:
        return "<cuabi.ProgramCache %s, at most %d bytes>" % (self.directory, self.max_bytes)


def _parse(data: bytes) -> Optional[Tuple[dict, bytes]]:
    """An entry's (metadata, code), or None when it is not a whole, intact entry."""
    start = len(_MAGIC) + 32
    if not data.startswith(_MAGIC) or len(data) < start:
        return None
    body = data[start:]
    if hashlib.sha256(body).digest() != data[len(_MAGIC):start]:
        return None
    line, sep, code = body.partition(b"\n")
    if not sep:
        return None
    try:
        meta = json.loads(line.decode("utf-8"))
        if not (isinstance(meta, dict) and isinstance(meta.get("kind"), str) and isinstance(meta.get("log"), str)
                and isinstance(meta.get("name_map"), dict)):
            return None
        meta.setdefault("arch", None)
    except ValueError:
        return None
    return meta, code


def resolve(cache: Any) -> Optional[ProgramCache]:
    """``compile``'s ``cache=`` argument as a ProgramCache or None: None means
    ``CUABI_PROGRAM_CACHE`` when set, False means no cache."""
    if cache is None:
        directory = os.environ.get(ENV)
        return ProgramCache(directory) if directory else None
    if cache is False:
        return None
    if isinstance(cache, ProgramCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return ProgramCache(cache)
    raise TypeError("cache must be a ProgramCache, a directory, None (CUABI_PROGRAM_CACHE) or False, got %r"
                    % (cache,))


def make_key(parts: dict) -> str:
    """The SHA-256 (hex) of ``parts`` written as canonical JSON."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()

# SPDX-License-Identifier: Apache-2.0
"""Keeping Ctrl-C out of the few steps that must not be cut in half.

Python raises ``KeyboardInterrupt`` from SIGINT's handler, which the main
thread runs between two bytecodes, for example right after a driver call
returned a new handle and before that handle was stored.  The steps that
create, release, push or capture are therefore run inside :func:`deferred`:
on the main thread it swaps SIGINT's Python handler for one that only notes
the signal, and on leaving it puts the handler back and, if a signal came,
calls that handler then, so the interrupt is raised after the step, with
nothing half made.

Only SIGINT is deferred (its handler is the one that raises by default).
Other threads need nothing: Python runs signal handlers on the main thread
only.  Handlers that are not Python callables (``SIG_IGN``, ``SIG_DFL``)
raise nothing and are left alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, List, Optional

try:  # the C module: plain ints, no enum conversions (a swap costs ~0.5 us)
    import _signal as _sig
except ImportError:  # pragma: no cover - interpreters without it
    _sig = signal  # type: ignore[assignment]

_SIGINT = int(signal.SIGINT)
_main = threading.main_thread().ident
_get_ident = threading.get_ident


def _after_fork() -> None:
    # the child's main thread is the thread that forked
    # (another thread may have forked while the main thread deferred: then the
    # child starts with the noting handler, and gets the real one back)
    global _main
    _main = _get_ident()
    if _state.saved is not None:
        _sig.signal(_SIGINT, _state.saved)
    _state.depth = 0
    _state.saved = None
    del _state.pending[:]


class _State:
    """The main thread's deferral: nesting depth, the handler set aside, and
    the signals noted meanwhile."""

    __slots__ = ("depth", "saved", "pending")

    def __init__(self) -> None:
        self.depth = 0
        self.saved: Any = None
        self.pending: List[Any] = []


_state = _State()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _note(signum: int, frame: Any) -> None:
    # only the number: a frame kept here would keep its locals alive
    _state.pending.append(signum)


class deferred:
    """``with deferred(): ...`` - SIGINT's handler runs after the block, not in it."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active = False

    def __enter__(self) -> "deferred":
        if _get_ident() != _main:
            return self
        st = _state
        if st.depth:
            st.depth += 1
            self.active = True
            return self
        handler = _sig.getsignal(_SIGINT)
        if callable(handler):
            # signal() first runs the handlers of signals already pending: if the
            # old one raises there, nothing was swapped and nothing is recorded
            _sig.signal(_SIGINT, _note)
            st.saved = handler
            st.depth = 1
            self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        self.active = False
        st = _state
        st.depth -= 1
        if st.depth:
            return
        handler: Optional[Any] = st.saved
        st.saved = None
        try:
            _sig.signal(_SIGINT, handler)  # (a signal pending meanwhile is noted first)
        finally:
            pending = st.pending[:1]
            del st.pending[:]
        if pending:
            handler(pending[0], sys._getframe(1))  # type: ignore[misc]


def cleanup(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with SIGINT deferred, for the steps that undo something
    (pop a context, end a capture): a Ctrl-C that lands as the step begins,
    before the deferral holds, does not skip it - the step runs (deferred)
    and the interrupt is raised after it."""
    started = False
    try:
        with deferred():
            started = True
            return fn(*args)
    except BaseException:
        if not started:
            with deferred():
                fn(*args)
        raise

"""The base of every releasable object of the Pythonic layer, and its lifetime rules.

* ``close()`` releases the driver object now; closing twice is harmless; any
  other use after ``close()`` raises :class:`cuabi.errors.ClosedError`.
* Resources are context managers (``with cuabi.Stream() as s: ...``).
* A resource that is garbage-collected while open is released then, unless the
  interpreter is shutting down (the driver tears everything down at exit).
* Each resource belongs to a :class:`cuabi.Context`; closing the context first
  closes every resource still open in it, so nothing outlives its context.
"""

from __future__ import annotations

import atexit
import sys
from typing import Any

from .errors import ClosedError

_shutdown = False


def _at_exit() -> None:
    global _shutdown
    _shutdown = True


atexit.register(_at_exit)


def finalizing() -> bool:
    """True while the interpreter shuts down: nothing is released then."""
    return _shutdown or sys.is_finalizing()


def closed_error(obj: object) -> ClosedError:
    """The error for using ``obj`` after it was closed."""
    return ClosedError("%s is closed" % type(obj).__name__)


class Resource:
    """Base of every releasable cuabi object (see the module docstring).

    ``_h`` holds the driver handle (None once closed) and ``_ctx`` the owning
    :class:`cuabi.Context`; a subclass implements ``_release(handle, ...)``.
    """

    __slots__ = ("_h", "_ctx", "__weakref__")

    def __init__(self) -> None:
        self._h: Any = None
        self._ctx: Any = None

    def _release(self, handle: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or the owning context was closed)."""
        return self._h is None

    @property
    def handle(self) -> int:
        """The driver handle, as an integer."""
        h = self._h
        if h is None:
            raise closed_error(self)
        return h

    def _cuabi_address(self) -> int:
        h = self._h
        if h is None:
            raise closed_error(self)
        return h

    def close(self) -> None:
        """Release the driver object now. Closing twice does nothing."""
        self._close()

    def _close(self, *release_args: Any) -> None:
        """What :meth:`close` does; ``release_args`` go to ``_release`` after
        the handle, inside the owning context."""
        h = self._h
        if h is None:
            return
        ctx = self._ctx
        if ctx is not None:
            ctx._forget(self)
        self._h = None
        if ctx is not None and ctx._h is not None:
            with ctx._pushed():
                self._release(h, *release_args)
        else:
            self._release(h, *release_args)

    def __enter__(self):
        if self._h is None:
            raise closed_error(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            h = self._h
        except AttributeError:
            return
        if h is None or finalizing():
            return
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        h = self._h
        state = "closed" if h is None else "0x%x" % h
        return "<cuabi.%s %s>" % (type(self).__name__, state)

# SPDX-License-Identifier: Apache-2.0
"""The base of every releasable object of the Pythonic layer, and its lifetime rules.

* ``close()`` releases the driver object now; closing twice is harmless; any
  other use after ``close()`` raises :class:`cuabi.errors.ClosedError`.
* Resources are context managers (``with cuabi.Stream() as s: ...``).
* A resource that is garbage-collected while open is released then, unless the
  interpreter is shutting down (the driver tears everything down at exit).
* Each resource belongs to a :class:`cuabi.Context`; closing the context first
  closes every resource still open in it, so nothing outlives its context.
* A resource has exactly one owner: ``copy.copy``, ``copy.deepcopy`` and
  pickling raise ``TypeError`` (:class:`NotCopyable`), since a second Python
  object holding the same handle would release it a second time.
* Creating and releasing are never cut in half by Ctrl-C (see
  :mod:`cuabi._interrupts`): a KeyboardInterrupt arrives before the handle
  exists or after it is stored (or released), never in between.
"""

from __future__ import annotations

import atexit
import sys
from typing import Any

from ._constants import CUDA_ERROR_INVALID_CONTEXT
from ._interrupts import deferred
from .errors import ClosedError, CUDAError

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


class _NoContext:
    """Stands in for a pushed context where there is none to push."""

    __slots__ = ()

    def __enter__(self) -> "_NoContext":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


NO_CONTEXT = _NoContext()


class NotCopyable:
    """Refuses ``copy.copy``, ``copy.deepcopy`` and pickling, saying why: the
    object owns (or stands for) a driver object of this process, which a copy
    would own a second time and a pickle could not carry to another process."""

    __slots__ = ()

    def __copy__(self) -> Any:
        raise TypeError("cuabi.%s cannot be copied: it owns a driver object, and two Python objects "
                        "owning it would release it twice; pass the object itself around%s"
                        % (type(self).__name__, _copy_hint(self)))

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("cuabi.%s cannot be pickled: the driver object it owns exists only in this "
                        "process%s" % (type(self).__name__, _pickle_hint(self)))


def _copy_hint(obj: object) -> str:
    if hasattr(obj, "to_bytes"):
        return " (for a second copy of the memory: a new buffer and cuabi.copy)"
    return ""


def _pickle_hint(obj: object) -> str:
    if hasattr(obj, "to_bytes"):
        return "; pickle its contents instead (to_bytes())"
    return ""


class Resource(NotCopyable):
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
    def context(self) -> Any:
        """The :class:`cuabi.Context` the object belongs to, whose methods run
        in it (None for a wrapped foreign object)."""
        return self._ctx

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

    def _in_context(self) -> Any:
        """A context manager running a method in this resource's context (see
        cuabi._context): pushed when the thread has another one current."""
        ctx = self._ctx
        if ctx is None or ctx._h is None:
            return NO_CONTEXT
        return ctx._pushed()

    def close(self) -> None:
        """Release the driver object now. Closing twice does nothing."""
        self._close()

    def _close(self, *release_args: Any) -> None:
        """What :meth:`close` does; ``release_args`` go to ``_release`` after
        the handle, inside the owning context, with Ctrl-C deferred."""
        with deferred():
            h = self._h
            if h is None:
                return
            self._h = None
            ctx = self._ctx
            if ctx is None or ctx._h is None:
                self._release(h, *release_args)
                return
            ctx._forget(self)
            pushed = ctx._pushed()
            try:
                pushed.__enter__()
            except CUDAError as exc:
                if exc.code == CUDA_ERROR_INVALID_CONTEXT:
                    return  # destroyed underneath (by another library): it took this object with it
                raise
            try:
                self._release(h, *release_args)
            finally:
                pushed.__exit__()

    def _finalize(self) -> None:
        """What garbage collection does with an open resource: close it."""
        self.close()

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
            self._finalize()
        except Exception:
            pass

    def __repr__(self) -> str:
        h = self._h
        state = "closed" if h is None else "0x%x" % h
        return "<cuabi.%s %s>" % (type(self).__name__, state)

# SPDX-License-Identifier: Apache-2.0
"""Lazily built ``IntEnum`` classes and constants for :mod:`cuabi.driver`."""

from __future__ import annotations

import enum
import threading

_lock = threading.Lock()
_classes = {}
_member_owner = None


def _tables():
    from . import _tables

    return _tables


def enum_class(name, module="cuabi.driver"):
    """The ``IntEnum`` for the C enum ``name`` (built once)."""
    cls = _classes.get(name)
    if cls is not None:
        return cls
    members = _tables().ENUMS.get(name)
    if members is None:
        raise KeyError(name)
    with _lock:
        cls = _classes.get(name)
        if cls is None:
            cls = enum.IntEnum(name, list(members.items()), module=module)
            cls.__doc__ = "Values of the driver's %s enum." % name
            _classes[name] = cls
    return cls


def _owners():
    global _member_owner
    if _member_owner is None:
        owners = {}
        for ename, members in _tables().ENUMS.items():
            for m in members:
                owners.setdefault(m, ename)
        _member_owner = owners
    return _member_owner


def lookup(name, namespace, module_name):
    """Resolve an enum class, enumerator or #define; cache it in ``namespace``."""
    t = _tables()
    if name in t.ENUMS:
        value = enum_class(name)
    else:
        owner = _owners().get(name)
        if owner is not None:
            value = enum_class(owner)[name]
        elif name in t.DEFINES:
            value = t.DEFINES[name]
        else:
            raise AttributeError("module %r has no attribute %r" % (module_name, name))
    namespace[name] = value
    return value


def names():
    t = _tables()
    return set(t.ENUMS) | set(_owners()) | set(t.DEFINES)

# SPDX-License-Identifier: Apache-2.0
"""Both foreign-function backends implement the interface cuabi._backend_interface declares."""

import inspect

import pytest

from cuabi._backend import open_library
from cuabi._backend_interface import Backend


def _members():
    """(data attributes, methods) the Backend protocol declares."""
    data = sorted(Backend.__annotations__)
    methods = sorted(name for name, value in vars(Backend).items()
                     if inspect.isfunction(value) and not name.startswith("_"))
    return data, methods


def _backend(kind):
    if kind == "cffi":
        mod = pytest.importorskip("cuabi._backend_cffi", reason="cffi's module was not built")
    else:
        from cuabi import _backend_ctypes as mod
    return mod.Backend(open_library)


def _parameters(function):
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("kind", ["cffi", "ctypes"])
def test_backend_has_every_declared_attribute(kind):
    """A backend object has every data attribute of the Backend protocol."""
    b = _backend(kind)
    data, _methods = _members()
    assert [name for name in data if not hasattr(b, name)] == []


@pytest.mark.parametrize("kind", ["cffi", "ctypes"])
def test_backend_methods_take_the_declared_parameters(kind):
    """Each method of a backend has the protocol's parameters: names, kinds and defaults."""
    b = _backend(kind)
    _data, methods = _members()
    differing = [name for name in methods
                 if not callable(getattr(type(b), name, None))
                 or _parameters(getattr(type(b), name)) != _parameters(getattr(Backend, name))]
    assert differing == []


def test_protocol_declares_what_the_backends_share():
    """Every public method both backends define is part of the protocol (none escapes it)."""
    from cuabi import _backend_ctypes

    _data, methods = _members()
    shared = {name for name, value in vars(_backend_ctypes.Backend).items()
              if inspect.isfunction(value) and not name.startswith("_")}
    assert sorted(shared - set(methods)) == []

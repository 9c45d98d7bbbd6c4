# SPDX-License-Identifier: Apache-2.0
"""Type checkers see cuabi's real types: mypy over examples/ and a typed usage file."""

import ast
import os
import subprocess
import sys

import pytest

from conftest import PYDIR, ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
USAGE = os.path.join(HERE, "data", "typed_usage.py")


def _mypy(*paths, extra=()):
    pytest.importorskip("mypy")
    cache = os.path.join(os.environ.get("CUABI_BUILD_DIR", os.path.join(ROOT, "build")), "mypy-cache")
    env = dict(os.environ, MYPYPATH=PYDIR)
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", cache, "--python-version", "3.11",
           "--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary"]
    return subprocess.run(cmd + list(extra) + list(paths), env=env, capture_output=True, text=True,
                          timeout=600)


def test_mypy_sees_real_types_in_the_examples_and_the_usage_file():
    """mypy passes over examples/python and typed_usage.py, whose assert_type calls fail on Any."""
    p = _mypy(USAGE, os.path.join(ROOT, "examples", "python"))
    assert p.returncode == 0, p.stdout + p.stderr


def test_mypy_catches_a_wrong_use(tmp_path):
    """A misuse the types forbid (a Device where a str is wanted) is a mypy error, not Any."""
    bad = tmp_path / "bad.py"
    bad.write_text("import cuabi\nfrom cuabi import driver as d\n"
                   "name: str = cuabi.Device(0)\nfree: str = d.cuMemGetInfo()\n")
    p = _mypy(str(bad))
    assert p.returncode == 1 and p.stdout.count("[assignment]") == 2, p.stdout + p.stderr


def test_every_public_name_is_declared_for_type_checkers():
    """Each lazy public name of cuabi/__init__.py is imported in its TYPE_CHECKING block."""
    import cuabi

    with open(os.path.join(PYDIR, "cuabi", "__init__.py")) as f:
        tree = ast.parse(f.read())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING")
    declared = {alias.asname or alias.name for n in block.body for alias in n.names}
    assert declared == set(cuabi._LAZY)

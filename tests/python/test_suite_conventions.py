# SPDX-License-Identifier: Apache-2.0
"""The Python tests follow the suite's conventions: each says in one line what it proves."""

import ast
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def undocumented_tests(folder=HERE):
    """``file:line name`` of each test function whose docstring is missing or longer than a line."""
    bad = []
    for path in sorted(glob.glob(os.path.join(folder, "test_*.py"))):
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node)
                if not doc or "\n" in doc.strip():
                    bad.append("%s:%d %s" % (os.path.basename(path), node.lineno, node.name))
    return bad


def test_every_test_has_a_one_line_docstring():
    """Every test function in tests/python states what it proves in a one-line docstring."""
    assert undocumented_tests() == []


def test_the_convention_check_sees_a_missing_docstring(tmp_path):
    """The check names a test without a docstring and one whose docstring runs over two lines."""
    (tmp_path / "test_x.py").write_text(
        'def test_a():\n    pass\n\n\ndef test_b():\n    """One\n    two."""\n\n\n'
        'def test_c():\n    """Fine."""\n')
    assert undocumented_tests(str(tmp_path)) == ["test_x.py:1 test_a", "test_x.py:5 test_b"]

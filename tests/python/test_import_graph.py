# SPDX-License-Identifier: Apache-2.0
"""The cuabi package's modules import each other without a cycle.

Every import counts, including those inside functions (the lazy ones that
keep ``import cuabi`` cheap): a cycle through a lazy import is still a cycle
a reader has to untangle.  Only imports under ``if TYPE_CHECKING:`` are left
out, since they never run.
"""

import ast
import os

from conftest import PYDIR

PACKAGE = os.path.join(PYDIR, "cuabi")


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree, modules):
    """The package modules a module's code imports (outside TYPE_CHECKING blocks)."""
    found = set()

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            elif node.level == 0 and node.module and node.module.split(".")[0] == "cuabi":
                parts = node.module.split(".")
                names = [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
            else:
                names = []
            found.update(n for n in names if n in modules)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "cuabi" and len(parts) > 1 and parts[1] in modules:
                    found.add(parts[1])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(package=PACKAGE):
    """module name -> the package modules it imports."""
    modules = {f[:-3] for f in os.listdir(package) if f.endswith(".py")}
    graph = {}
    for name in sorted(modules):
        with open(os.path.join(package, name + ".py")) as f:
            graph[name] = _imported(ast.parse(f.read()), modules) - {name}
    return graph


def find_cycle(graph):
    """One import cycle as a list of modules (first == last), or None."""
    state = {}  # 1: on the current path, 2: done
    path = []

    def walk(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = walk(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = walk(node)
            if cycle:
                return cycle
    return None


def test_package_has_no_import_cycle():
    """No chain of imports inside python/cuabi leads back to where it started."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_sees_a_cycle_through_a_lazy_import(tmp_path):
    """The checker counts imports inside functions and names the modules of a cycle."""
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    graph = import_graph(str(tmp_path))
    assert graph["c"] == set()
    assert find_cycle(graph) == ["a", "b", "a"]

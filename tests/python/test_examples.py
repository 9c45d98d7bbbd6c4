# SPDX-License-Identifier: Apache-2.0
"""The examples in examples/python run (SAXPY on the fake; all of them on a GPU)."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, subprocess_pythonpath

EXAMPLES = os.path.join(ROOT, "examples", "python")


def _run(name, *args):
    env = dict(os.environ, PYTHONPATH=subprocess_pythonpath())
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                       capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout + p.stderr


def _nvrtc():
    from cuabi import _program
    from cuabi.errors import NVRTCError

    try:
        _program.nvrtc_version()
    except NVRTCError:
        pytest.skip("NVRTC not installed")


def test_saxpy_example():
    """examples/python/saxpy_nvrtc.py compiles, launches and checks its result."""
    _nvrtc()
    rc, out = _run("saxpy_nvrtc.py", "1000")
    assert rc == 0, out
    assert "checked 1000 elements: OK" in out


@pytest.mark.gpu
def test_graph_example():
    """examples/python/graph.py captures, replays and updates a graph correctly."""
    _nvrtc()
    rc, out = _run("graph.py")
    assert rc == 0 and out.rstrip().endswith("OK"), out


@pytest.mark.gpu
def test_dlpack_torch_example():
    """examples/python/dlpack_torch.py exchanges memory with PyTorch both ways."""
    _nvrtc()
    pytest.importorskip("torch")
    rc, out = _run("dlpack_torch.py")
    assert rc == 0 and out.count("OK") == 3, out

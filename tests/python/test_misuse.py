# SPDX-License-Identifier: Apache-2.0
"""The misuse corpus (tests/python/misuse_corpus.py): bad input and wrong use,
each case in a process of its own, checked for its outcome, crashes and leaks."""

import json
import os
import subprocess
import sys

import pytest

from conftest import subprocess_pythonpath
from misuse_corpus import CASES

HERE = os.path.dirname(os.path.abspath(__file__))
pytestmark = pytest.mark.fake


@pytest.fixture(scope="module")
def zygote():
    """One fresh interpreter that forks a process per case."""
    env = dict(os.environ)
    env["PYTHONPATH"] = subprocess_pythonpath()
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "misuse_corpus.py")], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield p
    p.stdin.close()
    p.wait(timeout=60)


def _run(zygote, index):
    zygote.stdin.write(index if isinstance(index, str) else "%d\n" % index)
    zygote.stdin.flush()
    return json.loads(zygote.stdout.readline())


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_misuse_case(zygote, index):
    """The case ends as the corpus says, without a crash, and leaves nothing in the fake driver."""
    name, expected, code = CASES[index]
    if "np." in code:
        pytest.importorskip("numpy")
    if sys.implementation.name != "cpython" and any(
            w in code for w in ("from_dlpack", "__dlpack__(", "import _dlpack")):
        pytest.skip("DLPack capsules need ctypes.pythonapi (CPython)")
    reply = _run(zygote, index)
    assert reply["signal"] == 0, "case %r died of signal %d" % (name, reply["signal"])
    result = reply["result"]
    assert result is not None, "case %r ended without reporting (status %d)" % (name, reply["status"])
    if expected == "ok":
        assert result["raised"] is None, result["message"]
    else:
        assert result["raised"] == expected, result["message"] or "nothing raised"
    left = result.get("left")
    if left is not None:
        assert left == dict.fromkeys(left, 0), "case %r left %r" % (name, left)


def test_the_corpus_runner_reports_a_crash(zygote):
    """A case that dies of a signal is reported as such (a crash fails its case)."""
    case = ["segfault on purpose", "ok", "import ctypes; ctypes.string_at(8)"]
    reply = _run(zygote, json.dumps(case) + "\n")
    assert reply["signal"] != 0 and reply["result"] is None

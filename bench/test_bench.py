# SPDX-License-Identifier: Apache-2.0
"""Tests of bench/ that need no GPU: the report from synthetic results, the
statistics, the worker's timing protocol, and the C contender's build and
its answer when there is no driver.

    python3 -m pytest bench/test_bench.py
"""

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import ops  # noqa: E402
import report  # noqa: E402
import runner  # noqa: E402
import worker  # noqa: E402
from common import Op  # noqa: E402


def entry(median, how="call()"):
    """A steady-state result whose rounds spread ±10% around median."""
    samples = [median * f for f in (0.9, 0.95, 1.0, 1.0, 1.05, 1.1)]
    return dict(runner.summarize(samples), samples=samples, how=how, n=1000, errors=0)


def startup_entry(import_ms, first_ms=None):
    e = {"samples": [{}], "import_ns": runner.summarize([import_ms * 1e6] * 3),
         "ready_ns": runner.summarize([import_ms * 1.5e6] * 3),
         "rss_start_kb": runner.summarize([14000]), "rss_import_kb": runner.summarize([16000])}
    if first_ms is not None:
        e["first_call_ns"] = runner.summarize([first_ms * 1e6] * 3)
        e["use_ns"] = runner.summarize([first_ms * 2e6] * 3)
        e["rss_use_kb"] = runner.summarize([300000])
    return e


def launch_cost_entry(floor, over):
    """bench/launch_cost.py's results, summarised as the runner does."""
    samples = {"C floor": [floor * f for f in (0.95, 1.0, 1.05)]}
    samples["cuabi.launch"] = [x + over for x in samples["C floor"]]
    per_arity = {name: dict(runner.summarize(xs), samples=xs,
                            over_floor=runner.summarize([a - b for a, b in zip(xs, samples["C floor"])]))
                 for name, xs in samples.items()}
    return {"backend": "x", "rounds": 3, "arities": {"3": per_arity, "16": per_arity}}


def synthetic_results():
    """Plausible GPU results: C 8 ns, bindings 126 ns, cuabi faster; one
    target missed on purpose (ctypes launch +0.5 us)."""
    per_call = {"c_direct": 8, "c_cuabi": 9, "cuabi_cffi": 110, "cuabi_ctypes": 290,
                "cuda_bindings": 126, "cupy": 400, "ctypes": 318}
    launch = {"c_direct": 2000, "c_cuabi": 2001, "cuabi_cffi": 2250, "cuabi_ctypes": 2500,
              "cuda_bindings": 2700, "cuda_core": 2800, "cupy": 3700, "ctypes": 3900}
    results = {"schema": 1, "created": "2026-12-02 18:00 UTC", "mode": "gpu", "wall_s": 301.0,
               "machine": {"gpu": "NVIDIA H200", "driver_version": 13000, "cpu": "x", "cpus": 16,
                           "python": "3.12.3", "platform": "Linux", "cuabi_commit": "abc1234"},
               "settings": {"rounds": 6, "startup_rounds": 3, "seed": 1, "quick": False},
               "contenders": {c.name: {"label": c.label, "kind": c.kind, "anchor": c.anchor}
                              for c in ops.CONTENDERS},
               "startup": {"cuabi_cffi": startup_entry(9.5, 120), "cuabi_ctypes": startup_entry(7.0, 118),
                           "cuda_bindings": startup_entry(29, 140), "cuda_core": startup_entry(508, 700),
                           "c_direct": startup_entry(0.1, 100), "c_cuabi": startup_entry(0.1, 101)},
               "ops": {}, "skipped": [{"what": "PyTorch", "why": "import failed: no torch"}],
               "forwarded_call": {"callgrind": {"overhead_instructions": 6,
                                                "forwarded_instructions": 146,
                                                "direct_instructions": 140},
                                  "timed": {"overhead_ns": 0.4, "forwarded_ns": 8.4, "direct_ns": 8.0}},
               "launch_cost": {"cuabi_cffi": launch_cost_entry(2000, 250),
                               "cuabi_ctypes": launch_cost_entry(2000, 500)}}
    for op in ops.OPERATIONS:
        table = launch if op.group == "launch" else per_call
        if op.nbytes >= ops.BIG:
            table = {c: 5e6 for c in per_call}
        results["ops"][op.name] = {c: entry(v) for c, v in table.items()}
        results["ops"][op.name]["torch"] = {"skipped": "not offered by this library"}
    return results


def verdicts(results):
    return {row[0]: row[3] for row in report.targets(results)}


def test_summarize_gives_median_quartiles_and_range():
    s = runner.summarize([4, 1, 3, 2, 5])
    assert (s["median"], s["p25"], s["p75"], s["min"], s["max"], s["rounds"]) == (3, 2, 4, 1, 5, 5)
    assert runner.summarize([2, 4])["median"] == 3


def test_targets_are_judged_from_the_numbers():
    v = verdicts(synthetic_results())
    assert v["`import cuabi` ≤ 15 ms, cuabi (cffi)"] == "**met**"
    assert v["cuCtxGetCurrent through cuabi.driver ≤ 1× cuda.bindings, cuabi (cffi)"] == "**met**"
    assert v["cuCtxGetCurrent through cuabi.driver ≤ 2.5× cuda.bindings, cuabi (ctypes)"] == "**met**"
    launch3 = "empty kernel launch, 3 arguments via Kernel/launch ≤ C floor + 0.3 µs, one process, interleaved, "
    assert v[launch3 + "cuabi (cffi)"] == "**met**"          # +250 ns
    assert v[launch3 + "cuabi (ctypes)"] == "**not met**"    # +500 ns
    separate = "empty kernel launch, 3 arguments, separate processes (the tables below; reported), "
    assert v[separate + "cuabi (cffi)"] == "reported"
    assert v["forwarded C call ≤ 10 instructions over direct (callgrind, fake driver)"] == "**met**"


def test_a_missing_anchor_is_named_not_guessed():
    results = synthetic_results()
    del results["ops"]["ctx_get_current"]["cuda_bindings"]
    v = verdicts(results)
    assert v["cuCtxGetCurrent through cuabi.driver ≤ 1× cuda.bindings, cuabi (cffi)"] == \
        "not measured (cuda.bindings not measured)"


def test_launch_targets_without_their_measurement_say_why():
    results = synthetic_results()
    results["launch_cost"]["cuabi_cffi"] = {"skipped": "bench/c/launch_loop.c could not be built"}
    del results["launch_cost"]["cuabi_ctypes"]
    v = verdicts(results)
    launch16 = "empty kernel launch, 16 arguments via Kernel/launch ≤ C floor + 0.3 µs, one process, interleaved, "
    assert v[launch16 + "cuabi (cffi)"] == "not measured (bench/c/launch_loop.c could not be built)"
    assert v[launch16 + "cuabi (ctypes)"] == "not measured (not in this run's results)"
    md = report.markdown(results, chart=False)
    assert "## Launch overhead in one process" not in md


def test_no_gpu_report_says_so_and_keeps_import_times():
    results = synthetic_results()
    results.update(mode="no-gpu", ops={})
    results["machine"].pop("gpu")
    md = report.markdown(results, chart=False)
    assert "**No GPU**" in md and "## Start-up" in md and "## Steady state" not in md
    assert verdicts(results)["cuCtxGetCurrent through cuabi.driver ≤ 1× cuda.bindings, "
                             "cuabi (cffi)"] == "not measured (no GPU in this run)"


def test_markdown_has_every_section_and_the_skips():
    md = report.markdown(synthetic_results(), chart=True)
    for heading in ("# Benchmarks", "## Method", "## This run", "## Targets",
                    "## Launch overhead in one process",
                    "## cuabi against the others", "## Start-up", "## Steady state",
                    "## Skipped", "![benchmark chart](benchmarks.png)"):
        assert heading in md
    assert "PyTorch: not offered by this library" in md
    assert "GB/s" in md


def test_from_json_writes_the_report(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(synthetic_results()))
    out = tmp_path / "out"
    subprocess.run([os.path.join(BENCH, "run"), str(out), "--from-json", str(path),
                    "--docs", "no"], check=True, capture_output=True, env=dict(os.environ, PYTHON=sys.executable))
    md = (out / "benchmarks.md").read_text()
    assert "NVIDIA H200" in md
    if importlib.util.find_spec("matplotlib") is None:
        assert not (out / "benchmarks.png").exists()
    else:
        assert (out / "benchmarks.png").stat().st_size > 10000


class CountingBench:
    """A stand-in contender: counts calls and synchronisations."""
    NO_EQUIVALENT = {"stream_query": "no such thing here"}

    def __init__(self):
        self.calls = 0
        self.syncs = 0

    def sync(self):
        self.syncs += 1

    def check(self, result):
        if result != "fine":
            raise RuntimeError("bad result")

    def count(self):
        self.calls += 1
        return "fine"

    def op_ctx_get_current(self):
        return Op(self.count, (), "count()")

    def op_event_query(self):
        raise RuntimeError("the library lacks it")

    def op_launch_0(self):
        return Op(lambda: "wrong", (), "returns a failure")


def test_worker_builds_checks_and_skips_each_op_on_its_own():
    bench = CountingBench()
    offered, skipped = worker.build_ops(bench)
    assert set(offered) == {"ctx_get_current", "python_loop"}
    assert skipped["stream_query"] == "no such thing here"
    assert skipped["event_query"] == "failed: RuntimeError: the library lacks it"
    assert skipped["launch_0"].startswith("failed: RuntimeError: bad result")
    assert skipped["d2d_256m"] == "not offered by this library"


def test_worker_run_times_n_calls_in_chunks_with_warm_up():
    bench = CountingBench()
    spec = Op(bench.count)
    total = worker.run(spec, bench.sync, n=1000, warm=7, chunk=256, timed_sync=0)
    assert bench.calls == 1007 and total > 0
    assert bench.syncs == 2 + 4  # before/after warm-up, then after each of 4 chunks


def test_worker_protocol_round_trip(monkeypatch):
    bench = CountingBench()
    offered, _ = worker.build_ops(bench)
    monkeypatch.setattr(sys, "stdin", io.StringIO("run ctx_get_current 50 5 0 1\nrun nope 1 1 0 1\nquit\n"))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    worker.serve(bench, offered)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("ok ") and int(lines[0].split()[1]) > 0
    assert lines[1].startswith("err ")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_contender_builds_cleanly_and_reports_a_missing_driver(tmp_path):
    binary = tmp_path / "bench_c_direct"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-DBENCH_DIRECT",
                    "-I", os.path.join(REPO, "include"), os.path.join(BENCH, "c", "bench_driver.c"),
                    "-o", str(binary), "-ldl"], check=True)
    env = dict(os.environ, CUABI_LIBCUDA=str(tmp_path / "no-such-libcuda.so.1"))
    proc = subprocess.run([str(binary), "probe"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert "no-such-libcuda.so.1" in json.loads(proc.stdout)["error"]


BUILD = os.environ.get("CUABI_BUILD_DIR") or os.path.join(REPO, "build")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "tests", "libfakecuda.so")),
                    reason="needs the tests' fake driver (build/tests/libfakecuda.so)")
def test_launch_cost_runs_against_the_fake_driver(tmp_path):
    loop = tmp_path / "launch_loop.so"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    os.path.join(BENCH, "c", "launch_loop.c"), "-o", str(loop)], check=True)
    env = dict(os.environ, CUABI_LIBCUDA=os.path.join(BUILD, "tests", "libfakecuda.so"),
               CUABI_LIBRARY=os.path.join(BUILD, "libcuabi.so.1"), CUABI_PY_BACKEND="ctypes",
               PYTHONPATH=os.pathsep.join(p for p in (os.path.join(REPO, "python"),
                                                      os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "launch_cost.py"), str(loop),
                           os.path.join(BENCH, "kernels.ptx"), "2"],
                          capture_output=True, text=True, env=env, cwd=BENCH, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["backend"] == "ctypes" and out["rounds"] == 2
    for arity in ("3", "16"):
        variants = out["arities"][arity]
        assert set(variants) == {"C floor", "cuabi.launch"}
        assert all(len(xs) == 2 and all(x > 0 for x in xs) for xs in variants.values())


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "libcuabi.so.1")),
                    reason="needs the built library (build/libcuabi.so.1)")
def test_wheel_option_measures_the_installed_package(tmp_path, monkeypatch):
    """--wheel: the tier's contenders run a venv's interpreter, import the wheel's
    package and open its own libcuabi (not the source tree's, not CUABI_LIBRARY's)."""
    pytest.importorskip("cffi")
    build = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, %r); import build_backend; "
         "print(build_backend.build_wheel(%r))" % (os.path.join(REPO, "python"), str(tmp_path))],
        capture_output=True, text=True,
        env=dict(os.environ, CUABI_BUILD_COMPILED="0",
                 CUABI_PREBUILT_LIBRARY=os.path.join(BUILD, "libcuabi.so.1")))
    assert build.returncode == 0, build.stderr
    wheel = str(tmp_path / build.stdout.split()[-1])
    for c in ops.CONTENDERS:  # use_wheels changes the shared contenders: restore them after
        monkeypatch.setattr(c, "env", dict(c.env))
        monkeypatch.setattr(c, "label", c.label)
        monkeypatch.setattr(c, "python", c.python)
    setup = runner.Setup(runner.parse_args(["--out", str(tmp_path / "out")]))
    setup.env["CUABI_LIBRARY"] = "/nonexistent/libcuabi.so.1"  # must not reach the wheel's tier
    notes = runner.use_wheels(setup, [wheel])
    assert notes == ["cuabi from the installed wheel " + os.path.basename(wheel)]
    for name in ("cuabi_cffi_abi", "cuabi_ctypes"):
        c = ops.CONTENDER[name]
        assert c.python.startswith(str(tmp_path / "out" / "venvs" / "pure"))
        env = setup.child_env(c)
        assert "CUABI_LIBRARY" not in env and "PYTHONPATH" not in env
        p = subprocess.run([setup.python_for(c), "-c", "import cuabi; print(cuabi.library_path())"],
                           capture_output=True, text=True, env=env, cwd=str(tmp_path))
        assert p.returncode == 0 and "/venvs/pure/" in p.stdout, p.stdout + p.stderr
    assert ops.CONTENDER["cuabi_cffi"].python is None  # no abi3 wheel given: the source tree's
    with pytest.raises(SystemExit, match="not an existing cuabi wheel"):
        runner.use_wheels(setup, [str(tmp_path / "cuabi-1.0.0-cp311-cp311-linux_x86_64.whl")])


def test_find_links_installs_the_wheels_dependencies_offline(tmp_path, monkeypatch):
    """--find-links DIR: the venv's pip takes the wheel's dependencies from DIR with no index
    (a GPU machine without network or cffi); without it, --no-deps and the system's cffi."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            return subprocess.CompletedProcess(cmd, 0, "", "")
        raise SystemExit("stop after pip")  # the pip call is all this test looks at

    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    setup = runner.Setup(runner.parse_args(["--out", str(tmp_path / "out")]))
    wheel = tmp_path / "cuabi-1.1.0-py3-none-manylinux_2_17_x86_64.whl"
    wheel.write_bytes(b"")
    for links, expected in ((str(tmp_path), ["--no-index", "--find-links", str(tmp_path)]),
                            (None, ["--no-deps"])):
        calls.clear()
        with pytest.raises(SystemExit, match="stop after pip"):
            runner.use_wheels(setup, [str(wheel)], links)
        pip = calls[-1]
        assert pip[1:4] == ["-m", "pip", "install"]
        assert pip[5:5 + len(expected)] == expected, pip


def test_the_chart_has_a_colour_for_every_contender():
    """A contender without a colour made the chart (and the report after it) fail on the GPU."""
    assert len(report.PALETTE) >= len(ops.CONTENDERS)
    assert len(set(report.PALETTE)) == len(report.PALETTE)

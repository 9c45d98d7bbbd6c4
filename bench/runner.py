# SPDX-License-Identifier: Apache-2.0
"""bench/run's engine: builds the C contenders, measures, writes the results.

Phases, each skipped with a reason where it cannot run:
  1. build      bench/c/bench_driver.c twice (direct libcuda, and libcuabi),
                bench/c/forward_cost.c, and a copy of python/cuabi in
                build/bench/python with its cffi modules
  2. probe      is there a working driver and GPU?  (the direct C program)
  3. forwarded  instructions per forwarded call under callgrind on the fake
                driver, ns per call on the GPU (bench/c/forward_cost.c and
                check_forward_cost.py, the build+tests side's)
  4. startup    fresh processes, round by round in shuffled order: import
                time, time to the first driver call, to first use, and RSS
  5. steady     one long-lived worker per contender; every round runs every
                contender's batch of every operation, contenders shuffled
                (GPU only)
  6. launch     cuabi's launches and the C floor in one process, interleaved
                round by round (bench/launch_cost.py, bench/c/launch_loop.c;
                GPU only): the measurement of the launch targets
Then results.json, benchmarks.md and benchmarks.png in the output folder, and
docs/benchmarks.md + docs/benchmarks.png when the GPU phases ran.
"""

import argparse
import datetime
import json
import math
import os
import platform
import queue
import random
import shutil
import subprocess
import sys
import threading
import time

import ops
import report

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
SCHEMA = 1


def log(*words):
    print("[bench]", *words, flush=True)


# ---------------------------------------------------------------- statistics

def percentile(values, q):
    """Linear interpolation between closest ranks (q in [0, 1])."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(samples):
    return {"median": percentile(samples, 0.5), "p25": percentile(samples, 0.25),
            "p75": percentile(samples, 0.75), "min": min(samples), "max": max(samples),
            "rounds": len(samples)}


# ---------------------------------------------------------------- environment

class Setup:
    """Paths, the environment children get, and what was skipped."""

    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.build = os.path.abspath(os.environ.get("CUABI_BUILD_DIR")
                                     or os.path.join(REPO, "build"))
        self.bin = os.path.join(self.build, "bench", "bin")
        self.library = os.environ.get("CUABI_LIBRARY") or os.path.join(self.build, "libcuabi.so.1")
        self.kernels = os.path.abspath(args.kernels or os.path.join(BENCH, "kernels.ptx"))
        self.python = sys.executable
        self.skipped = []          # (what, why) for the report
        self.env = dict(os.environ)
        self.use_package_root(os.path.join(REPO, "python"))
        # Bytecode caches as a user's machine has them (an environment that
        # turns them off would make every import compile its sources).
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        if os.path.exists(self.library):
            self.env["CUABI_LIBRARY"] = os.path.abspath(self.library)
        self.deadline = time.monotonic() + args.time_limit
        self.cut_short = []        # phases stopped by the time limit
        self.fake = None
        if args.fake:
            self.use_fake(args.fake)
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)

    def use_fake(self, path):
        """Every contender loads the test suite's fake driver instead of a GPU's:
        a self-test of the whole pipeline whose numbers mean nothing."""
        if path == "auto":
            path = os.path.join(self.build, "tests", "sysdriver", "libcuda.so.1")
        path = os.path.abspath(path)
        if not os.path.exists(path):
            raise SystemExit(f"bench/run: no fake driver at {path} (build the tests first)")
        folder = os.path.join(self.out, "fake-driver")
        os.makedirs(folder, exist_ok=True)
        link = os.path.join(folder, "libcuda.so.1")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(path, link)
        self.fake = path
        self.env["CUABI_LIBCUDA"] = link
        self.env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (folder, self.env.get("LD_LIBRARY_PATH")) if p)

    def use_package_root(self, root):
        """Children import cuabi from root (PYTHONPATH set by the caller kept after it)."""
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH")) if p)

    def left(self):
        """Seconds left before the time limit, keeping 20 s for the report."""
        return self.deadline - 20 - time.monotonic()

    def out_of_time(self, phase):
        if self.left() > 0:
            return False
        if phase not in self.cut_short:
            self.cut_short.append(phase)
            self.skip(f"the rest of the {phase} phase",
                      f"--time-limit of {self.args.time_limit:g} s reached")
        return True

    def skip(self, what, why):
        log(f"skipped: {what}: {why}")
        self.skipped.append({"what": what, "why": why})

    def child_env(self, contender):
        env = dict(self.env)
        for key, value in contender.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def python_for(self, contender):
        return contender.python or self.python


# ---------------------------------------------------------------- 1. build

def build_c(setup):
    """name -> path of each C program that could be built: the contenders
    c_direct and c_cuabi, forward_cost (bench/c/forward_cost.c, the
    build+tests side's forwarded-call probe) and the shared library
    launch_loop (the C floor of bench/launch_cost.py).  Skips the others
    with why."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    labels = {"c_direct": ops.CONTENDER["c_direct"].label,
              "c_cuabi": ops.CONTENDER["c_cuabi"].label,
              "forward_cost": "bench/c/forward_cost.c",
              "launch_loop": "bench/c/launch_loop.c"}
    if cc is None:
        for label in labels.values():
            setup.skip(label, "no C compiler (cc) found")
        return {}
    os.makedirs(setup.bin, exist_ok=True)
    flags = [cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-I", os.path.join(REPO, "include")]
    lib = os.path.abspath(setup.library)
    with_cuabi = [lib, "-Wl,-rpath," + os.path.dirname(lib), "-ldl"]
    programs = {"c_direct": ("bench_driver.c", ["-DBENCH_DIRECT"], ["-ldl"]),
                "c_cuabi": ("bench_driver.c", [], with_cuabi),
                "forward_cost": ("forward_cost.c", [], with_cuabi),
                "launch_loop": ("launch_loop.c", ["-shared", "-fPIC"], [])}
    built = {}
    for name, (source, defines, libs) in programs.items():
        source = os.path.join(BENCH, "c", source)
        if not os.path.exists(source):
            setup.skip(labels[name], f"{os.path.relpath(source, REPO)} is not in this tree")
            continue
        if libs is with_cuabi and not os.path.exists(lib):
            setup.skip(labels[name], f"{setup.library} is missing: build the library first (cmake)")
            continue
        output = os.path.join(setup.bin, name)
        proc = subprocess.run(flags + defines + [source, "-o", output] + libs,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            setup.skip(labels[name], "build failed: " + proc.stderr.strip()[-600:])
        else:
            built[name] = output
    return built


def stage_python_package(setup):
    """The cuabi package the Python contenders import: a copy of python/cuabi
    in build/bench/python, with cuabi's cffi modules built there by
    python/build_modules.py (the compiled API-mode one where a compiler allows),
    so bench/run never writes into the source tree and always measures the
    current sources.  Returns a line for the report."""
    source = os.path.join(REPO, "python", "cuabi")
    if not os.path.isdir(source):
        setup.skip("cuabi (Python)", "python/cuabi is not in this tree")
        return None
    root = os.path.join(os.path.dirname(setup.bin), "python")
    package = os.path.join(root, "cuabi")
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(source, package, ignore=shutil.ignore_patterns(
        "libcuabi.so*", "_cuabi_cffi*", "_cuabi_speedups*", "__pycache__"))
    setup.use_package_root(root)
    script = os.path.join(REPO, "python", "build_modules.py")
    if not os.path.exists(script):
        return "cffi backend: python/build_modules.py is not in this tree"
    if subprocess.run([setup.python, "-c", "import cffi"], capture_output=True,
                      env=setup.env).returncode != 0:
        return "cffi backend: cffi is not importable here"
    proc = subprocess.run([setup.python, script, "--compiled", "--outdir", package],
                          capture_output=True, text=True, env=setup.env, timeout=300)
    with open(os.path.join(setup.out, "logs", "build_modules.log"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode == 0:
        stage_abi_mode(setup, package, script)
        speedups = any(n.startswith("_cuabi_speedups") for n in os.listdir(package))
        return ("cffi backend: compiled API mode%s (python/build_modules.py --compiled)"
                % (" with the speedups module" if speedups else ""))
    if os.path.exists(os.path.join(package, "_cuabi_cffi.py")):
        setup.skip("cuabi's compiled cffi module",
                   "python/build_modules.py --compiled failed (logs/build_modules.log); "
                   "cffi runs in ABI mode")
        return "cffi backend: ABI mode (the compiled module failed to build)"
    setup.skip("cuabi's cffi modules", "python/build_modules.py failed (logs/build_modules.log)")
    return None


def stage_abi_mode(setup, package, script):
    """cuabi (cffi ABI mode): a second copy of the package without the compiled
    modules, in build/bench/python-abi."""
    root = os.path.join(os.path.dirname(setup.bin), "python-abi")
    copy = os.path.join(root, "cuabi")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns(
        "_cuabi_cffi_api*", "_cuabi_speedups*", "__pycache__"))
    ops.CONTENDER["cuabi_cffi_abi"].env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)


WHEEL_TIERS = {  # wheel kind -> the contenders it serves, and the backend each must report
    "abi3": [("cuabi_cffi", "cffi-compiled")],
    "pure": [("cuabi_cffi_abi", "cffi"), ("cuabi_ctypes", "ctypes")],
}


def use_wheels(setup, wheels, find_links=None):
    """--wheel: the cuabi contenders import an installed wheel instead of the
    source tree.  Each wheel goes into its own venv (with the system's
    site-packages, so the anchors and cffi are the same), and the contenders
    of its tier run that venv's interpreter with the wheel's own libcuabi.
    ``find_links`` (--find-links): a folder of wheels the venvs install the
    wheel's declared dependencies (cffi) from, offline, for an interpreter
    that lacks them.  Returns notes for the report."""
    notes = []
    for wheel in wheels:
        wheel = os.path.abspath(wheel)
        base = os.path.basename(wheel)
        kind = "abi3" if "-abi3-" in base else "pure" if "-py3-none-" in base else None
        if kind is None or not os.path.exists(wheel):
            raise SystemExit(f"bench/run: --wheel {wheel}: not an existing cuabi wheel "
                             "(cp310-abi3 or py3-none)")
        venv = os.path.join(setup.out, "venvs", kind)
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([setup.python, "-m", "venv", "--system-site-packages", venv], check=True)
        python = os.path.join(venv, "bin", "python")
        deps = ["--no-index", "--find-links", os.path.abspath(find_links)] if find_links else ["--no-deps"]
        proc = subprocess.run([python, "-m", "pip", "install", "--quiet", *deps,
                               "--force-reinstall", "--disable-pip-version-check", wheel],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"bench/run: installing {base} failed:\n{proc.stderr[-2000:]}")
        for name, backend in WHEEL_TIERS[kind]:
            c = ops.CONTENDER[name]
            c.python = python
            # the wheel's package and library, not the source tree's
            c.env.update(PYTHONPATH=None, CUABI_LIBRARY=None)
            probe = subprocess.run([python, "-c", "import cuabi; print(cuabi.backend_name()); "
                                    "print(cuabi.__file__)"], capture_output=True, text=True,
                                   env=setup.child_env(c), cwd=setup.out)
            got = probe.stdout.split()
            if probe.returncode != 0 or not got or got[0] != backend or venv not in got[-1]:
                raise SystemExit(f"bench/run: {base} for {c.label}: expected the {backend} backend "
                                 f"from {venv}, got {probe.stdout.strip() or probe.stderr[-600:]}")
            c.label += f", {kind} wheel"
        notes.append(f"cuabi from the installed wheel {base}")
    return notes


# ---------------------------------------------------------------- 2. probe

def probe_gpu(setup, binaries):
    """(info, None) when a GPU answers, else (None, why)."""
    if "c_direct" not in binaries:
        return None, "the direct C program could not be built"
    try:
        proc = subprocess.run([binaries["c_direct"], "probe"], capture_output=True, text=True,
                              timeout=120, env=setup.env)
    except subprocess.TimeoutExpired:
        return None, "probing the driver took over 120 s"
    info = last_json(proc.stdout)
    if proc.returncode != 0 or info is None or "error" in info:
        why = (info or {}).get("error") or proc.stderr.strip()[-300:] or "no answer"
        return None, "no usable GPU: " + why
    return info, None


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


# ---------------------------------------------------------------- 3. forwarded call

def fake_driver(setup):
    """The test suite's fake driver for callgrind, or None."""
    for path in (os.environ.get("CUABI_BENCH_FAKE"), setup.fake,
                 os.path.join(setup.build, "tests", "libfakecuda.so")):
        if path and os.path.exists(path):
            return os.path.abspath(path)
    return None


def number_after(text, prefix):
    """The number following `prefix` on the first line that starts with it."""
    for line in text.splitlines():
        if line.strip().startswith(prefix):
            try:
                return float(line.strip()[len(prefix):].split()[0])
            except (IndexError, ValueError):
                return None
    return None


def forward_cost(setup, binaries, gpu):
    """The build+tests side's forward_cost probe: instructions per forwarded
    call under callgrind on the fake driver (bench/c/check_forward_cost.py),
    and, on a GPU, ns per call against the real driver, forwarder and direct
    pointer interleaved in one process."""
    out = {}
    binary = binaries.get("forward_cost")
    check = os.path.join(BENCH, "c", "check_forward_cost.py")
    fake = fake_driver(setup)
    if binary is None:
        out["callgrind"] = {"skipped": "bench/c/forward_cost.c could not be built"}
    elif not os.path.exists(check):
        out["callgrind"] = {"skipped": "bench/c/check_forward_cost.py is not in this tree"}
    elif fake is None:
        out["callgrind"] = {
            "skipped": "no fake driver: build the tests (build/tests/libfakecuda.so)"}
    else:
        env = dict(setup.env, CUABI_LIBCUDA=fake)
        proc = subprocess.run([setup.python, check, binary, "--limit", "10"], capture_output=True,
                              text=True, env=env, timeout=600)
        text = proc.stdout + proc.stderr
        overhead = number_after(text, "forwarder overhead:")
        if proc.returncode == 77 or overhead is None:
            why = text.strip().splitlines()[-1] if text.strip() else f"exit {proc.returncode}"
            out["callgrind"] = {"skipped": why[:300]}
        else:
            out["callgrind"] = {
                "overhead_instructions": overhead,
                "forwarded_instructions": number_after(
                    text, "instructions per call through cuabi_cuCtxGetCurrent:"),
                "direct_instructions": number_after(
                    text, "instructions per call through a function pointer:"),
                "fake_driver": fake}
    if binary is not None and gpu:
        try:
            proc = subprocess.run([binary, "time", "2000000"], capture_output=True, text=True,
                                  env=setup.env, timeout=300)
            text = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            text = "took over 300 s"
        overhead = number_after(text, "forwarder overhead:")
        if overhead is None:
            out["timed"] = {"skipped": " ".join(text.split())[-300:] or "no output"}
        else:
            out["timed"] = {
                "overhead_ns": overhead,
                "forwarded_ns": number_after(text, "through cuabi_cuCtxGetCurrent:"),
                "direct_ns": number_after(text, "through a function pointer:")}
    elif binary is not None:
        out["timed"] = {"skipped": "no GPU"}
    # What tracing adds to a call (docs/tracing.md): on the real driver where there is one,
    # else on the fake.
    if binary is not None and (gpu or fake is not None):
        env = setup.env if gpu else dict(setup.env, CUABI_LIBCUDA=fake)
        try:
            proc = subprocess.run([binary, "trace", "100000"], capture_output=True, text=True,
                                  env=env, timeout=300)
            text = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            text = "took over 300 s"
        overhead = number_after(text, "tracing overhead:")
        if overhead is None:
            out["trace"] = {"skipped": " ".join(text.split())[-300:] or "no output"}
        else:
            out["trace"] = {
                "overhead_ns": overhead, "driver": "the real" if gpu else "the fake",
                "traced_ns": number_after(text, "traced call of cuabi_cuCtxGetCurrent:"),
                "untraced_ns": number_after(text, "untraced call:")}
    elif binary is not None:
        out["trace"] = {"skipped": "no GPU and no fake driver"}
    for key, what in (("callgrind", "instructions per forwarded call (callgrind)"),
                      ("timed", "ns per forwarded call in one process (forward_cost time)"),
                      ("trace", "ns a traced call adds (forward_cost trace)")):
        if "skipped" in out.get(key, {}):
            setup.skip(what, out[key]["skipped"])
    return out


# ---------------------------------------------------------------- 6. launch

def launch_cost(setup, binaries, gpu, contenders, rounds):
    """cuabi's launch overhead measured in one process against the C floor,
    interleaved (bench/launch_cost.py), once per cuabi contender.  Per
    contender and kernel arity: each variant's ns per launch over the rounds,
    and its per-round difference to the floor; or {"skipped": why}."""
    out = {}
    script = os.path.join(BENCH, "launch_cost.py")
    loop = binaries.get("launch_loop")
    for c in contenders:
        if c.module != "py_cuabi":
            continue
        if not gpu:
            out[c.name] = {"skipped": "no GPU"}
        elif not os.path.exists(script):
            out[c.name] = {"skipped": "bench/launch_cost.py is not in this tree"}
        elif loop is None:
            out[c.name] = {"skipped": "bench/c/launch_loop.c could not be built"}
        elif setup.left() < 30:
            out[c.name] = {"skipped": f"--time-limit of {setup.args.time_limit:g} s reached"}
        else:
            out[c.name] = launch_cost_once(setup, c, script, loop, rounds)
        if "skipped" in out[c.name]:
            setup.skip(f"launch overhead in one process, {c.label}", out[c.name]["skipped"])
    return out


def launch_cost_once(setup, contender, script, loop, rounds):
    try:
        proc = subprocess.run([setup.python_for(contender), script, loop, setup.kernels,
                               str(rounds)],
                              capture_output=True, text=True, cwd=BENCH,
                              env=setup.child_env(contender), timeout=max(30, setup.left()))
    except subprocess.TimeoutExpired:
        return {"skipped": "bench/launch_cost.py ran past the time limit"}
    with open(os.path.join(setup.out, "logs", f"launch_cost-{contender.name}.log"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    try:
        raw = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"skipped": "bench/launch_cost.py failed: " + why[:300]}
    result = {"backend": raw["backend"], "rounds": raw["rounds"], "arities": {}}
    for arity, variants in raw["arities"].items():
        floor = variants["C floor"]
        result["arities"][arity] = {
            name: dict(summarize(samples), samples=samples,
                       over_floor=summarize([a - b for a, b in zip(samples, floor)]))
            for name, samples in variants.items()}
    return result


# ---------------------------------------------------------------- 4. startup

def startup_command(setup, contender, binaries):
    if contender.kind == "c":
        return [binaries[contender.name], "startup"]
    return [setup.python_for(contender), os.path.join(BENCH, "startup.py"), contender.module]


def start_once(setup, contender, binaries):
    """One fresh-process start-up measurement (a dict; "error" when it failed)."""
    try:
        proc = subprocess.run(startup_command(setup, contender, binaries), capture_output=True,
                              text=True, timeout=max(10, min(180, setup.left())),
                              env=setup.child_env(contender))
    except subprocess.TimeoutExpired as exc:
        return {"error": f"took over {exc.timeout:.0f} s"}
    return last_json(proc.stdout) or {"error": (proc.stderr.strip() or "no output")[-400:]}


def run_startup(setup, contenders, binaries, rounds, budget_s):
    samples = {c.name: [] for c in contenders}
    errors = {}
    versions = {}
    rng = random.Random(setup.args.seed)
    active = []
    # One untimed start of each first: Python writes its bytecode caches and
    # the files land in the page cache, as on any machine after the first run.
    # A library that does not import is not tried again.
    for c in contenders:
        warm = start_once(setup, c, binaries)
        if c.kind == "py" and warm.get("import_ns") is None:
            errors[c.name] = warm.get("error", "did not start")
        else:
            active.append(c)
    started = time.monotonic()
    r = 0
    while r < rounds and active and not setup.out_of_time("start-up"):
        order = list(active)
        rng.shuffle(order)
        for c in order:
            if setup.out_of_time("start-up"):
                break
            result = start_once(setup, c, binaries)
            if "version" in result:
                versions[c.name] = result["version"]
            if "error" in result:
                errors[c.name] = result["error"]
            samples[c.name].append(result)
        r += 1
        elapsed = time.monotonic() - started
        if r == 1 and rounds > 1:
            fit = int(budget_s / max(elapsed, 1e-3))
            if fit < rounds:
                rounds = max(3, fit)
                log(f"startup: {elapsed:.1f} s per round, so {rounds} rounds fit the budget")
        log(f"startup round {r}/{rounds} done ({elapsed:.0f} s)")
    out = {}
    for c in contenders:
        entry = {"samples": samples[c.name]}
        if c.name in versions:
            entry["version"] = versions[c.name]
        if c.name in errors:
            entry["error"] = errors[c.name]
        for key in ("import_ns", "ready_ns", "first_call_ns", "use_ns", "rss_start_kb",
                    "rss_import_kb", "rss_use_kb"):
            values = [s[key] for s in samples[c.name] if s.get(key) is not None]
            if values:
                entry[key] = summarize(values)
        out[c.name] = entry
    return out, r


# ---------------------------------------------------------------- 5. steady state

class Worker:
    """A contender process speaking the protocol of bench/worker.py."""

    def __init__(self, setup, contender, binaries):
        self.contender = contender
        self.name = contender.name
        if contender.kind == "c":
            command = [binaries[contender.name], "worker", setup.kernels]
        else:
            command = [setup.python_for(contender), os.path.join(BENCH, "worker.py"),
                       contender.module,
                       setup.kernels]
        self.log_path = os.path.join(setup.out, "logs", contender.name + ".log")
        self.stderr = open(self.log_path, "w")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1,
                                     env=setup.child_env(contender), cwd=REPO)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.offered, self.skipped, self.info = {}, {}, {}
        self.failure = None
        self.lost = False

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _next(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()  # its answers would come out of step from now on
            self.lost = True
            raise Lost(f"no answer in {timeout:.0f} s")
        if line is None:
            self.lost = True
            raise Lost("the process ended; see " + os.path.relpath(self.log_path, REPO))
        return line

    def handshake(self, timeout=300):
        """Reads op/skip/info lines until ready; False when the worker failed."""
        try:
            while True:
                kind, _, rest = self._next(timeout).partition(" ")
                if kind == "ready":
                    return True
                if kind == "fail":
                    self.failure = rest
                    return False
                name, _, text = rest.partition(" ")
                if kind == "op":
                    self.offered[name] = text
                elif kind == "skip":
                    self.skipped[name] = text
                elif kind == "info":
                    self.info[name] = text
        except Lost as exc:
            self.failure = f"{exc} ({self.stderr_tail()})"
            return False

    def stderr_tail(self):
        self.stderr.flush()
        try:
            with open(self.log_path) as f:
                return " ".join(f.read().split())[-300:] or "no message"
        except OSError:
            return "no message"

    def run(self, op, n, warm, timeout=120):
        """Total nanoseconds of n timed iterations (raises RuntimeError on err)."""
        self.proc.stdin.write(f"run {op.name} {n} {warm} {op.chunk} {int(op.timed_sync)}\n")
        self.proc.stdin.flush()
        while True:
            kind, _, rest = self._next(timeout).partition(" ")
            if kind == "ok":
                return int(rest)
            if kind == "err":
                raise RuntimeError(rest)

    def close(self):
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


class OutOfTime(Exception):
    pass


class Lost(Exception):
    """A worker stopped answering or ended: nothing more is asked of it."""


def calibrate(setup, worker, op):
    """(n, warm): a batch of about op.target_ms, warm-up of about a tenth."""
    n = 1
    while True:
        if setup.out_of_time("steady-state"):
            raise OutOfTime()
        ns = worker.run(op, n, 1)
        if ns >= 2e6 or n >= 1_000_000 or (ns >= 2e5 and n * (op.target_ms * 1e6 / ns) < 10):
            break
        n *= 10
    n = max(1, min(5_000_000, round(n * op.target_ms * 1e6 / max(ns, 1))))
    warm = max(1, n // 10)
    if op.chunk:
        warm = min(warm, op.chunk)
    if op.nbytes >= ops.BIG:
        warm = 1
    return n, warm


def start_workers(setup, contenders, binaries):
    workers = [Worker(setup, c, binaries) for c in contenders]  # start in parallel
    ready = []
    for w in workers:
        if w.handshake():
            ready.append(w)
            log(f"{w.name}: ready, {len(w.offered)} operations"
                + (f", skips {', '.join(sorted(w.skipped))}" if w.skipped else ""))
        else:
            setup.skip(w.contender.label, "could not start: " + (w.failure or "?"))
            w.close()
    return ready


def run_steady(setup, workers, rounds, budget_s):
    """op name -> contender name -> result dict."""
    rng = random.Random(setup.args.seed + 1)
    results = {op.name: {} for op in ops.OPERATIONS}
    plans = {}  # (contender, op) -> (n, warm)
    for w in workers:
        for op in ops.OPERATIONS:
            entry = results[op.name]
            if op.python_only and w.contender.kind != "py":
                continue
            if op.name in w.skipped or op.name not in w.offered:
                entry[w.name] = {"skipped": w.skipped.get(op.name, "not offered")}
                continue
            if w.lost:
                entry[w.name] = {"skipped": "the worker was lost earlier"}
                continue
            try:
                plans[w.name, op.name] = calibrate(setup, w, op)
            except OutOfTime:
                entry[w.name] = {"skipped": "the time limit came first"}
                continue
            except (RuntimeError, Lost) as exc:
                entry[w.name] = {"skipped": f"failed while calibrating: {exc}"}
                continue
            entry[w.name] = {"how": w.offered[op.name], "samples": [], "errors": 0,
                             "n": plans[w.name, op.name][0]}
    started = time.monotonic()
    r = 0
    while r < rounds and plans and not setup.out_of_time("steady-state"):
        for op in ops.OPERATIONS:
            order = [w for w in workers if (w.name, op.name) in plans]
            rng.shuffle(order)
            for w in order:
                if setup.out_of_time("steady-state"):
                    break
                n, warm = plans[w.name, op.name]
                entry = results[op.name][w.name]
                try:
                    ns = w.run(op, n, warm)
                except Lost as exc:
                    entry["errors"] += 1
                    entry["last_error"] = str(exc)
                    for key in [k for k in plans if k[0] == w.name]:
                        del plans[key]
                    setup.skip(f"{w.contender.label}, the rest of its batches", str(exc))
                    continue
                except RuntimeError as exc:
                    entry["errors"] += 1
                    entry["last_error"] = str(exc)
                    if entry["errors"] >= 2:
                        del plans[w.name, op.name]
                    continue
                entry["samples"].append(ns / (n * op.per_unit))
        r += 1
        elapsed = time.monotonic() - started
        if r == 1 and rounds > 1:
            fit = int(budget_s / max(elapsed, 1e-3))
            if fit < rounds:
                rounds = max(3, fit)
                log(f"steady: {elapsed:.1f} s per round, so {rounds} rounds fit the budget")
        log(f"steady round {r}/{rounds} done ({elapsed:.0f} s)")
    for per_op in results.values():
        for entry in per_op.values():
            if entry.get("samples"):
                entry.update(summarize(entry["samples"]))
            elif "samples" in entry:
                entry["skipped"] = ("every batch failed: " + entry["last_error"]
                                    if entry["errors"] else "no round ran before the time limit")
    return results, r


# ---------------------------------------------------------------- driver

def machine_info(setup, gpu):
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpu": cpu_model(), "cpus": os.cpu_count()}
    if gpu:
        info["gpu"] = gpu.get("device")
        info["driver_version"] = gpu.get("driver_version")
    info["cuabi_commit"] = source_commit()
    return info


def source_commit():
    """The commit measured: CUABI_BENCH_COMMIT where the caller knows better
    than this tree's git (a copy of a checkout made elsewhere), else HEAD,
    marked when tracked files differ from it."""
    if os.environ.get("CUABI_BENCH_COMMIT"):
        return os.environ["CUABI_BENCH_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        changed = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    return head + (" with uncommitted changes" if head and changed else "") or None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/run", description=__doc__.split("\n")[0])
    p.add_argument("--out",
                   default=os.environ.get("OUT") or os.path.join(REPO, "build", "bench-out"),
                   help="output folder for results.json, the report and logs ($OUT)")
    p.add_argument("--rounds", type=int, default=15, help="steady-state rounds (default 15)")
    p.add_argument("--startup-rounds", type=int, default=10,
                   help="fresh-process rounds (default 10)")
    p.add_argument("--startup-budget", type=float, default=120.0,
                   help="seconds the start-up phase may take; fewer rounds if needed")
    p.add_argument("--steady-budget", type=float, default=180.0,
                   help="seconds the steady-state rounds may take; fewer rounds if needed")
    p.add_argument("--time-limit", type=float, default=450.0,
                   help="seconds the whole run may take (default 450): phases stop early, "
                        "with what they have, rather than overrun it")
    p.add_argument("--quick", action="store_true", help="3 rounds of each: a smoke test")
    p.add_argument("--only", help="comma-separated contender names (default: all)")
    p.add_argument("--kernels", help="module image to load (default bench/kernels.ptx)")
    p.add_argument("--seed", type=int, default=20260, help="seed of the shuffles")
    p.add_argument("--docs", choices=("auto", "yes", "no"), default="auto",
                   help="write docs/benchmarks.md: auto = only when the GPU phases ran")
    p.add_argument("--from-json", help="no measuring: write the report from this results.json "
                                       "(and docs/ when it is a GPU run)")
    p.add_argument("--callgrind", action="store_true",
                   help="with --from-json: add the callgrind count measured on this machine")
    p.add_argument("--wheel", action="append", default=[], metavar="WHEEL",
                   help="measure cuabi as installed from this wheel (repeatable: the cp310-abi3 "
                        "wheel serves the compiled tier, the py3-none one cffi's ABI mode and "
                        "ctypes), each in a venv under OUT/venvs, instead of the source tree")
    p.add_argument("--find-links", metavar="DIR",
                   help="with --wheel: install the wheels' dependencies (cffi) into the venvs "
                        "from the wheels in DIR, offline, instead of using the system's")
    p.add_argument("--fake", nargs="?", const="auto", metavar="LIBCUDA",
                   help="self-test on the test suite's fake driver (default "
                        "build/tests/sysdriver/libcuda.so.1); the numbers mean nothing")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds = min(args.rounds, 3)
        args.startup_rounds = min(args.startup_rounds, 3)
    return args


def write_outputs(results, out_dir, docs):
    os.makedirs(out_dir, exist_ok=True)
    md, no_chart = report.write(results, out_dir)
    log(f"wrote {md}" + (f" (no chart: {no_chart})" if no_chart else " and benchmarks.png"))
    if docs:
        docs_dir = os.path.join(REPO, "docs")
        os.makedirs(docs_dir, exist_ok=True)
        for name in ("benchmarks.md", "benchmarks.png"):
            src = os.path.join(out_dir, name)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(docs_dir, name))
                log(f"copied {name} to docs/")


def report_again(args):
    """--from-json: the report from saved results; with --callgrind, first
    count the forwarded call's instructions here (a GPU machine without
    valgrind leaves that number out) and put it into the results."""
    with open(args.from_json) as f:
        results = json.load(f)
    if args.callgrind:
        setup = Setup(args)
        binaries = build_c(setup)
        counted = forward_cost(setup, binaries, gpu=None)["callgrind"]
        results.setdefault("forwarded_call", {})["callgrind"] = counted
        if "skipped" not in counted:
            results["skipped"] = [s for s in results.get("skipped", [])
                                  if not s["what"].startswith("instructions per forwarded call")]
            results.setdefault("notes", []).append(
                f"callgrind count added afterwards on {platform.node() or 'another machine'} "
                f"({cpu_model()})")
        with open(os.path.join(setup.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        log(f"wrote {os.path.join(setup.out, 'results.json')}")
    docs = args.docs == "yes" or (args.docs == "auto" and results.get("mode") == "gpu")
    write_outputs(results, os.path.abspath(args.out), docs)
    return 0


def main(argv):
    args = parse_args(argv)
    if args.from_json:
        return report_again(args)
    started = time.monotonic()
    setup = Setup(args)
    contenders = [c for c in ops.CONTENDERS
                  if not args.only or c.name in args.only.split(",")]
    log(f"output: {setup.out}")
    binaries = build_c(setup)
    cffi_note = stage_python_package(setup)
    if cffi_note:
        log(cffi_note)
    if args.wheel:
        cffi_note = "; ".join(use_wheels(setup, args.wheel, args.find_links))
        log(cffi_note)
    gpu, no_gpu = probe_gpu(setup, binaries)
    if gpu:
        log(f"GPU: {gpu.get('device')}, driver {gpu.get('driver_version')}")
    else:
        setup.skip("GPU phases (steady-state operations; first call and first use)", no_gpu)

    log("forwarded call: callgrind on the fake driver, and timed on the GPU")
    forwarded = forward_cost(setup, binaries, gpu)

    runnable = [c for c in contenders if c.kind == "py" or c.name in binaries]
    if not gpu:
        runnable = [c for c in runnable if c.kind == "py"]  # C start-up is only a first call
    log(f"startup: {args.startup_rounds} rounds of fresh processes")
    startup, startup_rounds = run_startup(setup, runnable, binaries, args.startup_rounds,
                                          args.startup_budget)
    for c in runnable:
        entry = startup[c.name]
        if not entry["samples"]:
            setup.skip(c.label, entry.get("error", "did not start"))
        elif c.kind == "py" and "ready_ns" not in entry:
            setup.skip(c.label, "imported, but could not load: " + entry.get("error", "?"))
        elif gpu and "first_call_ns" not in entry:
            setup.skip(c.label, "its first driver call failed: " + entry.get("error", "?"))

    steady, steady_rounds = {}, 0
    if gpu:
        importable = [c for c in runnable if startup[c.name]["samples"]
                      and "first_call_ns" in startup[c.name]]
        workers = start_workers(setup, importable, binaries)
        try:
            steady, steady_rounds = run_steady(setup, workers, args.rounds, args.steady_budget)
        finally:
            for w in workers:
                w.close()
        worker_info = {w.name: w.info for w in workers}
    else:
        worker_info = {}

    log("launch overhead: cuabi and the C floor in one process, interleaved")
    launches = launch_cost(setup, binaries, gpu, runnable, 40 if not args.quick else 3)

    results = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "fake" if setup.fake and gpu else "gpu" if gpu else "no-gpu",
        "machine": machine_info(setup, gpu),
        "notes": [n for n in (cffi_note,) if n],
        "settings": {"rounds": steady_rounds, "startup_rounds": startup_rounds,
                     "seed": args.seed, "quick": args.quick},
        "contenders": {c.name: {"label": c.label, "kind": c.kind, "anchor": c.anchor,
                                "info": worker_info.get(c.name, {})} for c in contenders},
        "startup": startup,
        "ops": steady,
        "forwarded_call": forwarded,
        "launch_cost": launches,
        "skipped": setup.skipped,
        "wall_s": None,
    }
    results["wall_s"] = round(time.monotonic() - started, 1)
    with open(os.path.join(setup.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    log(f"wrote {os.path.join(setup.out, 'results.json')}")
    docs = args.docs == "yes" or (args.docs == "auto" and results["mode"] == "gpu")
    if not docs:
        log(f"docs/benchmarks.md left as it is ({results['mode']} run); "
            "the report is in the output folder")
    write_outputs(results, setup.out, docs)
    log(f"done in {results['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

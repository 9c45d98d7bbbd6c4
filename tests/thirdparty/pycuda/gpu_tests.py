#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run PyCUDA's own tests so that a crash or a time limit loses nothing, and compare two runs.

``run`` runs the given pytest files (in the current folder) with ``pytest -v`` and
appends the output to ``STATE/VARIANT.log``. The outcome of every test is read back
from that log, so a run can be resumed: a second ``run`` runs only the tests that
have no outcome yet. A test during which the interpreter died (a segfault in the
driver wrapper, say) is recorded as CRASHED and the run goes on with the rest; a
run that reaches ``--deadline`` stops with status 3 and resumes next time.

``compare`` reads two such runs and says whether every test had the same outcome
in both; it writes the differences (or the identity) to ``--out``.

    gpu_tests.py run --variant cuabi --state DIR --deadline EPOCH -- test/test_driver.py ...
    gpu_tests.py compare --state DIR --out FILE libcuda cuabi
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
# pytest -v writes the test id when a test starts and its outcome when it ends.
LINE = re.compile(r"^(?P<id>\S+\.py::[^\s\[]+(?:\[[^\]]*\])?)(?:\s+(?P<outcome>%s)\b)?"
                  % "|".join(OUTCOMES))


def collect(tests: list[str], extra: list[str]) -> list[str]:
    """The test ids pytest collects from the given files, in its order."""
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
           *extra, *tests]
    result = subprocess.run(cmd, capture_output=True, text=True)
    ids = [ln.strip() for ln in result.stdout.splitlines() if "::" in ln and " " not in ln.strip()]
    if not ids:
        sys.exit("gpu_tests: pytest collected no tests (%s):\n%s%s"
                 % (" ".join(cmd), result.stdout[-3000:], result.stderr[-3000:]))
    return ids


def outcomes(log: Path) -> tuple[dict[str, str], str | None]:
    """Each test's outcome in a log (ERROR wins over an earlier PASSED), and the test
    that started last without finishing, if any."""
    seen: dict[str, str] = {}
    unfinished = None
    if not log.exists():
        return seen, None
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("==== run"):
            unfinished = None
            continue
        m = LINE.match(line)
        if not m:
            continue
        test, outcome = m.group("id").strip(), m.group("outcome")
        if outcome is None:
            unfinished = test
        else:
            if seen.get(test) != "ERROR":
                seen[test] = outcome
            unfinished = None
    return seen, unfinished


def read_lines(path: Path) -> list[str]:
    """The non-empty lines of a file, or none if it does not exist."""
    return [ln for ln in path.read_text().splitlines() if ln] if path.exists() else []


def run(variant: str, state: Path, deadline: float, tests: list[str], extra: list[str]) -> int:
    """Run (or resume) one variant; writes STATE/VARIANT.json; 0 done, 3 out of time."""
    state.mkdir(parents=True, exist_ok=True)
    ids_file, log = state / ("%s.ids" % variant), state / ("%s.log" % variant)
    crashed_file = state / ("%s.crashed" % variant)
    ids = read_lines(ids_file)
    if not ids:
        ids = collect(tests, extra)
        ids_file.write_text("\n".join(ids))
    while True:
        done, _ = outcomes(log)
        crashed = read_lines(crashed_file)
        remaining = [t for t in ids if t not in done and t not in crashed]
        if not remaining:
            break
        left = deadline - time.time()
        if left < 30:
            print("gpu_tests: %s: out of time with %d tests to go; run again to resume"
                  % (variant, len(remaining)))
            return 3
        print("gpu_tests: %s: running %d tests (%d done, %d crashed)"
              % (variant, len(remaining), len(done), len(crashed)), flush=True)
        with open(log, "a") as out:
            out.write("==== run at %s\n" % time.strftime("%H:%M:%S"))
            out.flush()
            cmd = [sys.executable, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider",
                   *extra, *remaining]
            try:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    timeout=left - 20).returncode
            except subprocess.TimeoutExpired:
                rc = None
        if rc is None:
            continue  # the deadline check above ends the loop
        after, unfinished = outcomes(log)
        if rc in (0, 1) and not [t for t in remaining if t not in after]:
            continue
        # The interpreter died (or pytest stopped): blame the test that was running.
        culprit = unfinished or next((t for t in remaining if t not in after), None)
        if culprit is None:
            break
        print("gpu_tests: %s: pytest ended with status %s during %s; recorded as CRASHED"
              % (variant, rc, culprit), flush=True)
        with open(crashed_file, "a") as f:
            f.write(culprit + "\n")
    done, _ = outcomes(log)
    crashed = read_lines(crashed_file)
    result = {t: done.get(t, "CRASHED" if t in crashed else "NOT RUN") for t in ids}
    (state / ("%s.json" % variant)).write_text(json.dumps(result, indent=1) + "\n")
    counts = Counter(result.values())
    print("gpu_tests: %s: %s" % (variant, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))))
    return 0


def compare(state: Path, out: Path, reference: str, candidate: str) -> int:
    """0 if every test had the same outcome in both runs, 1 if not, 2 if a run is missing."""
    runs = {}
    for variant in (reference, candidate):
        path = state / ("%s.json" % variant)
        if not path.exists():
            out.write_text("no complete run of %s yet (%s); run gpu_compare again\n" % (variant, path))
            print(out.read_text(), end="")
            return 2
        runs[variant] = json.loads(path.read_text())
    a, b = runs[reference], runs[candidate]
    lines = ["# PyCUDA's tests: %s against %s" % (candidate, reference), ""]
    for variant, res in runs.items():
        counts = Counter(res.values())
        lines.append("- %s: %d tests: %s" % (variant, len(res),
                                             ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))))
    differ = sorted(t for t in set(a) | set(b) if a.get(t, "ABSENT") != b.get(t, "ABSENT"))
    lines.append("")
    if differ:
        lines.append("DIFFERENT: %d tests have different outcomes:" % len(differ))
        lines.append("")
        lines.append("| test | %s | %s |" % (reference, candidate))
        lines.append("| --- | --- | --- |")
        lines += ["| %s | %s | %s |" % (t, a.get(t, "ABSENT"), b.get(t, "ABSENT")) for t in differ]
    else:
        lines.append("IDENTICAL: every one of the %d tests had the same outcome in both runs." % len(a))
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text(), end="")
    return 1 if differ else 0


def main() -> None:
    """Command line: ``run`` or ``compare``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--variant", required=True)
    p_run.add_argument("--state", type=Path, required=True)
    p_run.add_argument("--deadline", type=float, required=True, help="seconds since the epoch")
    p_run.add_argument("--pytest-arg", action="append", default=[], dest="extra",
                       help="an extra pytest argument (repeatable), e.g. --timeout=300")
    p_run.add_argument("tests", nargs="+")
    p_cmp = sub.add_parser("compare")
    p_cmp.add_argument("--state", type=Path, required=True)
    p_cmp.add_argument("--out", type=Path, required=True)
    p_cmp.add_argument("reference")
    p_cmp.add_argument("candidate")
    args = parser.parse_args()
    if args.command == "run":
        sys.exit(run(args.variant, args.state, args.deadline, args.tests, args.extra))
    sys.exit(compare(args.state, args.out, args.reference, args.candidate))


if __name__ == "__main__":
    main()

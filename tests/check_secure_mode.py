#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""In secure mode (a set-user-ID program) cuabi ignores CUABI_LIBCUDA, as
docs/abi.md promises (it reads it with secure_getenv, not getenv).

Copies secure_probe, libcuabi.so.1 and the fake driver into a fresh folder
readable by everyone, runs the probe once as it is (it must load the fake
named by CUABI_LIBCUDA: the control) and once as a set-user-ID copy owned by
'nobody' (glibc's AT_SECURE is then 1: real and effective user differ),
which must not use the fake and whose report must not name it. Needs root
(to give the copy to 'nobody'); skipped, saying so, otherwise.

usage: check_secure_mode.py SECURE_PROBE LIBCUABI FAKE_DRIVER
"""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77


def run(probe, libcuabi, fake):
    env = dict(os.environ, CUABI_LIBCUDA=fake)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([probe, libcuabi], env=env, capture_output=True, text=True, timeout=60)
    head, _, report = p.stdout.partition("report=\n")
    values = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    values["report"] = report
    values["rc"] = p.returncode
    values["stderr"] = p.stderr
    return values


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    if os.geteuid() != 0:
        print("skipped: making a set-user-ID copy of the probe for another user needs root")
        return SKIPPED
    nobody = pwd.getpwnam("nobody").pw_uid
    folder = tempfile.mkdtemp(prefix="cuabi-secure-")
    try:
        os.chmod(folder, 0o755)
        copies = []
        for source, name, mode in ((sys.argv[1], "secure_probe", 0o755),
                                   (sys.argv[2], "libcuabi.so.1", 0o644),
                                   (sys.argv[3], "libfakecuda.so", 0o644)):
            copies.append(os.path.join(folder, name))
            shutil.copyfile(os.path.realpath(source), copies[-1])
            os.chmod(copies[-1], mode)
        probe, libcuabi, fake = copies

        control = run(probe, libcuabi, fake)
        print("as it is:            AT_SECURE=%s status=%s path=%s"
              % (control.get("AT_SECURE"), control.get("status"), control.get("path")))
        if control["rc"] != 0 or control.get("path") != fake:
            print("the control run did not load the fake named by CUABI_LIBCUDA:\n%s%s%s"
                  % (control["report"], control.get("error", ""), control["stderr"]))
            print("0 passed, 1 failed")
            return 1

        os.chown(probe, nobody, -1)
        os.chmod(probe, 0o4755)
        secure = run(probe, libcuabi, fake)
        print("set-user-ID nobody:  AT_SECURE=%s status=%s path=%s"
              % (secure.get("AT_SECURE"), secure.get("status"), secure.get("path")))
        if secure["rc"] != 0:
            print("the set-user-ID probe failed: %s%s" % (secure.get("error", ""), secure["stderr"]))
            print("0 passed, 1 failed")
            return 1
        if secure.get("AT_SECURE") != "1":
            print("skipped: the set-user-ID copy did not run in secure mode (is %s mounted nosuid?)"
                  % folder)
            return SKIPPED
        problems = []
        if secure.get("path") == fake:
            problems.append("the set-user-ID probe loaded the driver CUABI_LIBCUDA names")
        if fake in secure["report"]:
            problems.append("its report names the driver CUABI_LIBCUDA names")
        for p in problems:
            print(p)
        if problems:
            print("report:\n" + secure["report"])
        print("%d passed, %d failed" % (not problems, bool(problems)))
        return 1 if problems else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds and runs one language's example against an installed cuabi, as a user would.

Each example (tests/languages/<lang>/) takes the PTX file saxpy.ptx, initialises CUDA,
allocates, copies, launches saxpy (the fake driver runs its host kernel of that name), copies
back and prints "saxpy on 1000 elements: correct". It is run twice:

  1. on the driver given (CUABI_LIBCUDA=<driver>: the fake in the tests, the real
     libcuda.so.1 on a GPU machine): the round trip must succeed;
  2. with no driver (CUABI_LIBCUDA=/nonexistent/libcuda.so.1): it must exit with 3 and print
     "cuInit: CUABI_ERROR_DRIVER_NOT_FOUND: <the code's text>".

The language's toolchain must be installed (.ci/setup.sh installs each); where it is not,
the test is skipped (exit 77) and says which program is missing.

--prebuilt runs the programs a previous run left in --work, without building anything: the
GPU machine has no Rust, Go or Zig toolchain, so they are built here (against the fake) and
carried there with the prefix, at the same path. Languages that need a runtime to run
(LuaJIT, Java, Node) still need it there.

usage: run_language.py LANG --source DIR --prefix DIR --driver LIB --work DIR [--prebuilt]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SKIPPED = 77
NO_DRIVER = "/nonexistent/libcuda.so.1"


class Skip(Exception):
    """The language's toolchain is not installed here."""


class Failure(Exception):
    pass


def need(program: str, hint: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise Skip(f"{program} is not installed ({hint}; .ci/setup.sh installs it)")
    return path


def run(cmd: list[str], env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    if result.stdout:
        print(result.stdout, end="")
    if result.stderr:
        print(result.stderr, end="", file=sys.stderr)
    return result


PREBUILT = False  # --prebuilt: the programs are in --work already


def tool(program: str, hint: str) -> str:
    """A program needed only to build (a compiler): not looked for with --prebuilt."""
    return program if PREBUILT else need(program, hint)


def build(cmd: list[str], env: dict, cwd: Path | None = None) -> None:
    if PREBUILT:
        print("(prebuilt, not run)", " ".join(str(c) for c in cmd), flush=True)
        return
    if run(cmd, env, cwd).returncode != 0:
        raise Failure(f"building failed: {' '.join(str(c) for c in cmd)}")


class Context:
    def __init__(self, args):
        self.source = Path(args.source).resolve()
        self.here = self.source / "tests" / "languages"
        self.prefix = Path(args.prefix).resolve()
        self.driver = str(Path(args.driver).resolve())
        self.work = Path(args.work).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.ptx = self.here / "saxpy.ptx"
        self.libdir = next(p.parent for p in self.prefix.glob("lib*/libcuabi.so.1"))
        self.pkgconfig = self.libdir / "pkgconfig"
        self.table = json.loads((self.prefix / "share/cuabi/driver_api.json").read_text())
        env = dict(os.environ)
        env.pop("CUABI_LIBCUDA", None)
        env["PKG_CONFIG_PATH"] = str(self.pkgconfig)
        env["LD_LIBRARY_PATH"] = str(self.libdir)
        self.env = env

    def pkg_config(self, *args: str) -> list[str]:
        out = subprocess.run(["pkg-config", *args, "cuabi"], env=self.env, capture_output=True,
                             text=True, check=True).stdout
        return out.split()

    def variable(self, name: str) -> str:
        return self.pkg_config(f"--variable={name}")[0]

    def check_runs(self, label: str, cmd: list, cwd: Path | None = None, env: dict | None = None) -> None:
        """The round trip on the driver given, then the no-driver message."""
        env = dict(env or self.env)
        first = run(cmd, dict(env, CUABI_LIBCUDA=self.driver), cwd)
        if first.returncode != 0 or "saxpy on 1000 elements: correct" not in first.stdout:
            raise Failure(f"{label}: the round trip on {self.driver} failed (status {first.returncode})")
        text = next(c["text"] for c in self.table["own_codes"] if c["name"] == "CUABI_ERROR_DRIVER_NOT_FOUND")
        expected = f"cuInit: CUABI_ERROR_DRIVER_NOT_FOUND: {text}"
        none = run(cmd, dict(env, CUABI_LIBCUDA=NO_DRIVER), cwd)
        if none.returncode != 3 or expected not in none.stdout:
            raise Failure(f"{label}: without a driver, expected status 3 and the line\n  {expected}\n"
                          f"got status {none.returncode}")
        print(f"{label}: round trip on {self.driver}, and the no-driver message: ok")


# ------------------------------------------------------------------------------- languages


def lang_c(ctx: Context) -> None:
    flags = ctx.pkg_config("--cflags", "--libs")
    for cc in ("gcc", "clang"):
        tool(cc, "Debian: build-essential, clang")
        exe = ctx.work / f"saxpy-{cc}"
        build([cc, "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", ctx.here / "c/saxpy.c",
               *flags, "-o", exe], ctx.env)
        ctx.check_runs(f"C ({cc})", [exe, ctx.ptx])


def lang_cpp(ctx: Context) -> None:
    flags = ctx.pkg_config("--cflags", "--libs")
    tool("g++", "Debian: g++")
    builds = [("g++", std) for std in ("c++11", "c++14", "c++17", "c++20", "c++23")]
    if PREBUILT or shutil.which("clang++"):
        builds += [("clang++", "c++11"), ("clang++", "c++2b")]   # clang 14 spells C++23 c++2b
    for cxx, std in builds:
        exe = ctx.work / f"saxpy-{cxx}-{std}"
        build([cxx, f"-std={std}", "-Wall", "-Wextra", "-pedantic", "-Werror",
               ctx.here / "cpp/saxpy.cpp", *flags, "-o", exe], ctx.env)
        ctx.check_runs(f"C++ ({cxx} -std={std})", [exe, ctx.ptx])


def lang_rust(ctx: Context) -> None:
    cargo = tool("cargo", "Debian: cargo")
    crate = ctx.variable("rust_crate")
    project = ctx.work / "saxpy"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(ctx.here / "rust/src", project / "src")
    text = (ctx.here / "rust/Cargo.toml.in").read_text().replace("@CUABI_RUST_CRATE@", crate)
    (project / "Cargo.toml").write_text(text)
    env = dict(ctx.env, CARGO_TARGET_DIR=str(ctx.work / "target"))
    # the crate's own tests first (every record's layout against driver_api.json), on a copy:
    # cargo writes Cargo.lock beside the manifest of the package it tests
    copy = ctx.work / "cuabi-sys"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(crate, copy)
    build([cargo, "test", "--offline", "-j2"], dict(env, CARGO_TARGET_DIR=str(ctx.work / "crate-target")),
          cwd=copy)
    build([cargo, "build", "--offline", "-j2"], env, cwd=project)
    ctx.check_runs("Rust (cuabi-sys)", [ctx.work / "target/debug/saxpy", ctx.ptx])


def lang_go(ctx: Context) -> None:
    go = tool("go", "Debian: golang-go")
    package = ctx.variable("go_package")
    project = ctx.work / "saxpy"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir()
    shutil.copy(ctx.here / "go/main.go", project / "main.go")
    text = (ctx.here / "go/go.mod.in").read_text().replace("@CUABI_GO_PACKAGE@", package)
    (project / "go.mod").write_text(text)
    env = dict(ctx.env, GOCACHE=str(ctx.work / "go-cache"), GOPATH=str(ctx.work / "go-path"),
               GOPROXY="off", GOFLAGS="-mod=mod", GO111MODULE="on", CGO_ENABLED="1")
    build([go, "vet", "."], env, cwd=project)
    build([go, "build", "-o", ctx.work / "saxpy-go", "."], env, cwd=project)
    ctx.check_runs("Go (cgo)", [ctx.work / "saxpy-go", ctx.ptx])


def zig_command() -> list[str]:
    if PREBUILT:
        return ["zig"]
    for python in (sys.executable, shutil.which("python3")):
        if python and subprocess.run([python, "-m", "ziglang", "version"], capture_output=True).returncode == 0:
            return [python, "-m", "ziglang"]
    if shutil.which("zig"):
        return ["zig"]
    raise Skip("zig is not installed (pip install ziglang==0.13.0; .ci/setup.sh installs it)")


def lang_zig(ctx: Context) -> None:
    zig = zig_command()
    include = ctx.variable("includedir")
    env = dict(ctx.env, ZIG_LOCAL_CACHE_DIR=str(ctx.work / "zig-cache"),
               ZIG_GLOBAL_CACHE_DIR=str(ctx.work / "zig-global-cache"))
    exe = ctx.work / "saxpy-zig"
    build([*zig, "build-exe", ctx.here / "zig/saxpy.zig", "-lc", "-lcuabi", f"-I{include}",
           f"-L{ctx.libdir}", f"-femit-bin={exe}"], env)
    ctx.check_runs("Zig (@cImport)", [exe, ctx.ptx])
    exe_cc = ctx.work / "saxpy-zig-cc"
    build([*zig, "cc", "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", ctx.here / "c/saxpy.c",
           f"-I{include}", f"-L{ctx.libdir}", "-lcuabi", "-o", exe_cc], env)
    ctx.check_runs("C (zig cc)", [exe_cc, ctx.ptx])


def lang_lua(ctx: Context) -> None:
    luajit = need("luajit", "Debian: luajit")
    module = Path(ctx.variable("lua_module"))
    env = dict(ctx.env, LUA_PATH=f"{module.parent}/?.lua;;",
               CUABI_LIBRARY=str(ctx.libdir / "libcuabi.so.1"))
    ctx.check_runs("LuaJIT", [luajit, ctx.here / "lua/saxpy.lua", ctx.ptx], env=env)


def lang_java(ctx: Context) -> None:
    javac = tool("javac", "Debian: default-jdk-headless")
    java = need("java", "Debian: default-jdk-headless")
    jna = Path("/usr/share/java/jna.jar")
    if not jna.exists():
        raise Skip(f"{jna} is missing (Debian: libjna-java; .ci/setup.sh installs it)")
    classes = ctx.work / "classes"
    build([javac, "-d", classes, "-cp", jna, ctx.here / "java/Saxpy.java"], ctx.env)
    ctx.check_runs("Java (JNA)", [java, "-cp", f"{jna}:{classes}", f"-Djna.library.path={ctx.libdir}",
                                  "Saxpy", ctx.ptx])


def node_headers(node: str) -> Path:
    for folder in (Path(node).resolve().parent.parent / "include/node", Path("/usr/include/node")):
        if (folder / "node_api.h").exists():
            return folder
    raise Skip("node_api.h is not installed (Debian: libnode-dev; .ci/setup.sh installs it)")


def lang_node(ctx: Context) -> None:
    node = need("node", "Debian: nodejs")
    headers = node_headers(node)
    tool("gcc", "Debian: build-essential")
    addon = ctx.work / "cuabi.node"
    build(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{headers}",
           ctx.here / "node/cuabi_node.c", *ctx.pkg_config("--cflags", "--libs"), "-o", addon], ctx.env)
    ctx.check_runs("Node.js (Node-API addon around cuabi_call)",
                   [node, ctx.here / "node/saxpy.cjs", addon, ctx.variable("driver_api_json"), ctx.ptx])


LANGUAGES = {"c": lang_c, "cpp": lang_cpp, "rust": lang_rust, "go": lang_go, "zig": lang_zig,
             "lua": lang_lua, "java": lang_java, "node": lang_node}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lang", choices=sorted(LANGUAGES))
    ap.add_argument("--source", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--driver", required=True,
                    help="the driver for the round trip: the fake (tests), or a real libcuda.so.1")
    ap.add_argument("--work", required=True)
    ap.add_argument("--prebuilt", action="store_true",
                    help="run the programs a previous run built in --work; build nothing")
    args = ap.parse_args()
    global PREBUILT
    PREBUILT = args.prebuilt
    started = time.monotonic()
    try:
        LANGUAGES[args.lang](Context(args))
    except Skip as exc:
        print(f"skipped: {exc}")
        return SKIPPED
    except Failure as exc:
        print(f"FAILED: {exc}")
        return 1
    print(f"{args.lang}: passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

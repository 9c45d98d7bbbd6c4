# SPDX-License-Identifier: Apache-2.0
"""results.json -> benchmarks.md (tables, targets) and benchmarks.png (chart).

Used by bench/runner.py after a run, and by `bench/run --from-json FILE` to
redo the report from saved results.  The Markdown starts with the hand-written
method text of bench/method.md."""

import os

import ops

BENCH = os.path.dirname(os.path.abspath(__file__))
PY_CUABI = ("cuabi_cffi", "cuabi_cffi_abi", "cuabi_ctypes")


# ---------------------------------------------------------------- formatting

def fmt_time(ns):
    if ns is None:
        return "–"
    for unit, scale in (("ns", 1), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)):
        if abs(ns) < 1000 * scale or unit == "s":
            value = ns / scale
            return f"{value:.3g} {unit}" if abs(value) >= 1 else f"{value:.2g} {unit}"


def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}×" if x < 10 else f"{x:.0f}×"


def fmt_delta(ns):
    return "–" if ns is None else ("+" if ns >= 0 else "−") + fmt_time(abs(ns))


def fmt_mib(kb):
    return "–" if kb is None else f"{kb / 1024:.0f} MiB"


def spread(entry):
    return f"{fmt_time(entry['p25'])} – {fmt_time(entry['p75'])}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def label(results, name):
    c = results.get("contenders", {}).get(name)
    return c["label"] if c else ops.CONTENDER[name].label if name in ops.CONTENDER else name


# ---------------------------------------------------------------- lookups

def median(results, op, contender):
    entry = results.get("ops", {}).get(op, {}).get(contender, {})
    return entry.get("median")


def startup_median(results, contender, key):
    return results.get("startup", {}).get(contender, {}).get(key, {}).get("median")


def ratio(a, b):
    return a / b if a is not None and b else None


# ---------------------------------------------------------------- targets

def targets(results):
    """Rows of (target, measured, ratio, verdict)."""
    rows = []

    fake = results.get("mode") == "fake"

    def verdict(ok, missing_why, fake_anyway=False):
        if ok is None:
            return "not measured" + (f" ({missing_why})" if missing_why else "")
        return ("**met**" if ok else "**not met**") + (
            " (fake driver)" if fake and not fake_anyway else "")

    def missing(op, *contenders):
        """Why a comparison on op has no number."""
        if results.get("mode") == "no-gpu":
            return "no GPU in this run"
        absent = [label(results, c) for c in contenders if median(results, op, c) is None]
        return ", ".join(absent) + " not measured" if absent else None

    for name in PY_CUABI:
        imp = startup_median(results, name, "import_ns")
        ready = startup_median(results, name, "ready_ns")
        measured = fmt_time(imp) + (f" (ready to call: {fmt_time(ready)})" if ready else "")
        rows.append((f"`import cuabi` ≤ 15 ms, {label(results, name)}", measured,
                     fmt_ratio(ratio(imp, 15e6)) + " of the bound" if imp else "–",
                     verdict(None if imp is None else imp <= 15e6, "cuabi did not import")))

    bindings = median(results, "ctx_get_current", "cuda_bindings")
    for name, bound in (("cuabi_cffi", 1.0), ("cuabi_ctypes", 2.5)):
        mine = median(results, "ctx_get_current", name)
        r = ratio(mine, bindings)
        rows.append((f"cuCtxGetCurrent through cuabi.driver ≤ {bound:g}× cuda.bindings, "
                     f"{label(results, name)}",
                     f"{fmt_time(mine)} vs {fmt_time(bindings)}", fmt_ratio(r),
                     verdict(None if r is None else r <= bound,
                             missing("ctx_get_current", name, "cuda_bindings"))))

    for op, arity in (("launch_3", "3"), ("launch_16", "16")):
        for name in PY_CUABI:
            lc = results.get("launch_cost", {}).get(name, {})
            variants = lc.get("arities", {}).get(arity, {})
            mine, floor = variants.get("cuabi.launch"), variants.get("C floor")
            over = mine["over_floor"]["median"] if mine else None
            measured = "–" if over is None else (
                f"{fmt_time(mine['median'])} vs {fmt_time(floor['median'])} ({fmt_delta(over)})")
            why = lc.get("skipped") or ("no GPU in this run" if results.get("mode") == "no-gpu"
                                        else "not in this run's results")
            rows.append((f"{ops.OPERATION[op].label} via Kernel/launch ≤ C floor + 0.3 µs, "
                         f"one process, interleaved, {label(results, name)}", measured,
                         "–" if over is None else fmt_ratio(ratio(mine["median"], floor["median"]))
                         + " of the floor",
                         verdict(None if over is None else over <= 300, why)))
        floor = median(results, op, ops.FLOOR)
        for name in PY_CUABI:
            mine = median(results, op, name)
            delta = None if mine is None or floor is None else mine - floor
            rows.append((f"{ops.OPERATION[op].label}, separate processes (the tables below; "
                         f"reported), {label(results, name)}",
                         f"{fmt_time(mine)} vs {fmt_time(floor)} ({fmt_delta(delta)})",
                         "–" if delta is None else fmt_ratio(ratio(mine, floor)) + " of the floor",
                         "reported" if delta is not None else
                         verdict(None, missing(op, name, ops.FLOOR))))

    direct = median(results, "ctx_get_current", "c_direct")
    forwarded = median(results, "ctx_get_current", "c_cuabi")
    delta = None if direct is None or forwarded is None else forwarded - direct
    rows.append(("forwarded C call `cuabi_cuCtxGetCurrent` ≤ direct + 2 ns, real driver, "
                 "separate processes (the tables below)",
                 f"{fmt_time(forwarded)} vs {fmt_time(direct)} ({fmt_delta(delta)})",
                 fmt_ratio(ratio(forwarded, direct)),
                 verdict(None if delta is None else delta <= 2,
                         missing("ctx_get_current", "c_cuabi", "c_direct"))))

    fc = results.get("forwarded_call", {})
    timed = fc.get("timed", {})
    over = timed.get("overhead_ns")
    rows.append(("forwarded C call ≤ direct + 2 ns, real driver, one process, interleaved "
                 "(`forward_cost time`)",
                 "–" if over is None else
                 f"{fmt_time(timed.get('forwarded_ns'))} vs {fmt_time(timed.get('direct_ns'))} "
                 f"({fmt_delta(over)})",
                 fmt_ratio(ratio(timed.get("forwarded_ns"), timed.get("direct_ns"))),
                 verdict(None if over is None else over <= 2, timed.get("skipped"))))

    cg = fc.get("callgrind", {})
    count = cg.get("overhead_instructions")
    rows.append(("forwarded C call ≤ 10 instructions over direct (callgrind, fake driver)",
                 "–" if count is None else
                 f"+{count:g} ({cg.get('forwarded_instructions', 0):g} vs "
                 f"{cg.get('direct_instructions', 0):g} per call)",
                 "–" if count is None else fmt_ratio(count / 10) + " of the bound",
                 verdict(None if count is None else count <= 10, cg.get("skipped"), True)))

    traced = fc.get("trace", {})
    over = traced.get("overhead_ns")
    rows.append(("a C call traced (`CUABI_TRACE`, lines to /dev/null; `forward_cost trace`, "
                 f"{traced.get('driver', 'driver')} driver; reported, no bound)",
                 "–" if over is None else
                 f"{fmt_time(traced.get('traced_ns'))} vs {fmt_time(traced.get('untraced_ns'))} "
                 f"({fmt_delta(over)})",
                 fmt_ratio(ratio(traced.get("traced_ns"), traced.get("untraced_ns"))),
                 "reported" if over is not None else verdict(None, traced.get("skipped"))))

    first_direct = startup_median(results, "c_direct", "first_call_ns")
    first_cuabi = startup_median(results, "c_cuabi", "first_call_ns")
    rows.append(("first call: `cuabi_cuInit(0)` vs `dlopen` + `cuInit(0)` (reported, no bound)",
                 f"{fmt_time(first_cuabi)} vs {fmt_time(first_direct)}",
                 fmt_ratio(ratio(first_cuabi, first_direct)), "reported"))
    return rows


# ---------------------------------------------------------------- sections

def section_run(results):
    m = results.get("machine", {})
    s = results.get("settings", {})
    lines = ["## This run", ""]
    lines.append(f"- {results.get('created', '?')}, cuabi commit `{m.get('cuabi_commit', '?')}`, "
                 f"{results.get('wall_s', '?')} s wall time")
    if results.get("mode") == "fake":
        lines.append("- **Fake driver** (`--fake`): a self-test of the pipeline; the numbers "
                     "say nothing about a GPU")
    if m.get("gpu"):
        lines.append(f"- GPU: {m['gpu']}, driver CUDA version {m.get('driver_version')}")
    else:
        lines.append("- **No GPU**: only what runs without one was measured (see Skipped)")
    lines.append(f"- CPU: {m.get('cpu', '?')} ({m.get('cpus', '?')} logical), "
                 f"{m.get('platform', '?')}")
    lines.append(f"- Python {m.get('python', '?')}; {s.get('rounds', 0)} steady-state rounds, "
                 f"{s.get('startup_rounds', 0)} fresh-process rounds"
                 + (" (--quick: a smoke test, not a measurement)" if s.get("quick") else ""))
    for note in results.get("notes", []):
        lines.append(f"- {note}")
    versions = []
    for name, entry in results.get("startup", {}).items():
        if entry.get("version"):
            versions.append(f"{label(results, name)} {entry['version']}")
    if versions:
        lines.append("- Versions: " + "; ".join(versions))
    return "\n".join(lines)


def section_targets(results):
    return "## Targets\n\n" + table(("target", "measured", "ratio", "verdict"), targets(results))


def section_launch_cost(results):
    """The launch targets' own measurement: bench/launch_cost.py's table."""
    measured = {name: lc for name, lc in results.get("launch_cost", {}).items()
                if "arities" in lc}
    if not measured:
        return None
    lines = ["## Launch overhead in one process",
             "",
             "The C floor (`bench/c/launch_loop.c`, loaded into the Python process) and "
             "`cuabi.launch` take turns in one process, in a new random order "
             "each round; *over the floor* is the median (and p25 – p75) of each round's "
             "difference, so drift that hits a round hits every variant.  Written as a user "
             "writes it: `launch(stream, config, kernel, a0, …)`, arguments ints and floats, "
             "chunks of 256 launches each followed by an untimed synchronisation."]
    for name, lc in measured.items():
        rows = []
        for arity, variants in lc["arities"].items():
            for variant, v in variants.items():
                o = v["over_floor"]
                rows.append((f"{arity} arguments", variant, fmt_time(v["median"]),
                             f"{fmt_time(v['p25'])} – {fmt_time(v['p75'])}",
                             "–" if variant == "C floor" else
                             f"{fmt_delta(o['median'])} ({fmt_delta(o['p25'])} – "
                             f"{fmt_delta(o['p75'])})"))
        lines += ["", f"**{label(results, name)}** ({lc['backend']} backend, {lc['rounds']} rounds)",
                  "", table(("kernel", "launch", "median", "p25 – p75", "over the floor"), rows)]
    return "\n".join(lines)


def section_summary(results):
    """cuabi (cffi) against the floor and each anchor, one row per operation."""
    if not results.get("ops"):
        return ""
    anchors = [c.name for c in ops.CONTENDERS if c.anchor]
    header = ["operation", "C floor", "cuabi (cffi)", "÷ C floor"] + [
        "÷ " + label(results, a) for a in anchors]
    rows = []
    for op in ops.OPERATIONS:
        if op.python_only:
            continue
        mine = median(results, op.name, "cuabi_cffi")
        if mine is None:
            continue
        floor = median(results, op.name, ops.FLOOR)
        rows.append([op.label, fmt_time(floor), fmt_time(mine), fmt_ratio(ratio(mine, floor))] +
                    [fmt_ratio(ratio(mine, median(results, op.name, a))) for a in anchors])
    if not rows:
        return ""
    return ("## cuabi against the others\n\n"
            "cuabi (cffi backend)'s median time divided by each contender's: below 1× "
            "cuabi is faster, – where one of the two cannot do the operation.\n\n"
            + table(header, rows))


def section_startup(results):
    rows = []
    for c in ops.CONTENDERS:
        entry = results.get("startup", {}).get(c.name)
        if not entry or not entry.get("samples"):
            continue
        def cell(key):
            e = entry.get(key)
            return "–" if e is None else f"{fmt_time(e['median'])} ({spread(e)})"
        rss = lambda key: fmt_mib((entry.get(key) or {}).get("median"))
        rows.append([label(results, c.name), cell("import_ns"), cell("ready_ns"),
                     cell("first_call_ns"), cell("use_ns"), rss("rss_start_kb"),
                     rss("rss_import_kb"), rss("rss_use_kb")])
    if not rows:
        return ""
    return ("## Start-up, in fresh processes\n\n"
            "Median (p25 – p75) over the fresh-process rounds.  *ready* (the library loaded, "
            "for one that imports lazily), *first driver call* (the driver initialised, device 0 "
            "found) and *first use* (a current context and a 1 MiB allocation) count from before "
            "the import.  RSS: resident memory before the import, once ready, and after first "
            "use.\n\n"
            + table(("contender", "import", "ready", "first driver call", "first use",
                     "RSS before", "RSS when ready", "RSS after first use"), rows))


def section_ops(results):
    if not results.get("ops"):
        return ""
    parts = ["## Steady state\n\nMedian over the rounds of the time per operation "
             "(each round: one batch per contender after warm-up), its spread (p25 – p75 and "
             "min – max over rounds) and its ratio to the C program calling libcuda directly."]
    for group, title in ops.GROUPS:
        members = [op for op in ops.OPERATIONS if op.group == group]
        if not any(results["ops"].get(op.name) for op in members):
            continue
        parts.append(f"### {title}")
        for op in members:
            per_op = results["ops"].get(op.name, {})
            if not per_op:
                continue
            floor = median(results, op.name, ops.FLOOR)
            header = ["contender", "median", "p25 – p75", "min – max", "× C floor",
                      "over C floor"]
            if op.nbytes >= ops.BIG:
                header.append("GB/s")
            rows, skipped = [], []
            for c in ops.CONTENDERS:
                entry = per_op.get(c.name)
                if entry is None:
                    continue
                if "median" not in entry:
                    skipped.append(f"{label(results, c.name)}: {entry.get('skipped', '?')}")
                    continue
                m = entry["median"]
                row = [label(results, c.name), fmt_time(m), spread(entry),
                       f"{fmt_time(entry['min'])} – {fmt_time(entry['max'])}",
                       fmt_ratio(ratio(m, floor)),
                       fmt_delta(None if floor is None else m - floor)]
                if op.nbytes >= ops.BIG:
                    row.append(f"{op.nbytes / m:.1f}")
                rows.append(row)
            parts.append(f"**{op.label}**\n\n" + (table(header, rows) if rows else "(nobody)"))
            if skipped:
                parts.append("Not measured: " + "; ".join(skipped) + ".")
    return "\n\n".join(parts)


def section_how(results):
    """What each contender calls for each operation, folded away."""
    lines = []
    for op in ops.OPERATIONS:
        per_op = results.get("ops", {}).get(op.name, {})
        hows = [(label(results, c.name), per_op[c.name]["how"]) for c in ops.CONTENDERS
                if c.name in per_op and per_op[c.name].get("how")]
        if hows:
            lines.append(f"- **{op.label}**: " + "; ".join(f"{who}: `{how}`" for who, how in hows))
    if not lines:
        return ""
    return ("<details><summary>What each contender calls, per operation</summary>\n\n"
            + "\n".join(lines) + "\n\n</details>")


def section_skipped(results):
    items = results.get("skipped", [])
    if not items:
        return ""
    return "## Skipped\n\n" + "\n".join(f"- {s['what']}: {s['why']}" for s in items)


def markdown(results, chart):
    with open(os.path.join(BENCH, "method.md")) as f:
        method = f.read().strip()
    parts = [method, section_run(results)]
    if chart:
        parts.append("![benchmark chart](benchmarks.png)")
    parts += [section_targets(results), section_launch_cost(results), section_summary(results),
              section_startup(results),
              section_ops(results), section_how(results), section_skipped(results)]
    parts.append("<!-- generated by bench/run from results.json; edit bench/method.md or "
                 "bench/report.py, not this file -->")
    return "\n\n".join(p for p in parts if p) + "\n"


# ---------------------------------------------------------------- chart

CHART_PANELS = [
    ("Trivial calls and launches (per call, log scale)", "time",
     ["ctx_get_current", "device_get_attribute", "event_query", "stream_query",
      "event_create_destroy", "launch_0", "launch_3", "launch_16"]),
    ("Launch cost over the C floor, separate processes (ns; dashed: the 0.3 µs bound, "
     "judged in one process: see the tables)", "delta",
     ["launch_0", "launch_3", "launch_16"]),
    ("Graphs, small copies, allocation (log scale)", "time",
     ["graph_instantiate", "graph_launch", "h2d_4k_pinned", "d2h_4k_pinned",
      "h2d_4k_pageable", "d2h_4k_pageable", "alloc_free_1m"]),
    ("256 MiB copies (GB/s, higher is better)", "bandwidth",
     ["h2d_256m_pinned", "d2h_256m_pinned", "h2d_256m_pageable", "d2h_256m_pageable",
      "d2d_256m"]),
]

SHORT = {"ctx_get_current": "ctx get\ncurrent", "device_get_attribute": "device\nattribute",
         "event_query": "event\nquery", "stream_query": "stream\nquery",
         "event_create_destroy": "event\ncreate+destroy", "launch_0": "launch\n0 args",
         "launch_3": "launch\n3 args", "launch_16": "launch\n16 args",
         "graph_instantiate": "graph\ninstantiate", "graph_launch": "graph launch\nper node",
         "h2d_4k_pinned": "H2D 4K\npinned", "d2h_4k_pinned": "D2H 4K\npinned",
         "h2d_4k_pageable": "H2D 4K\npageable", "d2h_4k_pageable": "D2H 4K\npageable",
         "alloc_free_1m": "alloc+free\n1 MiB", "h2d_256m_pinned": "H2D\npinned",
         "d2h_256m_pinned": "D2H\npinned", "h2d_256m_pageable": "H2D\npageable",
         "d2h_256m_pageable": "D2H\npageable", "d2d_256m": "D2D"}


# One colour per contender, in ops.CONTENDERS' order (a test checks there are enough).
PALETTE = ["#222222", "#777777", "#d62728", "#ff9896", "#1f77b4", "#17becf", "#2ca02c",
           "#9467bd", "#ff7f0e", "#8c564b"]


def chart(results, path):
    """Writes the PNG; returns None, or why there is no chart."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    names = [c.name for c in ops.CONTENDERS]
    colors = dict(zip(names, PALETTE))
    panels = [p for p in CHART_PANELS if any(median(results, o, c) for o in p[2] for c in names)]
    has_startup = any(startup_median(results, c, "ready_ns") for c in names)
    count = len(panels) + (1 if has_startup else 0)
    if count == 0:
        return "nothing was measured"
    fig, axes = plt.subplots(count, 1, figsize=(13, 3.6 * count), squeeze=False)
    axes = [a[0] for a in axes]
    used = set()
    for ax, (title, kind, op_names) in zip(axes, panels):
        present = [c for c in names if any(median(results, o, c) for o in op_names)
                   and not (kind == "delta" and c == ops.FLOOR)]
        width = 0.8 / max(len(present), 1)
        for i, c in enumerate(present):
            xs, ys, lo, hi = [], [], [], []
            for j, o in enumerate(op_names):
                e = results["ops"].get(o, {}).get(c, {})
                if "median" not in e:
                    continue
                nbytes = ops.OPERATION[o].nbytes
                if kind == "bandwidth":
                    y, y_lo, y_hi = (nbytes / e["median"], nbytes / e["p75"], nbytes / e["p25"])
                elif kind == "delta":
                    floor = median(results, o, ops.FLOOR)
                    if floor is None or c == ops.FLOOR:
                        continue
                    y, y_lo, y_hi = e["median"] - floor, e["p25"] - floor, e["p75"] - floor
                else:
                    y, y_lo, y_hi = e["median"] / 1e3, e["p25"] / 1e3, e["p75"] / 1e3
                xs.append(j + (i - (len(present) - 1) / 2) * width)
                ys.append(y)
                lo.append(max(y - y_lo, 0))
                hi.append(max(y_hi - y, 0))
            ax.bar(xs, ys, width, yerr=[lo, hi], color=colors[c], label=label(results, c),
                   capsize=1.5, error_kw={"elinewidth": 0.6})
            used.add(c)
        ax.set_xticks(range(len(op_names)))
        ax.set_xticklabels([SHORT.get(o, o) for o in op_names], fontsize=8)
        ax.set_title(title, fontsize=10, loc="left")
        if kind == "time":
            ax.set_yscale("log")
            ax.set_ylabel("µs")
        elif kind == "delta":
            ax.set_ylabel("ns over the floor")
            ax.axhline(300, color="#d62728", linestyle="--", linewidth=0.8)
        else:
            ax.set_ylabel("GB/s")
        ax.grid(axis="y", alpha=0.3)
    if has_startup:
        ax = axes[-1]
        present = [c for c in names if startup_median(results, c, "ready_ns")]
        values = [startup_median(results, c, "ready_ns") / 1e6 for c in present]
        ax.barh(range(len(present)), values, color=[colors[c] for c in present])
        ax.set_yticks(range(len(present)))
        ax.set_yticklabels([label(results, c) for c in present], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("ms (log scale)")
        ax.axvline(15, color="#d62728", linestyle="--", linewidth=0.8)
        ax.set_title("import until ready to call, fresh process (cuabi imports lazily, so its "
                     "bar includes loading libcuabi; dashed: the 15 ms import bound)",
                     fontsize=10, loc="left")
        ax.invert_yaxis()
        used.update(present)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in names if c in used]
    fig.legend(handles, [label(results, c) for c in names if c in used], loc="upper center",
               ncol=min(len(handles), 5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (3.6 * count)))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def write(results, out_dir):
    """Writes benchmarks.md and benchmarks.png into out_dir; returns
    (markdown path, None or why there is no chart)."""
    png = os.path.join(out_dir, "benchmarks.png")
    no_chart = chart(results, png)
    if no_chart and os.path.exists(png):
        os.remove(png)
    md = os.path.join(out_dir, "benchmarks.md")
    with open(md, "w") as f:
        f.write(markdown(results, chart=no_chart is None))
    return md, no_chart

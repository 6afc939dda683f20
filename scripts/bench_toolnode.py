"""Every way of running tools, against the physical limit, and where ToolNode's per-call time goes.

    make bench                                   # about a minute on 2 cores; writes docs/bench/
    .venv/bin/python scripts/bench_toolnode.py --quick --out /tmp/bench   # a few seconds

Part 1, efficiency: N independent tools that each wait L seconds (N = 1 ... 256, L = 0.05 s and
0.5 s), run sequentially, with `asyncio.gather`, by the course's hand-built node (lesson 02), by the
lean node (`helpers.lean_node`), by `ToolNode.ainvoke`, by `ToolNode.invoke` (sync tools, the
default pool and `max_concurrency=N`) and through `create_agent`'s one-`Send`-per-call dispatch.
Reported as wall / L: 1.0 is the limit (everything overlaps). Median of the repetitions, with
the smallest and largest run.

Part 2, per-call overhead with no-op tools, each method as a ratio to awaiting `tool.ainvoke`
alone (interleaved rounds, best round per method, so load elsewhere hits every method alike).

Part 3, where one `ToolNode.ainvoke` call's time goes, by phase, from pyinstrument's samples.

Part 4, the overhead model: wall / L = 1 + (F + N * c) / L, with a fixed cost per run F and a
serial cost per call c fitted per method to Part 1's runs, checked against every one of them, and
the tool latency above which the overhead is under 1 % of the wall, L >= 99 * (F + N * c).
`--from-record docs/bench/bench.json` re-derives Part 4 and the tables from a recorded run
without measuring again.

Numbers depend on the machine and its load: run it on an idle machine and compare ratios, not
absolute times. Not part of the test suite (tests/test_bench.py runs a tiny --quick for shape).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from courseware.compat import installed_versions
from helpers.batch import make_timed_tools, tool_calls_message
from helpers.lean_node import LeanAsyncToolNode
from helpers.nodes import CustomAsyncToolNode

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "bench"
PACKAGES = ("langgraph", "langgraph-prebuilt", "langchain-core", "langchain", "pyinstrument")
Run = Callable[[], Awaitable[object]]

METHODS = {
    "sequential": "await each tool.ainvoke in turn",
    "gather": "asyncio.gather of tool.ainvoke",
    "hand-built": "CustomAsyncToolNode (lesson 02)",
    "lean": "LeanAsyncToolNode (helpers.lean_node)",
    "ToolNode.ainvoke": "ToolNode.ainvoke, async tools",
    "ToolNode.invoke": "ToolNode.invoke, sync tools, default pool",
    "ToolNode.invoke max=N": "ToolNode.invoke, sync tools, max_concurrency=N",
    "create_agent": "create_agent, one Send per call (async tools)",
}


def default_pool_size() -> int:
    """What `concurrent.futures.ThreadPoolExecutor()` picks here, read from the interpreter itself:
    min(32, cpus + 4), where Python 3.13 counts `os.process_cpu_count()` (the CPUs this process may
    use, e.g. under taskset) and 3.11/3.12 `os.cpu_count()`."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor() as pool:
        return pool._max_workers


def machine_facts() -> dict:
    versions = installed_versions(PACKAGES)
    return {
        "cpus": os.cpu_count(),
        "default_pool": default_pool_size(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "load_average_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "versions": versions,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def _agent_runner(tools, message) -> Run | None:
    """create_agent with a scripted model that asks for every call at once, then answers."""
    try:
        from langchain.agents import create_agent
    except ImportError:
        return None
    from helpers.models import ScriptedChatModel

    calls = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
    agent = create_agent(ScriptedChatModel(script=[calls, "done"]), tools)
    return lambda: agent.ainvoke({"messages": [("user", "run them all")]})


def runners(n: int, latency: float, method: str) -> Run | None:
    """The coroutine factory that runs N tools of this latency with this method (None: n/a)."""
    if method in ("ToolNode.invoke", "ToolNode.invoke max=N"):
        tools = make_timed_tools(n, latency, kind="sync")
        message = tool_calls_message(tools)
        node = ToolNode(tools)
        config = {"max_concurrency": n} if method.endswith("max=N") else {}

        async def run_sync():
            node.invoke([message], config, runtime=Runtime())

        return run_sync
    tools = make_timed_tools(n, latency, kind="async")
    message = tool_calls_message(tools)
    by_name = {tool.name: tool for tool in tools}
    calls = message.tool_calls
    state = {"messages": [message]}
    if method == "sequential":

        async def run_sequential():
            for call in calls:
                await by_name[call["name"]].ainvoke(call["args"])

        return run_sequential
    if method == "gather":
        return lambda: asyncio.gather(*(by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    if method == "hand-built":
        node = CustomAsyncToolNode(tools)
        return lambda: node(state)
    if method == "lean":
        lean = LeanAsyncToolNode(tools)
        return lambda: lean(state)
    if method == "ToolNode.ainvoke":
        tool_node = ToolNode(tools)
        return lambda: tool_node.ainvoke([message], runtime=Runtime())
    if method == "create_agent":
        return _agent_runner(tools, message)
    raise ValueError(f"unknown method {method!r}; pick one of {list(METHODS)}")


def expected_seconds(method: str, n: int, latency: float) -> float:
    """Roughly how long one run takes, so the benchmark can skip runs that only restate a formula."""
    if method == "sequential":
        return n * latency
    if method == "ToolNode.invoke":
        return math.ceil(n / default_pool_size()) * latency
    return latency


async def _walls(run: Run, repeats: int, warm: bool) -> list[float]:
    if warm:
        await run()  # first-call imports and caches
    walls = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        await run()
        walls.append(time.perf_counter() - start)
    return walls


async def efficiency(ns, latencies, repeats_for, max_run_seconds: float) -> list[dict]:
    rows = []
    for latency in latencies:
        repeats = repeats_for(latency)
        for n in ns:
            if latency >= 0.5 and n == 4 and len(ns) > 3:  # a long latency adds nothing at N = 4
                continue
            for method in METHODS:
                row = {"method": method, "n": n, "latency": latency}
                expected = expected_seconds(method, n, latency)
                run = runners(n, latency, method) if expected <= max_run_seconds else None
                if run is None:
                    why = "langchain not installed" if expected <= max_run_seconds else (
                        f"one run would take ~{expected:.1f} s ("
                        + ("N x L" if method == "sequential" else "ceil(N / pool) waves x L") + ")")
                    rows.append(row | {"skipped": why})
                    continue
                walls = await _walls(run, repeats, warm=latency == min(latencies))
                rows.append(row | {
                    "median": statistics.median(walls) / latency,
                    "min": min(walls) / latency,
                    "max": max(walls) / latency,
                    "repeats": repeats,
                })
    return rows


async def overhead(n: int, rounds: int) -> list[dict]:
    """Per-call seconds with no-op tools, best of interleaved rounds, as a ratio to tool.ainvoke."""
    tools = make_timed_tools(n, 0.0, kind="async")
    message = tool_calls_message(tools)
    by_name = {tool.name: tool for tool in tools}
    calls = message.tool_calls

    async def bare_tool_ainvoke():
        for call in calls:
            await by_name[call["name"]].ainvoke(call["args"])

    cases: dict[str, Run] = {
        "bare asyncio.gather (asyncio.sleep(0))": lambda: asyncio.gather(
            *(asyncio.sleep(0) for _ in range(n))),
        "tool.ainvoke, one after another": bare_tool_ainvoke,
        "gather of tool.ainvoke": runners(n, 0.0, "gather"),
        "lean": runners(n, 0.0, "lean"),
        "hand-built": runners(n, 0.0, "hand-built"),
        "ToolNode.ainvoke": runners(n, 0.0, "ToolNode.ainvoke"),
        "ToolNode.invoke (sync tools)": runners(n, 0.0, "ToolNode.invoke"),
    }
    agent = runners(n, 0.0, "create_agent")
    if agent is not None:
        cases["create_agent (two model turns included)"] = agent
    best: dict[str, float] = {}
    for run in cases.values():
        await run()  # warm up
    for _ in range(rounds):
        for name, run in cases.items():
            gc.collect()
            start = time.perf_counter()
            await run()
            best[name] = min(best.get(name, math.inf), time.perf_counter() - start)
    base = best["tool.ainvoke, one after another"] / n
    return [
        {"method": name, "per_call_us": seconds / n * 1e6, "ratio_to_tool_ainvoke": seconds / n / base}
        for name, seconds in best.items()
    ]


# Phases of one ToolNode.ainvoke call. A sample counts for the OUTERMOST frame on its stack that
# matches one of these (file suffix, function names); everything else is "other".
PHASES = [
    ("input parsing (ToolNode._parse_input, injection)",
     "langgraph/prebuilt/tool_node.py", {"_parse_input", "_inject_tool_args", "_inject_state",
                                         "_inject_store", "_inject_runtime"}),
    ("result combination (ToolNode._combine_tool_outputs)",
     "langgraph/prebuilt/tool_node.py", {"_combine_tool_outputs"}),
    ("signature inspection, per call (BaseTool._get_runnable_config_param)",
     "langchain_core/tools/base.py", {"_get_runnable_config_param", "_get_type_hints"}),
    ("signature inspection, per call (BaseTool._get_runnable_config_param)",
     "langchain_core/utils/_signature.py", None),
    ("argument validation (BaseTool._parse_input / _to_args_and_kwargs)",
     "langchain_core/tools/base.py", {"_parse_input", "_to_args_and_kwargs", "_filter_injected_args",
                                      "_prep_run_args"}),
    ("ToolMessage construction (BaseTool._format_output)",
     "langchain_core/tools/base.py", {"_format_output"}),
    ("config and callback set-up (callbacks.manager, runnables.config)",
     "langchain_core/callbacks/manager.py", None),
    ("config and callback set-up (callbacks.manager, runnables.config)",
     "langchain_core/runnables/config.py", None),
    ("config and callback set-up (callbacks.manager, runnables.config)",
     "langchain_core/tracers/context.py", None),
    ("the tool itself", "helpers/batch.py", {"await_it"}),
]
# Time no phase above claims, by the file of the frame it was spent in (pyinstrument's "[self]"
# frames count for their parent's file).
GLUE = [
    ("event loop and tasks (asyncio)", "/asyncio/"),
    ("ToolNode's own code (_afunc, _arun_one, ToolCallRequest)", "langgraph/prebuilt/tool_node.py"),
    ("BaseTool.ainvoke / arun bodies", "langchain_core/tools/"),
]
OTHER = "other"


def _phase_of(frame) -> str | None:
    path = (frame.file_path or "").replace("\\", "/")
    for phase, suffix, functions in PHASES:
        if path.endswith(suffix) and (functions is None or frame.function in functions):
            return phase
    return None


def phases(n: int, runs: int) -> list[dict]:
    """Profile `runs` ToolNode.ainvoke calls of `n` no-op tools; seconds per call by phase."""
    from pyinstrument import Profiler

    tools = make_timed_tools(n, 0.0, kind="async")
    message = tool_calls_message(tools)
    node = ToolNode(tools)

    async def many():
        for _ in range(runs):
            await node.ainvoke([message], runtime=Runtime())

    asyncio.run(many())  # warm up outside the profile
    profiler = Profiler(interval=0.0001, async_mode="disabled")
    profiler.start()
    asyncio.run(many())
    profiler.stop()
    totals: dict[str, float] = {}

    def walk(frame, parent_path: str) -> None:
        phase = _phase_of(frame)
        if phase is not None:
            totals[phase] = totals.get(phase, 0.0) + frame.time
            return
        path = (frame.file_path or parent_path).replace("\\", "/")
        if not frame.children:  # a leaf: its time is its own
            glue = next((name for name, part in GLUE if part in path), OTHER)
            totals[glue] = totals.get(glue, 0.0) + frame.time
        for child in frame.children:
            walk(child, path)

    walk(profiler.last_session.root_frame(), "")
    whole = sum(totals.values())
    order = list(dict.fromkeys([phase for phase, _, _ in PHASES] + [name for name, _ in GLUE] + [OTHER]))
    return [{"phase": phase, "share": totals.get(phase, 0.0) / whole} for phase in order]


def scale_phases(phase_rows: list[dict], overhead_rows: list[dict]) -> list[dict]:
    """Turn the profile's shares into µs per call of the unprofiled ToolNode.ainvoke (Part 2).

    The profiler slows what it watches, so its absolute times are not the call's; its shares are.
    """
    per_call = next(r["per_call_us"] for r in overhead_rows if r["method"] == "ToolNode.ainvoke")
    return [row | {"per_call_us": row["share"] * per_call} for row in phase_rows]


MODELLED = ("gather", "hand-built", "lean", "ToolNode.ainvoke", "create_agent")
"""The concurrent async methods whose wall time the overhead model describes (Part 4)."""


def fit_overhead(rows: list[dict]) -> tuple[float, float]:
    """Fit wall - L = F + N * c to one method's measured runs; return (F, c) in seconds.

    F is a fixed cost per run (starting the batch, the event loop's timer, gathering the results),
    c the serial CPU each call costs. Weighted least squares on relative errors (weight 1 / excess²),
    so a 1 ms excess at N = 1 counts as much as a 60 ms excess at N = 256. The sums are `math.fsum`,
    correctly rounded, so every Python gives the same fit (3.12 changed what `sum` of floats returns).
    """
    points = [(r["n"], (r["median"] - 1) * r["latency"]) for r in rows if "median" in r]
    points = [(n, excess) for n, excess in points if excess > 0]
    if len({n for n, _ in points}) < 2:  # a single N cannot separate F from c: all of it is per call
        n, excess = points[0] if points else (1, 0.0)
        return 0.0, excess / n
    weighted = [(1 / excess**2, n, excess) for n, excess in points]
    s = math.fsum(w for w, _, _ in weighted)
    sx = math.fsum(w * n for w, n, _ in weighted)
    sy = math.fsum(w * e for w, _, e in weighted)
    sxx = math.fsum(w * n * n for w, n, _ in weighted)
    sxy = math.fsum(w * n * e for w, n, e in weighted)
    per_call = (s * sxy - sx * sy) / (s * sxx - sx * sx)
    return (sy - per_call * sx) / s, per_call


def crossover(overhead_rows: list[dict], efficiency_rows: list[dict]) -> dict:
    """The overhead model, its check against every measured run, and the 1 % crossover.

    Model: wall / L = 1 + (F + N * c) / L, with F and c fitted per method (`fit_overhead`). The
    overhead is under 1 % of the wall once L >= 99 * (F + N * c).
    """
    per_call = {row["method"]: row["per_call_us"] / 1e6 for row in overhead_rows}
    model, check, limits = [], [], []
    for method in MODELLED:
        rows = [r for r in efficiency_rows if r["method"] == method and "median" in r]
        if not rows:
            continue
        fixed, cost = fit_overhead(rows)
        measured_cost = next((c for name, c in per_call.items() if name.split(" (")[0] == method), None)
        model.append({"method": method, "fixed_s": fixed, "per_call_s": cost,
                      "per_call_s_part2": measured_cost})
        for r in sorted(rows, key=lambda r: (r["latency"], r["n"])):
            check.append({"method": method, "n": r["n"], "latency": r["latency"],
                          "predicted": 1 + (fixed + r["n"] * cost) / r["latency"],
                          "measured": r["median"]})
        for n in (1, 64):
            limits.append({"method": method, "n": n, "latency_for_1_percent": 99 * (fixed + n * cost)})
    return {"model": model, "check": check, "limits": limits}


def _fmt(row: dict) -> str:
    if "skipped" in row:
        return "—"
    return f"{row['median']:.3f}x"


def print_report(record: dict) -> None:
    facts = record["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in facts["versions"].items() if v)
    print(f"{facts['cpus']} CPUs, default thread pool {facts['default_pool']}, Python {facts['python']}, "
          f"{facts['platform']}; load average {facts['load_average_start']}")
    print(f"{versions}\n")
    rows = record["efficiency"]
    for latency in sorted({r["latency"] for r in rows}):
        ns = sorted({r["n"] for r in rows if r["latency"] == latency})
        print(f"Part 1 - wall / L for N tools of L = {latency:g} s (median; 1.000x is the limit)")
        print(f"  {'method':24}" + "".join(f"{f'N={n}':>10}" for n in ns))
        for method in METHODS:
            cells = {r["n"]: _fmt(r) for r in rows if r["latency"] == latency and r["method"] == method}
            print(f"  {method:24}" + "".join(f"{cells.get(n, '—'):>10}" for n in ns))
        print()
    skipped = sorted({(r["method"], r["skipped"]) for r in rows
                      if "skipped" in r and "~" not in r["skipped"]})
    for method, why in skipped:
        print(f"  {method}: not run ({why})")
    print("  — where N x L (sequential) or ceil(N / pool) x L (ToolNode.invoke) exceeds the run budget\n")
    n = record["config"]["overhead_calls"]
    print(f"Part 2 - per-call overhead, {n} no-op calls (best of {record['config']['overhead_rounds']} "
          "interleaved rounds)")
    for row in record["overhead"]:
        print(f"  {row['method']:44} {row['per_call_us']:8.1f} µs  "
              f"{row['ratio_to_tool_ainvoke']:6.2f}x tool.ainvoke")
    print(f"\nPart 3 - one ToolNode.ainvoke call by phase: pyinstrument's shares of "
          f"{record['config']['phase_calls']} profiled no-op calls, times scaled to Part 2's unprofiled call")
    for row in record["phases"]:
        print(f"  {row['phase']:72} {row['per_call_us']:7.1f} µs {row['share']:6.1%}")
    print("\nPart 4 - the overhead model wall / L = 1 + (F + N x c) / L, fitted per method")
    cross = record["crossover"]
    for row in cross["model"]:
        part2 = row["per_call_s_part2"]
        print(f"  {row['method']:18} F = {row['fixed_s'] * 1e3:5.2f} ms   "
              f"c = {row['per_call_s'] * 1e6:6.1f} µs"
              + (f"   (Part 2: {part2 * 1e6:.1f} µs)" if part2 else ""))
    worst = max(cross["check"], key=lambda r: abs(r["predicted"] - r["measured"]) / r["measured"])
    print(f"  largest miss over {len(cross['check'])} runs: {worst['method']} N = {worst['n']}, "
          f"L = {worst['latency']:g} s: predicted {worst['predicted']:.3f}x, "
          f"measured {worst['measured']:.3f}x")
    for row in cross["limits"]:
        print(f"  {row['method']:18} N = {row['n']:<3} overhead < 1 % once L >= "
              f"{row['latency_for_1_percent'] * 1e3:8.1f} ms")


def markdown(record: dict) -> str:
    """The record as the tables of docs/bench/results.md (generated: never edit by hand)."""
    facts = record["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in facts["versions"].items() if v)
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `make bench` on {facts['date']}: {facts['cpus']} CPUs (default thread pool "
        f"{facts['default_pool']}), Python {facts['python']}, {facts['platform']}; load average "
        f"{facts['load_average_start']} at the start, {facts['load_average_end']} at the end; {versions}. "
        f"The run took {record['seconds']} s. How to read it: [../benchmark.md](../benchmark.md).",
        "",
    ]
    rows = record["efficiency"]
    for latency in sorted({r["latency"] for r in rows}):
        ns = sorted({r["n"] for r in rows if r["latency"] == latency})
        lines += [f"## Wall / L for N tools of L = {latency:g} s", "",
                  "Median of the repetitions (smallest – largest); 1.000x is the limit; — not run "
                  "(one run would take N x L, or ceil(N / pool) waves x L, beyond the run budget).", "",
                  "| method | " + " | ".join(f"N = {n}" for n in ns) + " |",
                  "|---|" + "---|" * len(ns)]
        for method, description in METHODS.items():
            cells = []
            for n in ns:
                key = (latency, n, method)
                row = next((r for r in rows if (r["latency"], r["n"], r["method"]) == key), None)
                cells.append("—" if row is None or "median" not in row
                             else f"{row['median']:.3f}x ({row['min']:.3f}–{row['max']:.3f})")
            lines.append(f"| {description} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"## Per-call overhead, {record['config']['overhead_calls']} no-op calls", "",
              "| method | µs per call | × `tool.ainvoke` |", "|---|---|---|"]
    lines += [f"| {r['method']} | {r['per_call_us']:.1f} | {r['ratio_to_tool_ainvoke']:.2f}x |"
              for r in record["overhead"]]
    lines += ["", "## One `ToolNode.ainvoke` call by phase", "",
              "pyinstrument's shares, scaled to the unprofiled per-call time above.", "",
              "| phase | µs per call | share |", "|---|---|---|"]
    lines += [f"| {r['phase']} | {r['per_call_us']:.1f} | {r['share']:.1%} |" for r in record["phases"]]
    cross = record["crossover"]
    lines += ["", "## The overhead model", "",
              "wall / L = 1 + (F + N × c) / L: F a fixed cost per run, c the serial cost of each call, "
              "both fitted per method to the runs above (weighted by relative error). Part 2's "
              "per-call figure is measured separately, with no-op tools.", "",
              "| method | F (ms) | c fitted (µs) | c from Part 2 (µs) | overhead < 1 % from L = (N = 1) "
              "| (N = 64) |", "|---|---|---|---|---|---|"]
    limits = {(r["method"], r["n"]): r["latency_for_1_percent"] for r in cross["limits"]}
    for r in cross["model"]:
        part2 = f"{r['per_call_s_part2'] * 1e6:.0f}" if r["per_call_s_part2"] else "—"
        lines.append(f"| {r['method']} | {r['fixed_s'] * 1e3:.2f} | {r['per_call_s'] * 1e6:.0f} | {part2} | "
                     f"{_ms_or_s(limits[(r['method'], 1)])} | {_ms_or_s(limits[(r['method'], 64)])} |")
    lines += ["", "Predicted against measured wall / L, every run:", "",
              "| method | N | L | predicted | measured |", "|---|---|---|---|---|"]
    lines += [f"| {r['method']} | {r['n']} | {r['latency']:g} s | {r['predicted']:.3f}x "
              f"| {r['measured']:.3f}x |" for r in cross["check"]]
    return "\n".join(lines) + "\n"


def _ms_or_s(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def plot(record: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    rows = [r for r in record["efficiency"] if "median" in r]
    latencies = sorted({r["latency"] for r in rows})
    fig, axes = plt.subplots(1, len(latencies), figsize=(6.4 * len(latencies), 4.2), dpi=110, sharey=True)
    axes = list(axes) if len(latencies) > 1 else [axes]
    for ax, latency in zip(axes, latencies, strict=True):
        for method in METHODS:
            points = sorted((r["n"], r["median"], r["min"], r["max"]) for r in rows
                            if r["latency"] == latency and r["method"] == method)
            if not points:
                continue
            ns, med, lo, hi = zip(*points, strict=True)
            ax.errorbar(ns, med, yerr=[[m - a for m, a in zip(med, lo, strict=True)],
                                       [b - m for m, b in zip(med, hi, strict=True)]],
                        marker="o", capsize=2, label=method)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        ticks = sorted({r["n"] for r in rows})
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.set_yscale("log")
        ax.set_title(f"L = {latency:g} s")
        ax.set_xlabel("N tool calls")
    axes[0].set_ylabel("wall / L  (1.0 = the limit)")
    axes[-1].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"N tools of latency L ({record['machine']['cpus']} CPUs)")
    fig.tight_layout()
    written.append(out / "efficiency.png")
    fig.savefig(written[-1])
    plt.close(fig)

    phase_rows = [r for r in record["phases"] if r["per_call_us"] > 0]
    for name, labels, values, xlabel, title, color in [
        ("overhead.png", [r["method"] for r in record["overhead"]],
         [r["per_call_us"] for r in record["overhead"]], "µs per call, no-op tools", "Per-call overhead",
         "tab:blue"),
        ("phases.png", [r["phase"].split(" (")[0] for r in phase_rows],
         [r["per_call_us"] for r in phase_rows],
         "µs per call (pyinstrument samples)", "Where one ToolNode.ainvoke call's time goes", "tab:orange"),
    ]:
        fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=110)
        ax.barh(labels, values, color=color)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        fig.tight_layout()
        written.append(out / name)
        fig.savefig(written[-1])
        plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, one latency: a few seconds")
    parser.add_argument("--ns", help="comma-separated N values (default 1,4,16,64,256; quick 1,16,64)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write bench.json and plots ({OUT})")
    parser.add_argument("--latency", type=float, help="one latency L in seconds, instead of 0.05 and 0.5")
    parser.add_argument("--overhead-calls", type=int, help="no-op calls per overhead run (400; quick 100)")
    parser.add_argument("--phase-calls", type=int, help="no-op calls profiled by phase (2000; quick 200)")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    parser.add_argument("--from-record", type=Path, metavar="BENCH_JSON",
                        help="re-derive Part 4, results.md and plots from a recorded run; measure nothing")
    args = parser.parse_args(argv)
    if args.from_record:
        record = json.loads(args.from_record.read_text(encoding="utf-8"))
        record["crossover"] = crossover(record["overhead"], record["efficiency"])
        return _write(record, args)

    ns = [int(x) for x in args.ns.split(",")] if args.ns else ([1, 64] if args.quick else [1, 4, 16, 64, 256])
    latencies = [args.latency] if args.latency else [0.05] if args.quick else [0.05, 0.5]
    started = time.perf_counter()
    config = {
        "ns": ns, "latencies": latencies, "quick": args.quick,
        "max_run_seconds": 0.4 if args.quick else 1.6,
        "overhead_calls": args.overhead_calls or (100 if args.quick else 400),
        "overhead_rounds": 3 if args.quick else 7,
        "phase_calls": args.phase_calls or (200 if args.quick else 2000),
    }
    record = {"machine": machine_facts(), "config": config}
    # Everything imported so far lives for the whole run: move it out of the collector's sight, so
    # the gc.collect() before each timed run is cheap and no gen-2 pause lands inside one.
    gc.collect()
    gc.freeze()
    record["efficiency"] = asyncio.run(efficiency(
        ns, latencies, lambda latency: 2 if args.quick else 3 if latency >= 0.5 else 5,
        config["max_run_seconds"]))
    record["overhead"] = asyncio.run(overhead(config["overhead_calls"], config["overhead_rounds"]))
    batch = min(100, config["phase_calls"])
    record["phases"] = scale_phases(phases(batch, max(1, config["phase_calls"] // batch)), record["overhead"])
    record["crossover"] = crossover(record["overhead"], record["efficiency"])
    record["machine"]["load_average_end"] = machine_facts()["load_average_start"]
    record["seconds"] = round(time.perf_counter() - started, 1)
    return _write(record, args)


def _write(record: dict, args: argparse.Namespace) -> dict:
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    (args.out / "bench.json").write_text(text, encoding="utf-8")
    (args.out / "results.md").write_text(markdown(record), encoding="utf-8")
    print_report(record)
    written = [] if args.no_plots else plot(record, args.out)
    files = [args.out / "bench.json", args.out / "results.md", *written]
    shown = [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in files]
    print(f"\nwrote {', '.join(shown)} in {record['seconds']} s", file=sys.stderr)
    return record


if __name__ == "__main__":
    main()

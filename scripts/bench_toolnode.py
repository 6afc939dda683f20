"""Measure how close ToolNode gets to the physical limit, and what each tool call costs.

    .venv/bin/python scripts/bench_toolnode.py            # about a minute
    .venv/bin/python scripts/bench_toolnode.py --quick    # about 5 s, fewer repeats, L = 0.1 s only

Part 1: N async tools that each wait L seconds, run by `ToolNode.ainvoke`. The physical limit is
L (everything overlaps); the brief's target is a wall time <= 1.05 x L up to N = 64.
Part 2: per-call overhead with no-op tools: bare `asyncio.gather`, `gather` of `tool.ainvoke`,
the hand-built `CustomAsyncToolNode` (lesson 02), and `ToolNode.ainvoke` / `.invoke` (lesson 03).

Numbers depend on the machine and its load: run it on an idle machine, and compare ratios
rather than absolute figures. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time

from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.nodes import CustomAsyncToolNode


async def _median_wall(run, repeats: int) -> float:
    await run()  # warm up: first-call imports and caches
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        await run()
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


async def scaling(ns: list[int], latencies: list[float], repeats: int) -> None:
    print("Part 1 - N async tools of latency L through ToolNode.ainvoke (median wall / L)")
    print(f"{'N':>4}" + "".join(f"{f'L = {latency:g} s':>14}" for latency in latencies))
    for n in ns:
        row = []
        for latency in latencies:
            tools = make_timed_tools(n, latency, kind="async")
            node, request = ToolNode(tools), [tool_calls_message(tools)]
            wall = await _median_wall(lambda: node.ainvoke(request, runtime=Runtime()), repeats)  # noqa: B023
            row.append(f"{wall / latency:.3f}x")
        print(f"{n:>4}" + "".join(f"{cell:>14}" for cell in row))
    print("target: <= 1.050x up to N = 64\n")


async def overhead(n: int, repeats: int) -> None:
    async_tools = make_timed_tools(n, 0.0, kind="async")
    sync_tools = make_timed_tools(n, 0.0, kind="sync")
    request = [tool_calls_message(async_tools)]
    state = {"messages": request}
    tool_node, custom = ToolNode(async_tools), CustomAsyncToolNode(async_tools)
    limited = CustomAsyncToolNode(async_tools, timeout=5.0, max_concurrency=n)
    sync_node = ToolNode(sync_tools)
    calls = request[0].tool_calls

    async def run_sync_node():
        sync_node.invoke([tool_calls_message(sync_tools)], runtime=Runtime())

    cases = {
        "bare asyncio.gather (asyncio.sleep(0))": lambda: asyncio.gather(
            *(asyncio.sleep(0) for _ in range(n))
        ),
        "gather of tool.ainvoke(args)": lambda: asyncio.gather(
            *(t.ainvoke(c["args"]) for t, c in zip(async_tools, calls, strict=True))
        ),
        "CustomAsyncToolNode": lambda: custom(state),
        "CustomAsyncToolNode(timeout, max_concurrency)": lambda: limited(state),
        "ToolNode.ainvoke": lambda: tool_node.ainvoke(request, runtime=Runtime()),
        "ToolNode.invoke (sync tools, thread pool)": run_sync_node,
    }
    print(f"Part 2 - per-call overhead, {n} no-op tool calls per run (best of {repeats}, interleaved)")
    walls: dict[str, list[float]] = {name: [] for name in cases}
    for run in cases.values():
        await run()  # warm up
    for _ in range(repeats):  # round-robin, so a burst of load elsewhere hits every case alike
        for name, run in cases.items():
            gc.collect()
            start = time.perf_counter()
            await run()
            walls[name].append(time.perf_counter() - start)
    per_call = {name: min(values) / n for name, values in walls.items()}
    for name, seconds in per_call.items():
        print(f"  {name:48} {seconds * 1e6:8.0f} µs per call")
    ratio = per_call["CustomAsyncToolNode"] / per_call["ToolNode.ainvoke"]
    print(f"hand-built / ToolNode.ainvoke per-call overhead: {ratio:.2f}x (<= 1.00x: matches or beats it)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats, L = 0.1 s only")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 5
    latencies = [0.1] if args.quick else [0.1, 0.5, 1.0]
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}\n")
    asyncio.run(scaling([1, 8, 16, 32, 64], latencies, repeats))
    asyncio.run(overhead(100, repeats * 4))


if __name__ == "__main__":
    main()

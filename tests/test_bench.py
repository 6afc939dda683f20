"""`make bench` writes a complete record: a tiny run checks its shape (not its figures — timing
claims are measured by the benchmark itself, never asserted in the suite)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_toolnode", ROOT / "scripts" / "bench_toolnode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_tiny_run_writes_every_part(tmp_path, capsys):
    bench = _bench()
    record = bench.main(["--quick", "--ns", "1,2", "--latency", "0.005", "--overhead-calls", "4",
                         "--phase-calls", "20", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "bench.json").read_text(encoding="utf-8")) == record
    assert {"machine", "config", "efficiency", "overhead", "phases", "crossover", "seconds"} <= set(record)
    assert record["machine"]["default_pool"] >= 1
    measured = {(r["method"], r["n"]) for r in record["efficiency"] if "median" in r}
    assert {(m, n) for m in bench.METHODS for n in (1, 2)} == measured  # langchain is in the tested set
    for row in record["efficiency"]:
        assert row["min"] <= row["median"] <= row["max"] and row["min"] > 0.5, row
    methods = [r["method"] for r in record["overhead"]]
    assert {"tool.ainvoke, one after another", "lean", "ToolNode.ainvoke"} <= set(methods)
    assert abs(sum(r["share"] for r in record["phases"]) - 1) < 1e-6
    cross = record["crossover"]
    assert {r["method"] for r in cross["model"]} == set(bench.MODELLED)
    assert len(cross["check"]) == sum(1 for r in record["efficiency"] if r["method"] in bench.MODELLED)
    for name in ("results.md", "efficiency.png", "overhead.png", "phases.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert "Part 4" in capsys.readouterr().out


def test_runs_beyond_the_budget_are_skipped_with_the_reason():
    bench = _bench()
    pool = bench.default_pool_size()
    assert bench.expected_seconds("ToolNode.invoke", pool + 1, 0.5) == 1.0
    assert bench.expected_seconds("sequential", 64, 0.5) == 32.0
    assert bench.expected_seconds("lean", 256, 0.5) == 0.5


def test_readme_quotes_the_committed_run():
    record = json.loads((ROOT / "docs" / "bench" / "bench.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    def wall(method, latency):
        return next(r["median"] for r in record["efficiency"]
                    if (r["method"], r["n"], r["latency"]) == (method, 64, latency))

    for method, label in [("lean", "lean node (`helpers.lean_node`)"),
                          ("hand-built", "hand-built `CustomAsyncToolNode`"),
                          ("ToolNode.ainvoke", "`ToolNode.ainvoke`"),
                          ("create_agent", "`create_agent` (one task per call)")]:
        row = f"| {label} | {wall(method, 0.05):.3f}x | {wall(method, 0.5):.3f}x |"
        assert row in readme, f"README's benchmark table should read: {row} (make bench, then update it)"
    per_call = {r["method"]: r["per_call_us"] for r in record["overhead"]}
    assert f"`ToolNode.ainvoke` {per_call['ToolNode.ainvoke']:.0f} µs" in readme
    assert f"lean node {per_call['lean']:.0f} µs" in readme


def test_the_overhead_model_recovers_a_fixed_cost_and_a_per_call_cost():
    bench = _bench()
    fixed, per_call = 0.0012, 270e-6
    rows = [{"method": "lean", "n": n, "latency": latency, "median": 1 + (fixed + n * per_call) / latency}
            for n in (1, 4, 16, 64, 256) for latency in (0.05, 0.5)]
    got_fixed, got_per_call = bench.fit_overhead(rows)
    assert abs(got_fixed - fixed) < 1e-9 and abs(got_per_call - per_call) < 1e-12
    cross = bench.crossover([], rows)
    limit = {(r["method"], r["n"]): r["latency_for_1_percent"] for r in cross["limits"]}
    assert abs(limit[("lean", 1)] - 99 * (fixed + per_call)) < 1e-9  # the fixed cost counts even for one call
    assert all(abs(r["predicted"] - r["measured"]) < 1e-9 for r in cross["check"])


def test_the_committed_model_predicts_every_run_of_four_or_more_calls_within_half_its_overhead():
    record = json.loads((ROOT / "docs" / "bench" / "bench.json").read_text(encoding="utf-8"))
    assert record["crossover"] == _bench().crossover(record["overhead"], record["efficiency"]), (
        "docs/bench/bench.json's Part 4 is stale: "
        "python scripts/bench_toolnode.py --from-record docs/bench/bench.json")
    for row in record["crossover"]["check"]:
        if row["n"] >= 4:
            miss = abs(row["predicted"] - row["measured"]) / (row["measured"] - 1)
            assert miss < 0.5, row


def test_readme_quotes_the_committed_model():
    record = json.loads((ROOT / "docs" / "bench" / "bench.json").read_text(encoding="utf-8"))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    model = {r["method"]: r for r in record["crossover"]["model"]}
    limit = {(r["method"], r["n"]): r["latency_for_1_percent"] for r in record["crossover"]["limits"]}
    node = model["ToolNode.ainvoke"]
    for text in (f"F {node['fixed_s'] * 1e3:.2f} ms, c {node['per_call_s'] * 1e6:.0f} µs",
                 f"about {limit[('ToolNode.ainvoke', 64)]:.2f} s (`ToolNode.ainvoke`)",
                 f"{limit[('lean', 64)] * 1e3:.0f} ms with the lean node",
                 f"even one call needs {limit[('ToolNode.ainvoke', 1)] * 1e3:.0f} ms"):
        assert text in readme, f"README's benchmark paragraph should say: {text}"

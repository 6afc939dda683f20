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
    assert record["machine"]["default_pool"] == min(32, record["machine"]["cpus"] + 4)
    measured = {(r["method"], r["n"]) for r in record["efficiency"] if "median" in r}
    assert {(m, n) for m in bench.METHODS for n in (1, 2)} == measured  # langchain is in the tested set
    for row in record["efficiency"]:
        assert row["min"] <= row["median"] <= row["max"] and row["min"] > 0.5, row
    methods = [r["method"] for r in record["overhead"]]
    assert {"tool.ainvoke, one after another", "lean", "ToolNode.ainvoke"} <= set(methods)
    assert abs(sum(r["share"] for r in record["phases"]) - 1) < 1e-6
    assert {r["method"] for r in record["crossover"]} == {"ToolNode.ainvoke", "hand-built", "lean"}
    for name in ("results.md", "efficiency.png", "overhead.png", "phases.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert "Part 4" in capsys.readouterr().out


def test_runs_beyond_the_budget_are_skipped_with_the_reason():
    bench = _bench()
    pool = bench.default_pool_size()
    assert bench.expected_seconds("ToolNode.invoke", pool + 1, 0.5) == 1.0
    assert bench.expected_seconds("sequential", 64, 0.5) == 32.0
    assert bench.expected_seconds("lean", 256, 0.5) == 0.5

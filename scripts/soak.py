"""Run every clock-dependent check many times under load and count the failures of each.

    make soak                                        # 50 rounds of tests, 3 of each timing notebook
    .venv/bin/python scripts/soak.py --rounds 50 --notebook-rounds 10
    .venv/bin/python scripts/soak.py --no-notebooks  # only the `-m timing` tests
    .venv/bin/python scripts/soak.py --list          # what would run, and why

What runs:

- every test marked `@pytest.mark.timing` (`pytest -m timing tests`), `--rounds` times in one
  pytest process;
- every timing-heavy notebook, `--notebook-rounds` times, each top to bottom in a fresh kernel,
  every cell even after an error: a cell fails when it raises (its `assert`s are the
  clock-dependent verdicts; output comparison is `make test`'s job, or add `--strict` for strict
  nbval here too). Failures are counted per cell; a cell that fails in every round is broken,
  not flaky. A notebook is
  timing-heavy when one of its code cells asserts on a clock reading
  (`Stopwatch`, `perf_counter`, `.seconds`, `.wall`, `overlap()` ... next to an `assert`):
  see `timing_notebooks`, so a new lesson that asserts a ratio is picked up without editing this file.

The load, for the whole run: `--hogs` busy processes (default 2: as many as this machine has
cores), and inside every test process and notebook kernel a thread that, every 0.5-2.5 s, forces
a full garbage collection and then holds the interpreter lock for `--stall` seconds (default
0.3 s, the size of the gen-2 GC pauses measured inside the suite). The stall is installed by a
`sitecustomize` module on PYTHONPATH that does nothing unless `TOOLNODE_LAB_SOAK_STALL` is set,
so it reaches the kernels nbval starts too.

The report prints the failure count per test and per notebook; the target is 0 everywhere. A
test that fails here but passes alone on an idle machine has too thin a margin: widen it, or
prove the order with events instead of the clock (never weaken the claim to nothing).
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STALL_ENV = "TOOLNODE_LAB_SOAK_STALL"
CLOCK = re.compile(r"Stopwatch|perf_counter|\.seconds\b|\.wall\b|\.busy\b|overlap\(\)|raised_at")

SITECUSTOMIZE = textwrap.dedent('''
    """Installed by scripts/soak.py: stall this interpreter now and then, as a gen-2 GC pause does."""
    import os

    def _start():
        import gc, random, sys, threading, time

        stall = float(os.environ["{env}"])

        def _stall_forever():
            while True:
                time.sleep(random.uniform(0.5, 2.5))
                gc.collect()
                # Hold the interpreter lock for `stall` seconds: other threads (the event loop)
                # cannot run, exactly as during a long collection.
                old = sys.getswitchinterval()
                sys.setswitchinterval(stall + 0.05)
                end = time.perf_counter() + stall
                while time.perf_counter() < end:
                    pass
                sys.setswitchinterval(old)

        threading.Thread(target=_stall_forever, name="soak-stall", daemon=True).start()

    if os.environ.get("{env}"):
        _start()
''').format(env=STALL_ENV)


def timing_notebooks(root: Path = ROOT) -> list[Path]:
    """Notebooks whose cells assert on a clock reading (the ones load can break).

    A code cell counts when it mentions a clock (`Stopwatch`, `perf_counter`, `.seconds`,
    `.wall`, `.busy`, `overlap()`) and asserts. Used by `make soak`.
    """
    import nbformat

    from courseware.nbtools import course_notebooks

    found = []
    for path in course_notebooks(root):
        cells = nbformat.read(path, as_version=4).cells
        if any(c.cell_type == "code" and "assert" in c.source and CLOCK.search(c.source) for c in cells):
            found.append(path)
    return found


def _hog() -> None:  # pragma: no cover - runs in a child process until terminated
    while True:
        pass


class _Repeat:
    """A pytest plugin: run the collected tests `rounds` times and count failures per test."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.failed: Counter[str] = Counter()
        self.ran: Counter[str] = Counter()

    def pytest_collection_modifyitems(self, items):
        items[:] = items * self.rounds

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.ran[report.nodeid] += 1
        if report.failed:
            self.failed[report.nodeid] += 1


def _child_tests(rounds: int, out: Path, where: list[str]) -> int:
    import pytest

    plugin = _Repeat(rounds)
    code = pytest.main(["-q", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
                        "-p", "no:nbval", "-o", "addopts=", "-p", "no:cacheprovider",
                        "-m", "timing", "--strict-markers", "-W", "error", "--no-header", "-rN", "--tb=line",
                        *where], plugins=[plugin])
    out.write_text(json.dumps({"ran": plugin.ran, "failed": plugin.failed, "exit": int(code)}))
    return 0


def _child_notebook(path: Path) -> int:
    """Run one notebook top to bottom in a fresh kernel, every cell even after an error; print
    one JSON line: the cells that raised (and were not tagged to), with the error."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    failed = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                first_line = (output.evalue or "").strip().split("\n")[0]
                failed[index] = f"{output.ename}: {first_line[:100]}"
    print(json.dumps(failed))
    return 0


def _notebook_round(path: Path, env: dict[str, str], strict: bool) -> dict[str, str]:
    """One run of one notebook in a fresh kernel: `{cell: error}` for each cell that failed.

    By default every cell runs top to bottom and a cell fails when it raises (its `assert`s are
    the clock-dependent verdicts); with `strict`, strict nbval also compares every output, as
    `make test` does.
    """
    if strict:
        command = [sys.executable, "-m", "pytest", "-q", "--no-header", str(path.relative_to(ROOT))]
    else:
        command = [sys.executable, __file__, "--child-notebook", str(path)]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if strict:
        found = re.findall(r"^FAILED \S+::(Cell \d+)", result.stdout, flags=re.M)
        return dict.fromkeys(found, "strict nbval")
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"run": f"crashed (exit {result.returncode}): {result.stderr.strip()[-200:]}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/soak.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50, help="rounds of the -m timing tests (50)")
    parser.add_argument("--notebook-rounds", type=int, default=3,
                        help="strict nbval runs of each timing notebook (3: a run takes 10-40 s)")
    parser.add_argument("--hogs", type=int, default=2, help="busy processes for the whole run (2)")
    parser.add_argument("--stall", type=float, default=0.3, help="seconds of each forced stall (0.3)")
    parser.add_argument("--no-tests", action="store_true", help="skip the -m timing tests")
    parser.add_argument("--no-notebooks", action="store_true", help="skip the timing notebooks")
    parser.add_argument("--notebooks", nargs="*", type=Path, help="these notebooks instead")
    parser.add_argument("--tests", nargs="*", default=["tests"],
                        help="where to look for -m timing tests (default: tests)")
    parser.add_argument("--strict", action="store_true",
                        help="notebooks under strict nbval (outputs compared) instead of run-and-assert")
    parser.add_argument("--list", action="store_true", help="print what would run and exit")
    parser.add_argument("--child-tests", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-notebook", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child_notebook:
        return _child_notebook(args.child_notebook)
    if args.child_tests:
        return _child_tests(args.rounds, args.child_tests, args.tests)

    notebooks = [] if args.no_notebooks else (
        [p.resolve() for p in args.notebooks] if args.notebooks else timing_notebooks())
    if args.list:
        print("tests: pytest -m timing", *args.tests)
        subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:nbval",
                        "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), "-o", "addopts=",
                        "-m", "timing", *args.tests], cwd=ROOT)
        print("timing notebooks:", *[p.relative_to(ROOT) for p in notebooks], sep="\n  ")
        return 0

    site = Path(tempfile.mkdtemp(prefix="soak-site-"))
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, **{STALL_ENV: str(args.stall)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    print(f"soak: {args.hogs} CPU hog(s), a {args.stall} s stall every 0.5-2.5 s in every test "
          f"process and kernel", flush=True)
    rows: list[tuple[str, int, int]] = []
    start = time.perf_counter()
    try:
        if not args.no_tests:
            out = site / "tests.json"
            print(f"-m timing tests x {args.rounds} rounds ...", flush=True)
            code = subprocess.run([sys.executable, __file__, "--rounds", str(args.rounds),
                                   "--child-tests", str(out), "--tests", *args.tests],
                                  cwd=ROOT, env=env).returncode
            if not out.exists():
                print(f"the test run crashed (exit {code})")
                return 2
            result = json.loads(out.read_text())
            if result["exit"] not in (0, 1, 5):  # 5: nothing marked timing
                print(f"the timing tests could not run (pytest exit {result['exit']}): see above")
                return 2
            for nodeid, ran in sorted(result["ran"].items()):
                rows.append((nodeid, result["failed"].get(nodeid, 0), ran))
            if not result["ran"]:
                print("no test is marked @pytest.mark.timing")
        for path in notebooks:
            name = str(path.relative_to(ROOT))
            rounds: list[dict[str, str]] = []
            for index in range(args.notebook_rounds):
                failed = _notebook_round(path, env, args.strict)
                rounds.append(failed)
                shown = "ok" if not failed else "FAILED cells " + ", ".join(map(str, failed))
                print(f"  {name} round {index + 1}/{args.notebook_rounds}: {shown}", flush=True)
            cells = Counter(cell for failed in rounds for cell in failed)
            errors = {cell: error for failed in rounds for cell, error in failed.items()}
            broken = {cell for cell, count in cells.items() if count == args.notebook_rounds > 1}
            flaky_rounds = sum(bool(set(failed) - broken) for failed in rounds)
            rows.append((name + (" (not counting cells broken in every round)" if broken else ""),
                         flaky_rounds, args.notebook_rounds))
            for cell, count in sorted(cells.items(), key=lambda item: int(item[0]) if str(
                    item[0]).isdigit() else -1):
                every = "  <- every round: broken, not timing" if cell in broken else ""
                rows.append((f"    cell {cell}: {errors[cell]}{every}", count, args.notebook_rounds))
    finally:
        for hog in hogs:
            hog.terminate()
            hog.join()
    minutes = (time.perf_counter() - start) / 60
    width = max((len(name) for name, _, _ in rows), default=10)
    print(f"\nfailures under load ({minutes:.1f} min, {args.hogs} hogs, {args.stall} s stalls):")
    for name, failed, ran in rows:
        print(f"  {failed:3d} / {ran:<3d} {name:<{width}}")
    total = sum(failed for name, failed, _ in rows if not name.startswith(" "))
    print("soak: 0 failures" if total == 0 else
          f"soak: {total} failure(s): a check that fails here but passes alone on an idle machine "
          "has too thin a margin; widen it, or prove the order with events instead of the clock")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())

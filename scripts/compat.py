"""Run the contract tests against a matrix of LangGraph releases; write docs/compatibility.{json,md}.

    make compat                       # every release; environments are cached in .compat/
    .venv/bin/python scripts/compat.py --only "langgraph 0.6.11"
    .venv/bin/python scripts/compat.py --table-only   # rewrite the .md from the committed .json

Each release gets a throwaway virtual environment under `.compat/envs/` (never the project's
`.venv`), made with uv when it is there (pip otherwise), from the release's pins plus what the
contract tests import; the package index resolves everything else, so each langgraph release pulls
in the langgraph-prebuilt and langchain-core it allows. The tests run from this checkout with
`helpers` and `courseware` on PYTHONPATH. Downloads stay in uv's (or pip's) cache and a finished
environment is reused while its pins are unchanged, so a re-run costs only the tests.

Not part of `make test`; `tests/test_compat.py` checks the table generator on a small record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from courseware.compat import DATA, PACKAGES, markdown  # noqa: E402

ENVS = ROOT / ".compat" / "envs"
# What the contract tests import besides the matrix's own packages (no version: the resolver picks
# what fits each release). nbformat: tests/conftest.py imports courseware.nbtools; IPython and ipykernel:
# the contract tests of lessons 01 and 10 that pin what a kernel does.
# pytest-timeout: a test that hangs on an old release fails after 60 s instead of stopping the run.
SUPPORT = ["pytest", "pytest-timeout", "nbformat", "psutil", "matplotlib", "langchain-openai", "mcp<2",
           "langchain-mcp-adapters", "langchain", "pyyaml", "ipython", "ipykernel"]
MATRIX = [
    {"name": "langgraph 0.6.11", "pins": ["langgraph==0.6.11"]},
    {"name": "langgraph 1.0.0, prebuilt 1.0.0", "pins": ["langgraph==1.0.0", "langgraph-prebuilt==1.0.0"]},
    # As resolved, langgraph 1.0.10 pulls langgraph-prebuilt 1.0.13, whose import fails there
    # (ImportError: cannot import name 'ExecutionInfo' from 'langgraph.runtime'; prebuilt 1.0.9 and
    # later need a newer langgraph, and prebuilt's metadata does not say so): pin the last one that works.
    {"name": "langgraph 1.0.10, prebuilt 1.0.8", "pins": ["langgraph==1.0.10", "langgraph-prebuilt==1.0.8"],
     "note": "`pip install langgraph==1.0.10` alone pulls langgraph-prebuilt 1.0.13, which fails to import "
             "there (`cannot import name 'ExecutionInfo' from 'langgraph.runtime'`): prebuilt 1.0.9 and "
             "later need a newer langgraph than their metadata says. This column pins prebuilt 1.0.8."},
    {"name": "langgraph 1.1.10", "pins": ["langgraph==1.1.10"]},
    {"name": "langgraph 1.2.24", "pins": ["-r", "requirements.txt"], "reference": True},
    {"name": "langgraph 1.2.24, oldest langchain-core", "pins": ["-r", "requirements.txt"],
     "then": "oldest-core", "support": False},
    {"name": "newest", "pins": ["langgraph", "langgraph-prebuilt", "langchain-core", "langchain"],
     "upgrade": True},
]
# Every other 1.x column runs whatever langchain-core the resolver picks today (the newest 1.x); the
# "oldest langchain-core" column keeps the pins and installs the lowest langchain-core that the pinned
# langgraph, langgraph-prebuilt, langchain and adapters all declare they accept.
CORE_USERS = ("langgraph", "langgraph-prebuilt", "langchain", "langchain-openai", "langchain-mcp-adapters")


def oldest_core_allowed() -> str:
    """The lowest langchain-core every pinned package that depends on it accepts (from their metadata)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.version import Version

    floors = []
    for dist in CORE_USERS:
        for text in metadata.requires(dist) or ():
            req = Requirement(text)
            if req.name == "langchain-core":
                floors += [Version(spec.version) for spec in req.specifier if spec.operator in (">=", "==")]
    if not floors:
        raise SystemExit("No pinned package declares a langchain-core floor: is the project's .venv set up?")
    return str(max(floors))
INI = """[pytest]
markers =
    lesson(name): the notebook that teaches the library behaviour this test pins
    timing: the test's verdict depends on the clock
addopts = -p no:cacheprovider
timeout = 60
timeout_method = signal
"""


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, **kwargs)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def _fingerprint(entry: dict) -> str:
    text = json.dumps([entry["pins"], entry.get("then"), SUPPORT, sys.version_info[:2]])
    if "requirements.txt" in entry["pins"]:
        text += (ROOT / "requirements.txt").read_text(encoding="utf-8")
    if entry.get("upgrade"):  # "newest" means newest today
        text += datetime.now(UTC).strftime("%Y-%m-%d")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_env(entry: dict) -> Path:
    """Create (or reuse) the release's environment; return its python."""
    env = ENVS / _slug(entry["name"])
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    stamp = env / ".compat-fingerprint"
    fingerprint = _fingerprint(entry)
    if python.exists() and stamp.exists() and stamp.read_text() == fingerprint:
        return python
    shutil.rmtree(env, ignore_errors=True)
    uv = shutil.which("uv") or (str(Path(sys.executable).parent / "uv")
                                if (Path(sys.executable).parent / "uv").exists() else None)
    support = not entry.get("reference") and entry.get("support", True)
    pins = list(entry["pins"]) + (SUPPORT if support else [])
    if uv:
        steps = [[uv, "venv", "--quiet", "--python", sys.executable, str(env)],
                 [uv, "pip", "install", "--quiet", "--python", str(python), *pins]
                 + (["--upgrade"] if entry.get("upgrade") else [])]
    else:
        steps = [[sys.executable, "-m", "venv", str(env)],
                 [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins]
                 + (["--upgrade"] if entry.get("upgrade") else [])]
    if entry.get("then") == "oldest-core":
        core = f"langchain-core=={oldest_core_allowed()}"
        steps.append([uv, "pip", "install", "--quiet", "--python", str(python), core] if uv else
                     [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", core])
    for step in steps:
        done = _run(step)
        if done.returncode:
            raise SystemExit(f"Could not build the environment for {entry['name']!r}:\n"
                             f"  {' '.join(step)}\n{done.stderr.strip()[-2000:]}\n"
                             "Check the pins in scripts/compat.py (MATRIX) and that the package index "
                             "is reachable.")
    stamp.write_text(fingerprint)
    return python


def versions_in(python: Path) -> dict[str, str | None]:
    code = ("import json, importlib.metadata as m\n"
            "def v(n):\n    try: return m.version(n)\n    except m.PackageNotFoundError: return None\n"
            f"print(json.dumps({{n: v(n) for n in {list(PACKAGES)!r}}}))")
    return json.loads(_run([str(python), "-c", code], check=True).stdout)


def run_tests(python: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ini, out = Path(tmp) / "pytest.ini", Path(tmp) / "results.json"
        ini.write_text(INI, encoding="utf-8")
        env = {**os.environ, "COMPAT_OUT": str(out),
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "scripts")])}
        for name in ("TOOLNODE_LAB_MODEL", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "MPLBACKEND"):
            env.pop(name, None)
        _run([str(python), "-m", "pytest", "tests/contracts", "-c", str(ini), "--rootdir", str(ROOT),
              "-p", "compat_plugin", "-q", "--no-header", "--continue-on-collection-errors"],
             env=env, timeout=1800)
        if not out.exists():
            raise SystemExit(f"pytest wrote no results with {python}: run it by hand to see why.")
        return json.loads(out.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", help="run just this release (repeatable); others keep "
                        "their committed results")
    parser.add_argument("--table-only", action="store_true",
                        help="rewrite docs/compatibility.md from the .json")
    args = parser.parse_args(argv)
    md = DATA.with_suffix(".md")
    if args.table_only:
        md.write_text(markdown(json.loads(DATA.read_text(encoding="utf-8"))), encoding="utf-8")
        print(f"wrote {md.relative_to(ROOT)}")
        return
    started = time.perf_counter()
    old = ({e["name"]: e for e in json.loads(DATA.read_text(encoding="utf-8"))["entries"]}
           if DATA.exists() else {})
    names = {entry["name"] for entry in MATRIX}
    unknown = set(args.only or ()) - names
    if unknown:
        raise SystemExit(f"No release named {sorted(unknown)} in MATRIX; pick from {sorted(names)}.")
    entries = []
    for entry in MATRIX:
        if args.only and entry["name"] not in args.only and entry["name"] in old:
            entries.append(old[entry["name"]])
            continue
        t0 = time.perf_counter()
        python = make_env(entry)
        built = time.perf_counter() - t0
        results = run_tests(python)
        record = {"name": entry["name"], "pins": entry["pins"], "reference": bool(entry.get("reference")),
                  "note": entry.get("note", ""),
                  "versions": versions_in(python), "results": results,
                  "seconds": {"environment": round(built, 1),
                              "tests": round(time.perf_counter() - t0 - built, 1)}}
        entries.append(record)
        passed = sum(r["outcome"] == "passed" for r in results.values())
        print(f"{entry['name']:34} {passed:4d}/{len(results):<4d} passed   "
              f"env {record['seconds']['environment']:5.1f} s, tests {record['seconds']['tests']:5.1f} s")
    commit = _run(["git", "rev-parse", "--short", "HEAD"]).stdout.strip() or "unknown"
    data = {"date": datetime.now(UTC).strftime("%Y-%m-%d"), "commit": commit, "cpus": os.cpu_count(),
            "seconds": round(time.perf_counter() - started, 1), "entries": entries}
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md.write_text(markdown(data), encoding="utf-8")
    print(f"wrote {DATA.relative_to(ROOT)} and {md.relative_to(ROOT)} in {data['seconds']:.0f} s")


if __name__ == "__main__":
    main()

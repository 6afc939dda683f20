"""Check the universal lock on every platform and Python it claims, without installing anything.

    python scripts/check_lock.py [requirements.txt]      # `make lock` runs it; needs the package index

For each target of `courseware.platforms.TARGETS` (Linux x86_64/aarch64, macOS arm64/x86_64, Windows
x86_64) and each Python of `SUPPORTED_PYTHONS`, it takes the pins whose marker applies there and asks
pip which file it would install (`pip install --dry-run --no-deps --only-binary=:all: --platform …`),
so every pinned distribution must have a wheel for that platform and Python. From the metadata of
those very wheels it then checks the set is closed there: every dependency a pinned package declares
on that platform is pinned at a version that satisfies it, and no pin is installed where nothing
needs it. It prints one line per target and names what is missing; exit status 0 means all passed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tomllib  # noqa: E402

from packaging.requirements import Requirement  # noqa: E402

from courseware.platforms import SUPPORTED_PYTHONS, TARGETS, canonical, read_lock  # noqa: E402

# Packages accepted as a pure-Python sdist where no wheel exists (none today); name → reason.
SDIST_OK: dict[str, str] = {}


def left_out() -> set[str]:
    """The packages scripts/lock-overrides.txt leaves out of the lock (an override whose marker is
    never true): a dependency on one of them is not a gap in the set."""
    names = set()
    for line in (ROOT / "scripts" / "lock-overrides.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and (requirement := Requirement(line)).marker is not None:
            if not any(requirement.marker.evaluate({"python_version": v}) for v in SUPPORTED_PYTHONS):
                names.add(canonical(requirement.name))
    return names


def roots() -> list[Requirement]:
    """What the lock exists for: the package, its course extra, and requirements.in's own lines."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["course"]
    for line in (ROOT / "scripts" / "requirements.in").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return [Requirement(line) for line in lines]


def pip_dry_run(pins: dict[str, str], target, python: str, workdir: Path) -> tuple[dict, str]:
    """Ask pip which wheel it would pick for every pin; returns (report, error text)."""
    requirements = workdir / "pins.txt"
    requirements.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())), encoding="utf-8")
    report = workdir / "report.json"
    report.unlink(missing_ok=True)
    tag = "cp" + python.replace(".", "")
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
        "--ignore-installed", "--no-deps", "--only-binary=:all:", "--target", str(workdir / "never-written"),
        "--python-version", python, "--implementation", "cp", "--abi", tag,
        *[arg for platform in target.wheel_platforms for arg in ("--platform", platform)],
        "--report", str(report), "-r", str(requirements),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        return {}, "\n".join(errors) or done.stderr.strip()
    return json.loads(report.read_text(encoding="utf-8")), ""


def missing_files(pins: dict[str, str], target, python: str, workdir: Path) -> tuple[dict, list[str]]:
    """The report for the pins that have a file, and the `name==version` of those that have none."""
    pins = {n: v for n, v in pins.items() if n not in SDIST_OK}
    missing: list[str] = []
    while True:
        report, error = pip_dry_run(pins, target, python, workdir)
        if not error:
            return report, missing
        culprit = next((n for n in pins if f"requirement {n}=={pins[n]}" in error.lower().replace("_", "-")),
                       None)
        if culprit is None:  # not a missing file: say what pip said
            raise SystemExit(f"pip failed for {target.name} / Python {python}:\n{error}")
        missing.append(f"{culprit}=={pins.pop(culprit)}")


def closure_problems(pins: dict[str, str], report: dict, environment: dict[str, str]) -> list[str]:
    """Dependencies that are unpinned or pinned outside their range here, and pins nothing needs here."""
    requires = {canonical(item["metadata"]["name"]): item["metadata"].get("requires_dist") or []
                for item in report.get("install", [])}
    problems: list[str] = []
    reached: dict[str, set[str]] = {}
    queue = [(r, "requirements.in / pyproject.toml") for r in roots()]
    skipped = left_out()
    while queue:
        requirement, wanted_by = queue.pop()
        name = canonical(requirement.name)
        if name == "toolnode-lab" or name in skipped:
            continue
        if name not in pins:
            problems.append(f"{name} (needed by {wanted_by}) is not pinned for this platform")
            continue
        if not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{name}=={pins[name]} does not satisfy {wanted_by}'s {requirement}")
        extras = {""} | set(requirement.extras)
        new = extras - reached.get(name, set())
        if not new:
            continue
        reached.setdefault(name, set()).update(new)
        for line in requires.get(name, []):
            dependency = Requirement(line)
            if dependency.marker is None or any(
                dependency.marker.evaluate({**environment, "extra": extra}) for extra in new
            ):
                queue.append((dependency, name))
    problems = list(dict.fromkeys(problems))  # one line per problem, however many paths reach it
    unneeded = sorted(set(pins) - set(reached) - set(SDIST_OK))
    problems += [f"{name}=={pins[name]} is installed here but nothing needs it (check its marker)"
                 for name in unneeded]
    return problems


def check_one(pins, target, python: str) -> tuple[str, list[str], int]:
    """One platform and Python: (label, problems, number of pins that apply there)."""
    environment = target.marker_environment(python)
    here = {pin.name: pin.version for pin in pins if pin.applies(environment)}
    with tempfile.TemporaryDirectory() as tmp:
        report, missing = missing_files(here, target, python, Path(tmp))
    problems = [f"no {target.name} wheel for CPython {python} (oldest OS {target.oldest_os}): {name}"
                for name in missing]
    if not missing:
        problems += closure_problems(here, report, environment)
    return f"{target.name:15} Python {python}", problems, len(here)


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # one line per target as soon as it is known
    lock = Path(argv[0]) if argv else ROOT / "requirements.txt"
    pins = read_lock(lock)
    seen: dict[str, str] = {}
    failed = False
    for pin in pins:
        if pin.name in seen:
            print(f"FAIL {pin.name} is pinned twice ({seen[pin.name]} and {pin.version}): the set must be "
                  "one set for every Python; resolve with `--fork-strategy fewest`")
            failed = True
        seen[pin.name] = pin.version
    combinations = [(target, python) for target in TARGETS for python in SUPPORTED_PYTHONS]
    # pip mostly waits on the index: a few at a time, reported in a fixed order.
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = pool.map(lambda combination: check_one(pins, *combination), combinations)
        for label, problems, count in results:
            if problems:
                failed = True
                print(f"FAIL {label}: " + "\n     ".join(problems))
            else:
                print(f"ok   {label}: {count} pins, a wheel for each; dependencies closed")
    for name, reason in SDIST_OK.items():
        print(f"note {name}: accepted as an sdist ({reason})")
    if failed:
        print("The lock does not install everywhere it claims to: fix scripts/requirements.in (or the "
              "markers) and run `make lock` again.")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

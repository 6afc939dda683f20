"""Gather every file the course installs, for every attendee's platform, into one folder (a wheelhouse).

    python scripts/offline_bundle.py                                  # every platform and Python
    python scripts/offline_bundle.py --platforms linux-x86_64 --pythons 3.11
    python scripts/offline_bundle.py --dry-run                        # what each target gets; no network
    python scripts/offline_bundle.py --check                          # does the folder install every target?
    make offline-bundle [PLATFORMS=linux-x86_64,macos-arm64] [PYTHONS=3.11,3.12]

Made for a workshop venue with bad Wi-Fi: run it once where the network is good, copy `wheelhouse/`
(a USB stick, a shared drive) next to the checkout on every laptop, then install with no network:

    make offline-install        # = make setup with uv --offline --no-index --find-links wheelhouse
    pip install --no-index --find-links wheelhouse -r requirements.txt -e . --no-deps   # without make

The platforms and Pythons, their PEP 508 marker values and the wheel tags pip accepts there come from
`courseware.platforms` (`TARGETS`, `SUPPORTED_PYTHONS`), the same table `make lock` checks the lock
against; the pins come from `requirements.txt` read by `courseware.platforms.read_lock`. For each target
and Python the pins whose environment marker is true there are downloaded as wheels only (`pip download
--no-deps --only-binary=:all: --platform … --python-version … --implementation cp`); files shared by
several targets (pure-Python wheels, abi3 wheels) are stored once. The build backend that `pip install
-e .` needs (`[build-system] requires` of pyproject.toml, plus `wheel`) is added once, since it is pure
Python; uv itself (`courseware.platforms.UV_VERSION`, the installer `make setup` uses, one wheel per
platform) is gathered for every target like a pin. Then, with the index switched off, pip is asked to
install each target's pins from the folder alone (`pip install --dry-run --no-index --find-links`, with
that target's `--platform`/`--python-version`): the proof that an attendee on that laptop needs no
network. `wheelhouse/CONTENTS.txt` records what was gathered, for which targets.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    from courseware.platforms import SUPPORTED_PYTHONS, TARGETS, UV_VERSION, read_lock
except ImportError as error:  # pragma: no cover - only before courseware.platforms exists
    raise SystemExit(f"offline_bundle needs courseware.platforms (make lock's table): {error}") from None

DEST = ROOT / "wheelhouse"
INSTALLER = (f"uv=={UV_VERSION}",)
"""Gathered for every target beside its pins: `make setup` installs with uv (a wheel per platform)."""
BUILD_EXTRA = ("wheel",)
"""Installed next to the build backend: older setuptools ask for it to build an editable install."""


def target_named(name: str):
    """The `courseware.platforms.TARGETS` entry called `name` (e.g. `macos-arm64`); ValueError otherwise."""
    for target in TARGETS:
        if target.name == name:
            return target
    known = ", ".join(t.name for t in TARGETS)
    raise ValueError(f"unknown platform {name!r}; known: {known}")


def parse_list(text: str | None, known: tuple[str, ...], what: str) -> list[str]:
    """`a,b` (or `a b`) → ["a", "b"], each checked against `known`; empty or `all` → every known one."""
    items = [part for part in (text or "").replace(",", " ").split() if part]
    if not items or items == ["all"]:
        return list(known)
    unknown = [item for item in items if item not in known]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return items


def selection(pins, target, python: str) -> list[str]:
    """`name==version` of every pin whose marker is true for CPython `python` on `target`, sorted."""
    environment = target.marker_environment(python)
    return sorted(f"{pin.name}=={pin.version}" for pin in pins if pin.applies(environment))


def download_command(target, python: str, requirements: Path, dest: Path) -> list[str]:
    """The `pip download` that fetches `requirements`' wheels for CPython `python` on `target`."""
    abi = "cp" + python.replace(".", "")
    return [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
        "--no-deps", "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
        "--abi", abi, "--abi", "abi3", "--abi", "none",
        *[arg for tag in target.wheel_platforms for arg in ("--platform", tag)],
        "-d", str(dest), "-r", str(requirements),
    ]


def offline_check_command(target, python: str, requirements: Path, dest: Path, scratch: Path) -> list[str]:
    """`pip install --dry-run --no-index` from `dest` alone: does the folder install `requirements` there?"""
    abi = "cp" + python.replace(".", "")
    return [
        sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
        "--no-index", "--find-links", str(dest), "--ignore-installed", "--no-deps", "--only-binary=:all:",
        "--target", str(scratch), "--implementation", "cp", "--python-version", python,
        "--abi", abi, "--abi", "abi3", "--abi", "none",
        *[arg for tag in target.wheel_platforms for arg in ("--platform", tag)],
        "-r", str(requirements),
    ]


def build_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """What `pip install -e .` needs to build the package: pyproject's build requires, plus `wheel`."""
    build = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("build-system", {})
    return [*build.get("requires", ["setuptools"]), *BUILD_EXTRA]


def platform_only(selected: dict[tuple[str, str], list[str]]) -> dict[tuple[str, str], list[str]]:
    """For each (target, python): the pins it gets that not every target and Python gets."""
    everywhere = set.intersection(*(set(pins) for pins in selected.values())) if selected else set()
    return {key: sorted(set(pins) - everywhere) for key, pins in selected.items()}


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/offline_bundle.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--platforms", default=os.environ.get("PLATFORMS", ""),
                        help="comma-separated, default all: " + ", ".join(t.name for t in TARGETS))
    parser.add_argument("--pythons", default=os.environ.get("PYTHONS", ""),
                        help="comma-separated, default all: " + ", ".join(SUPPORTED_PYTHONS))
    parser.add_argument("--dest", type=Path, default=DEST, help="the folder (default: wheelhouse/)")
    parser.add_argument("-r", "--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what each target gets and the pip commands; download nothing")
    parser.add_argument("--check", action="store_true",
                        help="download nothing; check the folder alone installs every target (no network)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    try:
        names = parse_list(args.platforms, tuple(t.name for t in TARGETS), "platform")
        pythons = parse_list(args.pythons, tuple(SUPPORTED_PYTHONS), "Python")
    except ValueError as error:
        parser.error(str(error))
    pins = read_lock(args.requirements)
    selected = {(name, python): selection(pins, target_named(name), python)
                for name in names for python in pythons}
    extra = platform_only(selected)
    for (name, python), chosen in selected.items():
        only = ", ".join(p.split("==")[0] for p in extra[(name, python)]) or "none"
        print(f"{name:15} Python {python}: {len(chosen)} pins (not on every target: {only})")
    build = build_requirements()
    if args.dry_run:
        print(f"build backend for `pip install -e .`: {' '.join(build)}")
        name, python = next(iter(selected))
        print("e.g. " + " ".join(download_command(target_named(name), python, Path("<pins>"), args.dest)))
        return 0

    if args.check and not args.dest.is_dir():
        parser.error(f"no folder {args.dest}: run make offline-bundle first")
    args.dest.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        pin_files = {}
        for (name, python), chosen in selected.items():
            pin_files[name, python] = Path(tmp) / f"{name}-{python}.txt"
            lines = [*chosen, *INSTALLER]  # uv: make offline-install installs with it
            pin_files[name, python].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        if not args.check:
            failed += download(selected, pin_files, build, args.dest)
        # the proof: pip, with the index switched off, finds every pin of every target in the folder
        for (name, python), pins_file in pin_files.items():
            command = offline_check_command(target_named(name), python, pins_file, args.dest, Path(tmp) / "x")
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
                failed.append(f"{name} Python {python}, from the folder alone: "
                              + ("\n    ".join(errors) or done.stderr.strip()))
                print(f"FAIL {name} Python {python}: the folder alone does not install it")
            else:
                print(f"ok   {name} Python {python}: installs from the folder with --no-index")
    files = sorted(path.name for path in args.dest.iterdir() if path.suffix == ".whl")
    backend = [file for file in files if file.startswith(("setuptools-", "wheel-"))]
    if len(backend) < 2:
        failed.append(f"the build backend for `pip install -e .` is missing: have {backend or 'none'}")
    if not args.check:
        (args.dest / "CONTENTS.txt").write_text(
            "# Gathered by scripts/offline_bundle.py from requirements.txt for:\n"
            + "".join(f"#   {name} CPython {python}\n" for name, python in selected)
            + "# Install with no network: make offline-install\n"
            + "".join(f"{file}\n" for file in files), encoding="utf-8")
    seconds = time.monotonic() - started
    print(f"{args.dest}: {len(files)} wheels, {_size(args.dest) / 1e6:.0f} MB, {seconds:.0f} s")
    if failed:
        print("Some targets are incomplete (pip's messages below); an attendee on one of them will "
              "need the network:\n  " + "\n  ".join(failed))
        return 1
    print("Copy the folder into each attendee's checkout and run make offline-install, or leave it on the "
          "stick: make offline-install WHEELHOUSE=<that folder>")
    return 0


def download(selected, pin_files, build: list[str], dest: Path) -> list[str]:
    """Download every target's wheels and the build backend into `dest`; returns what failed."""
    failed = []
    for name, python in selected:
        done = subprocess.run(download_command(target_named(name), python, pin_files[name, python], dest),
                              capture_output=True, text=True)
        if done.returncode:
            errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
            failed.append(f"{name} Python {python}: " + ("\n    ".join(errors) or done.stderr.strip()))
            print(f"FAIL {name} Python {python}")
        else:
            print(f"ok   {name} Python {python}: {_size(dest) / 1e6:.0f} MB in the folder so far")
    # pure Python: one download serves every target; no --platform, so pip resolves it for this Python
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
               "--only-binary=:all:", "--no-deps", "-d", str(dest), *build]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        failed.append("build backend: " + done.stderr.strip())
    return failed


if __name__ == "__main__":
    raise SystemExit(main())

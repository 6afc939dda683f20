"""Assemble the USB stick's folder for a workshop (`make usb`), and print what it holds.

    make usb PLATFORMS=linux-x86_64,macos-arm64 PYTHONS=3.12      # from the doctor tally
    make usb DOCTORS=doctor-outputs/                                # platforms from the tally itself
    make usb NODOCS=1 ...                                           # without the handout and slides
    python scripts/build_usb.py --wheelhouse wheelhouse/            # reuse a gathered wheelhouse

The folder (default build/usb/toolnode-lab-usb/) holds:
- `repository/toolnode-lab.bundle`: the last commit of this checkout as a git repository of one
  commit (clone it: `git clone toolnode-lab.bundle toolnode-lab`), and `repository/toolnode-lab.zip`,
  the same files for a laptop without git. Both leave out `labs/solutions/`: in the room a lab's
  `q1.solution()` says the solutions are not here (docs/workshop/solutions.md);
- `wheelhouse/`: every wheel the course installs, for the platforms and Pythons asked for
  (`scripts/offline_bundle.py`, which also proves the folder installs each of them with the index
  off). The wheels are gathered with `pip download`: a venv made by uv has no pip, so pip is put
  into it first (from the standard library's `ensurepip`, no network);
- `handout/`: the handout site without the lab solutions, and every PDF the handout build printed
  (the full handout and the day's, the cheat sheets, the run sheet and the feedback form, each on A4
  and Letter); `slides/`: the decks and the live-coding copy of lesson 02 (both left out with
  `--no-docs`);
- `README.txt`: what to do with each, written from what was bundled: the platforms and Pythons
  the wheelhouse holds (read back from its `CONTENTS.txt`), the installers for those platforms
  only, the documents actually copied.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "usb" / "toolnode-lab-usb"
LEFT_OUT = ("labs/solutions",)
"""Paths the stick's copy of the repository leaves out."""
TITLE = "toolnode-lab on a USB stick"
PARTS = ("repository", "wheelhouse", "handout", "slides", "README.txt")
"""What the folder holds: a folder holding nothing else may be rebuilt over."""

LABELS = {
    "linux-x86_64": "Linux, x86_64 (Intel/AMD)",
    "linux-aarch64": "Linux, ARM (aarch64)",
    "macos-arm64": "macOS, Apple chip (M1 or later)",
    "macos-x86_64": "macOS, Intel chip",
    "windows-x86_64": "Windows, 64-bit (x86_64)",
}
"""How the stick's README names each `courseware.platforms.TARGETS` entry."""

LINUX_APT = (("3.12", "Ubuntu 24.04"), ("3.11", "Ubuntu 22.04, Debian 12"), ("3.13", "Debian 13"))
"""Where each Python is in a distribution's standard repositories, for `apt install` (preflight.md:
Ubuntu 24.04 has 3.12, Ubuntu 22.04 has 3.11, neither has 3.13)."""
INSTALL_LINE = "make offline-install WHEELHOUSE=<this stick>/wheelhouse"
"""What each laptop runs in the course folder: the same as copying `wheelhouse/` into it and running
`make offline-install` (the Makefile's WHEELHOUSE defaults to `wheelhouse`)."""

_CONTENTS_TARGET = re.compile(r"^#\s+(\S+) CPython (\d+\.\d+)\s*$")


def bundled(wheelhouse: Path) -> list[tuple[str, str]]:
    """(platform, Python) pairs a wheelhouse holds, read from the `CONTENTS.txt` that
    scripts/offline_bundle.py writes; ValueError when there is none (not a gathered wheelhouse)."""
    contents = Path(wheelhouse) / "CONTENTS.txt"
    if not contents.exists():
        raise ValueError(f"{wheelhouse} has no CONTENTS.txt: it was not made by make offline-bundle "
                         "(or scripts/offline_bundle.py). Gather it again with make offline-bundle.")
    found = []
    for line in contents.read_text(encoding="utf-8").splitlines():
        match = _CONTENTS_TARGET.match(line)
        if match and match.groups() not in found:
            found.append(match.groups())
    if not found:
        raise ValueError(f"{contents} names no platform: gather the wheelhouse again "
                         "with make offline-bundle")
    return found


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def holds(targets: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Platform → its Pythons, in `courseware.platforms.TARGETS` order, Pythons ascending."""
    order = list(LABELS)
    by_platform: dict[str, list[str]] = {}
    for name, python in sorted(targets, key=lambda t: (order.index(t[0]) if t[0] in order else 99,
                                                        _version_key(t[1]))):
        by_platform.setdefault(name, []).append(python)
    return by_platform


def summary(targets: list[tuple[str, str]]) -> str:
    """One line: `Linux, x86_64 (Intel/AMD): Python 3.11; macOS, Apple chip (M1 or later): Python 3.12`."""
    return "; ".join(f"{LABELS.get(name, name)}: Python {', '.join(pythons)}"
                     for name, pythons in holds(targets).items())


def _newest(versions: list[str]) -> str:
    return sorted(set(versions), key=_version_key)[-1]


def readme(targets: list[tuple[str, str]] | None, *, commit: str, repository_url: str = "",
           handout_pdfs: list[str] | None = None, slides: bool = False) -> str:
    """The stick's README.txt, from what was bundled: `targets` None means no wheelhouse;
    `handout_pdfs` None means no handout."""
    lines = [
        TITLE, "=" * len(TITLE), f"Made from the course's commit {commit}, without the lab solutions.", "",
        "repository/   the course. With git:    git clone repository/toolnode-lab.bundle toolnode-lab",
        "              without git:            unzip repository/toolnode-lab.zip",
    ]
    by_system: dict[str, list[str]] = {}  # linux / macos / windows -> the Pythons bundled for it
    if targets:
        by_platform = holds(targets)
        width = max(len(LABELS.get(name, name)) for name in by_platform)
        lines.append("wheelhouse/   every package the course installs, for these laptops only:")
        for name, pythons in by_platform.items():
            lines.append(f"                {LABELS.get(name, name):<{width}}  Python {', '.join(pythons)}")
            by_system.setdefault(name.split("-")[0], []).extend(pythons)
        lines += [
            "              Another platform or Python cannot install from it: it needs the network",
            "              (make setup), or one of the Pythons above.",
            f"              In the course folder:    {INSTALL_LINE}",
            '              then:                    make doctor   (the last line must read "ready")',
        ]
        if "windows" in by_system:
            lines += [
                f"              Windows, no make:        py -{_newest(by_system['windows'])} -m venv .venv",
                "                                       .venv\\Scripts\\python -m pip install --no-deps "
                "--no-index --find-links W",
                "                                           -r requirements.txt -e .   "
                "(one line; W = this stick's wheelhouse)",
                "                                       .venv\\Scripts\\python -m courseware.platforms "
                "jupyterlab-settings",
                "                                       .venv\\Scripts\\python -m courseware.doctor",
            ]
    else:
        lines.append("wheelhouse/   not on this stick: install with the network (make setup).")
    if handout_pdfs is not None:
        lines.append("handout/      open handout/index.html (no network needed)")
        lines += textwrap.wrap("PDFs: " + ", ".join(handout_pdfs), 100, initial_indent=" " * 14,
                               subsequent_indent=" " * 20) if handout_pdfs else []
    if slides:
        lines.append("slides/       the instructor's decks (slides/index.html)")
    python = "the Python named above for your laptop" if targets else "Python 3.11, 3.12 or 3.13"
    lines += ["", f"Before the install: {python}, git and make", "(none of them is on this stick):"]
    if not by_system or "windows" in by_system:
        no_make = ("the Windows lines above" if "windows" in by_system
                   else "docs/workshop/preflight.md, Without make")
        lines += ['  Windows:  Python from https://www.python.org/downloads/windows/ (tick "Add python.exe',
                  '            to PATH"); git from https://git-scm.com/download/win;',
                  f"            no make: {no_make}"]
    if not by_system or "macos" in by_system:
        lines += ["  macOS:    Python from https://www.python.org/downloads/macos/; git and make:",
                  "            xcode-select --install"]
    if not by_system or "linux" in by_system:
        pythons = by_system.get("linux", [version for version, _ in LINUX_APT])
        apt = [(version, where) for version, where in LINUX_APT if version in pythons]
        fedora = _newest(pythons) if targets else "3.12"
        make = f"{INSTALL_LINE} PYTHON=python{pythons[0]}" if targets else "make setup PYTHON=python3.11"
        lines.append("  Linux:    from the distribution's own repositories"
                     + (" (a Python named above for Linux):" if targets else ":"))
        lines += [f"            {where + ':':<25} sudo apt install python{v} python{v}-venv git make"
                  for v, where in apt]
        if not any(where.startswith("Ubuntu") for _, where in apt):
            lines.append("            Ubuntu 24.04 and 22.04 have none of these: install from the network")
        lines += [f"            {'Fedora:':<25} sudo dnf install python{fedora} git make",
                  "            Where python3 is another version, name the one you installed, e.g.",
                  f"              {make}"]
    where = (f"git clone {repository_url}" if repository_url
             else "clone the course's repository (its address is in the pre-flight note you were sent)")
    lines += ["", "The lab solutions are not in this copy. After the session, either", f"  {where}",
              "or copy the solutions/ folder the instructor puts on the stick into your copy's labs/ folder.",
              ""]
    return "\n".join(lines)


def tree_without_solutions(dest: Path, ref: str = "HEAD") -> Path:
    """The files of `ref` (git archive: tracked files only), minus LEFT_OUT, in dest/toolnode-lab."""
    tree = dest / "toolnode-lab"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for rel in LEFT_OUT:
        shutil.rmtree(tree / rel, ignore_errors=True)
    return tree


def repository(out: Path) -> tuple[Path, Path]:
    """The bundle (one commit, no solutions) and the zip of the same files."""
    out = Path(out).absolute()  # git runs in another tree: a relative path would land there
    (out / "repository").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tree = tree_without_solutions(Path(tmp))
        env = {**os.environ, "GIT_AUTHOR_NAME": "toolnode-lab", "GIT_AUTHOR_EMAIL": "workshop@localhost",
               "GIT_COMMITTER_NAME": "toolnode-lab", "GIT_COMMITTER_EMAIL": "workshop@localhost"}
        git = ["git", "-C", str(tree)]
        subprocess.run(git + ["init", "-q", "-b", "main"], check=True, env=env)
        subprocess.run(git + ["add", "-A"], check=True, env=env)
        subprocess.run(git + ["commit", "-q", "-m", "toolnode-lab for the workshop"], check=True, env=env)
        bundle = out / "repository" / "toolnode-lab.bundle"
        subprocess.run(git + ["bundle", "create", "-q", str(bundle), "HEAD", "main"], check=True, env=env)
        archive = out / "repository" / "toolnode-lab.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(tree.rglob("*")):
                if ".git" in path.relative_to(tree).parts or not path.is_file():
                    continue
                z.write(path, Path("toolnode-lab") / path.relative_to(tree))
    return bundle, archive


def ensure_pip(python: str = sys.executable) -> None:
    """The wheelhouse is gathered with `pip download`; a venv made by uv has none. Put it in from
    the standard library's bundled copy (`ensurepip`, no network), else say how."""
    probe = subprocess.run([python, "-c", "import pip"], capture_output=True)
    if probe.returncode == 0:
        return
    print("usb: this venv has no pip (uv made it); installing it from ensurepip to gather the wheels "
          "(make setup removes it again)")
    done = subprocess.run([python, "-m", "ensurepip", "--default-pip"], capture_output=True, text=True)
    if done.returncode == 0:
        return
    why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "ensurepip failed"
    raise SystemExit("usb: cannot put pip into this venv (the wheelhouse is gathered with pip download): "
                     f"{why}. "
                     "Fix: .venv/bin/uv pip install --python .venv/bin/python pip, then make usb again.")


def wheelhouse(out: Path, platforms: str, pythons: str, existing: Path | None) -> list[tuple[str, str]]:
    """Gather (or copy and re-check) the wheelhouse; returns the (platform, Python) pairs it holds."""
    dest = out / "wheelhouse"
    ensure_pip()
    script = [sys.executable, str(ROOT / "scripts" / "offline_bundle.py")]
    if existing:
        targets = bundled(existing)  # before copying: refuse a folder that is not a wheelhouse
        shutil.copytree(existing, dest)
        names = ",".join(dict.fromkeys(name for name, _ in targets))
        versions = ",".join(dict.fromkeys(python for _, python in targets))
        command = [*script, "--check", "--dest", str(dest), "--platforms", names, "--pythons", versions]
    else:
        command = [*script, "--platforms", platforms, "--pythons", pythons, "--dest", str(dest)]
    if _relay(command):
        raise SystemExit("usb: the wheelhouse does not install every platform asked for (above); "
                         "the stick is incomplete. Fix the network or the names, then make usb again.")
    return bundled(dest)


def _relay(command: list[str]) -> int:
    """Run the wheelhouse script, passing its output on as it comes, except its closing advice for a
    wheelhouse copied into a checkout: on the stick the line is `INSTALL_LINE`. Returns its status."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1) as process:
        for line in process.stdout:
            if line.startswith("Copy the folder into each attendee's checkout"):
                line = f"On each laptop, in the course folder: {INSTALL_LINE} (README.txt says so)\n"
            print(line, end="", flush=True)
    return process.returncode


def handout_site(built: Path, dest: Path) -> list[str]:
    """The handout site without the lab solutions, with the built handout's PDFs; returns their names."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_handout

    build_handout.build(dest, pdf=False, solutions=False)
    pdfs = sorted(built.glob("*.pdf"), key=lambda p: (not p.name.startswith("toolnode-lab"), p.name))
    for pdf in pdfs:
        shutil.copy(pdf, dest / pdf.name)
    for page in list(dest.glob("print*.html")) + list(dest.rglob("*.print.html")):
        page.unlink()
    return [pdf.name for pdf in pdfs]


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


def prepare(out: Path) -> Path:
    """`out` as an absolute path, emptied; refuses a folder that is not a stick folder it made
    (so that `USB=/media/usb` or a typo never wipes anything else)."""
    out = Path(out).absolute()
    if out == ROOT or ROOT.is_relative_to(out):
        raise SystemExit(f"usb: {out} holds this checkout; choose a new folder, e.g. USB=build/usb/stick")
    if out.exists():
        ours = {path.name for path in out.iterdir()} <= set(PARTS)  # a stick folder, or a failed build's
        if not ours:
            raise SystemExit(f"usb: {out} exists and is not a stick folder made by make usb: choose an empty "
                             "or new folder (USB=...), or remove it yourself")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--platforms", default=os.environ.get("PLATFORMS", ""))
    parser.add_argument("--pythons", default=os.environ.get("PYTHONS", ""))
    parser.add_argument("--doctor-dir", type=Path, help="take PLATFORMS and PYTHONS from this doctor tally")
    parser.add_argument("--wheelhouse", type=Path, help="copy this gathered wheelhouse instead of gathering")
    parser.add_argument("--no-wheels", action="store_true", help="leave the wheelhouse out")
    parser.add_argument("--no-docs", action="store_true", help="leave the handout and slides out")
    parser.add_argument("--repository-url", default=os.environ.get("REPO", ""),
                        help="where attendees clone the course after the session (README.txt says it)")
    parser.add_argument("--handout", type=Path, default=ROOT / "build" / "handout",
                        help="the built handout (its PDFs are copied; the site is rebuilt without solutions)")
    parser.add_argument("--slides", type=Path, default=ROOT / "build" / "slides")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    if args.doctor_dir:
        sys.path.insert(0, str(ROOT / "scripts"))
        import doctor_tally

        reports = doctor_tally.collect(args.doctor_dir)
        if not reports:
            print(f"usb: no doctor outputs in {args.doctor_dir}", file=sys.stderr)
            return 1
        made = dict(kv.split("=", 1) for kv in doctor_tally.make_args(reports).split())
        args.platforms, args.pythons = made["PLATFORMS"], made["PYTHONS"]
        if not (args.platforms and args.pythons):  # empty would mean every platform and Python
            print(f"usb: the doctor outputs in {args.doctor_dir} name no tested platform and Python: "
                  "check them with make doctor-tally, or name them: make usb PLATFORMS=... PYTHONS=...",
                  file=sys.stderr)
            return 1
    if not args.no_docs:
        for folder in (args.handout, args.slides):
            if not (folder / "index.html").exists():
                print(f"usb: no {folder}/index.html: build it first (make usb does: make handout slides), "
                      "or leave the handout and slides out (make usb NODOCS=1)", file=sys.stderr)
                return 1
    out = prepare(args.out)
    commit = _git("rev-parse", "--short", "HEAD")
    if _git("status", "--porcelain", "--untracked-files=no"):
        print(f"usb: note: the stick holds the last commit ({commit}); changes not committed are not on it")
    repository(out)
    targets = None if args.no_wheels else wheelhouse(out, args.platforms, args.pythons, args.wheelhouse)
    pdfs = None
    if not args.no_docs:
        pdfs = handout_site(args.handout, out / "handout")
        shutil.copytree(args.slides, out / "slides")
    (out / "README.txt").write_text(
        readme(targets, commit=commit, repository_url=args.repository_url, handout_pdfs=pdfs,
               slides=not args.no_docs), encoding="utf-8")
    print(f"usb: {out}")
    for part in sorted(out.iterdir()):
        megabytes = (size(part) if part.is_dir() else part.stat().st_size) / 1e6
        print(f"  {part.name:<12} {megabytes:8.1f} MB")
    print(f"  wheelhouse for: {summary(targets) if targets else 'none (left out)'}")
    if args.no_docs:
        print("  handout and slides: left out (NODOCS)")
    print(f"usb: {size(out) / 1e6:.0f} MB in all (copy the folder to each stick)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

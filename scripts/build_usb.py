"""Assemble the USB stick's folder for a workshop (`make usb`), and print its size.

    make usb PLATFORMS=linux-x86_64,macos-arm64 PYTHONS=3.12      # from the doctor tally
    python scripts/build_usb.py --doctor-dir collected-doctor/      # platforms from the tally itself
    python scripts/build_usb.py --wheelhouse wheelhouse/            # reuse a gathered wheelhouse

The folder (default build/usb/toolnode-lab-usb/) holds:
- `repository/toolnode-lab.bundle`: the course as a git repository of one commit (clone it:
  `git clone toolnode-lab.bundle toolnode-lab`), and `repository/toolnode-lab.zip`, the same files
  for a laptop without git. Both leave out `labs/solutions/`: in the room a lab's `q1.solution()`
  says the solutions are not here (docs/workshop/solutions.md says how the instructor reveals them);
- `wheelhouse/`: every wheel the course installs, for the platforms and Pythons asked for
  (`scripts/offline_bundle.py`, which also proves the folder installs each of them);
- `handout/`: the handout site without the lab solutions, its A4 and Letter PDFs, the one-page
  cheat sheets; `slides/`: the decks and the live-coding copy of lesson 02;
- `README.txt`: what to do with each, and where to get Python for each platform (it cannot be
  downloaded here; docs/workshop/usb.md lists the installers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "usb" / "toolnode-lab-usb"
LEFT_OUT = ("labs/solutions",)
"""Paths the stick's copy of the repository leaves out."""

README = """toolnode-lab on a USB stick
===========================

repository/   the course. With git:    git clone repository/toolnode-lab.bundle toolnode-lab
              without git: unzip repository/toolnode-lab.zip
wheelhouse/   every package, for: {targets}
              in the course folder:    make offline-install WHEELHOUSE=<this stick>/wheelhouse
              Windows, no make:        py -3.12 -m venv .venv
                                       .venv\\Scripts\\python -m pip install --no-index --find-links W
                                           -r requirements.txt -e .   (one line; W = this wheelhouse)
              then:                    make doctor   (the last line must read "ready")
handout/      open handout/index.html (no network needed); PDFs: toolnode-lab-a4.pdf, toolnode-lab-letter.pdf,
              cheatsheet-en.pdf, cheatsheet-zh.pdf, cheatsheet-agent-en.pdf, cheatsheet-agent-zh.pdf
slides/       the instructor's decks (slides/index.html)

Python 3.11, 3.12 or 3.13 is needed first; it is not on this stick:
  Windows / macOS: the installer from https://www.python.org/downloads/ (tick "Add python.exe to PATH")
  Debian / Ubuntu: sudo apt install python3.12 python3.12-venv   (or python3.11)
  Fedora:          sudo dnf install python3.12
The lab solutions are not in this copy; you get them at the end of the session.
"""


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


def wheelhouse(out: Path, platforms: str, pythons: str, existing: Path | None) -> str:
    dest = out / "wheelhouse"
    if existing:
        shutil.copytree(existing, dest)
        return f"copied from {existing}"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "offline_bundle.py"), "--platforms", platforms,
                    "--pythons", pythons, "--dest", str(dest)], check=True)
    return f"{platforms or 'every platform'} × Python {pythons or '3.11–3.13'}"


def handout_site(built: Path, dest: Path) -> None:
    """The handout site without the lab solutions, with the built handout's PDFs."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_handout

    build_handout.build(dest, pdf=False, solutions=False)
    for pdf in built.glob("*.pdf"):
        shutil.copy(pdf, dest / pdf.name)
    for page in list(dest.glob("print*.html")) + list(dest.rglob("*.print.html")):
        page.unlink()


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--platforms", default=os.environ.get("PLATFORMS", ""))
    parser.add_argument("--pythons", default=os.environ.get("PYTHONS", ""))
    parser.add_argument("--doctor-dir", type=Path, help="take PLATFORMS and PYTHONS from this doctor tally")
    parser.add_argument("--wheelhouse", type=Path, help="copy this gathered wheelhouse instead of gathering")
    parser.add_argument("--no-wheels", action="store_true", help="leave the wheelhouse out")
    parser.add_argument("--handout", type=Path, default=ROOT / "build" / "handout",
                        help="the built handout (its PDFs are copied; the site is rebuilt without solutions)")
    parser.add_argument("--slides", type=Path, default=ROOT / "build" / "slides")
    args = parser.parse_args(argv)
    if args.doctor_dir:
        sys.path.insert(0, str(ROOT / "scripts"))
        import doctor_tally

        tally = doctor_tally.make_args(doctor_tally.collect(args.doctor_dir))
        made = dict(kv.split("=", 1) for kv in tally.split())
        args.platforms, args.pythons = made["PLATFORMS"], made["PYTHONS"]
    for folder in (args.handout, args.slides):
        if not (folder / "index.html").exists():
            print(f"usb: no {folder}/index.html: build it first (make usb does: make handout slides)",
                  file=sys.stderr)
            return 1
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    bundle, archive = repository(args.out)
    wheels = ("left out" if args.no_wheels
              else wheelhouse(args.out, args.platforms, args.pythons, args.wheelhouse))
    handout_site(args.handout, args.out / "handout")
    shutil.copytree(args.slides, args.out / "slides")
    targets = args.platforms or "every platform"
    targets += f", Python {args.pythons or '3.11-3.13'}"
    (args.out / "README.txt").write_text(README.format(targets=targets), encoding="utf-8")
    print(f"usb: {args.out}")
    for part in sorted(args.out.iterdir()):
        megabytes = (size(part) if part.is_dir() else part.stat().st_size) / 1e6
        print(f"  {part.name:<12} {megabytes:8.1f} MB")
    print(f"  wheelhouse: {wheels}")
    print(f"usb: {size(args.out) / 1e6:.0f} MB in all (copy the folder to each stick)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

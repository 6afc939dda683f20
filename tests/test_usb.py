"""The USB stick (`make usb`, scripts/build_usb.py), the doctor tally's `make usb` line
(scripts/doctor_tally.py) and the shared-laptop reset (`make reset-laptop`), docs/workshop/usb.md.

The fast tests run in the normal suite. The end-to-end one (`make usb-test`, run by `.ci/run`) builds
a stick for this machine with `make usb NODOCS=1` (the handout and slides take minutes and have their
own tests), then plays an attendee's laptop: a fresh clone from the stick's bundle, `make
offline-install` and `make doctor` with the network cut (`unshare -n` where it works, else the index
switched off and the proxies pointed at a closed port), the lab resets, `make reset-laptop` between
two groups, the solutions copied at the wrap-up, and the pip path for a laptop without make.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from courseware import platforms

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


usb = _load("build_usb")
tally = _load("doctor_tally")
bundle = _load("offline_bundle")

USB_MD = (ROOT / "docs" / "workshop" / "usb.md").read_text(encoding="utf-8")


# -- what the stick says it holds ----------------------------------------------------------------------

def _gathered(tmp_path, monkeypatch, platforms_: str, pythons: str) -> Path:
    """A wheelhouse as scripts/offline_bundle.py leaves it, its downloads and pip checks stubbed."""
    dest = tmp_path / "wheelhouse"
    dest.mkdir()
    for name in ("setuptools-80.0.0-py3-none-any.whl", "wheel-0.45.0-py3-none-any.whl"):
        (dest / name).write_bytes(b"")
    monkeypatch.setattr(bundle, "download", lambda *args: [])
    monkeypatch.setattr(bundle.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    assert bundle.main(["--platforms", platforms_, "--pythons", pythons, "--dest", str(dest)]) == 0
    return dest


def test_the_stick_reads_its_platforms_back_from_what_was_gathered(tmp_path, monkeypatch):
    dest = _gathered(tmp_path, monkeypatch, "windows-x86_64,linux-x86_64", "3.12,3.11")
    assert sorted(usb.bundled(dest)) == [("linux-x86_64", "3.11"), ("linux-x86_64", "3.12"),
                                         ("windows-x86_64", "3.11"), ("windows-x86_64", "3.12")]
    assert usb.holds(usb.bundled(dest)) == {"linux-x86_64": ["3.11", "3.12"],
                                            "windows-x86_64": ["3.11", "3.12"]}
    (dest / "CONTENTS.txt").unlink()
    with pytest.raises(ValueError, match="make offline-bundle"):
        usb.bundled(dest)


def test_the_readme_names_only_what_the_stick_holds():
    text = usb.readme([("linux-x86_64", "3.11")], commit="abc1234", handout_pdfs=["toolnode-lab-a4.pdf"],
                      slides=True)
    assert "Linux, x86_64 (Intel/AMD)  Python 3.11" in text
    assert set(re.findall(r"\b3\.1\d\b", text)) == {"3.11"}, "only the bundled Python is named"
    for absent in ("every platform", "Windows", "macOS", "py -3", "xcode-select"):
        assert absent not in text
    assert "sudo apt install python3.11 python3.11-venv git make" in text
    assert "make offline-install WHEELHOUSE=<this stick>/wheelhouse" in text
    assert "toolnode-lab-a4.pdf" in text and "slides/index.html" in text and "abc1234" in text
    assert "pre-flight note" in text, "no address given: it says where the address is"

    room = usb.readme([("windows-x86_64", "3.12"), ("macos-arm64", "3.13"), ("macos-arm64", "3.12")],
                      commit="abc1234", repository_url="https://github.com/ada/toolnode-lab")
    assert "macOS, Apple chip (M1 or later)  Python 3.12, 3.13" in room
    assert "py -3.12 -m venv .venv" in room and "--no-deps --no-index --find-links W" in room
    assert "python -m courseware.platforms jupyterlab-settings" in room
    assert "xcode-select --install" in room and "Linux" not in room and "apt install" not in room
    assert "git clone https://github.com/ada/toolnode-lab" in room
    assert "handout/" not in room and "slides/" not in room, "documents left out are not announced"

    none = usb.readme(None, commit="abc1234")
    assert "wheelhouse/   not on this stick" in none and "Python 3.11, 3.12 or 3.13" in none
    assert max(map(len, (text + room + none).splitlines())) <= 110


def test_the_readme_gives_each_python_where_the_distribution_has_it():
    # preflight.md's wording: Ubuntu 24.04 has 3.12, Ubuntu 22.04 has 3.11, neither has 3.13
    flat = lambda text: " ".join(text.split())  # noqa: E731
    old = flat(usb.readme([("linux-x86_64", "3.11")], commit="abc1234"))
    assert "Ubuntu 22.04, Debian 12: sudo apt install python3.11 python3.11-venv git make" in old
    assert "Ubuntu 24.04" not in old
    assert f"{usb.INSTALL_LINE} PYTHON=python3.11" in old
    new = flat(usb.readme([("linux-x86_64", "3.12")], commit="abc1234"))
    assert "Ubuntu 24.04: sudo apt install python3.12 python3.12-venv git make" in new
    assert "Ubuntu 22.04" not in new
    newest = flat(usb.readme([("linux-x86_64", "3.13")], commit="abc1234"))
    assert "Ubuntu 24.04 and 22.04 have none of these" in newest
    none = flat(usb.readme(None, commit="abc1234"))
    preflight = flat((ROOT / "docs" / "workshop" / "preflight.md").read_text(encoding="utf-8"))
    for version, where in usb.LINUX_APT:
        assert f"{where}: sudo apt install python{version} python{version}-venv git make" in none
        if where.startswith("Ubuntu"):
            assert f"{where.split(',')[0]} " in preflight and f"python{version}-venv" in preflight
    assert "make setup PYTHON=python3.11" in none and "sudo dnf install python3.12 git make" in none


def test_make_usb_tells_the_install_line_the_stick_needs(capsys):
    # scripts/offline_bundle.py ends with advice for a wheelhouse copied into a checkout; on the
    # stick the line is the one README.txt and usb.md give, which the Makefile honours
    script = ("print('ok   linux-x86_64 Python 3.12: installs from the folder with --no-index'); "
              "print(\"Copy the folder into each attendee's checkout and run make offline-install, \"\n"
              "\"or leave it on the stick: make offline-install WHEELHOUSE=<that folder>\")")
    assert usb._relay([sys.executable, "-c", script]) == 0
    out = capsys.readouterr().out
    assert "installs from the folder with --no-index" in out
    assert f"On each laptop, in the course folder: {usb.INSTALL_LINE}" in out
    assert "each attendee's checkout" not in out
    assert usb._relay([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    bundle = (ROOT / "scripts" / "offline_bundle.py").read_text(encoding="utf-8")
    assert "print(\"Copy the folder into each attendee's checkout" in bundle, "the line _relay replaces"
    assert "make offline-install WHEELHOUSE=/media/usb/wheelhouse" in USB_MD
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\noffline-install:", 1)[1].split("\n\n", 1)[0]
    assert 'PIP_FIND_LINKS="$(abspath $(WHEELHOUSE))"' in recipe and "WHEELHOUSE ?= wheelhouse" in makefile


# -- building the folder ---------------------------------------------------------------------------------

def test_a_relative_out_builds_the_repository_without_solutions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert usb.main(["--out", "sticks/one", "--no-wheels", "--no-docs"]) == 0
    stick = tmp_path / "sticks" / "one"
    assert sorted(p.name for p in stick.iterdir()) == ["README.txt", "repository"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(stick / "repository" / "toolnode-lab.bundle"), str(clone)],
                   check=True)
    tracked = subprocess.run(["git", "-C", str(clone), "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert "labs/01_make_it_concurrent.ipynb" in tracked
    assert not any(path.startswith("labs/solutions/") for path in tracked)
    with zipfile.ZipFile(stick / "repository" / "toolnode-lab.zip") as z:
        assert sorted(name.removeprefix("toolnode-lab/") for name in z.namelist()) == sorted(tracked)
    readme = (stick / "README.txt").read_text(encoding="utf-8")
    assert "wheelhouse/   not on this stick" in readme and "handout/" not in readme
    # built again over itself, or over a failed build's leftovers
    (stick / "README.txt").unlink()
    assert usb.prepare(Path("sticks/one")) == stick and not any(stick.iterdir())


def test_doctor_outputs_that_name_no_platform_do_not_mean_every_platform(tmp_path, capsys):
    (tmp_path / "doctors").mkdir()
    (tmp_path / "doctors" / "ada.txt").write_text("I could not run it, sorry\n", encoding="utf-8")
    assert usb.main(["--out", str(tmp_path / "stick"), "--doctor-dir", str(tmp_path / "doctors"),
                     "--no-docs"]) == 1
    assert "name no tested platform" in capsys.readouterr().err
    assert not (tmp_path / "stick").exists()


def test_it_never_empties_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x", encoding="utf-8")
    with pytest.raises(SystemExit, match="not a stick folder"):
        usb.prepare(tmp_path / "mine")
    assert (tmp_path / "mine" / "thesis.tex").exists()
    with pytest.raises(SystemExit, match="holds this checkout"):
        usb.prepare(ROOT.parent)


def test_a_venv_without_pip_gets_it_from_ensurepip(tmp_path):
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    python = str(tmp_path / "v" / "bin" / "python")
    assert subprocess.run([python, "-c", "import pip"], capture_output=True).returncode != 0
    usb.ensure_pip(python)
    assert subprocess.run([python, "-c", "import pip"], capture_output=True).returncode == 0


def _make(*args: str, cwd: Path = ROOT, makefile: Path | None = None, env=None, check=False):
    command = [MAKE, "--no-print-directory", *(["-f", str(makefile)] if makefile else []), *args]
    clean = {k: v for k, v in (env or os.environ).items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(command, cwd=cwd, env=clean, capture_output=True, text=True, timeout=1800)
    if check:
        assert done.returncode == 0, f"make {' '.join(args)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_make_usb_hands_an_absolute_folder_and_nodocs_skips_the_handout():
    full = _make("-n", "usb", "USB=build/usb/x").stdout
    assert f"--out \"{ROOT / 'build' / 'usb' / 'x'}\"" in full
    assert "scripts/build_handout.py" in full and "scripts/build_slides.py" in full
    lean = _make("-n", "usb", "NODOCS=1", "USB=sticks/x", "REPO=https://x.example/y").stdout
    assert f"--out \"{ROOT / 'sticks' / 'x'}\"" in lean and "--no-docs" in lean
    assert "--repository-url \"https://x.example/y\"" in lean
    assert "build_handout" not in lean and "build_slides" not in lean


# -- the doctor tally's make usb line --------------------------------------------------------------------

def _report(tmp_path, who: str, lines: list[str]) -> None:
    (tmp_path / f"{who}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_tally_asks_for_wheels_of_the_python_people_will_install(tmp_path):
    old = platforms.check_platform("Linux", "x86_64", (3, 10, 13))
    assert old.ok is False and ("PYTHON=python3.1" in old.fix or "install Python 3.11" in old.fix)
    _report(tmp_path, "ada", [str(old), f"NOT ready: 7 check(s) failed; fix: {old.fix}"])
    _report(tmp_path, "bob", ["[FAIL] python: 3.10.4 (need >= 3.11)",
                              "       fix: `make setup PYTHON=python3.12`",
                              "[FAIL] platform: macOS arm64, Python 3.10.4: too old (fix above)",
                              "NOT ready: 2 check(s) failed; fix: `make setup PYTHON=python3.12`"])
    _report(tmp_path, "chen", ["[FAIL] platform: Windows AMD64, Python 3.9.13: too old: the pinned libraries "
                               "need Python 3.11 or newer",
                               "       fix: `py -3.11 -m venv --clear .venv; .venv\\Scripts\\python -m pip "
                               "install -r requirements.txt -e .`", "NOT ready: 1 check(s) failed"])
    _report(tmp_path, "dee", ["[note] platform: Linux x86_64, Python 3.14.0: outside the tested range",
                              "       fix: use a tested Python: `make setup PYTHON=python3.13`",
                              "ready: the course runs offline here"])
    _report(tmp_path, "eve", ["[ok  ] platform: Linux x86_64, Python 3.12.4: tested", "ready: the course"])
    reports = tally.collect(tmp_path)
    line = tally.make_args(reports)
    platforms_, pythons = (part.split("=", 1)[1] for part in line.split())
    assert pythons == "3.11,3.12,3.13", line
    assert "3.10" not in line and "3.9" not in line and "3.14" not in line
    # the line the tally prints is one the bundler accepts (it refused PYTHONS=3.10)
    with pytest.raises(ValueError):
        bundle.parse_list("3.10", tuple(platforms.SUPPORTED_PYTHONS), "Python")
    assert bundle.main(["--dry-run", "--platforms", platforms_, "--pythons", pythons]) == 0
    text = tally.summary(reports)
    assert "Python 3.10 -> 3.12: bob" in text and "Python 3.9 -> 3.11: chen" in text
    assert "Python 3.14 -> 3.13: dee" in text and "eve" not in text.split("untested Pythons")[1]
    assert text.endswith(f"for the USB stick: make usb {line}")


def test_a_doctor_output_saved_by_powershell_is_read(tmp_path):
    text = "[ok  ] platform: Windows AMD64, Python 3.12.4: tested\r\nready: the course runs offline here\r\n"
    (tmp_path / "wen.txt").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    report = tally.read_report(tmp_path / "wen.txt")
    assert report.ready and report.platform == "windows-x86_64" and report.python == "3.12"


# -- between two groups on a shared laptop ---------------------------------------------------------------

def _stick_copy(tmp_path) -> Path:
    """A clone of the stick's repository: the committed tree without labs/solutions/, one commit."""
    tree = usb.tree_without_solutions(tmp_path)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "stick"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, env=env)
    return tree


def _group_was_here(copy: Path, env: dict) -> None:
    """What a group leaves: a saved lesson and lab, backups, checkpoints, new files, their history."""
    lesson = copy / "notebooks" / "01_sequential_vs_gather.ipynb"
    lesson.write_text(lesson.read_text(encoding="utf-8").replace("gather", "GATHER"), encoding="utf-8")
    (copy / "labs" / "backups").mkdir(exist_ok=True)
    (copy / "labs" / "backups" / "01_make_it_concurrent.2026-12-05T10-00-00.000000.ipynb").write_text("{}")
    (copy / "notebooks" / ".ipynb_checkpoints").mkdir()
    (copy / "notebooks" / ".ipynb_checkpoints" / "01_sequential_vs_gather-checkpoint.ipynb").write_text("{}")
    (copy / "saved-lessons" / "20261205-100000").mkdir(parents=True)
    (copy / "Untitled.ipynb").write_text("{}")
    (copy / "results.json").write_text("{}")
    history = Path(env["IPYTHONDIR"]) / "profile_default" / "history.sqlite"
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_bytes(b"SQLite format 3\x00")
    spaces = Path(env["JUPYTER_CONFIG_DIR"]) / "lab" / "workspaces"
    spaces.mkdir(parents=True, exist_ok=True)
    (spaces / "default-37a8.jupyterlab-workspace").write_text("{}")


def _left_over(copy: Path) -> list[str]:
    status = subprocess.run(["git", "-C", str(copy), "status", "--porcelain", "--ignored"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return sorted(line for line in status if not line.endswith((".venv/", ".egg-info/", "__pycache__/")))


def _isolated(tmp_path) -> dict:
    env = dict(os.environ)
    for name in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR"):
        env[name] = str(tmp_path / "home" / name.lower())
    env.pop("JUPYTERLAB_WORKSPACES_DIR", None)
    return env


@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_reset_laptop_leaves_nothing_of_the_last_group(tmp_path):
    copy = _stick_copy(tmp_path)
    env = _isolated(tmp_path)
    (copy / "wheelhouse").mkdir()
    (copy / "wheelhouse" / "CONTENTS.txt").write_text("# kept\n")
    _group_was_here(copy, env)
    venv = f"VENV={ROOT / '.venv'}"
    runtime = Path(env["JUPYTER_RUNTIME_DIR"])
    runtime.mkdir(parents=True)
    server = runtime / f"jpserver-{os.getpid()}.json"  # JupyterLab running in this folder
    server.write_text(json.dumps({"pid": os.getpid(), "root_dir": str(copy), "url": "http://127.0.0.1:8888/"}))
    refused = _make("-f", str(ROOT / "Makefile"), "reset-laptop", venv, cwd=copy, env=env)
    assert refused.returncode != 0 and "JupyterLab is running here" in refused.stdout + refused.stderr
    assert (copy / "Untitled.ipynb").exists(), "refused before touching anything"
    server.unlink()
    _make("-f", str(ROOT / "Makefile"), "reset-laptop", venv, cwd=copy, env=env, check=True)
    assert _left_over(copy) == ["!! wheelhouse/"], "only the installed things stay"
    assert not list(Path(env["IPYTHONDIR"]).rglob("history.sqlite"))
    assert not list(Path(env["JUPYTER_CONFIG_DIR"]).rglob("*.jupyterlab-workspace"))


@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_reset_laptop_refuses_a_checkout_with_the_solutions_and_an_unzipped_copy(tmp_path):
    full = tmp_path / "full"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(full)], check=True)
    (full / "notes.md").write_text("my uncommitted work\n", encoding="utf-8")
    done = _make("-f", str(ROOT / "Makefile"), "reset-laptop", f"VENV={ROOT / '.venv'}", cwd=full,
                 env=_isolated(tmp_path))
    assert done.returncode != 0 and "make reset-laptop YES=1" in done.stdout + done.stderr
    assert (full / "notes.md").exists()
    unzipped = usb.tree_without_solutions(tmp_path / "z")
    done = _make("-f", str(ROOT / "Makefile"), "reset-laptop", f"VENV={ROOT / '.venv'}", cwd=unzipped,
                 env=_isolated(tmp_path))
    assert done.returncode != 0 and "unzip repository/toolnode-lab.zip" in done.stdout + done.stderr


def test_reset_laptop_works_offline_like_the_other_resets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^reset-laptop:([^#\n]*)", makefile, re.M)
    assert rule and "setup" not in rule.group(1), "make reset-laptop must not install first"


# -- the docs say what the code does ---------------------------------------------------------------------

def test_the_docs_name_the_backups_folder_the_code_writes():
    from helpers.labs import build

    assert build.BACKUPS.relative_to(ROOT).as_posix() == "labs/backups"
    for name in ("usb.md", "preflight.md", "solutions.md"):
        text = (ROOT / "docs" / "workshop" / name).read_text(encoding="utf-8")
        assert "labs/.backups" not in text, name
    assert "labs/backups/" in USB_MD and "make reset-laptop" in USB_MD


def test_the_preflight_note_is_sent_two_weeks_before_and_asks_everyone():
    text = (ROOT / "docs" / "workshop" / "preflight.md").read_text(encoding="utf-8")
    note = text.split("## What to send attendees", 1)[1].split("### Without make", 1)[0]
    assert "the day before" not in text.split("## Reading the output")[0]
    assert "**a week before**" in text
    assert "git clone <REPOSITORY-ADDRESS> toolnode-lab" in note and "replace `<REPOSITORY-ADDRESS>`" in note
    assert "xcode-select --install" in note and "Git for Windows" in note and "Without make" in note
    assert "whatever its last line says" in note and "make doctor > doctor.txt" in note
    guide = (ROOT / "docs" / "workshop" / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\| two weeks before \| send \[the pre-flight note\]", guide), "the checklist's timing"
    assert "**two weeks before**" in text, "the note goes out two weeks before"


def test_the_handout_times_agree_between_the_makefile_and_the_docs():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = makefile.split("\nhandout: ", 1)[1].split("\n", 1)[0]
    quiet, busy = re.search(r"\((\d+-\d+) min on a quiet machine, (\d+-\d+) busy\)", rule).groups()
    quiet, busy = quiet.replace("-", "–"), busy.replace("-", "–")
    stated = f"about {quiet} minutes on a quiet machine, {busy} on a busy one"
    assert stated in " ".join(USB_MD.split())
    assert "about a minute" not in rule


# -- end to end: a stick for this machine, installed on a laptop with no network -------------------------

E2E = os.environ.get("TOOLNODE_LAB_USB_TEST") == "1"


def _network_cut() -> tuple[list[str], dict]:
    """A prefix and environment under which nothing reaches the network."""
    probe = ["unshare", "-n", "true"]
    if shutil.which("unshare") and subprocess.run(probe, capture_output=True).returncode == 0:
        return ["unshare", "-n"], {}
    closed = "http://127.0.0.1:9"
    return [], {"PIP_NO_INDEX": "1", "UV_OFFLINE": "1", "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
                "http_proxy": closed, "https_proxy": closed, "ALL_PROXY": closed}


@pytest.mark.skipif(not E2E, reason="builds a stick and installs from it (minutes): make usb-test")
def test_a_laptop_with_no_network_installs_from_the_stick_and_the_doctor_says_ready(tmp_path, capsys):
    here = platforms.matching_target()
    if here is None:
        pytest.skip("this machine is not one of the platforms the stick is built for")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    repo = "https://github.com/ada/toolnode-lab"
    stick = tmp_path / "stick"
    started = time.monotonic()
    _make("usb", "NODOCS=1", f"USB={stick}", f"PLATFORMS={here.name}", f"PYTHONS={python}", f"REPO={repo}",
          check=True)
    built = time.monotonic() - started
    readme = (stick / "README.txt").read_text(encoding="utf-8")
    assert f"{usb.LABELS[here.name]}  Python {python}" in readme and f"git clone {repo}" in readme
    assert set(re.findall(r"\b3\.1\d\b", readme)) == {python}
    assert sorted(p.name for p in stick.iterdir()) == ["README.txt", "repository", "wheelhouse"]
    stated = int(re.search(r"One platform and one Python: about (\d+) MB", USB_MD).group(1))
    megabytes = usb.size(stick / "wheelhouse") / 1e6
    assert 0.7 * stated <= megabytes <= 1.3 * stated, f"usb.md says about {stated} MB; it is {megabytes:.0f}"

    # the laptop: nothing but a Python, git and make; no cache, no network
    prefix, cut = _network_cut()
    laptop = tmp_path / "laptop"
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "TOOLNODE_LAB_USB_TEST", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    env = {k: v for k, v in _isolated(tmp_path).items() if k not in dropped}
    cache = tmp_path / "cache"
    env.update(cut, UV_CACHE_DIR=str(cache / "uv"), PIP_CACHE_DIR=str(cache / "pip"),
               XDG_CACHE_HOME=str(cache))
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if Path(p) != ROOT / ".venv" / "bin")
    copy = laptop / "toolnode-lab"
    subprocess.run(["git", "clone", "-q", str(stick / "repository" / "toolnode-lab.bundle"), str(copy)],
                   check=True)
    assert not (copy / "labs" / "solutions").exists()

    def offline(*command: str, check: bool = True, cwd: Path = copy) -> subprocess.CompletedProcess:
        done = subprocess.run([*prefix, *command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=1800)
        if check:
            assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        return done

    if prefix:
        reach = offline(sys.executable, "-c", "import socket; socket.create_connection(('pypi.org', 443), 5)",
                        check=False)
        assert reach.returncode != 0, "the network is not cut"
    base = getattr(sys, "_base_executable", sys.executable)
    started = time.monotonic()
    offline(MAKE, "offline-install", f"WHEELHOUSE={stick / 'wheelhouse'}", f"PYTHON={base}")
    installed = time.monotonic() - started
    doctor = offline(MAKE, "--no-print-directory", "doctor")
    verdict = doctor.stdout.strip().splitlines()[-1]
    assert verdict.startswith("ready: the course runs offline here"), doctor.stdout

    # an unzipped copy: no commit to reset from, so the lab comes from the zip again (usb.md)
    unzipped = tmp_path / "unzipped"
    with zipfile.ZipFile(stick / "repository" / "toolnode-lab.zip") as z:
        z.extractall(unzipped)
    lab = unzipped / "toolnode-lab" / "labs" / "01_make_it_concurrent.ipynb"
    starter = lab.read_text(encoding="utf-8")
    lab.write_text("{}", encoding="utf-8")
    refused = offline(str(copy / ".venv" / "bin" / "python"), "-m", "helpers.labs", "reset", "01",
                      cwd=unzipped / "toolnode-lab", check=False)
    assert refused.returncode != 0 and "your file is unchanged" in refused.stderr, refused.stderr
    assert lab.read_text(encoding="utf-8") == "{}"
    command = re.search(r"^unzip -o (\S+) (\S+) -d \.\.$", USB_MD, re.M)
    assert command, "usb.md gives the unzip command for one lab"
    zip_path = command.group(1).replace("/media/usb", str(stick))
    subprocess.run(["unzip", "-q", "-o", zip_path, command.group(2), "-d", ".."], cwd=lab.parents[1],
                   check=True)
    assert lab.read_text(encoding="utf-8") == starter

    # the doctor's output, sent in, tallies to this very stick
    outputs = tmp_path / "doctor-outputs"
    outputs.mkdir()
    (outputs / "ada.txt").write_text(doctor.stdout, encoding="utf-8")
    assert tally.make_args(tally.collect(outputs)) == f"PLATFORMS={here.name} PYTHONS={python}"
    counted = offline(MAKE, "--no-print-directory", "doctor-tally", f"DOCTORS={outputs}").stdout
    assert "1 doctor reports: 1 ready" in counted and counted.rstrip().endswith(
        f"make usb PLATFORMS={here.name} PYTHONS={python}"), counted

    # the lab resets in the stick's copy (no labs/solutions/)
    lab = copy / "labs" / "01_make_it_concurrent.ipynb"
    starter = lab.read_text(encoding="utf-8")
    lab.write_text(starter.rstrip() + "\n\n", encoding="utf-8")  # the learner's version differs
    offline(MAKE, "reset-lab", "N=01")
    assert lab.read_text(encoding="utf-8") == starter
    assert len(list((copy / "labs" / "backups").glob("01_make_it_concurrent.*.ipynb"))) == 1
    offline(MAKE, "reset-labs")

    # between two groups
    _group_was_here(copy, env)
    offline(MAKE, "reset-laptop")
    assert _left_over(copy) == [], "nothing of the group left"
    doctor = offline(MAKE, "--no-print-directory", "doctor")
    assert doctor.stdout.strip().splitlines()[-1].startswith("ready:")

    # the wrap-up: solutions from the stick (solutions.md)
    probe = ".venv/bin/python", "-c", "from helpers.labs import lab01; lab01.q1.solution()"
    assert "(no 01_make_it_concurrent.ipynb here" in offline(*probe).stdout
    subprocess.run(["cp", "-r", str(ROOT / "labs" / "solutions"), str(stick / "solutions")], check=True)
    offline("cp", "-r", str(stick / "solutions"), "labs/solutions")
    shown = offline(*probe).stdout
    assert "(no 01_make_it_concurrent.ipynb here" not in shown and "gather" in shown
    refused = offline(MAKE, "reset-laptop", check=False)
    assert refused.returncode != 0 and "YES=1" in refused.stdout, "a copy with the solutions asks for YES=1"

    # a second stick from the first one's wheelhouse (make usb WHEELS=...), re-checked with no network
    again = offline(sys.executable, str(ROOT / "scripts" / "build_usb.py"), "--out", str(tmp_path / "stick2"),
                    "--wheelhouse", str(stick / "wheelhouse"), "--no-docs", cwd=ROOT)
    assert "installs from the folder with --no-index" in again.stdout
    assert usb.bundled(tmp_path / "stick2" / "wheelhouse") == [(here.name, python)]

    # a laptop without make (the stick's Windows lines, here with the POSIX paths)
    started = time.monotonic()
    offline(base, "-m", "venv", str(laptop / "pip-venv"))
    pip_python = str(laptop / "pip-venv" / "bin" / "python")
    offline(pip_python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--find-links",
            str(stick / "wheelhouse"), "-r", "requirements.txt", "-e", ".")
    by_pip = time.monotonic() - started
    offline(pip_python, "-m", "courseware.platforms", "jupyterlab-settings")
    doctor = offline(pip_python, "-m", "courseware.doctor")
    assert doctor.stdout.strip().splitlines()[-1].startswith("ready:"), doctor.stdout
    assert "[FAIL]" not in doctor.stdout and "jupyterlab offline: no update check" in doctor.stdout
    with capsys.disabled():
        print(f"\nmake usb NODOCS=1 (one platform): {built:.0f} s; make offline-install: {installed:.0f} s; "
              f"pip path: {by_pip:.0f} s; network cut by {'unshare -n' if prefix else 'the environment'}")

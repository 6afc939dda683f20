"""Where the course runs: the tested platforms and Pythons, the lock's markers, and what breaks where.

    python -m courseware.platforms                    # this machine: platform, Python, known breakages
    python -m courseware.platforms venv-matches-lock  # exit 0 when this environment holds the tested set
    python -m courseware.platforms jupyterlab-settings  # JupyterLab offline here: no update check, no news
    python3.11 -m courseware.platforms setup .venv    # what `make setup` runs: create or repair the venv

`requirements.txt` is one universal lock: every pin carries the environment marker that says where it
applies (`appnope==… ; sys_platform == 'darwin'`), so pip, `make setup` and conda install the right
subset on Linux, macOS and Windows from the same file. This module reads it the way pip does (a pin
counts only where its marker is true), and is what `make setup`, `make lock`, the doctor and
`tests/test_environment.py` share. It imports only the standard library at module level, so it runs
in an environment whose packages are broken, which is exactly when `make setup` needs it; `setup` is
run by the interpreter `make setup PYTHON=...` names, from the checkout, before any venv exists.
`courseware.doctor` imports this module (its `Check` lines are defined here); this module never imports
the doctor.

Taught in `notebooks/00_start_here.ipynb` (through `courseware.doctor`).
"""

from __future__ import annotations

import json
import locale
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.txt"

SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")
"""The Python versions the pinned set is resolved for and the suite was run on."""

TESTED_RANGE = f"{SUPPORTED_PYTHONS[0]}–{SUPPORTED_PYTHONS[-1]}"

UV_VERSION = "0.13.9"
"""The one uv release `make setup`, `make lock` and `make compat` use (the Makefile's UV_VERSION)."""

VENV = ROOT / ".venv"
STAMP_NAME = ".toolnode-lab-installed"
"""In the venv: the last install finished and passed its checks."""


@dataclass
class Check:
    """One line of the doctor's report: `ok` is True (pass), False (fail) or None (a note, not a failure).

    Taught in `notebooks/00_start_here.ipynb` (through `courseware.doctor`).
    """

    name: str
    ok: bool | None
    detail: str
    fix: str = ""

    def __str__(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "note"}[self.ok]
        text = f"[{mark}] {self.name}: {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix and self.ok is not True else "")


# The commands a message prints: each runs as printed from a fresh shell, on this machine.

def _shown(path: Path) -> str:
    """A path as messages print it: relative inside the checkout, `~/...` under home (no user name)."""
    path = Path(path)
    for base, prefix in ((ROOT, ""), (Path.home(), "~/")):
        try:
            rest = path.relative_to(base)
        except ValueError:
            continue
        return prefix + str(rest) if str(rest) != "." else (prefix.rstrip("/") or ".")
    return str(path)


def venv_python(venv: Path = VENV, windows: bool | None = None) -> Path:
    """The venv's interpreter: `<venv>/bin/python`, or `<venv>\\Scripts\\python.exe` on Windows."""
    windows = os.name == "nt" if windows is None else windows
    return venv / ("Scripts/python.exe" if windows else "bin/python")


def python_command(windows: bool | None = None) -> str:
    """How to run *this* interpreter from a fresh shell in the checkout: `.venv/bin/python` for the
    project's venv (`.venv\\Scripts\\python` on Windows), else its full path (a conda env, a venv of
    your own), never a bare `python`, which a fresh shell resolves to another Python."""
    windows = os.name == "nt" if windows is None else windows
    if Path(sys.prefix).resolve() == VENV.resolve():
        return ".venv\\Scripts\\python" if windows else ".venv/bin/python"
    return _shown(Path(sys.executable))


def supported_python_on_path(which=shutil.which) -> str | None:
    """The first of python3.11, python3.12, python3.13 found on PATH (the name to pass as PYTHON=)."""
    return next((f"python{v}" for v in SUPPORTED_PYTHONS if which(f"python{v}")), None)


def offline_hint(root: Path = ROOT) -> str:
    """The fix when the package index cannot be reached: the wheelhouse here, or how to get one."""
    if (root / "wheelhouse" / "CONTENTS.txt").exists():
        return "with no network: `make offline-install` (installs from the wheelhouse/ here)"
    return ("with no network: copy a wheelhouse/ made by `make offline-bundle` on a machine with one into "
            "this checkout, then `make offline-install`")


def setup_fix(python_ok: bool | None = None, windows: bool | None = None, which=shutil.which) -> str:
    """The one command that puts the tested set into the project's venv here.

    `make setup` (with `PYTHON=` naming a tested Python found on PATH when this one is outside
    3.11–3.13); on Windows, the two commands of the README's Windows path.
    """
    windows = os.name == "nt" if windows is None else windows
    python_ok = sys.version_info[:2] in _supported() if python_ok is None else python_ok
    if windows:
        install = ".venv\\Scripts\\python -m pip install -r requirements.txt -e ."
        if python_ok:
            return f"`{install}`"
        return f"`py -{SUPPORTED_PYTHONS[0]} -m venv --clear .venv; {install}`"
    if python_ok:
        return "`make setup`"
    found = supported_python_on_path(which)
    if found:
        return f"`make setup PYTHON={found}`"
    return (f"install Python {SUPPORTED_PYTHONS[0]} (python.org, your package manager or pyenv), then "
            f"`make setup PYTHON=python{SUPPORTED_PYTHONS[0]}`")


def _supported() -> set[tuple[int, int]]:
    return {tuple(int(part) for part in v.split(".")) for v in SUPPORTED_PYTHONS}


@dataclass(frozen=True)
class Target:
    """One kind of laptop the lock must install on: marker values and the wheel tags pip accepts there."""

    name: str
    sys_platform: str
    platform_system: str
    os_name: str
    machine: str
    wheel_platforms: tuple[str, ...]
    oldest_os: str

    def marker_environment(self, python: str) -> dict[str, str]:
        """The PEP 508 marker values of CPython `python` (e.g. "3.12") on this target."""
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{python}.0",
            "os_name": self.os_name,
            "platform_machine": self.machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": self.platform_system,
            "platform_version": "",
            "python_full_version": f"{python}.0",
            "python_version": python,
            "sys_platform": self.sys_platform,
            "extra": "",
        }


def _manylinux(arch: str, newest_glibc_minor: int) -> tuple[str, ...]:
    # pip does not expand manylinux_2_X tags itself: list every glibc the wheels may be built for.
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(newest_glibc_minor, 16, -1)]
    return (*tags, f"manylinux2014_{arch}")


TARGETS = (
    Target("linux-x86_64", "linux", "Linux", "posix", "x86_64", _manylinux("x86_64", 28), "glibc 2.28"),
    Target("linux-aarch64", "linux", "Linux", "posix", "aarch64", _manylinux("aarch64", 28), "glibc 2.28"),
    # pip expands a macOS tag to every older macOS release and to universal2.
    Target("macos-arm64", "darwin", "Darwin", "posix", "arm64", ("macosx_11_0_arm64",), "macOS 11"),
    Target("macos-x86_64", "darwin", "Darwin", "posix", "x86_64", ("macosx_10_15_x86_64",), "macOS 10.15"),
    Target("windows-x86_64", "win32", "Windows", "nt", "AMD64", ("win_amd64",), "64-bit Windows"),
)


@dataclass(frozen=True)
class Pin:
    """One line of the lock: `name==version`, and the marker that says where it applies ("" = everywhere)."""

    name: str
    version: str
    marker: str = ""

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        if not self.marker:
            return True
        from packaging.markers import Marker

        return Marker(self.marker).evaluate(environment)


def canonical(name: str) -> str:
    """PEP 503 normalised name (the same as `packaging.utils.canonicalize_name`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)==([^\s;#]+)\s*(?:;\s*(.+?))?\s*$")


def read_lock(path: Path = LOCK, strict: bool = True) -> list[Pin]:
    """Every pin of a requirements file, whatever its marker, in file order.

    `strict`: a line that is not an exact pin raises ValueError (else it is skipped).
    """
    return parse_lock(path.read_text(encoding="utf-8"), strict, name=path.name)


def parse_lock(text: str, strict: bool = True, name: str = "requirements.txt") -> list[Pin]:
    """`read_lock` for a lock's text (an older version of it, from git)."""
    pins = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN_LINE.match(line)
        if match is None:
            if not strict:
                continue
            raise ValueError(f"{name}: not an exact pin: {line!r}")
        pins.append(Pin(canonical(match.group(1)), match.group(2), match.group(3) or ""))
    return pins


def pins_for(environment: dict[str, str] | None = None, path: Path = LOCK) -> dict[str, str]:
    """The pins that apply in `environment` (default: this interpreter), as pip would install them."""
    return {pin.name: pin.version for pin in read_lock(path, strict=False) if pin.applies(environment)}


def venv_mismatches(path: Path = LOCK) -> list[str]:
    """What differs between this environment and the lock, for this platform; [] when it matches.

    Packages installed beyond the lock are not counted: only a pin that is missing or at another
    version, or a `toolnode-lab` package that is missing or installed from another folder.
    """
    try:
        wanted = pins_for(None, path)
    except ImportError:  # `packaging` itself is gone: that is a mismatch too
        return ["packaging missing (needed to read the lock's markers)"]
    installed = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            installed.setdefault(canonical(name), dist.version)
    wrong = []
    for name, version in wanted.items():
        have = installed.get(name)
        if have != version:
            wrong.append(f"{name} {have or 'missing'} (want {version})")
    where = _package_source()
    if where is None:
        wrong.append("toolnode-lab missing (want this checkout, editable)")
    elif where != ROOT:
        wrong.append(f"toolnode-lab installed from {where} (want this checkout)")
    if not jupyterlab_settings_installed():
        wrong.append("JupyterLab's offline settings missing")
    return wrong


def _package_source() -> Path | None:
    """The folder `toolnode-lab` was installed (editable) from, or None when it is not installed."""
    # Run from the repository, the checkout's own `toolnode_lab.egg-info` (a build leftover) is also
    # found: look at every distribution of that name for the installer's direct_url.json.
    found = False
    for dist in metadata.distributions(name="toolnode-lab"):
        found = True
        text = dist.read_text("direct_url.json")
        if not text:
            continue
        url = json.loads(text).get("url", "")
        if not url.startswith("file://"):
            return Path(url)
        from urllib.parse import unquote, urlparse
        from urllib.request import url2pathname

        return Path(url2pathname(unquote(urlparse(url).path))).resolve()
    return Path("(not an editable install)") if found else None


# JupyterLab's offline settings: every install path runs `python -m courseware.platforms jupyterlab-settings`.

SETTINGS = ROOT / "scripts" / "jupyterlab" / "toolnode-lab.json"
"""No update check, no news fetch (and no question about it at first start): JupyterLab stays offline.
Closing a notebook shuts its kernel down: each lesson a link opens starts a kernel of its own."""


def jupyterlab_settings_path() -> Path:
    """Where JupyterLab reads packaged overrides in this environment (`<app dir>/settings/overrides.d`).

    The app dir is JupyterLab's own rule for a venv or conda env (`jupyterlab.commands.get_app_dir`):
    `$JUPYTERLAB_DIR`, else `<sys.prefix>/share/jupyter/lab`. Importing jupyterlab to ask would cost
    seconds, and `make setup` asks on every run.
    """
    override = os.environ.get("JUPYTERLAB_DIR")
    app_dir = Path(override) if override else Path(sys.prefix) / "share" / "jupyter" / "lab"
    return app_dir.resolve() / "settings" / "overrides.d" / SETTINGS.name


def jupyterlab_settings_installed() -> bool:
    target = jupyterlab_settings_path()
    return target.exists() and target.read_bytes() == SETTINGS.read_bytes()


def install_jupyterlab_settings() -> Path:
    """Copy the offline settings where this environment's JupyterLab reads them; returns the path.

    They sit in `overrides.d/` beside (never instead of) a user's own `overrides.json`.
    """
    target = jupyterlab_settings_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(SETTINGS.read_bytes())
    return target


# What this machine is, and what is known to break a lesson here.


def describe(system: str | None = None, machine: str | None = None) -> str:
    """'Linux x86_64', 'macOS arm64', 'Windows AMD64', … for this machine (or the given values)."""
    system = system or platform.system()
    machine = machine or platform.machine()
    return {"Darwin": "macOS"}.get(system, system) + f" {machine}"


def matching_target(system: str | None = None, machine: str | None = None) -> Target | None:
    """The `TARGETS` entry this machine is, or None for a platform the lock was not checked for."""
    system = system or platform.system()
    same = {"amd64": "x86_64", "arm64": "aarch64"}  # Windows and macOS spell these differently

    def arch(name: str) -> str:
        return same.get(name.lower(), name.lower())

    mine = arch(machine or platform.machine())
    return next((t for t in TARGETS if t.platform_system == system and arch(t.machine) == mine), None)


@dataclass(frozen=True)
class Breakage:
    """Something known to break (or change) a lesson on some platform or Python, and what to do."""

    where: str
    what: str
    fix: str


def known_breakages(
    system: str | None = None, version: tuple[int, int] | None = None, encoding: str | None = None
) -> list[Breakage]:
    """What is known to break a lesson on this platform and Python (or the given ones)."""
    system = system or platform.system()
    version = version or sys.version_info[:2]
    encoding = (encoding or locale.getpreferredencoding(False)).lower().replace("-", "")
    found = []
    label = f"{version[0]}.{version[1]}"
    if label not in SUPPORTED_PYTHONS:
        if version < (3, 11):
            found.append(Breakage(
                f"Python {label}", "too old: the pinned libraries need Python 3.11 or newer",
                setup_fix(False, system == "Windows"),
            ))
        else:
            found.append(Breakage(
                f"Python {label}", f"outside the tested range {TESTED_RANGE}: a pinned package may have no "
                "file for it, or a lesson may print something else",
                "use a tested Python: " + setup_fix(False, system == "Windows"),
            ))
    if system == "Windows":
        found.append(Breakage(
            "Windows, lesson 10 (MCP)",
            "in JupyterLab the kernel's stderr has no file descriptor on Windows, so langchain-mcp-adapters' "
            "own MultiServerMCPClient (default errlog) fails to start a stdio server with "
            "io.UnsupportedOperation: fileno (modelcontextprotocol/python-sdk#1103)",
            "use the lesson's helpers.mcp_client.open_session / mcp_tools, which give the server a real "
            "errlog file",
        ))
        if encoding != "utf8" and not sys.flags.utf8_mode:
            found.append(Breakage(
                "Windows, text encoding",
                f"files are opened as {encoding} by default here; code that reads the course's UTF-8 files "
                "without naming the encoding gets wrong characters or UnicodeDecodeError",
                "set PYTHONUTF8=1 before starting JupyterLab or pytest (PowerShell: `$env:PYTHONUTF8=1`)",
            ))
    return found


def check_platform(system: str | None = None, machine: str | None = None,
                   version: tuple[int, int, int] | None = None):
    """The doctor's line for this machine: platform, Python against the tested range, known breakages.

    Returns a `Check`: ok when both are tested and nothing is known to break here; a failure for a
    Python older than 3.11; a note otherwise, naming what breaks and what to do.
    """
    version = version or tuple(sys.version_info[:3])
    where = f"{describe(system, machine)}, Python {'.'.join(map(str, version))}"
    problems = known_breakages(system, version[:2])
    if version[:2] < (3, 11):
        return Check("platform", False, f"{where}: {problems[0].what}", problems[0].fix)
    if matching_target(system, machine) is None:
        tested = ", ".join(t.name for t in TARGETS)
        return Check("platform", None, f"{where}: the lock was not checked for this platform "
                     f"(checked: {tested})", "if `make setup` fails, use one of those platforms or WSL")
    if not problems:
        return Check("platform", True, f"{where}: tested (Python {TESTED_RANGE} on Linux, macOS, Windows)")
    detail = "; ".join(f"{p.where}: {p.what}" for p in problems)
    return Check("platform", None, f"{where}: {detail}", "; ".join(p.fix for p in problems))


def check_offline_settings():
    """The doctor's line for JupyterLab's offline settings (the pip and conda paths install them by hand)."""
    if jupyterlab_settings_installed():
        return Check("jupyterlab offline", True, "no update check, no news fetch")
    return Check("jupyterlab offline", None, "JupyterLab will check for updates and offer to fetch news "
                 "(both reach the network)",
                 f"`{python_command()} -m courseware.platforms jupyterlab-settings` (make setup does this)")


def platform_checks() -> list:
    """The doctor's lines from this module: the platform and Python, and JupyterLab's offline settings."""
    return [check_platform(), check_offline_settings()]


# `make setup`: create or repair the venv so that it holds exactly the lock and this checkout's package.
# Run by the interpreter PYTHON= names (this process), from the checkout; the venv's own Python runs
# the checks that need the installed packages.

PROBE = ("import os, sys; print('%d.%d.%d' % sys.version_info[:3]); "
         "print(os.path.realpath(sys.base_prefix))")


def interpreter_facts(python: Path | str) -> tuple[tuple[int, int, int], str] | None:
    """(version, realpath of its base prefix) of an interpreter, or None when it does not run."""
    try:
        done = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    if done.returncode or len(lines) != 2:
        return None
    return tuple(int(part) for part in lines[0].split(".")), lines[1]


def _label(version) -> str:
    return ".".join(map(str, version))


def venv_rebuild_reason(venv: Path = VENV, asked: bool = False, mine=None, facts=None) -> str | None:
    """Why the venv must be made again (one line), or None when it can be repaired in place.

    It is rebuilt when its Python does not run, when that Python is outside the tested range (unless
    the interpreter asked for is outside it too: then the newer one is used as asked), and, when
    `PYTHON=` was given (`asked`), when it was made by another interpreter than the one asked for.
    `mine` and `facts` (version, base prefix) default to this interpreter's and the venv's.
    """
    python = venv_python(venv)
    if not venv.exists():
        return None
    if not python.exists() and not python.is_symlink():  # a dangling link: its Python was removed
        return f"{_shown(venv)} has no {_shown(python)}"
    facts = interpreter_facts(python) if facts is None else facts
    if facts is None:
        return f"{_shown(python)} does not run (the Python it was made from moved or was removed)"
    mine = (tuple(sys.version_info[:3]), os.path.realpath(sys.base_prefix)) if mine is None else mine
    version, base = facts
    supported = _supported()
    if version[:2] not in supported and (version[:2] < (3, 11) or mine[0][:2] in supported):
        return f"{_shown(venv)} was made by Python {_label(version)}, outside the tested {TESTED_RANGE}"
    if asked and (version, os.path.realpath(base)) != (tuple(mine[0]), os.path.realpath(mine[1])):
        return (f"{_shown(venv)} was made by Python {_label(version)} ({_shown(Path(base))}), not by the "
                f"Python asked for ({_label(mine[0])}, {_shown(Path(mine[1]))})")
    return None


def uv_command_version(uv: str | Path) -> str | None:
    """'0.13.9' for a uv that runs, else None."""
    try:
        done = subprocess.run([str(uv), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    return parts[1] if done.returncode == 0 and len(parts) >= 2 and parts[0] == "uv" else None


def _run(command: list, quiet: bool = True, env=None) -> subprocess.CompletedProcess:
    """Run a step; with `quiet`, its output is kept and shown only if it fails."""
    done = subprocess.run([str(part) for part in command], cwd=ROOT, env=env, text=True,
                          capture_output=quiet)
    if quiet and done.returncode:
        sys.stdout.write(done.stdout[-4000:])
        sys.stdout.write(done.stderr[-4000:])
    return done


def _keep_uv(venv: Path, version: str) -> Path | None:
    """Before a venv is removed: a copy of its uv `version` (a standalone binary), so that a rebuild
    with no network still installs with uv from its cache."""
    uv = venv_python(venv).parent / ("uv.exe" if os.name == "nt" else "uv")
    if uv_command_version(uv) != version:
        return None
    import tempfile

    kept = Path(tempfile.mkdtemp(prefix="toolnode-lab-uv-")) / uv.name
    shutil.copy2(uv, kept)
    return kept


def find_uv(venv: Path, version: str, wheelhouse: Path | None, say, kept: Path | None = None) -> Path | None:
    """uv `version`: on PATH, already in the venv, or fetched into the venv with pip; None if it can't be had.

    pip fetches it from the package index (or the wheelhouse) as `uv==version`: this interpreter's
    pip installs into the venv (`pip --python`, pip 22.3+); failing that, the venv gets pip from
    `ensurepip` (bundled with Python, no network) and installs it itself.
    """
    venv_uv = venv_python(venv).parent / ("uv.exe" if os.name == "nt" else "uv")
    for where, candidate in (("PATH", shutil.which("uv")), (_shown(venv), venv_uv),
                             ("the venv it replaces", kept)):
        if candidate and uv_command_version(candidate) == version:
            say(f"uv {version} from {where}")
            return Path(candidate)
    index = (["--no-index", "--find-links", str(wheelhouse)] if wheelhouse else [])
    pip = ["install", "--quiet", "--disable-pip-version-check", "--no-deps", *index, f"uv=={version}"]
    python = venv_python(venv)
    attempts = [[sys.executable, "-m", "pip", "--python", python, *pip]]
    if subprocess.run([python, "-c", "import pip"], capture_output=True).returncode:
        attempts.append([python, "-m", "ensurepip", "--default-pip"])
    attempts.append([python, "-m", "pip", *pip])
    reason = "no attempt"
    for command in attempts:
        done = subprocess.run([str(part) for part in command], cwd=ROOT, capture_output=True, text=True)
        if command[-1] != f"uv=={version}":  # ensurepip: a step towards the last attempt
            continue
        if done.returncode == 0 and uv_command_version(venv_uv) == version:
            say(f"fetched uv {version} into {_shown(venv)} with pip")
            return venv_uv
        last = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        reason = last[-1] if last else f"exit status {done.returncode}"
    say(f"uv {version} could not be had (not on PATH; pip could not fetch it: {reason})")
    return None


def _install_with_uv(uv: Path, venv: Path, lock: Path, wheelhouse: Path | None, say,
                     version: str = UV_VERSION) -> bool:
    """`uv pip sync`: exactly the lock, this checkout's package (editable) and uv itself; nothing else."""
    python = venv_python(venv)
    extra = venv / "toolnode-lab-extra.txt"  # read from the checkout: `-e .` is this checkout
    extra.write_text(f"-e .\nuv=={version}\n", encoding="utf-8")
    source = ["--offline", "--no-index", "--find-links", str(wheelhouse)] if wheelhouse else []
    command = [uv, "pip", "sync", "--quiet", "--python", python, *source, lock, extra]
    say(f"uv pip sync {_shown(lock)} + this checkout (-e .) into {_shown(venv)}"
        + (f", from {_shown(wheelhouse)} alone" if wheelhouse else ""))
    if _run(command).returncode == 0:
        return True
    if wheelhouse or os.environ.get("UV_OFFLINE"):
        return False
    say("the package index did not answer or lacks a file (above); trying again from uv's cache alone "
        "(--offline)")
    return _run([*command[:4], "--offline", *command[4:]]).returncode == 0


def _install_with_pip(venv: Path, lock: Path, wheelhouse: Path | None, say) -> bool:
    python = venv_python(venv)
    if subprocess.run([python, "-c", "import pip"], capture_output=True).returncode:
        if _run([python, "-m", "ensurepip", "--default-pip"]).returncode:
            return False
    source = ["--no-index", "--find-links", str(wheelhouse)] if wheelhouse else []
    say(f"pip install -r {_shown(lock)} -e . --no-deps into {_shown(venv)} (pip is slower than uv: "
        "about a minute)")
    return _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *source,
                 "-r", lock, "-e", ".", "--no-deps"], quiet=False).returncode == 0


def setup(venv: Path = VENV, asked: bool = False, wheelhouse: Path | None = None,
          uv_version: str = UV_VERSION, lock: Path = LOCK, use_uv: bool = True) -> int:
    """Create or repair `venv` so that it holds exactly the lock and this checkout's package; 0 when done.

    Nothing is done when it already matches. Every message starts with `setup:`; every failure
    names the command that fixes it here. `make setup` runs this; see the Makefile.
    """
    def say(text: str) -> None:
        print(f"setup: {text}", flush=True)

    started = time.monotonic()
    venv = Path(venv).absolute()
    python = venv_python(venv)
    stamp = venv / STAMP_NAME
    me = f"{_shown(Path(sys.executable))} (Python {_label(sys.version_info[:3])})"
    reason = venv_rebuild_reason(venv, asked)
    kept_uv = None
    if reason:
        say(f"{reason}: making it again with {me}")
        kept_uv = _keep_uv(venv, uv_version)
        shutil.rmtree(venv)
    elif not python.exists():
        say(f"no {_shown(venv)} yet; creating it with {me}")
    elif not stamp.exists():
        say(f"{_shown(venv)} has no finished install; installing")
    elif any(path.stat().st_mtime > stamp.stat().st_mtime for path in (lock, ROOT / "pyproject.toml")):
        say("requirements.txt or pyproject.toml changed since the last install; installing")
    elif _run([python, "-m", "courseware.platforms", "venv-matches-lock"], quiet=False).returncode == 0:
        return 0
    else:
        say("installing the tested set again")
    stamp.unlink(missing_ok=True)
    if not python.exists():
        created = _run([sys.executable, "-m", "venv", "--without-pip", venv])
        if created.returncode or not python.exists():
            say(f"could not create {_shown(venv)} with {me}. On Debian/Ubuntu install python3-venv "
                f"(e.g. `apt install python{_label(sys.version_info[:2])}-venv`), then `make setup` again.")
            return 1
    uv = find_uv(venv, uv_version, wheelhouse, say, kept_uv) if use_uv else None
    if uv is not None:
        installed = _install_with_uv(uv, venv, lock, wheelhouse, say, uv_version)
    else:
        say("installing with pip instead")
        installed = _install_with_pip(venv, lock, wheelhouse, say)
    if not installed:
        if wheelhouse:
            say(f"{_shown(wheelhouse)} lacks a file this machine needs (above): make it again with "
                "`make offline-bundle` on a machine with a network (PLATFORMS= and PYTHONS= naming this "
                f"one: {describe()}, Python {_label(sys.version_info[:2])}), then `make offline-install`.")
        else:
            say("installing the tested set failed (the installer's message is above). If the package "
                "index is unreachable (network, proxy), " + offline_hint() + "; with a network again: "
                "`make setup`. If no file exists for this machine, see the README's platforms and Pythons.")
        return 1
    check = [uv, "pip", "check", "--quiet", "--python", python] if uv else [python, "-m", "pip", "check"]
    if _run(check).returncode:
        say("the pins in requirements.txt do not fit together (above): exactly the lock was installed, so "
            "the lock itself is inconsistent (a pin changed by hand without the packages that depend on "
            "it). Re-resolve it with `make lock` (needs the package index), or go back to the committed "
            "set with `git checkout requirements.txt`; then `make setup`.")
        return 1
    _run([python, "-m", "courseware.platforms", "jupyterlab-settings"])
    if _run([python, "-m", "courseware.platforms", "venv-matches-lock"], quiet=False).returncode:
        say("the install did not give the tested set (above). Run: `make clean setup`")
        return 1
    stamp.touch()
    say(f"{_shown(venv)} holds the tested set (requirements.txt) and this checkout's helpers package "
        f"({'uv' if uv else 'pip'}, {time.monotonic() - started:.0f} s)")
    return 0


def drift_note(wrong: list[str], venv: Path | None = None) -> str:
    """One line for a command that does not reinstall: what differs from the lock, and the fix."""
    shown = ", ".join(wrong[:3]) + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")
    where = _shown(venv or Path(sys.prefix))
    return (f"note: {where} differs from the tested set: {shown}; this runs anyway. Fix: "
            f"{setup_fix()} ({offline_hint()})")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["jupyterlab-settings"]:
        print(f"JupyterLab's offline settings: {install_jupyterlab_settings()}")
        return 0
    if args[:1] == ["venv-matches-lock"]:
        wrong = venv_mismatches()
        if wrong and "--note" in args:  # a command that runs anyway (labs, resets): one line, the fix
            print(drift_note(wrong))
        elif wrong:
            shown = ", ".join(wrong[:5]) + (f" and {len(wrong) - 5} more" if len(wrong) > 5 else "")
            print(f"{_shown(Path(sys.prefix))} differs from the tested set (requirements.txt): {shown}")
        return 1 if wrong else 0
    if args[:1] == ["setup"]:
        import argparse

        parser = argparse.ArgumentParser(prog="python -m courseware.platforms setup")
        parser.add_argument("venv", type=Path, nargs="?", default=VENV)
        parser.add_argument("--asked", action="store_true",
                            help="PYTHON= was given: rebuild a venv made by another interpreter")
        parser.add_argument("--wheelhouse", type=Path, help="install from this folder alone, no network")
        parser.add_argument("--uv-version", default=UV_VERSION)
        parser.add_argument("--pip", action="store_true", help="install with pip, not uv")
        options = parser.parse_args(args[1:])
        wheelhouse = options.wheelhouse.absolute() if options.wheelhouse else None
        return setup(options.venv, options.asked, wheelhouse, options.uv_version, use_uv=not options.pip)
    if args:
        print(__doc__.split("\n\n")[1].rstrip())
        return 2
    print(check_platform())
    for problem in known_breakages():
        print(f"  {problem.where}: {problem.what}\n    fix: {problem.fix}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

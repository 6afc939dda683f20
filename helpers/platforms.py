"""Where the course runs: the tested platforms and Pythons, the lock's markers, and what breaks where.

    python -m helpers.platforms                    # this machine: platform, Python, known breakages
    python -m helpers.platforms venv-matches-lock  # exit 0 when this environment holds the tested set
    python -m helpers.platforms jupyterlab-settings  # JupyterLab offline here: no update check, no news

`requirements.txt` is one universal lock: every pin carries the environment marker that says where it
applies (`appnope==… ; sys_platform == 'darwin'`), so pip, `make setup` and conda install the right
subset on Linux, macOS and Windows from the same file. This module reads it the way pip does (a pin
counts only where its marker is true), and is what `make setup`, `make lock`, the doctor and
`tests/test_environment.py` share. It imports only the standard library at module level, so it runs
in an environment whose packages are broken, which is exactly when `make setup` needs it.

Taught in `notebooks/00_start_here.ipynb` (through `helpers.doctor`).
"""

from __future__ import annotations

import json
import locale
import os
import platform
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.txt"

SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")
"""The Python versions the pinned set is resolved for and the suite was run on."""

TESTED_RANGE = f"{SUPPORTED_PYTHONS[0]}–{SUPPORTED_PYTHONS[-1]}"


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
    pins = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN_LINE.match(line)
        if match is None:
            if not strict:
                continue
            raise ValueError(f"{path.name}: not an exact pin: {line!r}")
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


# JupyterLab's offline settings: every install path runs `python -m helpers.platforms jupyterlab-settings`.

SETTINGS = ROOT / "scripts" / "jupyterlab" / "toolnode-lab.json"
"""No update check, no news fetch (and no question about it at first start): JupyterLab stays offline."""


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
                f"install Python {SUPPORTED_PYTHONS[-1]} and make a new .venv with it",
            ))
        else:
            found.append(Breakage(
                f"Python {label}", f"outside the tested range {TESTED_RANGE}: a pinned package may have no "
                "file for it, or a lesson may print something else",
                f"use Python {SUPPORTED_PYTHONS[-1]}: `make clean setup PYTHON=python{SUPPORTED_PYTHONS[-1]}`"
                f" (Windows: `py -{SUPPORTED_PYTHONS[-1]} -m venv .venv`)",
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

    Returns a `helpers.doctor.Check`: ok when both are tested and nothing is known to break here;
    a failure for a Python older than 3.11; a note otherwise, naming what breaks and what to do.
    """
    from helpers.doctor import Check

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
    from helpers.doctor import Check

    if jupyterlab_settings_installed():
        return Check("jupyterlab offline", True, "no update check, no news fetch")
    return Check("jupyterlab offline", None, "JupyterLab will check for updates and offer to fetch news "
                 "(both reach the network)",
                 "`python -m helpers.platforms jupyterlab-settings` (make setup does this)")


def platform_checks() -> list:
    """The doctor's lines from this module: the platform and Python, and JupyterLab's offline settings."""
    return [check_platform(), check_offline_settings()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["jupyterlab-settings"]:
        print(f"JupyterLab's offline settings: {install_jupyterlab_settings()}")
        return 0
    if args[:1] == ["venv-matches-lock"]:
        wrong = venv_mismatches()
        if wrong:
            shown = ", ".join(wrong[:5]) + (f" and {len(wrong) - 5} more" if len(wrong) > 5 else "")
            print(f"{Path(sys.prefix).name} differs from the tested set (requirements.txt): {shown}")
            return 1
        return 0
    if args:
        print(__doc__.split("\n\n")[1].rstrip())
        return 2
    print(check_platform())
    for problem in known_breakages():
        print(f"  {problem.where}: {problem.what}\n    fix: {problem.fix}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

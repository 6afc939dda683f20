"""scripts/offline_bundle.py: which pins each attendee's platform gets, and the pip command for it.

No network: only the per-platform selection and the command line are checked. The download itself,
and an install from the result with the network cut, run in `make usb-test` (tests/test_usb.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
platforms = pytest.importorskip("courseware.platforms", reason="courseware/platforms.py")

spec = importlib.util.spec_from_file_location("offline_bundle", ROOT / "scripts" / "offline_bundle.py")
bundle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bundle)

LOCK = """\
# a hand-written lock with the markers a universal lock carries
anyio==4.16.0
appnope==1.0.0 ; sys_platform == 'darwin'
colorama==0.4.6 ; sys_platform == 'win32'
overrides==7.7.0 ; python_full_version < '3.12'
pexpect==4.9.0 ; sys_platform != 'emscripten' and sys_platform != 'win32'
pywinpty==3.1.2 ; os_name == 'nt'
uvloop==0.22.1 ; platform_machine == 'x86_64' or platform_machine == 'arm64'
"""


@pytest.fixture
def pins(tmp_path):
    lock = tmp_path / "requirements.txt"
    lock.write_text(LOCK, encoding="utf-8")
    return platforms.read_lock(lock)


def names(pins, target: str, python: str) -> set[str]:
    return {line.split("==")[0] for line in bundle.selection(pins, bundle.target_named(target), python)}


@pytest.mark.parametrize(
    ("target", "python", "expected"),
    [
        ("linux-x86_64", "3.11", {"anyio", "overrides", "pexpect", "uvloop"}),
        ("linux-x86_64", "3.13", {"anyio", "pexpect", "uvloop"}),
        ("linux-aarch64", "3.12", {"anyio", "pexpect"}),
        ("macos-arm64", "3.12", {"anyio", "appnope", "pexpect", "uvloop"}),
        ("macos-x86_64", "3.11", {"anyio", "appnope", "overrides", "pexpect", "uvloop"}),
        ("windows-x86_64", "3.11", {"anyio", "colorama", "overrides", "pywinpty"}),
        ("windows-x86_64", "3.13", {"anyio", "colorama", "pywinpty"}),
    ],
)
def test_each_target_gets_the_pins_whose_marker_is_true_there(pins, target, python, expected):
    assert names(pins, target, python) == expected


def test_selection_keeps_exact_versions(pins):
    chosen = bundle.selection(pins, bundle.target_named("macos-arm64"), "3.11")
    assert "appnope==1.0.0" in chosen and "overrides==7.7.0" in chosen
    assert chosen == sorted(chosen)


def test_platform_only_names_what_not_every_target_gets(pins):
    selected = {(t.name, p): bundle.selection(pins, t, p)
                for t in platforms.TARGETS for p in ("3.11", "3.13")}
    extra = bundle.platform_only(selected)
    assert extra[("linux-x86_64", "3.13")] == ["pexpect==4.9.0", "uvloop==0.22.1"]
    assert "appnope==1.0.0" in extra[("macos-arm64", "3.11")]
    assert all("anyio==4.16.0" not in pins for pins in extra.values())


def test_download_command_asks_for_wheels_of_that_platform_and_python(tmp_path):
    target = bundle.target_named("windows-x86_64")
    command = bundle.download_command(target, "3.12", tmp_path / "pins.txt", tmp_path / "wheelhouse")
    text = " ".join(command)
    assert command[1:4] == ["-m", "pip", "download"]
    for part in ("--no-deps", "--only-binary=:all:", "--implementation cp", "--python-version 3.12",
                 "--abi cp312", "--platform win_amd64", f"-d {tmp_path / 'wheelhouse'}"):
        assert part in text
    aarch64 = bundle.target_named("linux-aarch64")
    linux = " ".join(bundle.download_command(aarch64, "3.11", Path("p"), Path("d")))
    assert "--platform manylinux2014_aarch64" in linux and "--abi cp311" in linux


def test_the_offline_check_asks_pip_to_install_from_the_folder_alone(tmp_path):
    target = bundle.target_named("macos-arm64")
    command = bundle.offline_check_command(target, "3.13", tmp_path / "pins.txt", tmp_path / "wh",
                                           tmp_path / "x")
    text = " ".join(command)
    assert command[1:4] == ["-m", "pip", "install"]
    for part in ("--dry-run", "--no-index", f"--find-links {tmp_path / 'wh'}", "--no-deps",
                 "--only-binary=:all:", "--python-version 3.13", "--abi cp313",
                 "--platform macosx_11_0_arm64"):
        assert part in text
    assert "--index-url" not in text and "download" not in command


def test_every_tested_platform_and_python_is_offered():
    assert bundle.parse_list("", tuple(t.name for t in platforms.TARGETS), "platform") == [
        t.name for t in platforms.TARGETS]
    pythons = tuple(platforms.SUPPORTED_PYTHONS)
    assert bundle.parse_list("all", pythons, "Python") == list(pythons)
    assert bundle.parse_list("linux-x86_64, macos-arm64", ("linux-x86_64", "macos-arm64"), "platform") == [
        "linux-x86_64", "macos-arm64"]
    with pytest.raises(ValueError, match="unknown platform macos-ppc"):
        bundle.parse_list("macos-ppc", ("linux-x86_64",), "platform")
    with pytest.raises(ValueError, match="known: "):
        bundle.target_named("windows-arm64")


def test_the_build_backend_for_the_editable_install_is_gathered():
    wanted = bundle.build_requirements()
    assert any(line.startswith("setuptools") for line in wanted) and "wheel" in wanted


def test_the_wheelhouse_is_not_committed():
    assert "wheelhouse/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_offline_install_reuses_the_one_setup_rule_with_the_network_off():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = makefile.split("\noffline-install:", 1)[1].split("\n\n", 1)[0]
    assert "PIP_NO_INDEX=1" in rule and "PIP_FIND_LINKS=" in rule and "UV_OFFLINE=1" in rule
    assert "$(MAKE) --no-print-directory setup" in rule and "--wheelhouse" in rule
    installer = (ROOT / "courseware" / "platforms.py").read_text(encoding="utf-8")
    assert '["--offline", "--no-index", "--find-links", str(wheelhouse)]' in installer


def test_the_wheelhouse_carries_the_installer_for_every_target():
    assert bundle.INSTALLER == (f"uv=={platforms.UV_VERSION}",)

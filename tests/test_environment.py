"""The ways to install (make, pip, conda; Linux, macOS, Windows) install one and the same tested set.

`requirements.txt` is one universal lock: each pin carries the environment marker that says where it
applies. These tests read it as pip would on each target of `courseware.platforms.TARGETS` and each
supported Python, without a network (`make lock` checks, with the index, that every file exists).
Conda is not available on the course's build machines, so environment.yml is checked by reading it:
its pip section must be exactly `-r requirements.txt` and `-e .` (conda runs that pip step from the
file's own folder, so both paths resolve).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from courseware.platforms import SETTINGS, SUPPORTED_PYTHONS, TARGETS, canonical, read_lock

ROOT = Path(__file__).resolve().parent.parent
COMBINATIONS = [(target, python) for target in TARGETS for python in SUPPORTED_PYTHONS]
IDS = [f"{target.name}-py{python}" for target, python in COMBINATIONS]


def lock_lines() -> list[str]:
    return (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()


def pins_on(target, python) -> dict[str, str]:
    environment = target.marker_environment(python)
    return {pin.name: pin.version for pin in read_lock() if pin.applies(environment)}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def package_requirements() -> list[Requirement]:
    project = pyproject()["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["course"]
    return [Requirement(line) for line in lines]


def test_the_lock_holds_exact_pins_with_markers_and_no_index():
    for line in lock_lines():
        if not line.strip() or line.startswith("#"):
            continue
        assert "://" not in line and not line.startswith("-"), f"requirements.txt names an index: {line}"
        assert re.fullmatch(r"[a-z0-9][a-z0-9\-]*==[^\s;]+( ; .+)?", line), f"not an exact pin: {line!r}"
    names = [pin.name for pin in read_lock()]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"pinned twice (a fork by Python or platform; the set must be one set): {twice}"


@pytest.mark.parametrize(
    ("package", "where"),
    [
        ("appnope", {"macos-arm64", "macos-x86_64"}),  # ipykernel on macOS
        ("pywinpty", {"windows-x86_64"}),  # terminado (JupyterLab's terminals) on Windows
        ("pywin32", {"windows-x86_64"}),  # jupyter-core on Windows
        ("colorama", {"windows-x86_64"}),  # click, pytest on Windows
        ("pexpect", {"linux-x86_64", "linux-aarch64", "macos-arm64", "macos-x86_64"}),  # not Windows
    ],
)
def test_the_lock_carries_the_markers_other_platforms_need(package, where):
    for target, python in COMBINATIONS:
        applies = package in pins_on(target, python)
        assert applies == (target.name in where), (
            f"{package} {'is' if applies else 'is not'} installed on {target.name} with Python {python}; "
            f"it belongs on {sorted(where)} only: re-run `make lock` (a one-platform lock lacks it)"
        )


@pytest.mark.parametrize(("target", "python"), COMBINATIONS, ids=IDS)
def test_pins_satisfy_the_package_ranges_on_every_platform(target, python):
    pinned = pins_on(target, python)
    environment = target.marker_environment(python)
    for requirement in package_requirements():
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = canonical(requirement.name)
        assert name in pinned, f"{name} is required by pyproject.toml but not pinned for {target.name}"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"requirements.txt pins {name}=={pinned[name]}, outside pyproject's range {requirement}"
        )


def test_supported_pythons_agree_everywhere():
    project = pyproject()["project"]
    requires = SpecifierSet(project["requires-python"])
    assert all(f"{python}.0" in requires for python in SUPPORTED_PYTHONS), project["requires-python"]
    assert "3.10.99" not in requires, "requires-python must still refuse Python 3.10"
    classifiers = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.fullmatch(r".*:: 3\.\d+", c)}
    assert classifiers == set(SUPPORTED_PYTHONS), "pyproject's classifiers name the tested Pythons"
    assert pyproject()["tool"]["ruff"]["target-version"] == "py" + SUPPORTED_PYTHONS[0].replace(".", "")
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert python.removeprefix("python=") in SUPPORTED_PYTHONS, python
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"SUPPORTED := {', '.join(SUPPORTED_PYTHONS[:-1])} or {SUPPORTED_PYTHONS[-1]}" in makefile
    assert f"--python-version {SUPPORTED_PYTHONS[0]}" in makefile, "make lock resolves from the oldest Python"


def test_environment_yml_installs_exactly_the_pinned_set_and_the_package():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    deps = env["dependencies"]
    conda = sorted(d.split("=")[0] for d in deps if isinstance(d, str))
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict)]
    assert conda == ["pip", "python"], f"conda should bring only python and pip, got {conda}"
    assert pip_sections == [["-r requirements.txt", "-e ."]], pip_sections
    assert "python -m courseware.platforms jupyterlab-settings" in (ROOT / "environment.yml").read_text(
        encoding="utf-8"
    ), "environment.yml's instructions name the step that makes JupyterLab offline"


def test_headline_stack_is_the_one_the_course_was_checked_on():
    expected = {
        "langgraph": "1.2.24",
        "langgraph-prebuilt": "1.1.3",
        "langchain-core": "1.8.3",
        "langchain-openai": "1.7.4",
        "langchain": "1.5.2",
        "jupyterlab": "4.6.6",
        "nbval": "0.11.0",
        "matplotlib": "3.11.2",
    }
    for target, python in COMBINATIONS:
        pinned = pins_on(target, python)
        assert {name: pinned.get(name) for name in expected} == expected, target.name
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, version in expected.items():
        assert f"{name} {version}" in readme, f"README's 'Pinned versions' should name {name} {version}"


def test_installed_versions_match_the_pins():
    from courseware.doctor import check_pins

    check = check_pins(ROOT / "requirements.txt")
    assert check.ok, f"{check.detail} — fix: {check.fix}"


def test_the_lock_leaves_out_the_iri_checker_so_importing_jsonschema_builds_no_grammars():
    overrides = (ROOT / "scripts" / "lock-overrides.txt").read_text(encoding="utf-8")
    assert 'rfc3987-syntax ; python_version < "0"' in overrides
    assert "--override scripts/lock-overrides.txt" in (ROOT / "Makefile").read_text(encoding="utf-8")
    names = {pin.name for pin in read_lock()}
    assert not names & {"rfc3987-syntax", "lark"}, "re-run `make lock`: the override keeps them out"
    probe = "import sys, jsonschema; print('rfc3987_syntax' in sys.modules, 'lark' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["False", "False"], (
        f"importing jsonschema loaded the IRI checker ({run.stdout.strip()}): run `make setup`, which "
        f"removes what the lock leaves out\n{run.stderr[-500:]}"
    )


def test_jupyterlab_offline_settings_turn_off_both_network_features():
    settings = json.loads(SETTINGS.read_text(encoding="utf-8"))
    assert settings["@jupyterlab/apputils-extension:notification"] == {
        "checkForUpdates": False,
        "fetchNews": "false",
    }


def test_jupyterlab_settings_shut_a_closed_notebooks_kernel_down_with_a_key_the_pinned_lab_knows():
    # each link to another lesson opens a notebook with a kernel of its own (lesson 00, section 5)
    settings = json.loads(SETTINGS.read_text(encoding="utf-8"))
    assert settings["@jupyterlab/notebook-extension:tracker"] == {"kernelShutdown": True}
    schema = Path(sys.prefix, "share", "jupyter", "lab", "schemas", "@jupyterlab", "notebook-extension",
                  "tracker.json")
    properties = json.loads(schema.read_text(encoding="utf-8"))["properties"]
    assert properties["kernelShutdown"]["type"] == "boolean", "the pinned JupyterLab renamed the setting"


def test_make_setup_installs_the_lock_without_resolving_and_checks_it():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installer = (ROOT / "courseware" / "platforms.py").read_text(encoding="utf-8")
    assert "$(PYTHON) -m courseware.platforms setup $(VENV)" in makefile
    assert '"pip", "sync"' in installer, "uv pip sync: exactly the lock, extras removed"
    assert '"-r", lock, "-e", ".", "--no-deps"' in installer, "the pip fallback installs without resolving"
    assert '"pip", "check"' in installer
    assert '"venv-matches-lock"' in installer, "make setup must compare the venv with the lock"
    assert '"jupyterlab-settings"' in installer
    doctor = re.search(r"^doctor:([^#\n]*)", makefile, re.M)
    assert doctor and doctor.group(1).strip() == "", "make doctor must report before anything reinstalls"


@pytest.mark.parametrize(
    "target", ["doctor", "labs", "reset-lab", "reset-labs", "restore-lab", "reset-lessons"])
def test_commands_a_learner_needs_offline_do_not_install_first(target):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(rf"^{target}:([^#\n]*)", makefile, re.M)
    assert rule and "setup" not in rule.group(1), f"make {target} must not depend on setup"


def test_no_target_needs_pip_in_the_venv():
    # uv makes the venv without pip: extra packages go through PIP_INSTALL (uv when it is there).
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    uses = [line for line in makefile.splitlines() if "-m pip " in line]
    assert uses == [line for line in uses if "$(PY) -m pip install --quiet" in line and "else" in line], uses


# The README's commands name files and targets that exist, and nothing sends a reader outside the repo.

def readme_blocks() -> list[str]:
    """The README's shell and PowerShell blocks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```(?:bash|powershell)\n(.*?)```", text, re.S)


def readme_inline_code() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def test_readme_commands_name_targets_modules_and_files_that_exist():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    blocks = readme_blocks()
    assert any("py -3.11 -m venv .venv" in block for block in blocks), "README has the Windows path"
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    for command in filter(None, commands + readme_inline_code()):
        for target in re.findall(r"\bmake (?:[A-Z]+=\S+ )*([a-z-]+)", command):
            assert target in targets, f"README runs `make {target}`, which the Makefile does not have"
        for module in re.findall(r"-m (helpers\.[a-z_]+)", command):
            assert (ROOT / (module.replace(".", "/") + ".py")).exists(), f"README runs {module}"
    named = r"(?:-r |-f |^|\s)((?:notebooks|scripts|tests|labs|docs)[/\\]\S+|\S+\.(?:txt|yml|in))"
    for command in filter(None, commands):  # files: in the blocks one copies, not in prose
        for path in re.findall(named, command):
            assert (ROOT / path.replace("\\", "/")).exists(), f"README names {path}, not in the repository"


@pytest.mark.parametrize(
    "name", ["README.md", "CONTRIBUTING.md", "scripts/requirements.in", "environment.yml", "Makefile",
             "pyproject.toml"]
)
def test_no_file_sends_the_reader_to_a_file_outside_the_repository(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    assert not re.search(r"\.\./(?:shared|reference|seeds)", text), f"{name} points outside the repository"
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in link or link.startswith("mailto:"):
            continue
        target = (ROOT / name).parent.joinpath(link).resolve()
        assert target.exists(), f"{name} links to {link}, which is not in the repository"


def test_a_failed_make_doctor_ends_with_its_status_and_no_make_error_line(tmp_path):
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    missing = tmp_path / "no-venv"
    done = subprocess.run(["make", "--no-print-directory", "doctor", f"VENV={missing}"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stdout.strip() == f"doctor: there is no {missing} here yet. Run: make setup"
    assert "***" not in done.stdout + done.stderr

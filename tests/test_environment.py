"""The three ways to install (make, pip, conda) install one and the same tested set.

Conda is not available on the course's build machines, so environment.yml is checked by reading it:
its pip section must be exactly `-r requirements.txt` and `-e .` (conda runs that pip step from the
file's own folder, so both paths resolve), and the pins must satisfy pyproject.toml's ranges.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from helpers.doctor import read_pins

ROOT = Path(__file__).resolve().parent.parent


def pins() -> dict[str, str]:
    path = ROOT / "requirements.txt"
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert "--index-url" not in line and "://" not in line, f"requirements.txt names an index: {line}"
        assert re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line), (
            f"requirements.txt must hold exact pins only, got: {line!r}"
        )
    return read_pins(path)  # the doctor's reader: the test and the pre-flight check agree


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_installs_exactly_the_pinned_set_and_the_package():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    conda = sorted(d for d in deps if isinstance(d, str))
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict)]
    assert conda == ["pip", "python=3.11"], f"conda should bring only python and pip, got {conda}"
    assert pip_sections == [["-r requirements.txt", "-e ."]], pip_sections
    required = pyproject()["project"]["requires-python"]
    assert required == ">=3.11", "keep environment.yml's python in step with requires-python"


def test_pins_satisfy_the_package_ranges():
    pinned = pins()
    project = pyproject()["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["course"]
    for line in requirements:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is required by pyproject.toml but not pinned in requirements.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"requirements.txt pins {name}=={pinned[name]}, outside pyproject's range {requirement}"
        )


def test_headline_stack_is_the_one_the_course_was_checked_on():
    expected = {
        "langgraph": "1.2.24",
        "langgraph-prebuilt": "1.1.3",
        "langchain-core": "1.8.3",
        "langchain-openai": "1.7.4",
        "jupyterlab": "4.6.6",
        "nbval": "0.11.0",
        "matplotlib": "3.11.2",
    }
    pinned = pins()
    assert {name: pinned.get(name) for name in expected} == expected


def test_installed_versions_match_the_pins():
    from helpers.doctor import check_pins

    check = check_pins(ROOT / "requirements.txt")
    assert check.ok, f"{check.detail} — fix: {check.fix}"

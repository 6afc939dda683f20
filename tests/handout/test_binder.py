"""A room where nobody can install: the repository launches on Binder/JupyterHub through
repo2docker. No Docker daemon runs here, so check the recipe repo2docker writes for it: the
tested set and the package from environment.yml, JupyterLab's offline settings from postBuild,
and nothing else installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
R2D = ROOT / ".cache" / "repo2docker"
REPO2DOCKER = "jupyter-repo2docker==2026.4.0"


def repo2docker() -> Path:
    """repo2docker in its own throwaway venv (its dependencies are not the course's)."""
    exe = R2D / ("Scripts/repo2docker.exe" if os.name == "nt" else "bin/repo2docker")
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(R2D)], check=True)
        pip = R2D / ("Scripts/pip.exe" if os.name == "nt" else "bin/pip")
        subprocess.run([str(pip), "install", "--quiet", "--disable-pip-version-check", REPO2DOCKER],
                       check=True)
    return exe


def test_environment_yml_installs_the_lock_and_the_package_and_nothing_else():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip = next(item["pip"] for item in env["dependencies"] if isinstance(item, dict))
    assert pip == ["-r requirements.txt", "-e ."]


def test_repo2docker_builds_from_environment_yml_then_runs_postbuild():
    out = subprocess.run([str(repo2docker()), "--no-build", "--no-run", "--debug", str(ROOT)],
                         capture_output=True, text=True, timeout=300, check=True)
    dockerfile = out.stdout + out.stderr
    copy = dockerfile.index("COPY --chown=0:0 src/ ${REPO_DIR}/")
    update = dockerfile.index('env update -p ${NB_PYTHON_PREFIX} --file "environment.yml"')
    post = dockerfile.index("RUN ./postBuild")
    assert copy < update < post, "the repository must be in place before environment.yml's -r and -e"
    installs = [line for line in dockerfile.splitlines()
                if "pip install" in line or "requirements.txt" in line or "env update" in line]
    assert installs == [line for line in installs if "env update" in line], installs
    postbuild = (ROOT / "postBuild").read_text(encoding="utf-8")
    assert "python -m courseware.platforms jupyterlab-settings" in postbuild
    assert os.access(ROOT / "postBuild", os.X_OK)

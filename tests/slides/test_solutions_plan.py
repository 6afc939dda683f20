"""The workshop's copy of the course (scripts/build_usb.py) leaves labs/solutions/ out, and there a
lab's `solution()` says where the solutions are instead of printing one, while `check()` and
`hint()` still work (docs/workshop/solutions.md)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("TOOLNODE_LAB_HANDOUT_TEST") != "1",
                                reason="imports the course twice in fresh interpreters: make slides-test")
ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_usb", ROOT / "scripts" / "build_usb.py")
usb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(usb)

PROBE = """
import helpers, io, contextlib
from helpers.labs import lab01
print("helpers from", helpers.__file__)
lab01.q1.solution()
buffer = io.StringIO()
with contextlib.redirect_stdout(buffer):
    lab01.q1.hint()
print("hint:", buffer.getvalue().strip()[:60])
"""


def test_the_usb_copy_has_no_solutions_and_solution_says_so(tmp_path):
    tree = usb.tree_without_solutions(tmp_path)
    assert not (tree / "labs" / "solutions").exists()
    assert (tree / "labs" / "01_make_it_concurrent.ipynb").exists()
    assert (tree / "helpers" / "labs" / "lab01.py").exists()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"helpers from {tree}" in done.stdout
    assert ("(no 01_make_it_concurrent.ipynb here: solutions ship with the course repository, "
            "in labs/solutions/)") in done.stdout
    assert "hint: " in done.stdout and len(done.stdout.split("hint: ", 1)[1].strip()) > 10


def test_in_the_full_checkout_solution_prints_the_answer():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "(no 01_make_it_concurrent.ipynb here" not in done.stdout
    assert "gather" in done.stdout

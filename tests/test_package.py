"""The helpers package is the one installed from this checkout (the name `helpers` is generic)."""

from pathlib import Path

import helpers

ROOT = Path(__file__).resolve().parent.parent


def test_helpers_is_imported_from_this_repository():
    where = Path(helpers.__file__).resolve()
    assert ROOT in where.parents, (
        f"`import helpers` found {where}, not this checkout's package: run `make setup` "
        "(it installs the package in editable mode into .venv) and use .venv's Python/kernel."
    )

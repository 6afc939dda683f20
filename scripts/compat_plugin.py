"""A pytest plugin for `scripts/compat.py`: record each contract test's outcome on one release.

Loaded with `-p compat_plugin` (scripts/ on PYTHONPATH); writes JSON to $COMPAT_OUT: one record per
test with its lesson, its outcome and, when it did not pass, the exception type and first line.

Imports are judged per test, not per module. A contract module imports, at its top, everything its
tests use; on an older release one missing name (`ToolRuntime`, `create_agent`, ...) would make the
whole module fail to import and every test in it look absent, hiding real differences in the others.
So while a contract module runs its imports, a name or module the release lacks becomes a
`Missing` placeholder that raises `ImportError` the moment a test uses it: only the tests that
need the absent API are n/a, and each one says which name was missing. Module-level code that uses
a missing name (a base class, a decorator call) still fails the whole module, as before.
"""

from __future__ import annotations

import builtins
import json
import os
import sysconfig
import types
from pathlib import Path

import pytest

_RECORDS: dict[str, dict] = {}
_CONTRACTS = str(Path(__file__).resolve().parent.parent / "tests" / "contracts") + os.sep
_REAL_IMPORT = builtins.__import__


class Missing:
    """A name the release lacks: anything but looking it up raises the ImportError it caused."""

    def __init__(self, name: str, origin: str):
        object.__setattr__(self, "_what", f"cannot import name {name!r} from {origin!r} on this release")

    def _absent(self, *args, **kwargs):
        raise ImportError(object.__getattribute__(self, "_what"))

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Missing(attr, object.__getattribute__(self, "_what").split("'")[1])

    def __getitem__(self, item):  # `ToolRuntime[Ctx]` in an annotation: stay lazy
        return self

    def __or__(self, other):  # `X | None` in an annotation
        return self

    __ror__ = __or__
    __call__ = __iter__ = __bool__ = __len__ = __eq__ = __hash__ = _absent
    __enter__ = __aenter__ = __await__ = _absent

    def __mro_entries__(self, bases):  # subclassing a missing class at module level
        self._absent()

    def __repr__(self):
        return f"<missing: {object.__getattribute__(self, '_what')}>"


class _Partial(types.ModuleType):
    """A real module seen through `from module import name`: a name it lacks is `Missing`."""

    def __init__(self, module: types.ModuleType):
        super().__init__(module.__name__)
        object.__setattr__(self, "_module", module)

    def __getattr__(self, attr):
        module = object.__getattribute__(self, "_module")
        try:
            return getattr(module, attr)
        except AttributeError:
            if attr.startswith("__"):
                raise
            return Missing(attr, module.__name__)


def _tolerant_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__file__") or ""
    if not importer.startswith(_CONTRACTS):
        return _REAL_IMPORT(name, globals, locals, fromlist, level)
    try:
        module = _REAL_IMPORT(name, globals, locals, fromlist, level)
    except ImportError:  # the module itself is absent on this release
        if not fromlist:
            raise  # `import x.y` of a missing module: nothing sensible to hand back
        fake = types.ModuleType(name)
        fake.__getattr__ = lambda attr: Missing(attr, name)
        return fake
    if fromlist and any(not hasattr(module, item) for item in fromlist if item != "*"):
        return _Partial(module)
    return module


def pytest_configure(config):
    builtins.__import__ = _tolerant_import


def pytest_unconfigure(config):
    builtins.__import__ = _REAL_IMPORT


def _summary(report) -> tuple[str, str]:
    """(exception type, the line that says what went wrong) from a failed report."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:  # a collection error: the last "SomethingError: ..." line of the text is the cause
        lines = [line.strip() for line in str(report.longrepr).splitlines()]
        causes = [line.removeprefix("E   ").strip() for line in lines if "Error: " in line]
        text = causes[-1] if causes else (lines[-1] if lines else "")
    first = text.strip().splitlines()[0] if text.strip() else ""
    for local, shown in ((sysconfig.get_paths()["purelib"], "site-packages"), (os.getcwd() + os.sep, "")):
        first = first.replace(local, shown)  # no machine path in the committed record
    kind = first.split(":", 1)[0] if ":" in first else type(report.longrepr).__name__
    return kind.strip(), first[:300]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("lesson")
    record = _RECORDS.setdefault(
        item.nodeid,
        {"lesson": marker.args[0] if marker else None, "outcome": "passed",
         "timing": item.get_closest_marker("timing") is not None},
    )
    if report.skipped and record["outcome"] == "passed":
        record["outcome"] = "skipped"
    elif report.failed:
        kind, message = _summary(report)
        record.update(outcome="failed" if report.when == "call" else "error", exception=kind, message=message)


def pytest_collectreport(report):
    if report.failed:  # the module could not be imported: every test in it is missing here
        kind, message = _summary(report)
        _RECORDS[report.nodeid] = {"lesson": None, "outcome": "collection-error", "exception": kind,
                                   "message": message, "timing": False}


def pytest_sessionfinish(session):
    path = os.environ.get("COMPAT_OUT")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_RECORDS, handle, indent=1, ensure_ascii=False)

"""helpers.source: live excerpts of installed source, numbered as in the file, sliced by content."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from helpers.source import SourceExcerpt, excerpt, relative_source_path

MODULE = textwrap.dedent(
    '''\
    import functools


    def logged(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        return wrapper


    class Node:
        """A node."""

        def run(self, items):
            total = 0
            for item in items:
                total += item
            return total

        @logged
        def decorated(self):
            return "inner body"
    '''
)


@pytest.fixture
def sample(tmp_path, monkeypatch):
    """A throwaway module `pkg_sample/mod.py` importable from a temporary sys.path entry."""
    package = tmp_path / "pkg_sample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    module = importlib.import_module("pkg_sample.mod")
    yield module
    for name in ("pkg_sample.mod", "pkg_sample"):
        sys.modules.pop(name, None)


def file_line(number: int) -> str:
    return MODULE.splitlines()[number - 1]


def test_a_whole_method_keeps_the_file_line_numbers(sample):
    got = excerpt(sample.Node.run)
    assert got.first == 14 and got.last == 18
    assert got.lines[0] == "def run(self, items):"  # dedented together
    assert file_line(got.first).strip() == got.lines[0]
    assert file_line(got.last).strip() == got.lines[-1].strip()


def test_a_slice_runs_from_the_start_text_to_the_end_text_inclusive(sample):
    got = excerpt(sample.Node.run, start="for item", end="total +=")
    assert got.lines == ("for item in items:", "    total += item")
    assert (got.first, got.last) == (16, 17)


def test_end_is_searched_from_start_on(sample):
    # "total" first occurs before "for"; the slice must not end there.
    got = excerpt(sample.Node.run, start="for item", end="total")
    assert got.first == 16 and got.last == 17


def test_decorated_functions_are_unwrapped(sample):
    # Without unwrapping, inspect would find functools' wrapper, not the method's own body.
    got = excerpt(sample.Node.decorated)
    assert got.lines == ("@logged", "def decorated(self):", '    return "inner body"')
    assert got.first == 20


def test_the_path_is_relative_to_its_sys_path_entry(sample):
    assert excerpt(sample.Node.run).path == "pkg_sample/mod.py"
    assert relative_source_path(sample.Node) == "pkg_sample/mod.py"


def test_it_prints_as_a_numbered_listing_under_a_header(sample):
    text = str(excerpt(sample.Node.run, start="for item", end="return"))
    assert text.splitlines() == [
        "# pkg_sample/mod.py, lines 16-18 (Node.run)",
        "16 | for item in items:",
        "17 |     total += item",
        "18 | return total",
    ]


def test_ipython_shows_the_listing_as_plain_text(sample):
    got = excerpt(sample.Node.run)
    shown: list[str] = []

    class Printer:
        def text(self, value: str) -> None:
            shown.append(value)

    got._repr_pretty_(Printer(), cycle=False)
    assert shown == [str(got)]
    assert repr(got) == "<SourceExcerpt Node.run: pkg_sample/mod.py, lines 14-18>"


def test_line_of_gives_the_file_line_number(sample):
    got = excerpt(sample.Node.run)
    assert got.line_of("return total") == 18
    with pytest.raises(ValueError, match="contains 'yield'"):
        got.line_of("yield")


def test_a_missing_start_or_end_says_how_to_fix_it(sample):
    with pytest.raises(ValueError, match=r"No line of Node.run .* contains 'while'.*pinned versions"):
        excerpt(sample.Node.run, start="while")
    with pytest.raises(ValueError, match=r"from its line 3 on\) contains 'total = 0'"):
        excerpt(sample.Node.run, start="for item", end="total = 0")


def test_objects_without_source_are_refused_with_a_hint():
    with pytest.raises(TypeError, match="Pass a function, method or class"):
        excerpt(len)


def test_an_excerpt_is_a_plain_value():
    got = SourceExcerpt("f", "m.py", 3, ("a", "b"))
    assert got.last == 4 and got.text == "a\nb" and "b" in got

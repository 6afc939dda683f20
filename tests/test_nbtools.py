"""The hygiene check can fail: each rule is shown rejecting a notebook that breaks it."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from helpers.nbtools import _dumps, check, normalize

SECTIONS = "## Review\n## Goals\n## Prerequisites and time\n## Setup"
CLOSING = "## Recap\n## Check your understanding\n## What's next"


def good():
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# T\n" + SECTIONS),
        new_code_cell("print(1)", execution_count=1,
                      outputs=[new_output("stream", name="stdout", text="1\n")]),
        new_code_cell("1/0", execution_count=2, metadata={"tags": ["raises-exception"]},
                      outputs=[new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                          traceback=[])]),
        new_markdown_cell(CLOSING),
    ]
    return normalize(nb)


def test_a_good_notebook_passes_and_normalising_is_idempotent():
    nb = good()
    assert check(nb, _dumps(nb)) == []
    assert _dumps(normalize(nb)) == _dumps(nb)


def test_out_of_order_counts_fail():
    nb = good()
    nb.cells[1].execution_count = 3
    assert any("execution counts" in p for p in check(nb))


def test_unexecuted_cell_fails():
    nb = good()
    nb.cells[1].execution_count = None
    assert any("execution counts" in p for p in check(nb))


def test_missing_or_misordered_sections_fail():
    nb = good()
    nb.cells[0].source = "# T\n## Goals\n## Review\n## Prerequisites\n## Setup"
    assert any("out of order" in p for p in check(nb))
    nb.cells[-1].source = "## Recap"
    assert any("Check your understanding" in p for p in check(nb))


def test_error_and_tag_must_agree():
    nb = good()
    nb.cells[2].metadata = {}
    assert any("not tagged raises-exception" in p for p in check(nb))
    nb = good()
    nb.cells[1].metadata = {"tags": ["raises-exception"]}
    assert any("raised nothing" in p for p in check(nb))


def test_stderr_svg_and_pip_fail():
    nb = good()
    nb.cells[1].outputs.append(new_output("stream", name="stderr", text="UserWarning: x"))
    nb.cells[1].outputs.append(new_output("display_data", data={"image/svg+xml": "<svg/>"}))
    nb.cells[1].source = "%pip install x"
    problems = " ".join(check(nb))
    assert "stderr" in problems and "SVG" in problems and "installs packages" in problems


def test_unnormalised_file_fails():
    nb = good()
    raw = _dumps(nb).replace('"language_info"', '"widgets": {}, "language_info"')
    assert any("not normalised" in p for p in check(nbformat.reads(raw, as_version=4), raw))


def test_tracebacks_lose_machine_specific_paths():
    import sysconfig

    from helpers.nbtools import ROOT

    nb = good()
    site = sysconfig.get_paths()["purelib"]
    nb.cells[2].outputs[0].traceback = [f"File {site}/langgraph/x.py:1", f"File {ROOT}/helpers/tools.py:2"]
    lines = normalize(nb).cells[2].outputs[0].traceback
    assert lines == ["File site-packages/langgraph/x.py:1", "File helpers/tools.py:2"]

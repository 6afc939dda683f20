"""The masks strict nbval applies to every notebook (`tests/nbval_sanitize.cfg`), read by nbval itself."""

import re
from pathlib import Path

from nbval.plugin import get_sanitize_patterns

CFG = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


def patterns():
    return get_sanitize_patterns(CFG.read_text(encoding="utf-8"))


def sanitise(text):
    for regex, replace in patterns():
        text = re.sub(regex, replace, text)
    return text


def test_nbval_loads_every_mask_in_the_file():
    # nbval reads a pair only as "regex: ..." followed by "replace: ..." (with the space): a bare
    # "replace:" line drops the whole mask without a word
    sections = [line for line in CFG.read_text(encoding="utf-8").splitlines() if line.startswith("regex:")]
    assert len(patterns()) == len(sections)


def test_the_313_keyword_suggestion_is_masked_and_nothing_else_in_the_message():
    bare = "Plan.__init__() got an unexpected keyword argument 'usr'"
    assert sanitise(bare + ". Did you mean 'user'?") == sanitise(bare) == bare
    assert sanitise("unexpected keyword argument 'usr'") != sanitise("unexpected keyword argument 'user'")


def test_indentation_inside_a_printed_string_is_compared():
    assert sanitise("'Args:\\n    city: x'") != sanitise("'Args:\\ncity: x'")

"""What the seed posts print, quoted exactly, so a lesson can compare them with a live run.

The posts print `repr`s; the copies kept with the course's sources lost their quotes and `=` signs
when the pages were saved, so the lines below restore them (only those two characters).

Taught in `notebooks/05_return_types.ipynb` and `notebooks/06_command_and_parent.ipynb`.
"""

from __future__ import annotations

_FOO_BAR = (
    "[ToolMessage(content='foo(1, 2)', name='foo', tool_call_id='001'), "
    "ToolMessage(content='bar(3, 4)', name='bar', tool_call_id='002')]"
)
_GOTO_NEXT = (
    "[Command(update={'messages': [ToolMessage(content='foo(1, 2)', name='foo', tool_call_id='001')]}, "
    "goto='next'), {'messages': [ToolMessage(content='bar(3, 4)', name='bar', tool_call_id='002')]}]"
)
_PARENT = (
    "[Command(graph='__parent__', goto=[Send(node='A', arg=None), Send(node='B', arg=None), "
    "Send(node='B', arg=None), Send(node='C', arg=None)])]"
)

SEED_000_RULE_ONE = "\n".join(
    [
        f"input-messages: {_FOO_BAR}",
        f"input-tool_calls: {{'messages': {_FOO_BAR}}}",
        f"input-dict: {{'messages': {_FOO_BAR}}}",
        f"input-state: {{'messages': {_FOO_BAR}}}",
    ]
)
"""Seed 000 §1.1 (返回类型规则一): foo/bar with no Command, called with the four input kinds."""

SEED_000_GOTO_NEXT = "\n".join(
    f"input-{kind}: {_GOTO_NEXT}" for kind in ("tool_calls", "dict", "state")
)
"""Seed 000 §1.1.2 (规则二), first program: foo returns `Command(update=..., goto='next')`."""

SEED_000_PARENT_SEND = "\n".join(
    f"input-{kind}: {_PARENT}" for kind in ("tool_calls", "dict", "state")
)
"""Seed 000 §1.1.2, second program: foo and bar return `Command.PARENT` with two `Send`s each."""

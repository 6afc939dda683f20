"""Unit tests for helpers.batch: the tool-call message and the timed tools."""

from __future__ import annotations

import asyncio

import pytest

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.timing import CallRecorder, Rendezvous


def test_tool_calls_message_numbers_the_ids():
    message = tool_calls_message([("lookup_weather", {"city": "Paris"}), ("add", {"a": 1, "b": 2})])
    assert message.tool_calls == [
        {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call-0", "type": "tool_call"},
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "call-1", "type": "tool_call"},
    ]


def test_tool_calls_message_from_tools_passes_the_index():
    tools = make_timed_tools(2, 0.0)
    assert [(c["name"], c["args"]) for c in tool_calls_message(tools).tool_calls] == [
        ("t00", {"x": 0}),
        ("t01", {"x": 1}),
    ]


@pytest.mark.parametrize("kind", ["async", "blocking"])
def test_async_kinds_have_no_sync_body(kind):
    (tool,) = make_timed_tools(1, 0.0, kind=kind)
    assert asyncio.run(tool.ainvoke({"x": 0})) == "t00"
    with pytest.raises(NotImplementedError):
        tool.invoke({"x": 0})


def test_sync_kind_runs_both_ways():
    (tool,) = make_timed_tools(1, 0.0, kind="sync")
    assert tool.invoke({"x": 0}) == "t00"
    assert asyncio.run(tool.ainvoke({"x": 0})) == "t00"


def test_recorder_spans_are_labelled_with_the_tool_name():
    recorder = CallRecorder()
    tools = make_timed_tools(3, 0.02, recorder=recorder)

    async def all_of_them():
        await asyncio.gather(*(t.ainvoke({"x": i}) for i, t in enumerate(tools)))

    asyncio.run(all_of_them())
    assert sorted(c.label for c in recorder.calls) == ["t00", "t01", "t02"]
    assert recorder.max_in_flight() == 3


def test_blocking_kind_serialises_the_event_loop():
    recorder = CallRecorder()
    tools = make_timed_tools(3, 0.02, kind="blocking", recorder=recorder)

    async def all_of_them():
        await asyncio.gather(*(t.ainvoke({"x": i}) for i, t in enumerate(tools)))

    asyncio.run(all_of_them())
    assert recorder.max_in_flight() == 1


def test_unknown_kind_says_what_to_pick():
    with pytest.raises(ValueError, match="not one of"):
        make_timed_tools(1, 0.1, kind="threaded")


def test_one_delay_per_tool():
    recorder = CallRecorder()
    tools = make_timed_tools(2, [0.05, 0.0], kind="sync", recorder=recorder)
    for index, tool in enumerate(tools):
        tool.invoke({"x": index})
    durations = {c.label: c.seconds for c in recorder.calls}
    assert durations["t00"] >= 0.05 > durations["t01"]


def test_delays_must_match_the_number_of_tools():
    with pytest.raises(ValueError, match="one per tool"):
        make_timed_tools(3, [0.1, 0.2])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_gate_holds_each_call_until_all_have_arrived(kind):
    recorder = CallRecorder()
    gate = Rendezvous(3, timeout=5)
    tools = make_timed_tools(3, 0.0, kind=kind, recorder=recorder, gate=gate)

    async def all_of_them():
        await asyncio.gather(*(t.ainvoke({"x": i}) for i, t in enumerate(tools)))

    asyncio.run(all_of_them())
    assert gate.opened and recorder.max_in_flight() == 3


def test_a_gate_and_a_blocking_tool_do_not_mix():
    with pytest.raises(ValueError, match="blocking"):
        make_timed_tools(2, 0.0, kind="blocking", gate=Rendezvous(2))

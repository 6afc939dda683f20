"""Lab 01 — Make it concurrent (after `notebooks/01_sequential_vs_gather.ipynb`).

q1: `run_calls(calls, tools_by_name)` runs a model's independent tool calls together and answers
    each call by id, in call order.
q2: `trip_report(countries, capital, weather, sight)` keeps the dependent step (country → capital)
    sequential per country, and overlaps everything else.

Checks time the learner's code with a `CallRecorder` and read the speed-up as a ratio (the summed
busy time of the calls over the wall time), which a machine-wide stall cannot fake or break.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from helpers.cities import attraction_report, capital_of, weather_report
from helpers.labs import CheckFailed, Exercise, fail, run_async, section
from helpers.timing import CallRecorder, format_seconds

STEP = 0.02
"""Seconds of the shortest simulated call; the checks keep their sleeps this small."""
CITY_DELAY = {"Paris": 3, "London": 2, "Tokyo": 1}
"""Each city's calls take this many STEPs, so completion order differs from call order."""
COUNTRY_DELAY = {"France": 3, "England": 2, "Japan": 1}
MIN_SPEEDUP = 1.3
"""A sequential run reads exactly 1.0x, a correct one 3-4x; the structural checks (how many calls were
in flight at once, which overlapped) decide, the ratio confirms with a wide margin."""
MIN_IN_FLIGHT = 4
LESSON = "01_sequential_vs_gather"


def make_tools(recorder: CallRecorder | None = None, step: float = STEP) -> dict[str, BaseTool]:
    """`{"lookup_weather": ..., "lookup_attraction": ...}`: async tools, Paris slowest, Tokyo fastest."""

    def build(name: str, answer: Callable[[str], str]) -> BaseTool:
        async def look_up(city: str) -> str:
            label = f"{name}({city})"
            if recorder is None:
                await asyncio.sleep(step * CITY_DELAY.get(city, 1))
            else:
                with recorder.span(label):
                    await asyncio.sleep(step * CITY_DELAY.get(city, 1))
            return answer(city)

        return StructuredTool.from_function(coroutine=look_up, name=name, description=f"{name} for a city")

    return {
        "lookup_weather": build("lookup_weather", weather_report),
        "lookup_attraction": build("lookup_attraction", attraction_report),
    }


CALLS = [
    {"name": tool, "args": {"city": city}, "id": f"call-{index}", "type": "tool_call"}
    for index, (tool, city) in enumerate(
        (t, c) for c in ("Paris", "London", "Tokyo") for t in ("lookup_weather", "lookup_attraction")
    )
]
"""Six independent calls a model sent in one turn (ids `call-0` ... `call-5`)."""
TOOLS = make_tools()
"""The tools the calls name, for trying `run_calls` in the notebook."""


def make_lookups(recorder: CallRecorder | None = None, step: float = STEP) -> dict[str, Callable]:
    """Three async lookups `capital(country)`, `weather(city)`, `sight(city)` (recorded if asked)."""

    async def timed(label: str, steps: int) -> None:
        if recorder is None:
            await asyncio.sleep(step * steps)
        else:
            with recorder.span(label):
                await asyncio.sleep(step * steps)

    async def capital(country: str) -> str:
        await timed(f"capital({country})", COUNTRY_DELAY.get(country, 1))
        return capital_of(country)

    async def weather(city: str) -> str:
        await timed(f"weather({city})", 1)
        return weather_report(city)

    async def sight(city: str) -> str:
        await timed(f"sight({city})", 1)
        return attraction_report(city)

    return {"capital": capital, "weather": weather, "sight": sight}


LOOKUPS = make_lookups()
capital, weather, sight = LOOKUPS["capital"], LOOKUPS["weather"], LOOKUPS["sight"]
COUNTRIES = ["France", "England", "Japan"]


def expected_report(countries: list[str]) -> list[str]:
    return [f"{c}: {weather_report(capital_of(c))}; {attraction_report(capital_of(c))}" for c in countries]


def busy_time(recorder: CallRecorder) -> float:
    """Seconds during which at least one call was running (the union of the calls' spans)."""
    covered, end = 0.0, None
    for call in recorder.calls:  # sorted by start
        if end is None or call.start > end:
            covered += call.seconds
            end = call.end
        elif call.end > end:
            covered += call.end - end
            end = call.end
    return covered


def speedup(recorder: CallRecorder) -> float:
    """The calls' summed durations over the time any call was running: 1.0 means one after another,
    N means N at once. A stall of the machine stretches every call in flight, so it cannot fake an
    overlap; an idle gap between calls is not counted, so a stall there cannot hide one."""
    return recorder.busy / busy_time(recorder)


def _overlap(a, b) -> bool:
    return a.start < b.end and b.start < a.end


# -- q1 ----------------------------------------------------------------------------------------------
def check_run_calls(run_calls: Any) -> str:
    key, where = "q1", section(LESSON, "2. `asyncio.gather`: overlap the waits")
    if not asyncio.iscoroutinefunction(run_calls):
        raise fail(
            "`run_calls` is not an `async def` function.",
            key=key,
            where=where,
            expected="async def run_calls(calls, tools_by_name): ...",
            observed=f"{type(run_calls).__name__} {getattr(run_calls, '__name__', run_calls)!r}",
        )
    recorder = CallRecorder()
    tools = make_tools(recorder)
    result = run_async(lambda: run_calls([dict(c) for c in CALLS], tools))
    want = [(c["id"], tools[c["name"]].name and _answer(c)) for c in CALLS]
    got = _pairs(result, key, where)
    if [i for i, _ in got] != [i for i, _ in want]:
        order_where = section(LESSON, "3. Results in argument order, completion in another")
        raise fail(
            "the answers are not in the order of the calls.",
            key=key,
            where=order_where,
            expected=f"ids {[i for i, _ in want]} (call order)",
            observed=f"ids {[i for i, _ in got]}"
            + (
                " — that is completion order: Tokyo's calls are the fastest"
                if [i for i, _ in got][:2] == ["call-4", "call-5"]
                else ""
            ),
        )
    if got != want:
        bad = next(i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w)
        raise fail(
            "an answer does not match its call.",
            key=key,
            where=where,
            expected=f"{want[bad]}",
            observed=f"{got[bad]}",
        )
    ratio, peak = speedup(recorder), recorder.max_in_flight()
    if peak < MIN_IN_FLIGHT or ratio < MIN_SPEEDUP:
        raise fail(
            "the calls did not overlap.",
            key=key,
            where=where,
            expected=f"the six calls in flight together (at least {MIN_IN_FLIGHT} at once), "
            f"a speed-up of at least {MIN_SPEEDUP}x",
            observed=f"at most {peak} call(s) in flight at once, a speed-up of {ratio:.2f}x "
            f"(wall {format_seconds(recorder.wall)} for {format_seconds(recorder.busy)} of calls)",
        )
    return (
        f"6 answers in call order, ids matched; the calls overlapped (speed-up {ratio:.2f}x, "
        f"wall {format_seconds(recorder.wall)} for {format_seconds(recorder.busy)} of calls)."
    )


def _answer(call: dict) -> str:
    report = weather_report if call["name"] == "lookup_weather" else attraction_report
    return report(call["args"]["city"])


def _pairs(result: Any, key: str, where: str) -> list[tuple[str, str]]:
    try:
        pairs = [(str(i), str(r)) for i, r in result]
    except (TypeError, ValueError):
        raise fail(
            "`run_calls` should return a list of `(call id, result)` pairs.",
            key=key,
            where=where,
            expected="[('call-0', 'Paris: sunny, 25 °C'), ('call-1', 'Paris: the Louvre'), ...]",
            observed=repr(result)[:200],
        ) from None
    if len(pairs) != len(CALLS):
        raise fail(
            "one answer per call is needed.",
            key=key,
            where=where,
            expected=f"{len(CALLS)} pairs",
            observed=f"{len(pairs)}: {pairs!r}"[:200],
        )
    return pairs


# -- q2 ----------------------------------------------------------------------------------------------
def check_trip_report(trip_report: Any) -> str:
    key = "q2"
    where = section(LESSON, "4. Dependent calls stay sequential")
    if not asyncio.iscoroutinefunction(trip_report):
        raise fail(
            "`trip_report` is not an `async def` function.",
            key=key,
            where=where,
            expected="async def trip_report(countries, capital, weather, sight): ...",
            observed=f"{type(trip_report).__name__}",
        )
    recorder = CallRecorder()
    lookups = make_lookups(recorder)
    result = run_async(
        lambda: trip_report(list(COUNTRIES), lookups["capital"], lookups["weather"], lookups["sight"])
    )
    want = expected_report(COUNTRIES)
    if not isinstance(result, list) or [str(r) for r in result] != want:
        hint = ""
        if isinstance(result, list) and any("unknown" in str(r) for r in result):
            hint = " — `unknown` means a city lookup ran with the country, before its capital was known"
        elif isinstance(result, list) and sorted(map(str, result)) == sorted(want):
            hint = " — the right lines in completion order; keep the order of `countries`"
        raise fail(
            "the report is not right yet.",
            key=key,
            where=where,
            expected=f"{want}",
            observed=f"{result!r}{hint}"[:400],
        )
    calls = {c.label: c for c in recorder.calls}
    for country in COUNTRIES:
        city = capital_of(country)
        first = calls[f"capital({country})"]
        for label in (f"weather({city})", f"sight({city})"):
            if calls[label].start < first.end:
                raise fail(
                    "a lookup started before the capital it needs was known.",
                    key=key,
                    where=where,
                    expected=f"{label} to start after capital({country}) finished",
                    observed=f"it started {format_seconds(first.end - calls[label].start)} earlier",
                )
    capitals = [calls[f"capital({c})"] for c in COUNTRIES]
    pairs_overlap = all(
        _overlap(calls[f"weather({capital_of(c)})"], calls[f"sight({capital_of(c)})"]) for c in COUNTRIES
    )
    countries_overlap = _overlap(capitals[0], capitals[1]) and _overlap(capitals[0], capitals[2])
    ratio = speedup(recorder)
    if not countries_overlap or not pairs_overlap or ratio < MIN_SPEEDUP:
        missing = []
        if not countries_overlap:
            missing.append("the three countries ran one after another")
        if not pairs_overlap:
            missing.append("weather and sight of a city ran one after another")
        raise fail(
            "the independent work did not overlap.",
            key=key,
            where=section(LESSON, "2. `asyncio.gather`: overlap the waits"),
            expected=f"countries handled together, and each city's two lookups together "
            f"(speed-up at least {MIN_SPEEDUP}x)",
            observed=f"{'; '.join(missing) or 'too little overlap'}: speed-up {ratio:.2f}x",
        )
    return (
        f"three reports in country order; each lookup waited for its capital; everything else "
        f"overlapped (speed-up {ratio:.2f}x)."
    )


q1 = Exercise(
    "01",
    "q1",
    ("run_calls",),
    check_run_calls,
    (
        "Start every call before waiting for any: build one coroutine per call, then await them together.",
        "`await asyncio.gather(*(tools_by_name[c['name']].ainvoke(c['args']) for c in calls))` returns the "
        "results in the order of its arguments — whatever order they finish in. Pair them with the ids: "
        "`list(zip([c['id'] for c in calls], results))`.",
    ),
)
q2 = Exercise(
    "01",
    "q2",
    ("trip_report",),
    check_trip_report,
    (
        "Write a helper coroutine for ONE country (capital first, then the two city lookups together), "
        "and gather that helper over all countries.",
        "Inside the helper: `city = await capital(country)`, then "
        "`w, s = await asyncio.gather(weather(city), sight(city))` and return "
        '`f"{country}: {w}; {s}"`. Outside: `return list(await asyncio.gather(*(one(c) for c in '
        "countries)))` — gather keeps the order of `countries`.",
    ),
)

__all__ = ["CALLS", "COUNTRIES", "TOOLS", "CheckFailed", "capital", "q1", "q2", "sight", "weather"]

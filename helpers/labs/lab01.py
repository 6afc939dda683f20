"""Lab 01 — Make it concurrent (after `notebooks/01_sequential_vs_gather.ipynb`).

q1: `run_calls(calls, tools_by_name)` runs a model's independent tool calls together and answers
    each call by id, in call order.
q2: `trip_report(countries, capital, weather, sight)` keeps the dependent step (country → capital)
    sequential per country, and overlaps everything else.

The checks observe the learner's code from the course's side only: recorded tools and lookups
(`CallRecorder`) say which call ran when. They decide on structure — every call started before the
first one finished; no city lookup before its capital — which a stall of the machine cannot fake or
break; the speed-up (summed busy time of the calls over the time any call was running) is reported,
never required. Each check runs the batch the notebook shows and a second one drawn at random
(other ids, cities, countries, delays), so a hard-coded answer fails; after a hang on the first
batch the second is not tried, so a hang costs one time limit. The learner's function is called
from inside a running event loop, as the notebook calls it, so an `asyncio.run` inside it fails
here as it would there.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import re
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from helpers.cities import attraction_report, capital_of, weather_report
from helpers.labs import (
    Case,
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    _is_async_callable,
    run_learner,
    section,
)
from helpers.timing import CallRecorder, format_seconds

STEP = 0.02
"""Seconds of the shortest simulated call; the checks keep their sleeps this small."""
CITY_DELAY = {"Paris": 3, "London": 2, "Tokyo": 1}
"""Each city's calls take this many STEPs, so completion order differs from call order."""
COUNTRY_DELAY = {"France": 3, "England": 2, "Japan": 1}
LESSON = "01_sequential_vs_gather"
GATHER = section(LESSON, "2. `asyncio.gather`: overlap the waits")
ORDER = section(LESSON, "3. Results in argument order, completion in another")
DEPENDENT = section(LESSON, "4. Dependent calls stay sequential")

MORE_WEATHER = {
    "Lima": "overcast, 19 °C",
    "Oslo": "snow, -2 °C",
    "Nairobi": "sunny, 27 °C",
    "Rome": "clear, 23 °C",
}
MORE_SIGHTS = {
    "Lima": "the Plaza Mayor",
    "Oslo": "the Opera House",
    "Nairobi": "the National Park",
    "Rome": "the Colosseum",
}
MORE_CAPITALS = {"Peru": "Lima", "Norway": "Oslo", "Kenya": "Nairobi", "Italy": "Rome"}
"""Extra cities and countries the randomised batches draw from (the notebook shows only the first three)."""


def _weather(city: str) -> str:
    """Any argument is answered (`unknown` for what is not a known city), so a learner's wrong
    argument shows in the report, not as an error of the course's."""
    if not isinstance(city, str):
        return f"{city}: unknown"
    return f"{city}: {MORE_WEATHER[city]}" if city in MORE_WEATHER else weather_report(city)


def _sight(city: str) -> str:
    if not isinstance(city, str):
        return f"{city}: unknown"
    return f"{city}: {MORE_SIGHTS[city]}" if city in MORE_SIGHTS else attraction_report(city)


def _capital(country: str) -> str:
    if not isinstance(country, str):
        return "unknown"
    return MORE_CAPITALS.get(country) or capital_of(country)


ANSWERS: dict[str, Callable[[str], str]] = {"lookup_weather": _weather, "lookup_attraction": _sight}


_SCHEMAS: dict[str, Any] = {}


def make_tools(
    recorder: CallRecorder | None = None, step: float = STEP, delays: dict[str, int] | None = None
) -> dict[str, BaseTool]:
    """`{"lookup_weather": ..., "lookup_attraction": ...}`: async tools, Paris slowest, Tokyo fastest
    (or the `delays` given, in STEPs per city)."""
    delays = CITY_DELAY if delays is None else delays

    def build(name: str, answer: Callable[[str], str]) -> BaseTool:
        async def look_up(city: str) -> str:
            if recorder is None:
                await asyncio.sleep(step * delays.get(city, 1))
            else:
                with recorder.span(f"{name}({city})"):
                    await asyncio.sleep(step * delays.get(city, 1))
            return answer(city)

        if name not in _SCHEMAS:
            _SCHEMAS[name] = StructuredTool.from_function(
                coroutine=look_up, name=name, description=name
            ).args_schema
        return StructuredTool.from_function(
            coroutine=look_up,
            name=name,
            description=f"{name} for a city",
            args_schema=_SCHEMAS[name],
            infer_schema=False,
        )

    return {name: build(name, answer) for name, answer in ANSWERS.items()}


def make_calls(pairs: list[tuple[str, str]], ids: list[str] | None = None) -> list[dict]:
    """Tool calls for `(tool name, city)` pairs, ids `call-0`, `call-1`, ... unless given."""
    ids = ids or [f"call-{i}" for i in range(len(pairs))]
    return [
        {"name": tool, "args": {"city": city}, "id": id_, "type": "tool_call"}
        for id_, (tool, city) in zip(ids, pairs, strict=True)
    ]


CALLS = make_calls(
    [(t, c) for c in ("Paris", "London", "Tokyo") for t in ("lookup_weather", "lookup_attraction")]
)
"""Six independent calls a model sent in one turn (ids `call-0` ... `call-5`)."""
TOOLS = make_tools()
"""The tools the calls name, for trying `run_calls` in the notebook."""


def random_batch(rng: random.Random) -> tuple[list[dict], dict[str, int]]:
    """Four to eight calls on distinct (tool, city) pairs, random ids, random delays per city."""
    cities = list(CITY_DELAY) + list(MORE_WEATHER)
    pairs = [(t, c) for c in cities for t in ANSWERS]
    chosen = rng.sample(pairs, rng.randint(4, 8))
    ids = [f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}" for _ in chosen]
    return make_calls(chosen, ids), {c: rng.randint(1, 4) for c in cities}


def make_lookups(
    recorder: CallRecorder | None = None,
    step: float = STEP,
    delays: dict[str, int] | None = None,
    seen: list[tuple[str, Any]] | None = None,
) -> dict[str, Callable]:
    """Three async lookups `capital(country)`, `weather(city)`, `sight(city)` (recorded if asked;
    each call's `(lookup, argument)` appended to `seen` if given)."""
    delays = COUNTRY_DELAY if delays is None else delays

    def note(lookup: str, arg: Any) -> str:
        if seen is not None:
            seen.append((lookup, arg))
        return f"{lookup}({arg})"

    async def timed(label: str, steps: int) -> None:
        if recorder is None:
            await asyncio.sleep(step * steps)
        else:
            with recorder.span(label):
                await asyncio.sleep(step * steps)

    async def capital(country: str) -> str:
        steps = delays.get(country, 1) if isinstance(country, str) else 1
        await timed(note("capital", country), steps)
        return _capital(country)

    async def weather(city: str) -> str:
        await timed(note("weather", city), 1)
        return _weather(city)

    async def sight(city: str) -> str:
        await timed(note("sight", city), 1)
        return _sight(city)

    return {"capital": capital, "weather": weather, "sight": sight}


LOOKUPS = make_lookups()
capital, weather, sight = LOOKUPS["capital"], LOOKUPS["weather"], LOOKUPS["sight"]
COUNTRIES = ["France", "England", "Japan"]


def expected_report(countries: list[str]) -> list[str]:
    return [f"{c}: {_weather(_capital(c))}; {_sight(_capital(c))}" for c in countries]


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
    N means N at once (0.0 when no call ran). A stall of the machine stretches every call in flight,
    so it cannot fake an overlap; an idle gap between calls is not counted, so a stall there cannot
    hide one."""
    covered = busy_time(recorder)
    return recorder.busy / covered if covered > 0 else 0.0


def _overlap(a, b) -> bool:
    return a.start < b.end and b.start < a.end


def _ran_alone(recorder: CallRecorder) -> list[str]:
    """Labels of the calls that overlapped no other call."""
    calls = recorder.calls
    return [a.label for a in calls if not any(_overlap(a, b) for b in calls if b is not a)]


def _from_a_running_loop(fn: Any) -> Any:
    """`fn` called the way the notebook calls it: from inside a running event loop.

    An async function (or an object with an `async __call__`) is returned as it is; a sync one is
    wrapped in a coroutine, so an `asyncio.run(...)` inside it meets a running loop, as it does in
    the notebook and in any LangGraph node under `ainvoke`. The wrapper keeps `fn`'s signature.
    """
    if not callable(fn) or _is_async_callable(fn):
        return fn

    @functools.wraps(fn)
    async def called_from_a_loop(*args: Any, **kwargs: Any) -> Any:
        value = fn(*args, **kwargs)
        return await value if inspect.isawaitable(value) else value

    return called_from_a_loop


NESTED_LOOP = (
    "`asyncio.run` starts an event loop, and the notebook (like a LangGraph node under `ainvoke`) "
    "already runs one: Python refuses a second. Write `async def` and `await asyncio.gather(...)` "
    "inside it; lesson 02 § 6 shows the same error"
)


def _raised_why(error: CheckFailed) -> str:
    """A hint for an exception a beginner's answer raises, or ''."""
    original = getattr(error, "original", None)
    text = str(original or "")
    if isinstance(original, RuntimeError) and "running event loop" in text:
        return NESTED_LOOP
    if (
        isinstance(original, TypeError)
        and "unhashable type: 'list'" in text
        and str(error).startswith("Python's asyncio")
    ):
        return (
            "`asyncio.gather` takes the coroutines as separate arguments, not one list: "
            "`asyncio.gather(*coros)` (note the `*`)"
        )
    return ""


def _close_refused_coroutine(exc: BaseException | None) -> None:
    """Close the coroutine an `asyncio.run(...)` refused to run, so no "never awaited" warning
    follows the check's message."""
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "run" and frame.f_code.co_filename.endswith("runners.py"):
            main = frame.f_locals.get("main")
            if asyncio.iscoroutine(main):
                main.close()
        tb = tb.tb_next


def _learner_failed(cases: Cases, name: str, error: CheckFailed, where: str) -> None:
    """Record what `run_learner` raised; a beginner's known exception gets its hint."""
    why = _raised_why(error) if isinstance(error, LearnerRaised) else ""
    if why == NESTED_LOOP:
        _close_refused_coroutine(error.original)
    if why:
        cases.bad(name, expected="", observed=" ".join(str(error).split()), where=where, why=why)
    else:
        cases.failure(name, error)


def _not_tried(cases: Cases, name: str) -> None:
    """The second batch after the first hung: say so, without spending another time limit."""
    cases.items.append(Case(name, False, observed=f"not tried: “{cases.hung.name}” hung first"))


# -- q1 ----------------------------------------------------------------------------------------------
def _pairs(result: Any) -> list[tuple[str, str]] | None:
    """`[(id, text), ...]` from what `run_calls` returned (a ToolMessage result read as its content)."""
    try:
        items = list(result)
        pairs = []
        for item in items:
            id_, value = item
            pairs.append((str(id_), str(value.content if isinstance(value, ToolMessage) else value)))
        return pairs
    except (TypeError, ValueError):
        return None


def _shape_why(result: Any, ids: list[str]) -> str:
    """Why `result` is not a list of (call id, result) pairs, for the shapes beginners return."""
    if result is None:
        return "None means the function has no `return`"
    if asyncio.iscoroutine(result):
        return "a coroutine means an `await` is missing"
    if isinstance(result, dict):
        return (
            "a dict keyed by call id: return a list of (id, result) pairs in call order, "
            "`list(zip([c['id'] for c in calls], results))`"
        )
    try:
        items = list(result)
    except TypeError:
        return ""
    if items and all(isinstance(i, ToolMessage) for i in items):
        return (
            "ToolMessages on their own: pair each with its call's id, "
            "`[(c['id'], r) for c, r in zip(calls, results)]`"
        )
    if items and all(isinstance(i, str) for i in items):
        if all(any(i.startswith(f"{id_}") for id_ in ids) for i in items):
            return "strings that start with the id: return (id, result) tuples, `(c['id'], result)`"
        return (
            "the results without their call ids: pair each with its call's id, "
            "`list(zip([c['id'] for c in calls], results))`"
        )
    return ""


def _coroutines_in(result: Any) -> list:
    try:
        values = [v for item in result for v in (item if isinstance(item, tuple) else (item,))]
    except TypeError:
        return []
    return [v for v in values if asyncio.iscoroutine(v)]


def _try_batch(cases: Cases, title: str, run_calls: Any, calls: list[dict], delays: dict[str, int]) -> None:
    recorder = CallRecorder()
    tools = make_tools(recorder, delays=delays)
    ids = [c["id"] for c in calls]
    want = [(c["id"], ANSWERS[c["name"]](c["args"]["city"])) for c in calls]
    try:
        result = run_learner(
            _from_a_running_loop(run_calls), [dict(c) for c in calls], tools, name="run_calls"
        )
    except CheckFailed as error:
        _learner_failed(cases, f"{title}: answers", error, GATHER)
        return
    got = _pairs(result)
    if got is None:
        cases.bad(
            f"{title}: answers",
            expected="a list of (call id, result) pairs, e.g. [('call-0', 'Paris: sunny, 25 °C'), ...]",
            observed=repr(result),
            where=GATHER,
            why=_shape_why(result, ids),
        )
        if asyncio.iscoroutine(result):
            result.close()
        return
    never_ran = _coroutines_in(result)
    for coroutine in never_ran:
        coroutine.close()
    got_ids = [i for i, _ in got]
    texts, wanted_texts = [t for _, t in got], [t for _, t in want]
    if never_ran:
        cases.bad(
            f"{title}: answers",
            expected=f"{want[0]}",
            observed=f"{len(never_ran)} coroutine(s) among the results, e.g. {got[0]}",
            where=GATHER,
            why="`tool.ainvoke(...)` only makes a coroutine: nothing runs until it is awaited — "
            "`results = await asyncio.gather(*coros)`",
        )
        return  # nothing ran, so there is no concurrency to judge
    if got == want:
        cases.ok(f"{title}: answers", f"{len(calls)} answers in call order, ids matched")
    elif sorted(got) == sorted(want):
        by_end = [c["id"] for c in sorted(calls, key=lambda c: delays.get(c["args"]["city"], 1))]
        cases.bad(
            f"{title}: answers",
            expected=f"ids {ids} (call order)",
            observed=f"ids {got_ids}",
            where=ORDER,
            why="that is completion order (the fastest city first): collect the results in the order of "
            "`calls`, as `gather` returns them"
            if got_ids[:2] == by_end[:2]
            else "the right answers in another order: answer in the order of `calls`",
        )
    elif got_ids == ids and Counter(texts) == Counter(wanted_texts):
        delay = {t: delays.get(c["args"]["city"], 1) for t, c in zip(wanted_texts, calls, strict=True)}
        steps = [delay[t] for t in texts]
        bad = next((w, g) for w, g in zip(want, got, strict=True) if w != g)
        cases.bad(
            f"{title}: answers",
            expected=f"each id with its own call's answer, e.g. {bad[0]}",
            observed=f"{bad[1]}: the right answers, matched to the wrong call ids",
            where=ORDER,
            why="the answers came back in completion order (the fastest city first) and were zipped "
            "with the calls in call order, so each id got another call's answer — "
            "`asyncio.as_completed` yields in completion order; `gather` returns its results in "
            "argument order, which is call order"
            if sum(a > b for a, b in zip(steps, steps[1:], strict=False)) <= 1  # a busy machine may swap two
            else "each id must get the answer of its own call: keep the results in the order of "
            "`calls` (`gather` returns them in argument order)",
        )
    elif set(got_ids) != set(ids):
        cases.bad(
            f"{title}: answers",
            expected=f"{len(ids)} answers with ids {ids}",
            observed=f"ids {got_ids}",
            where=GATHER,
            why="answer the calls you were given, with their own `call['id']` — an answer written for the "
            "notebook's six calls does not fit another batch"
            if got_ids and not set(got_ids) & set(ids)
            else "one answer per call, each with its call's id",
        )
    else:
        bad = next((w, g) for w, g in zip(want, got, strict=False) if w != g)
        stringified = re.match(r"^content=['\"]", bad[1][1]) and "tool_call_id=" in bad[1][1]
        cases.bad(
            f"{title}: answers",
            expected=f"{bad[0]}",
            observed=f"{bad[1]}",
            where=GATHER,
            why="`str()` of a ToolMessage is its fields written out, not its text: keep the ToolMessage "
            "itself, or its `.content`"
            if stringified
            else "each call runs its own tool (`tools_by_name[call['name']]`) with its own args",
        )
    _concurrency(cases, title, recorder, calls)


def _concurrency(cases: Cases, title: str, recorder: CallRecorder, calls: list[dict]) -> None:
    ran = recorder.calls
    name = f"{title}: all {len(calls)} calls in flight together"
    if len(ran) < len(calls):
        cases.bad(
            name,
            expected=f"each of the {len(calls)} calls run once through the tools given (`tools_by_name`)",
            observed=f"{len(ran)} tool run(s) recorded",
            where=GATHER,
            why="answers written without running the tools, or tools other than the ones passed in, "
            "are not concurrency"
            if not ran
            else "some calls never ran",
        )
        return
    first_end = min(c.end for c in ran)
    late = [c.label for c in ran if c.start >= first_end]
    if not late:
        cases.ok(name, f"speed-up {speedup(recorder):.2f}x, wall {format_seconds(recorder.wall)}")
        return
    alone = _ran_alone(recorder)
    cases.bad(
        name,
        expected="every call started before the first one finished",
        observed=f"{len(late)} of {len(ran)} calls started only after another had finished "
        f"(at most {recorder.max_in_flight()} in flight at once; speed-up {speedup(recorder):.2f}x)",
        where=GATHER,
        why=(
            "every call was awaited before the next one started: one after another"
            if len(alone) == len(ran)
            else f"{', '.join(alone)} ran on {'its' if len(alone) == 1 else 'their'} own before the rest "
            "— awaiting some calls one by one and gathering the others is only partly concurrent"
            if alone
            else "the calls ran in several groups: start them all, then wait once"
        ),
    )


def check_run_calls(run_calls: Any) -> str:
    cases = Cases("q1")
    _try_batch(cases, "the notebook's six calls", run_calls, CALLS, CITY_DELAY)
    rng = random.Random()
    calls, delays = random_batch(rng)
    title = f"{len(calls)} other calls (random ids, cities, delays)"
    if cases.hung:
        _not_tried(cases, f"{title}: answers")
    else:
        _try_batch(cases, title, run_calls, calls, delays)
    return cases.result(
        "both batches (the notebook's six calls and a batch drawn at random) answered in call order "
        "with their ids, every call in flight at once."
    )


# -- q2 ----------------------------------------------------------------------------------------------
def _renamed(seen: list[tuple[str, Any]], countries: list[str]) -> tuple[list[str], list[str]]:
    """Lookups called with a name the course did not give: `(countries, cities)`, each like
    "capital('france') for 'France'" (case or spacing changed) or "capital('Frnce')".

    A city lookup called with a country is the dependency skipped, and one called with `unknown`
    follows a changed country: neither is counted here."""
    cities = [_capital(c) for c in countries]

    def name(lookup: str, arg: Any, names: list[str]) -> str:
        if not isinstance(arg, str):
            one = "country" if lookup == "capital" else "city"
            return f"{lookup}({arg!r}) (a {type(arg).__name__}, not one {one}'s name)"
        like = next((n for n in names if n.casefold() == arg.strip().casefold()), None)
        return f"{lookup}({arg!r})" + (f" for {like!r}" if like else "")

    found: tuple[list[str], list[str]] = ([], [])
    for lookup, arg in seen:
        if lookup == "capital" and arg not in countries:
            text = name(lookup, arg, countries)
            if text not in found[0]:
                found[0].append(text)
        elif lookup != "capital" and arg not in (*cities, *countries, "unknown"):
            text = name(lookup, arg, cities)
            if text not in found[1]:
                found[1].append(text)
    return found


def _try_trip(
    cases: Cases, title: str, trip_report: Any, countries: list[str], delays: dict[str, int]
) -> None:
    recorder, seen = CallRecorder(), []
    lookups = make_lookups(recorder, delays=delays, seen=seen)
    want = expected_report(countries)
    try:
        result = run_learner(
            _from_a_running_loop(trip_report),
            list(countries),
            lookups["capital"],
            lookups["weather"],
            lookups["sight"],
            name="trip_report",
        )
    except CheckFailed as error:
        _learner_failed(cases, f"{title}: the report", error, DEPENDENT)
        return
    renamed_countries, renamed_cities = _renamed(seen, countries)
    renamed = (
        "the lookups were called with a country name the course did not give "
        f"({', '.join(renamed_countries)}): pass `country` to `capital` exactly as it comes in "
        "`countries` — the lookups know only those names"
        if renamed_countries
        else ""
    )
    renamed_city = (
        f"the city lookups were called with a changed city ({', '.join(renamed_cities)}): pass the "
        "city exactly as `capital` returned it"
        if renamed_cities
        else ""
    )
    lines = [str(r) for r in result] if isinstance(result, list | tuple) else None
    if lines == want:
        cases.ok(f"{title}: the report", "one line per country, in the order of `countries`")
    else:
        why = ""
        if lines is None:
            why = (
                "None means the function has no `return`"
                if result is None
                else "return a list of strings, one per country"
            )
        elif renamed or renamed_city:
            why = renamed or renamed_city
        elif any("unknown" in line for line in lines):
            why = "`unknown` means a city lookup ran with the country, before its capital was known"
        elif sorted(lines) == sorted(want):
            why = "the right lines in completion order; keep the order of `countries`"
        elif len(lines) == len(want) and not set(lines) & set(want):
            why = "lines shaped `France: Paris: sunny, 25 °C; Paris: the Louvre`, from the lookups' answers"
        cases.bad(f"{title}: the report", expected=f"{want}", observed=repr(result), where=DEPENDENT, why=why)
        if asyncio.iscoroutine(result):
            result.close()
    calls = {c.label: c for c in recorder.calls}
    capitals = [calls.get(f"capital({c})") for c in countries]
    if any(c is None for c in capitals):
        cases.bad(
            f"{title}: lookups ran",
            expected=f"capital(country) called for each of {countries}",
            observed=f"{len(recorder.calls)} lookup(s) recorded: {sorted(calls)}",
            where=DEPENDENT,
            why="the report must come from the lookups passed in (`capital`, `weather`, `sight`), "
            "not be written out"
            if not calls
            else renamed or "`capital(country)` never ran: the city lookups need the city it returns",
        )
        return
    if renamed_cities:
        cases.bad(
            f"{title}: city lookups called with the city `capital` returned",
            expected="weather(city) and sight(city) with the city exactly as `capital(country)` returned it",
            observed="; ".join(renamed_cities),
            where=DEPENDENT,
            why=renamed_city,
        )
    early = []
    for country in countries:
        city, first = _capital(country), calls[f"capital({country})"]
        for label in (f"weather({city})", f"sight({city})"):
            if label in calls and calls[label].start < first.end:
                early.append(
                    f"{label} started {format_seconds(first.end - calls[label].start)} before "
                    f"capital({country}) finished"
                )
    if early:
        cases.bad(
            f"{title}: each city's lookups wait for its capital",
            expected="weather(city) and sight(city) to start after capital(country) returned the city",
            observed="; ".join(early),
            where=DEPENDENT,
        )
    else:
        cases.ok(f"{title}: each city's lookups wait for its capital")
    first_end = min(c.end for c in capitals)
    late = [countries[i] for i, c in enumerate(capitals) if c.start >= first_end]
    if late:
        cases.bad(
            f"{title}: the countries handled together",
            expected=f"all {len(countries)} capital lookups started before the first one finished",
            observed=f"{', '.join(late)} started only after another country's capital was known",
            where=GATHER,
            why="the countries ran one after another: gather one coroutine per country"
            if not any(_overlap(a, b) for a in capitals for b in capitals if a is not b)
            else "some countries were awaited on their own before the others were gathered: start them all",
        )
    else:
        cases.ok(f"{title}: the countries handled together")
    apart = [
        _capital(c)
        for c in countries
        if f"weather({_capital(c)})" in calls
        and f"sight({_capital(c)})" in calls
        and not _overlap(calls[f"weather({_capital(c)})"], calls[f"sight({_capital(c)})"])
    ]
    if apart:
        cases.bad(
            f"{title}: each city's two lookups together",
            expected="weather(city) and sight(city) in flight at the same time",
            observed=f"one after the other for {', '.join(apart)}",
            where=GATHER,
            why="they do not need each other: `await asyncio.gather(weather(city), sight(city))`",
        )
    else:
        cases.ok(f"{title}: each city's two lookups together", f"speed-up {speedup(recorder):.2f}x")


def check_trip_report(trip_report: Any) -> str:
    cases = Cases("q2")
    _try_trip(cases, "France, England, Japan", trip_report, list(COUNTRIES), COUNTRY_DELAY)
    rng = random.Random()
    countries = rng.sample(list(COUNTRY_DELAY) + list(MORE_CAPITALS), rng.randint(3, 5))
    delays = {c: rng.randint(1, 4) for c in countries}
    title = f"{', '.join(countries)} (drawn at random)"
    if cases.hung:
        _not_tried(cases, f"{title}: the report")
    else:
        _try_trip(cases, title, trip_report, countries, delays)
    return cases.result(
        "both trips reported in country order; every lookup waited for its capital; the countries and "
        "each city's two lookups overlapped."
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
        "`list(zip([c['id'] for c in calls], results))`. (An `asyncio.TaskGroup` works too; keep the tasks "
        "in call order.)",
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

"""Lab 01 — Make it concurrent (after `notebooks/01_sequential_vs_gather.ipynb`).

q1: `run_calls(calls, tools_by_name)` runs a model's independent tool calls together and answers
    each call by id, in call order.
q2: `trip_report(countries, capital, weather, sight)` keeps the dependent step (country → capital)
    sequential per country, and overlaps everything else.

Each check draws one scenario and runs small case functions over it (`_case_*`, each raising
`fail(...)`). What is drawn is ids, cities, countries, delays and the weather's temperatures (so an
answer can only come from running the tools handed over); what is NOT drawn is the hard part: the
batch the check draws for q1 always holds 16–20 calls (any cap on the calls in flight below that,
a `Semaphore(6)` or batches of eight, is seen on every run), and the trip it draws for q2 always
holds 6–8 countries (an answer that handles only the first few is seen on every run).

The checks observe the learner's code from the course's side only: every tool run and lookup
records its start and end as it happens (`CallRecorder`), and the checks decide on structure —
every call started before the first one finished; no city lookup before its capital — which a stall
of the machine cannot fake or break; the speed-up is reported, never required. Results are compared
only as the plain types the exercise asks for (`str`, `tuple`, `list`, `ToolMessage`, checked with
`type(x) is ...`), never through the learner's objects' own `__eq__`. The expected answers exist only
inside the check while it runs. The learner's function is called from inside a running event loop,
as the notebook calls it, so an `asyncio.run` inside it fails here as it would there.
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
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

import helpers.labs as core
from helpers import cities
from helpers.labs import (
    Case,
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    _is_async_callable,
    fail,
    run_learner,
    section,
)
from helpers.timing import CallRecorder, format_seconds

STEP = 0.02
"""Seconds of the shortest simulated call; the checks keep their sleeps this small."""
LESSON = "01_sequential_vs_gather"
GATHER = section(LESSON, "2. `asyncio.gather`: overlap the waits")
ORDER = section(LESSON, "3. Results in argument order, completion in another")
DEPENDENT = section(LESSON, "4. Dependent calls stay sequential")
TOOL_NAMES = ("lookup_weather", "lookup_attraction")
NOTEBOOK_CITIES = (("Paris", 3), ("London", 2), ("Tokyo", 1))
"""The notebook's cities and how many STEPs each one's calls take (Paris slowest): completion order
differs from call order."""
NOTEBOOK_COUNTRIES = (("France", 3), ("England", 2), ("Japan", 1))
MORE_CITIES = (
    ("Peru", "Lima", "overcast", "the Plaza Mayor"),
    ("Norway", "Oslo", "snow", "the Opera House"),
    ("Kenya", "Nairobi", "sunny", "the National Park"),
    ("Italy", "Rome", "clear", "the Colosseum"),
    ("Egypt", "Cairo", "hot and dry", "the Pyramids of Giza"),
    ("Canada", "Ottawa", "windy", "Parliament Hill"),
    ("Chile", "Santiago", "dry", "the Cerro San Cristóbal"),
    ("Spain", "Madrid", "sunny", "the Prado"),
    ("Vietnam", "Hanoi", "humid", "the Old Quarter"),
    ("Greece", "Athens", "clear", "the Acropolis"),
)
"""(country, capital, sky, sight) the drawn scenarios add to the notebook's three; each check draws
the temperatures."""
BATCH = (16, 20)
"""How many calls the batch q1 draws holds: more than any cap on the calls in flight a beginner
writes, so such a cap is seen on every run."""
TRIP = (6, 8)
"""How many countries the trip q2 draws holds: more than the notebook's three and than any prefix
a beginner handles on its own, so a partial answer is seen on every run."""


@dataclass(frozen=True)
class _World:
    """What the lookups answer during one check: country → capital, city → weather and sight."""

    capitals: dict[str, str]
    weather: dict[str, str]
    sights: dict[str, str]

    def capital(self, country: Any) -> str:
        return self.capitals.get(country, "unknown") if type(country) is str else "unknown"

    def weather_of(self, city: Any) -> str:
        """Any argument is answered (`unknown` for what is not a known city), so a learner's wrong
        argument shows in the report, not as an error of the course's."""
        if type(city) is not str:
            return f"{city!r}: unknown"
        return f"{city}: {self.weather.get(city, 'unknown')}"

    def sight_of(self, city: Any) -> str:
        if type(city) is not str:
            return f"{city!r}: unknown"
        return f"{city}: {self.sights.get(city, 'unknown')}"

    def answer(self, tool: str, city: str) -> str:
        return self.weather_of(city) if tool == "lookup_weather" else self.sight_of(city)


def _notebook_world() -> _World:
    return _World(dict(cities.CAPITALS), dict(cities.WEATHER), dict(cities.ATTRACTIONS))


def _drawn_world(rng: random.Random) -> _World:
    """The notebook's three cities as the notebook shows them, the others with drawn temperatures."""
    world = _notebook_world()
    for country, city, sky, sight in MORE_CITIES:
        world.capitals[country] = city
        world.weather[city] = f"{sky}, {rng.randint(-5, 36)} °C"
        world.sights[city] = sight
    return world


def _rng() -> random.Random:
    """The check's own generator (`helpers.labs.rng`): no patch of `random` reaches it."""
    return core.rng()


@functools.cache
def _args_schema(name: str) -> Any:
    """The args schema of a `name(city)` tool, built once (pydantic is slow)."""

    async def look_up(city: str) -> str:
        return city

    return StructuredTool.from_function(coroutine=look_up, name=name, description=name).args_schema


def _make_tools(
    world: _World, delays: dict[str, int], recorder: CallRecorder | None = None
) -> dict[str, BaseTool]:
    """`{"lookup_weather": ..., "lookup_attraction": ...}`: async tools taking `delays[city]` STEPs
    (1 for a city not listed), each run recorded as it starts and ends."""

    def build(name: str) -> BaseTool:
        async def look_up(city: str) -> str:
            steps = delays.get(city, 1) if type(city) is str else 1
            if recorder is None:
                await asyncio.sleep(STEP * steps)
            else:
                with recorder.span(f"{name}({city})"):
                    await asyncio.sleep(STEP * steps)
            return world.answer(name, city)

        return StructuredTool.from_function(
            coroutine=look_up,
            name=name,
            description=f"{name} for a city",
            args_schema=_args_schema(name),
            infer_schema=False,
        )

    return {name: build(name) for name in TOOL_NAMES}


def _make_calls(pairs: list[tuple[str, str]], ids: list[str]) -> list[dict]:
    """Tool calls for `(tool name, city)` pairs with these ids."""
    return [
        {"name": tool, "args": {"city": city}, "id": id_, "type": "tool_call"}
        for id_, (tool, city) in zip(ids, pairs, strict=True)
    ]


def _notebook_calls() -> list[dict]:
    pairs = [(t, c) for c, _ in NOTEBOOK_CITIES for t in TOOL_NAMES]
    return _make_calls(pairs, [f"call-{i}" for i in range(len(pairs))])


CALLS = tuple(_notebook_calls())
"""Six independent calls a model sent in one turn (ids `call-0` ... `call-5`), to try `run_calls`
on in the notebook (the check builds its own copy)."""
TOOLS = MappingProxyType(_make_tools(_notebook_world(), dict(NOTEBOOK_CITIES)))
"""The tools the calls name, for trying `run_calls` in the notebook."""


def _make_lookups(
    world: _World,
    delays: dict[str, int],
    recorder: CallRecorder | None = None,
    seen: list[tuple[str, Any]] | None = None,
) -> tuple[Callable, Callable, Callable]:
    """Three async lookups `capital(country)`, `weather(city)`, `sight(city)`, each recorded as it
    starts and ends (and its `(lookup, argument)` appended to `seen`) when asked."""

    async def timed(lookup: str, arg: Any, steps: int) -> None:
        if seen is not None:
            seen.append((lookup, arg))
        if recorder is None:
            await asyncio.sleep(STEP * steps)
        else:
            with recorder.span(f"{lookup}({arg})"):
                await asyncio.sleep(STEP * steps)

    async def capital(country: str) -> str:
        await timed("capital", country, delays.get(country, 1) if type(country) is str else 1)
        return world.capital(country)

    async def weather(city: str) -> str:
        await timed("weather", city, 1)
        return world.weather_of(city)

    async def sight(city: str) -> str:
        await timed("sight", city, 1)
        return world.sight_of(city)

    return capital, weather, sight


capital, weather, sight = _make_lookups(_notebook_world(), dict(NOTEBOOK_COUNTRIES))
"""The notebook's lookups, to try `trip_report` on (the check hands over its own, recorded)."""
COUNTRIES = tuple(country for country, _ in NOTEBOOK_COUNTRIES)


def _limit(sequential_seconds: float) -> float:
    """The time limit of one run: the course's, or more when the drawn work done one by one is long."""
    return core.scaled_limit(sequential_seconds)


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


def _judge(cases: Cases, name: str, case: Callable[..., str | None], *args: Any) -> None:
    """Run one case function: it returns a detail for ✔, or raises `fail(...)`."""
    try:
        detail = case(*args)
    except CheckFailed as error:
        cases.failure(name, error)
    else:
        cases.ok(name, detail or "")


def _not_tried(cases: Cases, name: str) -> None:
    """A later scenario after an earlier one hung: say so, without spending another time limit."""
    cases.items.append(Case(name, False, observed=f"not tried: “{cases.hung.name}” hung first"))


def _repr(value: Any, width: int = 300) -> str:
    """`repr(value)`, shortened; a learner object whose `__repr__` raises is named, not raised."""
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the learner's own __repr__
        return f"<a {type(value).__name__} whose repr() raised {type(exc).__name__}>"
    return core.shorten(text, width) if type(text) is str else f"<a {type(value).__name__}>"


def _type_name(value: Any) -> str:
    kind = type(value)
    for base in (str, tuple, list, dict):
        if kind is not base and isinstance(value, base):
            return f"a {kind.__name__} (a subclass of {base.__name__})"
    return f"a {kind.__name__}"


# -- q1 ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Batch:
    """One batch of calls q1 tries: the calls, what the tools answer, each city's delay in STEPs."""

    title: str
    calls: tuple[dict, ...]
    world: _World
    delays: dict[str, int]

    def ids(self) -> list[str]:
        return [c["id"] for c in self.calls]

    def wanted(self) -> list[tuple[str, str]]:
        return [(c["id"], self.world.answer(c["name"], c["args"]["city"])) for c in self.calls]

    def seconds(self) -> float:
        return sum(STEP * self.delays.get(c["args"]["city"], 1) for c in self.calls)


def _notebook_batch() -> _Batch:
    return _Batch(
        "the notebook's six calls", tuple(_notebook_calls()), _notebook_world(), dict(NOTEBOOK_CITIES)
    )


def _drawn_batch(rng: random.Random) -> _Batch:
    """16–20 calls on distinct (tool, city) pairs, random ids, delays of 2–5 STEPs per city."""
    world = _drawn_world(rng)
    pairs = [(t, c) for c in world.weather for t in TOOL_NAMES]
    chosen = rng.sample(pairs, rng.randint(*BATCH))
    ids = core.distinct(lambda: f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}", len(chosen))
    delays = {c: rng.randint(2, 5) for c in world.weather}
    title = f"{len(chosen)} other calls (drawn: ids, cities, delays)"
    return _Batch(title, tuple(_make_calls(chosen, ids)), world, delays)


@dataclass
class _Ran:
    """What one run of the learner's `run_calls` gave, and what the tools recorded meanwhile."""

    result: Any
    recorder: CallRecorder


def _plain_pairs(result: Any) -> tuple[list[tuple[str, str]] | None, str]:
    """`([(id, text), ...], "")` when `result` is made of the plain types the exercise asks for (a
    list or tuple of 2-item tuples or lists; each id a `str`; each result a `str` or a `ToolMessage`
    whose content is a `str`), else `(None, what is not plain)` (`""` for a shape that is no list of
    pairs at all)."""
    if type(result) not in (list, tuple):
        return None, ""
    pairs = []
    for item in result:
        if type(item) not in (tuple, list) or len(item) != 2:
            return None, ""
        id_, value = item
        if type(value) is ToolMessage and type(value.content) is str:
            value = value.content
        if type(id_) is not str:
            return None, f"a call id that is {_type_name(id_)}: {_repr(id_, 80)}"
        if type(value) is not str:
            return None, f"a result that is {_type_name(value)}: {_repr(value, 80)}"
        pairs.append((id_, value))
    return pairs, ""


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
    if type(result) not in (list, tuple):
        return "return a list of (call id, result) pairs"
    items = list(result)
    if items and all(type(i) is ToolMessage for i in items):
        return (
            "ToolMessages on their own: pair each with its call's id, "
            "`[(c['id'], r) for c, r in zip(calls, results)]`"
        )
    if items and all(type(i) is str for i in items):
        if all(any(i.startswith(f"{id_}") for id_ in ids) for i in items):
            return "strings that start with the id: return (id, result) tuples, `(c['id'], result)`"
        return (
            "the results without their call ids: pair each with its call's id, "
            "`list(zip([c['id'] for c in calls], results))`"
        )
    return ""


def _coroutines_in(result: Any) -> list:
    if type(result) not in (list, tuple):
        return []
    values = [v for item in result for v in (item if type(item) in (tuple, list) else (item,))]
    return [v for v in values if asyncio.iscoroutine(v)]


def _case_answers(ran: _Ran, batch: _Batch) -> str:
    """Every call answered by its own id, in call order, with its own tool's result — as plain values."""
    ids, want = batch.ids(), batch.wanted()
    result = ran.result
    never_ran = _coroutines_in(result)
    if never_ran:
        raise fail(
            "",
            expected=f"{want[0]}",
            observed=f"{len(never_ran)} coroutine(s) among the results, e.g. {_repr(result[0])}",
            where=GATHER,
            why="`tool.ainvoke(...)` only makes a coroutine: nothing runs until it is awaited — "
            "`results = await asyncio.gather(*coros)`",
        )
    got, not_plain = _plain_pairs(result)
    if got is None:
        raise fail(
            "",
            expected="a list of (call id, result) pairs, e.g. [('call-0', 'Paris: sunny, 25 °C'), ...], each "
            "id a plain `str` from `calls`, each result the `str` (or ToolMessage) the tool returned",
            observed=not_plain or _repr(result),
            where=GATHER,
            why="the check compares plain values only: return the ids from `calls` and the tools' results "
            "as they are, not objects of your own"
            if not_plain
            else _shape_why(result, ids),
        )
    got_ids = [i for i, _ in got]
    texts, wanted_texts = [t for _, t in got], [t for _, t in want]
    if got == want:
        return f"{len(ids)} answers in call order, ids matched"
    if sorted(got) == sorted(want):
        by_end = [c["id"] for c in sorted(batch.calls, key=lambda c: batch.delays.get(c["args"]["city"], 1))]
        raise fail(
            "",
            expected=f"ids {ids} (call order)",
            observed=f"ids {got_ids}",
            where=ORDER,
            why="that is completion order (the fastest city first): collect the results in the order of "
            "`calls`, as `gather` returns them"
            if got_ids[:2] == by_end[:2]
            else "the right answers in another order: answer in the order of `calls`",
        )
    if got_ids == ids and Counter(texts) == Counter(wanted_texts):
        delay = {
            t: batch.delays.get(c["args"]["city"], 1) for t, c in zip(wanted_texts, batch.calls, strict=True)
        }
        steps = [delay[t] for t in texts]
        bad = next((w, g) for w, g in zip(want, got, strict=True) if w != g)
        raise fail(
            "",
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
    if set(got_ids) != set(ids):
        raise fail(
            "",
            expected=f"{len(ids)} answers with ids {ids}",
            observed=f"ids {got_ids}",
            where=GATHER,
            why="answer the calls you were given, with their own `call['id']` — an answer written for the "
            "notebook's six calls does not fit another batch"
            if got_ids and not set(got_ids) & set(ids)
            else "one answer per call, each with its call's id"
            + ("" if len(got_ids) >= len(ids) else f": {len(got_ids)} of {len(ids)} calls were answered"),
        )
    bad = next((w, g) for w, g in zip(want, got, strict=False) if w != g)
    stringified = re.match(r"^content=['\"]", bad[1][1]) and "tool_call_id=" in bad[1][1]
    raise fail(
        "",
        expected=f"{bad[0]}",
        observed=f"{bad[1]}",
        where=GATHER,
        why="`str()` of a ToolMessage is its fields written out, not its text: keep the ToolMessage "
        "itself, or its `.content`"
        if stringified
        else "each call runs its own tool (`tools_by_name[call['name']]`) with its own args",
    )


def _case_in_flight(ran: _Ran, batch: _Batch) -> str:
    """Every call of the batch started before the first one finished (read from the tools' records)."""
    recorder, n = ran.recorder, len(batch.calls)
    runs = recorder.calls
    if len(runs) < n:
        raise fail(
            "",
            expected=f"each of the {n} calls run once through the tools given (`tools_by_name`)",
            observed=f"{len(runs)} tool run(s) recorded",
            where=GATHER,
            why="answers written without running the tools, or tools other than the ones passed in, "
            "are not concurrency"
            if not runs
            else "some calls never ran",
        )
    first_end = min(c.end for c in runs)
    late = [c.label for c in runs if c.start >= first_end]
    if not late:
        return f"speed-up {speedup(recorder):.2f}x, wall {format_seconds(recorder.wall)}"
    alone, peak = _ran_alone(recorder), recorder.max_in_flight()
    first = {c.label for c in runs[: len(alone)]}  # runs are sorted by start
    if len(alone) == len(runs):
        why = "every call was awaited before the next one started: one after another"
    elif alone and set(alone) == first:
        why = (
            f"{', '.join(alone)} ran on {'its' if len(alone) == 1 else 'their'} own before the rest — "
            "awaiting some calls one by one and gathering the others is only partly concurrent"
        )
    else:
        why = (
            f"never more than {peak} calls in flight: a cap of your own (an `asyncio.Semaphore({peak})`, "
            f"or batches of {peak}) holds the others back — this exercise runs every call of the turn "
            "at once, however many there are: start them all, then wait once"
        )
    raise fail(
        "",
        expected="every call started before the first one finished",
        observed=f"{len(late)} of {len(runs)} calls started only after another had finished "
        f"(at most {peak} in flight at once; speed-up {speedup(recorder):.2f}x)",
        where=GATHER,
        why=why,
    )


def _run_batch(cases: Cases, run_calls: Any, batch: _Batch) -> _Ran | None:
    """Run the learner's `run_calls` on fresh recorded tools; a learner failure is recorded as a case."""
    recorder = CallRecorder()
    tools = _make_tools(batch.world, batch.delays, recorder)
    try:
        result = run_learner(
            _from_a_running_loop(run_calls),
            [dict(c, args=dict(c["args"])) for c in batch.calls],
            tools,
            name="run_calls",
            limit=_limit(batch.seconds()),
        )
    except CheckFailed as error:
        _learner_failed(cases, f"{batch.title}: answers", error, GATHER)
        return None
    return _Ran(result, recorder)


def check_run_calls(run_calls: Any) -> str:
    cases = Cases("q1")
    for batch in (_notebook_batch(), _drawn_batch(_rng())):
        if cases.hung:
            _not_tried(cases, f"{batch.title}: answers")
            continue
        ran = _run_batch(cases, run_calls, batch)
        if ran is None:
            continue
        _judge(cases, f"{batch.title}: answers", _case_answers, ran, batch)
        for coroutine in _coroutines_in(ran.result):
            coroutine.close()
        if asyncio.iscoroutine(ran.result):
            ran.result.close()
        elif not _coroutines_in(ran.result):  # nothing ran when it holds coroutines: nothing to judge
            _judge(
                cases,
                f"{batch.title}: all {len(batch.calls)} calls in flight together",
                _case_in_flight,
                ran,
                batch,
            )
    return cases.result(
        "both batches (the notebook's six calls and 16 or more drawn at random) answered in call order "
        "with their ids, every call in flight at once."
    )


# -- q2 ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Trip:
    """One trip q2 tries: the countries, what the lookups answer, each capital lookup's STEPs."""

    title: str
    countries: tuple[str, ...]
    world: _World
    delays: dict[str, int]

    def wanted(self) -> list[str]:
        w = self.world
        return [f"{c}: {w.weather_of(w.capital(c))}; {w.sight_of(w.capital(c))}" for c in self.countries]

    def seconds(self) -> float:
        return sum(STEP * (self.delays.get(c, 1) + 2) for c in self.countries)


def _notebook_trip() -> _Trip:
    countries = tuple(c for c, _ in NOTEBOOK_COUNTRIES)
    return _Trip(", ".join(countries), countries, _notebook_world(), dict(NOTEBOOK_COUNTRIES))


def _drawn_trip(rng: random.Random) -> _Trip:
    """6–8 countries drawn from the notebook's and the others, capital delays of 1–4 STEPs."""
    world = _drawn_world(rng)
    countries = tuple(rng.sample(sorted(world.capitals), rng.randint(*TRIP)))
    delays = {c: rng.randint(1, 4) for c in countries}
    return _Trip(f"{', '.join(countries)} (drawn at random)", countries, world, delays)


@dataclass
class _Trace:
    """What one run of the learner's `trip_report` gave, and every lookup as it happened."""

    result: Any
    recorder: CallRecorder
    seen: list[tuple[str, Any]]

    def spans(self) -> dict[str, Any]:
        return {c.label: c for c in self.recorder.calls}


def _renamed(trace: _Trace, trip: _Trip) -> tuple[list[str], list[str]]:
    """Lookups called with a name the course did not give: `(countries, cities)`, each like
    "capital('france') for 'France'" (case or spacing changed) or "capital('Frnce')".

    A city lookup called with a country is the dependency skipped, and one called with `unknown`
    follows a changed country: neither is counted here."""
    countries = list(trip.countries)
    cities = [trip.world.capital(c) for c in countries]

    def name(lookup: str, arg: Any, names: list[str]) -> str:
        if type(arg) is not str:
            one = "country" if lookup == "capital" else "city"
            return f"{lookup}({_repr(arg)}) (a {type(arg).__name__}, not one {one}'s name)"
        like = next((n for n in names if n.casefold() == arg.strip().casefold()), None)
        return f"{lookup}({arg!r})" + (f" for {like!r}" if like else "")

    found: tuple[list[str], list[str]] = ([], [])
    for lookup, arg in trace.seen:
        plain = type(arg) is str
        if lookup == "capital" and not (plain and arg in countries):
            text = name(lookup, arg, countries)
            if text not in found[0]:
                found[0].append(text)
        elif lookup != "capital" and not (plain and arg in (*cities, *countries, "unknown")):
            text = name(lookup, arg, cities)
            if text not in found[1]:
                found[1].append(text)
    return found


def _case_report(trace: _Trace, trip: _Trip) -> str:
    """One plain `str` line per country, in the order of `countries`, from the lookups' answers."""
    want, result = trip.wanted(), trace.result
    plain = type(result) in (list, tuple) and all(type(line) is str for line in result)
    lines = list(result) if plain else None
    if lines == want:
        return "one line per country, in the order of `countries`"
    renamed_countries, renamed_cities = _renamed(trace, trip)
    why = ""
    if lines is None:
        why = (
            "None means the function has no `return`"
            if result is None
            else "return a list of plain `str` lines, one per country (the check compares plain values "
            "only, not objects of your own)"
            if type(result) in (list, tuple)
            else "return a list of strings, one per country"
        )
    elif renamed_countries:
        why = (
            "the lookups were called with a country name the course did not give "
            f"({', '.join(renamed_countries)}): pass `country` to `capital` exactly as it comes in "
            "`countries` — the lookups know only those names"
        )
    elif renamed_cities:
        why = (
            f"the city lookups were called with a changed city ({', '.join(renamed_cities)}): pass the "
            "city exactly as `capital` returned it"
        )
    elif any("unknown" in line for line in lines):
        why = "`unknown` means a city lookup ran with the country, before its capital was known"
    elif sorted(lines) == sorted(want):
        why = "the right lines in completion order; keep the order of `countries`"
    elif len(lines) < len(want) and set(lines) <= set(want):
        why = f"{len(lines)} of {len(want)} countries reported: handle every country of `countries`"
    elif len(lines) == len(want) and not set(lines) & set(want):
        why = "lines shaped `France: Paris: sunny, 25 °C; Paris: the Louvre`, from the lookups' answers"
    odd = [line for line in result if type(line) is not str] if type(result) in (list, tuple) else []
    observed = f"a line that is {_type_name(odd[0])}: {_repr(odd[0], 120)}" if odd else _repr(result)
    raise fail("", expected=f"{want}", observed=observed, where=DEPENDENT, why=why)


def _case_capitals_ran(trace: _Trace, trip: _Trip) -> str:
    """`capital(country)` ran for every country (the report must come from the lookups)."""
    spans = trace.spans()
    missing = [c for c in trip.countries if f"capital({c})" not in spans]
    if not missing:
        return ""
    renamed_countries, _ = _renamed(trace, trip)
    raise fail(
        "",
        expected=f"capital(country) called for each of {list(trip.countries)}",
        observed=f"{len(spans)} lookup(s) recorded; no capital lookup for {', '.join(missing)}",
        where=DEPENDENT,
        why="the report must come from the lookups passed in (`capital`, `weather`, `sight`), "
        "not be written out"
        if not spans
        else "the lookups were called with a country name the course did not give "
        f"({', '.join(renamed_countries)}): pass `country` to `capital` exactly as it comes in `countries`"
        if renamed_countries
        else f"{len(missing)} of {len(trip.countries)} countries never had their capital looked up: handle "
        "every country of `countries`"
        if len(missing) < len(trip.countries)
        else "`capital(country)` never ran: the city lookups need the city it returns",
    )


def _case_cities_as_returned(trace: _Trace, trip: _Trip) -> str:
    _, renamed_cities = _renamed(trace, trip)
    if not renamed_cities:
        return ""
    raise fail(
        "",
        expected="weather(city) and sight(city) with the city exactly as `capital(country)` returned it",
        observed="; ".join(renamed_cities),
        where=DEPENDENT,
        why=f"the city lookups were called with a changed city ({', '.join(renamed_cities)}): pass the "
        "city exactly as `capital` returned it",
    )


def _case_waits_for_capital(trace: _Trace, trip: _Trip) -> str:
    """No city lookup started before its country's capital lookup ended (as recorded)."""
    spans, early = trace.spans(), []
    for country in trip.countries:
        city, first = trip.world.capital(country), spans[f"capital({country})"]
        for label in (f"weather({city})", f"sight({city})"):
            if label in spans and spans[label].start < first.end:
                early.append(
                    f"{label} started {format_seconds(first.end - spans[label].start)} before "
                    f"capital({country}) finished"
                )
    if not early:
        return ""
    raise fail(
        "",
        expected="weather(city) and sight(city) to start after capital(country) returned the city",
        observed="; ".join(early),
        where=DEPENDENT,
    )


def _case_countries_together(trace: _Trace, trip: _Trip) -> str:
    """Every capital lookup started before the first one finished."""
    spans = trace.spans()
    capitals = [spans[f"capital({c})"] for c in trip.countries]
    first_end = min(c.end for c in capitals)
    late = [trip.countries[i] for i, c in enumerate(capitals) if c.start >= first_end]
    if not late:
        return ""
    raise fail(
        "",
        expected=f"all {len(capitals)} capital lookups started before the first one finished",
        observed=f"{', '.join(late)} started only after another country's capital was known",
        where=GATHER,
        why="the countries ran one after another: gather one coroutine per country"
        if not any(_overlap(a, b) for a in capitals for b in capitals if a is not b)
        else "some countries were awaited on their own before the others were gathered: start them all",
    )


def _case_city_pair_together(trace: _Trace, trip: _Trip) -> str:
    """Each city's weather and sight lookups overlapped."""
    spans = trace.spans()
    apart = []
    for country in trip.countries:
        city = trip.world.capital(country)
        w, s = spans.get(f"weather({city})"), spans.get(f"sight({city})")
        if w is not None and s is not None and not _overlap(w, s):
            apart.append(city)
    if not apart:
        return f"speed-up {speedup(trace.recorder):.2f}x"
    raise fail(
        "",
        expected="weather(city) and sight(city) in flight at the same time",
        observed=f"one after the other for {', '.join(apart)}",
        where=GATHER,
        why="they do not need each other: `await asyncio.gather(weather(city), sight(city))`",
    )


def _run_trip(cases: Cases, trip_report: Any, trip: _Trip) -> _Trace | None:
    recorder, seen = CallRecorder(), []
    lookups = _make_lookups(trip.world, trip.delays, recorder, seen)
    try:
        result = run_learner(
            _from_a_running_loop(trip_report),
            list(trip.countries),
            *lookups,
            name="trip_report",
            limit=_limit(trip.seconds()),
        )
    except CheckFailed as error:
        _learner_failed(cases, f"{trip.title}: the report", error, DEPENDENT)
        return None
    return _Trace(result, recorder, seen)


def check_trip_report(trip_report: Any) -> str:
    cases = Cases("q2")
    for trip in (_notebook_trip(), _drawn_trip(_rng())):
        if cases.hung:
            _not_tried(cases, f"{trip.title}: the report")
            continue
        trace = _run_trip(cases, trip_report, trip)
        if trace is None:
            continue
        _judge(cases, f"{trip.title}: the report", _case_report, trace, trip)
        if asyncio.iscoroutine(trace.result):
            trace.result.close()
        before = len(cases.failed)
        _judge(cases, f"{trip.title}: lookups ran", _case_capitals_ran, trace, trip)
        if len(cases.failed) > before:
            continue  # the cases below read each country's capital lookup
        if _renamed(trace, trip)[1]:
            _judge(
                cases,
                f"{trip.title}: city lookups called with the city `capital` returned",
                _case_cities_as_returned,
                trace,
                trip,
            )
        for name, case in (
            ("each city's lookups wait for its capital", _case_waits_for_capital),
            ("the countries handled together", _case_countries_together),
            ("each city's two lookups together", _case_city_pair_together),
        ):
            _judge(cases, f"{trip.title}: {name}", case, trace, trip)
    return cases.result(
        "both trips (the notebook's three countries and six or more drawn at random) reported in country "
        "order; every lookup waited for its capital; the countries and each city's two lookups overlapped."
    )


q1 = Exercise(
    "01",
    "q1",
    ("run_calls",),
    check_run_calls,
    (
        "Start every call before waiting for any: build one coroutine per call, then await them together.",
        "One coroutine per call, in the calls' order: `tools_by_name[call['name']].ainvoke(call['args'])`, "
        "not awaited yet. Hand them all to ONE `await asyncio.gather(...)` (unpack the list with `*`): it "
        "returns the results in the order of its arguments, whatever order they finish in, so the i-th "
        "result answers the i-th call: pair each with that call's `id`. (An `asyncio.TaskGroup` works "
        "too; keep the tasks in call order.)",
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
        "Inside the helper, the capital is awaited on its own (both lookups need it); the weather and "
        "the sight of that city then go into one `asyncio.gather`, and the helper returns the country's "
        "line. Outside, one more `asyncio.gather` runs the helper for every country at once: it keeps "
        "the order of `countries`, so the lines come back in country order.",
    ),
)

__all__ = ("CALLS", "COUNTRIES", "TOOLS", "CheckFailed", "capital", "q1", "q2", "sight", "weather")

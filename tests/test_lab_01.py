# ruff: noqa: B905 - the learner answers below are written the way learners write them
"""Lab 01 as a learner meets it: for both exercises, correct alternatives are accepted and the wrong
answers beginners write (hard-coded output, partial concurrency, a cap on the calls in flight, only
the first few countries, completion order, ids by position, `asyncio.run` inside a loop, coroutines
never awaited, always-equal `str` subclasses, ...) are rejected with a message naming the mistake on
every run; the verdicts survive a stall; the module hands out no answers.

The learner answers below run concurrently (their checks mostly wait), so the whole set stays fast.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time

import pytest
from lab_checks import assert_verdicts, rejected, verdicts

import helpers.labs as core
from helpers.labs import lab01


async def gather_calls(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return list(zip([c["id"] for c in calls], results))


async def taskgroup_calls(calls, tools_by_name):
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]
    return [(c["id"], t.result()) for c, t in zip(calls, tasks)]


class CallRunner:
    """A callable object, as a learner who likes classes writes it."""

    async def __call__(self, calls, tools_by_name):
        return await gather_calls(calls, tools_by_name)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)  # a sync wrapper returning the coroutine

    return wrapper


async def tool_messages(calls, tools_by_name):  # ainvoke(call) returns a ToolMessage
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls))
    return [(c["id"], r) for c, r in zip(calls, results)]


async def one_by_one(calls, tools_by_name):
    return [(c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]


async def first_two_then_gather(calls, tools_by_name):
    first = [(c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls[:2]]
    return first + await gather_calls(calls[2:], tools_by_name)


async def first_then_gather(calls, tools_by_name):
    first = [(calls[0]["id"], await tools_by_name[calls[0]["name"]].ainvoke(calls[0]["args"]))]
    return first + await gather_calls(calls[1:], tools_by_name)


async def as_they_finish(calls, tools_by_name):
    done = []

    async def one(c):
        done.append((c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])))

    await asyncio.gather(*(one(c) for c in calls))
    return done


async def hard_coded(calls, tools_by_name):
    return [
        ("call-0", "Paris: sunny, 25 °C"),
        ("call-1", "Paris: the Louvre"),
        ("call-2", "London: cloudy, 18 °C"),
        ("call-3", "London: the Tower of London"),
        ("call-4", "Tokyo: light rain, 21 °C"),
        ("call-5", "Tokyo: Senso-ji"),
    ]


async def notebook_tools(calls, tools_by_name):  # the notebook's TOOLS, not the ones passed in
    return await gather_calls(calls, lab01.TOOLS)


async def ids_by_position(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [(f"call-{i}", r) for i, r in enumerate(results)]


async def one_tool_for_all(calls, tools_by_name):
    weather = tools_by_name["lookup_weather"]
    results = await asyncio.gather(*(weather.ainvoke(c["args"]) for c in calls))
    return list(zip([c["id"] for c in calls], results))


def sync_run_calls(calls, tools_by_name):  # a sync def calling async-only tools
    return [(c["id"], tools_by_name[c["name"]].invoke(c["args"])) for c in calls]


def test_lab01_speedup_of_no_calls_is_zero_not_a_crash():
    from helpers.timing import CallRecorder

    assert lab01.speedup(CallRecorder()) == 0.0


def test_lab01_q1_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "gather": gather_calls,
        "TaskGroup": taskgroup_calls,
        "callable object": CallRunner(),
        "decorated function": logged(gather_calls),
        "ainvoke(call) → ToolMessage": tool_messages,
        "one by one": one_by_one,
        "first two awaited, rest gathered": first_two_then_gather,
        "first awaited, rest gathered": first_then_gather,
        "completion order": as_they_finish,
        "hard-coded answers": hard_coded,
        "the notebook's TOOLS": notebook_tools,
        "ids by position": ids_by_position,
        "one tool for every call": one_tool_for_all,
        "sync def": sync_run_calls,
    }
    assert_verdicts(
        verdicts(lab01.check_run_calls, answers),
        {
            "gather": (),
            "TaskGroup": (),
            "callable object": (),
            "decorated function": (),
            "ainvoke(call) → ToolMessage": (),
            "one by one": ("one after another", "at most 1 in flight"),
            "first two awaited, rest gathered": (
                "ran on their own before the rest",
                "only partly concurrent",
            ),
            "first awaited, rest gathered": ("ran on its own before the rest", "only partly concurrent"),
            "completion order": ("call order", "completion order"),
            "hard-coded answers": ("does not fit another batch", "0 tool run(s) recorded"),
            "the notebook's TOOLS": ("0 tool run(s) recorded", "through the tools given"),
            "ids by position": ("with their own `call['id']`",),
            "one tool for every call": ("each call runs its own tool",),
            "sync def": ("langchain-core raised NotImplementedError", "await tool.ainvoke"),
        },
    )


async def per_country(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def two_phases(countries, capital, weather, sight):  # all capitals, then every lookup
    cities = await asyncio.gather(*(capital(c) for c in countries))
    found = await asyncio.gather(*(weather(c) for c in cities), *(sight(c) for c in cities))
    n = len(cities)
    return [f"{c}: {found[i]}; {found[n + i]}" for i, c in enumerate(countries)]


async def taskgroups(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        async with asyncio.TaskGroup() as group:
            w, s = group.create_task(weather(city)), group.create_task(sight(city))
        return f"{country}: {w.result()}; {s.result()}"

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(c)) for c in countries]
    return [t.result() for t in tasks]


async def countries_in_turn(countries, capital, weather, sight):
    lines = []
    for country in countries:
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        lines.append(f"{country}: {forecast}; {landmark}")
    return lines


async def first_country_alone(countries, capital, weather, sight):
    first = await per_country(countries[:1], capital, weather, sight)
    return first + await per_country(countries[1:], capital, weather, sight)


async def lookups_in_turn(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        return f"{country}: {await weather(city)}; {await sight(city)}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def everything_at_once(countries, capital, weather, sight):  # the dependency skipped
    found = await asyncio.gather(*(weather(c) for c in countries), *(sight(c) for c in countries))
    return [f"{c}: {found[i]}; {found[len(countries) + i]}" for i, c in enumerate(countries)]


async def hard_coded_report(countries, capital, weather, sight):
    return [
        "France: Paris: sunny, 25 °C; Paris: the Louvre",
        "England: London: cloudy, 18 °C; London: the Tower of London",
        "Japan: Tokyo: light rain, 21 °C; Tokyo: Senso-ji",
    ]


async def in_completion_order(countries, capital, weather, sight):
    lines = []

    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        lines.append(f"{country}: {forecast}; {landmark}")

    await asyncio.gather(*(one(c) for c in countries))
    return lines


async def forgot_return(countries, capital, weather, sight):
    await per_country(countries, capital, weather, sight)


def test_lab01_q2_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "per-country gather": per_country,
        "two phases": two_phases,
        "TaskGroups": taskgroups,
        "countries in turn": countries_in_turn,
        "first country alone": first_country_alone,
        "city lookups in turn": lookups_in_turn,
        "dependency skipped": everything_at_once,
        "hard-coded report": hard_coded_report,
        "completion order": in_completion_order,
        "no return": forgot_return,
    }
    assert_verdicts(
        verdicts(lab01.check_trip_report, answers),
        {
            "per-country gather": (),
            "two phases": (),
            "TaskGroups": (),
            "countries in turn": ("the countries ran one after another",),
            "first country alone": ("awaited on their own before the others were gathered",),
            "city lookups in turn": ("weather(city) and sight(city) in flight at the same time",),
            "dependency skipped": (
                "`unknown` means a city lookup ran with the country",
                "`capital(country)` never ran",
            ),
            "hard-coded report": ("drawn at random", "not be written out"),
            "completion order": ("completion order; keep the order of `countries`",),
            "no return": ("None means the function has no `return`",),
        },
    )


def test_lab01_q2_names_the_structure_that_failed_not_a_speedup_that_passed():
    message = verdicts(lab01.check_trip_report, {"x": first_country_alone})["x"]
    assert "the countries handled together" in message and "at least 1.3x" not in message


@pytest.mark.timing
@pytest.mark.parametrize("after", [0.005, 0.05], ids=["early", "late"])
def test_lab01_verdicts_survive_a_stall(after, capsys):
    async def stall(seconds: float = 0.3) -> None:
        await asyncio.sleep(after)
        time.sleep(seconds)  # a loaded machine freezes the loop

    async def run_calls(calls, tools_by_name):
        results, _ = await asyncio.gather(gather_calls(calls, tools_by_name), stall())
        return results

    async def trip_report(countries, capital, weather, sight):
        lines, _ = await asyncio.gather(per_country(countries, capital, weather, sight), stall())
        return lines

    lab01.q1.check({"run_calls": run_calls})
    lab01.q2.check({"trip_report": trip_report})
    assert capsys.readouterr().out.count("✔") == 2


def test_lab01_hints_are_tiered(capsys):
    lab01.q1.hint()
    lab01.q1.hint(2)
    first, second = capsys.readouterr().out.split("Hint 2/2")
    assert "Hint 1/2" in first and "q1.hint(2)" in first and "gather" in second


# -- messages that name the learner's real mistake ------------------------------------------------
async def as_completed_zipped(calls, tools_by_name):  # completion order, zipped with the calls' ids
    coros = [tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls]
    results = [await next_done for next_done in asyncio.as_completed(coros)]
    return list(zip([c["id"] for c in calls], results))


async def as_completed_zipped_messages(calls, tools_by_name):  # the same with ainvoke(call)
    coros = [tools_by_name[c["name"]].ainvoke(c) for c in calls]
    results = [await next_done for next_done in asyncio.as_completed(coros)]
    return list(zip([c["id"] for c in calls], results))


def test_lab01_q1_as_completed_zipped_with_the_calls_says_completion_order_and_wrong_ids():
    results = verdicts(
        lab01.check_run_calls, {"strings": as_completed_zipped, "messages": as_completed_zipped_messages}
    )
    for message in results.values():
        first = message.split("other calls")[0]  # the notebook's batch: distinct delays per city
        for phrase in (
            "not yet",
            "matched to the wrong call ids",
            "came back in completion order",
            "`asyncio.as_completed` yields in completion order",
            "“3. Results in argument order, completion in another”",
        ):
            assert phrase in first, f"{phrase!r} missing from:\n{message}"
        assert "each call runs its own tool" not in message


async def lowered_country(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country.lower())
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def uppered_city(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city.upper()), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


def test_lab01_q2_a_changed_name_is_named_with_its_argument():
    results = verdicts(lab01.check_trip_report, {"country": lowered_country, "city": uppered_city})
    country = results["country"]
    for phrase in (
        "not yet",
        "called with a country name the course did not give",
        "capital('france') for 'France'",
        "“4. Dependent calls stay sequential”",
    ):
        assert phrase in country, f"{phrase!r} missing from:\n{country}"
    # the false messages this answer used to get: it neither skipped the capital nor never called it
    assert "a city lookup ran with the country" not in country
    assert "`capital(country)` never ran" not in country
    city = results["city"]
    for phrase in ("not yet", "called with a changed city", "weather('PARIS') for 'Paris'"):
        assert phrase in city, f"{phrase!r} missing from:\n{city}"
    assert "a city lookup ran with the country" not in city


def test_lab01_a_hang_on_the_first_batch_is_reported_once_and_the_second_not_tried(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 0.5)
    started = []

    async def hanging_calls(calls, tools_by_name):
        started.append(len(calls))
        await asyncio.Event().wait()

    async def hanging_trip(countries, capital, weather, sight):
        started.append(len(countries))
        await asyncio.Event().wait()

    for exercise, name, fn in (
        (lab01.q1, "run_calls", hanging_calls),
        (lab01.q2, "trip_report", hanging_trip),
    ):
        started.clear()
        message = rejected(exercise, {name: fn}, "did not return within", "not tried", "hung first")
        # the limit scales with the drawn work done one by one (`helpers.labs.scaled_limit`)
        limit = float(re.search(r"did not return within ([\d.]+) s", message)[1])
        assert 0.5 < limit < 4, message
        assert started == [len(lab01.CALLS) if name == "run_calls" else len(lab01.COUNTRIES)], started
        assert message.count("did not return within") == 1, message
        assert "The check cancelled it." in message  # the kernel is usable: nothing left running


async def await_in_for_loop(calls, tools_by_name):
    answers = []
    for call in calls:
        answers.append((call["id"], await tools_by_name[call["name"]].ainvoke(call["args"])))
    return answers


async def create_task_then_await_each(calls, tools_by_name):
    answers = []
    for call in calls:
        task = asyncio.create_task(tools_by_name[call["name"]].ainvoke(call["args"]))
        answers.append((call["id"], await task))  # awaited before the next task is made
    return answers


async def dict_by_id(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return {c["id"]: r for c, r in zip(calls, results)}


async def ids_from_the_shown_batch(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return list(zip(["call-0", "call-1", "call-2", "call-3", "call-4", "call-5"], results))


def asyncio_run_inside(calls, tools_by_name):
    async def main():
        return await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))

    return list(zip([c["id"] for c in calls], asyncio.run(main())))


async def gather_of_sync_invoke(calls, tools_by_name):
    jobs = (asyncio.to_thread(tools_by_name[c["name"]].invoke, c["args"]) for c in calls)
    return list(zip([c["id"] for c in calls], await asyncio.gather(*jobs)))


async def strings_without_ids(calls, tools_by_name):
    return list(await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls)))


async def tool_messages_without_ids(calls, tools_by_name):
    return list(await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls)))


async def str_of_tool_messages(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls))
    return [(c["id"], str(r)) for c, r in zip(calls, results)]


async def id_and_result_in_one_string(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [f"{c['id']}: {r}" for c, r in zip(calls, results)]


async def gather_of_one_list(calls, tools_by_name):
    coros = [tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls]
    try:
        results = await asyncio.gather(coros)
    finally:
        for coro in coros:
            coro.close()
    return list(zip([c["id"] for c in calls], results))


async def coroutines_never_awaited(calls, tools_by_name):
    return [(c["id"], tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]


def test_lab01_q1_more_wrong_answers_beginners_write_are_named():
    answers = {
        "await in a for loop": await_in_for_loop,
        "create_task awaited at once": create_task_then_await_each,
        "a dict by id": dict_by_id,
        "ids from the shown batch": ids_from_the_shown_batch,
        "asyncio.run inside": asyncio_run_inside,
        "gather of sync invoke": gather_of_sync_invoke,
        "strings without ids": strings_without_ids,
        "ToolMessages without ids": tool_messages_without_ids,
        "str() of ToolMessages": str_of_tool_messages,
        "id and result in one string": id_and_result_in_one_string,
        "gather of one list": gather_of_one_list,
        "coroutines never awaited": coroutines_never_awaited,
    }
    assert_verdicts(
        verdicts(lab01.check_run_calls, answers),
        {
            "await in a for loop": ("one after another", "at most 1 in flight"),
            "create_task awaited at once": ("one after another", "at most 1 in flight"),
            "a dict by id": ("a dict keyed by call id", "list of (id, result) pairs in call order"),
            "ids from the shown batch": ("with their own `call['id']`", "does not fit another batch"),
            "asyncio.run inside": (
                "asyncio.run() cannot be called from a running event loop",
                "Write `async def` and `await asyncio.gather(...)`",
            ),
            "gather of sync invoke": ("does not support sync invocation", "use `await tool.ainvoke(...)`"),
            "strings without ids": ("the results without their call ids", "pair each with its call's id"),
            "ToolMessages without ids": ("ToolMessages on their own", "pair each with its call's id"),
            "str() of ToolMessages": ("`str()` of a ToolMessage", "`.content`"),
            "id and result in one string": ("strings that start with the id", "(id, result) tuples"),
            "gather of one list": ("unhashable type: 'list'", "`asyncio.gather(*coros)`"),
            "coroutines never awaited": (
                "coroutine(s) among the results",
                "nothing runs until it is awaited",
            ),
        },
    )


def asyncio_run_trip(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    async def main():
        return await asyncio.gather(*(one(c) for c in countries))

    return list(asyncio.run(main()))


async def capital_of_the_list(countries, capital, weather, sight):  # one lookup for all countries
    city = await capital(countries)
    return [f"{c}: {await weather(city)}; {await sight(city)}" for c in countries]


def test_lab01_q2_more_wrong_answers_beginners_write_are_named():
    assert_verdicts(
        verdicts(lab01.check_trip_report, {"asyncio.run": asyncio_run_trip, "list": capital_of_the_list}),
        {
            "asyncio.run": ("cannot be called from a running event loop", "Write `async def`"),
            "list": (
                "called with a country name the course did not give",
                "capital(['France', 'England', 'Japan']) (a list, not one country's name)",
            ),
        },
    )


# -- what a determined learner tries: caps, partial answers, faked values, the module's answers ---------
async def capped_at_six(calls, tools_by_name):
    limit = asyncio.Semaphore(6)

    async def one(c):
        async with limit:
            return await tools_by_name[c["name"]].ainvoke(c["args"])

    return list(zip([c["id"] for c in calls], await asyncio.gather(*(one(c) for c in calls))))


async def batches_of_eight(calls, tools_by_name):
    answers = []
    for start in range(0, len(calls), 8):
        chunk = calls[start : start + 8]
        answers += await gather_calls(chunk, tools_by_name)
    return answers


class Same(str):
    """Equal to anything: the faked value an attacker returns."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __str__(self):  # `str(x)` gives the object itself back, not a plain copy
        return self

    __hash__ = str.__hash__


async def always_equal_results(calls, tools_by_name):  # runs every call, then fakes the comparison
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [(Same(c["id"]), Same("x")) for c, _ in zip(calls, results)]


async def always_equal_ids(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [(Same("call"), r) for r in results]


async def tasks_then_await_in_order(calls, tools_by_name):  # correct: every task exists before any await
    tasks = [asyncio.create_task(tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]
    return [(c["id"], await t) for c, t in zip(calls, tasks)]


async def wait_then_read_in_order(calls, tools_by_name):  # correct: asyncio.wait, then call order
    tasks = [asyncio.ensure_future(tools_by_name[c["name"]].ainvoke(c)) for c in calls]
    await asyncio.wait(tasks)
    return [(c["id"], t.result()) for c, t in zip(calls, tasks)]


async def by_id_dict_then_list(calls, tools_by_name):  # correct: a dict by id, read back in call order
    async def one(c):
        return c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])

    found = dict(await asyncio.gather(*(one(c) for c in reversed(calls))))
    return [(c["id"], found[c["id"]]) for c in calls]


def test_lab01_q1_caps_partial_runs_and_faked_values_are_refused_on_every_run():
    answers = {
        "gather": gather_calls,
        "tasks, then awaited in order": tasks_then_await_in_order,
        "asyncio.wait, then call order": wait_then_read_in_order,
        "a dict by id read in call order": by_id_dict_then_list,
        "TaskGroup": taskgroup_calls,
        "Semaphore(6)": capped_at_six,
        "batches of eight": batches_of_eight,
        "always-equal str results": always_equal_results,
        "always-equal str ids": always_equal_ids,
    }
    expected = {
        "gather": (),
        "tasks, then awaited in order": (),
        "asyncio.wait, then call order": (),
        "a dict by id read in call order": (),
        "TaskGroup": (),
        "Semaphore(6)": (
            "never more than 6 calls in flight",
            "`asyncio.Semaphore(6)`",
            "every call of the turn",
        ),
        "batches of eight": ("never more than 8 calls in flight", "a cap of your own"),
        "always-equal str results": ("a Same (a subclass of str)", "compares plain values only"),
        "always-equal str ids": (
            "a call id that is a Same (a subclass of str)",
            "compares plain values only",
        ),
    }
    for _ in range(3):  # each wrong answer is refused on every draw, not on most
        assert_verdicts(verdicts(lab01.check_run_calls, answers), expected)


async def first_three_gathered(countries, capital, weather, sight):
    return await per_country(countries[:3], capital, weather, sight)


async def first_three_then_in_turn(countries, capital, weather, sight):
    lines = await per_country(countries[:3], capital, weather, sight)
    for country in countries[3:]:
        lines += await per_country([country], capital, weather, sight)
    return lines


async def always_equal_lines(countries, capital, weather, sight):
    lines = await per_country(countries, capital, weather, sight)
    return [Same(line) for line in lines]


async def tasks_per_country(countries, capital, weather, sight):  # correct: tasks, read in order
    async def one(country):
        city = await capital(country)
        w = asyncio.create_task(weather(city))
        s = asyncio.create_task(sight(city))
        return f"{country}: {await w}; {await s}"

    tasks = [asyncio.create_task(one(c)) for c in countries]
    return [await t for t in tasks]


async def capitals_by_country(countries, capital, weather, sight):  # correct: a dict of cities first
    async def one(country):
        return country, await capital(country)

    cities = dict(await asyncio.gather(*map(one, countries)))

    async def line(country):
        w, s = await asyncio.gather(weather(cities[country]), sight(cities[country]))
        return f"{country}: {w}; {s}"

    return tuple(await asyncio.gather(*map(line, countries)))


def test_lab01_q2_partial_trips_and_faked_lines_are_refused_on_every_run():
    answers = {
        "per-country gather": per_country,
        "tasks per country": tasks_per_country,
        "capitals by country, then lines": capitals_by_country,
        "first three gathered": first_three_gathered,
        "first three, then the rest in turn": first_three_then_in_turn,
        "always-equal str lines": always_equal_lines,
    }
    expected = {
        "per-country gather": (),
        "tasks per country": (),
        "capitals by country, then lines": (),
        "first three gathered": ("3 of ", "countries reported: handle every country of `countries`"),
        "first three, then the rest in turn": ("the countries handled together", "started only after"),
        "always-equal str lines": ("a list of plain `str` lines", "compares plain values only"),
    }
    for _ in range(3):
        assert_verdicts(verdicts(lab01.check_trip_report, answers), expected)


def test_lab01_every_drawn_scenario_holds_the_hard_cases():
    for _ in range(200):
        batch = lab01._drawn_batch(lab01._rng())
        assert 16 <= len(batch.calls) <= 20 and len(set(batch.ids())) == len(batch.calls)
        trip = lab01._drawn_trip(lab01._rng())
        assert 6 <= len(trip.countries) <= 8


def test_lab01_hands_out_no_answers_and_keeps_its_constants_immutable():
    import ast
    import inspect
    from types import MappingProxyType

    assert not hasattr(lab01, "ANSWERS") and not hasattr(lab01, "expected_report")
    tree = ast.parse(inspect.getsource(lab01))
    defined = [
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    public = [name for name in functions if not name.startswith("_")]
    assert set(public) <= {"check_run_calls", "check_trip_report", "busy_time", "speedup"}, public
    for name in defined:
        value = getattr(lab01, name)
        if name in ("q1", "q2") or callable(value) and name in ("capital", "weather", "sight"):
            continue
        assert isinstance(value, str | int | float | tuple | frozenset | MappingProxyType), (
            name,
            type(value),
        )

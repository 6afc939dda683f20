"""The course's demo tools: the source posts' weather / attraction pair, a failing tool and a
dependent pair, each with a configurable delay and an optional `CallRecorder`.

The delays stand in for network I/O: `asyncio.sleep` for async tools, `time.sleep` for sync ones.
Each factory builds fresh tools, so a notebook can have a fast pair and a slow pair side by side.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import nullcontext

from langchain_core.tools import BaseTool, StructuredTool

from helpers.cities import attraction_report, capital_of, weather_report
from helpers.timing import CallRecorder

DEFAULT_DELAY = 0.1
"""Seconds each demo tool waits: the posts use 1 s; the course uses 0.1 s so notebooks run fast."""


def _span(recorder: CallRecorder | None, label: str):
    return recorder.span(label) if recorder is not None else nullcontext()


async def fetch_weather(city: str, delay: float = DEFAULT_DELAY) -> str:
    """Pretend to call a weather API: wait `delay` seconds, return e.g. `Paris: sunny, 25 °C`.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    await asyncio.sleep(delay)
    return weather_report(city)


async def fetch_attraction(city: str, delay: float = DEFAULT_DELAY) -> str:
    """Pretend to call an attractions API: wait `delay` seconds, return e.g. `Paris: the Louvre`.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    await asyncio.sleep(delay)
    return attraction_report(city)


def _make_tool(
    name: str, description: str, answer, delay: float, recorder, sync: bool, record_city: bool = False
) -> BaseTool:
    """Build one tool whose body waits `delay` s (inside a recorder span) and returns answer(city)."""

    def label(city: str) -> str:
        return f"{name}({city})" if record_city else name

    if sync:

        def func(city: str) -> str:
            with _span(recorder, label(city)):
                time.sleep(delay)
                return answer(city)

        return StructuredTool.from_function(func=func, name=name, description=description)

    async def coroutine(city: str) -> str:
        with _span(recorder, label(city)):
            await asyncio.sleep(delay)
            return answer(city)

    return StructuredTool.from_function(coroutine=coroutine, name=name, description=description)


def make_city_tools(
    delay: float = DEFAULT_DELAY,
    *,
    recorder: CallRecorder | None = None,
    sync: bool = False,
    record_city: bool = False,
) -> list[BaseTool]:
    """Return the posts' two independent tools, `[lookup_weather, lookup_attraction]`.

    Args:
        delay: seconds each call waits before answering.
        recorder: if given, every call is recorded as a span labelled with the tool's name.
        sync: build sync tools (`time.sleep`) instead of async ones (`asyncio.sleep`).
            Async tools have no sync body: `tool.invoke(...)` on them raises
            `NotImplementedError`; that is deliberate and taught in lesson 03.
        record_city: label each span `lookup_weather(Paris)` instead of `lookup_weather`, so a
            timeline of several cities tells its rows apart.

    Example:
        ```python
        weather, attraction = make_city_tools(delay=0.1)
        await weather.ainvoke({"city": "Paris"})   # 'Paris: sunny, 25 °C'
        ```

    Taught in `notebooks/02_custom_async_tool_node.ipynb`.
    """
    return [
        _make_tool(
            "lookup_weather",
            "Look up today's weather for a city, e.g. Paris.",
            weather_report,
            delay,
            recorder,
            sync,
            record_city,
        ),
        _make_tool(
            "lookup_attraction",
            "Look up the best-known sight of a city, e.g. Paris.",
            attraction_report,
            delay,
            recorder,
            sync,
            record_city,
        ),
    ]


def make_failing_tool(
    delay: float = DEFAULT_DELAY,
    *,
    recorder: CallRecorder | None = None,
    sync: bool = False,
    name: str = "lookup_traffic",
) -> BaseTool:
    """Return a tool that waits `delay` seconds and then raises `ConnectionError`.

    It stands for a flaky upstream service: use it to see what one failure does to a batch.

    Taught in `notebooks/01_sequential_vs_gather.ipynb` (as a coroutine) and
    `notebooks/03_builtin_toolnode.ipynb`.
    """

    def fail(city: str) -> str:
        raise ConnectionError(f"traffic service unreachable for {city}")

    return _make_tool(
        name, "Look up live traffic for a city (its service is down).", fail, delay, recorder, sync
    )


def make_dependent_tools(
    delay: float = DEFAULT_DELAY,
    *,
    recorder: CallRecorder | None = None,
) -> list[BaseTool]:
    """Return `[lookup_capital, lookup_weather]`: the second needs the first's answer.

    `lookup_capital("France")` returns `Paris`; only then can `lookup_weather("Paris")` be asked.
    Dependent calls like these must stay sequential, whatever the concurrency machinery.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    async def lookup_capital(country: str) -> str:
        """Return the capital city of a country, e.g. France -> Paris."""
        with _span(recorder, "lookup_capital"):
            await asyncio.sleep(delay)
            return capital_of(country)

    capital = StructuredTool.from_function(coroutine=lookup_capital)
    return [capital, make_city_tools(delay, recorder=recorder)[0]]

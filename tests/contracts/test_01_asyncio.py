"""asyncio behaviours lesson 01 teaches (Python's, not LangGraph's — but the lesson stands on them)."""

import asyncio

import pytest

pytestmark = pytest.mark.lesson("01_sequential_vs_gather")


async def _sleep_return(label, seconds, done):
    await asyncio.sleep(seconds)
    done.append(label)
    return label


async def _fail(seconds):
    await asyncio.sleep(seconds)
    raise ConnectionError("down")


def test_gather_returns_in_argument_order_not_completion_order():
    done = []

    async def main():
        return await asyncio.gather(
            _sleep_return("A", 0.06, done), _sleep_return("B", 0.02, done), _sleep_return("C", 0.04, done)
        )

    assert asyncio.run(main()) == ["A", "B", "C"]
    assert done == ["B", "C", "A"]


def test_gather_raises_the_first_error_and_does_not_cancel_siblings():
    done = []

    async def main():
        with pytest.raises(ConnectionError):
            await asyncio.gather(_sleep_return("slow", 0.08, done), _fail(0.01))
        assert done == []  # the error arrives first
        await asyncio.sleep(0.15)
        return done

    assert asyncio.run(main()) == ["slow"]  # ... and the sibling still completed


def test_return_exceptions_keeps_every_outcome_in_place():
    async def main():
        return await asyncio.gather(_sleep_return("ok", 0.01, []), _fail(0.0), return_exceptions=True)

    ok, error = asyncio.run(main())
    assert ok == "ok" and isinstance(error, ConnectionError)


def test_taskgroup_cancels_siblings_and_raises_an_exception_group():
    done = []

    async def main():
        with pytest.raises(ExceptionGroup) as info:
            async with asyncio.TaskGroup() as group:
                group.create_task(_sleep_return("slow", 0.08, done))
                group.create_task(_fail(0.01))
        assert str(info.value) == "unhandled errors in a TaskGroup (1 sub-exception)"
        assert [type(e) for e in info.value.exceptions] == [ConnectionError]
        await asyncio.sleep(0.15)
        return done

    assert asyncio.run(main()) == []


def test_as_completed_yields_in_completion_order():
    async def main():
        done = []
        return [await f for f in asyncio.as_completed(
            [_sleep_return("A", 0.06, done), _sleep_return("B", 0.02, done)])]

    assert asyncio.run(main()) == ["B", "A"]

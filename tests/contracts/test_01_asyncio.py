"""asyncio behaviours lesson 01 teaches (Python's, not LangGraph's — but the lesson stands on them).

Order is the point of most of these, so they are driven by events the test sets, not by sleeps:
a loaded machine (a 0.3 s stall anywhere) cannot change their verdict.
"""

import asyncio
import traceback

import pytest

pytestmark = pytest.mark.lesson("01_sequential_vs_gather")


async def _wait_for(event, label, done):
    await event.wait()
    done.append(label)
    return label


async def _fail():
    await asyncio.sleep(0)
    raise ConnectionError("down")


def test_gather_returns_in_argument_order_not_completion_order():
    async def main():
        done = []
        a, b, c = asyncio.Event(), asyncio.Event(), asyncio.Event()
        gathered = asyncio.gather(_wait_for(a, "A", done), _wait_for(b, "B", done), _wait_for(c, "C", done))
        for event in (b, c, a):  # finish B, then C, then A
            event.set()
            await asyncio.sleep(0)
        return await gathered, done

    returned, completed = asyncio.run(main())
    assert returned == ["A", "B", "C"]
    assert completed == ["B", "C", "A"]


def test_gather_raises_the_first_error_and_does_not_cancel_siblings():
    async def main():
        done, release = [], asyncio.Event()
        sibling = asyncio.ensure_future(_wait_for(release, "slow", done))
        with pytest.raises(ConnectionError):
            await asyncio.gather(sibling, _fail())
        assert done == [] and not sibling.done(), "the error arrives while the sibling still waits"
        release.set()
        assert await sibling == "slow"  # ... not cancelled: it runs to the end
        return done

    assert asyncio.run(main()) == ["slow"]


def test_return_exceptions_keeps_every_outcome_in_place():
    async def main():
        release = asyncio.Event()
        release.set()
        return await asyncio.gather(_wait_for(release, "ok", []), _fail(), return_exceptions=True)

    ok, error = asyncio.run(main())
    assert ok == "ok" and isinstance(error, ConnectionError)


def test_taskgroup_cancels_siblings_and_raises_an_exception_group():
    async def main():
        done, never = [], asyncio.Event()
        with pytest.raises(ExceptionGroup) as info:
            async with asyncio.TaskGroup() as group:
                sibling = group.create_task(_wait_for(never, "slow", done))
                group.create_task(_fail())
        assert str(info.value) == "unhandled errors in a TaskGroup (1 sub-exception)"
        assert [type(e) for e in info.value.exceptions] == [ConnectionError]
        return sibling.cancelled(), done

    assert asyncio.run(main()) == (True, [])


def test_except_star_matches_the_exceptions_inside_the_group():
    async def main():
        caught = []
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(_fail())
        except* ConnectionError as errors:
            caught = [repr(e) for e in errors.exceptions]
        return caught

    assert asyncio.run(main()) == ["ConnectionError('down')"]


def test_an_exception_group_formats_as_a_tree_of_its_members():
    group = ExceptionGroup("unhandled errors in a TaskGroup", [ConnectionError("down")])
    assert "".join(traceback.format_exception(group)).splitlines() == [
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
        "  +-+---------------- 1 ----------------",
        "    | ConnectionError: down",
        "    +------------------------------------",
    ]


def test_as_completed_yields_in_completion_order():
    async def main():
        done = []
        a, b = asyncio.Event(), asyncio.Event()
        arrivals = asyncio.as_completed([_wait_for(a, "A", done), _wait_for(b, "B", done)])
        b.set()
        first = await next(arrivals)
        a.set()
        return [first, await next(arrivals)]

    assert asyncio.run(main()) == ["B", "A"]


def test_ipython_prints_an_escaped_exception_group_as_plain_stderr_whatever_xmode(capsys):
    # What a notebook shows when an ExceptionGroup escapes a cell: IPython 9 hands it to Python's
    # own traceback.print_exc (stderr text), never to the kernel's error display, so %xmode does
    # not shorten it and nbval's raises-exception cannot compare it. A plain error goes through
    # _showtraceback, which ipykernel turns into an `error` output.
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Recording(InteractiveShell):
        shown: list[str] = []

        def _showtraceback(self, etype, evalue, stb):
            self.shown.append(etype.__name__)

    config = Config()
    config.HistoryManager.enabled = False
    shell = Recording(config=config)
    shell.run_line_magic("xmode", "Minimal")
    capsys.readouterr()
    shell.run_cell("raise ValueError('plain')")
    result = shell.run_cell("raise ExceptionGroup('eg', [ValueError('inside')])")
    shell.run_cell(  # an error raised while a group is being handled takes the same path
        "try:\n    raise ExceptionGroup('eg', [ValueError('x')])\n"
        "except* ValueError:\n    raise RuntimeError('while handling')"
    )
    Recording.clear_instance()
    err = capsys.readouterr().err
    assert Recording.shown == ["ValueError"]
    assert isinstance(result.error_in_exec, ExceptionGroup)
    assert "Exception Group Traceback (most recent call last):" in err
    assert "ValueError: inside" in err
    assert "RuntimeError: while handling" in err

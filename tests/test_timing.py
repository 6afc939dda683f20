import asyncio
import threading
import time

import pytest

from helpers.timing import Call, CallRecorder, Stopwatch, format_seconds


@pytest.mark.timing  # an upper bound on a 0.02 s sleep (0.5 s leaves room for a stall)
def test_stopwatch_measures_the_block():
    with Stopwatch() as sw:
        time.sleep(0.02)
    assert 0.02 <= sw.seconds < 0.5
    assert str(sw) == format_seconds(sw.seconds)


def test_stopwatch_not_started_says_how_to_use_it():
    with pytest.raises(RuntimeError, match="with Stopwatch"):
        _ = Stopwatch().seconds


def test_format_seconds_is_the_shape_the_sanitizer_masks():
    assert format_seconds(0.2013) == "0.20 s"


def test_recorder_sees_overlap_of_tasks_and_order_of_completion():
    # Driven by events, not sleeps: B is released first, then A, whatever the machine's load.
    rec = CallRecorder()

    async def job(label, release):
        with rec.span(label):
            await release.wait()

    async def main():
        a, b = asyncio.Event(), asyncio.Event()
        both = asyncio.gather(job("A", a), job("B", b))
        await asyncio.sleep(0)  # let both start
        b.set()
        await asyncio.sleep(0.01)
        a.set()
        await both

    asyncio.run(main())
    assert [c.label for c in rec.calls] in (["A", "B"], ["B", "A"])
    assert rec.labels_by_end == ["B", "A"]
    assert rec.max_in_flight() == 2 and rec.overlap()
    assert rec.wall < rec.busy
    assert all("MainThread / Task-" in w for w in rec.workers())


def test_recorder_is_thread_safe_and_names_threads():
    rec = CallRecorder()

    def work(i):
        with rec.span(f"t{i}"):
            time.sleep(0.01)

    threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(rec.calls) == 8
    assert sorted(rec.workers()) == sorted(f"worker-{i}" for i in range(8))


def test_sequential_calls_do_not_overlap_and_ties_are_not_overlap():
    rec = CallRecorder(_calls=[Call("a", 0.0, 1.0, "w"), Call("b", 1.0, 2.0, "w")])
    assert rec.max_in_flight() == 1 and not rec.overlap()
    assert rec.wall == 2.0 and rec.busy == 2.0


def test_span_records_a_call_that_raises_and_reset_forgets():
    rec = CallRecorder()
    with pytest.raises(ValueError), rec.span("boom"):
        raise ValueError("x")
    assert [c.label for c in rec.calls] == ["boom"]
    rec.reset()
    with pytest.raises(ValueError, match="recorder.span"):
        _ = rec.wall


def test_from_calls_keeps_a_snapshot_across_a_reset():
    from helpers.timing import Call, CallRecorder

    recorder = CallRecorder()
    with recorder.span("a"):
        pass
    snapshot = recorder.calls
    recorder.reset()
    copy = CallRecorder.from_calls(snapshot)
    assert [c.label for c in copy.calls] == ["a"] and recorder.calls == []
    assert CallRecorder.from_calls([Call("x", 0, 1, "w"), Call("y", 0.5, 2, "w")]).max_in_flight() == 2

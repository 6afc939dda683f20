import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from helpers.timing import Call, CallRecorder, Rendezvous, Stopwatch, default_pool_size, format_seconds


@pytest.mark.timing  # soaked: bounded by the time around the block, which a stall lengthens as much
def test_stopwatch_measures_the_block():
    start = time.perf_counter()
    sw = Stopwatch()
    time.sleep(0.05)  # before the block: not counted
    with sw:
        time.sleep(0.02)
    time.sleep(0.05)  # after it: not counted
    around = time.perf_counter() - start
    assert 0.02 <= sw.seconds <= around - 0.1
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


# -- the default pool size and the rendezvous -----------------------------------------------------
def _formula_of_this_python():
    cpus = os.process_cpu_count() if sys.version_info >= (3, 13) else os.cpu_count()
    return min(32, (cpus or 1) + 4)


def test_default_pool_size_is_what_the_interpreter_gives_a_pool():
    assert default_pool_size() == _formula_of_this_python()


@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset (util-linux)")
def test_default_pool_size_under_taskset_matches_the_interpreter():
    # One CPU allowed: Python 3.13 counts it (5 threads); 3.11 and 3.12 still count every CPU.
    code = ("import os, sys; from helpers.timing import default_pool_size; "
            "from concurrent.futures import ThreadPoolExecutor; "
            "cpus = os.process_cpu_count() if sys.version_info >= (3, 13) else os.cpu_count(); "
            "print(default_pool_size(), ThreadPoolExecutor()._max_workers, min(32, cpus + 4))")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code],
                         capture_output=True, text=True, check=True).stdout.split()
    size, real, formula = map(int, out)
    assert size == real == formula
    if sys.version_info >= (3, 13):
        assert size == 5


def test_rendezvous_opens_when_every_party_has_arrived_from_threads():
    gate = Rendezvous(3, timeout=5)
    results = []
    threads = [threading.Thread(target=lambda: results.append(gate.wait())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gate.opened and results == [True, True, True] and gate.arrived == 3


def test_rendezvous_lets_later_calls_straight_through():
    gate = Rendezvous(1)
    assert gate.wait() and gate.wait()
    assert gate.arrived == 2


def test_rendezvous_gives_up_after_its_timeout_when_too_few_arrive():
    gate = Rendezvous(2, timeout=0.05)
    assert gate.wait() is False
    assert not gate.opened and gate.arrived == 1


def test_rendezvous_stays_shut_for_calls_that_arrive_one_after_another():
    gate = Rendezvous(2, timeout=0.05)
    assert [gate.wait(), gate.wait()] == [False, False]
    assert not gate.opened and gate.arrived == 2 and gate.most_waiting == 1


def test_rendezvous_stays_shut_for_coroutines_that_arrive_one_after_another():
    gate = Rendezvous(2, timeout=0.05)

    async def main():
        return [await gate.wait_async(), await gate.wait_async()]

    assert asyncio.run(main()) == [False, False]
    assert not gate.opened and gate.most_waiting == 1


def test_rendezvous_works_for_coroutines_on_one_loop():
    gate = Rendezvous(4, timeout=5)

    async def main():
        return await asyncio.gather(*(gate.wait_async() for _ in range(4)))

    assert asyncio.run(main()) == [True] * 4


def test_rendezvous_needs_a_party():
    with pytest.raises(ValueError, match="at least one"):
        Rendezvous(0)

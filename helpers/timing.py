"""Measure wall time, record when each tool call starts and ends, and size the thread pools.

Everything here uses `time.perf_counter`, the monotonic high-resolution clock; never `time.time`.
`default_pool_size` says how many threads Python gives a pool when nobody chose, and `Rendezvous`
holds calls until enough of them run at once, so a test proves overlap by events, not by the clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field


class Stopwatch:
    """Time a block of code with `time.perf_counter`.

    Example:
        ```python
        with Stopwatch() as sw:
            await asyncio.gather(a(), b())
        print(sw)          # "0.10 s"
        sw.seconds         # 0.1003...
        ```

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """

    def __init__(self) -> None:
        self.start: float | None = None
        self.end: float | None = None

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.end = None
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Elapsed seconds: up to now while running, final once the block has exited."""
        if self.start is None:
            raise RuntimeError("Stopwatch was never started: use it as `with Stopwatch() as sw:`.")
        end = self.end if self.end is not None else time.perf_counter()
        return end - self.start

    def __str__(self) -> str:
        return format_seconds(self.seconds)

    def __repr__(self) -> str:
        return f"Stopwatch({self})"


def format_seconds(seconds: float) -> str:
    """Format a duration the one way the course prints them, e.g. `0.20 s`.

    tests/nbval_sanitize.cfg masks exactly this shape, so a notebook may print raw timings and
    still compare equal on every machine.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    return f"{seconds:.2f} s"


@dataclass(frozen=True)
class Call:
    """One recorded call: what ran, when (seconds since the recorder's origin) and on what."""

    label: str
    start: float
    end: float
    worker: str

    @property
    def seconds(self) -> float:
        return self.end - self.start


def current_worker() -> str:
    """Name the thread, and the asyncio task if there is one, that the caller runs on."""
    thread = threading.current_thread().name
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop in this thread
        task = None
    return f"{thread} / {task.get_name()}" if task is not None else thread


@dataclass
class CallRecorder:
    """Record the start and end of each call, safely from many threads and tasks at once.

    Times are seconds since the recorder was created (or last `reset`). Wrap the body of a
    tool in `recorder.span(label)`; read the results from `recorder.calls` *after* the
    concurrent work has finished (never print from inside concurrently running tools: the
    order of such prints is not deterministic).

    Example:
        ```python
        rec = CallRecorder()

        async def slow(label):
            with rec.span(label):
                await asyncio.sleep(0.1)

        await asyncio.gather(slow("A"), slow("B"))
        rec.overlap()   # True: A and B ran at the same time
        ```

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """

    origin: float = field(default_factory=time.perf_counter)
    _calls: list[Call] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_calls(cls, calls: list[Call]) -> CallRecorder:
        """A recorder holding these calls, e.g. a copy of `recorder.calls` taken before a reset.

        Example:
            ```python
            before = recorder.calls
            recorder.reset()
            CallRecorder.from_calls(before).max_in_flight()
            ```
        """
        recorder = cls()
        recorder._calls.extend(calls)
        return recorder

    def reset(self) -> None:
        """Forget every call and restart the clock."""
        with self._lock:
            self._calls.clear()
            self.origin = time.perf_counter()

    @contextmanager
    def span(self, label: str) -> Iterator[None]:
        """Record the enclosed block as one call named `label` (recorded even if it raises)."""
        worker = current_worker()
        start = time.perf_counter() - self.origin
        try:
            yield
        finally:
            end = time.perf_counter() - self.origin
            with self._lock:
                self._calls.append(Call(label, start, end, worker))

    @property
    def calls(self) -> list[Call]:
        """The recorded calls, sorted by start time."""
        with self._lock:
            return sorted(self._calls, key=lambda c: (c.start, c.label))

    @property
    def labels_by_end(self) -> list[str]:
        """Labels in the order the calls *finished* (completion order)."""
        return [c.label for c in sorted(self.calls, key=lambda c: c.end)]

    @property
    def wall(self) -> float:
        """Seconds from the first start to the last end."""
        calls = self.calls
        if not calls:
            raise ValueError("No calls recorded yet: wrap the tool body in `with recorder.span(label):`.")
        return max(c.end for c in calls) - min(c.start for c in calls)

    @property
    def busy(self) -> float:
        """The sum of every call's own duration: the wall time if they had run one by one."""
        return sum(c.seconds for c in self.calls)

    def max_in_flight(self) -> int:
        """The largest number of calls that were running at the same moment."""
        events = sorted(
            [(c.start, 1) for c in self.calls] + [(c.end, -1) for c in self.calls],
            key=lambda e: (e[0], e[1]),  # at a tie an end is counted before a start
        )
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        return peak

    def overlap(self) -> bool:
        """True when at least two calls were running at the same time."""
        return self.max_in_flight() > 1

    def workers(self) -> list[str]:
        """The distinct threads / tasks the calls ran on, in order of first use."""
        return list(dict.fromkeys(c.worker for c in self.calls))


def default_pool_size() -> int:
    """How many threads this interpreter gives a `ThreadPoolExecutor()` built without `max_workers`.

    ToolNode's sync path (`get_executor_for_config` with no `max_concurrency`), a graph's own
    executor and the event loop's default executor (sync tools under `ainvoke`) all get this size.
    The formula differs by version: Python 3.11 and 3.12 use `min(32, os.cpu_count() + 4)`, Python
    3.13 `min(32, os.process_cpu_count() + 4)`, which counts only the CPUs this process may use
    (`taskset`, a CPU-limited container). So the size is read from a pool the interpreter builds,
    never computed from a formula. Building one starts no thread.

    Example:
        ```python
        pool = default_pool_size()   # 6 on a 2-core machine; 5 under `taskset -c 0` on 3.13
        ```

    Taught in `notebooks/03_builtin_toolnode.ipynb`.
    """
    executor = ThreadPoolExecutor()
    try:
        return executor._max_workers  # the size the interpreter chose; no public accessor exists
    finally:
        executor.shutdown(wait=False)


class Rendezvous:
    """Hold each call until `parties` calls are waiting here together, then let every call through.

    A test that claims "`k` calls run at once" can make the calls wait here: if the runner really
    runs `k` at once, the `k`-th of them to arrive opens the gate and nothing depends on the clock;
    if it runs fewer, nobody opens it and each call gives up after `timeout` seconds (`opened`
    stays False), so the test fails with a count instead of hanging. A call that gave up no longer
    counts, so calls that arrive one after another never open it. Once open, it stays open. Works
    from threads (`wait`) and from coroutines on an event loop (`await gate.wait_async()`), even
    mixed.

    Example:
        ```python
        gate = Rendezvous(pool)
        tools = make_timed_tools(pool + 1, 0.1, kind="sync", recorder=rec, gate=gate)
        ToolNode(tools).invoke([tool_calls_message(tools)], runtime=Runtime())
        gate.opened, rec.max_in_flight() == pool   # True, True: however busy the machine is
        ```

    Taught in `notebooks/09_prebuilt_agents.ipynb`.
    """

    def __init__(self, parties: int, *, timeout: float = 5.0) -> None:
        if parties < 1:
            raise ValueError(f"parties={parties}: a rendezvous needs at least one call to wait for.")
        self.parties = parties
        self.timeout = timeout
        self.arrived = 0
        """Every call that ever arrived, including those that gave up."""
        self.most_waiting = 0
        """The most calls that were waiting here at one moment."""
        self._waiting = 0
        self._open = threading.Event()
        self._lock = threading.Lock()

    @property
    def opened(self) -> bool:
        """True once `parties` calls were waiting here at the same moment."""
        return self._open.is_set()

    def _arrive(self) -> None:
        with self._lock:
            self.arrived += 1
            self._waiting += 1
            self.most_waiting = max(self.most_waiting, self._waiting)
            if self._waiting >= self.parties:
                self._open.set()

    def _leave(self) -> bool:
        with self._lock:
            if not self._open.is_set():
                self._waiting -= 1  # gave up: it no longer counts towards opening the gate
            return self._open.is_set()

    def wait(self) -> bool:
        """Arrive and block this thread until the gate opens (or `timeout`); True if it opened."""
        self._arrive()
        self._open.wait(self.timeout)
        return self._leave()

    async def wait_async(self) -> bool:
        """Arrive and wait without blocking the event loop; True if the gate opened in time."""
        self._arrive()
        deadline = time.perf_counter() + self.timeout
        while not self._open.is_set() and time.perf_counter() < deadline:
            await asyncio.sleep(0.002)
        return self._leave()

"""Lab 19 — Capstone: fix the agent (after the last teaching lesson, `notebooks/18_observing_a_run.ipynb`).

One small support agent shipped with six faults, each from a lesson; each exercise fixes one, and
each check runs the fixed piece on a scenario it draws:

q1: `make_lookup_tool(fetch)`: the order lookups of one turn overlap under `ainvoke` (lessons 01, 03).
q2: `approve_refunds(request, handler)`: the approval wrapper pauses the run for every call of a tool
    marked `requires_approval`, and still turns a tool's own error into an error answer (lesson 08).
q3: `SupportState` and `add_note`: every note written by calls that run at once survives (lesson 11).
q4: `repair(graph, config)`: a crashed thread repaired so the provider accepts it again (lesson 13).
q5: `build_limited_agent(model, tools, middleware, checkpointer)`: a long task completes, a second question
    gets its own budget, a runaway model still stops with an answer (lessons 12, 17).
q6: `build_offering_agent(model, tools, tracker, audit)`: the model is offered exactly the tools that run, the
    tracker only for a question about an order (lesson 17).

How the checks hold. Each checker draws ONE scenario from `helpers.labs.rng` and runs small
module-level case functions over what the run recorded; what is random is names, ids, texts,
delays and order — never whether a hard case is there: every draw has a batch whose calls must
overlap, a second turn (q1); two tools that need approval (one named unlike any in the lab's text), a
rejection that is not "no", a tool that fails after approval, lookups beside them (q2); a repeated
note text among the parallel notes, a later turn and a second question on the thread (q3); a
`create_agent` thread whose finished answer is a pending write, a thread where the user already
asked again, a healthy thread (q4); a task that takes exactly the allowed model calls, hook nodes,
a second question, a runaway (q5); a question about an order and one not, a tracker whose name is
drawn (q6). The course's tools, models and reviewer record what happens as it happens (each fetch's
start and end, the event loop's time inside the learner's tool in each call, each question and answer
with the invocation it came in, each offer and each run).
What the learner's code returns is compared only after `plain(...)` rebuilt it from builtins. Time
limits grow with the work drawn (`scaled_limit`). Nothing public computes an expected answer: the
notebook gets `OrderDesk` (the blocking client of exercise 1's demo), `serve` (the web app's
`ainvoke`), `crashed_thread` (exercise 4's symptom), `ServiceError` and `MAX_MODEL_CALLS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import sysconfig
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import after_model, before_model, wrap_tool_call
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from helpers.graphs import tool_loop
from helpers.history import AnswerSavedSaver
from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    StillAStub,
    describe_exception,
    distinct,
    fail,
    is_stub,
    plain,
    plain_problem,
    rng,
    run_learner,
    run_limited,
    scaled_limit,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel, tool_results_summary

GATHER = "01_sequential_vs_gather"
BUILTIN = "03_builtin_toolnode"
INTERCEPTORS = "08_interceptors"
STEPS = "11_the_step_model"
STREAMING = "12_streaming_and_stopping"
RECOVERY = "13_failure_and_recovery"
AROUND = "17_the_agent_around_tools"

OVERLAP = "2. `asyncio.gather`: overlap the waits"
BLOCKING = "The blocking `async def` trap"
APPROVAL = "3. Human approval with `interrupt()`"
NEVER_CATCH = "3.3 Never catch the interrupt"
BARRIER = "1. One super-step: plan, run, barrier"
REPAIR = "3. A thread left with unanswered calls, and the provider's 400"
CRASH = "1. A tool raises mid-batch: what the thread holds"
STEP_LIMIT = "3. The step limit: what each agent does"
HOOK_STEPS = "9. Deep dive: the limit `create_agent` binds, and the steps middleware takes"
THREE_LIMITS = "3. Three limits on one loop"
PER_THREAD = "6. Deep dive: limits per run and per thread"
OFFERED = "4. The tools offered per call, and the tools that run"

MAX_MODEL_CALLS = 12
"""q5: model calls one question may take; the longest task the agent is given takes exactly this."""
ARRIVAL = 1.5
"""q1: seconds a lookup of the batch waits for its siblings to be in flight (a correct tool's are
there within milliseconds; a blocked loop never lets them in). Paid once per check, by a wrong tool."""
HELD = 0.2
"""q1: the share of a fetch's wait (the shortest drawn) the event loop may spend inside the learner's
tool in one call. A correct tool holds it for well under a thousandth of that; a tool held past it in
every call but one holds the loop (one stall of a busy machine lands in one call, not in five)."""
RUNAWAY_CAP = 40
"""q5: model calls after which the check's never-ending model raises (so an agent with no limit of its
own ends in a verdict, not in thousands of turns)."""
MAX_PAUSES = 8
"""q2: resumes the check's reviewer sends before it calls a run endless."""
PHRASES = (
    "called back",
    "asked for an invoice",
    "prefers e-mail",
    "address changed",
    "promised a refund",
    "waiting for the courier",
    "sent photos",
    "asked about the warranty",
)
REFUND_TOOLS = ("refund_order", "issue_refund", "refund_payment")
CANCEL_TOOLS = ("cancel_order", "cancel_subscription", "void_invoice")
REJECTIONS = ("not now", "no, wrong amount", "reject", "deny: ask the manager first")
LOOKUP_STEMS = ("lookup_order", "order_status", "find_order", "get_order")
TRACK_STEMS = ("where_is_parcel", "courier_status", "shipment_eta", "parcel_eta")
OTHER_STEMS = ("refund_status", "store_hours", "stock_level", "shipping_costs")
BARE_SUCCESS = frozenset(
    "done ok okay success successful succeeded complete completed finished sent notified charged "
    "delivered paid processed all good fine yes ✅ ✔ ✔️ 👍".split(" ")
) | {"all good", "sent successfully", "done successfully", "completed successfully"}
"""q4: texts that are nothing but a claim of success (compared whole, case and end punctuation aside).
An error answer's free text is not judged beyond these and an empty text: a check cannot read every
sentence, so the lab says what to write (labs/README.md)."""
ABOUT_ORDERS = ("Where is my order {ref}?", "My order {ref} has not arrived.", "Has order {ref} shipped yet?")
NOT_ABOUT_ORDERS = ("Do you ship to Norway?", "What are your opening hours?", "Is the blue kettle in stock?")


# == what the notebook uses ===========================================================================
class OrderDesk:
    """The order service's blocking client: `desk(order_id)` waits `delay` seconds (a network call it
    cannot await) and returns the order's status line. `max_in_flight` is how many calls were inside
    it at once, at most; `calls` the order ids it was asked for, in order."""

    def __init__(self, delay: float = 0.2) -> None:
        self.delay = delay
        self._cond = threading.Condition()
        self._inside = 0
        self.max_in_flight = 0
        self.calls: list[str] = []

    def __call__(self, order_id: str) -> str:
        with self._cond:
            self._inside += 1
            self.max_in_flight = max(self.max_in_flight, self._inside)
            self.calls.append(order_id)
        try:
            time.sleep(self.delay)
        finally:
            with self._cond:
                self._inside -= 1
        return f"order {order_id}: shipped"


def serve(agent: Any, question: str) -> dict:
    """Ask `agent` one question the way the support web app does: `await agent.ainvoke(...)` on an
    event loop (its own, in a worker thread, so a notebook cell can call it). Returns the final state."""
    return run_limited(lambda: agent.ainvoke({"messages": [HumanMessage(question)]}), limit=60, name="serve")


class ServiceError(RuntimeError):
    """A payment or order service that failed."""


def _id(draw: Any) -> str:
    return f"call_{draw.getrandbits(40):010x}"


def _ref(draw: Any) -> str:
    return f"A-{draw.randint(1000, 9999)}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content if b)
    return str(content)


def _is_function(key: str, name: str, value: Any, shape: str, where: str) -> None:
    if not callable(value) or isinstance(value, type):
        raise fail(
            f"`{name}` must be a function",
            key=key,
            expected=shape,
            observed=shorten(f"a {type(value).__name__}", 120),
            where=where,
        )


def _play(key: str, play: Any, cases_list: tuple, summary: str, gate: int = 0) -> str:
    """Run the scenario (`play()` returns what it recorded), then every case over the record. A run
    that the learner's code broke (an exception, a hang) is one failed case; the rest are not tried.
    When one of the first `gate` cases fails, the later ones are not judged (they would repeat it)."""
    cases = Cases(key)
    try:
        with _quiet_library():
            run = play()
    except StillAStub:
        raise
    except CheckFailed as error:
        cases.failure("the run", error)
        for name, _ in cases_list:
            cases.bad(name, expected="", observed="not tried: the run above did not finish")
        return cases.result(summary)
    blocked = ""
    for index, (name, case) in enumerate(cases_list):
        if blocked:
            cases.bad(name, expected="", observed=f"not judged: {blocked}")
            continue
        with cases.case(name):
            case(run)
        if index < gate and not cases.items[-1].passed:
            blocked = f"“{name}” failed first"
    return cases.result(summary)


_OWN = "your code raised"
"""How `run_learner` begins the description of an exception raised in the learner's own code."""


def _own(text: str) -> bool:
    """Whether a description of an exception (a `LearnerRaised`'s text) names the learner's own code."""
    return text.startswith(_OWN)


class _ToolErrors(BaseCallbackHandler):
    """The check's callback handler: every exception a tool raised, as it was raised. Under `ainvoke`
    langgraph may end the run with another in its place (a tool's `GeneratorExit` ends it as "coroutine
    ignored GeneratorExit"), so the verdict names the learner's own exception from here (or from the
    task that ran the tool's coroutine, which keeps it)."""

    run_inline = True

    def __init__(self) -> None:
        self.raised: list[BaseException] = []

    def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        self.raised.append(error)


def _named(error: LearnerRaised, raised: list[BaseException]) -> LearnerRaised:
    """`error`, or, when a library reported it but the learner's own exception started it, that one."""
    if _own(str(error)):
        return error
    for exc in raised:
        if exc is error.original:
            continue
        text = describe_exception(exc)
        if _own(text):
            return StillAStub(text, exc) if is_stub(exc) else LearnerRaised(text, exc)
    return error


class _LateCallbackNoise(logging.Filter):
    """Drops what `concurrent.futures` logs when langgraph, after a run that raised, still tries to save a
    finished task's writes on its executor, already shut down ("exception calling callback … cannot
    schedule new futures after shutdown"). It comes at random from langgraph's own threads while the
    check captures what the learner's code prints: it is not the learner's output."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, RuntimeError) and "cannot schedule new futures after" in str(error))


@contextlib.contextmanager
def _quiet_library() -> Any:
    """While a check runs the learner's code: langgraph's late-callback noise (`_LateCallbackNoise`) is
    not printed, so it is never shown as the learner's output."""
    logger, noise = logging.getLogger("concurrent.futures"), _LateCallbackNoise()
    logger.addFilter(noise)
    try:
        yield
    finally:
        logger.removeFilter(noise)


_LIBRARY_DIRS = tuple(
    str(Path(p).resolve())
    for p in sorted({sysconfig.get_paths().get(k) or "" for k in ("stdlib", "platstdlib", "purelib")})
    if p
)
_COURSE_DIR = str(Path(__file__).resolve().parent.parent)


def _learner_file(filename: str) -> bool:
    """Whether code from `filename` is the learner's (a cell, a script, a test playing a learner): not
    Python's, a library's or the course's own."""
    if filename.startswith(("<frozen", "<string>")) or "site-packages" in filename:
        return False
    if filename.startswith("<"):
        return True  # a cell (`<ipython-input-…>`), or code compiled from a notebook
    return not filename.startswith((*_LIBRARY_DIRS, _COURSE_DIR))


def _waited() -> float:
    """Seconds this thread has waited, ready to run, for a CPU (Linux's schedstat); 0.0 where unknown.
    A busy machine makes a thread wait so; a blocking call does not (it sleeps)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class _LoopWatch:
    """The time the event loop spends inside the learner's own code, per asyncio task (ToolNode runs each
    tool call as a task), measured as it happens: installed with `sys.setprofile` on the loop's thread,
    it times each stretch from the moment a learner frame starts or resumes there until it returns or
    awaits. Not counted: starting a worker thread (the hand-off itself), and the time the thread waited
    for a CPU of a busy machine (`_waited`). The longest call the learner's code made in such a stretch
    is kept per task, with its line, to name it."""

    def __init__(self) -> None:
        self.kinds: dict[Any, bool] = {}
        self.start_code = threading.Thread.start.__code__
        self.held: dict[int, float] = {}  # id(task) → seconds the loop spent in the learner's code
        self.depth = 0
        self.since = 0.0
        self.waited = 0.0
        self.task = 0
        self.skip: Any = None  # the frame of a `Thread.start` under way, and when it began
        self.skipped = 0.0
        self.inner: Any = None  # the call the learner's frame is in: (frame or function, waits and thread
        # starts so far, began, name, caller)
        self.longest: dict[int, tuple[float, str, str]] = {}  # id(task) → its longest call: seconds,
        # what was called, where

    def mine(self, code: Any) -> bool:
        kind = self.kinds.get(code)
        if kind is None:
            kind = self.kinds[code] = _learner_file(code.co_filename)
        return kind

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if not self.depth:
            if event == "call" and self.mine(frame.f_code):
                try:
                    task = asyncio.current_task()
                except RuntimeError:  # learner code run outside the loop's tasks
                    task = None
                self.task, self.skipped, self.depth = id(task), 0.0, 1
                self.waited, self.since = _waited(), time.perf_counter()
            return
        now = time.perf_counter()
        if event == "call":
            if frame.f_code is self.start_code and self.skip is None:
                self.skip = (frame, now)
            if self.mine(frame.f_code):
                self.depth += 1
            elif self.inner is None and frame.f_back is not None and self.mine(frame.f_back.f_code):
                name = self._name(frame.f_code.co_qualname, frame.f_globals)
                self.inner = (frame, _waited() + self.skipped, time.perf_counter(), name, frame.f_back)
        elif event == "c_call":
            if self.inner is None and self.mine(frame.f_code):
                name = f"{getattr(arg, '__module__', None) or ''}.{getattr(arg, '__qualname__', '?')}"
                self.inner = (arg, _waited() + self.skipped, time.perf_counter(), name.lstrip("."), frame)
        elif event in ("c_return", "c_exception"):
            if self.inner is not None and self.inner[0] is arg and self.inner[4] is frame:
                self._inner_done(now)
        elif event == "return":
            if self.skip is not None and self.skip[0] is frame:
                self.skipped += now - self.skip[1]
                self.skip = None
            if self.inner is not None and self.inner[0] is frame:
                self._inner_done(now)
            if self.mine(frame.f_code):
                self.depth -= 1
                if not self.depth:
                    # read after `now` (as `waited` was before `since`): a wait between the two reads is
                    # taken off, never added
                    spent = max(0.0, now - self.since - self.skipped - (_waited() - self.waited))
                    self.held[self.task] = self.held.get(self.task, 0.0) + spent

    @staticmethod
    def _name(qualname: str, globals_: Any) -> str:
        module = globals_.get("__name__", "") if isinstance(globals_, dict) else ""
        return f"{module}.{qualname}" if module else qualname

    def _inner_done(self, now: float) -> None:
        _, waited, began, name, caller = self.inner
        self.inner = None
        spent = now - began - (_waited() + self.skipped - waited)  # less the waits and thread starts
        if spent > self.longest.get(self.task, (0.0,))[0]:
            code = caller.f_code
            place = "your cell" if "ipykernel" in code.co_filename else Path(code.co_filename).name
            self.longest[self.task] = (spent, name, f"line {caller.f_lineno} of {place}")

    def culprit(self, tasks: list[int]) -> tuple[str, str]:
        """What the learner's code called that held the loop longest in most of `tasks` (one stall of a busy
        machine makes another call the longest in one task, not in most), and where."""
        named = [self.longest[t][1:] for t in tasks if t in self.longest]
        return max(named, key=named.count) if named else ("", "")


# == q1: lookups that overlap ==========================================================================
@dataclass(frozen=True)
class _LookupDraw:
    batch: tuple[tuple[str, str, float], ...]  # (call id, order id, delay): one turn, all at once
    later: tuple[str, str, float]  # the second turn's single lookup
    statuses: tuple[tuple[str, str], ...]  # order id → what the service says


def _draw_lookups(draw: Any) -> _LookupDraw:
    n = 5  # more than four, so an executor of four workers never holds the whole batch
    refs = distinct(lambda: _ref(draw), n + 1)
    ids = distinct(lambda: _id(draw), n + 1)
    delays = [draw.choice((0.1, 0.15, 0.2)) for _ in refs]
    words = ("shipped", "packed", "at the depot", "out for delivery", "delayed")
    statuses = tuple((r, f"order {r}: {draw.choice(words)} ({draw.getrandbits(16):04x})") for r in refs)
    rows = list(zip(ids, refs, delays, strict=True))
    return _LookupDraw(tuple(rows[:n]), rows[n], statuses)


class _Desk:
    """The check's order service: each call records its start and end as they happen. A call of the
    batch waits (at most `ARRIVAL`, once per check) until every call of the batch is inside, so a
    correct tool's calls are all in flight at once however busy the machine is."""

    def __init__(self, d: _LookupDraw) -> None:
        self.d = d
        self.status = dict(d.statuses)
        self.delay = {ref: delay for _, ref, delay in (*d.batch, d.later)}
        self.batch = frozenset(ref for _, ref, _ in d.batch)
        self.cond = threading.Condition()
        self.inside: set[str] = set()
        self.started: set[str] = set()
        self.most = 0  # most calls of the batch in flight at once
        self.calls: list[str] = []
        self.unknown: list[str] = []
        self.patient = True
        self.on_loop = False  # a fetch called on the event loop's own thread (it blocks the loop)

    def __call__(self, order_id: Any = None, *args: Any, **kwargs: Any) -> str:
        if type(order_id) is not str or order_id not in self.status:
            with self.cond:
                self.unknown.append(
                    shorten(repr(order_id), 40) if type(order_id) is str else type(order_id).__name__
                )
            raise LookupError(f"no order {order_id!r}")
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        with self.cond:
            self.on_loop = self.on_loop or on_loop
            self.calls.append(order_id)
            self.inside.add(order_id)
            self.started.add(order_id)
            self.most = max(self.most, len(self.inside & self.batch))
            self.cond.notify_all()
            if order_id in self.batch and self.patient:
                if not self.cond.wait_for(lambda: self.started >= self.batch, timeout=ARRIVAL):
                    self.patient = False  # the calls came one after another: wait no more
        time.sleep(self.delay[order_id])
        with self.cond:
            self.inside.discard(order_id)
        return self.status[order_id]


@dataclass
class _LookupRun:
    d: _LookupDraw
    desk: _Desk
    tool: Any
    watch: _LoopWatch
    answers: dict[str, str] = field(default_factory=dict)  # call id → content
    kinds: dict[str, str] = field(default_factory=dict)  # call id → why a content is not a str


def _lookup_model(d: _LookupDraw, name: str) -> ScriptedChatModel:
    batch = [{"name": name, "args": {"order_id": ref}, "id": call_id} for call_id, ref, _ in d.batch]
    call_id, ref, _ = d.later
    return ScriptedChatModel(
        script=[batch, [{"name": name, "args": {"order_id": ref}, "id": call_id}], tool_results_summary]
    )


def _q1_play(make_lookup_tool: Any, d: _LookupDraw) -> _LookupRun:
    desk = _Desk(d)

    def fetch(order_id: Any = None, *args: Any, **kwargs: Any) -> str:
        """Fetch an order's status line (it blocks, like a sync HTTP client)."""
        return desk(order_id, *args, **kwargs)

    made = run_learner(make_lookup_tool, fetch, name="make_lookup_tool")  # a plain function, not the desk
    if not isinstance(made, BaseTool):
        raise fail(
            "`make_lookup_tool` did not return a tool",
            expected="a tool (`@tool`, `StructuredTool.from_function`) taking `order_id: str`",
            observed=f"a {type(made).__name__}",
            where=section(BUILTIN, BLOCKING),
        )
    agent = create_agent(_lookup_model(d, made.name), [made])
    work = sum(delay for _, _, delay in (*d.batch, d.later)) + ARRIVAL
    watch, errors = _LoopWatch(), _ToolErrors()

    tasks: list[asyncio.Task] = []
    switched_off: list[bool] = []

    def task_factory(loop: Any, coro: Any, **kwargs: Any) -> asyncio.Task:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        tasks.append(task)  # a BaseException out of a tool's task stops the loop; the task still holds it
        return task

    async def ainvoke(inputs: dict) -> Any:  # the agent's ainvoke, the loop's time in learner code timed
        asyncio.get_running_loop().set_task_factory(task_factory)
        sys.setprofile(watch)
        try:
            return await agent.ainvoke(inputs, {"callbacks": [errors]})
        finally:
            switched_off.append(sys.getprofile() is not watch)
            sys.setprofile(None)

    inputs = {"messages": [HumanMessage("Where are my orders?")]}
    try:
        result = run_learner(ainvoke, inputs, limit=scaled_limit(work), name="the agent's ainvoke")
    except LearnerRaised as error:
        ended = [t.exception() for t in tasks if t.done() and not t.cancelled()]
        raise _named(error, [*errors.raised, *(e for e in ended if e is not None)]) from None
    if any(switched_off):
        raise fail(
            "the check's timer of the event loop was switched off",
            expected="your tools leave `sys.setprofile` alone",
            observed="the profile function the check installed on the loop's thread was replaced",
            why="the check times the loop's time inside your tools with `sys.setprofile`; code that "
            "replaces it hides a blocked loop",
            where=section(BUILTIN, BLOCKING),
        )
    run = _LookupRun(d, desk, made, watch)
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            problem = plain_problem(message.content, str)
            run.answers[message.tool_call_id] = _text(message.content)
            if problem:
                run.kinds[message.tool_call_id] = problem
    return run


def case_lookups_answered(run: _LookupRun) -> None:
    for call_id, ref, _ in (*run.d.batch, run.d.later):
        got = run.answers.get(call_id)
        want = run.desk.status[ref]
        if got != want or call_id in run.kinds:
            raise fail(
                "a lookup's answer is not what the service returned",
                expected=f"{want!r} for order {ref}: return what `fetch(order_id)` returns",
                observed=shorten(repr(got), 160)
                + (f" ({run.kinds[call_id]})" if call_id in run.kinds else ""),
                why="the model reads the ToolMessage: a tool that returns before the fetch finished, "
                "or returns something else, tells it nothing about the order"
                + (f"; the service was asked for {run.desk.unknown[:2]}" if run.desk.unknown else ""),
                where=section(BUILTIN, BLOCKING),
            )


def case_each_order_fetched_once(run: _LookupRun) -> None:
    twice = sorted({ref for ref in run.desk.calls if run.desk.calls.count(ref) > 1})
    if twice:
        raise fail(
            "an order was fetched more than once",
            expected="one fetch per lookup call",
            observed=f"fetched {run.desk.calls.count(twice[0])} times: {twice[0]}",
            why="every fetch is a request to the order service: call it once and return its answer",
            where=section(BUILTIN, BLOCKING),
        )


def case_batch_overlaps(run: _LookupRun) -> None:
    n = len(run.d.batch)
    if run.desk.most >= n:
        _loop_never_held(run)
        return
    coroutine = run.desk.on_loop
    why = (
        "your tool is an `async def` that calls the blocking `fetch` directly: it holds the event loop "
        "while it waits, so no other call can start. Let the waiting happen off the loop: a plain `def` "
        "tool (LangChain runs it in a thread), or `await asyncio.to_thread(fetch, order_id)`"
        if coroutine
        else "the calls reached the service one after another: something in your tool lets one call in "
        "at a time (a lock, a one-worker executor, a wait on the previous call)"
    )
    raise fail(
        f"the {n} lookups of one turn did not overlap",
        expected=f"all {n} lookups in flight at once (overlap {n}/{n}), as under `asyncio.gather`",
        observed=f"at most {run.desk.most} in flight at once (overlap {run.desk.most}/{n})",
        why=why,
        where=section(BUILTIN, BLOCKING) if coroutine else section(GATHER, OVERLAP),
    )


def _span(low: float, high: float) -> str:
    return f"{low:.2f} s" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f} s"


def _loop_never_held(run: _LookupRun) -> None:
    """The batch overlapped, but the check's service waits for it to: it also overlaps only if the loop
    was free. Refused when the loop spent `HELD` of a fetch's wait inside the tool in every call but one."""
    delays = [delay for _, _, delay in (*run.d.batch, run.d.later)]
    calls, bar = len(delays), HELD * min(delays)
    tasks = [task for task, spent in run.watch.held.items() if spent >= bar]
    if len(tasks) < calls - 1:
        return
    slow = sorted(run.watch.held[task] for task in tasks)
    name, place = run.watch.culprit(tasks)
    raise fail(
        f"your tool held the event loop in {len(slow)} of {calls} calls",
        expected=f"the loop free while a lookup waits: less than {bar:.2f} s of each call on it "
        f"({HELD:.0%} of a fetch's wait), so all {len(run.d.batch)} calls of a turn start at once",
        observed=f"the loop was inside your tool for {_span(slow[0], slow[-1])} in each of them"
        + (f"; the longest call in it: `{name}` ({place})" if name else ""),
        why="an `async def` tool runs on the event loop: a blocking call in it, before or after the fetch "
        "is handed off, holds the loop, so the turn's calls start one after another and the whole app "
        "waits (they were in flight at once here only because the check's service waited for them). Hand "
        "every blocking call to a thread (`await asyncio.to_thread(...)`), or make the tool a plain `def`",
        where=section(BUILTIN, BLOCKING),
    )


Q1_CASES = (
    ("each lookup answered with what the service returned", case_lookups_answered),
    ("each order fetched once", case_each_order_fetched_once),
    ("the lookups of one turn in flight at once under ainvoke", case_batch_overlaps),
)


def check_lookups(make_lookup_tool: Any, *, seed: Any = None) -> str:
    _is_function(
        "q1",
        "make_lookup_tool",
        make_lookup_tool,
        "def make_lookup_tool(fetch): ... return a tool",
        section(BUILTIN, BLOCKING),
    )
    d = _draw_lookups(rng(seed))
    return _play(
        "q1",
        lambda: _q1_play(make_lookup_tool, d),
        Q1_CASES,
        "every lookup of one turn in flight at once under ainvoke, each answered with the service's own "
        "line, each order fetched once.",
    )


q1 = Exercise(
    "19",
    "q1",
    ("make_lookup_tool",),
    check_lookups,
    (
        "`fetch` blocks (it sleeps, like a sync HTTP client). An `async def` tool that calls it holds the "
        "event loop: lesson 03, “The blocking `async def` trap”.",
        "Either a plain `def lookup_order(order_id: str) -> str: return fetch(order_id)` (LangChain runs "
        "sync tools in threads under ainvoke), or keep `async def` and `return await "
        "asyncio.to_thread(fetch, order_id)`.",
    ),
)


# == q2: an approval that pauses ========================================================================
@dataclass(frozen=True)
class _Call:
    id: str
    tool: str
    ref: str
    role: str  # approved | rejected | failing | lookup
    answer: str  # what the reviewer says ("" for a lookup)


@dataclass(frozen=True)
class _ApprovalDraw:
    refund: str
    cancel: str
    lookup: str
    calls: tuple[_Call, ...]


def _draw_approval(draw: Any) -> _ApprovalDraw:
    refund, cancel, lookup = draw.choice(REFUND_TOOLS), draw.choice(CANCEL_TOOLS), draw.choice(LOOKUP_STEMS)
    refs = iter(distinct(lambda: _ref(draw), 5))
    ids = iter(distinct(lambda: _id(draw), 5))
    calls = [
        _Call(next(ids), refund, next(refs), "approved", "yes"),
        _Call(next(ids), draw.choice((refund, cancel)), next(refs), "rejected", draw.choice(REJECTIONS)),
        _Call(next(ids), cancel, next(refs), "failing", "yes"),
        _Call(next(ids), lookup, next(refs), "lookup", ""),
        _Call(next(ids), lookup, next(refs), "lookup", ""),
    ]
    draw.shuffle(calls)
    return _ApprovalDraw(refund, cancel, lookup, tuple(calls))


class _Ledger:
    """What happened, in order: each tool run with the invocation it ran in (0: the first, k: the
    k-th resume), each question the reviewer got, each answer sent. Thread-safe."""

    def __init__(self) -> None:
        self.phase = 0
        self.runs: list[tuple[int, str]] = []  # (phase, call id)
        self.questions: list[tuple[int, str]] = []
        self.unreadable: list[str] = []
        self.lock = threading.Lock()

    def ran(self, call_id: str) -> None:
        with self.lock:
            self.runs.append((self.phase, call_id))

    def runs_of(self, call_id: str) -> list[int]:
        return [phase for phase, c in self.runs if c == call_id]


def _approval_tools(d: _ApprovalDraw, ledger: _Ledger) -> list[BaseTool]:
    failing = {c.id for c in d.calls if c.role == "failing"}

    def act(verb: str):
        def run(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            ledger.ran(tool_call_id)
            if tool_call_id in failing:
                raise ServiceError(f"the {verb} service returned 503 for {order_id}")
            return f"{verb} done for {order_id}"

        return run

    flagged = {"requires_approval": True}
    return [
        StructuredTool.from_function(
            act("refund"), name=d.refund, description="Refund an order.", metadata=dict(flagged)
        ),
        StructuredTool.from_function(
            act("cancel"), name=d.cancel, description="Cancel an order.", metadata=dict(flagged)
        ),
        StructuredTool.from_function(act("lookup"), name=d.lookup, description="Look an order up."),
    ]


@dataclass
class _ApprovalRun:
    d: _ApprovalDraw
    ledger: _Ledger
    paused_first: bool = False
    pauses: int = 0
    answers: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id → (status, content)
    finished: bool = False
    crash: str = ""  # what ended the run, when the learner's code made it raise
    crashed_by: str = ""  # whose exception: "learner" (the wrapper's own), "tool" (a ServiceError), "library"


def _reviewer(d: _ApprovalDraw, ledger: _Ledger, interrupts: Any) -> dict:
    """The reviewer's answer to every open question, keyed by interrupt id; each question logged."""
    by_id = {c.id: c for c in d.calls}
    answer = {}
    for item in interrupts if isinstance(interrupts, list | tuple) else ():
        value = getattr(item, "value", None)
        call = (
            by_id.get(value.get("call"))
            if isinstance(value, dict) and type(value.get("call")) is str
            else None
        )
        if call is None:
            ledger.unreadable.append(shorten(repr(value), 100))
            continue
        ledger.questions.append((ledger.phase, call.id))
        answer[item.id] = call.answer or "yes"
    return answer


def _q2_play(approve_refunds: Any, d: _ApprovalDraw) -> _ApprovalRun:
    ledger = _Ledger()
    model = ScriptedChatModel(
        script=[
            [{"name": c.tool, "args": {"order_id": c.ref}, "id": c.id} for c in d.calls],
            tool_results_summary,
        ]
    )
    try:
        middleware = wrap_tool_call(approve_refunds)
    except Exception as error:  # noqa: BLE001 - a function the decorator refuses
        raise fail(
            "`approve_refunds` cannot be a tool-call wrapper",
            expected="def approve_refunds(request, handler): ... (a sync function)",
            observed=f"{type(error).__name__}: {shorten(error, 120)}",
            where=section(INTERCEPTORS, APPROVAL),
        ) from None
    agent = create_agent(
        model, _approval_tools(d, ledger), middleware=[middleware], checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": f"lab19-{uuid.uuid4().hex[:8]}"}}
    run = _ApprovalRun(d, ledger)
    value: Any = {"messages": [HumanMessage("Sort out these orders, please.")]}
    for _ in range(MAX_PAUSES):
        try:
            result = run_learner(agent.invoke, value, thread, name="the agent's invoke")
        except StillAStub:
            raise
        except LearnerRaised as error:
            run.crash = shorten(str(error), 200)
            run.crashed_by = (
                "learner"
                if _own(str(error))
                else "tool"
                if isinstance(error.original, ServiceError)
                else "library"
            )
            return run
        interrupts = result.get("__interrupt__") if isinstance(result, dict) else None
        if not interrupts:
            messages = result.get("messages", []) if isinstance(result, dict) else []
            run.answers = {
                m.tool_call_id: (m.status, _text(m.content)) for m in messages if isinstance(m, ToolMessage)
            }
            last = messages[-1] if messages else None
            run.finished = isinstance(last, AIMessage) and not last.tool_calls
            return run
        if run.pauses == 0:
            run.paused_first = True
        run.pauses += 1
        answer = _reviewer(d, ledger, interrupts)
        if ledger.unreadable:
            raise fail(
                "the reviewer could not tell which call a question is about",
                expected="`interrupt({...})` with the call's id under 'call', as the shipped wrapper asks",
                observed=f"a question {ledger.unreadable[0]}",
                why="the reviewer answers each question by the call it names: keep the question's shape",
                where=section(INTERCEPTORS, APPROVAL),
            )
        ledger.phase += 1
        value = Command(resume=answer)
    raise fail(
        "the run kept pausing",
        expected="one question per call that needs approval, then the run goes on",
        observed=f"still asking after {MAX_PAUSES} answers",
        where=section(INTERCEPTORS, APPROVAL),
    )


def _flagged(run: _ApprovalRun) -> list[_Call]:
    return [c for c in run.d.calls if c.role != "lookup"]


def case_run_pauses(run: _ApprovalRun) -> None:
    if run.paused_first:
        return
    swallowed = [t for _, t in run.answers.values() if "GraphInterrupt" in t or "Interrupt(" in t]
    if run.crash:
        raise fail(
            "the run crashed before any question was asked",
            expected="the first invoke returns with `__interrupt__`, before any refund or cancellation runs",
            observed=run.crash,
            why="a tool ran before its question and its service failed: ask first, and keep turning a "
            "tool's own error into an error answer"
            if run.crashed_by == "tool"
            else _crash_why(run),
            where=section(INTERCEPTORS, APPROVAL),
        )
    if not swallowed:
        raise fail(
            "the run never paused for approval",
            expected="a question for each call of a tool marked `requires_approval`, before it runs",
            observed="it ran to the end; no question was asked",
            why="the wrapper did not recognise the tools that need approval: decide by the tool's metadata "
            "(`request.tool.metadata`), as the shipped wrapper does, not by a name",
            where=section(INTERCEPTORS, APPROVAL),
        )
    raise fail(
        "the run never paused for approval",
        expected="the first invoke returns with `__interrupt__`, before any refund or cancellation runs",
        observed=f"it ran to the end; a call was answered {shorten(swallowed[0], 110)!r}",
        why="`interrupt()` pauses by raising `GraphInterrupt`; an `except Exception` around it catches the "
        "pause as if it were the tool's error. Let it through (`except GraphInterrupt: raise` first), or "
        "ask outside the `try`",
        where=section(INTERCEPTORS, NEVER_CATCH),
    )


def _crash_why(run: _ApprovalRun) -> str:
    if run.crashed_by == "learner":
        return (
            "the exception came from your own code (named above), not from a tool: the wrapper asks, then "
            "returns `handler(request)`'s result or a ToolMessage with status 'error' — the pause is the "
            "only exception it lets out"
        )
    return (
        "the library failed on what your wrapper did or returned: a wrapper is a plain `def` (the agent "
        "runs with `invoke`) that returns what `handler(request)` returns, or a `ToolMessage` answering the "
        "call (`tool_call_id=request.tool_call['id']`)"
    )


def case_run_goes_on(run: _ApprovalRun) -> None:
    if not run.crash:
        return
    call = next(c for c in run.d.calls if c.role == "failing")
    if run.crashed_by == "tool":
        raise fail(
            f"the approved {call.tool}({call.ref}), whose service fails, did not become an error answer",
            expected="its ServiceError turned into a ToolMessage with status 'error', the run going on",
            observed=f"the run stopped after {run.pauses} pause(s): {run.crash}",
            why="the shipped wrapper's `try/except` is there for this: keep catching the tool's errors, "
            "only not the pause",
            where=section(INTERCEPTORS, NEVER_CATCH),
        )
    raise fail(
        f"the run crashed after {run.pauses} pause(s)",
        expected="after the reviewer's answers the run goes on to its answer: each call refused (a "
        "ToolMessage with status 'error') or run through `handler(request)`",
        observed=run.crash,
        why=_crash_why(run),
        where=section(INTERCEPTORS, APPROVAL),
    )


def case_each_flagged_call_asked_once(run: _ApprovalRun) -> None:
    asked = [c for _, c in run.ledger.questions]
    for call in run.d.calls:
        want = 0 if call.role == "lookup" else 1
        if asked.count(call.id) != want:
            raise fail(
                f"{call.tool}({call.ref}) was asked about {asked.count(call.id)} time(s)",
                expected="one question for each call of a tool marked `requires_approval` (of either tool), "
                "none for the lookups",
                observed=f"questions about: {sorted({c.tool for c in run.d.calls if c.id in asked})}",
                why="decide by the tool's metadata (`request.tool.metadata`), as the shipped wrapper does, "
                "not "
                "by a name: the agent's approval tools change",
                where=section(INTERCEPTORS, APPROVAL),
            )


def case_nothing_runs_before_its_answer(run: _ApprovalRun) -> None:
    for call in _flagged(run):
        asked = [phase for phase, c in run.ledger.questions if c == call.id]
        early = [p for p in run.ledger.runs_of(call.id) if not asked or p <= asked[0]]
        if early:
            raise fail(
                f"{call.tool}({call.ref}) ran before the reviewer answered",
                expected="the call runs only after its answer (in the resume)",
                observed=f"ran in invocation {early[0]}, asked in {asked[0] if asked else 'none'}",
                why="ask first, then call `handler(request)`: what runs before `interrupt()` has happened",
                where=section(INTERCEPTORS, APPROVAL),
            )


def case_approved_runs_once(run: _ApprovalRun) -> None:
    for call in _flagged(run):
        if call.role == "rejected":
            continue
        runs = run.ledger.runs_of(call.id)
        if len(runs) != 1:
            raise fail(
                f"the approved {call.tool}({call.ref}) ran {len(runs)} time(s)",
                expected="exactly once, after the answer 'yes'",
                observed=f"{len(runs)} run(s); its answer: {run.answers.get(call.id)}",
                where=section(INTERCEPTORS, APPROVAL),
            )


def case_rejected_never_runs(run: _ApprovalRun) -> None:
    call = next(c for c in run.d.calls if c.role == "rejected")
    answer = run.answers.get(call.id)
    if run.ledger.runs_of(call.id) or answer is None or answer[0] != "error":
        raise fail(
            f"a rejected {call.tool}({call.ref}) was not refused",
            expected=f"the reviewer said {call.answer!r}: the call never runs, its answer has status 'error'",
            observed=f"ran {len(run.ledger.runs_of(call.id))} time(s); answer {answer}",
            why="anything but 'yes' is a refusal: test `answer != 'yes'`, not `answer == 'no'`",
            where=section(INTERCEPTORS, APPROVAL),
        )


def case_failure_becomes_an_answer(run: _ApprovalRun) -> None:
    call = next(c for c in run.d.calls if c.role == "failing")
    answer = run.answers.get(call.id)
    if not run.finished or answer is None or answer[0] != "error":
        raise fail(
            f"the approved {call.tool}({call.ref}), whose service fails, did not become an error answer",
            expected="its ServiceError turned into a ToolMessage with status 'error', the run going on",
            observed=f"answer {answer}"
            if answer
            else f"no answer: the run stopped — {run.crash or 'no final answer'}",
            why="the shipped wrapper's `try/except` is there for this: keep catching the tool's errors, "
            "only not the pause",
            where=section(INTERCEPTORS, NEVER_CATCH),
        )


def case_lookups_run_at_once(run: _ApprovalRun) -> None:
    for call in run.d.calls:
        if call.role != "lookup":
            continue
        runs, answer = run.ledger.runs_of(call.id), run.answers.get(call.id)
        wanted = ("success", f"lookup done for {call.ref}")
        if runs != [0] or answer != wanted:
            raise fail(
                f"the lookup {call.tool}({call.ref}) was not run and answered as it is",
                expected="it needs no approval: it runs once, in the first invocation, and its answer is its "
                f"own result with status 'success' ({wanted[1]!r})",
                observed=f"ran in invocations {runs}; its answer: {answer}",
                why="only a tool flagged `requires_approval` is asked about; every other call goes straight "
                "to `handler(request)` and its result is returned as it is (`request.tool.metadata` may be "
                "None: read it with `(request.tool.metadata or {}).get(...)`)",
                where=section(INTERCEPTORS, APPROVAL),
            )


Q2_CASES = (
    ("the run pauses before a refund or cancellation runs", case_run_pauses),
    ("after the answers the run goes on, without an exception", case_run_goes_on),
    ("each call needing approval asked about once, lookups never", case_each_flagged_call_asked_once),
    ("no such call runs before its answer", case_nothing_runs_before_its_answer),
    ("an approved call runs once", case_approved_runs_once),
    ("a rejected call never runs, answered with an error", case_rejected_never_runs),
    ("a tool's own error becomes an error answer", case_failure_becomes_an_answer),
    ("a lookup runs once, at once, answered with its own result", case_lookups_run_at_once),
)


def check_approval(approve_refunds: Any, *, seed: Any = None) -> str:
    _is_function(
        "q2",
        "approve_refunds",
        approve_refunds,
        "def approve_refunds(request, handler): ...",
        section(INTERCEPTORS, NEVER_CATCH),
    )
    d = _draw_approval(rng(seed))
    return _play(
        "q2",
        lambda: _q2_play(approve_refunds, d),
        Q2_CASES,
        gate=2,
        summary="the run paused for both tools that need approval, each call asked about once; approved "
        "calls ran once after their answer, a rejection never ran, a failing service became an error answer.",
    )


q2 = Exercise(
    "19",
    "q2",
    ("approve_refunds",),
    check_approval,
    (
        "`interrupt()` pauses the run by raising `GraphInterrupt`, an `Exception`: lesson 08, “3.3 Never "
        "catch the interrupt”. What does the shipped `except Exception` do with it?",
        "Keep the `try/except Exception` for the tool's errors, but add `except GraphInterrupt: raise` "
        "before it (from langgraph.errors), or move the `interrupt(...)` and the refusal out of the `try`.",
    ),
)


# == q3: notes written at once ==========================================================================
@dataclass(frozen=True)
class _NotesDraw:
    lookup: str
    questions: tuple[
        tuple[tuple[tuple[str, ...], ...], str], ...
    ]  # per question: its turns of notes, final text
    ids: tuple[str, ...]


def _draw_notes(draw: Any) -> _NotesDraw:
    ref = _ref(draw)
    n = draw.choice((3, 4))
    texts = [f"{ref}: {p}" for p in draw.sample(PHRASES, n + 3)]
    pair, kept = texts[0], texts[1:n]
    draw.shuffle(kept)
    first = [*kept, kept[0]]  # one text twice, apart: two calls that say the same thing
    at = draw.randrange(len(first) + 1)
    first[at:at] = [pair, pair]  # and one text twice in a row
    questions = (
        ((tuple(first), (texts[n],)), "noted"),
        (((texts[n + 1], texts[n + 2]),), "noted again"),
    )
    ids = tuple(distinct(lambda: _id(draw), sum(len(t) for turns, _ in questions for t in turns) + 3))
    return _NotesDraw(draw.choice(LOOKUP_STEMS), questions, ids)


def _notes_model(d: _NotesDraw, note_tool: str) -> ScriptedChatModel:
    ids = iter(d.ids)
    script: list[Any] = []
    for turns, final in d.questions:
        for k, notes in enumerate(turns):
            calls = [{"name": note_tool, "args": {"text": t}, "id": next(ids)} for t in notes]
            if k == 0:
                calls.append({"name": d.lookup, "args": {"order_id": "A-1"}, "id": next(ids)})
            script.append(calls)
        script.append(final)
    return ScriptedChatModel(script=script)


@dataclass
class _NotesRun:
    d: _NotesDraw
    after: list[list[str]] = field(default_factory=list)  # the thread's notes after each question
    wanted: list[list[str]] = field(default_factory=list)


def _q3_play(state: Any, tool: Any, d: _NotesDraw) -> _NotesRun:
    if not isinstance(tool, BaseTool):
        raise fail(
            "`add_note` is not a tool",
            expected="`add_note` defined with `@tool`, taking `text: str`",
            observed=f"a {type(tool).__name__}",
            where=section(STEPS, BARRIER),
        )

    def lookup(order_id: str) -> str:
        return f"order {order_id}: shipped"

    tools = [tool, StructuredTool.from_function(lookup, name=d.lookup, description="Look an order up.")]
    try:
        agent = create_agent(
            _notes_model(d, tool.name), tools, state_schema=state, checkpointer=InMemorySaver()
        )
    except Exception as error:  # noqa: BLE001 - a state class create_agent refuses
        raise fail(
            "create_agent refused `SupportState`",
            expected="`class SupportState(AgentState): notes: Annotated[list[str], <reducer>]`",
            observed=f"{type(error).__name__}: {shorten(error, 140)}",
            where=section(STEPS, BARRIER),
        ) from None
    thread = {"configurable": {"thread_id": f"lab19-{uuid.uuid4().hex[:8]}"}}
    run, wanted = _NotesRun(d), []
    for number, (turns, _) in enumerate(d.questions, 1):
        try:
            result = run_learner(
                agent.invoke,
                {"messages": [HumanMessage(f"Question {number}")]},
                thread,
                name="the agent's invoke",
            )
        except StillAStub:
            raise
        except LearnerRaised as error:
            text = str(error)
            why = (
                "a key without a reducer takes one value per step, and the calls of one turn write in the "
                "same step: give `notes` a reducer that adds each call's notes to the list"
                if "one value per step" in text
                else "a tool that returns a `Command` must answer its own call: put a "
                "`ToolMessage(..., tool_call_id=...)` in its update's 'messages'"
                if "matching ToolMessage" in text
                else "the check runs the agent with `invoke`, as the lab's cell does: define `add_note` with "
                "a plain `def`"
                if "does not support sync invocation" in text
                else "the exception came from your own code (named above), not from the agent: the tool "
                "returns a `Command` with its own note and a ToolMessage for its call, and the reducer takes "
                "the notes so far and one call's new ones and returns the list they make together"
                if _own(text)
                else "the agent could not finish the question with this state and tool"
            )
            raise fail(
                f"question {number} crashed",
                expected="every note written, the question answered",
                observed=shorten(text, 200),
                why=why,
                where=section(STEPS, BARRIER),
            ) from None
        wanted += [t for notes in turns for t in notes]
        notes = result.get("notes", []) if isinstance(result, dict) else None
        run.after.append(
            plain(notes, list[str], name="the thread's `notes`", key="q3", where=section(STEPS, BARRIER))
        )
        run.wanted.append(list(wanted))
    return run


def _counted(values: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _notes_case(run: _NotesRun, index: int, label: str) -> None:
    got, want = _counted(run.after[index]), _counted(run.wanted[index])
    if got == want:
        return
    lost = sorted(t for t in want if got.get(t, 0) < want[t])
    extra = sorted(t for t in got if got[t] > want.get(t, 0))
    if not got:
        raise fail(
            f"no note reached the thread {label}",
            expected=f"{len(run.wanted[index])} notes in the thread's `notes`: one for every call",
            observed="the thread's `notes` is an empty list",
            why="a tool writes to the thread's state only through the update it returns: "
            "`Command(update={'notes': [text], 'messages': [ToolMessage(..., tool_call_id=tool_call_id)]})`; "
            "a returned string only answers the call, and a list of your own is not the thread's",
            where=section(STEPS, BARRIER),
        )
    if lost and extra and len(run.after[index]) == len(run.wanted[index]):
        raise fail(
            f"notes were changed {label}",
            expected=f"the texts the calls wrote, e.g. {lost[0]!r}",
            observed=f"texts no call wrote, e.g. {extra[0]!r}",
            why="write each call's `text` into `notes` as it is",
            where=section(STEPS, BARRIER),
        )
    if lost:
        twice = all(want[t] > 1 and got.get(t, 0) >= 1 for t in lost)
        raise fail(
            f"notes were lost {label}",
            expected=f"{len(run.wanted[index])} notes: one for every call",
            observed=f"{len(run.after[index])} notes; lost {shorten(lost, 150)}",
            why="two calls wrote the same text: a reducer that drops repeats loses one of them"
            if twice
            else "the calls of one turn run in one step and their updates meet at the barrier: a reducer "
            "that "
            "keeps the last value keeps one call's list. Let the reducer add (`operator.add`) and each call "
            "write only its own note",
            where=section(STEPS, BARRIER),
        )
    raise fail(
        f"notes were written twice {label}",
        expected=f"{len(run.wanted[index])} notes: one for every call",
        observed=f"{len(run.after[index])} notes; more than once: {shorten(extra, 150)}",
        why="with an adding reducer a call's update is added to the list: return only the new note, not "
        "the notes it read from the state plus its own",
        where=section(STEPS, BARRIER),
    )


def case_first_question_notes(run: _NotesRun) -> None:
    _notes_case(run, 0, "in the first question (calls at once, then a later turn)")


def case_second_question_notes(run: _NotesRun) -> None:
    _notes_case(run, 1, "after the second question on the thread")


Q3_CASES = (
    ("every note of the first question kept, none twice", case_first_question_notes),
    ("the second question adds its notes to the thread's", case_second_question_notes),
)


def check_notes(SupportState: Any, add_note: Any, *, seed: Any = None) -> str:  # noqa: N803 - the learner's name
    d = _draw_notes(rng(seed))
    return _play(
        "q3",
        lambda: _q3_play(SupportState, add_note, d),
        Q3_CASES,
        "notes written at once (two alike), a later turn and a second question: every note kept, none twice.",
    )


q3 = Exercise(
    "19",
    "q3",
    ("SupportState", "add_note"),
    check_notes,
    (
        "The calls of one turn run in one step; their updates meet at the barrier and go through the "
        "key's reducer (lesson 11 §1). What does `keep_last` keep of three lists?",
        "`notes: Annotated[list[str], operator.add]`, and `add_note` returns "
        "`Command(update={'notes': [text], 'messages': [ToolMessage('noted', tool_call_id=tool_call_id)]})` "
        "— only its own note, not the state's notes plus its own.",
    ),
)


# == q4: a crashed thread ===============================================================================
class _Wire:
    """One check's provider: a local OpenAI-style endpoint that checks the history as OpenAI does, and
    the real `ChatOpenAI` client talking to it. Each thread puts the turns it scripts in `turns`."""

    def __init__(self) -> None:
        from langchain_openai import ChatOpenAI

        from helpers.openai_endpoint import ScriptedOpenAIEndpoint

        self.turns: list[Any] = []
        script = [lambda messages, k=k: self.turns[k] for k in range(8)]
        self.endpoint = ScriptedOpenAIEndpoint(script, check_history=True).start()
        self.llm = ChatOpenAI(
            model="gpt-4o",
            base_url=self.endpoint.base_url,
            api_key="unused",
            use_responses_api=False,
            max_retries=0,
            timeout=10,
        )

    def close(self) -> None:
        self.endpoint.stop()


def _payment_tools(done: list[str], notify_up: bool, saved: threading.Event | None) -> list[BaseTool]:
    def charge(amount: int) -> str:
        """Charge the customer."""
        done.append(f"charge {amount}")
        return f"charged {amount}"

    def notify(user: str) -> str:
        """Notify the customer."""
        done.append(f"notify {user}")
        if not notify_up:
            if saved is not None:
                saved.wait(5.0)  # charge's answer is saved first, as in a real crash that lands late
            raise ServiceError("notification service is down")
        return f"notified {user}"

    return [StructuredTool.from_function(f) for f in (charge, notify)]


THREADS = (
    ("create_agent crashed: one answer kept, one call unanswered", "agent"),
    ("a ToolNode loop crashed, and the user asked again (the 400 already met)", "asked again"),
    ("a healthy thread stays as it is", "healthy"),
)


@dataclass(frozen=True)
class _RepairDraw:
    amounts: tuple[int, ...]
    users: tuple[str, ...]
    seed: int


@dataclass
class _Thread:
    kind: str
    graph: Any
    config: dict
    ids: list[str]
    replies: list[str]
    done: list[str]
    before: list[BaseMessage] = field(default_factory=list)
    kept: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id → (content, status)
    done_before: list[str] = field(default_factory=list)
    after: list[BaseMessage] = field(default_factory=list)
    accepted: str = ""  # "" when the next question was answered; else why not


def _crash(d: _RepairDraw, index: int, wire: _Wire) -> _Thread:
    """Thread `index`, built the way a real one breaks: the model asks for `charge` and `notify` in
    one turn, and `notify`'s service is down (up in the healthy thread)."""
    kind = THREADS[index][1]
    draw = rng(d.seed + index)
    calls = [
        {"name": "charge", "args": {"amount": d.amounts[index]}, "id": _id(draw)},
        {"name": "notify", "args": {"user": d.users[index]}, "id": _id(draw)},
    ]
    draw.shuffle(calls)
    replies = [f"reply-{draw.getrandbits(24):06x}" for _ in range(6)]
    wire.turns[:] = [AIMessage("", tool_calls=[{**c, "type": "tool_call"} for c in calls]), *replies]
    wire.endpoint.reset()
    done: list[str] = []
    if kind == "agent":
        saved = threading.Event()
        graph = create_agent(
            wire.llm, _payment_tools(done, False, saved), checkpointer=AnswerSavedSaver("charge", saved)
        )
    else:
        tools = _payment_tools(done, kind == "healthy", None)
        graph = tool_loop(wire.llm.bind_tools(tools), tools).builder.compile(checkpointer=InMemorySaver())
    t = _Thread(
        kind,
        graph,
        {"configurable": {"thread_id": f"lab19-{uuid.uuid4().hex[:8]}"}},
        [c["id"] for c in calls],
        replies,
        done,
    )
    run_limited(_first_turns, t, d.users[index], d.amounts[index], limit=30, name="the course's crashed turn")
    t.before = list(graph.get_state(t.config).values["messages"])
    t.kept = {m.tool_call_id: (_text(m.content), m.status) for m in t.before if isinstance(m, ToolMessage)}
    t.done_before = list(done)
    return t


def _first_turns(t: _Thread, user: str, amount: int) -> None:
    with contextlib.suppress(ServiceError):
        t.graph.invoke({"messages": [HumanMessage(f"Charge {user} {amount} and tell them")]}, t.config)
    if t.kind == "asked again":
        with contextlib.suppress(Exception):  # the provider's 400, as a real thread meets it
            t.graph.invoke({"messages": [HumanMessage("Hello? Did it work?")]}, t.config)


def _next_question(t: _Thread, wire: _Wire) -> None:
    wire.endpoint.reset()

    def ask() -> list[BaseMessage]:
        return t.graph.invoke({"messages": [HumanMessage("What is my balance?")]}, t.config)["messages"]

    try:
        final = run_limited(ask, limit=30, name="the next question")
    except Exception as error:  # noqa: BLE001 - the provider's verdict
        refused = [e for e in wire.endpoint.exchanges if e.status != 200]
        t.accepted = (
            refused[0].response["error"]["message"] if refused else f"{type(error).__name__}: {error}"
        )
        return
    if not isinstance(final[-1], AIMessage) or _text(final[-1].content) not in t.replies:
        t.accepted = f"the last message is a {type(final[-1]).__name__}, not the model's reply"


def case_no_tool_ran_again(t: _Thread) -> None:
    if t.done != t.done_before:
        raise fail(
            "a tool ran again",
            expected="no tool runs during the repair or the next question",
            observed=f"ran again: {t.done[len(t.done_before) :]}",
            why="resuming (`graph.invoke(None, config)`) re-runs the failed step — a payment may run twice: "
            "write the missing answers with `update_state` instead",
            where=section(RECOVERY, REPAIR),
        )


def case_history_kept(t: _Thread) -> None:
    originals = [m for m in t.before if not isinstance(m, ToolMessage)]
    after_ids = [m.id for m in t.after]
    lost = [m for m in originals if m.id not in after_ids]
    order = [i for i in after_ids if i in {m.id for m in originals}]
    if lost or order != [m.id for m in originals]:
        raise fail(
            "the repair lost or reordered the conversation",
            expected="every question and model turn kept, with its id, in its order",
            observed=f"gone: {[type(m).__name__ for m in lost]}" if lost else "another order",
            why="deleting the AIMessage whose calls nobody answered hides what the model asked for, and an "
            "answer that exists then follows no call: answer the calls instead",
            where=section(RECOVERY, REPAIR),
        )


def case_answers_in_place(t: _Thread) -> None:
    answers = [m for m in t.after if isinstance(m, ToolMessage)]
    counts = {i: sum(m.tool_call_id == i for m in answers) for i in t.ids}
    stray = [m.tool_call_id for m in answers if m.tool_call_id not in t.ids]
    if stray or any(n != 1 for n in counts.values()):
        raise fail(
            "not every call has exactly one answer",
            expected="one ToolMessage per tool call, by its id",
            observed=", ".join(f"{i}: {n}" for i, n in counts.items())
            + (f"; stray {stray}" if stray else ""),
            why="write an answer only for a call without one, and keep the answers that exist",
            where=section(RECOVERY, REPAIR),
        )
    for call_id, (content, status) in t.kept.items():
        new = next(m for m in answers if m.tool_call_id == call_id)
        if (_text(new.content), new.status) != (content, status):
            raise fail(
                "an answer the thread held was replaced",
                expected=f"{content!r} kept for {call_id}",
                observed=f"{_text(new.content)!r} [{new.status}]",
                why="`create_agent` keeps a finished call's answer as a pending write (get_state shows it): "
                "any `update_state` drops it unless you write it back",
                where=section(RECOVERY, CRASH),
            )
    bad = [m for m in answers if m.tool_call_id not in t.kept and m.status != "error"]
    if bad:
        raise fail(
            "a call nobody answered was given a success answer",
            expected="status='error' and a text saying it may not have completed",
            observed=f"{[(_text(m.content), m.status) for m in bad]}"[:200],
            why="the thread cannot know whether the call did its work; the model must not claim it did",
            where=section(RECOVERY, REPAIR),
        )
    for message in (m for m in answers if m.tool_call_id not in t.kept):
        problem = _dishonest(_text(message.content))
        if problem:
            raise fail(
                f"an error answer {problem}",
                expected="status='error' and a text saying the call may not have completed, e.g. 'not "
                "completed: the tool step crashed; it may have run'",
                observed=f"{shorten(repr(_text(message.content)), 120)} [{message.status}]",
                why="the thread cannot know whether the call did its work (it may have run before the "
                "crash): the model reads the text, not only the status, and must not tell the user it was "
                "done",
                where=section(RECOVERY, REPAIR),
            )


def _dishonest(text: str) -> str:
    """What is wrong with the text of an error answer written for a call nobody answered ('' if nothing
    this check can tell): empty, or nothing but a claim of success ('done', 'Sent.', '✅'). The lesson's
    rule is that it says the call may not have completed; any other sentence is the learner's to word."""
    bare = " ".join(text.replace("\u2019", "'").casefold().split()).strip(" .!?:;,-—")
    if not bare:
        return "says nothing: the model cannot tell the call may not have completed"
    if bare in BARE_SUCCESS:
        return "claims the call was done"
    return ""


def case_healthy_unchanged(t: _Thread) -> None:
    if t.kind != "healthy":
        return
    shape = [(type(m).__name__, m.id, _text(m.content)) for m in t.after]
    if shape != [(type(m).__name__, m.id, _text(m.content)) for m in t.before]:
        raise fail(
            "a thread with nothing to repair was changed",
            expected="the same messages in the same order",
            observed=f"{[type(m).__name__ for m in t.before]} became {[type(m).__name__ for m in t.after]}",
            why="every call there was answered: a repair writes answers only for calls nobody answered",
            where=section(RECOVERY, REPAIR),
        )


def case_provider_accepts(t: _Thread) -> None:
    if t.accepted:
        raise fail(
            "the next question was refused by the provider",
            expected="a 200 from the endpoint, the model's reply last",
            observed=shorten(t.accepted, 200),
            why="each AIMessage's calls must be answered right after it, before any other message: answers "
            "appended after a later question are still missing to the provider",
            where=section(RECOVERY, REPAIR),
        )


REPAIR_CASES = (
    case_no_tool_ran_again,
    case_history_kept,
    case_answers_in_place,
    case_healthy_unchanged,
    case_provider_accepts,
)


def _repair_thread(repair: Any, d: _RepairDraw, index: int, wire: _Wire) -> None:
    t = _crash(d, index, wire)
    try:
        run_learner(repair, t.graph, t.config, name="repair")
    except StillAStub:
        raise
    except LearnerRaised as error:
        case_no_tool_ran_again(t)
        text = str(error)
        raise fail(
            "`repair` raised",
            expected="the thread's history rewritten with `graph.update_state(config, ..., as_node='tools')`",
            observed=shorten(text, 220),
            why="the exception came from your own code (named above), not from LangGraph: read "
            "`graph.get_state(config).values['messages']`, build the repaired list, write it with one "
            "`update_state`"
            if _own(text)
            else "a RemoveMessage for create_agent's finished answer has no message to remove: that answer "
            "is a pending write, which get_state shows but the thread does not hold yet. Rewrite the whole "
            "history, `[RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]`"
            if "doesn't exist" in text
            else "without `as_node`, LangGraph cannot tell which node wrote an update on a thread that "
            "stopped mid-step; and a RemoveMessage for create_agent's pending answer has no message to "
            "remove: rewrite the whole history, `[RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]`",
            where=section(RECOVERY, REPAIR),
        ) from None
    t.after = list(t.graph.get_state(t.config).values["messages"])
    case_no_tool_ran_again(t)
    case_history_kept(t)
    case_answers_in_place(t)
    case_healthy_unchanged(t)
    _next_question(t, wire)
    case_provider_accepts(t)
    case_no_tool_ran_again(t)


def check_repair(repair: Any, *, seed: Any = None) -> str:
    _is_function("q4", "repair", repair, "def repair(graph, config): ...", section(RECOVERY, REPAIR))
    draw = rng(seed)
    d = _RepairDraw(
        tuple(draw.randint(2, 99) for _ in THREADS),
        tuple(draw.choice(("ann", "bo", "cy", "di", "ed")) for _ in THREADS),
        draw.getrandbits(32),
    )
    cases, wire = Cases("q4"), _Wire()
    try:
        with _quiet_library():
            for index, (label, _) in enumerate(THREADS):
                cases.run(label, lambda index=index: _repair_thread(repair, d, index, wire))
    finally:
        wire.close()
    return cases.result(
        "every crashed thread accepted by the provider again — history and existing answers kept, error "
        "answers right after their calls, no tool run again — and a healthy thread left alone."
    )


def crashed_thread(endpoint: Any) -> tuple[Any, dict]:
    """The support agent's thread after a crash, on `endpoint` (a `ScriptedOpenAIEndpoint` with
    `check_history=True` whose script starts with a turn asking for `charge` and `notify`): a
    `create_agent` graph on the real `ChatOpenAI` client, and its config. `notify`'s service is down."""
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        model="gpt-4o",
        base_url=endpoint.base_url,
        api_key="unused",
        use_responses_api=False,
        max_retries=0,
        timeout=10,
    )
    saved = threading.Event()
    graph = create_agent(
        llm, _payment_tools([], False, saved), checkpointer=AnswerSavedSaver("charge", saved)
    )
    config = {"configurable": {"thread_id": f"support-{uuid.uuid4().hex[:6]}"}}
    with contextlib.suppress(ServiceError):
        graph.invoke({"messages": [HumanMessage("Charge ann 5 and tell her")]}, config)
    return graph, config


q4 = Exercise(
    "19",
    "q4",
    ("repair",),
    check_repair,
    (
        "Lesson 13 §3: the provider looks for each call's answer right after the AIMessage that made it, "
        "and create_agent's finished answer lives only in a pending write. Rewrite the history in order.",
        "Read `graph.get_state(config).values['messages']`; build a list: every message but ToolMessages, "
        "and after each AIMessage one answer per call (the existing ToolMessage, or `ToolMessage('not "
        "completed: it may have run', tool_call_id=..., status='error')`); write it with "
        "`graph.update_state(config, {'messages': [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, "
        "as_node='tools')`.",
    ),
)


# == q5: limits ===========================================================================================
class _TaskModel(ScriptedChatModel):
    """q5's model: for question q (counted by the HumanMessages) it makes the tool-call turns of
    `plans[q - 1]`, then answers; a plan of None never stops. Every call it gets is recorded."""

    plans: tuple = ()
    tool: str = ""
    seen: Any = None
    answer: str = ""

    def reply(self, messages: Any, tools: Any = None) -> AIMessage:
        messages = list(messages)
        humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        question = len(humans)
        turn = sum(isinstance(m, AIMessage) for m in messages[(humans[-1] if humans else 0) :])
        self.seen.append(question)
        plan = self.plans[question - 1] if 0 < question <= len(self.plans) else ()
        if plan is None and len(self.seen) > RUNAWAY_CAP:
            raise RuntimeError(f"the check's runaway model stops here, after {RUNAWAY_CAP} calls")
        if plan is None or turn < len(plan):
            width = 1 if plan is None else plan[turn]
            calls = [
                {
                    "name": self.tool,
                    "args": {"query": f"q{question}-{turn}-{k}"},
                    "id": f"call_{question}_{turn}_{k}",
                    "type": "tool_call",
                }
                for k in range(width)
            ]
            message = AIMessage("", tool_calls=calls)
        else:
            message = AIMessage(f"{self.answer} {question}")
        message.id = f"{self.answer}-{question}-{turn}"
        return message


@dataclass(frozen=True)
class _LimitDraw:
    tool: str
    hooks: tuple[str, ...]  # "before" / "after" for each hook middleware handed over
    runaway_hooks: tuple[str, ...]  # the runaway's: fewer, so no step count fits both
    long: tuple[int, ...]  # calls per tool turn: MAX_MODEL_CALLS - 1 turns, then the answer
    second: tuple[int, ...]
    answer: str


def _draw_limits(draw: Any) -> _LimitDraw:
    hooks = tuple(draw.choice(("before", "after")) for _ in range(draw.choice((3, 4))))
    return _LimitDraw(
        f"{draw.choice(('search_kb', 'lookup_docs', 'find_policy'))}_{draw.getrandbits(12):03x}",
        hooks,
        (draw.choice(("before", "after")),),
        tuple(draw.choice((1, 1, 2, 3)) for _ in range(MAX_MODEL_CALLS - 1)),
        tuple(draw.choice((1, 2)) for _ in range(draw.randint(4, 7))),
        f"answer-{draw.getrandbits(24):06x}",
    )


@dataclass
class _LimitRun:
    d: _LimitDraw
    results: list[tuple[str, Any]] = field(
        default_factory=list
    )  # per question: ("ok", messages) | ("raised", text)
    model_calls: list[int] = field(default_factory=list)  # per question
    questions_seen: list[int] = field(default_factory=list)  # per question: the most questions a call saw
    hook_runs: list[list[str]] = field(default_factory=list)  # per question: the hooks that ran, in order
    runaway: tuple[str, Any] = ("", None)
    runaway_calls: int = 0
    ran: list[str] = field(default_factory=list)
    question_runs: int = 0  # tool runs of the two questions


def _hooks(kinds: tuple[str, ...], seen: list[str]) -> list:
    made = []
    for k, kind in enumerate(kinds):

        def hook(state: Any, runtime: Any, k: int = k) -> None:
            seen.append(f"hook{k}")
            return None

        hook.__name__ = f"support_hook_{k}"
        made.append(before_model(hook) if kind == "before" else after_model(hook))
    return made


def _q5_agent(
    build_limited_agent: Any,
    d: _LimitDraw,
    plans: tuple,
    ran: list[str],
    seen: list,
    hooked: list,
    hooks: tuple[str, ...],
) -> Any:
    def search(query: str) -> str:
        ran.append(query)
        return f"found: {query}"

    model = _TaskModel(script=[], plans=plans, tool=d.tool, seen=seen, answer=d.answer)
    tool = StructuredTool.from_function(search, name=d.tool, description="Search the knowledge base.")
    agent = run_learner(
        build_limited_agent, model, [tool], _hooks(hooks, hooked), InMemorySaver(), name="build_limited_agent"
    )
    if not hasattr(agent, "invoke"):
        raise fail(
            "`build_limited_agent` did not return an agent",
            expected="create_agent(...) (or it `.with_config(...)`)",
            observed=f"a {type(agent).__name__}",
            where=section(AROUND, THREE_LIMITS),
        )
    return agent


def _ask(agent: Any, thread: dict, text: str, work: int) -> tuple[str, Any]:
    try:
        result = run_learner(
            agent.invoke,
            {"messages": [HumanMessage(text)]},
            thread,
            limit=scaled_limit(0.02 * work),
            name="the agent's invoke",
        )
    except StillAStub:
        raise
    except LearnerRaised as error:  # a hang is not caught: the run stops there, after one time limit
        return "raised", shorten(str(error), 220)
    messages = result.get("messages") if isinstance(result, dict) else None
    return "ok", list(messages or [])


def _q5_play(build_limited_agent: Any, d: _LimitDraw) -> _LimitRun:
    run = _LimitRun(d)
    seen: list[int] = []
    hooked: list[str] = []
    agent = _q5_agent(build_limited_agent, d, (d.long, d.second), run.ran, seen, hooked, d.hooks)
    thread = {"configurable": {"thread_id": f"lab19-{uuid.uuid4().hex[:8]}"}}
    for text in ("Work through the whole refund policy.", "And the returns policy?"):
        before, hooks_before = len(seen), len(hooked)
        run.results.append(_ask(agent, thread, text, 60))
        run.model_calls.append(len(seen) - before)
        run.questions_seen.append(max(seen[before:], default=0))
        run.hook_runs.append(hooked[hooks_before:])
    run.question_runs = len(run.ran)
    seen.clear()
    runaway = _q5_agent(build_limited_agent, d, (None,), run.ran, seen, [], d.runaway_hooks)
    run.runaway = _ask(
        runaway, {"configurable": {"thread_id": f"lab19-{uuid.uuid4().hex[:8]}"}}, "Find everything.", 200
    )
    run.runaway_calls = len(seen)
    return run


def _finished(d: _LimitDraw, outcome: tuple[str, Any], question: int) -> str:
    """Why a question did not end with its own answer ('' when it did)."""
    kind, value = outcome
    if kind == "raised":
        return value  # "your code raised …", "langgraph raised …"
    last = value[-1] if value else None
    if isinstance(last, AIMessage) and _text(last.content) == f"{d.answer} {question}":
        return ""
    return f"it ended with {shorten(repr(_text(last.content)) if last is not None else 'nothing', 120)}"


def _limit_why(observed: str) -> tuple[str, str]:
    if _own(observed):
        return (
            "the exception came from your own code (named above), not from a limit: the agent is "
            "`create_agent` with the middleware handed over and a model-call limit that ends with an "
            "answer, nothing of yours that raises",
            section(AROUND, THREE_LIMITS),
        )
    if "GraphRecursionError" in observed:
        return (
            "the recursion limit counts steps, not model calls: every before/after-model hook is a node of "
            "its own and takes one step per turn. Do not size `recursion_limit` by model and tools alone — "
            "leave the agent's own (9999) and stop it with a model-call limit",
            section(STREAMING, HOOK_STEPS),
        )
    if "thread limit" in observed:
        return (
            "`thread_limit` counts the model calls of every question on the thread: the second question "
            "inherits the first one's count. A per-question budget is `run_limit`",
            section(AROUND, PER_THREAD),
        )
    return (
        f"a question may take up to {MAX_MODEL_CALLS} model calls (the last one its answer): a tool-call "
        "limit counts calls, and a turn may make several",
        section(AROUND, THREE_LIMITS),
    )


def case_long_task_completes(run: _LimitRun) -> None:
    problem = _finished(run.d, run.results[0], 1)
    if problem:
        why, where = _limit_why(problem)
        raise fail(
            f"a task of {MAX_MODEL_CALLS} model calls was stopped early",
            expected=f"its answer after {MAX_MODEL_CALLS} model calls ({sum(run.d.long)} tool calls, with "
            f"{len(run.d.hooks)} hook middlewares)",
            observed=f"{problem}, after {run.model_calls[0]} model call(s)",
            why=why,
            where=where,
        )


_NO_HISTORY = (
    "the second question reached the model without the first: the agent keeps a thread only in the "
    "checkpointer it is built on — pass the one you are handed, `create_agent(..., "
    "checkpointer=checkpointer)`",
    section(AROUND, PER_THREAD),
)


def _history_lost(run: _LimitRun) -> bool:
    """The second question's model calls saw one question only: the thread kept nothing."""
    return run.questions_seen[1:2] == [1]


def case_second_question_completes(run: _LimitRun) -> None:
    problem = _finished(run.d, run.results[1], 2)
    if problem:
        why, where = _NO_HISTORY if _history_lost(run) else _limit_why(problem)
        raise fail(
            "the second question on the thread was stopped early",
            expected=f"its own answer after {len(run.d.second) + 1} model calls: one budget per question",
            observed=f"{problem}, after {run.model_calls[1]} model call(s)",
            why=why,
            where=where,
        )


def _unfinished(run: _LimitRun) -> CheckFailed | None:
    """A case about the questions' work is not judged when a question did not end with its answer: the
    cases above say why, and what did not run then says nothing more."""
    stopped = [n for n, outcome in enumerate(run.results, 1) if _finished(run.d, outcome, n)]
    if not stopped:
        return None
    return CheckFailed(f"not judged: question {stopped[0]} did not end with its answer (above)")


def case_middleware_kept(run: _LimitRun) -> None:
    every = {f"hook{k}" for k in range(len(run.d.hooks))}
    ended = [not _finished(run.d, outcome, n) for n, outcome in enumerate(run.results, 1)]
    if not any(ended):
        raise _unfinished(run)
    missing = [
        sorted(every - set(ran)) if done else [] for ran, done in zip(run.hook_runs, ended, strict=True)
    ]
    if any(missing):
        raise fail(
            "the middleware handed to `build_limited_agent` did not run",
            expected=f"each of the {len(every)} hooks in `middleware` runs on every question (they keep the "
            "history in shape)",
            observed="; ".join(
                f"question {n}: "
                + (f"{', '.join(m) or 'all'} {'did not run' if m else 'ran'}" if done else "not judged")
                for n, (m, done) in enumerate(zip(missing, ended, strict=True), 1)
            ),
            why="fix the limits, not the agent's other middleware: pass `middleware` on, your limit added",
            where=section(AROUND, THREE_LIMITS),
        )


def case_runaway_stops(run: _LimitRun) -> None:
    kind, value = run.runaway
    unanswered = []
    if kind == "ok":
        answered = {m.tool_call_id for m in value if isinstance(m, ToolMessage)}
        unanswered = [
            c["id"]
            for m in value
            if isinstance(m, AIMessage)
            for c in m.tool_calls
            if c["id"] not in answered
        ]
    last = value[-1] if kind == "ok" and value else None
    ends = isinstance(last, AIMessage) and not last.tool_calls
    if kind == "ok" and ends and not unanswered and run.runaway_calls <= MAX_MODEL_CALLS:
        return
    capped = kind == "raised" and "runaway model stops here" in str(value)
    observed = (
        f"still calling the model after {RUNAWAY_CAP} calls: the check stopped it"
        if capped
        else f"{value}, after {run.runaway_calls} model calls"
        if kind == "raised"
        else f"{run.runaway_calls} model calls; {len(unanswered)} call(s) unanswered; last message "
        f"{type(last).__name__}"
    )
    raise fail(
        "a model that never stops was not stopped in time, with an answer",
        expected=f"at most {MAX_MODEL_CALLS} model calls, then the run returns normally: every call "
        "answered, an AIMessage without tool calls last",
        observed=observed,
        why=_limit_why(value)[0]
        if kind == "raised" and _own(value)
        else (
            "nothing in the agent stops a model that never stops: a recursion limit of hundreds of steps "
            "lets it run, and bill, far past the budget. "
            if capped
            else ""
        )
        + "`ModelCallLimitMiddleware(run_limit=...)` with its default `exit_behavior='end'` refuses the "
        "next model call and ends with a message; a recursion limit raises instead, and a limit set too "
        "high bills every extra call",
        where=section(AROUND, THREE_LIMITS),
    )


def case_limited_model_used(run: _LimitRun) -> None:
    wanted = [MAX_MODEL_CALLS, len(run.d.second) + 1]
    runs = sum(run.d.long) + sum(run.d.second)
    if (run.model_calls != wanted or run.question_runs != runs) and not _history_lost(run):
        stopped = _unfinished(run)
        if stopped is not None:
            raise stopped
    if run.model_calls != wanted or run.question_runs != runs:
        why, where = (
            _NO_HISTORY
            if _history_lost(run)
            else (
                "build the agent with the `model` and `tools` you are handed: the check scripts them",
                section(AROUND, THREE_LIMITS),
            )
        )
        raise fail(
            "the model and tools handed to `build_limited_agent` did not do the questions' work",
            expected=f"{wanted[0]} and {wanted[1]} calls of the model you were handed; {runs} tool runs",
            observed=f"{run.model_calls[0]} and {run.model_calls[1]} model calls; {run.question_runs} "
            "tool runs",
            why=why,
            where=where,
        )


Q5_CASES = (
    (
        f"a task of exactly {MAX_MODEL_CALLS} model calls, with hook nodes, completes",
        case_long_task_completes,
    ),
    ("a second question on the same thread completes", case_second_question_completes),
    ("the middleware handed over still runs", case_middleware_kept),
    (f"a runaway model stops within {MAX_MODEL_CALLS} model calls, with an answer", case_runaway_stops),
    ("the model and tools handed over did the work", case_limited_model_used),
)


def check_limits(build_limited_agent: Any, *, seed: Any = None) -> str:
    _is_function(
        "q5",
        "build_limited_agent",
        build_limited_agent,
        "def build_limited_agent(model, tools, middleware, checkpointer): ... return create_agent(...)",
        section(AROUND, THREE_LIMITS),
    )
    d = _draw_limits(rng(seed))
    return _play(
        "q5",
        lambda: _q5_play(build_limited_agent, d),
        Q5_CASES,
        f"a {MAX_MODEL_CALLS}-call task with hook middlewares and a second question both answered; a "
        f"runaway stopped within {MAX_MODEL_CALLS} model calls, every call answered.",
    )


q5 = Exercise(
    "19",
    "q5",
    ("build_limited_agent",),
    check_limits,
    (
        "Two limits stop the shipped agent early: a `recursion_limit` counted as if a turn were two steps "
        "(lesson 12, deep dive 9: hooks take steps too) and a model-call limit counted per thread (lesson "
        "17, deep dive 6).",
        f"`create_agent(model, tools, middleware=[*middleware, ModelCallLimitMiddleware(run_limit="
        f"{MAX_MODEL_CALLS})], checkpointer=checkpointer)` — no `.with_config(recursion_limit=...)`, or one "
        "large enough for every hook's step.",
    ),
)


# == q6: offered and runnable ==========================================================================
class _OfferModel(ScriptedChatModel):
    """q6's model: it records the tools each call offers it, calls every one of them once in its first
    turn, then answers."""

    offers: Any = None
    ref: str = ""

    def reply(self, messages: Any, tools: Any = None) -> AIMessage:
        names = [t["function"]["name"] for t in tools or [] if isinstance(t, dict) and "function" in t]
        self.offers.append(names)
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn == 0:
            calls = [
                {"name": n, "args": {"order_id": self.ref}, "id": f"call_{k}_{n}", "type": "tool_call"}
                for k, n in enumerate(names)
            ]
            message = AIMessage("", tool_calls=calls)
        else:
            message = AIMessage("All looked up.")
        message.id = f"offer-{turn}"
        return message


@dataclass(frozen=True)
class _OfferDraw:
    tools: tuple[str, ...]
    tracker: str
    questions: tuple[tuple[str, bool], ...]  # (text, about an order)
    ref: str


def _draw_offer(draw: Any) -> _OfferDraw:
    ref = _ref(draw)
    tag = f"{draw.getrandbits(12):03x}"
    questions = [  # every phrasing, every run: one rule must hold for all of them
        *((text.format(ref=ref), True) for text in ABOUT_ORDERS),
        *((text, False) for text in NOT_ABOUT_ORDERS),
    ]
    draw.shuffle(questions)
    return _OfferDraw(
        (f"{draw.choice(LOOKUP_STEMS)}_{tag}", f"{draw.choice(OTHER_STEMS)}_{tag}"),
        f"{draw.choice(TRACK_STEMS)}_{tag}",
        tuple(questions),
        ref,
    )


@dataclass
class _OfferRun:
    d: _OfferDraw
    offers: list[list[list[str]]] = field(default_factory=list)  # per question, per model call
    answers: list[list[tuple[str, str, str]]] = field(default_factory=list)  # (tool name, status, content)
    ran: list[list[str]] = field(default_factory=list)
    audited: list[list[str]] = field(default_factory=list)


def _offer_tools(d: _OfferDraw, ran: list[str]) -> tuple[list[BaseTool], BaseTool]:
    def make(name: str):
        def run(order_id: str) -> str:
            ran.append(name)
            return f"{name}: ok for {order_id}"

        return StructuredTool.from_function(run, name=name, description=f"{name.replace('_', ' ')}.")

    return [make(n) for n in d.tools], make(d.tracker)


def _audit(audited: list[str]) -> Any:
    """The audit middleware handed to `build_offering_agent`: it records every call it sees."""

    @wrap_tool_call
    def audit(request: Any, handler: Any) -> Any:
        audited.append(str(request.tool_call["name"]))
        return handler(request)

    return audit


def _q6_play(build_offering_agent: Any, d: _OfferDraw) -> _OfferRun:
    run = _OfferRun(d)
    for text, _ in d.questions:
        offers: list[list[str]] = []
        ran: list[str] = []
        audited: list[str] = []

        audit = _audit(audited)

        tools, tracker = _offer_tools(d, ran)
        model = _OfferModel(script=[], offers=offers, ref=d.ref)
        agent = run_learner(build_offering_agent, model, tools, tracker, audit, name="build_offering_agent")
        if not hasattr(agent, "invoke"):
            raise fail(
                "`build_offering_agent` did not return an agent",
                expected="create_agent(...)",
                observed=f"a {type(agent).__name__}",
                where=section(AROUND, OFFERED),
            )
        result = run_learner(agent.invoke, {"messages": [HumanMessage(text)]}, name="the agent's invoke")
        messages = result.get("messages", []) if isinstance(result, dict) else []
        run.offers.append(offers)
        run.answers.append(
            [(str(m.name), str(m.status), _text(m.content)) for m in messages if isinstance(m, ToolMessage)]
        )
        run.ran.append(ran)
        run.audited.append(audited)
    return run


def _wanted(d: _OfferDraw, about: bool) -> list[str]:
    return sorted([*d.tools, d.tracker] if about else list(d.tools))


def case_offered_exactly(run: _OfferRun) -> None:
    for (text, _), offers in zip(run.d.questions, run.offers, strict=True):
        for offer in offers:
            twice = sorted({n for n in offer if offer.count(n) > 1})
            if twice:
                raise fail(
                    f"the model was offered a tool twice for {text!r}",
                    expected="each tool offered once",
                    observed=f"{sorted(offer)} ({twice} twice)",
                    why="a tool registered at `create_agent` and added by the middleware as well is offered "
                    "twice: register it, and only remove it in the middleware",
                    where=section(AROUND, OFFERED),
                )
    for (text, about), offers in zip(run.d.questions, run.offers, strict=True):
        want = _wanted(run.d, about)
        for offer in offers:
            if sorted(offer) != want:
                raise fail(
                    f"the model was offered the wrong tools for {text!r}",
                    expected=f"{want}: the agent's tools"
                    + (
                        ", and the tracker: the question is about an order"
                        if about
                        else "; the tracker only for a question about an order"
                    ),
                    observed=f"{sorted(offer)}",
                    why="a tool registered at `create_agent` is offered on every call unless your "
                    "`wrap_model_call` removes it: compare with the tracker you are handed (`tracker.name`), "
                    "not a name you typed"
                    if not about
                    else "the middleware decides per call: keep the tracker in `request.tools` when the "
                    "question is about an order (compare tools by name or identity, not by a name you typed)",
                    where=section(AROUND, OFFERED),
                )


def case_offered_tools_run(run: _OfferRun) -> None:
    for (text, _), answers, ran, offers in zip(
        run.d.questions, run.answers, run.ran, run.offers, strict=True
    ):
        broken = [(n, c) for n, s, c in answers if s == "error"]
        if broken:
            name, content = broken[0]
            raise fail(
                f"the model called a tool it was offered, and it could not run ({text!r})",
                expected="every tool the model is offered runs when called",
                observed=shorten(content, 160),
                why="the `tools` node runs only the tools passed to `create_agent` (and the middleware's "
                "`.tools`): a tool a `wrap_model_call` adds is offered but unknown there. Register it at "
                "build time and filter it per call",
                where=section(AROUND, OFFERED),
            )
        offered = sorted(set(offers[0])) if offers else []
        if sorted(set(ran)) != offered:
            raise fail(
                f"the tools that ran are not the tools offered ({text!r})",
                expected=f"{offered} ran",
                observed=f"{sorted(set(ran))} ran",
                where=section(AROUND, OFFERED),
            )


def case_audit_kept(run: _OfferRun) -> None:
    for (text, _), audited, ran in zip(run.d.questions, run.audited, run.ran, strict=True):
        if any(audited.count(name) < ran.count(name) for name in ran):
            raise fail(
                "the audit middleware did not see every call",
                expected=f"the audit you were handed sees each call that ran: {sorted(ran)}",
                observed=f"it saw {sorted(audited)} ({text!r})",
                why="keep the audit in `middleware=[...]`: fix the offer, not the agent's other middleware",
                where=section(AROUND, OFFERED),
            )


def case_offering_model_used(run: _OfferRun) -> None:
    for (text, about), offers, ran in zip(run.d.questions, run.offers, run.ran, strict=True):
        want = _wanted(run.d, about)
        if len(offers) != 2 or sorted(ran) != want:
            raise fail(
                f"the model and tools handed to `build_offering_agent` did not answer {text!r}",
                expected=f"2 calls of the model you were handed; each offered tool run once: {want}",
                observed=f"{len(offers)} model call(s); {sorted(ran)} ran",
                why="build the agent with the `model`, `tools` and `tracker` you are handed: the check "
                "scripts them",
                where=section(AROUND, OFFERED),
            )


Q6_CASES = (
    ("each model call offered exactly the tools for its question", case_offered_exactly),
    ("every tool the model was offered runs", case_offered_tools_run),
    ("the audit still sees every call", case_audit_kept),
    ("the model and tools handed over did the work", case_offering_model_used),
)


def check_offer(build_offering_agent: Any, *, seed: Any = None) -> str:
    _is_function(
        "q6",
        "build_offering_agent",
        build_offering_agent,
        "def build_offering_agent(model, tools, tracker, audit): ... return create_agent(...)",
        section(AROUND, OFFERED),
    )
    d = _draw_offer(rng(seed))
    return _play(
        "q6",
        lambda: _q6_play(build_offering_agent, d),
        Q6_CASES,
        "the agent's tools offered for every question, the tracker only for the one about an order; "
        "every offered tool ran, the audit saw each call.",
    )


q6 = Exercise(
    "19",
    "q6",
    ("build_offering_agent",),
    check_offer,
    (
        "Lesson 17 §4: the model is offered what the `wrap_model_call` hands on; the `tools` node runs only "
        "what `create_agent` was built with. With any `wrap_tool_call` middleware, the agent no longer "
        "refuses a tool added per call: the model calls it and gets 'not a valid tool'.",
        "Pass `[*tools, tracker]` to `create_agent`, and make the `wrap_model_call` REMOVE the tracker "
        "(`t.name != tracker.name`) unless a human message mentions an order — never add it there.",
    ),
)

__all__ = [
    "MAX_MODEL_CALLS",
    "OrderDesk",
    "ServiceError",
    "crashed_thread",
    "q1",
    "q2",
    "q3",
    "q4",
    "q5",
    "q6",
    "serve",
]

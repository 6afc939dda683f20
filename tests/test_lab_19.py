"""Lab 19, the capstone, as a learner meets it: for each of its six faults, fixes written differently
are accepted, and the fixes beginners write that leave the fault (or make another) are refused with a
message that names it: blocking lookups, a swallowed or bypassed approval, lost or doubled notes, a
repair the provider refuses or that runs tools again, limits per thread or per step, a tool offered
that cannot run. A hang is cut; SystemExit, GeneratorExit and KeyboardInterrupt from learner code
end in a verdict; every draw holds every hard case; the starter is still a stub everywhere."""

from __future__ import annotations

import asyncio
import concurrent.futures
import operator
import sys
import threading
import time
from typing import Annotated

import pytest
from lab_checks import assert_verdicts, rejected, verdicts
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
    before_model,
    wrap_model_call,
)
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import InjectedState
from langgraph.types import Command, interrupt
from pydantic import BaseModel

import helpers.labs as labs
from helpers.history import unanswered_tool_calls
from helpers.labs import LABS, NAMES, SOLUTIONS, CheckFailed, CheckStopped, lab19, solution_namespace
from helpers.labs import build as labs_build
from helpers.models import ScriptedChatModel

STEM = "19_capstone_fix_the_agent"

# `@tool` silences a pydantic deprecation warning with `warnings.catch_warnings()`, which is not
# thread-safe: when `verdicts` builds several answers' tools at once, one thread's exit restores the
# filters while another is inside, and under this suite's `filterwarnings = ["error"]` the warning
# would be raised in an answer. A notebook builds one set of tools at a time (as in test_lab_16).
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20")


@pytest.fixture(scope="module", autouse=True)
def lab_19_is_named():
    """Until the lab is listed in helpers.labs.NAMES, this module lists it for its own run."""
    added = "19" not in NAMES
    if added:
        NAMES["19"] = STEM
    yield
    if added:
        NAMES.pop("19", None)


def solution_code(number: str) -> dict:
    """`helpers.labs.solution_namespace`, compiled without this package's `from __future__ import
    annotations` (which `compile` would otherwise inherit and turn the notebook's state class's
    annotations into strings that `create_agent` cannot resolve)."""
    import contextlib

    import nbformat

    namespace: dict = {}
    for cell in nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4).cells:
        if cell.cell_type != "code" or ".check(" in cell.source or ".hint(" in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        with contextlib.redirect_stdout(None):
            exec(compile(code, f"<{NAMES[number]}>", "exec", dont_inherit=True), namespace)  # noqa: S102
    return namespace


@pytest.fixture(scope="module")
def sol(lab_19_is_named):
    try:
        return solution_namespace("19")
    except NameError:  # the framework's reader inherits `annotations` (see solution_code)
        return solution_code("19")


def test_the_starter_is_generated_and_every_exercise_is_still_a_stub(lab_19_is_named):
    """The starter's Setup cell and the definitions of its exercise cells, run as a learner runs them:
    each exercise's function stops at its stub; q3's region is the whole cell, so its names are missing."""
    import ast
    import linecache

    import nbformat

    committed = (LABS / f"{STEM}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(STEM)
    namespace: dict = {}
    for number, cell in enumerate(nbformat.read(LABS / f"{STEM}.ipynb", as_version=4).cells):
        if cell.cell_type != "code" or not ("%xmode" in cell.source or "NotImplementedError" in cell.source):
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        tree = ast.parse(code)
        kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
        tree.body = [node for node in tree.body if isinstance(node, kinds)]
        name = f"/tmp/ipykernel_19/{number}.py"
        linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
        exec(compile(tree, name, "exec", dont_inherit=True), namespace)  # noqa: S102 - the course's own starter
    for exercise in (lab19.q1, lab19.q2, lab19.q4, lab19.q5, lab19.q6):
        rejected(exercise, namespace, "still raises NotImplementedError", "Replace that `raise` line")
    rejected(lab19.q3, namespace, "`SupportState` is not defined")


def test_nothing_public_computes_an_answer():
    assert set(lab19.__all__) == {
        "MAX_MODEL_CALLS",
        "OrderDesk",
        "ServiceError",
        "crashed_thread",
        "serve",
        "q1",
        "q2",
        "q3",
        "q4",
        "q5",
        "q6",
    }
    for name in ("PHRASES", "REFUND_TOOLS", "CANCEL_TOOLS", "REJECTIONS", "THREADS", "Q1_CASES", "Q6_CASES"):
        assert type(getattr(lab19, name)) is tuple


def test_every_draw_holds_every_hard_case():
    for seed in range(60):
        lookups = lab19._draw_lookups(labs.rng(seed))
        assert len(lookups.batch) >= 5 and lookups.later
        approval = lab19._draw_approval(labs.rng(seed))
        roles = sorted(c.role for c in approval.calls)
        assert roles == ["approved", "failing", "lookup", "lookup", "rejected"]
        rejection = next(c.answer for c in approval.calls if c.role == "rejected")
        assert rejection not in ("no", "yes") and approval.cancel not in ("refund_order",)
        notes = lab19._draw_notes(labs.rng(seed))
        first = notes.questions[0][0][0]
        assert len(first) >= 5 and len(set(first)) == len(first) - 2  # two texts twice
        assert any(a == b for a, b in zip(first, first[1:], strict=False))  # one repeat in a row
        assert any(first.index(t) + 1 < len(first) - 1 - first[::-1].index(t) for t in first)  # one apart
        assert len(notes.questions) == 2 and len(notes.questions[0][0]) == 2
        limits = lab19._draw_limits(labs.rng(seed))
        assert len(limits.long) == lab19.MAX_MODEL_CALLS - 1 and len(limits.hooks) >= 3
        assert len(limits.runaway_hooks) != len(limits.hooks)
        offer = lab19._draw_offer(labs.rng(seed))
        assert sorted(about for _, about in offer.questions) == [False] * 3 + [True] * 3
        assert any("ship" in text for text, about in offer.questions if not about)
        assert not offer.tracker.startswith("track")


# == q1: lookups that overlap ===========================================================================
def to_thread(fetch):
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return await asyncio.to_thread(fetch, order_id)

    return lookup_order


def run_in_executor(fetch):
    async def lookup(order_id: str) -> str:
        return await asyncio.get_running_loop().run_in_executor(None, fetch, order_id)

    return StructuredTool.from_function(
        coroutine=lookup, name="order_lookup", description="Look up an order."
    )


def structured_sync(fetch):
    def status(order_id: str) -> str:
        return fetch(order_id)

    return StructuredTool.from_function(status, name="order_status", description="An order's status.")


class OrderArgs(BaseModel):
    order_id: str


def class_based(fetch):
    class Lookup(BaseTool):
        name: str = "lookup_order"
        description: str = "Look up an order."
        args_schema: type[BaseModel] = OrderArgs

        def _run(self, order_id: str) -> str:
            return fetch(order_id)

    return Lookup()


def blocking_async(fetch):  # the shipped tool
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return fetch(order_id)

    return lookup_order


def yields_first(fetch):  # an await before the blocking call changes nothing
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        await asyncio.sleep(0)
        return fetch(order_id)

    return lookup_order


def locked(fetch):  # "thread safety" for a client that needs none
    lock = threading.Lock()

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        with lock:
            return fetch(order_id)

    return lookup_order


def one_worker(fetch):  # its own executor, of one thread
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return await asyncio.get_running_loop().run_in_executor(pool, fetch, order_id)

    return lookup_order


def fire_and_forget(fetch):  # returns at once, the fetch in the background
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        threading.Thread(target=fetch, args=(order_id,), daemon=True).start()
        return f"looking up {order_id}"

    return lookup_order


def fetches_twice(fetch):  # "checks" the order first
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        fetch(order_id)
        return fetch(order_id)

    return lookup_order


def renamed_argument(fetch):  # the model sends order_id
    @tool
    def lookup_order(order: str) -> str:
        """Look up an order."""
        return fetch(order)

    return lookup_order


def dict_result(fetch):
    @tool
    def lookup_order(order_id: str) -> dict:
        """Look up an order."""
        return {"order": order_id, "status": fetch(order_id)}

    return lookup_order


def returns_the_function(fetch):
    def lookup_order(order_id: str) -> str:
        return fetch(order_id)

    return lookup_order


def test_lab19_q1_verdicts(sol):
    answers = {
        "solution": sol["make_lookup_tool"],
        "to-thread": to_thread,
        "run-in-executor": run_in_executor,
        "structured-sync": structured_sync,
        "class-based": class_based,
        "blocking-async": blocking_async,
        "await-then-block": yields_first,
        "lock": locked,
        "one-worker": one_worker,
        "fire-and-forget": fire_and_forget,
        "fetches-twice": fetches_twice,
        "renamed-argument": renamed_argument,
        "dict-result": dict_result,
        "not-a-tool": returns_the_function,
    }
    assert_verdicts(
        verdicts(lab19.check_lookups, answers),
        {
            "solution": (),
            "to-thread": (),
            "run-in-executor": (),
            "structured-sync": (),
            "class-based": (),
            "blocking-async": ("did not overlap", "async def", "at most 1 in flight"),
            "await-then-block": ("did not overlap", "holds the event loop"),
            "lock": ("did not overlap", "one call in at a time"),
            "one-worker": ("did not overlap", "one-worker executor"),
            "fire-and-forget": ("not what the service returned", "looking up"),
            "fetches-twice": ("fetched more than once",),
            "renamed-argument": ("not what the service returned", "order"),
            "dict-result": ("not what the service returned",),
            "not-a-tool": ("did not return a tool",),
        },
    )


def four_workers(fetch):  # an executor sized to "four lookups"
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return await asyncio.get_running_loop().run_in_executor(pool, fetch, order_id)

    return lookup_order


def test_lab19_q1_refuses_a_four_worker_executor_on_every_seed():
    for seed in range(6):
        with pytest.raises(CheckFailed, match="did not overlap"):
            lab19.check_lookups(four_workers, seed=seed)


def writes_the_record(fetch):  # blocks the loop, then writes what the check would read
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        fetch.patient = False
        result = fetch(order_id)
        fetch.most = 99
        return result

    return lookup_order


def reads_the_answers(fetch):  # never calls the service: reads the answer off what it is handed
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        fetch.most = 99
        return fetch.status[order_id]

    return lookup_order


def test_lab19_q1_what_the_learner_is_handed_records_nothing():
    for seed in range(3):
        for wrong in (writes_the_record, reads_the_answers):
            with pytest.raises(CheckFailed):
                lab19.check_lookups(wrong, seed=seed)


def blocks_before_the_hand_off(fetch):  # a blocking "auth" call on the loop, then the fetch in a thread
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        time.sleep(0.25)
        return await asyncio.to_thread(fetch, order_id)

    return lookup_order


def blocks_after_the_hand_off(fetch):  # the fetch in a thread, then a blocking "audit log" call on the loop
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        status = await asyncio.to_thread(fetch, order_id)
        time.sleep(0.05)
        return status

    return lookup_order


def awaits_then_hands_off(fetch):  # a real await first (it yields the loop), then the fetch in a thread
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        await asyncio.sleep(0.01)
        return await asyncio.to_thread(fetch, order_id)

    return lookup_order


def own_pool(fetch):  # its own executor, wide enough, its threads started as the calls come
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=16)

    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return await asyncio.wrap_future(pool.submit(fetch, order_id))

    return lookup_order


def test_lab19_q1_refuses_a_loop_blocked_around_the_hand_off():
    """The check's service waits for the turn's calls, so a tool that blocks the loop before handing the
    fetch off still gets them all in flight: the loop's time inside the tool, timed per call, refuses it."""
    answers = {
        "blocks-before": blocks_before_the_hand_off,
        "blocks-after": blocks_after_the_hand_off,
        "awaits-then-hands-off": awaits_then_hands_off,
        "own-pool": own_pool,
    }
    held = ("held the event loop in 6 of 6 calls", "`time.sleep`", "before or after the fetch is handed off")
    assert_verdicts(
        verdicts(lab19.check_lookups, answers),
        {"blocks-before": held, "blocks-after": held, "awaits-then-hands-off": (), "own-pool": ()},
    )


def switches_the_timer_off(fetch):  # hides a blocked loop from the check's profile function
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        sys.setprofile(None)
        time.sleep(0.05)
        return await asyncio.to_thread(fetch, order_id)

    return lookup_order


def test_lab19_q1_refuses_a_tool_that_switches_the_loop_timer_off():
    with pytest.raises(CheckFailed, match="timer of the event loop was switched off"):
        lab19.check_lookups(switches_the_timer_off)


def generator_exit_in_the_tool(fetch):
    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        raise GeneratorExit("closing")

    return lookup_order


def generator_exit_in_the_coroutine(fetch):
    @tool
    async def lookup_order(order_id: str) -> str:
        """Look up an order."""
        raise GeneratorExit("closing")

    return lookup_order


@pytest.mark.parametrize("make", [generator_exit_in_the_tool, generator_exit_in_the_coroutine])
def test_lab19_q1_names_a_tools_generator_exit(make):
    """Under ainvoke langgraph ends the run with "coroutine ignored GeneratorExit": the verdict names the
    learner's own GeneratorExit, and its line, from a sync tool and from a coroutine."""
    message = rejected(lab19.q1, {"make_lookup_tool": make}, "your code raised GeneratorExit")
    assert "RuntimeError" not in message and "raise GeneratorExit" in message, message


# == q2: an approval that pauses ========================================================================
def _needs(request):
    return (request.tool.metadata or {}).get("requires_approval")


def _ask(request):
    call = request.tool_call
    return interrupt({"call": call["id"], "tool": call["name"], "args": call["args"]})


def _refuse(request, answer):
    return ToolMessage(f"refused: {answer}", tool_call_id=request.tool_call["id"], status="error")


def _failed(request, error):
    return ToolMessage(f"failed: {error!r}", tool_call_id=request.tool_call["id"], status="error")


def bubble_up(request, handler):
    try:
        if _needs(request):
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except GraphBubbleUp:
        raise
    except Exception as error:
        return _failed(request, error)


def ask_outside_try(request, handler):
    if _needs(request):
        answer = _ask(request)
        if str(answer).strip().lower() != "yes":
            return _refuse(request, answer)
    try:
        return handler(request)
    except Exception as error:
        return _failed(request, error)


def isinstance_reraise(request, handler):
    try:
        if _needs(request) and _ask(request) != "yes":
            return _refuse(request, "no")
        return handler(request)
    except Exception as error:
        if isinstance(error, GraphInterrupt):
            raise
        return _failed(request, error)


def narrow_except(request, handler):
    try:
        if _needs(request):
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except (RuntimeError, OSError, ValueError) as error:  # the services' errors, not the pause
        return _failed(request, error)


def swallowed(request, handler):  # the shipped wrapper
    try:
        if _needs(request):
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except Exception as error:
        return _failed(request, error)


def base_exception(request, handler):
    try:
        if _needs(request):
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except BaseException as error:
        return _failed(request, error)


def no_try(request, handler):
    if _needs(request):
        answer = _ask(request)
        if answer != "yes":
            return _refuse(request, answer)
    return handler(request)


def ask_after_running(request, handler):  # asks about what already happened
    try:
        result = handler(request)
    except Exception as error:
        result = _failed(request, error)
    if _needs(request) and _ask(request) != "yes":
        return _refuse(request, "no")
    return result


def only_no_refuses(request, handler):
    try:
        if _needs(request) and _ask(request) == "no":
            return _refuse(request, "no")
        return handler(request)
    except GraphInterrupt:
        raise
    except Exception as error:
        return _failed(request, error)


def keyed_on_name(request, handler):
    try:
        if request.tool_call["name"] == "refund_order":
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except GraphInterrupt:
        raise
    except Exception as error:
        return _failed(request, error)


def asks_for_everything(request, handler):
    try:
        answer = _ask(request)
        if answer != "yes":
            return _refuse(request, answer)
        return handler(request)
    except GraphInterrupt:
        raise
    except Exception as error:
        return _failed(request, error)


def own_question(request, handler):
    try:
        if _needs(request):
            answer = interrupt(f"Approve {request.tool_call['name']}?")
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except GraphInterrupt:
        raise
    except Exception as error:
        return _failed(request, error)


def lookups_broken(request, handler):  # metadata[...] raises for a lookup (its metadata is None)
    try:
        if request.tool.metadata["requires_approval"]:
            answer = _ask(request)
            if answer != "yes":
                return _refuse(request, answer)
        return handler(request)
    except GraphBubbleUp:
        raise
    except Exception as error:
        return _failed(request, error)


def refuses_lookups(request, handler):  # only calls that need approval ever run
    if not _needs(request):
        return ToolMessage("not allowed", tool_call_id=request.tool_call["id"], status="error")
    answer = _ask(request)
    if answer != "yes":
        return _refuse(request, answer)
    try:
        return handler(request)
    except Exception as error:
        return _failed(request, error)


def lookup_answer_swallowed(request, handler):  # runs a lookup, answers it with something else
    if not _needs(request):
        handler(request)
        return ToolMessage("ok", tool_call_id=request.tool_call["id"])
    answer = _ask(request)
    if answer != "yes":
        return _refuse(request, answer)
    try:
        return handler(request)
    except Exception as error:
        return _failed(request, error)


def test_lab19_q2_refuses_broken_lookups_on_every_seed():
    for seed in range(3):
        for wrong in (lookups_broken, refuses_lookups, lookup_answer_swallowed):
            with pytest.raises(CheckFailed, match="was not run and answered as it is"):
                lab19.check_approval(wrong, seed=seed)


def test_lab19_q2_verdicts(sol):
    answers = {
        "solution": sol["approve_refunds"],
        "bubble-up": bubble_up,
        "ask-outside-try": ask_outside_try,
        "isinstance-reraise": isinstance_reraise,
        "narrow-except": narrow_except,
        "swallowed": swallowed,
        "base-exception": base_exception,
        "no-try": no_try,
        "ask-after-running": ask_after_running,
        "only-no-refuses": only_no_refuses,
        "keyed-on-name": keyed_on_name,
        "asks-for-everything": asks_for_everything,
        "own-question": own_question,
    }
    assert_verdicts(
        verdicts(lab19.check_approval, answers),
        {
            "solution": (),
            "bubble-up": (),
            "ask-outside-try": (),
            "isinstance-reraise": (),
            "narrow-except": (),
            "swallowed": ("never paused", "GraphInterrupt", "not judged"),
            "base-exception": ("never paused", "GraphInterrupt"),
            "no-try": ("did not become an error answer", "ServiceError"),
            "ask-after-running": ("ran before the reviewer answered",),
            "only-no-refuses": ("was not refused", "answer != 'yes'"),
            "keyed-on-name": ("metadata", "not by a name"),
            "asks-for-everything": ("asked about 1 time(s)", "none for the lookups"),
            "own-question": ("could not tell which call", "'call'"),
        },
    )


def raises_its_own(request, handler):  # its own bug, before anything is asked
    raise ValueError("approval service not configured")


def raises_after_the_answer(request, handler):  # asks, then its own bug on the resume
    if _needs(request):
        _ask(request)
        raise ValueError("unknown answer format")
    return handler(request)


def returns_no_message(request, handler):  # returns what is not a tool answer
    return {"ok": True}


def prints_then_raises(request, handler):
    print("checking the refund")
    raise ValueError("approval service not configured")


def test_lab19_q2_names_the_wrappers_own_exception():
    """A run that the learner's wrapper crashed is explained as that, not as a tool that ran before its
    question, nor as a wrong refusal; an object the library cannot take is named as such."""
    results = verdicts(
        lab19.check_approval,
        {"raises": raises_its_own, "after-answer": raises_after_the_answer, "no-message": returns_no_message},
    )
    assert_verdicts(
        results,
        {
            "raises": ("crashed before any question", "your code raised ValueError", "from your own code"),
            "after-answer": ("crashed after 1 pause(s)", "your code raised ValueError", "from your own code"),
            "no-message": ("crashed before any question", "the library failed on what your wrapper"),
        },
    )
    for message in results.values():
        assert "a tool ran before its question" not in message and "answer != 'yes'" not in message, message


def test_lab19_q2_library_noise_is_not_the_learners_output():
    """When the wrapper raises, langgraph sometimes logs a late callback's error on stderr (about one run
    in two here); the verdict shows what the learner's code printed, and only that."""
    for _ in range(6):
        message = rejected(lab19.q2, {"approve_refunds": raises_its_own}, "from your own code")
        assert "printed" not in message and "exception calling callback" not in message, message
    printing = {"approve_refunds": prints_then_raises}
    rejected(lab19.q2, printing, "your code printed", "| checking the refund")


# == q3: notes written at once ===========================================================================
class AddState(AgentState):
    notes: Annotated[list[str], operator.add]


def merge(old, new):
    return (old or []) + (new or [])


class MergeState(AgentState):
    notes: Annotated[list[str], merge]


def either(old, new):
    return old + ([new] if isinstance(new, str) else list(new))


class EitherState(AgentState):
    notes: Annotated[list[str], either]


def keep_last(old, new):
    return new


class LastState(AgentState):
    notes: Annotated[list[str], keep_last]


class PlainState(AgentState):
    notes: list[str]


def no_repeats(old, new):
    return list(dict.fromkeys(old + new))


class UniqueState(AgentState):
    notes: Annotated[list[str], no_repeats]


def no_consecutive(old, new):  # drops a note only when it repeats the one before
    out = list(old)
    for text in new:
        if not out or out[-1] != text:
            out.append(text)
    return out


class ConsecutiveState(AgentState):
    notes: Annotated[list[str], no_consecutive]


def test_lab19_q3_refuses_dropping_consecutive_repeats_on_every_seed():
    for seed in range(5):
        with pytest.raises(CheckFailed, match="notes were lost"):
            lab19.check_notes(ConsecutiveState, own_note, seed=seed)


def as_tuple(old, new):
    return tuple(old) + tuple(new)


class TupleState(AgentState):
    notes: Annotated[list[str], as_tuple]


@tool
def own_note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Add a note."""
    return Command(update={"notes": [text], "messages": [ToolMessage("noted", tool_call_id=tool_call_id)]})


@tool
def runtime_note(text: str, runtime: ToolRuntime) -> Command:
    """Add a note."""
    return Command(
        update={"notes": [text], "messages": [ToolMessage("ok", tool_call_id=runtime.tool_call_id)]}
    )


@tool
def str_note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Add a note."""
    return Command(update={"notes": text, "messages": [ToolMessage("noted", tool_call_id=tool_call_id)]})


@tool
def read_then_write(
    text: str, state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
) -> Command:
    """Add a note (the shipped tool)."""
    notes = state.get("notes", []) + [text]
    return Command(update={"notes": notes, "messages": [ToolMessage("noted", tool_call_id=tool_call_id)]})


KEPT: list[str] = []


@tool
def module_list(text: str) -> str:
    """Add a note to a list of our own."""
    KEPT.append(text)
    return "noted"


@tool
def no_answer(text: str) -> Command:
    """Add a note, answering nothing."""
    return Command(update={"notes": [text]})


def hangs_note():
    @tool
    def add_note(text: str) -> str:
        """Add a note, waiting for a database that never answers."""
        threading.Event().wait(20)
        return "noted"

    return add_note


def test_lab19_q3_verdicts(sol):
    answers = {
        "solution": (sol["SupportState"], sol["add_note"]),
        "own-reducer": (MergeState, own_note),
        "tool-runtime": (AddState, runtime_note),
        "reducer-takes-a-str": (EitherState, str_note),
        "shipped": (LastState, read_then_write),
        "add-and-read-state": (AddState, read_then_write),
        "keep-last-own-note": (LastState, own_note),
        "no-reducer": (PlainState, own_note),
        "no-repeats": (UniqueState, own_note),
        "module-list": (AddState, module_list),
        "command-without-answer": (AddState, no_answer),
        "tuple-reducer": (TupleState, own_note),
        "not-a-tool": (AddState, lambda text: "noted"),
    }
    assert_verdicts(
        verdicts(lambda pair: lab19.check_notes(*pair), answers),
        {
            "solution": (),
            "own-reducer": (),
            "tool-runtime": (),
            "reducer-takes-a-str": (),
            "shipped": ("notes were lost", "keeps the last value"),
            "add-and-read-state": ("written twice", "return only the new note"),
            "keep-last-own-note": ("notes were lost", "keeps the last value"),
            "no-reducer": ("crashed", "one value per step"),
            "no-repeats": ("notes were lost", "drops repeats"),
            "module-list": ("no note reached the thread", "a list of your own is not the thread's"),
            "command-without-answer": ("crashed", "must answer its own call"),
            "tuple-reducer": ("a tuple, not a list",),
            "not-a-tool": ("is not a tool",),
        },
    )


def test_lab19_q3_a_hang_is_cut(monkeypatch):
    monkeypatch.setattr(labs, "LIMIT", 1.0)
    rejected(lab19.q3, {"SupportState": AddState, "add_note": hangs_note()}, "did not return within 1 s")


def raising_reducer(old, new):  # its own bug: a reducer that checks too much
    raise ValueError("a note must be unique")


class RaisingState(AgentState):
    notes: Annotated[list[str], raising_reducer]


@tool
def lowered_note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Add a note, "normalised"."""
    answer = ToolMessage("noted", tool_call_id=tool_call_id)
    return Command(update={"notes": [text.lower()], "messages": [answer]})


def test_lab19_q3_names_the_learners_own_mistake():
    """A reducer of the learner's that raises is named as their code, not as the agent failing; notes
    that come back empty say that no note reached the thread (module-list, above); changed texts, changed."""
    assert_verdicts(
        verdicts(
            lambda pair: lab19.check_notes(*pair),
            {"raising": (RaisingState, own_note), "lowered": (AddState, lowered_note)},
        ),
        {
            "raising": ("question 1 crashed", "your code raised ValueError", "from your own code"),
            "lowered": ("notes were changed", "as it is"),
        },
    )


# == q4: a crashed thread =================================================================================
TEXT = "not completed: the tool step crashed; it may have run"


def in_order_two_passes(graph, config):
    messages = graph.get_state(config).values["messages"]
    by_call = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    ordered = []
    for message in (m for m in messages if not isinstance(m, ToolMessage)):
        ordered.append(message)
        if isinstance(message, AIMessage):
            ordered += [
                by_call.get(c["id"], ToolMessage(TEXT, tool_call_id=c["id"], status="error"))
                for c in message.tool_calls
            ]
    graph.update_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *ordered]}, as_node="tools"
    )


def only_when_needed(graph, config):
    messages = graph.get_state(config).values["messages"]
    if not unanswered_tool_calls(messages):
        return
    in_order_two_passes(graph, config)


def shipped_repair(graph, config):
    messages = graph.get_state(config).values["messages"]
    late = [
        ToolMessage("not completed", tool_call_id=i, status="error") for i in unanswered_tool_calls(messages)
    ]
    graph.update_state(config, {"messages": late}, as_node="tools")


def resume(graph, config):
    try:
        graph.invoke(None, config)
    except Exception:
        pass


def delete_the_call(graph, config):
    messages = graph.get_state(config).values["messages"]
    kept = [m for m in messages if not getattr(m, "tool_calls", None)]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}, as_node="tools")


def says_done(graph, config):
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    repaired = []
    for message in (m for m in messages if not isinstance(m, ToolMessage)):
        repaired.append(message)
        for call in getattr(message, "tool_calls", []):
            repaired.append(answers.get(call["id"]) or ToolMessage("done", tool_call_id=call["id"]))
    graph.update_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, as_node="tools"
    )


def every_call_an_error(graph, config):
    messages = graph.get_state(config).values["messages"]
    repaired = []
    for message in (m for m in messages if not isinstance(m, ToolMessage)):
        repaired.append(message)
        for call in getattr(message, "tool_calls", []):
            repaired.append(ToolMessage(TEXT, tool_call_id=call["id"], status="error"))
    graph.update_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, as_node="tools"
    )


def appended_all(graph, config):  # keeps the answers, but at the end
    messages = graph.get_state(config).values["messages"]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    kept = [m for m in messages if isinstance(m, ToolMessage)]
    late = [
        ToolMessage(TEXT, tool_call_id=i, status="error")
        for i in unanswered_tool_calls(messages)
        if i not in answered
    ]
    rest = [m for m in messages if not isinstance(m, ToolMessage)]
    graph.update_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rest, *kept, *late]}, as_node="tools"
    )


def test_lab19_q4_verdicts(sol):
    answers = {
        "solution": sol["repair"],
        "in-order-two-passes": in_order_two_passes,
        "only-when-needed": only_when_needed,
        "shipped": shipped_repair,
        "resume": resume,
        "delete-the-call": delete_the_call,
        "says-done": says_done,
        "every-call-an-error": every_call_an_error,
        "appended-all": appended_all,
    }
    assert_verdicts(
        verdicts(lab19.check_repair, answers),
        {
            "solution": (),
            "in-order-two-passes": (),
            "only-when-needed": (),
            "shipped": ("not every call has exactly one answer", "refused by the provider"),
            "resume": ("a tool ran again",),
            "delete-the-call": ("lost or reordered",),
            "says-done": ("success answer",),
            "every-call-an-error": ("was replaced",),
            "appended-all": ("refused by the provider",),
        },
    )


def _error_answers(text):
    def repair(graph, config):
        messages = graph.get_state(config).values["messages"]
        answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        repaired = []
        for message in (m for m in messages if not isinstance(m, ToolMessage)):
            repaired.append(message)
            for call in getattr(message, "tool_calls", []):
                answer = answers.get(call["id"]) or ToolMessage(text, tool_call_id=call["id"], status="error")
                repaired.append(answer)
        graph.update_state(
            config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, as_node="tools"
        )

    return repair


def repair_raises(graph, config):  # its own bug
    raise ValueError("no thread to repair")


def test_lab19_q4_an_error_answer_says_the_call_may_not_have_completed():
    """The status alone is not the rule: the model reads the text. An error answer that is only a claim
    of success, or empty, is refused; honest texts pass however they are worded, in any language (a
    check cannot judge every sentence: labs/README.md)."""
    answers = {
        "says-done": _error_answers("done"),
        "says-sent": _error_answers("Sent!"),
        "tick": _error_answers("✅"),
        "ok": _error_answers("OK."),
        "empty": _error_answers(""),
        "blank": _error_answers("   "),
        "failed-unknown": _error_answers("Tool call failed; outcome unknown."),
        "did-not-complete": _error_answers("The tool step crashed, so this call didn\u2019t complete."),
        "cannot-confirm": _error_answers("cannot confirm the notification went out"),
        "timed-out": _error_answers("Timed out"),
        "chinese": _error_answers("未完成：工具步骤崩溃，可能已执行"),
        "error": _error_answers("Error: interrupted"),
        "raises": repair_raises,
    }
    assert_verdicts(
        verdicts(lab19.check_repair, answers),
        {
            "says-done": ("an error answer claims the call was done", "'done' [error]"),
            "says-sent": ("an error answer claims the call was done",),
            "tick": ("an error answer claims the call was done",),
            "ok": ("an error answer claims the call was done",),
            "empty": ("an error answer says nothing",),
            "blank": ("an error answer says nothing",),
            "failed-unknown": (),
            "did-not-complete": (),
            "cannot-confirm": (),
            "timed-out": (),
            "chinese": (),
            "error": (),
            "raises": ("`repair` raised", "your code raised ValueError", "from your own code"),
        },
    )


# == q5: limits ==========================================================================================
N = lab19.MAX_MODEL_CALLS


def roomy(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(run_limit=N)
    agent = create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)
    return agent.with_config(recursion_limit=1000)


def limit_first(model, tools, middleware, checkpointer):
    return create_agent(
        model,
        tools,
        middleware=[ModelCallLimitMiddleware(run_limit=N, exit_behavior="end"), *middleware],
        checkpointer=checkpointer,
    )


def with_tool_budget(model, tools, middleware, checkpointer):
    limits = [ModelCallLimitMiddleware(run_limit=N), ToolCallLimitMiddleware(run_limit=200)]
    return create_agent(model, tools, middleware=list(middleware) + limits, checkpointer=checkpointer)


def shipped_limits(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(thread_limit=N)
    agent = create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)
    return agent.with_config(recursion_limit=2 * N + 1)


def per_thread(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(thread_limit=N)
    return create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)


def per_run_few_steps(model, tools, middleware, checkpointer):
    return roomy(model, tools, middleware, checkpointer).with_config(recursion_limit=2 * N + 1)


def steps_only(model, tools, middleware, checkpointer):
    return create_agent(model, tools, middleware=middleware, checkpointer=checkpointer).with_config(
        recursion_limit=200
    )


def one_short(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(run_limit=N - 1)
    return create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)


def one_over(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(run_limit=N + 1)
    return create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)


def raises_at_limit(model, tools, middleware, checkpointer):
    limit = ModelCallLimitMiddleware(run_limit=N, exit_behavior="error")
    return create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)


def drops_middleware(model, tools, middleware, checkpointer):
    return create_agent(
        model, tools, middleware=[ModelCallLimitMiddleware(run_limit=N)], checkpointer=checkpointer
    )


def counts_tool_calls(model, tools, middleware, checkpointer):
    limit = ToolCallLimitMiddleware(run_limit=N - 1, exit_behavior="end")
    return create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)


def test_lab19_q5_verdicts(sol):
    answers = {
        "solution": sol["build_limited_agent"],
        "roomy-recursion-limit": roomy,
        "limit-first": limit_first,
        "with-a-tool-budget": with_tool_budget,
        "shipped": shipped_limits,
        "per-thread": per_thread,
        "per-run-few-steps": per_run_few_steps,
        "steps-only": steps_only,
        "one-short": one_short,
        "one-over": one_over,
        "raises-at-limit": raises_at_limit,
        "drops-middleware": drops_middleware,
        "counts-tool-calls": counts_tool_calls,
    }
    assert_verdicts(
        verdicts(lab19.check_limits, answers),
        {
            "solution": (),
            "roomy-recursion-limit": (),
            "limit-first": (),
            "with-a-tool-budget": (),
            "shipped": ("stopped early", "GraphRecursionError", "hook"),
            "per-thread": ("second question on the thread was stopped early", "thread_limit"),
            "per-run-few-steps": ("stopped early", "counts steps"),
            "steps-only": ("not stopped in time", "a recursion limit raises instead"),
            "one-short": (f"a task of {N} model calls was stopped early",),
            "one-over": ("not stopped in time", f"{N + 1} model calls"),
            "raises-at-limit": ("not stopped in time", "ModelCallLimitExceededError"),
            "drops-middleware": ("did not run",),
            "counts-tool-calls": ("stopped early", "tool-call limit counts calls"),
        },
    )


def recursion_for_two_hooks(model, tools, middleware, checkpointer):  # steps sized for 2 hooks a turn
    n = lab19.MAX_MODEL_CALLS
    limit = ModelCallLimitMiddleware(run_limit=n)
    agent = create_agent(model, tools, middleware=[*middleware, limit], checkpointer=checkpointer)
    return agent.with_config(recursion_limit=5 * n)


def caught_recursion(model, tools, middleware, checkpointer):  # no model limit; the error swallowed
    from langgraph.errors import GraphRecursionError

    agent = create_agent(model, tools, middleware=middleware, checkpointer=checkpointer)
    agent = agent.with_config(recursion_limit=4 * lab19.MAX_MODEL_CALLS)

    class Caught:
        def invoke(self, inputs, config=None):
            try:
                return agent.invoke(inputs, config)
            except GraphRecursionError:
                return {"messages": [*agent.get_state(config).values["messages"], AIMessage("stopped")]}

    return Caught()


def test_lab19_q5_refuses_a_step_budget_on_every_seed():
    for seed in range(4):
        for wrong in (recursion_for_two_hooks, caught_recursion):
            with pytest.raises(CheckFailed, match="stopped early"):
                lab19.check_limits(wrong, seed=seed)


def first_hook_only(model, tools, middleware, checkpointer):  # keeps one of the hooks it was handed
    limit = ModelCallLimitMiddleware(run_limit=lab19.MAX_MODEL_CALLS)
    return create_agent(model, tools, middleware=[*middleware[:1], limit], checkpointer=checkpointer)


def test_lab19_q5_refuses_dropping_any_hook_on_every_seed():
    for seed in range(4):
        with pytest.raises(CheckFailed, match="did not run"):
            lab19.check_limits(first_hook_only, seed=seed)


def own_model(model, tools, middleware, checkpointer):  # answers each question at once, its own model
    answer = model.answer

    class Quick(ScriptedChatModel):
        def reply(self, messages, tools=None):
            return AIMessage(f"{answer} {sum(isinstance(m, HumanMessage) for m in messages)}")

    return create_agent(Quick(script=[]), tools, middleware=list(middleware), checkpointer=checkpointer)


def test_lab19_q5_refuses_an_agent_without_the_handed_model():
    for seed in range(3):
        with pytest.raises(CheckFailed, match="did not do the questions' work"):
            lab19.check_limits(own_model, seed=seed)


def raising_hook(model, tools, middleware, checkpointer):  # its own hook, with its own bug
    @before_model
    def trim(state, runtime):
        if len(state["messages"]) > 5:
            raise ValueError("history too long")

    limit = ModelCallLimitMiddleware(run_limit=N)
    return create_agent(model, tools, middleware=[*middleware, trim, limit], checkpointer=checkpointer)


def no_checkpointer(model, tools, middleware, checkpointer):  # the limit right, the thread not kept
    return create_agent(model, tools, middleware=[*middleware, ModelCallLimitMiddleware(run_limit=N)])


def test_lab19_q5_names_the_learners_own_mistake():
    """A hook of the learner's that raises is named as their code, not as a limit; an agent without the
    checkpointer it is handed is told so, not that a limit counts calls."""
    results = verdicts(lab19.check_limits, {"raising-hook": raising_hook, "no-checkpointer": no_checkpointer})
    assert_verdicts(
        results,
        {
            "raising-hook": ("your code raised ValueError", "not from a limit"),
            "no-checkpointer": ("without the first", "checkpointer=checkpointer"),
        },
    )
    assert "tool-call limit counts calls" not in results["raising-hook"], results["raising-hook"]
    assert "tool-call limit" not in results["no-checkpointer"], results["no-checkpointer"]
    assert "`model` and `tools` you are handed" not in results["no-checkpointer"], results["no-checkpointer"]


def hanging_hook(model, tools, middleware, checkpointer):  # its own hook waits for a lock nobody releases
    @before_model
    def wait(state, runtime):
        threading.Event().wait(4)

    limit = ModelCallLimitMiddleware(run_limit=N)
    return create_agent(model, tools, middleware=[*middleware, wait, limit], checkpointer=checkpointer)


def test_lab19_q5_a_hang_costs_one_time_limit(monkeypatch):
    """The check stops at the first question that hangs: one time limit, not one per question."""
    monkeypatch.setattr(lab19, "scaled_limit", lambda work, **kwargs: 1.0)
    started = time.monotonic()
    message = rejected(
        lab19.q5, {"build_limited_agent": hanging_hook}, "did not return within 1 s", "not tried"
    )
    assert time.monotonic() - started < 3.0, message  # three time limits would be 3 s at least


# == q6: offered and runnable ============================================================================
def _asked(request):
    return any("order" in m.text for m in request.messages if isinstance(m, HumanMessage))


def by_identity(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        keep = [t for t in request.tools if t is not tracker or _asked(request)]
        return handler(request.override(tools=keep))

    return create_agent(model, [*tools, tracker], middleware=[audit, offer])


class OfferTracking(AgentMiddleware):
    def __init__(self, tracker):
        super().__init__()
        self.tracker = tracker

    def wrap_model_call(self, request, handler):
        asked = any("order" in str(m.content).lower() for m in request.state["messages"] if m.type == "human")
        if asked:
            return handler(request)
        return handler(request.override(tools=[t for t in request.tools if t.name != self.tracker.name]))


def class_middleware(model, tools, tracker, audit):
    return create_agent(model, list(tools) + [tracker], middleware=[OfferTracking(tracker), audit])


def shipped_offer(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        return handler(
            request.override(tools=[*request.tools, tracker] if _asked(request) else request.tools)
        )

    return create_agent(model, tools, middleware=[offer, audit])


def always_offered(model, tools, tracker, audit):
    return create_agent(model, [*tools, tracker], middleware=[audit])


def registered_and_added(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        return handler(
            request.override(tools=[*request.tools, tracker] if _asked(request) else request.tools)
        )

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def literal_name(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        keep = [t for t in request.tools if t.name != "track_parcel" or _asked(request)]
        return handler(request.override(tools=keep))

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def inverted(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        keep = [t for t in request.tools if t.name != tracker.name or not _asked(request)]
        return handler(request.override(tools=keep))

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def audit_dropped(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        keep = [t for t in request.tools if t.name != tracker.name or _asked(request)]
        return handler(request.override(tools=keep))

    return create_agent(model, [*tools, tracker], middleware=[offer])


def added_without_audit(model, tools, tracker, audit):
    @wrap_model_call
    def offer(request, handler):
        return handler(
            request.override(tools=[*request.tools, tracker] if _asked(request) else request.tools)
        )

    return create_agent(model, tools, middleware=[offer])


def prefix_name(model, tools, tracker, audit):  # the tracker is "the tool whose name starts with track"
    @wrap_model_call
    def offer(request, handler):
        keep = [t for t in request.tools if not t.name.startswith("track") or _asked(request)]
        return handler(request.override(tools=keep))

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def where_detects(model, tools, tracker, audit):  # "about an order" = the question starts with Where
    @wrap_model_call
    def offer(request, handler):
        about = any(m.text.lower().startswith("where") for m in request.messages if m.type == "human")
        return handler(request.override(tools=[t for t in request.tools if t.name != tracker.name or about]))

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def ship_detects(model, tools, tracker, audit):  # "about an order" = mentions shipping or an order
    @wrap_model_call
    def offer(request, handler):
        about = any(
            "ship" in m.text.lower() or "order" in m.text.lower()
            for m in request.messages if m.type == "human"
        )
        return handler(request.override(tools=[t for t in request.tools if t.name != tracker.name or about]))

    return create_agent(model, [*tools, tracker], middleware=[offer, audit])


def test_lab19_q6_refuses_a_prefix_or_one_phrasing_on_every_seed():
    for seed in range(4):
        for wrong in (prefix_name, where_detects, ship_detects):
            with pytest.raises(CheckFailed, match="wrong tools"):
                lab19.check_offer(wrong, seed=seed)


def offering_own_model(model, tools, tracker, audit):  # ignores the model it is handed
    return create_agent(ScriptedChatModel(script=["Happy to help."]), [*tools, tracker], middleware=[audit])


def test_lab19_q6_refuses_an_agent_without_the_handed_model():
    for seed in range(3):
        with pytest.raises(CheckFailed, match="did not answer"):
            lab19.check_offer(offering_own_model, seed=seed)


def test_lab19_q6_verdicts(sol):
    answers = {
        "solution": sol["build_offering_agent"],
        "by-identity": by_identity,
        "class-middleware": class_middleware,
        "shipped": shipped_offer,
        "always-offered": always_offered,
        "registered-and-added": registered_and_added,
        "literal-name": literal_name,
        "inverted": inverted,
        "audit-dropped": audit_dropped,
        "added-without-audit": added_without_audit,
    }
    assert_verdicts(
        verdicts(lab19.check_offer, answers),
        {
            "solution": (),
            "by-identity": (),
            "class-middleware": (),
            "shipped": ("could not run", "not a valid tool"),
            "always-offered": ("wrong tools", "only for a question about an order"),
            "registered-and-added": ("offered a tool twice",),
            "literal-name": ("wrong tools", "a name you typed"),
            "inverted": ("wrong tools",),
            "audit-dropped": ("audit middleware did not see every call",),
            "added-without-audit": ("Middleware added tools",),
        },
    )


# == learner exceptions, whatever they are ==================================================================
@pytest.mark.parametrize("kind", [SystemExit, GeneratorExit, KeyboardInterrupt])
def test_lab19_a_learner_exception_is_a_verdict(kind):
    def make_lookup_tool(fetch):
        raise kind("out")

    def approve_refunds(request, handler):  # raised inside the agent's run, from a tool-call wrapper
        raise kind("out")

    for exercise, namespace in (
        (lab19.q1, {"make_lookup_tool": make_lookup_tool}),
        (lab19.q2, {"approve_refunds": approve_refunds}),
    ):
        with pytest.raises(CheckFailed) as info:
            exercise.check(namespace)
        message = str(info.value)
        if kind is KeyboardInterrupt:
            assert type(info.value) is CheckStopped and "check stopped: KeyboardInterrupt" in message, message
        else:
            assert "not yet" in message and kind.__name__ in message, message
        assert "Traceback" not in message

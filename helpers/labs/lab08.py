"""Lab 08 — Guard dangerous tools (after `notebooks/08_interceptors.ipynb`).

q1: `build_graph(model, tools, checkpointer)`: the llm → tools loop with an approval step. A tool
    whose `metadata` says `{"requires_approval": True}` runs only after a human approved that call
    through `interrupt()` / `Command(resume="yes")`; anything else rejects it, and the model is told.
    The approval cannot be bypassed — sync `invoke` or async `ainvoke`, a dangerous tool under another
    name, a batch with other calls, a later turn — and resuming does not re-run side effects (an email
    is sent once). Inside the ToolNode a dangerous call runs only if its own id was approved.

The check draws one scenario per check (`draw_scenario`) and plays each of its eight cases on a real
graph with a checkpointer, counting what the tools really did as they ran (a recorder the check
owns). What every check plays, whatever the draw:

- approve under `invoke` a batch with TWO deletions (a one-use approval lets only one through);
- approve under `ainvoke` while a second thread of the same graph waits for its own answer, then
  reject that one (an approval kept outside the thread, or a flag never reset, lets it through);
- reject with "no", with every other answer of `REJECTIONS` ("not now", "", "n", "cancel", …; which
  case gets which is drawn) and with one answer drawn per check ("wait 3f0a"), so a guard that refuses
  only "no", or only a list of refusals, fails;
- a dangerous tool under a name drawn per check (never a name the lab's text shows);
- a batch with nothing dangerous — beside a harmless tool under a drawn name whose metadata says
  `requires_approval: False` — that must not pause;
- a second dangerous turn in one thread (asked again);
- the ToolNode alone, handed a dangerous call nobody approved: while an approval is still pending,
  and right after an approved turn (the approved batch again under new ids, so approval by flag, by
  position or by file fails).

Paths, cities, ids and the drawn names are random; every run has a time limit. Each case is a small
module-level function (`play_*`) over the drawn `Scenario`; each judgement of a turn is one
(`case_*`).
"""

from __future__ import annotations

import functools
import inspect
import random
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command

from helpers import labs
from helpers.cities import WEATHER
from helpers.history import unanswered_tool_calls
from helpers.labs import Cases, CheckFailed, Exercise, distinct, fail, record_failure, run_learner, section
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.tools import make_city_tools

LESSON = "08_interceptors"
APPROVAL: Mapping[str, bool] = MappingProxyType({"requires_approval": True})
"""The metadata a dangerous tool carries."""
LIMIT: float | None = None
"""Seconds one run of the learner's graph may take before a hang is reported (None: labs.LIMIT)."""
APPROVAL_HEADING = "3. Human approval with `interrupt()`"
RESUME_HEADING = "3.1 What a resume re-runs"
SYNC_PITFALL = "5.1 Only `awrap_tool_call`, then sync `invoke`: the wrapper is silently skipped"
PITFALLS = "5. The two interceptor pitfalls"
VERBS = ("purge", "wipe", "drop", "erase", "shred", "scrub", "truncate", "evict", "flush", "nuke")
OBJECTS = ("cache", "disk", "table", "bucket", "logs", "index", "queue", "backups", "volume", "archive")
"""A renamed tool is `<verb>_<object>_<4 hex digits>`, drawn per check: never a name in the lab's text."""
REJECTIONS = ("not now", "", "cancel", "No", "reject", "n", "later", "deny", "no thanks", "stop")
"""Answers other than "yes" the check rejects with: "no" and every one of these, every check (their
order, so which case gets which, is drawn), and one more drawn per check (`HOLDS`)."""
HOLDS = ("hold", "wait", "skip", "pause", "abort", "halt", "park", "defer")
"""A drawn answer is `<one of these> <4 hex digits>`: a list of refusals typed in misses it."""


class Effects:
    """What the tools really did, in order: files deleted, emails sent (thread-safe)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def add(self, kind: str, value: str) -> None:
        with self._lock:
            getattr(self, kind).append(value)


@functools.cache
def _schemas() -> Mapping[str, Any]:
    """The tools' argument schemas, built once (pydantic models are slow to create)."""

    def send_email(to: str, text: str) -> str:
        """Send an email (a side effect that must happen once)."""

    def delete(path: str) -> str:
        """Delete a file for good."""

    def summarise(text: str) -> str:
        """Summarise a text."""

    weather = make_city_tools(delay=0, sync=True)[0]
    return MappingProxyType(
        {
            "weather": weather,
            "send_email": StructuredTool.from_function(send_email).args_schema,
            "delete": StructuredTool.from_function(delete).args_schema,
            "harmless": StructuredTool.from_function(summarise).args_schema,
        }
    )


def make_tools(
    effects: Effects | None = None, *, delete_name: str = "delete_file", harmless_name: str | None = None
) -> list[BaseTool]:
    """`[lookup_weather, send_email, <delete tool>]` (and a harmless tool named `harmless_name`, whose
    metadata says `requires_approval: False`); the delete tool carries `metadata={"requires_approval":
    True}` whatever its name. Sync tools: they run under `invoke` and `ainvoke`."""
    effects = effects if effects is not None else Effects()
    schemas = _schemas()

    def send_email(to: str, text: str) -> str:
        effects.add("sent", to)
        return f"sent to {to}"

    def delete(path: str) -> str:
        effects.add("deleted", path)
        return f"deleted {path}"

    tools: list[BaseTool] = [
        schemas["weather"],
        StructuredTool(
            name="send_email",
            description="Send an email (a side effect that must happen once).",
            func=send_email,
            args_schema=schemas["send_email"],
        ),
        StructuredTool(
            name=delete_name,
            description="Delete a file for good.",
            func=delete,
            args_schema=schemas["delete"],
            metadata=dict(APPROVAL),
        ),
    ]
    if harmless_name:
        tools.append(
            StructuredTool(
                name=harmless_name,
                description="Summarise a text.",
                func=lambda text: text[:20],
                args_schema=schemas["harmless"],
                metadata={"requires_approval": False},
            )
        )
    return tools


# -- the scenario: drawn once per check, the hard cases every time -------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """One check's draw: the dangerous tool's other name, a harmless tool's name, the rejections."""

    renamed: str
    harmless: str
    rejections: tuple[str, ...]  # "no", every answer of REJECTIONS in a drawn order, one drawn answer


def draw_scenario(rng: random.Random) -> Scenario:
    def name() -> str:
        return f"{rng.choice(VERBS)}_{rng.choice(OBJECTS)}_{rng.getrandbits(16):04x}"

    renamed, harmless = distinct(name, 2)
    held = f"{rng.choice(HOLDS)} {rng.getrandbits(16):04x}"
    return Scenario(renamed, harmless, ("no", *rng.sample(REJECTIONS, len(REJECTIONS)), held))


def _path(rng: random.Random) -> str:
    return f"/tmp/{rng.choice(['old', 'stale', 'big', 'spare'])}-{rng.randint(100, 999)}.log"


def _distinct_paths(rng: random.Random, count: int) -> list[str]:
    """`count` different paths: a later call's file must not be one an earlier call already deleted
    (the check would read that deletion as the later call running unapproved)."""
    return distinct(lambda: _path(rng), count)


def _message(calls: list[dict], rng: random.Random) -> AIMessage:
    """The model's turn with fresh random call ids (so no id can be typed in)."""
    return AIMessage(
        "", tool_calls=[{**c, "id": f"call_{rng.getrandbits(40):010x}", "type": "tool_call"} for c in calls]
    )


def _batch(rng: random.Random, dangerous: list[tuple[str, str]], harmless: str | None = None) -> list[dict]:
    """A turn's calls: a lookup, an email, each (tool name, path) of `dangerous`, maybe a harmless one."""
    calls = [
        {"name": "lookup_weather", "args": {"city": rng.choice(sorted(WEATHER))}},
        {
            "name": "send_email",
            "args": {"to": f"ops-{rng.getrandbits(32):08x}@example.com", "text": "cleaning up"},
        },
        *({"name": tool, "args": {"path": path}} for tool, path in dangerous),
    ]
    if harmless:
        calls.append({"name": harmless, "args": {"text": "a long report"}})
    rng.shuffle(calls)
    return calls


# -- one thread of the learner's graph, as the course saw it -------------------------------------------------
@dataclass
class Turn:
    """One turn: what the model asked for, the answer the human gives (None: nothing to ask), and
    what the run returned and did. `deleted_at_pause` is what the tools had deleted when it paused."""

    number: int
    of: int
    message: AIMessage
    answer: str | None
    paths: list[str]
    dangerous: str
    first: dict = field(default_factory=dict)
    final: dict = field(default_factory=dict)
    deleted_at_pause: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    questions: int = 0

    @property
    def prefix(self) -> str:
        return f"turn {self.number}: " if self.of > 1 else ""

    @property
    def recipient(self) -> str:
        return next(c["args"]["to"] for c in self.message.tool_calls if c["name"] == "send_email")


class Thread:
    """One thread of a learner's graph: its turns, played with `invoke` or `ainvoke`. What the tools
    did is read by the turn's own email recipient and files (every one drawn distinct)."""

    def __init__(self, graph: Any, way: str, effects: Effects, turns: list[Turn], marker: str) -> None:
        self.graph, self.way, self.effects, self.turns, self.marker = graph, way, effects, turns, marker
        self.config = {"configurable": {"thread_id": marker}}

    def call(self, value: Any) -> dict:
        method = self.graph.invoke if self.way == "invoke" else self.graph.ainvoke
        return run_learner(method, value, self.config, limit=LIMIT, name=f"your graph's {self.way}")

    def ask(self, turn: Turn) -> None:
        """The user's question: the run goes until it pauses (or ends)."""
        turn.first = self.call({"messages": [HumanMessage(f"Weather? Tell ops, clean up. [{self.marker}]")]})
        turn.deleted_at_pause = list(self.effects.deleted)

    def resume(self, turn: Turn) -> None:
        """Answer every question the run asks for this turn (one per dangerous call at most), then
        record the emails this turn's call really sent."""
        result = turn.first
        while turn.answer is not None and result.get("__interrupt__") and turn.questions < len(turn.paths):
            pending = result["__interrupt__"]
            turn.questions += len(pending)
            value = turn.answer if len(pending) == 1 else {i.id: turn.answer for i in pending}
            result = self.call(Command(resume=value))
        turn.final = result
        turn.sent = [to for to in self.effects.sent if to == turn.recipient]


def _model(threads_turns: dict[str, list[AIMessage]], tools: list) -> Any:
    """A scripted model: in each thread (named in its first question), the thread's turns in order,
    each followed by a final answer."""

    def turn(k: int) -> Callable[[list], Any]:
        def reply(messages: list) -> Any:
            first = next((m for m in messages if isinstance(m, HumanMessage)), None)
            text = first.content if first is not None else ""
            mine = next((turns for marker, turns in threads_turns.items() if marker in text), [])
            return mine[k] if k < len(mine) else "done"

        return reply

    longest = max((len(turns) for turns in threads_turns.values()), default=0)
    script = [step for k in range(longest) for step in (turn(k), tool_results_summary)]
    return ScriptedChatModel(script=script).bind_tools(tools)


def _build(build_graph: Any, model: Any, tools: list) -> Any:
    graph = run_learner(build_graph, model, tools, InMemorySaver(), limit=LIMIT, name="build_graph")
    if graph is None or not hasattr(graph, "invoke"):
        raise fail(
            "build_graph did not return a compiled graph.",
            expected="build_graph(model, tools, checkpointer) to return "
            "builder.compile(checkpointer=checkpointer)",
            observed=f"a {type(graph).__name__}",
            where=section(LESSON, APPROVAL_HEADING),
        )
    saver = getattr(graph, "checkpointer", None)
    if not isinstance(saver, BaseCheckpointSaver):
        raise fail(
            "your graph has no checkpointer",
            expected="build_graph to return builder.compile(checkpointer=checkpointer), with the "
            "checkpointer it is given",
            observed=f"the compiled graph's checkpointer is {saver!r}"[:200],
            why="`interrupt()` pauses the run and `Command(resume=...)` continues it from the saved "
            "checkpoint: without a checkpointer there is nothing to resume (langgraph raises "
            "'No checkpointer set')",
            where=section(LESSON, APPROVAL_HEADING),
        )
    return graph


def setup(
    build_graph: Any,
    rng: random.Random,
    plan: list[tuple[str, list[tuple[str | None, int]]]],
    *,
    dangerous: str = "delete_file",
    harmless: str | None = None,
) -> tuple[Any, Effects, list[Thread]]:
    """One graph for `plan`: per thread, its way (`invoke`/`ainvoke`) and its turns, each (answer,
    number of dangerous calls). Paths are distinct across the whole plan."""
    effects = Effects()
    tools = make_tools(effects, delete_name=dangerous, harmless_name=harmless)
    paths = iter(_distinct_paths(rng, sum(n for _, turns in plan for _, n in turns)))
    turns_of = []
    for _way, specs in plan:
        turns = []
        for number, (answer, n) in enumerate(specs, 1):
            mine = [next(paths) for _ in range(n)]
            message = _message(_batch(rng, [(dangerous, p) for p in mine], harmless if n == 0 else None), rng)
            turns.append(Turn(number, len(specs), message, answer, mine, dangerous))
        turns_of.append(turns)
    markers = [f"lab08-{uuid.uuid4().hex[:8]}" for _ in plan]
    threads_turns = {
        marker: [t.message for t in turns] for marker, turns in zip(markers, turns_of, strict=True)
    }
    graph = _build(build_graph, _model(threads_turns, tools), tools)
    threads = [
        Thread(graph, way, effects, turns, marker)
        for (way, _), marker, turns in zip(plan, markers, turns_of, strict=True)
    ]
    return graph, effects, threads


# -- the judgements of one turn ------------------------------------------------------------------------------
def case_no_pause_without_danger(turn: Turn) -> None:
    if turn.answer is None and turn.first.get("__interrupt__"):
        raise fail(
            f"{turn.prefix}a batch with no dangerous call paused anyway",
            expected="no interrupt when no tool of the batch requires approval (a tool whose metadata says "
            "requires_approval: False is not dangerous)",
            observed=f"interrupted with {[i.value for i in turn.first['__interrupt__']]}"[:200],
            why="ask only for the calls whose tool's metadata says requires_approval is True",
            where=section(LESSON, APPROVAL_HEADING),
        )


def case_nothing_deleted_before_approval(turn: Turn, way: str) -> None:
    early = [p for p in turn.paths if p in turn.deleted_at_pause]
    if not early:
        return
    if turn.number > 1:
        why = (
            "approval is per call: a 'yes' for an earlier call approves that call only — a flag set once "
            "lets every later dangerous call through; ask again for each new call id"
        )
    elif turn.dangerous != "delete_file":
        why = (
            f"a guard keyed on the name 'delete_file' (or on names the lab shows) misses the same tool named "
            f"{turn.dangerous}: decide by the tool's metadata (`tool.metadata.get('requires_approval')`)"
        )
    elif way == "invoke":
        why = (
            "under sync invoke an `awrap_tool_call` alone is skipped: give the ToolNode a `wrap_tool_call` "
            "too — and ask before the tools run"
        )
    else:
        why = "the tools ran before anyone was asked: ask in a step before the ToolNode runs"
    raise fail(
        f"{turn.prefix}the file was deleted before anyone approved",
        expected=f"a pause (an `__interrupt__` in the result) before {turn.dangerous} runs",
        observed=f"deleted {early[0]} during the first run",
        why=why,
        where=section(LESSON, SYNC_PITFALL)
        if why.startswith("under sync")
        else section(LESSON, APPROVAL_HEADING),
    )


def case_paused(turn: Turn) -> None:
    if turn.answer is not None and not turn.first.get("__interrupt__"):
        raise fail(
            f"{turn.prefix}the run did not pause for approval",
            expected=f"an `__interrupt__` in the first result: {turn.dangerous} requires approval",
            observed=f"keys {sorted(turn.first)}"
            + (
                " — approval is per call: a 'yes' for an earlier call approves that call only; a flag set "
                "once lets every later dangerous call through"
                if turn.number > 1
                else ""
            ),
            where=section(LESSON, APPROVAL_HEADING),
        )


def case_one_question(turn: Turn) -> None:
    if turn.answer is not None and turn.final.get("__interrupt__"):
        raise fail(
            f"{turn.prefix}the run paused again after the answer {turn.answer!r}",
            expected="at most one question per dangerous call, then a finished run",
            observed=f"a second interrupt: {[i.value for i in turn.final['__interrupt__']]}"[:200],
            why="resuming re-runs the interrupted node from its start: an `interrupt()` it reaches again "
            "returns the answer — unless the node asks a new question each time",
            where=section(LESSON, RESUME_HEADING),
        )


def _answers(turn: Turn) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in turn.final.get("messages", []) if isinstance(m, ToolMessage)}


def case_approved_ran(turn: Turn, deleted: list[str], way: str) -> None:
    if turn.answer != "yes":
        return
    missing = [p for p in turn.paths if p not in deleted]
    if missing:
        risky = [c for c in turn.message.tool_calls if c["name"] == turn.dangerous]
        answer = _answers(turn).get(risky[turn.paths.index(missing[0])]["id"])
        guard = "awrap_tool_call" if way == "ainvoke" else "wrap_tool_call"
        several = len(turn.paths) > 1
        raise fail(
            f"{turn.prefix}approved, but {'a file' if several else 'the file'} was not deleted",
            expected=f"deleted {', '.join(turn.paths)} after Command(resume='yes')",
            observed=f"deleted {[p for p in deleted if p in turn.paths]}; {turn.dangerous} answered "
            f"{(answer.status, answer.content) if answer else None}",
            why=(
                f"the 'yes' approved every dangerous call of the batch ({len(turn.paths)}), but only "
                f"{len(turn.paths) - len(missing)} ran: an approval used up by the first call (a one-use "
                "token, a flag reset after one call) is not an approval of the calls the human saw — "
                "store every approved call id"
                if several and len(missing) < len(turn.paths)
                else f"under {way} your `{guard}` refused an approved call: refuse only the calls whose id "
                "was not approved — a guard that refuses everything is not an approval step"
            ),
            where=section(LESSON, APPROVAL_HEADING),
        )


def case_rejected_did_not_run(turn: Turn, deleted: list[str], way: str, others: str = "") -> None:
    if turn.answer is None or turn.answer == "yes":
        return
    ran = [p for p in turn.paths if p in deleted]
    if ran:
        raise fail(
            f"{turn.prefix}the deletion did not follow the answer {turn.answer!r}",
            expected=f"{ran[0]} not deleted: any answer other than 'yes' rejects",
            observed=f"deleted {ran[0]}" + others,
            why="ToolNode runs every call of the last AIMessage unless a guard inside it refuses"
            + (
                " — under sync invoke that is `wrap_tool_call`: an `awrap_tool_call` alone is skipped"
                if way == "invoke"
                else " (`awrap_tool_call` under ainvoke)"
            )
            + "; and `if answer:` is true for 'no' too, `answer != 'no'` for 'not now': compare "
            "`answer == 'yes'`"
            + (
                "; an approval given in another thread is not this thread's: keep approvals in the "
                "thread's state, by call id"
                if others
                else ""
            ),
            where=section(LESSON, APPROVAL_HEADING),
        )


def case_model_told(turn: Turn) -> None:
    if turn.answer is None or turn.answer == "yes":
        return
    answers = _answers(turn)
    for call in turn.message.tool_calls:
        if call["name"] != turn.dangerous:
            continue
        refusal = answers.get(call["id"])
        if refusal is None or refusal.status != "error":
            raise fail(
                f"{turn.prefix}the model was not told that {turn.dangerous} was refused",
                expected=f"an error ToolMessage (status='error') answering {turn.dangerous}",
                observed=f"{(refusal.status, refusal.content) if refusal else 'no ToolMessage'}",
                where=section(LESSON, APPROVAL_HEADING),
            )


def case_harmless_answered(turn: Turn) -> None:
    """Every call of a tool that needs no approval ran and was answered normally."""
    answers = _answers(turn)
    for call in turn.message.tool_calls:
        if call["name"] == turn.dangerous:
            continue
        answer = answers.get(call["id"])
        if answer is not None and answer.status == "error":
            raise fail(
                f"{turn.prefix}a tool without requires_approval was refused",
                expected=f"{call['name']} to run (its metadata does not say requires_approval: True), "
                f"only {turn.dangerous} to follow the answer {turn.answer!r}",
                observed=f"{call['name']} answered {(answer.status, answer.content)}"[:200],
                why="ask about and refuse only the calls whose tool's metadata says requires_approval "
                "is True (`tool.metadata.get('requires_approval')`): a guard that treats every tool as "
                "dangerous refuses the lookup and the email too",
                where=section(LESSON, APPROVAL_HEADING),
            )


def case_email_once(turn: Turn) -> None:
    if not turn.sent:
        raise fail(
            f"{turn.prefix}the email was never sent",
            expected="send_email (a tool that needs no approval) to run exactly once",
            observed="sent []",
            why="send_email's metadata does not say requires_approval: it must run whatever the human "
            "answers about the deletion — refuse only the calls whose tool requires approval",
            where=section(LESSON, APPROVAL_HEADING),
        )
    if len(turn.sent) != 1:
        raise fail(
            f"{turn.prefix}the email was sent {len(turn.sent)} times",
            expected="send_email to run exactly once across the pause and the resume",
            observed=f"sent {turn.sent}",
            why="resuming re-runs the interrupted node from its start, so every call of its batch runs "
            "again: ask before any tool of the batch runs (e.g. in a node of its own before the tools)",
            where=section(LESSON, RESUME_HEADING),
        )


def case_finished(turn: Turn) -> None:
    ids = {c["id"]: c["name"] for c in turn.message.tool_calls}
    messages = turn.final.get("messages", [])
    dangling = [i for i in unanswered_tool_calls(messages) if i in ids]
    last = messages[-1] if messages else None
    if dangling or not isinstance(last, AIMessage) or last.tool_calls:
        raise fail(
            f"{turn.prefix}the run did not finish with every call answered",
            expected="every tool call answered and a final answer from the model",
            observed=f"unanswered {[ids[i] for i in dangling]}, last message {type(last).__name__}",
            where=section(LESSON, APPROVAL_HEADING),
        )


def judge_pause(thread: Thread, turn: Turn) -> None:
    case_no_pause_without_danger(turn)
    case_nothing_deleted_before_approval(turn, thread.way)
    case_paused(turn)


def judge_end(thread: Thread, turn: Turn, others: str = "") -> None:
    deleted = list(thread.effects.deleted)
    case_one_question(turn)
    case_approved_ran(turn, deleted, thread.way)
    case_rejected_did_not_run(turn, deleted, thread.way, others)
    case_model_told(turn)
    case_harmless_answered(turn)
    case_email_once(turn)
    case_finished(turn)


def play_turns(thread: Thread) -> None:
    """Each turn of one thread in order: ask, judge the pause, answer, judge the end."""
    for turn in thread.turns:
        thread.ask(turn)
        judge_pause(thread, turn)
        thread.resume(turn)
        judge_end(thread, turn)


# -- the eight cases -----------------------------------------------------------------------------------------
def play_two_deletions_approved(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    _, _, (thread,) = setup(build_graph, rng, [("invoke", [("yes", 2)])])
    play_turns(thread)


def play_approved_beside_a_waiting_thread(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    """Two threads of one graph pause; the first is approved, then the second is rejected."""
    _, _, (first, second) = setup(
        build_graph, rng, [("ainvoke", [("yes", 1)]), ("ainvoke", [(scenario.rejections[3], 1)])]
    )
    (one,), (two,) = first.turns, second.turns
    first.ask(one)
    judge_pause(first, one)
    second.ask(two)
    judge_pause(second, two)
    first.resume(one)
    judge_end(first, one)
    second.resume(two)
    judge_end(second, two, others=" — after another thread of the same graph was approved")


def play_rejected(way: str, answer_index: int) -> Callable[[Any, Scenario, random.Random], None]:
    def play(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
        _, _, (thread,) = setup(build_graph, rng, [(way, [(scenario.rejections[answer_index], 1)])])
        play_turns(thread)

    return play


def play_every_other_answer(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    """One thread per answer of REJECTIONS the other cases do not give, all on one graph (sync invoke)."""
    answers = (scenario.rejections[1], *scenario.rejections[4:])
    _, _, threads = setup(build_graph, rng, [("invoke", [(answer, 1)]) for answer in answers])
    for thread in threads:
        play_turns(thread)


def play_renamed(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    _, _, (thread,) = setup(
        build_graph, rng, [("invoke", [(scenario.rejections[2], 1)])], dangerous=scenario.renamed
    )
    play_turns(thread)


def play_nothing_dangerous(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    _, _, (thread,) = setup(build_graph, rng, [("invoke", [(None, 0)])], harmless=scenario.harmless)
    play_turns(thread)


def play_second_turn(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    _, _, (thread,) = setup(build_graph, rng, [("ainvoke", [("yes", 1), (scenario.rejections[0], 1)])])
    play_turns(thread)


def _tool_nodes(graph: Any) -> list[ToolNode]:
    builder = getattr(graph, "builder", None)
    nodes = getattr(builder, "nodes", {}) or {}
    return [spec.runnable for spec in nodes.values() if isinstance(getattr(spec, "runnable", None), ToolNode)]


def _tool_messages(out: Any) -> list[ToolMessage]:
    """The ToolMessages a ToolNode returned: a dict, a list, or Commands carrying them in their update."""
    items = out.get("messages", []) if isinstance(out, dict) else out if isinstance(out, list) else [out]
    found: list[ToolMessage] = []
    for item in items:
        if isinstance(item, ToolMessage):
            found.append(item)
        elif isinstance(item, dict):
            found.extend(_tool_messages(item))
        elif isinstance(item, Command):
            update = item.update
            if isinstance(update, list | tuple):  # [("messages", [...]), ...]
                update = (
                    {k: v for k, v in update if isinstance(k, str)}
                    if all(isinstance(p, list | tuple) and len(p) == 2 for p in update)
                    else {}
                )
            if isinstance(update, dict):
                messages = update.get("messages", [])
                found.extend(_tool_messages(messages if isinstance(messages, list) else [messages]))
    return found


def _guarded(node: ToolNode, way: str) -> bool:
    """True when the ToolNode has a wrapper on the path `way` takes (`invoke` skips `awrap_tool_call`)."""
    sync, asynchronous = getattr(node, "_wrap_tool_call", None), getattr(node, "_awrap_tool_call", None)
    return sync is not None if way == "invoke" else (sync is not None or asynchronous is not None)


def _approval_why(values: dict, path: str, pending: bool, guarded: bool) -> str:
    """Why a ToolNode ran an unapproved call, read from what the learner's state and ToolNode hold."""
    flags = sorted(k for k, v in values.items() if v is True)
    positions = sorted(
        k for k, v in values.items() if isinstance(v, list) and v and all(type(x) is int for x in v)
    )
    files = sorted(k for k, v in values.items() if isinstance(v, list) and path in v)
    by_id = "store the approved call ids and let the guard check `request.tool_call['id']`"
    if not guarded:
        return (
            "the decision must be binding inside the ToolNode: one guard given as both `wrap_tool_call` and "
            "`awrap_tool_call` (never `awrap_tool_call` alone: `invoke` skips it) that runs a dangerous call "
            "only if its id was approved"
        )
    if flags:
        return f"the state's {flags} is True — a yes/no flag still says yes for a call nobody saw: {by_id}"
    if positions:
        return (
            f"the state's {positions} holds positions in the batch: a new call at the same position is not "
            f"the call the human approved — {by_id}"
        )
    if files:
        return (
            f"the state's {files} holds the approved file: a new call for the same file is not the call the "
            f"human approved — {by_id}"
        )
    if pending:
        return (
            "nothing was approved yet (the run is waiting for its answer), yet the call ran: an approval "
            "taken before the answer, or one kept outside the thread's state (a counter, a token), is not "
            f"an approval of this call — {by_id}"
        )
    return (
        "an approval kept outside the call ids (a counter, a token, a flag outside the state) let a call "
        f"nobody saw through — {by_id}"
    )


def _hand_to_the_tool_node(
    graph: Any,
    thread: Thread,
    batch: list[dict],
    rng: random.Random,
    pending: bool,
    values: dict | None = None,
) -> None:
    """Hand the graph's ToolNode alone `batch` under new ids (invoke and ainvoke), with the thread's
    state (or `values`): a dangerous call nobody approved must be refused, and nothing deleted."""
    tool_nodes = _tool_nodes(graph)
    if not tool_nodes:
        raise fail(
            "no ToolNode among your graph's nodes",
            expected="the tools run by a ToolNode added as a node: "
            "`builder.add_node('tools', ToolNode(...))`",
            observed=f"nodes {sorted(getattr(getattr(graph, 'builder', None), 'nodes', {}))}",
            where=section(LESSON, APPROVAL_HEADING),
        )
    values = dict(graph.get_state(thread.config).values) if values is None else values
    path = next(c["args"]["path"] for c in batch if c["name"] == "delete_file")
    for way in ("invoke", "ainvoke"):
        message = _message(batch, rng)
        risky = next(c for c in message.tool_calls if c["name"] == "delete_file")
        state = {**values, "messages": [*values.get("messages", []), message]}
        method = tool_nodes[0].invoke if way == "invoke" else tool_nodes[0].ainvoke
        deletions = len(thread.effects.deleted)
        out = run_learner(method, state, runtime=Runtime(), limit=LIMIT, name=f"your ToolNode's {way}")
        ran = len(thread.effects.deleted) > deletions
        answer = next((m for m in _tool_messages(out) if m.tool_call_id == risky["id"]), None)
        if ran or answer is None or answer.status != "error":
            raise fail(
                f"under {way}, your ToolNode ran a dangerous call nobody approved"
                + (" while an approval was pending" if pending else ""),
                expected=f"an error ToolMessage for a new delete_file call (id {risky['id']}), no deletion",
                observed=f"deleted {path}" + ("" if pending else " again")
                if ran
                else f"answered {answer!r}"[:200],
                why=_approval_why(values, path, pending, _guarded(tool_nodes[0], way)),
                where=section(LESSON, APPROVAL_HEADING),
            )


def _fresh_approval(graph: Any, thread: Thread) -> dict:
    """The thread's state just before its ToolNode ran the approved batch (the approval at its
    freshest: a token or flag not used up yet), or its last state when no checkpoint shows that."""
    nodes = getattr(getattr(graph, "builder", None), "nodes", {}) or {}
    names = {name for name, spec in nodes.items() if isinstance(getattr(spec, "runnable", None), ToolNode)}
    for snapshot in graph.get_state_history(thread.config):  # newest first
        if names & set(snapshot.next):
            return dict(snapshot.values)
    return dict(graph.get_state(thread.config).values)


def _probe(build_graph: Any, rng: random.Random) -> None:
    """After an approved turn, hand the ToolNode alone a dangerous call nobody approved, with the state
    the approved batch ran with: that batch again, in the same order and for the same file (so approval
    by flag, token, position or file fails too), with new ids. The call ran if a file was deleted."""
    graph, _, (thread,) = setup(build_graph, rng, [("invoke", [("yes", 1)])])
    play_turns(thread)
    batch = [{"name": c["name"], "args": dict(c["args"])} for c in thread.turns[0].message.tool_calls]
    _hand_to_the_tool_node(graph, thread, batch, rng, pending=False, values=_fresh_approval(graph, thread))


def play_tool_node_alone(build_graph: Any, scenario: Scenario, rng: random.Random) -> None:
    """The ToolNode alone, handed a dangerous call nobody approved: while a thread waits for its
    answer, then after an approved turn."""
    graph, _, (thread,) = setup(build_graph, rng, [("invoke", [("yes", 1)])])
    (turn,) = thread.turns
    thread.ask(turn)
    judge_pause(thread, turn)
    other = _path(rng)
    while other in turn.paths:
        other = _path(rng)
    _hand_to_the_tool_node(graph, thread, _batch(rng, [("delete_file", other)]), rng, pending=True)
    _probe(build_graph, rng)


CASES: tuple[tuple[str, Callable[[Any, Scenario, random.Random], None]], ...] = (
    ("approve, sync invoke: two deletions in one batch", play_two_deletions_approved),
    (
        "approve, async ainvoke, while a second thread waits (then rejected)",
        play_approved_beside_a_waiting_thread,
    ),
    ("reject, async ainvoke: 'no'", play_rejected("ainvoke", 0)),
    ("reject, sync invoke: every other answer", play_every_other_answer),
    ("a renamed dangerous tool, rejected, sync invoke", play_renamed),
    ("no dangerous call, no pause", play_nothing_dangerous),
    ("a second dangerous turn in one thread: approve, then reject", play_second_turn),
    ("the ToolNode alone refuses a call nobody approved (invoke and ainvoke)", play_tool_node_alone),
)
"""The cases every check plays, in order: (label, play)."""


def _label(label: str, scenario: Scenario) -> str:
    if label.startswith("reject, sync invoke"):
        answers = (scenario.rejections[1], *scenario.rejections[4:])
        return f"reject, sync invoke, one thread per answer: {', '.join(map(repr, answers))}"
    if label.startswith("a renamed"):
        answer = scenario.rejections[2]
        return f"a renamed dangerous tool ({scenario.renamed}), rejected with {answer!r}, sync invoke"
    return label


def check_guard(build_graph: Any, *, seed: int | None = None) -> str:
    key = "q1"
    shape = (
        "def build_graph(model, tools, checkpointer): ... return builder.compile(checkpointer=checkpointer)"
    )
    if not callable(build_graph):
        raise fail(
            "`build_graph` must be a function.",
            key=key,
            expected=shape,
            observed=f"a {type(build_graph).__name__}",
            where=section(LESSON, APPROVAL_HEADING),
        )
    try:
        inspect.signature(build_graph).bind(None, None, None)
    except TypeError:
        raise fail(
            "`build_graph` must take 3 arguments: the model, the tools and the checkpointer.",
            key=key,
            expected=shape,
            observed=f"build_graph{inspect.signature(build_graph)}",
            where=section(LESSON, APPROVAL_HEADING),
        ) from None
    except ValueError:  # no signature to read: let the call decide
        pass
    rng = random.Random(seed)
    scenario = draw_scenario(rng)
    cases, seen = Cases(key), {}
    for label, play in CASES:
        label = _label(label, scenario)
        if cases.hung is not None:
            cases.run(label, lambda: None)  # recorded as not tried
            continue
        try:
            play(build_graph, scenario, rng)
        except labs.StillAStub:
            raise
        except CheckFailed as error:
            record_failure(cases, label, error, seen)
        else:
            cases.ok(label)
    return cases.result(
        f"approve and reject under invoke and ainvoke ({len(scenario.rejections)} answers other than "
        "'yes'), two deletions in one "
        "approved batch, a second thread rejected after the first was approved, a renamed tool, a batch "
        "with nothing dangerous, a second turn asked again, and the ToolNode alone refusing an unapproved "
        "call while an approval was pending and after one — approval by call id, side effects once."
    )


q1 = Exercise(
    "08",
    "q1",
    ("build_graph",),
    check_guard,
    (
        "Decide by the tool, not by its name: `tool.metadata.get('requires_approval')`. Ask before any tool "
        "of the batch runs: resuming re-runs the interrupted node from its start. And approve calls, not "
        "turns: keep the ids of the calls the human approved.",
        "Put an `approve` node between the model and the ToolNode: it finds the calls whose tool requires "
        "approval, calls `interrupt(...)` once for them, and stores the approved call ids in the state. "
        "In the ToolNode, give one guard as both `wrap_tool_call` and `awrap_tool_call` (lesson 08, 5.2: "
        "a sync guard alone passes here only because these tools are sync, and under `ainvoke` it runs "
        "them one at a time; never `awrap_tool_call` alone, which `invoke` skips): it answers a dangerous "
        "call whose id is not approved with `ToolMessage(..., status='error')` instead of running it. "
        "Route: llm → tools_condition → approve → tools → llm; compile with the checkpointer.",
    ),
)

__all__ = ["APPROVAL", "CheckFailed", "Effects", "make_tools", "q1"]

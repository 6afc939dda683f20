"""Lab 14 — Approval and retry, in the right order (after `notebooks/14_approval_retry_and_order.ipynb`).

q1: `build_agent(model, tools, checkpointer)`: a `create_agent` whose tools marked
    `metadata={"requires_approval": True}` are reviewed one call at a time as the call starts (the
    rate lookups of the same turn have run by then), each call asked about once however many attempts
    follow; every call retried on `ConnectionError`, three attempts in all, without a long wait; a
    call that still fails answered with an error ToolMessage, the run going on.
q2: `ORDER`: the five course middlewares (`ledger`, `review`, `errors`, `retry`, `audit`) listed so
    that a written policy holds; the check builds the agent in that order and runs it.

Each check draws one turn with every hard case in it, every run: a transfer that fails and then goes
through, one whose bank stays down, a rejected call, an edited call, two tools that need approval
(the second under a name drawn per check, never one the lab shows), a tool under a drawn name whose
metadata says it needs none (so a rule on names — "every tool but fetch_rate", the names
`make_tools()` prints — fails every run), several approvals answered in one resume, rate lookups
running beside them. What is random is the names, accounts, amounts, call ids, how often a flaky bank
fails and the order of the calls. The tools record each run as it happens, with the invocation it
happened in; the check plays the reviewer and records each question and each answer, so a call that
ran before its answer, or a question asked twice, is seen where it happened.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerHung,
    LearnerRaised,
    fail,
    run_learner,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel, tool_results_summary

LESSON = "14_approval_retry_and_order"
RETRY_HEADING = "4. `ToolRetryMiddleware`: attempts, and what the model sees"
ORDER_HEADING = "5. The order several middlewares' hooks run in"
CHANGES_HEADING = "6. What the order changes"
PER_CALL_HEADING = "10. Deep dive: per-call approval inside a retry"
PAYLOAD_HEADING = "1. The interrupt `HumanInTheLoopMiddleware` raises"
HISTORY_HEADING = "3. What approve, edit and reject leave in the history"
RESUME_TRAP_HEADING = "7. Deep dive: What a resume re-runs: middleware, interceptor, `create_react_agent`"
VERBS = ("settle", "post", "book", "clear", "file", "match", "queue", "sync", "route", "stage")
OBJECTS = ("invoice", "order", "claim", "batch", "voucher", "payee", "remit", "bill", "charge", "slip")
"""The second tool that needs approval and a tool that needs none are named `<verb>_<object>_<4 hex
digits>`, both drawn from these per check: never a name the lab shows (`make_tools()` prints names
without digits), and only the metadata tells the two apart."""
EXAMPLE_NAMES = ("pay_invoice", "invoice_status")
"""The names `make_tools()` prints for those two tools: an example, never drawn."""
CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF", "CAD", "SEK", "NOK")
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT)."""
MAX_PAUSES = 12
"""Resumes the check sends before it calls a run endless."""
SLOW_WAIT = 0.35
"""Seconds above which a retry's waits are too long, when both waits between a down call's three
attempts exceed it: a stall of the machine lengthens one wait, not both. ToolRetryMiddleware waits
`initial_delay`, then that times `backoff_factor`, capped at `max_delay`, each ±25 %: the 0.1 s the lab
asks for waits at most 0.125 s, then 0.25 s; the default (1 s, doubling) and any constant or capped
wait of 0.5 s never pass."""
MIDDLEWARES = (
    (
        "ledger",
        "the accounts' record: a row for each result that comes back through it (its status and "
        "content), or the type of each exception",
    ),
    ("review", "HumanInTheLoopMiddleware, per call: asks the reviewer about each transfer as it starts"),
    ("errors", "ToolErrorMiddleware: turns any exception from a tool into an error ToolMessage"),
    ("retry", "ToolRetryMiddleware(max_retries=2, retry_on=(ConnectionError,), on_failure='error')"),
    ("audit", "the security record: the same kind of row as the ledger, kept apart"),
)
"""q2's five middlewares, by the name `ORDER` uses, with what each does (listed in no useful order)."""


# -- the scenario: one turn with every hard case ---------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One tool call of the drawn turn and what the check's bank and reviewer do with it."""

    id: str
    tool: str  # the tool's name
    key: str  # the argument that names the call: an account, an invoice, a currency
    amount: int  # 0 for a rate lookup
    role: str  # flaky | down | closed | rejected | edited | lookup
    fails: int  # attempts that raise ConnectionError before one goes through (99: never)
    decision: str  # approve | reject | edit | "" (not reviewed)
    edited: int = 0  # the amount an edit sets


@dataclass(frozen=True)
class Scenario:
    flagged: tuple[str, ...]  # tool names that need approval
    calls: tuple[Call, ...]
    plain: str = ""  # a tool whose metadata says requires_approval: False ("": none in this turn)


def _account(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(1000, 9999)}"


def _tool_name(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(OBJECTS)}_{rng.getrandbits(16):04x}"


def _draw(
    rng: random.Random, *, closed: bool = False, plain: bool = True, names: tuple[str, str] | None = None
) -> Scenario:
    """One turn: every hard case, every time; names, amounts, ids, failure counts and order vary.
    `plain`: a call to a tool that needs no approval, under a drawn name (q1); `names`: the second
    flagged tool's and that tool's names instead of drawn ones (`make_tools`' example)."""
    other, unflagged = names or (_tool_name(rng), _tool_name(rng))
    while unflagged == other:
        unflagged = _tool_name(rng)
    keys = iter(rng.sample(range(1000, 10000), 9))
    currencies = rng.sample(CURRENCIES, 2)

    def call(tool: str, prefix: str, role: str, fails: int, decision: str, edited: int = 0) -> Call:
        key = f"{prefix}-{next(keys)}" if prefix else currencies.pop()
        amount = 0 if not prefix else rng.randint(20, 900)
        return Call(f"call_{rng.getrandbits(40):010x}", tool, key, amount, role, fails, decision, edited)

    calls = [
        call("transfer", "acct", "flaky", rng.choice((1, 2)), "approve"),
        call("transfer", "acct", "down", 99, "approve"),
        call(other, "inv", "rejected", 0, "reject"),
        call(other, "inv", "edited", 1, "edit", edited=rng.randint(1, 19)),
        call("fetch_rate", "", "lookup", 1, ""),
        call("fetch_rate", "", "lookup", 0, ""),
    ]
    if closed:
        calls.append(call("transfer", "acct", "closed", 0, "approve"))
    if plain:
        calls.append(call(unflagged, "inv", "plain", 0, ""))
    rng.shuffle(calls)
    return Scenario(("transfer", other), tuple(calls), unflagged if plain else "")


class Log:
    """What really happened, in order: each tool run (with the invocation it ran in), each question
    the reviewer got, each answer sent. Thread-safe: the calls of a turn run in parallel."""

    def __init__(self) -> None:
        self.phase = 0  # 0: the first invocation; k: the k-th resume
        self.runs: list[tuple[int, str, int, float]] = []  # (phase, key, amount, time)
        self.questions: list[tuple[int, str]] = []  # (phase, call id)
        self.answers: list[tuple[int, str, str]] = []  # (phase the answer starts, call id, type)
        self.rows: list[tuple[str, str, str]] = []  # q2: (who, call id, what it saw)
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}

    def attempt(self, key: str, amount: int) -> int:
        with self._lock:
            self.runs.append((self.phase, key, amount, time.monotonic()))
            self._attempts[key] = self._attempts.get(key, 0) + 1
            return self._attempts[key]

    def row(self, who: str, call_id: str, what: str) -> None:
        with self._lock:
            self.rows.append((who, call_id, what))

    def runs_of(self, key: str) -> list[tuple[int, str, int, float]]:
        return [r for r in self.runs if r[1] == key]


@functools.cache
def _schemas() -> Mapping[str, Any]:
    """The tools' argument schemas, built once: creating them per check is slow, and langchain builds
    them inside `warnings.catch_warnings()`, which is not thread-safe (checks run side by side)."""

    def transfer(to: str, amount: int) -> str:
        """Transfer money to an account."""

    def pay(ref: str, amount: int) -> str:
        """Pay an invoice."""

    def fetch_rate(currency: str) -> str:
        """Fetch an exchange rate."""

    def status(ref: str) -> str:
        """Look up whether an invoice is open."""

    return MappingProxyType(
        {f.__name__: StructuredTool.from_function(f).args_schema for f in (transfer, pay, fetch_rate, status)}
    )


def _tools(scenario: Scenario, log: Log) -> list[BaseTool]:
    """The turn's tools: `transfer`, the other flagged tool (both `requires_approval`), `fetch_rate`.
    Each run is logged before the bank answers; how each call behaves is looked up by its key."""
    behaviour = {c.key: c for c in scenario.calls}

    def bank(key: str, amount: int) -> None:
        attempt = log.attempt(key, amount)
        call = behaviour.get(key)
        if call is None:
            return
        if call.role == "closed":
            raise ValueError(f"account {key} is closed")
        if attempt <= call.fails:
            raise ConnectionError(f"the service dropped request {attempt} for {key}")

    def transfer(to: str, amount: int) -> str:
        bank(to, amount)
        return f"transferred {amount} to {to}"

    def pay(ref: str, amount: int) -> str:
        bank(ref, amount)
        return f"paid {amount} for {ref}"

    def fetch_rate(currency: str) -> str:
        bank(currency, 0)
        return f"{currency}: {1 + (sum(map(ord, currency)) % 50) / 100:.2f}"

    def status(ref: str) -> str:
        bank(ref, 0)
        return f"{ref}: open"

    schemas = _schemas()
    approval = {"requires_approval": True}
    tools: list[BaseTool] = [
        StructuredTool(
            name="transfer",
            description="Transfer money to an account.",
            func=transfer,
            args_schema=schemas["transfer"],
            metadata=dict(approval),
        ),
        StructuredTool(
            name=scenario.flagged[1],
            description="Pay an invoice.",
            func=pay,
            args_schema=schemas["pay"],
            metadata=dict(approval),
        ),
        StructuredTool(
            name="fetch_rate",
            description="Fetch an exchange rate.",
            func=fetch_rate,
            args_schema=schemas["fetch_rate"],
        ),
    ]
    if scenario.plain:
        tools.append(
            StructuredTool(
                name=scenario.plain,
                description="Look up whether an invoice is open.",
                func=status,
                args_schema=schemas["status"],
                metadata={"requires_approval": False},
            )
        )
    return tools


def make_tools() -> list[BaseTool]:
    """An example of the tools the check hands `build_agent` (their metadata; the check's own copies
    carry names drawn per check, record every run and fail the way its scenario says)."""
    return _tools(_draw(random.Random(14), names=EXAMPLE_NAMES), Log())


def _args(call: Call) -> dict[str, Any]:
    if call.tool == "fetch_rate":
        return {"currency": call.key}
    if call.tool == "transfer":
        return {"to": call.key, "amount": call.amount}
    if call.role == "plain":
        return {"ref": call.key}
    return {"ref": call.key, "amount": call.amount}


def _model(scenario: Scenario) -> ScriptedChatModel:
    """The model's first turn calls every tool of the scenario at once; its second answers."""
    calls = [{"name": c.tool, "args": _args(c), "id": c.id, "type": "tool_call"} for c in scenario.calls]
    return ScriptedChatModel(script=[AIMessage("", tool_calls=calls), tool_results_summary])


# -- playing the reviewer ------------------------------------------------------------------------------
@dataclass
class Run:
    """One turn played through the learner's agent (or the course's, in q2's order)."""

    path: str
    log: Log
    lookups_at_first_pause: int = -1  # lookup runs that had happened when the reviewer was first asked
    pauses: int = 0
    batched: bool = False
    unreadable: str = ""  # a question the reviewer could not read
    crash: str = ""  # the learner's (or a library's) exception that ended the run
    crash_type: str = ""
    answers: tuple[tuple[str, str, str], ...] = ()  # (call id, status, content) the model read
    finished: bool = False


def _decision(call: Call, name: str, args: dict) -> dict:
    if call.decision == "reject":
        return {"type": "reject"}
    if call.decision == "edit":
        return {"type": "edit", "edited_action": {"name": name, "args": {**args, "amount": call.edited}}}
    return {"type": "approve"}


def _by_args(scenario: Scenario, name: str, args: Any) -> Call | None:
    if not isinstance(args, dict):
        return None
    key = args.get("to", args.get("ref", args.get("currency")))
    return next((c for c in scenario.calls if c.key == key and c.tool == name), None)


def _resume(scenario: Scenario, run: Run, interrupts: Any) -> dict:
    """The reviewer's answer to every open question, keyed by interrupt id; questions are logged."""
    log, answer = run.log, {}
    for item in interrupts if isinstance(interrupts, list | tuple) else ():
        value = getattr(item, "value", None)
        if isinstance(value, dict) and "action_requests" in value:  # batched: one card per listed call
            run.batched = True
            decisions = []
            for request in value["action_requests"]:
                call = _by_args(scenario, request.get("name"), request.get("args"))
                if call is None:
                    run.unreadable = shorten(repr(request), 120)
                    return {}
                log.questions.append((log.phase, call.id))
                log.answers.append((log.phase + 1, call.id, call.decision or "approve"))
                decisions.append(_decision(call, request["name"], request["args"]))
            answer[item.id] = {"decisions": decisions}
        elif isinstance(value, dict) and value.get("tool_call_id"):  # per call
            call = next((c for c in scenario.calls if c.id == value["tool_call_id"]), None)
            if call is None:
                run.unreadable = shorten(repr(value), 120)
                return {}
            log.questions.append((log.phase, call.id))
            log.answers.append((log.phase + 1, call.id, call.decision or "approve"))
            answer[item.id] = _decision(call, value.get("name", call.tool), value.get("args") or {})
        else:
            run.unreadable = shorten(repr(value), 120)
            return {}
    return answer


def _play(agent: Any, scenario: Scenario, log: Log, path: str) -> Run:
    """Run the turn through `agent` under `path` ("invoke" or "ainvoke"), answering every question
    as the scenario says, until it finishes, crashes or asks something the reviewer cannot read."""
    run = Run(path, log)
    method = getattr(agent, path)
    thread = {"configurable": {"thread_id": f"lab14-{random.getrandbits(32):08x}"}}
    value: Any = {"messages": [("user", "Pay what is due, and check today's rates.")]}
    lookups = {c.key for c in scenario.calls if c.role == "lookup"}
    for _ in range(MAX_PAUSES):
        try:
            result = run_learner(method, value, thread, limit=LIMIT, name=f"your agent's {path}")
        except LearnerHung:
            raise
        except LearnerRaised as error:
            run.crash, run.crash_type = str(error), type(error.original).__name__
            return run
        interrupts = result.get("__interrupt__") if isinstance(result, dict) else None
        if not interrupts:
            messages = result.get("messages", []) if isinstance(result, dict) else []
            run.answers = tuple(
                (m.tool_call_id, m.status, m.text) for m in messages if isinstance(m, ToolMessage)
            )
            last = messages[-1] if messages else None
            run.finished = isinstance(last, AIMessage) and not last.tool_calls
            return run
        if run.pauses == 0:
            run.lookups_at_first_pause = sum(1 for r in log.runs if r[1] in lookups and r[0] == 0)
        run.pauses += 1
        answer = _resume(scenario, run, interrupts)
        if run.unreadable:
            return run
        log.phase += 1
        value = Command(resume=answer)
    run.crash = f"the reviewer answered {MAX_PAUSES} times and the run was still asking"
    return run


# -- q1: the cases, each a small function over the drawn turn and one played run -------------------------
def case_run_finishes(run: Run, s: Scenario) -> None:
    if run.unreadable:
        raise fail(
            "the check could not read a question your agent asked",
            expected="HumanInTheLoopMiddleware's questions: per call, a dict with `tool_call_id`, `name`, "
            "`args`",
            observed=run.unreadable,
            where=section(LESSON, PAYLOAD_HEADING),
        )
    if "without checkpointer" in run.crash:
        raise fail(
            "the answer to the first question had nowhere to go",
            expected="create_agent(..., checkpointer=checkpointer): a resume continues a saved run",
            observed=shorten(run.crash, 160),
            where=section(LESSON, RESUME_TRAP_HEADING),
        )
    if run.crash:
        down = next(c for c in s.calls if c.role == "down")
        ran = len(run.log.runs_of(down.key))
        why = (
            "with on_failure='error' the retry re-raises the last exception and the run crashes: keep "
            "'continue' (or a callable) so the model is told"
            if run.crash_type == "ConnectionError" and ran >= 3
            else "a ConnectionError the retry does not catch crashes the run: retry every tool on it"
            if run.crash_type == "ConnectionError"
            else "under ainvoke every custom middleware needs its async hooks (awrap_tool_call)"
            if run.path == "ainvoke" and run.crash_type == "NotImplementedError"
            else "the reviewer's edit was refused: let the flagged tools allow 'edit' (allowed_decisions)"
            if run.crash_type == "ValidationError" and "edit" in run.crash
            else ""
        )
        raise fail(
            f"under {run.path} the run crashed",
            expected="a finished run: every call answered, the model's final answer last",
            observed=shorten(run.crash, 200),
            why=why,
            where=section(LESSON, RETRY_HEADING),
        )
    if not run.finished:
        raise fail(
            f"under {run.path} the run did not end with the model's answer",
            expected="a final AIMessage without tool calls",
            observed=f"{len(run.answers)} ToolMessage(s), no final answer",
            where=section(LESSON, RETRY_HEADING),
        )


def case_lookups_do_not_wait(run: Run, s: Scenario) -> None:
    if run.batched or run.lookups_at_first_pause == 0:
        asked = {call_id for _, call_id in run.log.questions}
        flagged = [c for c in s.calls if c.role == "lookup" and c.id in asked]
        if run.batched:
            why = (
                "the default interrupt_mode='batched' asks in after_model, before any tool of the turn "
                "runs: ask as each call starts, with interrupt_mode='per_call'"
            )
        elif flagged:
            why = (
                f"the lookups were flagged themselves: the reviewer was asked about "
                f"fetch_rate({flagged[0].key}), so it waited for its own answer — put in interrupt_on only "
                "the tools whose metadata says requires_approval"
            )
        else:
            why = (
                "per call, a turn's unflagged calls run before the first question is answered: something "
                "outside the review held the lookups back"
            )
        raise fail(
            "the rate lookups waited for the reviewer",
            expected="both fetch_rate calls already run when the reviewer is first asked",
            observed="no lookup had run at the first question",
            why=why,
            where=(section(LESSON, PER_CALL_HEADING) if run.batched or not flagged
                   else section(LESSON, PAYLOAD_HEADING)),
        )


def case_each_call_asked_once(run: Run, s: Scenario) -> None:
    asked: dict[str, int] = {}
    for _, call_id in run.log.questions:
        asked[call_id] = asked.get(call_id, 0) + 1
    # lookups first, then the unflagged tool, then the flagged calls: one verdict whatever the order drawn
    for call in sorted(s.calls, key=lambda c: (c.role != "lookup", c.role != "plain")):
        count = asked.get(call.id, 0)
        if call.role == "lookup" and count:
            raise fail(
                "the reviewer was asked about a rate lookup",
                expected="questions only for tools whose metadata says requires_approval",
                observed=f"asked {count} time(s) about fetch_rate({call.key})",
                why="build interrupt_on from the tools: {t.name: ... for t in tools if "
                "(t.metadata or {}).get('requires_approval')}",
                where=section(LESSON, PAYLOAD_HEADING),
            )
        if call.role == "plain" and count:
            raise fail(
                f"the reviewer was asked about {call.tool}, a tool that needs no approval",
                expected="questions only for tools whose metadata says requires_approval: True",
                observed=f"asked {count} time(s) about {call.tool}({call.key}); its metadata is "
                "{'requires_approval': False}",
                why="a rule on names (every tool but fetch_rate, names that look like payments) flags "
                "tools that need no approval — the check names them anew on every run: build interrupt_on "
                "from each tool's metadata, `(t.metadata or {}).get('requires_approval')`",
                where=section(LESSON, PAYLOAD_HEADING),
            )
        if call.role not in ("lookup", "plain") and count == 0:
            ran = len(run.log.runs_of(call.key))
            raise fail(
                f"{call.tool} was never put to the reviewer",
                expected=f"one question about {call.tool}({call.key}) before it runs",
                observed=f"no question; it ran {ran} time(s)",
                why=f"{call.tool} needs approval too: decide by each tool's metadata, not by the names "
                "in the lab text"
                if call.tool != "transfer"
                else "every tool with requires_approval in its metadata goes in interrupt_on",
                where=section(LESSON, PAYLOAD_HEADING),
            )
        if count > 1:
            raise fail(
                "one call was put to the reviewer more than once",
                expected=f"one question about {call.tool}({call.key}), however many attempts follow",
                observed=f"asked {count} times; the bank saw {len(run.log.runs_of(call.key))} attempt(s)",
                why="the review sits inside the retry, so every attempt passes it again, and each new "
                "question's resume re-runs the earlier attempts: list the review before the retry",
                where=section(LESSON, PER_CALL_HEADING),
            )


def case_nothing_runs_before_its_answer(run: Run, s: Scenario) -> None:
    answered: dict[str, int] = {}  # call id -> the invocation its first answer started
    for phase, call_id, _ in run.log.answers:
        answered.setdefault(call_id, phase)
    for call in s.calls:
        if call.role == "lookup" or call.id not in answered:
            continue
        early = [r for r in run.log.runs_of(call.key) if r[0] < answered[call.id]]
        if early:
            raise fail(
                f"{call.tool} ran before the reviewer answered",
                expected=f"{call.tool}({call.key}) to run only after its answer",
                observed=f"{len(early)} run(s) before the answer",
                why="ask before the tool runs: the review's wrap_tool_call must be outside the tool call",
                where=section(LESSON, ORDER_HEADING),
            )


def case_rejected_never_runs(run: Run, s: Scenario) -> None:
    call = next(c for c in s.calls if c.role == "rejected")
    runs = run.log.runs_of(call.key)
    answer = next((a for a in run.answers if a[0] == call.id), None)
    if runs or answer is None or answer[1] != "error":
        raise fail(
            "a rejected call ran, or the model was not told",
            expected=f"{call.tool}({call.key}) never run, answered by an error ToolMessage",
            observed=f"ran {len(runs)} time(s); answer {answer[1:] if answer else None}",
            where=section(LESSON, HISTORY_HEADING),
        )


def case_edit_runs_with_reviewers_args(run: Run, s: Scenario) -> None:
    call = next(c for c in s.calls if c.role == "edited")
    amounts = [r[2] for r in run.log.runs_of(call.key)]
    if amounts != [call.edited] * (call.fails + 1):
        raise fail(
            "the edited call did not run as the reviewer edited it, or was not retried",
            expected=f"{call.fails + 1} attempt(s) of {call.tool}({call.key}), each with amount "
            f"{call.edited} (the model asked for {call.amount}); the first attempt fails",
            observed=f"attempts with amounts {amounts}",
            why="allow 'edit' for the flagged tools (True allows every decision), and retry every tool",
            where=section(LESSON, HISTORY_HEADING),
        )


def case_transient_failure_is_retried(run: Run, s: Scenario) -> None:
    for call in s.calls:
        if call.role not in ("flaky", "lookup"):
            continue
        runs = len(run.log.runs_of(call.key))
        answer = next((a for a in run.answers if a[0] == call.id), None)
        if runs != call.fails + 1 or answer is None or answer[1] != "success":
            raise fail(
                f"a {call.tool} call that fails {call.fails} time(s), then goes through, was not retried",
                expected=f"{call.fails + 1} attempts, then a success ToolMessage",
                observed=f"{runs} attempt(s); answer {answer[1:] if answer else None}",
                why="ToolRetryMiddleware retries a ConnectionError; leave `tools` unset (or list them all)",
                where=section(LESSON, RETRY_HEADING),
            )


def case_permanent_failure_three_attempts(run: Run, s: Scenario) -> None:
    call = next(c for c in s.calls if c.role == "down")
    runs = run.log.runs_of(call.key)
    answer = next((a for a in run.answers if a[0] == call.id), None)
    asked = sum(1 for _, call_id in run.log.questions if call_id == call.id)
    if len(runs) != 3 or answer is None or answer[1] != "error":
        raise fail(
            "a transfer whose bank stays down",
            expected="exactly 3 attempts (max_retries=2), then an error ToolMessage for the model",
            observed=f"{len(runs)} attempt(s) after {asked} question(s); answer "
            f"{answer[1:] if answer else None}",
            why="each new question's resume re-runs the call's task from the top, earlier attempts too"
            if asked > 1
            else "max_retries counts the retries after the first attempt",
            where=section(LESSON, RETRY_HEADING),
        )
    first, second = (b[3] - a[3] for a, b in zip(runs, runs[1:], strict=False))
    if min(first, second) > SLOW_WAIT:  # one stall of the machine lengthens one wait only
        raise fail(
            "the retry waited too long between attempts",
            expected="the next attempt at once (initial_delay at most 0.1 s): these banks recover fast",
            observed=f"waited {first:.2f} s, then {second:.2f} s between the attempts",
            why="ToolRetryMiddleware waits initial_delay (1 s by default), then that times backoff_factor "
            "(2 by default), capped at max_delay, each ±25 %",
            where=section(LESSON, RETRY_HEADING),
        )


Q1_CASES = (
    ("the run finishes, every call answered", case_run_finishes),
    ("the rate lookups have run when the reviewer is asked", case_lookups_do_not_wait),
    ("each flagged call asked about once, lookups never", case_each_call_asked_once),
    ("no flagged call runs before its answer", case_nothing_runs_before_its_answer),
    ("a rejected call never runs", case_rejected_never_runs),
    ("an edited call runs with the reviewer's amount, retried", case_edit_runs_with_reviewers_args),
    ("a call that fails, then goes through, is retried", case_transient_failure_is_retried),
    ("a bank that stays down: 3 attempts, the model told", case_permanent_failure_three_attempts),
)


def _cases_over_runs(key: str, cases_list: tuple, runs: list[Run], s: Scenario) -> Cases:
    """Each case over every played run; a case fails on the first run it fails on."""
    cases = Cases(key)
    blocked = ""
    for name, case in cases_list:
        if blocked:
            cases.bad(name, expected="", observed=f"not checked: {blocked}")
            continue
        with cases.case(name):
            for run in runs:
                case(run, s)
        if (
            case is case_run_finishes
            and not cases.items[-1].passed
            and any(r.crash or r.unreadable for r in runs)
        ):
            blocked = "the run above did not finish"
    return cases


def check_agent(build_agent: Any, *, seed: int | None = None) -> str:
    key = "q1"
    shape = "def build_agent(model, tools, checkpointer): ... return create_agent(...)"
    if not callable(build_agent):
        raise fail(
            "`build_agent` must be a function",
            key=key,
            expected=shape,
            observed=shorten(f"a {type(build_agent).__name__}: {build_agent!r}", 120),
            where=section(LESSON, PER_CALL_HEADING),
        )
    rng = random.Random(seed)
    scenario = _draw(rng)
    runs = []
    for path in rng.sample(("invoke", "ainvoke"), 2):
        log = Log()
        tools = _tools(scenario, log)
        rng.shuffle(tools)
        agent = run_learner(
            build_agent, _model(scenario), tools, InMemorySaver(), limit=LIMIT, name="build_agent"
        )
        if not hasattr(agent, "invoke") or not hasattr(agent, "ainvoke"):
            raise fail(
                "build_agent did not return an agent",
                key=key,
                expected=shape,
                observed=shorten(repr(agent), 160),
                where=section(LESSON, PER_CALL_HEADING),
            )
        runs.append(_play(agent, scenario, log, path))
    cases = _cases_over_runs(key, Q1_CASES, runs, scenario)
    return cases.result(
        "under invoke and ainvoke: lookups ran before the reviewer was asked, every flagged call asked "
        "about once, none ran before its answer, rejected never ran, edited ran as edited, transient "
        "failures retried, a dead bank tried 3 times and reported."
    )


q1 = Exercise(
    "14",
    "q1",
    ("build_agent",),
    check_agent,
    (
        "Two middlewares: HumanInTheLoopMiddleware(interrupt_on=..., interrupt_mode='per_call') and "
        "ToolRetryMiddleware(...). Build interrupt_on from the tools' metadata, not from names. Their "
        "order in `middleware=[...]` decides whether a retry asks again (lesson 14, deep dive 10).",
        "interrupt_on = {t.name: True for t in tools if (t.metadata or {}).get('requires_approval')}; "
        "list the review FIRST (outermost), then ToolRetryMiddleware(max_retries=2, initial_delay=0); "
        "keep on_failure='continue' so a dead bank is reported to the model; pass the checkpointer to "
        "create_agent.",
    ),
)


# -- q2: the course's five middlewares, in the learner's order -------------------------------------------
class _Ledger(AgentMiddleware):
    """One row per tool call with what came back through it: a message, or an exception."""

    def __init__(self, log: Log, who: str) -> None:
        super().__init__()
        self.log, self.who = log, who

    @property
    def name(self) -> str:
        return f"Lab14{self.who.title()}"

    def _seen(self, request: Any, result: Any) -> None:
        what = f"{result.status}: {result.text}" if isinstance(result, ToolMessage) else type(result).__name__
        self.log.row(self.who, request.tool_call["id"], what)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            result = handler(request)
        except GraphBubbleUp:  # a pause (interrupt) or a hand-off: control flow, not an outcome
            raise
        except Exception as error:
            self.log.row(self.who, request.tool_call["id"], f"raised {type(error).__name__}")
            raise
        self._seen(request, result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            self.log.row(self.who, request.tool_call["id"], f"raised {type(error).__name__}")
            raise
        self._seen(request, result)
        return result


def _readable(error: BaseException, request: Any) -> str:
    return f"{request.tool_call['name']} failed ({type(error).__name__})"


def _middlewares(log: Log, flagged: tuple[str, ...]) -> dict[str, AgentMiddleware]:
    return {
        "ledger": _Ledger(log, "ledger"),
        "review": HumanInTheLoopMiddleware(
            interrupt_on=dict.fromkeys(flagged, True), interrupt_mode="per_call"
        ),
        "errors": ToolErrorMiddleware(_readable),
        "retry": ToolRetryMiddleware(
            max_retries=2, retry_on=(ConnectionError,), on_failure="error", initial_delay=0, jitter=False
        ),
        "audit": _Ledger(log, "audit"),
    }


def _names(order: Any) -> tuple[str, ...]:
    """`order` as five plain names, or `CheckFailed` saying what is wrong with it."""
    known = tuple(name for name, _ in MIDDLEWARES)
    where = section(LESSON, ORDER_HEADING)
    if type(order) not in (list, tuple):
        raise fail(
            "`ORDER` must be a list of names",
            key="q2",
            expected=f"a list of the five names {list(known)}, outermost first",
            observed=shorten(f"a {type(order).__name__}: {order!r}", 120),
            where=where,
        )
    names = []
    for item in order:
        if type(item) is not str:
            raise fail(
                "every entry of `ORDER` must be a name (a str)",
                key="q2",
                expected=f"names from {list(known)}",
                observed=shorten(f"a {type(item).__name__}: {item!r}", 120),
                where=where,
            )
        names.append(str(item))
    if sorted(names) != sorted(known):
        missing = [n for n in known if n not in names]
        unknown = [n for n in names if n not in known]
        twice = sorted({n for n in names if names.count(n) > 1})
        raise fail(
            "`ORDER` must list each of the five middlewares exactly once",
            key="q2",
            expected=f"{list(known)} in some order",
            observed=", ".join(
                part
                for part in (
                    f"missing {missing}" if missing else "",
                    f"unknown {unknown}" if unknown else "",
                    f"twice {twice}" if twice else "",
                )
                if part
            )
            or repr(names),
            where=where,
        )
    return tuple(names)


def _rows(run: Run, who: str) -> list[tuple[str, str]]:
    return [(call_id, what) for w, call_id, what in run.log.rows if w == who]


def case_order_review_asks_once(run: Run, s: Scenario) -> None:
    asked: dict[str, int] = {}
    for _, call_id in run.log.questions:
        asked[call_id] = asked.get(call_id, 0) + 1
    twice = [c for c in s.calls if asked.get(c.id, 0) > 1]
    if twice:
        call = twice[0]
        raise fail(
            "a transfer was put to the reviewer more than once",
            expected="one question per flagged call, however many attempts follow",
            observed=f"asked {asked[call.id]} times about {call.tool}({call.key}); the bank saw "
            f"{len(run.log.runs_of(call.key))} attempt(s)",
            why="`review` is inside `retry`: each attempt passes the review again, and each resume re-runs "
            "the earlier attempts — list review before retry",
            where=section(LESSON, PER_CALL_HEADING),
        )


def case_order_failures_reach_model(run: Run, s: Scenario) -> None:
    if run.crash or not run.finished:
        raise fail(
            "the run did not finish",
            expected="every failure answered by an error ToolMessage, then the model's final answer",
            observed=shorten(run.crash or "no final answer", 160),
            where=section(LESSON, CHANGES_HEADING),
        )
    for call in s.calls:
        runs = len(run.log.runs_of(call.key))
        answer = next((a for a in run.answers if a[0] == call.id), None)
        want = {"flaky": (call.fails + 1, "success"), "down": (3, "error"), "closed": (1, "error")}.get(
            call.role
        )
        if want and (runs, answer[1] if answer else None) != want:
            asked = sum(1 for _, call_id in run.log.questions if call_id == call.id)
            raise fail(
                f"{call.role} transfer: the retry and the error handler",
                expected=f"{want[0]} attempt(s), then "
                f"{'an' if want[1] == 'error' else 'a'} {want[1]} ToolMessage",
                observed=f"{runs} attempt(s) after {asked} question(s); "
                f"answer {answer[1:] if answer else None}",
                why=_attempts_why(call, runs, asked, want[0]),
                where=(section(LESSON, PER_CALL_HEADING) if runs > want[0] and asked > 1
                       else section(LESSON, CHANGES_HEADING)),
            )


def _attempts_why(call: Call, runs: int, asked: int, wanted: int) -> str:
    """Why a transfer got other attempts than the retry makes, read from what happened to it."""
    if runs > wanted and asked > 1:
        return (
            f"the reviewer was asked {asked} times about this one call: `review` is inside `retry`, so each "
            "attempt passes the review again and each resume re-runs the earlier attempts — list review "
            "before retry"
        )
    if runs < wanted and call.role != "closed":
        return (
            f"the first failure ended the call after {runs} attempt(s): `errors` inside `retry` turns each "
            "failure into a message before the retry sees it, so nothing is retried — list errors before "
            "retry"
        )
    if runs > wanted:
        return (
            "more attempts than the retry makes (3 for a ConnectionError, 1 for a ValueError): a layer "
            "outside the retry ran the call again"
        )
    return (
        "the right attempts, the wrong answer: the error handler must sit outside the retry, so the retry "
        "sees each failure and the handler answers the one the retry gives up on"
    )


def case_order_audit_every_attempt(run: Run, s: Scenario) -> None:
    rows = _rows(run, "audit")
    for call in s.calls:
        if call.role not in ("flaky", "down", "closed"):
            continue
        mine = [what for call_id, what in rows if call_id == call.id]
        runs = len(run.log.runs_of(call.key))
        if len(mine) != runs:
            raise fail(
                "the audit does not have one row per attempt",
                expected=f"{runs} audit row(s) for {call.tool}({call.key}): one per attempt the bank "
                "received",
                observed=f"{len(mine)}: {mine}",
                why="a layer sees only what the layers inside it let through: the audit must sit inside "
                "the retry to see each attempt",
                where=section(LESSON, CHANGES_HEADING),
            )


def case_order_ledger_matches_model(run: Run, s: Scenario) -> None:
    rows = _rows(run, "ledger")
    read = {call_id: f"{status}: {text}" for call_id, status, text in run.answers}
    for call in s.calls:
        mine = [what for call_id, what in rows if call_id == call.id]
        if mine != [read.get(call.id)]:
            raise fail(
                f"the ledger's row for {call.tool}({call.key}) is not what the model read",
                expected=f"one row: {shorten(read.get(call.id), 90)}",
                observed=f"{len(mine)} row(s): {shorten(mine, 140)}",
                why="the ledger sees what the layers inside it hand back: outermost, it sees the model's "
                "answer for every call — rejected ones (the review answers them itself) and failures "
                "(after the error handler turned them into messages)",
                where=section(LESSON, CHANGES_HEADING),
            )


Q2_CASES = (
    (
        "the run finishes; the dead bank and the closed account reach the model",
        case_order_failures_reach_model,
    ),
    ("each transfer asked about once", case_order_review_asks_once),
    ("the audit: one row per attempt", case_order_audit_every_attempt),
    ("the ledger: one row per call, what the model read", case_order_ledger_matches_model),
)


def check_order(order: Any, *, seed: int | None = None) -> str:
    names = _names(order)
    rng = random.Random(seed)
    scenario = _draw(rng, closed=True, plain=False)
    log = Log()
    tools = _tools(scenario, log)
    made = _middlewares(log, scenario.flagged)
    agent = _course_agent(scenario, tools, [made[n] for n in names])
    run = _play(agent, scenario, log, "invoke")
    cases = Cases("q2")
    for name, case in Q2_CASES:
        with cases.case(name):
            case(run, scenario)
    return cases.result(
        f"{' → '.join(names)}: one question per transfer, every attempt audited, failures retried and "
        "then reported, the ledger holding what the model read."
    )


def _course_agent(scenario: Scenario, tools: list[BaseTool], middleware: list) -> Any:
    from langchain.agents import create_agent

    return create_agent(_model(scenario), tools, middleware=middleware, checkpointer=InMemorySaver())


q2 = Exercise(
    "14",
    "q2",
    ("ORDER",),
    check_order,
    (
        "Take the rules one at a time: the first listed is the outermost layer, and a layer sees only what "
        "the layers inside it let through. Which must see every attempt? Which must see what the model "
        "reads? Which must not be passed again on every attempt?",
        "audit inside retry (it sees each attempt); review and errors outside retry (asked once; the "
        "retry sees the exceptions); ledger outermost (it sees rejections, which the review answers "
        "itself, and the error handler's messages).",
    ),
)

__all__ = ["MIDDLEWARES", "CheckFailed", "make_tools", "q1", "q2"]

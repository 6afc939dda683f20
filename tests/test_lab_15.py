"""Lab 15 as a learner meets it: for each exercise, correct tools written differently are accepted,
and the wrong tools beginners write (the user from the model, a global or the old `configurable`;
a key that collides; no answer when the store or the context is missing; a lock per call or around
half the read-modify-write; the thread-local request id; a sync `put` in an async tool ...) are
refused with a message naming the mistake. A hang is cut; a learner exception is a verdict.

The answers run concurrently (their checks mostly wait), so the whole set stays fast.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
from typing import Annotated

import pytest
from lab_checks import accepted, assert_verdicts, rejected, verdicts
from langchain_core.tools import StructuredTool, tool
from langgraph.config import get_store
from langgraph.prebuilt import InjectedStore, ToolRuntime
from langgraph.runtime import get_runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

import helpers.labs as core
from helpers.labs import lab15, solution_namespace
from helpers.labs.lab15 import REQUEST_ID, Caller, request_local


def test_lab15_solution_passes_every_exercise(capsys):
    namespace = solution_namespace("15")
    for exercise in (lab15.q1, lab15.q2, lab15.q3):
        accepted(exercise, namespace, capsys)


# -- q1: save_note -------------------------------------------------------------------------------------
@tool("save_note")
def note_early_returns(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    store, caller = runtime.store, runtime.context
    if not store:
        return "Sorry: this graph has no store, nothing saved."
    if caller is None:
        return "Sorry: the run has no context (who is calling?), nothing saved."
    store.put(("notes", caller.user), runtime.tool_call_id, {"text": text})
    return f"Note saved for {caller.user}."


def _note_function(text: str, runtime: ToolRuntime[Caller]) -> str:
    """Save a note."""
    missing = [
        name for name, value in (("store", runtime.store), ("context", runtime.context)) if value is None
    ]
    if missing:
        return f"Error: missing {' and '.join(missing)}"
    namespace = ("notes", runtime.context.user)
    runtime.store.put(namespace, key=runtime.tool_call_id, value=dict(text=text))
    return "ok, " + runtime.context.user


note_from_function = StructuredTool.from_function(_note_function, name="save_note")


def _namespace_of(user: str) -> tuple:
    return ("notes", user)


@tool("save_note")
def note_helper_with_argument(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (a helper given the user)."
    try:
        user = runtime.context.user
    except AttributeError:
        return "Error: no context= for this run"
    if runtime.store is None:
        return "Error: no store"
    runtime.store.put(_namespace_of(user), runtime.tool_call_id, {"text": text})
    return f"saved for {user}"


@tool("save_note")
def note_checks_first(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note, once per call (looks before it writes)."
    if runtime.store is None or runtime.context is None:
        return "Error: " + ("store" if runtime.store is None else "context") + " missing"
    user = runtime.context.user
    if runtime.store.get(("notes", user), runtime.tool_call_id) is None:
        runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
    return f"{user}: saved"


@tool("save_note")
def note_user_from_model(text: str, user: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note for a user."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
    return f"saved for {user}"


NOTEBOOK_USER = "ann"


@tool("save_note")
def note_notebook_global(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", NOTEBOOK_USER), runtime.tool_call_id, {"text": text})
    return f"saved for {NOTEBOOK_USER}"


@tool("save_note")
def note_configurable(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (the user the old way)."
    if runtime.store is None:
        return "Error: no store"
    user = runtime.config["configurable"]["user"]
    runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
    return f"saved for {user}"


@tool("save_note")
def note_keyed_by_text(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", runtime.context.user), text, {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_fixed_key(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", runtime.context.user), "note", {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_flat_namespace(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    user = runtime.context.user
    runtime.store.put(("notes",), f"{user}-{runtime.tool_call_id}", {"text": text, "user": user})
    return f"saved for {user}"


@tool("save_note")
def note_no_store_check(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.context is None:
        return "Error: no context"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_raises_without_store(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None:
        raise ValueError("no store: compile the graph with store=")
    if runtime.context is None:
        return "Error: no context"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_injected_store(
    text: str, runtime: ToolRuntime[Caller], store: Annotated[BaseStore, InjectedStore()]
) -> str:
    "Save a note."
    if runtime.context is None:
        return "Error: no context"
    store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_no_context_check(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None:
        return "Error: no store"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


CURRENT: dict = {}


def _my_namespace() -> tuple:
    return ("notes", CURRENT["user"])


@tool("save_note")
def note_global_for_a_helper(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note unless it is there already (the user kept for a helper)."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    CURRENT["user"] = runtime.context.user
    if not any(
        item.value["text"] == text and item.key == runtime.tool_call_id
        for item in runtime.store.search(_my_namespace())
    ):
        runtime.store.put(_my_namespace(), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_from_the_run(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (the store and the context read from the run around the call)."
    store, context = get_store(), get_runtime(Caller).context
    if store is None or context is None:
        return "Error: no store or no context"
    store.put(("notes", context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {context.user}"


@tool("save_note")
def note_returns_dict(text: str, runtime: ToolRuntime[Caller]) -> dict:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return {"error": "no store or no context"}
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return {"saved": True, "user": runtime.context.user}


@tool("save_note")
def note_wrong_value(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"note": text})
    return f"saved for {runtime.context.user}"


@tool("save_note")
def note_stored_in_a_throwaway(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (a store of its own when the graph has none)."
    if runtime.context is None:
        return "Error: no context"
    store = runtime.store or InMemoryStore()
    store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"Note stored for {runtime.context.user}"


@tool("save_note")
def note_claims_saved_without_context(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note."
    if runtime.store is None:
        return "Error: no store"
    if runtime.context is None:
        return "saved (context was not given)"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


USER_SET_IN_THE_NOTEBOOK = contextvars.ContextVar("user", default="ann")


@tool("save_note")
def note_user_from_a_contextvar(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (the user from a ContextVar the notebook set)."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    user = USER_SET_IN_THE_NOTEBOOK.get()
    runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
    return f"saved for {user}"


def _friendly_note(answer: str):
    """A correct save_note whose answer is `answer.format(user=...)`, words that hold other users' names
    inside them ("Please" holds "lea", "custom" holds "tom")."""

    def save_note(text: str, runtime: ToolRuntime[Caller]) -> str:
        """Save a note."""
        if runtime.store is None:
            return "Sorry, there is no store, so nothing was saved."
        if runtime.context is None:
            return "Sorry, there is no context, so I do not know who you are."
        user = runtime.context.user
        runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})
        return answer.format(user=user)

    return StructuredTool.from_function(save_note)


def test_lab15_q1_answers_name_users_as_words_whatever_the_draw(monkeypatch, capsys):
    assert not lab15._names("lea", "Saved, tom. Please ask me.") and lab15._names("tom", "Saved, tom. Please")
    assert not lab15._names("tom", "Note saved to mia's custom notes") and lab15._names("mia", "mia's notes")
    please = _friendly_note("Saved, {user}. Please ask me to list your notes any time.")
    custom = _friendly_note("Note saved to {user}'s custom notes")
    seen = set()
    for seed in range(8):
        monkeypatch.setattr(lab15, "rng", lambda seed=seed: random.Random(seed))
        seen |= set(lab15.draw_notes(random.Random(seed)).users)
        accepted(lab15.q1, {"save_note": please}, capsys)
        accepted(lab15.q1, {"save_note": custom}, capsys)
    assert {"lea", "tom"} <= seen  # the names hidden in "Please" and "custom" were drawn


def test_lab15_q1_an_answer_that_says_saved_when_nothing_was_is_refused():
    for said in ("Note stored for mia", "saved (context was not given)", "Done!", "OK, noted for you"):
        assert lab15._claims_saved(said), said
    for said in (
        "Sorry: this graph has no store, nothing saved.",
        "Error: no store to save the note in; compile the graph with store=...",
        "Error: no context: invoke the graph with context=Caller(user=...)",
        "No store, so the note wasn't saved",
        "Not saved: the run has no context",
    ):
        assert not lab15._claims_saved(said), said


def test_lab15_q1_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "solution": solution_namespace("15")["save_note"],
        "early returns": note_early_returns,
        "StructuredTool.from_function": note_from_function,
        "a helper given the user": note_helper_with_argument,
        "looks before it writes": note_checks_first,
        "user from the model": note_user_from_model,
        "the notebook's user": note_notebook_global,
        "user from configurable": note_configurable,
        "keyed by text": note_keyed_by_text,
        "one fixed key": note_fixed_key,
        "flat namespace": note_flat_namespace,
        "no store check": note_no_store_check,
        "raises without a store": note_raises_without_store,
        "InjectedStore": note_injected_store,
        "no context check": note_no_context_check,
        "a global for a helper": note_global_for_a_helper,
        "get_store() and get_runtime()": note_from_the_run,
        "returns a dict": note_returns_dict,
        "another value": note_wrong_value,
        "a throwaway store": note_stored_in_a_throwaway,
        "claims saved without context": note_claims_saved_without_context,
        "the notebook's ContextVar": note_user_from_a_contextvar,
    }
    assert_verdicts(
        verdicts(lambda answer: lab15.q1.run({"save_note": answer}), answers),
        {
            "solution": (),
            "early returns": (),
            "StructuredTool.from_function": (),
            "a helper given the user": (),
            "looks before it writes": (),
            "user from the model": ("with the arguments ['text'] only", "would be filled in by the model"),
            "the notebook's user": ("names its own caller", "runtime.context.user"),
            "user from configurable": ("KeyError", "not in `config['configurable']`"),
            "keyed by text": ("keyed by its call's id", "runtime.tool_call_id"),
            "one fixed key": ("keyed by its call's id",),
            "flat namespace": ("namespaces no caller of this wave has", "('notes', user)"),
            "no store check": (
                "a graph compiled without a store",
                "'NoneType' object has no attribute 'put'",
            ),
            "raises without a store": ("a graph compiled without a store", "ValueError: no store"),
            "InjectedStore": ("a graph compiled without a store", "Cannot inject store"),
            "no context check": ("a run invoked without context=", "AttributeError"),
            "a global for a helper": (
                "another user's namespace",
                "overwritten by the calls running beside it",
            ),
            "get_store() and get_runtime()": (
                "looked for a graph run",
                "a direct call (a unit test) has none",
            ),
            "returns a dict": ("returns a str naming the caller", "dict"),
            "another value": ("holds something else", "{'note':"),
            "a throwaway store": ("with no store, the answer says the note was saved", "thrown away"),
            "claims saved without context": ("with no context=, the answer says the note was saved",),
            "the notebook's ContextVar": ("a str naming the caller", "the runtime it was handed says"),
        },
    )


# -- q2: add_points ------------------------------------------------------------------------------------
def _adder(
    name: str = "add_points",
    *,
    around: str = "both",
    make_lock=threading.Lock,
    shared: bool = True,
    report_own: bool = False,
):
    """add_points with a lock `around` the get, the put, both or neither (a new one per call unless
    `shared`)."""
    lock = make_lock()

    def add_points(points: int, runtime: ToolRuntime[Caller]) -> str:
        """Add points to the caller's score and say the new total."""
        user = runtime.context.user
        held = lock if shared else make_lock()
        if around in ("both", "get"):
            held.acquire()
        item = runtime.store.get(("scores",), user)
        if around == "get":
            held.release()
        total = (item.value["total"] if item else 0) + points
        if around == "put":
            held.acquire()
        runtime.store.put(("scores",), user, {"total": total})
        if around in ("both", "put"):
            held.release()
        return f"{user} has {points if report_own else total} points"

    return StructuredTool.from_function(add_points, name=name)


REREAD_LOCK = threading.Lock()


@tool("add_points")
def add_points_reread_after_the_lock(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points (the answer's total read again once the lock is released)."
    user = runtime.context.user
    with REREAD_LOCK:
        item = runtime.store.get(("scores",), user)
        runtime.store.put(("scores",), user, {"total": (item.value["total"] if item else 0) + points})
    return f"{user} has {runtime.store.get(('scores',), user).value['total']} points"


def _shaped_adder(value):
    """add_points, locked, storing `value(total, points)`."""
    lock = threading.Lock()

    def add_points(points: int, runtime: ToolRuntime[Caller]) -> str:
        """Add points to the caller's score and say the new total."""
        user = runtime.context.user
        with lock:
            item = runtime.store.get(("scores",), user)
            total = (item.value["total"] if item else 0) + points
            runtime.store.put(("scores",), user, value(total, points))
        return f"{user} has {int(total)} points"

    return StructuredTool.from_function(add_points)


@tool("add_points")
def add_points_read_by_search(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points (the total found with search, no lock)."
    user = runtime.context.user
    found = [i for i in runtime.store.search(("scores",)) if i.key == user]
    total = (found[0].value["total"] if found else 0) + points
    runtime.store.put(("scores",), user, {"total": total})
    return f"{user} has {total} points"


LOCKS: dict = {}


@tool("add_points")
def add_points_per_user_lock(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points to the caller's score and say the new total."
    user = runtime.context.user
    with LOCKS.setdefault(user, threading.Lock()):
        item = runtime.store.get(("scores",), user)
        total = (item.value["total"] if item else 0) + points
        runtime.store.put(("scores",), user, {"total": total})
    return f"{user} has {total} points"


class Scores:
    lock = threading.RLock()


@tool("add_points")
def add_points_class_rlock(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points to the caller's score and say the new total."
    Scores.lock.acquire()
    try:
        user = runtime.context.user
        old = runtime.store.get(("scores",), user)
        new = points + (0 if old is None else old.value["total"])
        runtime.store.put(("scores",), user, {"total": new})
        return f"{user} has {new} points"
    finally:
        Scores.lock.release()


ALOCK = asyncio.Lock()


@tool("add_points")
async def add_points_async_lock(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points to the caller's score and say the new total."
    user = runtime.context.user
    async with ALOCK:
        item = await runtime.store.aget(("scores",), user)
        total = (item.value["total"] if item else 0) + points
        await runtime.store.aput(("scores",), user, {"total": total})
    return f"{user} has {total} points"


TOTALS: dict = {}
TOTALS_LOCK = threading.Lock()


@tool("add_points")
def add_points_module_dict(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points to the caller's score and say the new total (kept in memory)."
    user = runtime.context.user
    with TOTALS_LOCK:
        TOTALS[user] = TOTALS.get(user, 0) + points
        runtime.store.put(("scores",), user, {"total": TOTALS[user]})
        return f"{user} has {TOTALS[user]} points"


ITEMS_LOCK = threading.Lock()


@tool("add_points")
def add_points_item_per_call(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points: one item per call, summed (the cross-process fix, total kept elsewhere)."
    user = runtime.context.user
    with ITEMS_LOCK:
        runtime.store.put(("points", user), runtime.tool_call_id, {"points": points})
        total = sum(item.value["points"] for item in runtime.store.search(("points", user), limit=100))
    return f"{user} has {total} points"


def test_lab15_q2_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "solution": solution_namespace("15")["add_points"],
        "acquire/release": _adder(),
        "a lock per user": add_points_per_user_lock,
        "a class RLock": add_points_class_rlock,
        "Semaphore(1)": _adder(make_lock=lambda: threading.Semaphore(1)),
        "no lock": _adder(around="neither"),
        "a new lock per call": _adder(shared=False),
        "lock around the get only": _adder(around="get"),
        "lock around the put only": _adder(around="put"),
        "async def + asyncio.Lock": add_points_async_lock,
        "a module dict": add_points_module_dict,
        "reports its own points": _adder(report_own=True),
        "one item per call": add_points_item_per_call,
        "re-read after the lock": add_points_reread_after_the_lock,
        "an extra field": _shaped_adder(lambda total, points: {"total": total, "last_added": points}),
        "a float total": _shaped_adder(lambda total, points: {"total": float(total)}),
        "read by search": add_points_read_by_search,
    }
    assert_verdicts(
        verdicts(lambda answer: lab15.q2.run({"add_points": answer}), answers),
        {
            "solution": (),
            "acquire/release": (),
            "a lock per user": (),
            "a class RLock": (),
            "Semaphore(1)": (),
            "no lock": ("lost an update", "came before any call wrote it", "hold ONE lock"),
            "a new lock per call": ("lost an update", "came before any call wrote it"),
            "lock around the get only": ("lost an update", "came before any call wrote it"),
            "lock around the put only": ("lost an update", "came before any call wrote it"),
            "async def + asyncio.Lock": ("must be a sync tool",),
            "a module dict": ("lost an update", "start from the total the store holds"),
            "reports its own points": ("do not add up one call after another",),
            "one item per call": ("was never written back", "('scores',) and the user"),
            "re-read after the lock": ("reported a total it did not write", "read again after the lock"),
            "an extra field": ("stored in another shape", "'last_added'"),
            "a float total": ("stored in another shape", "'total' a float"),
            "read by search": ("lost an update", "`get` or `search`", "hold ONE lock"),
        },
    )


# -- q3: audit -----------------------------------------------------------------------------------------
WEB_LAYER = {"REQUEST_ID": REQUEST_ID, "request_local": request_local}


@tool("audit")
async def audit_id_first(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    request = REQUEST_ID.get()
    await asyncio.sleep(0)
    await runtime.store.aput(
        namespace=("audit", runtime.context.user),
        key=runtime.tool_call_id,
        value={"request": request, "event": event},
    )
    return "ok"


async def _audit_coroutine(event: str, runtime: ToolRuntime[Caller]) -> str:
    """Record an event."""
    user = runtime.context.user
    await runtime.store.aput(
        ("audit", user), runtime.tool_call_id, dict(event=event, request=REQUEST_ID.get())
    )
    return f"{event} logged for {user}"


audit_from_function = StructuredTool.from_function(coroutine=_audit_coroutine, name="audit")


@tool("audit")
async def audit_checks_missing(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    ctx = runtime.context
    await runtime.store.aput(
        ("audit", ctx.user), runtime.tool_call_id, {"event": event, "request": REQUEST_ID.get()}
    )
    return f"logged {event!r}"


@tool("audit")
async def audit_thread_local(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    record = {"event": event, "request": request_local.id}
    await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record)
    return "logged"


@tool("audit")
async def audit_sync_put(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    runtime.store.put(
        ("audit", runtime.context.user), runtime.tool_call_id, {"event": event, "request": REQUEST_ID.get()}
    )
    return "logged"


@tool("audit")
def audit_sync_tool(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    runtime.store.put(
        ("audit", runtime.context.user), runtime.tool_call_id, {"event": event, "request": REQUEST_ID.get()}
    )
    return "logged"


@tool("audit")
async def audit_keyed_by_request(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    request = REQUEST_ID.get()
    await runtime.store.aput(("audit", runtime.context.user), request, {"event": event, "request": request})
    return "logged"


REQUEST_AT_IMPORT = REQUEST_ID.get()


@tool("audit")
async def audit_read_at_import(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    await runtime.store.aput(
        ("audit", runtime.context.user), runtime.tool_call_id, {"event": event, "request": REQUEST_AT_IMPORT}
    )
    return "logged"


LAST: dict = {}


@tool("audit")
async def audit_global_across_await(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (the request kept in a global across an await)."
    LAST["request"] = REQUEST_ID.get()
    await asyncio.sleep(0.01)
    await runtime.store.aput(
        ("audit", runtime.context.user), runtime.tool_call_id, {"event": event, "request": LAST["request"]}
    )
    return "logged"


@tool("audit")
async def audit_user_from_configurable(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    user = runtime.config["configurable"]["user"]
    await runtime.store.aput(
        ("audit", user), runtime.tool_call_id, {"event": event, "request": REQUEST_ID.get()}
    )
    return "logged"


@tool("audit")
async def audit_not_awaited(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (fire and forget)."
    record = {"event": event, "request": REQUEST_ID.get()}
    asyncio.ensure_future(runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record))
    return "queued"


@tool("audit")
async def audit_run_id(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (the run's id as the request's)."
    record = {"event": event, "request": str(runtime.config.get("run_id"))}
    await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record)
    return "logged"


@tool("audit")
async def audit_none_tag(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (getattr with a None default)."
    record = {"event": event, "request": getattr(runtime, "request_id", None)}
    await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record)
    return "logged"


@tool("audit")
async def audit_to_thread(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (the sync put handed to a thread, awaited)."
    record = {"event": event, "request": REQUEST_ID.get()}
    await asyncio.to_thread(runtime.store.put, ("audit", runtime.context.user), runtime.tool_call_id, record)
    return "audited"


def test_lab15_q3_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "solution": solution_namespace("15")["audit"],
        "request id read first": audit_id_first,
        "StructuredTool coroutine": audit_from_function,
        "checks what is missing": audit_checks_missing,
        "the thread-local": audit_thread_local,
        "a sync put": audit_sync_put,
        "a sync tool": audit_sync_tool,
        "keyed by the request": audit_keyed_by_request,
        "read at import": audit_read_at_import,
        "a global across an await": audit_global_across_await,
        "user from configurable": audit_user_from_configurable,
        "not awaited": audit_not_awaited,
        "the run's id": audit_run_id,
        "a None tag": audit_none_tag,
        "awaited in a thread": audit_to_thread,
    }
    assert_verdicts(
        verdicts(lambda answer: lab15.q3.run({"audit": answer, **WEB_LAYER}), answers),
        {
            "solution": (),
            "request id read first": (),
            "StructuredTool coroutine": (),
            "checks what is missing": (),
            "the thread-local": ("another request's id", "`request_local` (the loop's one thread)"),
            "a sync put": ("InvalidStateError", "await runtime.store.aput"),
            "a sync tool": ("must be an `async def` tool",),
            "keyed by the request": ("keyed by its call's id",),
            "read at import": ("another request's id", "the ContextVar's default"),
            "a global across an await": ("another request's id",),
            "user from configurable": ("KeyError", "runtime.context.user"),
            "not awaited": ("the answer came before the write: await aput", "'queued'"),
            "the run's id": ("carries no request's id", "tagged 'None'"),
            "a None tag": ("request id is not a str", "tagged None"),
            "awaited in a thread": (),
        },
    )


# -- hangs, exceptions, stubs --------------------------------------------------------------------------
@tool("save_note")
def note_hangs(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (waits for an event nobody sets)."
    threading.Event().wait(30)
    return "saved"


@tool("add_points")
def points_exit(points: int, runtime: ToolRuntime[Caller]) -> str:
    "Add points (exits)."
    raise SystemExit(3)


@tool("audit")
async def audit_generator_exit(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (raises GeneratorExit)."
    raise GeneratorExit


@tool("audit")
async def audit_stub(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event."
    raise NotImplementedError("Await aput of the record.")


def test_lab15_a_hang_is_cut_and_an_exception_or_a_stub_is_a_verdict(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 2.0)
    start = time.monotonic()
    message = rejected(lab15.q1, {"save_note": note_hangs}, "did not return within 2 s", "not tried")
    assert time.monotonic() - start < 8, message
    rejected(lab15.q2, {"add_points": points_exit}, "SystemExit: 3", "points_exit")
    rejected(lab15.q3, {"audit": audit_generator_exit, **WEB_LAYER}, "your tool raised GeneratorExit")
    rejected(lab15.q3, {"audit": audit_stub, **WEB_LAYER}, "still raises NotImplementedError")


@tool("save_note")
def note_interrupted_in_the_pool(text: str, runtime: ToolRuntime[Caller]) -> str:
    "Save a note (KeyboardInterrupt in ToolNode's pool threads only, as the stop button lands there)."
    if threading.current_thread().name.startswith("ThreadPoolExecutor"):
        raise KeyboardInterrupt
    if runtime.store is None or runtime.context is None:
        return "Error: no store or no context"
    runtime.store.put(("notes", runtime.context.user), runtime.tool_call_id, {"text": text})
    return f"saved for {runtime.context.user}"


def test_lab15_a_keyboard_interrupt_under_invoke_stops_the_check():
    with pytest.raises(core.CheckStopped) as info:
        lab15.q1.check({"save_note": note_interrupted_in_the_pool})
    assert "check stopped: KeyboardInterrupt" in str(info.value), str(info.value)


# -- a grading kernel: the checks loaded apart from the notebook's own imports ----------------------------
NOTEBOOKS_REQUEST_ID = contextvars.ContextVar("REQUEST_ID", default="<no request>")
NOTEBOOKS_LOCAL = threading.local()


@tool("audit")
async def audit_notebooks_copy(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (reading the notebook's own copy of REQUEST_ID)."
    record = {"event": event, "request": NOTEBOOKS_REQUEST_ID.get()}
    await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record)
    return "logged"


@tool("audit")
async def audit_notebooks_local(event: str, runtime: ToolRuntime[Caller]) -> str:
    "Record an event (reading the notebook's own copy of request_local)."
    record = {"event": event, "request": NOTEBOOKS_LOCAL.id}
    await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, record)
    return "logged"


def test_lab15_q3_sets_the_notebooks_own_request_id_as_a_grading_kernel_loads_another_copy(capsys):
    copies = {"REQUEST_ID": NOTEBOOKS_REQUEST_ID, "request_local": NOTEBOOKS_LOCAL}
    accepted(lab15.q3, {"audit": audit_notebooks_copy, **copies}, capsys)
    rejected(lab15.q3, {"audit": audit_notebooks_local, **copies}, "another request's id", "request_local")
    rebound = {"audit": audit_notebooks_copy, "REQUEST_ID": "req-1", "request_local": NOTEBOOKS_LOCAL}
    rejected(lab15.q3, rebound, "not the web layer's ContextVar", "do not rebind")

"""Lab 16 — Tool definitions the model and the tools node agree on.

After `notebooks/16_tool_definitions.ipynb`.

q1: `make_tools(shop) -> list` of the shop's four tools, fixed from `make_tools_as_written` (shown in
    the lab) so that what the model is told — the schema `bind_tools` sends: names, descriptions,
    parameters, defaults — and what ToolNode runs agree with each other and with `CATALOGUE`: one
    tool per name, a call missing a parameter the model is told is required is refused before the
    shop is called, the defaults the model is told are the ones the body receives, the docstring's
    `Args:` reach the parameters, the read-only tool never reserves.
q2: `make_refund(shop) -> tool`: `refund_order(order_id, amount_cents)` whose args_schema refuses a
    numeric string, a float, a bool, zero, a negative amount, an unknown key, a missing amount and a
    numeric order id — each with an error message that names the field, before the shop is called —
    accepts right calls with their exact values (1 cent, and billions: the spec has no upper limit),
    and tells the model the lower bound it enforces and no upper one.
q3: `make_fetch_rows(shop) -> tool`: `fetch_rows(table)` with `response_format="content_and_artifact"`
    (or a ToolMessage with an artifact): in an agent run, the rows reach the graph's state as the
    artifact while the model reads a one-line summary naming the table and the count.

Each check draws its scenario (the words, ids, amounts, skus, tables and their sizes) for every run,
and every run holds every hard case: an omitted default and explicit values, a required parameter
left out, a read-only call, each refused input, a very large amount, an empty table and a large one.
ToolNode is awaited, as an agent runs it, so sync and `async def` tools both count. The check keeps
its own book of every call to the `Shop` it hands the learner's code, as it happens, with the values'
exact types (nothing on the shop refers to that book, so a tool cannot take a call back), and relates
each outcome to the call that caused it. Only plain builtins count: what the model is told is read
through a JSON round trip, what the shop received must have the exact type, a ToolMessage is read
from its fields only when it is exactly a `ToolMessage`, and a content or artifact must be made of
exact `str`, `int`, `list` and `dict` values.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_openai_messages
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from helpers.labs import (
    Case,
    Cases,
    CheckFailed,
    Exercise,
    LearnerHung,
    LearnerRaised,
    StillAStub,
    fail,
    record_failure,
    rng,
    run_learner,
    run_limited,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel

LESSON = "16_tool_definitions"
DEFAULTS_HEADING = "Which default wins"
COERCION_HEADING = "Coercion, extra arguments, strict models"
MESSAGE_HEADING = "The exact message the model reads"
PARSE_HEADING = "2. `parse_docstring=True`: the schema and the description"
TYPES_HEADING = "Types in `Args:` lines"
REFUSED_HEADING = "9. Deep dive: docstrings the parser refuses"
NAMES_HEADING = "3. Two tools with the same name"
NEXT_TURN_HEADING = "What the model sees on the next turn"
PAIR_HEADING = "A list is not a pair"
CALLED_HEADING = "Called with arguments, or with a ToolCall"
INJECTED_HEADING = "8. Deep dive: Injected parameters and a strict args_schema"
DICT_HEADING = "A JSON-schema `dict` as `args_schema`"

DEFAULTS = section(LESSON, DEFAULTS_HEADING)
COERCION = section(LESSON, COERCION_HEADING)
MESSAGE = section(LESSON, MESSAGE_HEADING)
PARSED = section(LESSON, PARSE_HEADING)
TYPES_IN_ARGS = section(LESSON, TYPES_HEADING)
REFUSED = section(LESSON, REFUSED_HEADING)
SAME_NAME = section(LESSON, NAMES_HEADING)
NEXT_TURN = section(LESSON, NEXT_TURN_HEADING)
NOT_A_PAIR = section(LESSON, PAIR_HEADING)
TOOL_CALL = section(LESSON, CALLED_HEADING)
INJECTED = section(LESSON, INJECTED_HEADING)
DICT_SCHEMA = section(LESSON, DICT_HEADING)

REQUIRED = "required"
"""In `CATALOGUE`: a parameter the model must send (it has no default)."""
ANY = ""
"""In `CATALOGUE`: a parameter whose description the spec leaves to you."""

CATALOGUE = (
    (
        "search_products",
        "Search the product catalogue, one page of results at a time.",
        (("query", "string", REQUIRED, ANY), ("page", "integer", 1, ANY), ("page_size", "integer", 20, ANY)),
    ),
    (
        "convert_price",
        "Convert a price in euros to another currency.",
        (
            ("amount", "number", REQUIRED, "The price in euros."),
            ("currency", "string", REQUIRED, "The target currency's ISO code, e.g. USD."),
        ),
    ),
    (
        "check_stock",
        "How many units of a product are in stock (read-only).",
        (("sku", "string", REQUIRED, ANY),),
    ),
    (
        "reserve_stock",
        "Reserve units of a product for an order.",
        (("sku", "string", REQUIRED, ANY), ("units", "integer", REQUIRED, ANY)),
    ),
)
"""q1's spec: each tool as (name, the description the model reads, its parameters), each parameter
as (name, JSON type, default or REQUIRED, the description the model reads or ANY). The shop method
each tool calls: search_products → `shop.search(query, page, page_size)`, convert_price →
`shop.convert(amount, currency)`, check_stock → `shop.stock(sku)`, reserve_stock →
`shop.reserve(sku, units)`."""

REFUND = (
    "refund_order",
    "Refund part of an order, in cents.",
    (("order_id", "string", REQUIRED), ("amount_cents", "integer", REQUIRED)),
)
"""q2's spec: the tool's name, its description, and its parameters (name, JSON type, REQUIRED).
`amount_cents` is a whole number of cents above 0, with no upper limit; nothing is converted and no
other key accepted.
The body calls `shop.refund(order_id, amount_cents)`."""

FETCH = ("fetch_rows", "Fetch every row of a table.", (("table", "string", REQUIRED),))
"""q3's spec: `fetch_rows(table)` calls `shop.rows(table)`; the rows reach the graph as the
ToolMessage's artifact, the model reads a summary of at most `SUMMARY_CHARS` characters naming the
table and the number of rows (in digits)."""

SUMMARY_CHARS = 120
"""q3: the longest summary the model may read for one call."""

_SCALARS = (str, int, float, bool, type(None))
_TABLE_NAMES = ("orders", "returns", "invoices", "shipments", "refunds", "carts", "reviews", "payments")
_WORDS = ("lamp", "desk", "kettle", "scarf", "teapot", "drill", "mirror", "stool", "rug", "vase")
_CURRENCIES = ("USD", "GBP", "JPY", "CHF", "SEK", "CAD")
_EXTRA_KEYS = ("currency", "reason", "notify_customer", "restock")
_RATES = (("USD", 1.08), ("GBP", 0.85), ("JPY", 162.0), ("CHF", 0.95), ("SEK", 11.4), ("CAD", 1.47))


# == the shop the learner's tools call ===================================================================
class _NotPlain(Exception):
    """A value that is not made of exact builtins (a subclass, an object with its own `==`)."""


def _plain(value: Any, depth: int = 0) -> Any:
    """A copy of `value` built from exact builtins only (str, int, float, bool, None, list, tuple,
    dict with str keys); anything else raises `_NotPlain`. Never calls the value's own methods."""
    kind = type(value)
    if depth > 20:
        raise _NotPlain("nested too deep")
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return kind(_plain(item, depth + 1) for item in value)
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain(f"a {type(key).__name__} key")
            out[key] = _plain(item, depth + 1)
        return out
    raise _NotPlain(kind.__name__)


def _kind_of(value: Any) -> str:
    """A value's exact type name, read without calling its methods."""
    return type(value).__name__


def _safe(value: Any) -> str:
    """`repr` of a plain value; a non-plain one only by its type's name (its own `repr` never runs)."""
    try:
        return shorten(repr(_plain(value)), 80)
    except _NotPlain:
        return f"<a {_kind_of(value)}>"


def _demo_tables() -> dict[str, list[dict]]:
    return {
        "orders": [{"line": i + 1, "sku": f"SKU-{1000 + 7 * i}", "units": 1 + i % 3} for i in range(3)],
        "returns": [],
        "stock_moves": [
            {"line": i + 1, "sku": f"SKU-{2000 + 11 * i}", "units": 1 + i % 5} for i in range(40)
        ],
    }


def _ledger() -> tuple[Callable[[Any], list], Callable[[Any], None], Callable[[Any, tuple], None]]:
    """The check's own record of what the shops it hands out receive: `open_book(shop)` starts one
    (the live list the check reads), `close_book(shop)` ends it, `write(shop, entry)` adds an entry to
    the shop's book, if the check opened one. Nothing on a shop, nor on its methods, refers to the
    books: a tool can add calls, never take one back. Keyed by the shop's `id`, which no tool can
    change; a shop the check did not open records nothing here."""
    books: dict[int, list] = {}
    lock = threading.Lock()

    def open_book(shop: Any) -> list:
        with lock:
            book = books[id(shop)] = []
        return book

    def close_book(shop: Any) -> None:
        with lock:
            books.pop(id(shop), None)

    def write(shop: Any, entry: tuple) -> None:
        with lock:
            book = books.get(id(shop))
            if book is not None:
                book.append(entry)

    return open_book, close_book, write


_open_book, _close_book, _write = _ledger()


def _record(shop: Any, method: str, **values: Any) -> dict[str, Any]:
    """Record one call to `shop`: in the check's book for it first, then in the shop's own list (what
    `calls()` shows). Returns the values as plain builtins (None for one that is not plain)."""
    seen = []
    shown = {}
    for name, value in values.items():
        try:
            plain = _plain(value)
        except _NotPlain:
            plain = None
        seen.append((name, _kind_of(value), plain))
        shown[name] = plain
    entry = (method, tuple(seen))
    _write(shop, entry)
    log = vars(shop).get("_Shop__log")  # what the notebook's `calls()` lists
    if type(log) is list:
        log.append(entry)
    return shown


class Shop:
    """The shop's back end, which the lab's tools call. Every call is recorded as it happens: which
    method, with which values, and each value's exact type; `calls()` lists them. (A check keeps its
    own record of the calls to the shop it hands your code, which your code cannot change.)

    Methods: `search(query, page, page_size)`, `convert(amount, currency)`, `stock(sku)`,
    `reserve(sku, units)`, `refund(order_id, amount_cents)` (each returns a line of text) and
    `rows(table)` (a new list of dicts; the demo shop has `orders`, `returns` and `stock_moves`).

    Example:
        ```python
        shop = Shop()
        shop.search("lamp", 1, 20)
        shop.calls()   # [('search', {'query': 'lamp', 'page': 1, 'page_size': 20})]
        ```
    """

    def __init__(self, tables: dict[str, list[dict]] | None = None) -> None:
        self.__log: list[tuple[str, tuple[tuple[str, str, Any], ...]]] = []
        self.__tables = copy.deepcopy(tables) if tables is not None else _demo_tables()

    def __repr__(self) -> str:
        return f"Shop({len(self.__log)} call(s) so far)"

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Every call so far, in order: `(method, {parameter: value})`."""
        return [(method, {name: value for name, _, value in seen}) for method, seen in list(self.__log)]

    def search(self, query: str, page: int, page_size: int) -> str:
        v = _record(self, "search", query=query, page=page, page_size=page_size)
        return f"{v['page_size']} products matching {v['query']!r}, page {v['page']}"

    def convert(self, amount: float, currency: str) -> str:
        v = _record(self, "convert", amount=amount, currency=currency)
        rate = dict(_RATES).get(v["currency"], 1.0) if type(v["currency"]) is str else 1.0
        total = v["amount"] * rate if type(v["amount"]) in (int, float) else 0.0
        return f"{v['amount']} EUR is {total:.2f} {v['currency']}"

    def stock(self, sku: str) -> str:
        v = _record(self, "stock", sku=sku)
        units = sum(map(ord, str(v["sku"]))) % 40
        return f"{v['sku']}: {units} units in stock"

    def reserve(self, sku: str, units: int) -> str:
        v = _record(self, "reserve", sku=sku, units=units)
        return f"reserved {v['units']} of {v['sku']}"

    def refund(self, order_id: str, amount_cents: int) -> str:
        v = _record(self, "refund", order_id=order_id, amount_cents=amount_cents)
        return f"refunded {v['amount_cents']} cents on {v['order_id']}"

    def rows(self, table: str) -> list[dict]:
        v = _record(self, "rows", table=table)
        if type(v["table"]) is not str or v["table"] not in self.__tables:
            raise KeyError(f"no table {v['table']!r}")
        return copy.deepcopy(self.__tables[v["table"]])


# == what the notebook shows ===============================================================================
def _signature(name: str, parameters: list[tuple[str, str, str]]) -> str:
    """`name(param: type = default, ...)` from (param, type, default text or "") triples."""
    return f"{name}(" + ", ".join(f"{p}: {k}" + (f" = {d}" if d else "") for p, k, d in parameters) + ")"


def print_catalogue() -> None:
    """Print q1's spec: each tool as the model must be told it, the description it reads (and its
    parameters' where the spec names them), and the shop method the tool calls."""
    methods = {
        "search_products": "shop.search(query, page, page_size)",
        "convert_price": "shop.convert(amount, currency)",
        "check_stock": "shop.stock(sku)",
        "reserve_stock": "shop.reserve(sku, units)",
    }
    for name, description, parameters in CATALOGUE:
        shown = [(p, k, "" if d == REQUIRED else repr(d)) for p, k, d, _ in parameters]
        print(f"{_signature(name, shown)}  →  {methods[name]}")
        print(f"    {description!r}")
        for param, _, _, text in parameters:
            if text:
                print(f"    {param}: {text!r}")


def show_tools(tools: list) -> None:
    """Print what a model is told about `tools` — the schemas `bind_tools` sends, as `ChatOpenAI`
    does — in the form `print_catalogue()` uses: each tool's parameters (type, default), its
    description, then each parameter's description, if any."""
    bound = ScriptedChatModel(script=["-"]).bind_tools(list(tools))
    for sent in bound.kwargs["tools"]:
        function = sent["function"]
        parameters = function.get("parameters", {})
        required = parameters.get("required", [])
        properties = parameters.get("properties", {})
        shown = []
        for param, schema in properties.items():
            kind = schema.get("type") or "|".join(str(s.get("type", "?")) for s in schema.get("anyOf", []))
            shown.append((param, kind, "" if param in required else repr(schema.get("default"))))
        print(_signature(function["name"], shown))
        print(f"    {' '.join(str(function.get('description', '')).split())!r}")
        for param, schema in properties.items():
            if "description" in schema:
                print(f"    {param}: {' '.join(str(schema['description']).split())!r}")


def try_call(tools: list, name: str, args: dict, shop: Shop | None = None) -> None:
    """Run one call through a ToolNode of `tools` and print the ToolMessage and what the shop received.

    Sync and `async def` tools both run (the node is awaited, as an agent does). Pass the `shop` the
    tools were made with to see its calls; a tool that raises raises here too.
    """
    batch = [AIMessage("", tool_calls=[{"name": name, "args": args, "id": "call_try", "type": "tool_call"}])]
    (answer,) = run_limited(lambda: ToolNode(list(tools)).ainvoke(batch, runtime=Runtime()), name="try_call")
    print(f"{answer.status}: {answer.content!r}")
    if answer.artifact is not None:
        print(f"artifact: {shorten(repr(answer.artifact), 200)}")
    if shop is not None:
        print(f"the shop received: {shop.calls()}")


# == shared check machinery ================================================================================
def _uid(rng: random.Random, prefix: str, digits: int = 8) -> str:
    return f"{prefix}{uuid.UUID(int=rng.getrandbits(128)).hex[:digits]}"


def _told(learner: Any, what: str, key: str) -> list[dict]:
    """What a model is told about the learner's tools: the functions `bind_tools` sends, as plain JSON."""

    def bind() -> str:
        return json.dumps(ScriptedChatModel(script=["-"]).bind_tools(list(learner)).kwargs["tools"])

    try:
        sent = json.loads(run_learner(bind, name=f"binding {what} to a model"))
    except LearnerRaised as error:
        raise fail(
            f"{what} could not be bound to a model",
            expected="tools `model.bind_tools([...])` accepts",
            observed=str(error),
            where=PARSED,
            key=key,
        ) from None
    return [item["function"] for item in sent]


def _tool_node(tools: list, what: str, key: str) -> tuple[ToolNode, list[str]]:
    """The course's ToolNode around the learner's tools, and the names it keeps (plain str)."""

    def build() -> tuple[ToolNode, list[str]]:
        node = ToolNode(list(tools))
        return node, [n if type(n) is str else f"<a {_kind_of(n)}>" for n in node.tools_by_name]

    try:
        return run_learner(build, name=f"ToolNode({what})")
    except LearnerRaised as error:
        raise fail(
            f"ToolNode refused {what}",
            expected="a list of tools ToolNode accepts",
            observed=str(error),
            where=SAME_NAME,
            key=key,
        ) from None


@contextlib.contextmanager
def _checked_shop(tables: dict[str, list[dict]] | None = None) -> Iterator[tuple[Shop, list]]:
    """A new `Shop` for one check, and the check's own book of its calls (see `_ledger`)."""
    shop = Shop(tables)
    book = _open_book(shop)
    try:
        yield shop, book
    finally:
        _close_book(shop)


def _reply(message: Any) -> dict[str, Any] | None:
    """What the check reads of a ToolMessage, from its fields (`vars`), for an exact `ToolMessage`
    only (None for anything else, whose attributes could run code): its call id, status and content
    (an exact str, else None / "?"), the content's type name and the artifact as it is."""
    if type(message) is not ToolMessage:
        return None
    fields = vars(message)
    call_id, status, content = fields.get("tool_call_id"), fields.get("status"), fields.get("content")
    return {
        "id": call_id if type(call_id) is str else None,
        "status": status if type(status) is str else "?",
        "content": content if type(content) is str else None,
        "content_kind": _kind_of(content),
        "artifact": fields.get("artifact"),
    }


BODY_WHY = (
    "an exception raised in a tool's body is not an argument error: ToolNode's default policy lets it "
    "through and the run stops (lesson 03)"
)


def _crash_why(text: str, args: dict) -> tuple[str, str]:
    """The why and the section for a call whose exception escaped ToolNode, from the exception's text."""
    unknown = re.search(r"unexpected keyword argument '(\w+)'", text)
    if unknown and unknown.group(1) in args:
        return (
            f"the unknown key `{unknown.group(1)}` got through the args_schema (`extra='allow'`, or a "
            "JSON-schema dict, which validates nothing) and was passed to your function, which has no such "
            "parameter: the TypeError stops the run — `extra='forbid'` refuses the key with a message the "
            "model reads",
            COERCION,
        )
    if "missing" in text and "required positional argument" in text:
        return (
            "nothing refused the call before your function ran: the schema ToolNode validates with does not "
            "require what the model is told is required (a JSON-schema dict as args_schema validates "
            "nothing), so the function's own TypeError stops the run",
            DICT_SCHEMA,
        )
    return BODY_WHY, MESSAGE


def _call(node: ToolNode, book: list, name: str, args: dict, call_id: str) -> tuple[dict, list]:
    """One call through the course's ToolNode around the learner's tools, awaited as an agent does (a
    sync tool runs in a worker thread, an `async def` one on the loop): (what the check reads of the
    ToolMessage, the shop's calls made while it ran). An exception that escaped ToolNode is a `fail`
    saying the run crashed."""
    mark = len(book)
    batch = [
        AIMessage(
            "", tool_calls=[{"name": name, "args": copy.deepcopy(args), "id": call_id, "type": "tool_call"}]
        )
    ]
    try:
        out = run_learner(lambda: node.ainvoke(batch, runtime=Runtime()), name=f"ToolNode running {name}")
    except LearnerRaised as error:
        why, where = _crash_why(str(error), args)
        raise fail(
            f"the call {name}({_args_text(args)}) crashed the run",
            expected="a ToolMessage for the call (an argument error is answered with an error ToolMessage)",
            observed=str(error),
            where=where,
            why=why,
        ) from None
    made = list(book)[mark:]
    reply = _reply(out[0]) if type(out) is list and len(out) == 1 else None
    if reply is None:
        raise fail(
            f"the call {name}({_args_text(args)}) gave no ToolMessage",
            expected="ToolNode's answer: one ToolMessage",
            observed=_safe(out)
            if type(out) is not list
            else f"a list of {len(out)} item(s): {[_kind_of(item) for item in out][:4]}",
            where=MESSAGE,
        )
    return reply, made


def _args_text(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _status(reply: dict) -> str:
    return reply["status"]


def _content(reply: dict) -> str | None:
    """The message's content if it is an exact `str`, else None."""
    return reply["content"]


def _received(made: list, method: str) -> list[dict[str, tuple[str, Any]]]:
    """The calls to `method` in `made`, each as {parameter: (exact type, plain value)}."""
    return [{p: (kind, value) for p, kind, value in seen} for m, seen in made if m == method]


def _calls_text(made: list) -> str:
    if not made:
        return "the shop was not called"
    parts = []
    for method, seen in made:
        values = ", ".join(
            f"{p}={value!r}" + ("" if kind in ("str", "int", "float", "bool") else f" ({kind})")
            for p, kind, value in seen
        )
        parts.append(f"shop.{method}({values})")
    return "the shop received " + "; ".join(parts)


NOT_CALLED_WHY = (
    "the call succeeded, yet the shop the check handed `{fn}(shop)` received nothing: build every tool "
    "on that `shop` argument — a tool made with its own `Shop()` (or none) calls another shop"
)


def _expect_received(
    answer: dict, made: list, method: str, wanted: dict[str, Any], call: str, why: str, where: str, fn: str
) -> None:
    """`made` holds exactly one shop call, to `method`, with exactly the `wanted` values and types.
    The why says what the calls show: none at all after a success (another shop), several (one call,
    one shop call), or one with other values (`why`, the rule this case is about)."""
    got = _received(made, method)
    wanted_text = f"shop.{method}(" + ", ".join(f"{k}={v!r}" for k, v in wanted.items()) + ")"
    right = (
        len(made) == 1
        and len(got) == 1
        and set(got[0]) == set(wanted)
        and all(got[0][k] == (type(v).__name__, v) for k, v in wanted.items())
    )
    if not right:
        observed = _calls_text(made)
        if not made and _status(answer) == "error":
            detail = (_content(answer) or "").split("with error:", 1)[-1]
            detail = detail.replace("Please fix the error and try again.", "")
            observed = f"an error ToolMessage instead: {shorten(detail, 140)!r}"
        elif not made:
            why, where = NOT_CALLED_WHY.format(fn=fn), f"this exercise's cell: `{fn}(shop)`"
        elif len(made) > 1:
            why = (
                f"one call, one shop call: the tool called the shop {len(made)} times — call "
                f"`shop.{method}` once, with the values the tool was given"
            )
        raise fail(
            f"{call} did not reach the shop as sent",
            expected=f"{wanted_text}, each value of exactly that type",
            observed=observed,
            where=where,
            why=why,
        )


def _run_cases(key: str, table: tuple, built: Any, scenario: Any) -> Cases:
    """Run each case function of `table` ((label, function), ...) on the drawn scenario; a failure
    after the first few is one line (the verdict fits a screen); after a hang the rest are not tried."""
    cases, seen = Cases(key), {}
    for label, case in table:
        if cases.hung is not None:
            cases.items.append(Case(label, False, observed=f"not tried: “{cases.hung.name}” hung first"))
            continue
        try:
            detail = case(built, scenario)
        except StillAStub:
            raise
        except CheckFailed as error:
            record_failure(cases, label, error, seen)
        else:
            cases.ok(label, detail or "")
    return cases


def _build(make: Any, fn_name: str, shop: Shop, key: str) -> Any:
    """`make(shop)` run as learner code: what it returned, or a `fail` naming what went wrong."""
    try:
        return run_learner(make, shop, name=fn_name)
    except StillAStub:
        raise
    except LearnerRaised as error:
        text = str(error)
        why = ""
        where = PARSED
        if "docstring" in text.lower():
            why = (
                "`parse_docstring=True` raises when the decorator runs: a Google-style docstring needs a "
                "blank "
                "line between the summary and `Args:`, and every `Args:` name in the signature"
            )
            where = REFUSED
        raise fail(
            f"`{fn_name}(shop)` raised",
            expected="it returns the tool(s)",
            observed=text,
            where=where,
            why=why,
            key=key,
        ) from None
    except LearnerHung as hung:
        raise fail(
            f"`{fn_name}(shop)` did not return",
            expected="it returns the tool(s) at once: building tools runs nothing",
            observed=" ".join(str(hung).split()),
            where=PARSED,
            key=key,
        ) from None


# == q1: four tools, one view ==============================================================================
class _Q1:
    """What q1's cases share: what the model is told, the course's ToolNode, the shop and its book."""

    def __init__(
        self, functions: list[dict], node: tuple[ToolNode, list[str]], book: list, rng: random.Random
    ) -> None:
        self.functions = functions
        self.node, self.node_names = node
        self.book = book
        self.rng = rng

    def told(self, name: str) -> dict:
        found = [f for f in self.functions if f.get("name") == name]
        if len(found) != 1:
            raise fail(
                f"the model is told about `{name}` {len(found)} times",
                expected=f"exactly one tool named {name!r}",
                observed=f"the model is told: {[f.get('name') for f in self.functions]}",
                where=SAME_NAME,
            )
        return found[0]

    def call(self, name: str, args: dict) -> tuple[dict, list]:
        if name not in self.node_names:
            raise fail(
                f"ToolNode has no tool named `{name}`",
                expected=f"a call to {name!r} runs that tool",
                observed=f"ToolNode runs {sorted(self.node_names)}: it answers the call 'not a valid tool'",
                where=SAME_NAME,
            )
        return _call(self.node, self.book, name, args, _uid(self.rng, "call_"))

    def runs(self, name: str) -> dict:
        """What ToolNode validates `name`'s calls with, as plain JSON: {"dict": True} for a JSON-schema
        dict, else the properties and required list of `tool.get_input_schema()` (read as learner code)."""
        node = self.node

        def read() -> str:
            tool = node.tools_by_name[name]
            if isinstance(tool.args_schema, dict):
                return json.dumps({"dict": True})
            schema = tool.get_input_schema().model_json_schema()
            return json.dumps(
                {"properties": schema.get("properties", {}), "required": schema.get("required", [])},
                default=repr,
            )

        try:
            found = json.loads(run_learner(read, name=f"{name}.get_input_schema()"))
        except (LearnerRaised, LearnerHung):
            return {}
        return found if type(found) is dict else {}

    def runs_why(self, name: str, param: str) -> tuple[str, str]:
        """Why a call without `param`, which the model is told is required, was run: what the schema
        ToolNode validates with says of it."""
        runs = self.runs(name)
        properties = runs.get("properties") if type(runs.get("properties")) is dict else {}
        schema = properties.get(param) if type(properties.get(param)) is dict else {}
        required = runs.get("required") if type(runs.get("required")) is list else []
        if runs.get("dict") is True:
            return (
                "a JSON-schema dict as args_schema is what the model is told, but ToolNode validates "
                "nothing with it: a missing argument reaches your function — give a pydantic model, or let "
                "the signature be the schema",
                DICT_SCHEMA,
            )
        if "default" in schema:
            return (
                f"the model is told `{param}` is required, but the schema ToolNode validates with "
                f"(`get_input_schema()`) gives it the default {schema['default']!r}: what the model is told "
                "(`tool_call_schema`) and what runs (`args_schema`) must be one schema",
                DEFAULTS,
            )
        if properties and param not in required:
            return (
                f"the model is told `{param}` is required, but the schema ToolNode validates with "
                f"(`get_input_schema()`) does not require it: what the model is told (`tool_call_schema`) "
                "and what runs (`args_schema`) must be one schema",
                DEFAULTS,
            )
        return (
            f"the model is told `{param}` is required: a call without it must be answered with an error the "
            "model reads, not run",
            DEFAULTS,
        )


def _draw_q1(rng: random.Random) -> dict[str, Any]:
    return {
        "query": rng.choice(_WORDS),
        "page": rng.randint(2, 40),
        "page_size": rng.choice((1, 5, 50, 100)),
        "amount": round(rng.randint(1, 999) + rng.randint(1, 99) / 100, 2),
        "whole_amount": rng.randint(2, 500),
        "currency": rng.choice(_CURRENCIES),
        "sku": f"SKU-{rng.randint(10000, 99999)}",
        "units": rng.randint(2, 9),
    }


def _json_type(schema: dict) -> list[str]:
    if "type" in schema:
        return [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
    return [s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)]


def case_one_tool_per_name(built: _Q1, scenario: dict) -> str:
    """The model is told each spec tool once, and ToolNode runs the same four names."""
    told = [f.get("name") for f in built.functions]
    runs = sorted(built.node_names)
    wanted = sorted(name for name, _, _ in CATALOGUE)
    if sorted(told) == wanted and runs == wanted:
        return "each of the four names once, in the model's list and in ToolNode"
    twice = sorted({n for n in told if told.count(n) > 1})
    why = ""
    if twice:
        why = (
            f"two tools are named {twice[0]!r}: a model you bind is told both, but ToolNode keeps tools in a "
            "dict by name, so the last one silently runs for either — name each tool for what it does"
        )
    raise fail(
        "the model's tools and ToolNode's tools differ from the spec",
        expected=f"the model is told, and ToolNode runs: {wanted}",
        observed=f"the model is told {told}; ToolNode runs {runs}",
        where=SAME_NAME,
        why=why,
    )


def case_parameters_told(built: _Q1, scenario: dict) -> str:
    """Each tool's parameters, their types, which are required and the defaults the model is told."""
    for name, _, parameters in CATALOGUE:
        told = built.told(name).get("parameters", {})
        properties, required = told.get("properties", {}), sorted(told.get("required", []))
        want_required = sorted(p for p, _, default, _ in parameters if default == REQUIRED)
        if sorted(properties) != sorted(p for p, *_ in parameters) or required != want_required:
            raise fail(
                f"the model is told other parameters for `{name}`",
                expected=f"parameters {[p for p, *_ in parameters]}, required {want_required}",
                observed=f"parameters {sorted(properties)}, required {required}",
                where=DEFAULTS,
            )
        for param, kind, default, _ in parameters:
            schema = properties[param]
            if kind not in _json_type(schema):
                raise fail(
                    f"`{name}`'s `{param}` is told as another type",
                    expected=f"type {kind!r}",
                    observed=f"{shorten(json.dumps(schema), 120)}",
                    where=DEFAULTS,
                )
            if default != REQUIRED and (
                schema.get("default") != default or type(schema.get("default")) is not type(default)
            ):
                raise fail(
                    f"the model is told another default for `{name}`'s `{param}`",
                    expected=f"default {default!r} in the schema the model is sent",
                    observed=f"default {schema.get('default')!r}",
                    where=DEFAULTS,
                    why="with an args_schema, the schema's defaults are the ones the model is told and the "
                    "body "
                    "receives; the function's own default is never used — put the real default in the schema",
                )
    return "types, required parameters and defaults as the spec says"


def case_descriptions_told(built: _Q1, scenario: dict) -> str:
    """The description of each tool and of convert_price's parameters, as the model reads them."""
    for name, description, parameters in CATALOGUE:
        told = built.told(name)
        text = " ".join(str(told.get("description", "")).split())
        if text != description:
            why = ""
            where = PARSED
            others = [n for n, d, _ in CATALOGUE if d == text and n != name]
            if others:
                why = f"that is `{others[0]}`'s description: are two tools' names swapped?"
                where = SAME_NAME
            elif "Args:" in text:
                why = (
                    "the whole docstring, `Args:` block included, is the description: the docstring did not "
                    "parse (no blank line before `Args:`), and `error_on_invalid_docstring=False` hid that"
                )
                where = REFUSED
            raise fail(
                f"the model reads another description of `{name}`",
                expected=repr(description),
                observed=repr(shorten(text, 160)),
                where=where,
                why=why,
            )
        properties = told.get("parameters", {}).get("properties", {})
        for param, _, _, wanted in parameters:
            if not wanted:
                continue
            got = properties.get(param, {}).get("description")
            got = " ".join(got.split()) if isinstance(got, str) else got
            if got != wanted:
                why, where = "", PARSED
                if got is None:
                    why = (
                        "no parameter description reached the schema: parse the `Args:` block "
                        "(`parse_docstring=True`, a valid docstring) or describe the field "
                        "(`Field(description=...)`)"
                    )
                elif re.match(r"^\w+(\[.*\])?:", got or ""):
                    why = (
                        "`name: type: text` sends `type:` as part of the description; write `name: text` "
                        "(or `name (type): text`)"
                    )
                    where = TYPES_IN_ARGS
                raise fail(
                    f"the model reads another description of `{name}`'s `{param}`",
                    expected=repr(wanted),
                    observed=repr(got),
                    where=where,
                    why=why,
                )
    return "each description as the spec says"


def _left_out_calls(built: _Q1, scenario: dict) -> list[tuple[str, str, dict]]:
    """(tool, parameter, arguments): a right call to each tool with one required parameter left out,
    for every parameter the spec requires — of each tool the model is told about as the spec says
    (another tool's parameters are the case "parameters and defaults the model is told")."""
    full = {
        "search_products": {"query": scenario["query"]},
        "convert_price": {"amount": scenario["amount"], "currency": scenario["currency"]},
        "check_stock": {"sku": scenario["sku"]},
        "reserve_stock": {"sku": scenario["sku"], "units": scenario["units"]},
    }
    calls = []
    for name, _, parameters in CATALOGUE:
        required = sorted(p for p, _, default, _ in parameters if default == REQUIRED)
        told = [f.get("parameters", {}) for f in built.functions if f.get("name") == name]
        if len(told) != 1 or sorted(told[0].get("required", [])) != required:
            continue
        calls += [(name, param, {k: v for k, v in full[name].items() if k != param}) for param in required]
    return calls


def case_required_left_out(built: _Q1, scenario: dict) -> str:
    """A call missing a parameter the model is told is required is answered with an error ToolMessage,
    and the shop is not called: what ToolNode validates with requires what the model is told."""
    calls = _left_out_calls(built, scenario)
    for name, param, args in calls:
        answer, made = built.call(name, args)
        if made or _status(answer) != "error":
            why, where = built.runs_why(name, param)
            raise fail(
                f"{name} without `{param}` was run",
                expected=f"an error ToolMessage (the model is told `{param}` is required) and no shop call",
                observed=f"{name}({_args_text(args)}) → "
                + (_calls_text(made) if made else f"status {_status(answer)!r}: {_content(answer)!r}"),
                where=where,
                why=why,
            )
    return f"{len(calls)} calls, each without one required parameter, refused before the shop"


def case_omitted_defaults(built: _Q1, scenario: dict) -> str:
    """search_products with only a query: the body receives the defaults the model is told."""
    args = {"query": scenario["query"]}
    answer, made = built.call("search_products", args)
    _expect_received(
        answer,
        made,
        "search",
        {"query": scenario["query"], "page": 1, "page_size": 20},
        f"search_products({_args_text(args)})",
        "a parameter the schema declares gets the schema's default when the model omits it — never the "
        "function's own default: the default the model is told must be the one the body needs",
        DEFAULTS,
        "make_tools",
    )
    return f"page=1, page_size=20 received for {args}"


def case_given_values(built: _Q1, scenario: dict) -> str:
    """search_products with a drawn page and page_size: the body receives them unchanged."""
    args = {"query": scenario["query"], "page": scenario["page"], "page_size": scenario["page_size"]}
    answer, made = built.call("search_products", args)
    _expect_received(
        answer,
        made,
        "search",
        args,
        f"search_products({_args_text(args)})",
        "the values the model sends must reach the body unchanged: pass the tool's arguments on",
        DEFAULTS,
        "make_tools",
    )
    return f"{args} received as sent"


def case_convert(built: _Q1, scenario: dict) -> str:
    """convert_price with a price in cents and with a whole number: the body receives each as a float."""
    for amount in (scenario["amount"], scenario["whole_amount"]):
        args = {"amount": amount, "currency": scenario["currency"]}
        answer, made = built.call("convert_price", args)
        _expect_received(
            answer,
            made,
            "convert",
            {"amount": float(amount), "currency": scenario["currency"]},
            f"convert_price({_args_text(args)})",
            "`amount` is a number the body receives as a float (a whole number sent as 20 arrives as 20.0)",
            COERCION,
            "make_tools",
        )
    return f"{scenario['amount']} and {scenario['whole_amount']} {scenario['currency']} converted"


def case_read_only(built: _Q1, scenario: dict) -> str:
    """check_stock only reads: the shop sees one stock() call and no reservation, as it runs."""
    args = {"sku": scenario["sku"]}
    answer, made = built.call("check_stock", args)
    if _received(made, "reserve"):
        raise fail(
            f"check_stock({_args_text(args)}) reserved stock",
            expected=f"shop.stock(sku={scenario['sku']!r}) only",
            observed=_calls_text(made),
            where=SAME_NAME,
            why="the read-only name ran the reservation: with two tools under one name, ToolNode runs the "
            "last one for both — whatever the model was told"
            if [f.get("name") for f in built.functions].count("check_stock") > 1
            else "check_stock's body calls `shop.reserve`: the model is told it only reads, so a call to it "
            "must change nothing — call `shop.stock(sku)` alone",
        )
    _expect_received(
        answer, made, "stock", args, f"check_stock({_args_text(args)})", "", SAME_NAME, "make_tools"
    )
    return f"{scenario['sku']} looked up, nothing reserved"


def case_reserve(built: _Q1, scenario: dict) -> str:
    """reserve_stock reserves the drawn units of the drawn sku."""
    args = {"sku": scenario["sku"], "units": scenario["units"]}
    answer, made = built.call("reserve_stock", args)
    _expect_received(
        answer, made, "reserve", args, f"reserve_stock({_args_text(args)})", "", SAME_NAME, "make_tools"
    )
    return f"{scenario['units']} of {scenario['sku']} reserved"


Q1_CASES = (
    ("one tool per name", case_one_tool_per_name),
    ("parameters and defaults the model is told", case_parameters_told),
    ("descriptions the model reads", case_descriptions_told),
    ("a required parameter left out", case_required_left_out),
    ("omitted page and page_size", case_omitted_defaults),
    ("page and page_size given", case_given_values),
    ("convert_price", case_convert),
    ("check_stock only reads", case_read_only),
    ("reserve_stock", case_reserve),
)


def _tools(made: Any) -> bool:
    """A list or tuple of tools, each checked by its exact type (its own `__class__` is never read)."""
    return type(made) in (list, tuple) and all(issubclass(type(t), BaseTool) for t in made)


def check_definitions(make_tools: Callable) -> str:
    """q1: the learner's four tools, bound to a scripted model and run by a real ToolNode."""
    draw = rng()
    scenario = _draw_q1(draw)
    with _checked_shop() as (shop, book):
        tools = _build(make_tools, "make_tools", shop, "q1")
        if not _tools(tools):
            raise fail(
                "make_tools(shop) must return a list of tools",
                expected="[search_products, convert_price, check_stock, reserve_stock] (made with @tool)",
                observed=_safe(tools)
                if type(tools) not in (list, tuple)
                else f"a list holding {[_kind_of(t) for t in tools]}",
                where=PARSED,
                why="None means `make_tools` has no `return`" if tools is None else "",
                key="q1",
            )
        built = _Q1(_told(tools, "your tools", "q1"), _tool_node(tools, "your tools", "q1"), book, draw)
        cases = _run_cases("q1", Q1_CASES, built, scenario)
    return cases.result(
        "one tool per name; what the model is told is what ToolNode runs: the required parameters, the "
        "defaults the body receives; the docstring's Args reach the parameters; check_stock never reserves."
    )


# == q2: a refund that converts nothing ====================================================================
class _Q2:
    """What q2's cases share: what the model is told about refund_order, the course's ToolNode, the shop."""

    def __init__(
        self, function: dict, node: tuple[ToolNode, list[str]], book: list, rng: random.Random
    ) -> None:
        self.function = function
        self.node = node[0]
        self.book = book
        self.rng = rng

    def call(self, args: dict) -> tuple[dict, list]:
        return _call(self.node, self.book, REFUND[0], args, _uid(self.rng, "call_"))


def _draw_q2(rng: random.Random) -> dict[str, Any]:
    return {
        "order_id": f"A-{rng.randint(10000, 99999)}",
        "amount": rng.randint(101, 99999),
        "large": rng.randint(10**9, 4 * 10**9),  # the spec sets no upper limit: a refund of millions
        "extra": rng.choice(_EXTRA_KEYS),
    }


STRICT_WHY = (
    "pydantic's lax mode converted it silently: `ConfigDict(strict=True)` (or `StrictInt`) refuses it"
)
EXTRA_WHY = "pydantic's default `extra='ignore'` drops an unknown key silently: `extra='forbid'` refuses it"
BOUND_WHY = (
    "nothing bounds the amount: `Field(gt=0)` refuses it, with a message, and tells the model the rule"
)
UPPER_WHY = (
    "the spec bounds amount_cents below only (a whole number above 0): an upper bound (`le=`, `lt=`) "
    "refuses refunds the shop must make, and tells the model a rule the shop does not have"
)


def case_refund_told(built: _Q2, scenario: dict) -> str:
    """The model is told refund_order's two parameters, both required, and the lower bound on the amount."""
    parameters = built.function.get("parameters", {})
    properties = parameters.get("properties", {})
    wanted = {p: kind for p, kind, _ in REFUND[2]}
    kinds = {p: _json_type(s) for p, s in properties.items()}
    if sorted(properties) != sorted(wanted) or sorted(parameters.get("required", [])) != sorted(wanted):
        raise fail(
            "the model is told other parameters for refund_order",
            expected=f"parameters {sorted(wanted)}, both required",
            observed=f"parameters {sorted(properties)}, required {sorted(parameters.get('required', []))}",
            where=DEFAULTS,
        )
    if any(kinds[p] != [kind] for p, kind in wanted.items()):
        raise fail(
            "the model is told other types for refund_order",
            expected=f"{wanted}",
            observed=f"{ {p: '|'.join(map(str, k)) for p, k in kinds.items()} }",
            where=COERCION,
            why="a whole number of cents is an `int` (JSON's integer); a float or a str is another contract",
        )
    amount = properties["amount_cents"]
    low, exclusive = amount.get("minimum"), amount.get("exclusiveMinimum")
    bounded = (type(exclusive) in (int, float) and 0 <= exclusive < 1) or (
        type(low) in (int, float) and 0 < low <= 1
    )
    if not bounded:
        raise fail(
            "the model is not told that amount_cents must be above 0",
            expected="a lower bound in amount_cents' schema: exclusiveMinimum 0 (`Field(gt=0)`) or minimum 1 "
            "(`Field(ge=1)`)",
            observed=shorten(json.dumps(amount), 160),
            where=COERCION,
            why="a rule checked only in your code is one the model learns by failing; a rule in the "
            "args_schema is "
            "both enforced by pydantic and sent to the model",
        )
    upper = {k: amount[k] for k in ("maximum", "exclusiveMaximum") if k in amount}
    if upper:
        raise fail(
            "the model is told an upper bound on amount_cents the spec does not have",
            expected="amount_cents bounded below only: above 0, with no maximum",
            observed=shorten(json.dumps(amount), 160),
            where=COERCION,
            why=UPPER_WHY,
        )
    return "order_id: string, amount_cents: integer above 0 with no upper bound, both required"


def case_refund_accepted(built: _Q2, scenario: dict) -> str:
    """A right call, the smallest right amount (1 cent) and a very large one: each reaches the shop as
    sent."""
    for amount in (scenario["amount"], 1, scenario["large"]):
        args = {"order_id": scenario["order_id"], "amount_cents": amount}
        answer, made = built.call(args)
        if _status(answer) != "success":
            reason = (_content(answer) or "").split("with error:", 1)[-1]
            reason = reason.replace("Please fix the error and try again.", "").strip()
            why, where = "", COERCION
            if not reason:
                why = (
                    "an error with no reason: `extra='forbid'` refused an injected parameter (a "
                    "ToolRuntime, InjectedState) the schema does not declare, and ToolNode hid that error "
                    "from the model — declare it in the schema, or drop it"
                )
                where = INJECTED
            elif amount == scenario["large"]:
                why = UPPER_WHY
            raise fail(
                f"a right refund was refused: refund_order({_args_text(args)})",
                expected="status 'success' and the refund made",
                observed=f"status {_status(answer)!r}: {shorten(_content(answer) or '', 160)!r}",
                where=where,
                why=why,
            )
        _expect_received(
            answer,
            made,
            "refund",
            args,
            f"refund_order({_args_text(args)})",
            "the values the model sends must reach the shop unchanged",
            COERCION,
            "make_refund",
        )
    return f"{scenario['amount']}, 1 and {scenario['large']} cent(s) on {scenario['order_id']} refunded"


def _refusal(built: _Q2, args: dict, field: str, what: str, why: str) -> str:
    """`args` must be refused before the shop is called, with an error ToolMessage naming `field`."""
    answer, made = built.call(args)
    content = _content(answer) or ""
    if _received(made, "refund"):
        raise fail(
            f"{what} was refunded",
            expected=f"an error ToolMessage naming `{field}`, and no refund",
            observed=f"refund_order({_args_text(args)}) → " + _calls_text(made),
            where=COERCION,
            why=why,
        )
    detail = content.split("with error:", 1)[-1]
    if _status(answer) != "error" or field not in detail:
        why = ""
        if _status(answer) == "error" and "validation error" in content.lower():
            why = (
                "`handle_validation_error` answers with its own text, which does not say what was wrong: "
                "leave it unset and ToolNode's message lists each field's error"
            )
        elif _status(answer) != "error":
            why = "a refusal the body returns as text reads as a success: let the args_schema refuse it"
        raise fail(
            f"{what} was not refused with a message naming `{field}`",
            expected=f"status 'error', a message naming `{field}` (ToolNode's 'Error invoking tool …')",
            observed=f"status {_status(answer)!r}: {shorten(content, 160)!r}",
            where=MESSAGE,
            why=why,
        )
    return "refused with the field named, nothing refunded"


def case_refuse_numeric_string(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"], "amount_cents": str(scenario["amount"])}
    return _refusal(built, args, "amount_cents", "amount_cents as a numeric string", STRICT_WHY)


def case_refuse_float(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"], "amount_cents": float(scenario["amount"])}
    return _refusal(built, args, "amount_cents", "amount_cents as a float", STRICT_WHY)


def case_refuse_bool(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"], "amount_cents": True}
    return _refusal(built, args, "amount_cents", "amount_cents as true", STRICT_WHY)


def case_refuse_zero(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"], "amount_cents": 0}
    return _refusal(built, args, "amount_cents", "amount_cents 0", BOUND_WHY)


def case_refuse_negative(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"], "amount_cents": -scenario["amount"]}
    return _refusal(built, args, "amount_cents", "a negative amount_cents", BOUND_WHY)


def case_refuse_unknown_key(built: _Q2, scenario: dict) -> str:
    extra = scenario["extra"]
    args = {"order_id": scenario["order_id"], "amount_cents": scenario["amount"], extra: "yes"}
    return _refusal(built, args, extra, f"an unknown key `{extra}`", EXTRA_WHY)


def case_refuse_missing_amount(built: _Q2, scenario: dict) -> str:
    args = {"order_id": scenario["order_id"]}
    return _refusal(built, args, "amount_cents", "a missing amount_cents", "amount_cents must be required")


def case_refuse_numeric_order_id(built: _Q2, scenario: dict) -> str:
    args = {"order_id": int(scenario["order_id"].removeprefix("A-")), "amount_cents": scenario["amount"]}
    return _refusal(built, args, "order_id", "order_id as a number", "order_id is a str: refuse a number")


Q2_CASES = (
    ("what the model is told", case_refund_told),
    ("a right refund, and 1 cent", case_refund_accepted),
    ("amount_cents as a numeric string", case_refuse_numeric_string),
    ("amount_cents as a float", case_refuse_float),
    ("amount_cents as true", case_refuse_bool),
    ("amount_cents 0", case_refuse_zero),
    ("a negative amount_cents", case_refuse_negative),
    ("an unknown key", case_refuse_unknown_key),
    ("amount_cents missing", case_refuse_missing_amount),
    ("order_id as a number", case_refuse_numeric_order_id),
)


def check_refund(make_refund: Callable) -> str:
    """q2: the learner's refund_order, bound to a scripted model and run by a real ToolNode."""
    draw = rng()
    scenario = _draw_q2(draw)
    with _checked_shop() as (shop, book):
        made = _build(make_refund, "make_refund", shop, "q2")
        if not issubclass(type(made), BaseTool):
            raise fail(
                "make_refund(shop) must return the tool",
                expected="refund_order, a tool (made with @tool or StructuredTool)",
                observed=_safe(made),
                where=COERCION,
                why="None means `make_refund` has no `return`" if made is None else "",
                key="q2",
            )
        functions = _told([made], "your refund tool", "q2")
        if [f.get("name") for f in functions] != [REFUND[0]]:
            raise fail(
                "the tool must be named refund_order",
                expected="the model is told about `refund_order`",
                observed=f"the model is told about {[f.get('name') for f in functions]}",
                where=SAME_NAME,
                key="q2",
            )
        built = _Q2(functions[0], _tool_node([made], "your refund tool", "q2"), book, draw)
        cases = _run_cases("q2", Q2_CASES, built, scenario)
    return cases.result(
        "the model is told both parameters and the lower bound, no upper one; right refunds (1 cent, "
        "billions) arrive exact; strings, floats, bools, 0, negatives, unknown and missing keys are refused "
        "with the field named, nothing refunded."
    )


# == q3: rows for the graph, a line for the model ==========================================================
class _Q3:
    """One agent run: what the check read of the state's ToolMessages (`_reply`), by call id, the type
    names of the state's other tool messages, what the model read next, the shop's calls."""

    def __init__(self) -> None:
        self.replies: dict[str, dict] = {}
        self.others: list[str] = []
        self.request: list = []
        self.made: list = []
        self.error: CheckFailed | None = None


def _row(rng: random.Random, line: int, skus: set[str]) -> dict:
    while True:
        sku = f"SKU-{rng.randint(10000, 99999)}"
        if sku not in skus:
            skus.add(sku)
            return {"line": line, "sku": sku, "units": rng.randint(1, 9)}


def _draw_q3(rng: random.Random) -> dict[str, Any]:
    small, empty, large = rng.sample(_TABLE_NAMES, 3)
    skus: set[str] = set()
    sizes = {small: rng.randint(3, 6), empty: 0, large: rng.randint(30, 45)}
    tables = {name: [_row(rng, i + 1, skus) for i in range(n)] for name, n in sizes.items()}
    order = [small, empty, large]
    rng.shuffle(order)
    return {
        "tables": tables,
        "calls": [(name, _uid(rng, "call_")) for name in order],
        "question": f"How many lines are in {', '.join(order)}?",
    }


def _agent_run(tool: BaseTool, book: list, scenario: dict) -> _Q3:
    from langchain.agents import create_agent

    run = _Q3()
    calls = [
        {"name": FETCH[0], "args": {"table": name}, "id": call_id} for name, call_id in scenario["calls"]
    ]

    def read(messages: list) -> str:
        run.request = json.loads(json.dumps(convert_to_openai_messages(messages), default=repr))
        return "done"

    model = ScriptedChatModel(script=[calls, read])

    async def go() -> list:  # ainvoke runs a sync tool in a thread and an async one on the loop
        agent = create_agent(model, [tool])
        return (await agent.ainvoke({"messages": [HumanMessage(scenario["question"])]}))["messages"]

    mark = len(book)
    messages: Any = []
    try:
        messages = run_learner(go, name="the agent running your fetch_rows")
    except LearnerRaised as error:
        text = str(error)
        why, where = "", NOT_A_PAIR
        if "two-tuple" in text:
            why = (
                "with response_format='content_and_artifact' the tool must return exactly "
                "`(content, artifact)` "
                "— a tuple of two; a list, a bare value or a tuple of three raises, and the run stops"
            )
        run.error = fail(
            "the agent's run crashed",
            expected="every fetch_rows call answered with a ToolMessage",
            observed=text,
            where=where,
            why=why,
            key="q3",
        )
    except LearnerHung as hung:
        run.error = fail(
            "the agent's run did not finish",
            expected="every fetch_rows call answered at once (the shop answers without waiting)",
            observed=" ".join(str(hung).split()),
            where=NEXT_TURN,
            key="q3",
        )
    run.made = list(book)[mark:]
    for message in messages if type(messages) is list else ():
        reply = _reply(message)
        if reply is not None and reply["id"] is not None:
            run.replies[reply["id"]] = reply
        elif reply is None and issubclass(type(message), ToolMessage):
            run.others.append(_kind_of(message))
    return run


def _missing(run: _Q3) -> str:
    """What the state holds instead of a call's ToolMessage."""
    if run.others:
        return (
            f"no ToolMessage for it: the state holds {len(run.others)} {run.others[0]} message(s) — "
            "return a ToolMessage itself (or a `(content, artifact)` pair), not a subclass"
        )
    return "no ToolMessage for it"


def case_every_call_answered(run: _Q3, scenario: dict) -> str:
    """The run completes; each of the three calls has a ToolMessage with status 'success'."""
    for table, call_id in scenario["calls"]:
        reply = run.replies.get(call_id)
        if reply is None or _status(reply) != "success":
            raise fail(
                f"fetch_rows(table={table!r}) was not answered with a success",
                expected="a ToolMessage with status 'success' for each call",
                observed=_missing(run)
                if reply is None
                else f"status {_status(reply)!r}: {_safe(reply['content'])}",
                where=NOT_A_PAIR,
            )
    return f"{len(scenario['calls'])} calls answered"


def case_one_fetch_per_call(run: _Q3, scenario: dict) -> str:
    """The shop saw one rows() call per table, and nothing else, as the calls ran."""
    tables = sorted(str(v) for call in _received(run.made, "rows") for _, v in call.values())
    wanted = sorted(table for table, _ in scenario["calls"])
    if tables != wanted or len(run.made) != len(wanted):
        raise fail(
            "the shop was not asked once per call",
            expected=f"shop.rows(table) once for each of {wanted}",
            observed=_calls_text(run.made),
            where=NEXT_TURN,
            why="fetch the rows once and use them twice: the summary for the model, the rows as the artifact",
        )
    return "one shop.rows() per call"


def _artifact_seen(artifact: Any, plain: Any) -> tuple[str, str]:
    """How a wrong artifact reads (`plain` is its plain copy), and why it is wrong."""
    kind, text = _kind_of(artifact), shorten(repr(plain), 120)
    if artifact is None:
        return "no artifact (None)", (
            "the artifact is the second item of the `(content, artifact)` pair a "
            "response_format='content_and_artifact' tool returns; without that format a returned pair is "
            "all content, and there is no artifact"
        )
    if kind == "list":
        return f"a list of {len(plain)} item(s): {text}", (
            "the artifact is the rows exactly as shop.rows returned them: every row, in order, unchanged"
        )
    if kind == "str":
        return f"a str of {len(plain)} characters: {text}", (
            "the artifact is the rows themselves, not their text: the graph gets the list, and only the "
            "content is text for the model"
        )
    if kind in ("tuple", "dict"):
        return f"a {kind} of {len(plain)} item(s): {text}", (
            f"a {kind} is not the list shop.rows returned: pass the rows on as they are"
        )
    return f"a {kind}: {text}", "pass the rows on as they are: the list shop.rows returned"


def case_artifacts(run: _Q3, scenario: dict) -> str:
    """Each ToolMessage's artifact is exactly the table's rows: a list of dicts, [] for the empty one."""
    for table, call_id in scenario["calls"]:
        reply = run.replies.get(call_id)
        rows = scenario["tables"][table]
        artifact = reply["artifact"] if reply is not None else None
        try:
            plain = _plain(artifact)
        except _NotPlain as error:
            observed, why = (
                f"an artifact of a non-plain type ({error})",
                ("only plain values count: the list of dicts shop.rows returned, as it is"),
            )
        else:
            if type(plain) is list and plain == rows:
                continue
            observed, why = _artifact_seen(artifact, plain)
        raise fail(
            f"the artifact for table {table!r} ({len(rows)} rows) is not its rows",
            expected=f"the list of the {len(rows)} dicts shop.rows({table!r}) returned, in order",
            observed=_missing(run) if reply is None else observed,
            where=NEXT_TURN,
            why=why,
        )
    return "each artifact is its table's rows ([] for the empty one)"


def case_summaries(run: _Q3, scenario: dict) -> str:
    """Each content is a short str naming its table and its number of rows, in digits."""
    for table, call_id in scenario["calls"]:
        reply = run.replies.get(call_id)
        content = _content(reply) if reply is not None else None
        count = len(scenario["tables"][table])
        if (
            content is None
            or len(content) > SUMMARY_CHARS
            or table not in content
            or not re.search(rf"(?<!\d){count}(?!\d)", content)
        ):
            raise fail(
                f"the summary for table {table!r} ({count} rows)",
                expected=f"a str of at most {SUMMARY_CHARS} characters naming {table!r} and {count}",
                observed=_missing(run)
                if reply is None
                else f"a {reply['content_kind']}"
                if content is None
                else f"{len(content)} characters: {shorten(content, 120)!r}",
                where=NEXT_TURN,
                why='the content is all the model reads: a line such as f"{len(rows)} rows from {table}"',
            )
    return "short summaries with the table and the count"


def case_model_reads_summaries(run: _Q3, scenario: dict) -> str:
    """The model's next request holds each call's content and no row."""
    request = run.request
    tool_turns = [m for m in request if type(m) is dict and m.get("role") == "tool"]
    text = json.dumps(request)
    leaked = [row["sku"] for rows in scenario["tables"].values() for row in rows if row["sku"] in text]
    if leaked or len(tool_turns) != len(scenario["calls"]):
        raise fail(
            "the model read the rows",
            expected="each tool turn of the model's next request is the summary, no row in it",
            observed=f"{len(leaked)} of the rows' skus in the model's next request, e.g. {leaked[:2]}"
            if leaked
            else f"{len(tool_turns)} tool turn(s)",
            where=NEXT_TURN,
            why="the model reads the ToolMessage's content only: keep the rows out of it, in the artifact",
        )
    for turn in tool_turns:
        reply = run.replies.get(turn.get("tool_call_id"))
        if reply is None or turn.get("content") != _content(reply):
            raise fail(
                "the model's next request does not hold the summaries",
                expected="each tool turn's content equal to its ToolMessage's content",
                observed=shorten(json.dumps(turn), 160),
                where=NEXT_TURN,
            )
    return "the model read the summaries, no row"


Q3_CASES = (
    ("every call answered", case_every_call_answered),
    ("one shop.rows() per call", case_one_fetch_per_call),
    ("the rows reach the graph as artifacts", case_artifacts),
    ("a one-line summary per call", case_summaries),
    ("the model reads only the summaries", case_model_reads_summaries),
)


def check_fetch_rows(make_fetch_rows: Callable) -> str:
    """q3: the learner's fetch_rows in a create_agent run of three calls (a small, empty, large table)."""
    scenario = _draw_q3(rng())
    with _checked_shop(scenario["tables"]) as (shop, book):
        made = _build(make_fetch_rows, "make_fetch_rows", shop, "q3")
        if not issubclass(type(made), BaseTool):
            raise fail(
                "make_fetch_rows(shop) must return the tool",
                expected="fetch_rows, a tool (made with @tool or StructuredTool)",
                observed=_safe(made),
                where=NEXT_TURN,
                why="None means `make_fetch_rows` has no `return`" if made is None else "",
                key="q3",
            )
        functions = _told([made], "your fetch_rows", "q3")
        names = [f.get("name") for f in functions]
        properties = functions[0].get("parameters", {}).get("properties", {}) if functions else {}
        if names != [FETCH[0]] or "table" not in properties:
            raise fail(
                "the tool must be fetch_rows(table)",
                expected="the model is told about `fetch_rows` with a `table` parameter",
                observed=f"the model is told about {names} with parameters {sorted(properties)}",
                where=NEXT_TURN,
                key="q3",
            )
        run = _agent_run(made, book, scenario)
    if run.error is not None:
        raise run.error
    cases = _run_cases("q3", Q3_CASES, run, scenario)
    return cases.result(
        "a small, an empty and a large table: the rows reached the graph as artifacts, the model read only "
        "the one-line summaries."
    )


# == the exercises ==========================================================================================
q1 = Exercise(
    "16",
    "q1",
    ("make_tools",),
    check_definitions,
    (
        "Run `show_tools(make_tools_as_written(Shop()))` and compare each line with `print_catalogue()`. "
        "Three "
        "definitions disagree: a default, a docstring, a name.",
        "SearchArgs's page_size default is what the body receives: make it 20. The docstring needs a blank "
        "line before `Args:` and no type after the argument's name. Name the two stock tools check_stock and "
        'reserve_stock (drop the `@tool("stock")` names).',
    ),
)

q2 = Exercise(
    "16",
    "q2",
    ("make_refund",),
    check_refund,
    (
        "Give the tool an args_schema whose model config refuses conversions and unknown keys, and whose "
        "amount field carries its lower bound.",
        "`model_config = ConfigDict(strict=True, extra='forbid')`, `amount_cents: int = Field(gt=0)`, then "
        "`@tool(args_schema=RefundArgs)`. Do not check the amount in the body: a ValueError there crashes "
        "the "
        "run, and the model is never told the rule.",
    ),
)

q3 = Exercise(
    "16",
    "q3",
    ("make_fetch_rows",),
    check_fetch_rows,
    (
        "Fetch the rows once; return a short line for the model and the rows for the graph.",
        '`@tool(response_format="content_and_artifact")`, then '
        '`return f"{len(rows)} rows from {table}", rows` '
        "— a tuple of two, not a list.",
    ),
)

__all__ = [
    "CATALOGUE",
    "FETCH",
    "REFUND",
    "SUMMARY_CHARS",
    "Shop",
    "print_catalogue",
    "q1",
    "q2",
    "q3",
    "show_tools",
    "try_call",
]

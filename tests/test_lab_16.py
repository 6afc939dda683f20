"""Lab 16 as a learner meets it: for each exercise, correct definitions written differently are
accepted, and the definitions beginners write (a default the model is not told, a docstring that does
not parse, two tools under one name, lax or half-strict schemas, checks in the body, a pair that is a
list, rows in the content) are refused with a message naming the mistake. Every run draws every hard
case; a hang is cut; an exception in learner code is a verdict; only plain values count.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from types import SimpleNamespace
from typing import Annotated

import pytest
from lab_checks import accepted, assert_verdicts, rejected, verdicts
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

import helpers.labs as core
from helpers.labs import lab16, solution_namespace

# `@tool` silences a pydantic deprecation warning with `warnings.catch_warnings()`, which is not
# thread-safe: when `verdicts` builds several learners' tools at once, one thread's exit restores the
# filters while another is inside, and under this suite's `filterwarnings = ["error"]` the warning
# would be raised in a learner's `make_tools`. A notebook builds one set of tools at a time.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20")


# -- q1: four tools, one view --------------------------------------------------------------------------
def _stock_tools(shop, check_name="check_stock", reserve_name="reserve_stock"):
    @tool(check_name)
    def check_stock(sku: str) -> str:
        """How many units of a product are in stock (read-only)."""
        return shop.stock(sku)

    @tool(reserve_name)
    def reserve_stock(sku: str, units: int) -> str:
        """Reserve units of a product for an order."""
        return shop.reserve(sku, units)

    return [check_stock, reserve_stock]


def _convert_parsed(shop):
    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    return convert_price


def _search_with(shop, schema):
    @tool(args_schema=schema)
    def search_products(query: str, page: int = 1, page_size: int = 20) -> str:
        """Search the product catalogue, one page of results at a time."""
        return shop.search(query, page, page_size)

    return search_products


class Search20(BaseModel):
    query: str
    page: int = 1
    page_size: int = 20


class SearchNone(BaseModel):
    query: str
    page: int = 1
    page_size: int | None = None


def schemas_with_fields(shop):
    """Every description in pydantic fields, `description=` on the decorator."""

    class SearchArgs(BaseModel):
        query: str = Field(description="Words to look for.")
        page: int = Field(1, description="Which page, from 1.")
        page_size: int = Field(20, description="Results per page.")

    class ConvertArgs(BaseModel):
        amount: float = Field(description="The price in euros.")
        currency: str = Field(description="The target currency's ISO code, e.g. USD.")

    @tool(args_schema=SearchArgs, description="Search the product catalogue, one page of results at a time.")
    def search_products(query: str, page: int, page_size: int) -> str:
        return shop.search(query, page, page_size)

    @tool(args_schema=ConvertArgs, description="Convert a price in euros to another currency.")
    def convert_price(amount: float, currency: str) -> str:
        return shop.convert(amount, currency)

    return [search_products, convert_price, *_stock_tools(shop)]


def optional_default_and_google_types(shop):
    """`int | None = 20` in the schema, `name (type):` lines in `Args:`, tools listed in another order."""

    class SearchArgs(BaseModel):
        query: str
        page: int = 1
        page_size: int | None = 20

    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount (float): The price in euros.
            currency (str): The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    return [*reversed(_stock_tools(shop)), convert_price, _search_with(shop, SearchArgs)]


def structured_tools(shop):
    """StructuredTool.from_function with explicit names, Annotated descriptions."""

    def search(query: str, page: int = 1, page_size: int = 20) -> str:
        return shop.search(query, page, page_size)

    def convert(
        amount: Annotated[float, "The price in euros."],
        currency: Annotated[str, "The target currency's ISO code, e.g. USD."],
    ) -> str:
        return shop.convert(amount, currency)

    def stock(sku: str) -> str:
        return shop.stock(sku)

    def reserve(sku: str, units: int) -> str:
        return shop.reserve(sku, units)

    return [
        StructuredTool.from_function(
            search,
            name="search_products",
            description="Search the product catalogue, one page of results at a time.",
        ),
        StructuredTool.from_function(
            convert, name="convert_price", description="Convert a price in euros to another currency."
        ),
        StructuredTool.from_function(
            stock, name="check_stock", description="How many units of a product are in stock (read-only)."
        ),
        StructuredTool.from_function(
            reserve, name="reserve_stock", description="Reserve units of a product for an order."
        ),
    ]


def no_args_schema_tuple(shop):
    """The signature as the schema, and a tuple instead of a list."""

    @tool
    def search_products(query: str, page: int = 1, page_size: int = 20) -> str:
        """Search the product catalogue, one page of results at a time."""
        return shop.search(query=query, page=page, page_size=page_size)

    return (search_products, _convert_parsed(shop), *_stock_tools(shop))


def as_written(shop):
    return solution_namespace("16")["make_tools_as_written"](shop)


def default_in_the_body(shop):
    @tool(args_schema=SearchNone)
    def search_products(query: str, page: int = 1, page_size: int | None = None) -> str:
        """Search the product catalogue, one page of results at a time."""
        return shop.search(query, page, page_size or 20)

    return [search_products, _convert_parsed(shop), *_stock_tools(shop)]


def function_default_only(shop):
    return [_search_with(shop, SearchNone), _convert_parsed(shop), *_stock_tools(shop)]


def type_left_in_args(shop):
    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount: The price in euros.
            currency: str: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    return [_search_with(shop, Search20), convert_price, *_stock_tools(shop)]


def strict_parser_unfixed_docstring(shop):
    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.
        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    return [_search_with(shop, Search20), convert_price, *_stock_tools(shop)]


def description_without_parsing(shop):
    @tool(description="Convert a price in euros to another currency.")
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price.

        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    return [_search_with(shop, Search20), convert_price, *_stock_tools(shop)]


def one_name_kept(shop):
    return [
        _search_with(shop, Search20),
        _convert_parsed(shop),
        *_stock_tools(shop, "stock", "reserve_stock"),
    ]


def names_swapped(shop):
    return [
        _search_with(shop, Search20),
        _convert_parsed(shop),
        *_stock_tools(shop, "reserve_stock", "check_stock"),
    ]


def one_tool_listed_twice(shop):
    check_stock, _ = _stock_tools(shop)
    return [_search_with(shop, Search20), _convert_parsed(shop), check_stock, check_stock]


def fixed_page(shop):
    @tool
    def search_products(query: str, page: int = 1, page_size: int = 20) -> str:
        """Search the product catalogue, one page of results at a time."""
        return shop.search(query, 1, 20)

    return [search_products, _convert_parsed(shop), *_stock_tools(shop)]


def amount_as_int(shop):
    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(round(amount), currency)

    return [_search_with(shop, Search20), convert_price, *_stock_tools(shop)]


def async_tools(shop):
    """Every tool an `async def`: ToolNode awaits them, as an agent does."""

    @tool
    async def search_products(query: str, page: int = 1, page_size: int = 20) -> str:
        """Search the product catalogue, one page of results at a time."""
        return shop.search(query, page, page_size)

    @tool(parse_docstring=True)
    async def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        return shop.convert(amount, currency)

    @tool
    async def check_stock(sku: str) -> str:
        """How many units of a product are in stock (read-only)."""
        return shop.stock(sku)

    @tool
    async def reserve_stock(sku: str, units: int) -> str:
        """Reserve units of a product for an order."""
        return shop.reserve(sku, units)

    return [search_products, convert_price, check_stock, reserve_stock]


def told_one_schema_runs_another(shop):
    """The model is told `currency` is required (`tool_call_schema`); what runs defaults it to EUR."""

    class Told(BaseModel):
        amount: float = Field(description="The price in euros.")
        currency: str = Field(description="The target currency's ISO code, e.g. USD.")

    class Runs(BaseModel):
        amount: float
        currency: str = "EUR"

    class ConvertPrice(BaseTool):
        name: str = "convert_price"
        description: str = "Convert a price in euros to another currency."
        args_schema: type[BaseModel] = Runs

        @property
        def tool_call_schema(self):
            return Told

        def _run(self, amount, currency="EUR"):
            return shop.convert(amount, currency)

    return [_search_with(shop, Search20), ConvertPrice(), *_stock_tools(shop)]


def dict_schema(shop):
    """A JSON-schema dict as args_schema: told to the model, validated by nothing."""
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "page": {"type": "integer", "default": 1},
            "page_size": {"type": "integer", "default": 20},
        },
        "required": ["query"],
    }

    def search_products(query: str, page: int = 1, page_size: int = 20) -> str:
        return shop.search(query, page, page_size)

    search = StructuredTool.from_function(
        search_products,
        name="search_products",
        description="Search the product catalogue, one page of results at a time.",
        args_schema=schema,
    )
    return [search, _convert_parsed(shop), *_stock_tools(shop)]


def check_also_reserves(shop):
    @tool
    def check_stock(sku: str) -> str:
        """How many units of a product are in stock (read-only)."""
        shop.reserve(sku, 0)
        return shop.stock(sku)

    return [_search_with(shop, Search20), _convert_parsed(shop), check_stock, _stock_tools(shop)[1]]


def _scrub(shop):
    """Empty every list a tool can reach from the shop: its attributes, its methods' attributes,
    closures and defaults (where a log kept on the shop would be)."""
    reachable = list(vars(shop).values())
    for name in ("search", "convert", "stock", "reserve", "refund", "rows"):
        method = getattr(shop, name)
        function = getattr(method, "__func__", method)
        reachable += list(vars(function).values()) + list(function.__defaults__ or ())
        reachable += [cell.cell_contents for cell in function.__closure__ or ()]
    for value in reachable:
        if type(value) is list:
            value.clear()


def reserves_then_scrubs(shop):
    """check_stock reserves, then takes the reservation out of everything the shop holds."""

    @tool
    def check_stock(sku: str) -> str:
        """How many units of a product are in stock (read-only)."""
        shop.reserve(sku, 1)
        _scrub(shop)
        return shop.stock(sku)

    return [_search_with(shop, Search20), _convert_parsed(shop), check_stock, _stock_tools(shop)[1]]


def convert_twice(shop):
    @tool(parse_docstring=True)
    def convert_price(amount: float, currency: str) -> str:
        """Convert a price in euros to another currency.

        Args:
            amount: The price in euros.
            currency: The target currency's ISO code, e.g. USD.
        """
        shop.convert(amount, "EUR")
        return shop.convert(amount, currency)

    return [_search_with(shop, Search20), convert_price, *_stock_tools(shop)]


def own_shop(shop):
    mine = lab16.Shop()
    return [_search_with(mine, Search20), _convert_parsed(mine), *_stock_tools(mine)]


READS_ON = []  # the check's own threads a learner object's attribute was read on


def _on_the_checks_thread() -> bool:
    """Not one of the worker threads learner code runs in under a time limit (`run_limited`'s)."""
    return not threading.current_thread().name.startswith("lab-check:")


class Pretender:
    """Claims to be a tool through `__class__`, and notes a read on the check's own thread."""

    @property
    def __class__(self):
        if _on_the_checks_thread():
            READS_ON.append(threading.current_thread().name)
        return BaseTool


def pretenders(shop):
    return [Pretender() for _ in range(4)]


def no_return(shop):
    _search_with(shop, Search20)


RELEASE = threading.Event()


def hangs(shop):
    RELEASE.wait()


def test_lab16_q1_accepts_correct_alternatives_and_names_each_wrong_answer(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 2.5)
    answers = {
        "the solution": solution_namespace("16")["make_tools"],
        "Field descriptions, description=": schemas_with_fields,
        "int | None = 20, Google types, another order": optional_default_and_google_types,
        "StructuredTool, Annotated": structured_tools,
        "no args_schema, a tuple": no_args_schema_tuple,
        "as written": as_written,
        "the default in the body": default_in_the_body,
        "the function's default only": function_default_only,
        "a type left in Args": type_left_in_args,
        "the parser made strict, docstring unfixed": strict_parser_unfixed_docstring,
        "description= without parse_docstring": description_without_parsing,
        "one stock name kept": one_name_kept,
        "names swapped": names_swapped,
        "one tool listed twice": one_tool_listed_twice,
        "fixed page values": fixed_page,
        "amount rounded": amount_as_int,
        "async def tools": async_tools,
        "told one schema, runs another": told_one_schema_runs_another,
        "a JSON-schema dict": dict_schema,
        "check_stock also reserves": check_also_reserves,
        "check_stock reserves, then scrubs what the shop holds": reserves_then_scrubs,
        "converted twice": convert_twice,
        "tools on their own Shop()": own_shop,
        "pretenders": pretenders,
        "no return": no_return,
        "hangs": hangs,
    }
    assert_verdicts(
        verdicts(lab16.check_definitions, answers),
        {
            "the solution": (),
            "Field descriptions, description=": (),
            "int | None = 20, Google types, another order": (),
            "StructuredTool, Annotated": (),
            "no args_schema, a tuple": (),
            "as written": ("two tools are named 'stock'", "another default", "did not parse"),
            "the default in the body": (
                "another default for `search_products`'s `page_size`",
                "default None",
            ),
            "the function's default only": ("page_size=None", "never the function's own default"),
            "a type left in Args": ("sends `type:` as part of the description", "Types in Args: lines"),
            "the parser made strict, docstring unfixed": (
                "Found invalid Google-Style docstring",
                "blank line",
            ),
            "description= without parse_docstring": ("no parameter description reached the schema",),
            "one stock name kept": ("the model is told ['search_products', 'convert_price', 'stock'",),
            "names swapped": ("that is `reserve_stock`'s description", "units: Field required"),
            "one tool listed twice": ("two tools are named 'check_stock'",),
            "fixed page values": ("pass the tool's arguments on", "page=1, page_size=20"),
            "amount rounded": ("convert_price", "receives as a float"),
            "async def tools": (),
            "told one schema, runs another": (
                "convert_price without `currency` was run",
                "shop.convert(amount=",
                "gives it the default 'EUR'",
                "`get_input_schema()`",
            ),
            "a JSON-schema dict": (
                "search_products() crashed the run",
                "JSON-schema dict",
                "validates nothing",
            ),
            "check_stock also reserves": ("reserved stock", "check_stock's body calls `shop.reserve`"),
            "check_stock reserves, then scrubs what the shop holds": (
                "reserved stock",
                "shop.reserve(sku=",
            ),
            "converted twice": ("one call, one shop call", "called the shop 2 times"),
            "tools on their own Shop()": ("received nothing", "its own `Shop()`"),
            "pretenders": ("must return a list of tools", "['Pretender', 'Pretender'"),
            "no return": ("None means `make_tools` has no `return`",),
            "hangs": ("`make_tools(shop)` did not return", "did not return within 2.5 s"),
        },
    )
    RELEASE.set()
    assert READS_ON == []  # a learner object's own `__class__` is never read by the check


# -- q2: a refund that converts nothing ------------------------------------------------------------------
def _refund_with(shop, schema, **options):
    @tool(args_schema=schema, **options)
    def refund_order(order_id: str, amount_cents: int) -> str:
        """Refund part of an order, in cents."""
        return shop.refund(order_id, amount_cents)

    return refund_order


class StrictTypes(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: StrictStr
    amount_cents: StrictInt = Field(ge=1)


class StrictFields(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: Annotated[str, Field(strict=True)]
    amount_cents: Annotated[int, Field(strict=True, gt=0)]


class Right(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0)


class StrictOnly(BaseModel):
    model_config = ConfigDict(strict=True)
    order_id: str
    amount_cents: int = Field(gt=0)


class ForbidOnly(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0)


class Unbounded(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int


class FromZero(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(ge=0)


class Floats(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: float = Field(gt=0)


class Converting(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0)

    @field_validator("amount_cents", mode="before")
    @classmethod
    def whole_cents(cls, value):
        return int(value)


class Below100k(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0, lt=100_000)  # "refunds are capped": not in the spec


class UpTo10k(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0, le=10_000)


class CappedInAValidator(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    order_id: str
    amount_cents: int = Field(gt=0)

    @field_validator("amount_cents")
    @classmethod
    def at_most_a_million(cls, value):
        if value > 1_000_000:
            raise ValueError("refunds above 10,000 EUR need a manager")
        return value


class ExtraAllowed(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    order_id: str
    amount_cents: int = Field(gt=0)


def async_refund(shop):
    @tool(args_schema=Right)
    async def refund_order(order_id: str, amount_cents: int) -> str:
        """Refund part of an order, in cents."""
        return shop.refund(order_id, amount_cents)

    return refund_order


def strict_types(shop):
    return _refund_with(shop, StrictTypes)


def strict_fields(shop):
    return _refund_with(shop, StrictFields)


def structured_refund(shop):
    def refund(order_id: str, amount_cents: int) -> str:
        return shop.refund(order_id, amount_cents)

    return StructuredTool.from_function(
        refund, name="refund_order", description="Refund part of an order, in cents.", args_schema=Right
    )


def class_refund(shop):
    class RefundOrder(BaseTool):
        name: str = "refund_order"
        description: str = "Refund part of an order, in cents."
        args_schema: type[BaseModel] = Right

        def _run(self, order_id: str, amount_cents: int) -> str:
            return shop.refund(order_id, amount_cents)

    return RefundOrder()


def lax(shop):
    @tool
    def refund_order(order_id: str, amount_cents: int) -> str:
        """Refund part of an order, in cents."""
        return shop.refund(order_id, amount_cents)

    return refund_order


def check_in_body(shop):
    class Args(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid")
        order_id: str
        amount_cents: int

    @tool(args_schema=Args)
    def refund_order(order_id: str, amount_cents: int) -> str:
        """Refund part of an order, in cents."""
        if amount_cents <= 0:
            raise ValueError("amount_cents must be above 0")
        return shop.refund(order_id, amount_cents)

    return refund_order


def error_text_from_body(shop):
    @tool(args_schema=Unbounded)
    def refund_order(order_id: str, amount_cents: int) -> str:
        """Refund part of an order, in cents."""
        if amount_cents <= 0:
            return "Error: amount_cents must be above 0"
        return shop.refund(order_id, amount_cents)

    return refund_order


def handled_validation(shop):
    return _refund_with(shop, Right).model_copy(update={"handle_validation_error": True})


def with_a_runtime(shop):
    @tool(args_schema=Right)
    def refund_order(order_id: str, amount_cents: int, runtime: ToolRuntime) -> str:
        """Refund part of an order, in cents."""
        return shop.refund(order_id, amount_cents)

    return refund_order


def named_refund(shop):
    return _refund_with(shop, Right).model_copy(update={"name": "refund"})


def test_lab16_q2_accepts_correct_alternatives_and_names_each_wrong_answer(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 2.5)
    answers = {
        "the solution": solution_namespace("16")["make_refund"],
        "StrictInt, StrictStr, ge=1": strict_types,
        "strict per field": strict_fields,
        "StructuredTool": structured_refund,
        "a BaseTool subclass": class_refund,
        "lax": lax,
        "strict only": lambda shop: _refund_with(shop, StrictOnly),
        "forbid only": lambda shop: _refund_with(shop, ForbidOnly),
        "no bound": lambda shop: _refund_with(shop, Unbounded),
        "ge=0": lambda shop: _refund_with(shop, FromZero),
        "a float amount": lambda shop: _refund_with(shop, Floats),
        "a converting validator": lambda shop: _refund_with(shop, Converting),
        "a check in the body": check_in_body,
        "an error text from the body": error_text_from_body,
        "handle_validation_error=True": handled_validation,
        "another name": named_refund,
        "a ToolRuntime the forbid schema does not declare": with_a_runtime,
        "async def": async_refund,
        "lt=100_000": lambda shop: _refund_with(shop, Below100k),
        "le=10_000": lambda shop: _refund_with(shop, UpTo10k),
        "a cap in a validator": lambda shop: _refund_with(shop, CappedInAValidator),
        "extra='allow'": lambda shop: _refund_with(shop, ExtraAllowed),
        "a pretender": lambda shop: Pretender(),
        "a list of one tool": lambda shop: [_refund_with(shop, Right)],
        "raises": lambda shop: _refund_with(shop, RefundArgs),  # noqa: F821 - the learner's NameError
    }
    assert_verdicts(
        verdicts(lab16.check_refund, answers),
        {
            "the solution": (),
            "StrictInt, StrictStr, ge=1": (),
            "strict per field": (),
            "StructuredTool": (),
            "a BaseTool subclass": (),
            "lax": ("amount_cents as a numeric string was refunded", "lax mode converted it silently"),
            "strict only": ("unknown key", "extra='forbid'"),
            "forbid only": ("as a float was refunded", "strict=True"),
            "no bound": ("not told that amount_cents must be above 0", "amount_cents 0 was refunded"),
            "ge=0": ("exclusiveMinimum 0", "amount_cents 0 was refunded"),
            "a float amount": ("other types", "'integer'"),
            "a converting validator": ("numeric string was refunded",),
            "a check in the body": ("crashed the run", "ValueError: amount_cents must be above 0"),
            "an error text from the body": ("reads as a success",),
            "handle_validation_error=True": ("does not say what was wrong",),
            "another name": ("must be named refund_order", "['refund']"),
            "a ToolRuntime the forbid schema does not declare": (
                "a right refund was refused",
                "refused an injected parameter",
                "8. Deep dive: Injected parameters",
            ),
            "async def": (),
            "lt=100_000": (
                "an upper bound on amount_cents the spec does not have",
                '"exclusiveMaximum": 100000',
                "a right refund was refused",
            ),
            "le=10_000": ("an upper bound on amount_cents the spec does not have", '"maximum": 10000'),
            "a cap in a validator": (
                "a right refund was refused",
                "refunds above 10,000",
                "the spec bounds amount_cents below only",
            ),
            "extra='allow'": ("crashed the run", "got through the args_schema (`extra='allow'`"),
            "a pretender": ("must return the tool", "<a Pretender>"),
            "a list of one tool": ("must return the tool",),
            "raises": ("your code raised NameError",),
        },
    )
    assert READS_ON == []


# -- q3: rows for the graph, a line for the model ----------------------------------------------------------
def structured_fetch(shop):
    def fetch(table: str):
        rows = shop.rows(table)
        return f"Fetched {len(rows)} row(s) of table '{table}'; the rows are attached for the app.", rows

    return StructuredTool.from_function(
        fetch,
        name="fetch_rows",
        description="Fetch every row of a table.",
        response_format="content_and_artifact",
    )


def tool_message_fetch(shop):
    @tool
    def fetch_rows(table: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Fetch every row of a table."""
        rows = shop.rows(table)
        return ToolMessage(f"{table}: {len(rows)} rows", artifact=rows, tool_call_id=tool_call_id)

    return fetch_rows


def async_fetch(shop):
    @tool(response_format="content_and_artifact")
    async def fetch_rows(table: str) -> tuple[str, list]:
        """Fetch every row of a table."""
        rows = shop.rows(table)
        return f"{len(rows)} rows in {table}", rows

    return fetch_rows


def _fetch(shop, make_return, **options):
    @tool(**options)
    def fetch_rows(table: str):
        """Fetch every row of a table."""
        return make_return(shop.rows(table), table)

    return fetch_rows


CONTENT = {"response_format": "content_and_artifact"}


class AlwaysEqual(list):
    def __eq__(self, other):
        return True


def fetched_twice(shop):
    @tool(response_format="content_and_artifact")
    def fetch_rows(table: str):
        """Fetch every row of a table."""
        return f"{len(shop.rows(table))} rows from {table}", shop.rows(table)

    return fetch_rows


def fetched_twice_then_scrubbed(shop):
    @tool(response_format="content_and_artifact")
    def fetch_rows(table: str):
        """Fetch every row of a table."""
        count = len(shop.rows(table))
        rows = shop.rows(table)
        _scrub(shop)
        return f"{count} rows from {table}", rows

    return fetch_rows


def test_lab16_q3_accepts_correct_alternatives_and_names_each_wrong_answer(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 4.0)
    answers = {
        "the solution": solution_namespace("16")["make_fetch_rows"],
        "StructuredTool, other wording": structured_fetch,
        "its own ToolMessage": tool_message_fetch,
        "async def": async_fetch,
        "a pair without the format": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", rows)
        ),
        "a list, not a pair": lambda shop: _fetch(
            shop, lambda rows, t: [f"{len(rows)} rows from {t}", rows], **CONTENT
        ),
        "the rows alone": lambda shop: _fetch(shop, lambda rows, t: rows, **CONTENT),
        "rows as JSON content": lambda shop: _fetch(
            shop, lambda rows, t: (json.dumps(rows), rows), **CONTENT
        ),
        "swapped": lambda shop: _fetch(shop, lambda rows, t: (rows, f"{len(rows)} rows from {t}"), **CONTENT),
        "no count": lambda shop: _fetch(shop, lambda rows, t: (f"Fetched the rows of {t}.", rows), **CONTENT),
        "artifact cut to 10": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", rows[:10]), **CONTENT
        ),
        "artifact wrapped": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", {"rows": rows}), **CONTENT
        ),
        "an always-equal artifact": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", AlwaysEqual()), **CONTENT
        ),
        "fetched twice": fetched_twice,
        "fetched twice, then scrubbed": fetched_twice_then_scrubbed,
        "a tuple artifact": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", tuple(rows)), **CONTENT
        ),
        "a JSON artifact": lambda shop: _fetch(
            shop, lambda rows, t: (f"{len(rows)} rows from {t}", json.dumps(rows)), **CONTENT
        ),
        "no return": lambda shop: None,
    }
    assert_verdicts(
        verdicts(lab16.check_fetch_rows, answers),
        {
            "the solution": (),
            "StructuredTool, other wording": (),
            "its own ToolMessage": (),
            "async def": (),
            "a pair without the format": ("no artifact", "the model read the rows"),
            "a list, not a pair": ("the agent's run crashed", "a tuple of two"),
            "the rows alone": ("the agent's run crashed", "two-tuple"),
            "rows as JSON content": ("the model read the rows", "the summary for table"),
            "swapped": ("is not its rows", "the model read the rows"),
            "no count": ("the summary for table",),
            "artifact cut to 10": ("is not its rows", "of 10 item(s)"),
            "artifact wrapped": ("is not its rows", "dict"),
            "an always-equal artifact": ("non-plain type (AlwaysEqual)",),
            "fetched twice": ("not asked once per call",),
            "fetched twice, then scrubbed": ("not asked once per call",),
            "a tuple artifact": ("a tuple of", "a tuple is not the list shop.rows returned"),
            "a JSON artifact": ("a str of", "characters", "not their text"),
            "no return": ("None means `make_fetch_rows` has no `return`",),
        },
    )


# -- every run holds every hard case; plain values; exceptions ----------------------------------------
def test_lab16_every_draw_holds_every_hard_case():
    for seed in range(200):
        rng = random.Random(seed)
        q1 = lab16._draw_q1(rng)
        assert q1["page"] != 1 and q1["page_size"] != 20  # the given values differ from the defaults
        assert lab16._draw_q2(rng)["large"] >= 10**9  # above any cap a beginner might invent
        assert q1["amount"] != int(q1["amount"]) and type(q1["whole_amount"]) is int
        q3 = lab16._draw_q3(rng)
        sizes = sorted(len(rows) for rows in q3["tables"].values())
        assert sizes[0] == 0 and 3 <= sizes[1] <= 6 and sizes[2] >= 30
        skus = [row["sku"] for rows in q3["tables"].values() for row in rows]
        assert len(set(skus)) == len(skus)
    refused = {label for label, _ in lab16.Q2_CASES}
    assert {
        "amount_cents as a numeric string",
        "amount_cents as a float",
        "amount_cents as true",
        "amount_cents 0",
        "a negative amount_cents",
        "an unknown key",
        "amount_cents missing",
        "order_id as a number",
    } <= refused


def test_lab16_q1_leaves_out_every_required_parameter():
    tools = solution_namespace("16")["make_tools"](lab16.Shop())
    built = SimpleNamespace(functions=lab16._told(tools, "the solution's tools", "q1"))
    calls = lab16._left_out_calls(built, lab16._draw_q1(random.Random(0)))
    assert sorted((name, param) for name, param, _ in calls) == [
        ("check_stock", "sku"),
        ("convert_price", "amount"),
        ("convert_price", "currency"),
        ("reserve_stock", "sku"),
        ("reserve_stock", "units"),
        ("search_products", "query"),
    ]
    assert all(param not in args for _, param, args in calls)


def test_lab16_the_solution_passes_through_the_exercises(capsys):
    namespace = solution_namespace("16")
    for exercise in (lab16.q1, lab16.q2, lab16.q3):
        accepted(exercise, namespace, capsys)


def test_lab16_a_system_exit_in_a_tool_body_is_a_verdict():
    def exits(shop):
        @tool(response_format="content_and_artifact")
        def fetch_rows(table: str):
            """Fetch every row of a table."""
            raise SystemExit(3)

        return fetch_rows

    rejected(lab16.q3, {"make_fetch_rows": exits}, "the agent's run crashed", "SystemExit")


def test_lab16_a_tool_that_hangs_in_the_agent_run_is_cut(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 1.5)
    release = threading.Event()

    def waits(shop):
        @tool(response_format="content_and_artifact")
        async def fetch_rows(table: str):
            """Fetch every row of a table."""
            await asyncio.to_thread(release.wait, 3)
            return "0 rows", []

        return fetch_rows

    try:
        rejected(lab16.q3, {"make_fetch_rows": waits}, "did not finish", "did not return within 1.5 s")
    finally:
        release.set()


def test_lab16_a_stub_says_so_once():
    def stub(shop):
        raise NotImplementedError("Return refund_order, with an args_schema that converts nothing.")

    rejected(lab16.q2, {"make_refund": stub}, "still raises NotImplementedError")


def test_lab16_the_shop_records_exact_types_and_never_runs_learner_methods():
    class Sneaky(str):
        def __repr__(self):
            raise SystemExit("never called")

    with lab16._checked_shop() as (shop, book):
        shop.refund(Sneaky("A-1"), True)
        ((method, seen),) = book
    assert method == "refund"
    assert seen == (("order_id", "Sneaky", None), ("amount_cents", "bool", True))
    assert shop.calls() == [("refund", {"order_id": None, "amount_cents": True})]  # the notebook's view


def test_lab16_the_checks_book_is_out_of_the_shops_reach():
    with lab16._checked_shop() as (shop, book):
        shop.stock("SKU-1")
        _scrub(shop)  # everything a tool can reach from the shop, emptied
        vars(shop).clear()
        assert book == [("stock", (("sku", "str", "SKU-1"),))]
        shop.reserve("SKU-1", 2)  # a shop whose own state is gone still records in the book
    assert book[-1] == ("reserve", (("sku", "str", "SKU-1"), ("units", "int", 2)))
    other = lab16.Shop()
    other.stock("SKU-2")  # a shop the check did not open: recorded on itself only
    assert other.calls() == [("stock", {"sku": "SKU-2"})]
    assert len(book) == 2


class Sly(ToolMessage):
    """A ToolMessage whose fields, read on the check's own thread, would hang it."""

    def __getattribute__(self, name):
        if name in ("status", "content", "artifact", "tool_call_id") and _on_the_checks_thread():
            READS_ON.append(name)
        return super().__getattribute__(name)


def test_lab16_q3_reads_no_attribute_of_a_returned_message_on_its_own_thread():
    def sly(shop):
        @tool
        def fetch_rows(table: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
            """Fetch every row of a table."""
            rows = shop.rows(table)
            return Sly(f"{len(rows)} rows from {table}", artifact=rows, tool_call_id=tool_call_id)

        return fetch_rows

    READS_ON.clear()
    rejected(lab16.q3, {"make_fetch_rows": sly}, "the state holds 3 Sly message(s)", "not a subclass")
    assert READS_ON == []


@pytest.mark.parametrize(
    "heading",
    [
        lab16.DEFAULTS_HEADING,
        lab16.COERCION_HEADING,
        lab16.MESSAGE_HEADING,
        lab16.PARSE_HEADING,
        lab16.TYPES_HEADING,
        lab16.REFUSED_HEADING,
        lab16.NAMES_HEADING,
        lab16.NEXT_TURN_HEADING,
        lab16.PAIR_HEADING,
        lab16.CALLED_HEADING,
    ],
)
def test_lab16_every_section_it_names_is_a_heading_of_lesson_16(heading):
    assert core._heading_cell(lab16.LESSON, heading), heading

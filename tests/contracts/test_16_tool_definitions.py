"""Library behaviour taught in notebooks/16_tool_definitions.ipynb.

How a tool's definition changes its run: `args_schema` defaults and coercion, pydantic's strict mode
beside the provider's (`bind_tools(..., strict=True)`), the message a validation error becomes,
`parse_docstring` and `description=`, two tools with one name, `content_and_artifact`, the callbacks
parallel calls fire, in order, injected parameters a schema leaves out, and a JSON-schema `dict` as
`args_schema`. Orders are driven by the callbacks themselves (a tool
waits until the handler has seen another call end), never by sleeps.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import warnings
from typing import Annotated

import pytest
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel, ConfigDict, ValidationError

from helpers.models import ScriptedChatModel, tool_results_summary

lesson = pytest.mark.lesson("16_tool_definitions")


def _ask(*calls):
    return [AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}
                                      for i, (name, args) in enumerate(calls)])]


def _run(tools, *calls):
    return ToolNode(tools).invoke(_ask(*calls), runtime=Runtime())


class SearchArgs(BaseModel):
    query: str
    page: int = 1
    size: int | None = None


@tool(args_schema=SearchArgs)
def search(query: str, page: int, size: int | None = 7) -> str:
    """Search the catalogue."""
    return f"query={query!r} page={page!r} size={size!r}"


@tool
def search_plain(query: str, page: int = 1, size: int | None = 7) -> str:
    """Search the catalogue."""
    return f"query={query!r} page={page!r} size={size!r}"


class StrictPage(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    page: int


@tool(args_schema=StrictPage)
def goto_page(page: int) -> str:
    """Open a page of results."""
    return f"page={page!r} ({type(page).__name__})"


@tool
def goto_page_lax(page: int) -> str:
    """Open a page of results."""
    return f"page={page!r} ({type(page).__name__})"


# -- 1. defaults, coercion, validation errors ----------------------------------------------------
@lesson
def test_with_an_args_schema_the_schemas_defaults_reach_the_tool_not_the_functions():
    (answer,) = _run([search], ("search", {"query": "lamp"}))
    assert answer.content == "query='lamp' page=1 size=None"


@lesson
def test_without_an_args_schema_the_signatures_defaults_apply():
    (answer,) = _run([search_plain], ("search_plain", {"query": "lamp"}))
    assert answer.content == "query='lamp' page=1 size=7"


@lesson
def test_lax_validation_coerces_int_strings_and_whole_floats_and_drops_extra_keys_in_toolnode():
    # Pydantic's defaults: lax mode coerces, extra="ignore" drops the unknown key.
    assert goto_page_lax.args_schema.model_config.get("extra", "ignore") == "ignore"
    assert not goto_page_lax.args_schema.model_config.get("strict", False)
    results = {str(args): _run([goto_page_lax], ("goto_page_lax", args))[0]
               for args in ({"page": "3"}, {"page": 3.0}, {"page": "3.0"}, {"page": 3, "sort": "asc"},
                            {"page": "3.5"})}
    assert [m.content for m in list(results.values())[:4]] == ["page=3 (int)"] * 4
    refused = results[str({"page": "3.5"})]
    assert refused.status == "error" and "unable to parse string as an integer" in refused.content


@lesson
def test_lax_validation_does_not_parse_a_json_list_inside_a_string_in_toolnode():
    @tool
    def pick(ids: list[int]) -> str:
        """Pick results by id."""
        return f"ids={ids!r}"

    (answer,) = _run([pick], ("pick", {"ids": "[1, 2]"}))
    assert answer.status == "error"
    assert answer.content.splitlines()[1] == " ids: Input should be a valid list"
    (parsed,) = _run([pick], ("pick", {"ids": [1, 2]}))
    assert parsed.content == "ids=[1, 2]"


@lesson
def test_a_strict_forbid_model_refuses_strings_floats_and_extra_keys_as_error_messages_in_toolnode():
    for args, detail in (({"page": "3"}, " page: Input should be a valid integer"),
                         ({"page": 3.0}, " page: Input should be a valid integer"),
                         ({"page": "3.0"}, " page: Input should be a valid integer"),
                         ({"page": 3, "sort": "asc"}, " sort: Extra inputs are not permitted")):
        (answer,) = _run([goto_page], ("goto_page", args))
        assert answer.status == "error"
        assert answer.content.splitlines()[1] == detail


def _sent_tools(strict):
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint(["-"]) as endpoint:
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False, max_retries=0)
        llm.bind_tools([search_plain, goto_page], strict=strict).invoke("Find lamps")
    return {t["function"]["name"]: t["function"] for t in endpoint.requests[0]["tools"]}


@lesson
def test_pydantic_strict_and_extra_forbid_are_not_sent_to_the_model():
    sent = _sent_tools(strict=None)
    assert sent["goto_page"]["parameters"] == {"properties": {"page": {"type": "integer"}},
                                               "required": ["page"], "type": "object"}
    assert "strict" not in sent["goto_page"] and "strict" not in sent["search_plain"]


@lesson
def test_chatopenai_bind_tools_strict_sends_strict_no_additional_properties_and_every_property_required():
    sent = _sent_tools(strict=True)
    for function in sent.values():
        assert function["strict"] is True and function["parameters"]["additionalProperties"] is False
    assert sent["search_plain"]["parameters"]["required"] == ["query", "page", "size"]
    assert sent["search_plain"]["parameters"]["properties"]["page"]["default"] == 1  # kept, yet required
    assert sent["goto_page"]["parameters"]["required"] == ["page"]


@lesson
def test_the_default_policy_answers_a_validation_error_with_this_exact_text():
    (answer,) = _run([search], ("search", {"page": "two"}))
    assert answer.status == "error"
    assert answer.content == (
        "Error invoking tool 'search' with kwargs {'page': 'two'} with error:\n"
        " query: Field required\n"
        "page: Input should be a valid integer, unable to parse string as an integer\n"
        " Please fix the error and try again."
    )


@lesson
def test_create_agents_model_reads_the_same_validation_message_on_its_next_turn():
    from langchain.agents import create_agent

    script = [[{"name": "search", "args": {"page": "two"}}], tool_results_summary]
    final = create_agent(ScriptedChatModel(script=script), [search]).invoke(
        {"messages": [HumanMessage("Find lamps")]})["messages"][-1]
    (expected,) = _run([search], ("search", {"page": "two"}))
    assert final.content == expected.content


@lesson
def test_calling_the_tool_directly_raises_pydantics_validation_error():
    with pytest.raises(ValidationError, match="1 validation error for SearchArgs"):
        search.invoke({"query": 3})


@lesson
def test_a_tools_own_handle_validation_error_answers_a_direct_call_and_replaces_toolnodes_message():
    assert search.handle_validation_error is False  # unset by default
    lenient = search.model_copy(update={"handle_validation_error": True})
    assert lenient.invoke({"query": 3}) == "Tool input validation error"
    (answer,) = _run([lenient], ("search", {"query": 3}))
    assert (answer.status, answer.content) == ("error", "Tool input validation error")


# -- 2. parse_docstring --------------------------------------------------------------------------
def _forecast(city: str, days: int = 1) -> str:
    """Look up the weather forecast.

    Use it for any question about rain or temperature.

    Args:
        city: The city, in English.
        days: How many days ahead, 1 to 7.

    Returns:
        A short forecast.
    """
    return city


@lesson
def test_parse_docstring_moves_args_into_parameter_descriptions_and_drops_args_and_returns():
    parsed = tool(parse_docstring=True)(_forecast)
    assert parsed.description == (
        "Look up the weather forecast. Use it for any question about rain or temperature.")
    sent = convert_to_openai_tool(parsed)["function"]
    assert sent["description"] == parsed.description
    assert {k: v.get("description") for k, v in sent["parameters"]["properties"].items()} == {
        "city": "The city, in English.", "days": "How many days ahead, 1 to 7."}


@lesson
def test_without_parse_docstring_the_raw_docstring_is_the_description_and_parameters_have_none():
    # the docstring as Python stores it: indented as written up to 3.12, dedented by 3.13's compiler
    unparsed = tool(_forecast)
    assert unparsed.description == _forecast.__doc__.strip()
    indent = "    " if sys.version_info >= (3, 13) else "        "
    assert f"Args:\n{indent}city: The city, in English." in unparsed.description
    sent = convert_to_openai_tool(unparsed)["function"]
    assert [p.get("description") for p in sent["parameters"]["properties"].values()] == [None, None]


def _refund_with(rest):
    def refund(order_id: str) -> str:
        return order_id

    refund.__doc__ = f"Refund an order.\n\n{rest}"
    return tool(parse_docstring=True)(refund)


_ARGS = "Args:\n    order_id: The order to refund."


@lesson
def test_parse_docstring_keeps_paragraphs_before_args_except_from_returns_or_example_on():
    kept = {"Raises:": "Raises:\n    PermissionError: too old.", "Note:": "Note:\n    Internal use only.",
            "Examples:": "Examples:\n    refund('1')"}
    for section in kept.values():
        refunded = _refund_with(f"{section}\n\n{_ARGS}")
        assert refunded.description == f"Refund an order. {section}"
        properties = refunded.args_schema.model_json_schema()["properties"]
        assert properties["order_id"]["description"] == "The order to refund."
    for cut in ("Returns:\n    A receipt.", "Example:\n    refund('1')",
                "Returns:\n    A receipt.\n\nRaises:\n    PermissionError: too old."):
        assert _refund_with(f"{cut}\n\n{_ARGS}").description == "Refund an order."
    # a section after Args: goes, whatever it is
    after = _refund_with(f"{_ARGS}\n\nRaises:\n    PermissionError: too old.")
    assert after.description == "Refund an order."


@lesson
def test_a_plural_examples_section_before_args_reaches_the_model_a_singular_one_does_not():
    plural = _refund_with(f"Examples:\n    refund('A-1')\n\n{_ARGS}")
    singular = _refund_with(f"Example:\n    refund('A-1')\n\n{_ARGS}")
    assert convert_to_openai_tool(plural)["function"]["description"] == (
        "Refund an order. Examples:\n    refund('A-1')")
    assert convert_to_openai_tool(singular)["function"]["description"] == "Refund an order."


@lesson
def test_description_replaces_the_docstring_and_parse_docstring_still_describes_the_parameters():
    described = convert_to_openai_tool(tool(description="Weather forecast.", parse_docstring=True)(_forecast))
    properties = described["function"]["parameters"]["properties"]
    assert described["function"]["description"] == "Weather forecast."
    assert [p.get("description") for p in properties.values()] == ["The city, in English.",
                                                                    "How many days ahead, 1 to 7."]
    alone = convert_to_openai_tool(tool(description="Weather forecast.")(_forecast))["function"]
    assert alone["description"] == "Weather forecast."
    assert [p.get("description") for p in alone["parameters"]["properties"].values()] == [None, None]


@lesson
def test_parse_docstring_keeps_a_colon_type_in_the_description_but_strips_a_parenthesised_one():
    def double(n: int) -> int:
        return 2 * n

    seen = {}
    for line in ("n (int): The number.", "n: int: The number."):
        double.__doc__ = f"Double a number.\n\nArgs:\n    {line}"
        seen[line] = tool(parse_docstring=True)(double).args_schema.model_json_schema()["properties"]["n"]
    assert seen["n (int): The number."]["description"] == "The number."
    assert seen["n: int: The number."]["description"] == "int: The number."


@lesson
def test_parse_docstring_raises_for_a_function_with_arguments_and_no_args_block():
    with pytest.raises(ValueError, match="Found invalid Google-Style docstring."):
        _refund_with("Use it for refunds only.")

    def no_arguments() -> str:
        """Refund everything."""
        return "done"

    assert tool(parse_docstring=True)(no_arguments).description == "Refund everything."


@lesson
def test_an_invalid_docstring_raises_at_decoration_and_error_on_invalid_docstring_false_sends_it_raw():
    def convert(amount: float, currency: str) -> str:
        """Convert an amount.
        Args:
            amount: How much.
            currency: The target currency.
        """
        return currency

    with pytest.raises(ValueError, match="Found invalid Google-Style docstring."):
        tool(parse_docstring=True)(convert)
    quiet = convert_to_openai_tool(tool(parse_docstring=True, error_on_invalid_docstring=False)(convert))
    assert quiet["function"]["description"] == (
        "Convert an amount.\nArgs:\n    amount: How much.\n    currency: The target currency.")
    properties = quiet["function"]["parameters"]["properties"]
    assert [p.get("description") for p in properties.values()] == [None, None]


@lesson
def test_parse_docstring_refuses_an_unknown_arg_and_accepts_an_undocumented_one():
    def unknown(city: str) -> str:
        """Look up.

        Args:
            town: The city.
        """
        return city

    def undocumented(city: str, days: int) -> str:
        """Look up.

        Args:
            city: The city.
        """
        return city

    with pytest.raises(ValueError, match="Arg town in docstring not found in function signature."):
        tool(parse_docstring=True)(unknown)
    sent = convert_to_openai_tool(tool(parse_docstring=True)(undocumented))["function"]
    properties = sent["parameters"]["properties"]
    assert properties["city"]["description"] == "The city." and "description" not in properties["days"]


# -- 3. two tools with one name ------------------------------------------------------------------
def _same_name_tools():
    @tool("account_action")
    def look_up_account(account_id: str) -> str:
        """Look up an account (read-only)."""
        return f"looked up {account_id}"

    @tool("account_action")
    def delete_account(account_id: str) -> str:
        """Delete an account."""
        return f"DELETED {account_id}"

    return [look_up_account, delete_account]


@lesson
def test_toolnode_keeps_the_last_of_two_same_name_tools_silently():
    tools = _same_name_tools()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        node = ToolNode(tools)
        (answer,) = node.invoke(_ask(("account_action", {"account_id": "a7"})), runtime=Runtime())
    assert list(node.tools_by_name) == ["account_action"]
    assert answer.content == "DELETED a7" and caught == []


@lesson
def test_a_model_bound_by_hand_is_sent_both_same_name_schemas():
    bound = ScriptedChatModel(script=["-"]).bind_tools(_same_name_tools())
    assert [(t["function"]["name"], t["function"]["description"]) for t in bound.kwargs["tools"]] == [
        ("account_action", "Look up an account (read-only)."), ("account_action", "Delete an account.")]


@lesson
@pytest.mark.parametrize("agent", ["create_agent", "create_react_agent"])
def test_both_prebuilt_agents_run_the_last_same_name_tool_without_a_name_warning(agent):
    script = [[{"name": "account_action", "args": {"account_id": "a7"}}], tool_results_summary]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if agent == "create_agent":
            from langchain.agents import create_agent as build
        else:
            from langgraph.prebuilt import create_react_agent as build
        built = build(ScriptedChatModel(script=script), _same_name_tools())
        final = built.invoke({"messages": [HumanMessage("Check a7")]})["messages"][-1]
    assert final.content == "DELETED a7"
    assert {type(w.message).__name__ for w in caught} <= {"LangGraphDeprecatedSinceV10"}


@lesson
@pytest.mark.parametrize("agent", ["create_agent", "create_react_agent"])
def test_both_prebuilt_agents_send_chatopenai_only_the_surviving_same_name_schema(agent):
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    if agent == "create_agent":
        from langchain.agents import create_agent as build
    else:
        from langgraph.prebuilt import create_react_agent as build
    script = [[{"name": "account_action", "args": {"account_id": "a7"}}], tool_results_summary]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ScriptedOpenAIEndpoint(script) as endpoint:
            llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                             use_responses_api=False, max_retries=0)
            final = build(llm, _same_name_tools()).invoke({"messages": [HumanMessage("Check a7")]})
    assert final["messages"][-1].content == "DELETED a7"
    assert len(endpoint.requests) == 2
    for request in endpoint.requests:
        assert [(t["function"]["name"], t["function"]["description"]) for t in request["tools"]] == [
            ("account_action", "Delete an account.")]


# -- 4. content_and_artifact ---------------------------------------------------------------------
@tool(response_format="content_and_artifact")
def fetch_rows(table: str, limit: int = 3):
    """Fetch rows from a table."""
    rows = [{"id": i, "table": table} for i in range(limit)]
    return f"{len(rows)} rows from {table}", rows


@lesson
def test_content_and_artifact_called_with_args_returns_only_the_content():
    assert fetch_rows.invoke({"table": "orders"}) == "3 rows from orders"


@lesson
def test_content_and_artifact_called_with_a_toolcall_returns_a_toolmessage_with_the_artifact():
    call = {"name": "fetch_rows", "args": {"table": "orders"}, "id": "c1", "type": "tool_call"}
    message = fetch_rows.invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.content == "3 rows from orders" and message.artifact[2] == {"id": 2, "table": "orders"}


@lesson
def test_create_agent_keeps_the_artifact_in_state_and_chatopenai_sends_only_the_content():
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    script = [[{"name": "fetch_rows", "args": {"table": "orders"}}], tool_results_summary]
    with ScriptedOpenAIEndpoint(script) as endpoint:
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False, max_retries=0)
        state = create_agent(llm, [fetch_rows]).invoke({"messages": [HumanMessage("How many orders?")]})
        sent = endpoint.requests[1]["messages"][-1]
    in_state = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert len(in_state.artifact) == 3
    assert sent == {"content": "3 rows from orders", "role": "tool", "tool_call_id": "call_0_0"}


@lesson
def test_the_artifact_is_in_create_agents_updates_stream_on_the_tools_toolmessage():
    from langchain.agents import create_agent

    script = [[{"name": "fetch_rows", "args": {"table": "orders"}}], tool_results_summary]
    agent = create_agent(ScriptedChatModel(script=script), [fetch_rows])
    ask = {"messages": [HumanMessage("How many orders?")]}
    seen = [(node, type(m).__name__, getattr(m, "artifact", None))
            for update in agent.stream(ask, stream_mode="updates")
            for node, values in update.items() for m in values["messages"]]
    assert [(node, kind) for node, kind, _ in seen] == [("model", "AIMessage"), ("tools", "ToolMessage"),
                                                        ("model", "AIMessage")]
    assert seen[1][2] == [{"id": i, "table": "orders"} for i in range(3)]
    assert seen[0][2] is None and seen[2][2] is None


@lesson
def test_content_and_artifact_returning_a_list_raises_valueerror_through_toolnode():
    @tool(response_format="content_and_artifact")
    def fetch_rows_list(table: str):
        """Fetch rows from a table."""
        return [f"2 rows from {table}", [{"id": 0}, {"id": 1}]]

    expected = ("a two-tuple of the message content and raw tool output is expected. "
                "Instead, generated response is of type: <class 'list'>")
    with pytest.raises(ValueError, match=expected):
        _run([fetch_rows_list], ("fetch_rows_list", {"table": "orders"}))


# -- 5. callbacks --------------------------------------------------------------------------------
class ToolEvents(BaseCallbackHandler):
    def __init__(self):
        self.events, self.changed = [], threading.Condition()

    def _record(self, *event):
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, **kwargs):
        self._record("start", kwargs.get("tool_call_id"), run_id, parent_run_id)

    def on_tool_end(self, output, *, run_id, parent_run_id=None, **kwargs):
        self._record("end", output.tool_call_id, run_id, parent_run_id)

    def on_tool_error(self, error, *, run_id, parent_run_id=None, **kwargs):
        self._record("error", kwargs.get("tool_call_id"), run_id, parent_run_id)

    def seen(self, kind, call_id=None):
        return [e for e in self.events if e[0] == kind and call_id in (None, e[1])]

    def wait_until(self, condition, timeout=10.0):
        with self.changed:
            if not self.changed.wait_for(condition, timeout):
                raise TimeoutError("the event never came")


AFTER = {"a": "b", "b": "c", "c": None}


def _ordered_tools(events):
    def ready(source):
        other = AFTER[source]
        return lambda: (len(events.seen("start")) == 3
                        and (other is None or bool(events.seen("end", f"call_{other}"))))

    @tool
    def fetch(source: str) -> str:
        """Fetch one source."""
        events.wait_until(ready(source))
        return f"data from {source}"

    @tool
    async def afetch(source: str) -> str:
        """Fetch one source."""
        await asyncio.to_thread(events.wait_until, ready(source))
        return f"data from {source}"

    return fetch, afetch


def _graph(tool_):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([tool_]))
    builder.add_edge(START, "tools")
    return builder.compile()


def _batch(name):
    calls = [{"name": name, "args": {"source": s}, "id": f"call_{s}", "type": "tool_call"} for s in "abc"]
    return {"messages": [AIMessage("", tool_calls=calls)]}


def _check_batch_order(events, messages, *, one_parent):
    starts, rest = events.events[:3], events.events[3:]
    assert sorted(e[1] for e in starts if e[0] == "start") == ["call_a", "call_b", "call_c"]
    assert [(e[0], e[1]) for e in rest] == [("end", "call_c"), ("end", "call_b"), ("end", "call_a")]
    run_of = {e[1]: e[2] for e in starts}
    assert all(run_of[e[1]] == e[2] for e in rest)  # each end carries its start's run_id
    parents = {e[3] for e in events.events}
    assert None not in parents and len(parents) == (1 if one_parent else 3)
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == [
        "data from a", "data from b", "data from c"]


@lesson
def test_under_invoke_ends_fire_in_completion_order_messages_in_call_order_one_parent():
    events = ToolEvents()
    fetch, _ = _ordered_tools(events)
    out = _graph(fetch).invoke(_batch("fetch"), config={"callbacks": [events]})
    _check_batch_order(events, out["messages"], one_parent=True)
    # the one parent is the graph node's run: ToolNode on its own, outside a graph, gives none
    alone = ToolEvents()
    fetch, _ = _ordered_tools(alone)
    messages = ToolNode([fetch]).invoke(_batch("fetch")["messages"], runtime=Runtime(),
                                        config={"callbacks": [alone]})
    assert [m.content for m in messages] == ["data from a", "data from b", "data from c"]
    assert len(alone.events) == 6 and {e[3] for e in alone.events} == {None}


@lesson
def test_under_ainvoke_ends_fire_in_completion_order_messages_in_call_order_one_parent():
    async def main():
        events = ToolEvents()
        _, afetch = _ordered_tools(events)
        out = await _graph(afetch).ainvoke(_batch("afetch"), config={"callbacks": [events]})
        return events, out

    events, out = asyncio.run(main())
    _check_batch_order(events, out["messages"], one_parent=True)


@lesson
def test_under_create_agent_ainvoke_each_call_has_its_own_parent_and_ends_in_completion_order():
    from langchain.agents import create_agent

    async def main():
        events = ToolEvents()
        _, afetch = _ordered_tools(events)
        calls = [{"name": "afetch", "args": {"source": s}, "id": f"call_{s}"} for s in "abc"]
        agent = create_agent(ScriptedChatModel(script=[calls, "done"]), [afetch])
        out = await agent.ainvoke({"messages": [HumanMessage("Fetch a, b and c")]},
                                  config={"callbacks": [events]})
        return events, out

    events, out = asyncio.run(main())
    _check_batch_order(events, out["messages"], one_parent=False)


@lesson
def test_a_validation_error_answered_to_the_model_fires_on_tool_error_not_on_tool_end():
    events = ToolEvents()
    (answer,) = ToolNode([search]).invoke(_ask(("search", {"page": "two"})), runtime=Runtime(),
                                          config={"callbacks": [events]})
    assert answer.status == "error"
    assert [e[:2] for e in events.events] == [("start", "call_0"), ("error", "call_0")]
    assert events.events[0][3] is None  # ToolNode on its own opens no parent run


@lesson
def test_a_crash_the_default_policy_lets_through_fires_on_tool_error_then_propagates():
    @tool
    def flaky(source: str) -> str:
        """Fetch a source that is down."""
        raise ConnectionError(f"{source} is down")

    events = ToolEvents()
    with pytest.raises(ConnectionError, match="a is down"):
        ToolNode([flaky]).invoke(_ask(("flaky", {"source": "a"})), runtime=Runtime(),
                                 config={"callbacks": [events]})
    assert [e[:2] for e in events.events] == [("start", "call_0"), ("error", "call_0")]


@lesson
def test_astream_events_v2_streams_tool_starts_then_ends_in_completion_order_with_toolmessages():
    async def main():
        events = ToolEvents()
        _, afetch = _ordered_tools(events)
        streamed = []
        async for event in _graph(afetch).astream_events(_batch("afetch"), config={"callbacks": [events]},
                                                         version="v2"):
            if event["event"] in ("on_tool_start", "on_tool_end"):
                streamed.append((event["event"], event["data"]["input"]["source"],
                                 type(event["data"].get("output")).__name__))
        return streamed

    streamed = asyncio.run(main())
    assert sorted(streamed[:3]) == [("on_tool_start", s, "NoneType") for s in "abc"]
    assert streamed[3:] == [("on_tool_end", s, "ToolMessage") for s in "cba"]


@lesson
def test_astream_events_v2_on_tool_end_output_is_the_toolmessage_with_the_artifact():
    async def main():
        call = {"name": "fetch_rows", "args": {"table": "orders"}, "id": "call_0", "type": "tool_call"}
        return [event["data"]["output"]
                async for event in _graph(fetch_rows).astream_events(
                    {"messages": [AIMessage("", tool_calls=[call])]}, version="v2")
                if event["event"] == "on_tool_end"]

    (output,) = asyncio.run(main())
    assert isinstance(output, ToolMessage) and output.tool_call_id == "call_0"
    assert output.artifact == [{"id": i, "table": "orders"} for i in range(3)]


# -- deep dive 7: where the handler goes (langchain#16461) ------------------------------------------

class _AllEvents(ToolEvents):
    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kwargs):
        self._record("model", None, run_id, parent_run_id)


def _lamp_agent(**model_options):
    from langchain.agents import create_agent

    script = [[{"name": "search", "args": {"query": "lamp"}, "id": "call_lamp"}], "done"]
    return create_agent(ScriptedChatModel(script=script, **model_options), [search])


@lesson
def test_a_handler_on_the_chat_models_constructor_sees_model_events_but_no_tool_events():
    on_model = _AllEvents()
    _lamp_agent(callbacks=[on_model]).invoke({"messages": [HumanMessage("Find lamps")]})
    assert [e[:2] for e in on_model.events] == [("model", None), ("model", None)]


@lesson
def test_a_handler_in_the_run_config_sees_the_model_and_the_tool_events():
    in_config = _AllEvents()
    _lamp_agent().invoke({"messages": [HumanMessage("Find lamps")]}, config={"callbacks": [in_config]})
    assert [e[:2] for e in in_config.events] == [
        ("model", None), ("start", "call_lamp"), ("end", "call_lamp"), ("model", None)]


# -- deep dive 8: injected parameters and a strict args_schema (langchain#34246) ---------------------

class _StrictQuery(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    query: str


class _StrictQueryWithRuntime(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True)
    query: str
    runtime: ToolRuntime


def _lookup(schema):
    @tool(args_schema=schema)
    def lookup(query: str, runtime: ToolRuntime) -> str:
        """Look a query up."""
        return f"{query!r} for {runtime.tool_call_id}"

    return lookup


@lesson
def test_a_strict_forbid_args_schema_refuses_an_undeclared_toolruntime_with_an_empty_reason():
    (answer,) = _run([_lookup(_StrictQuery)], ("lookup", {"query": "lamp"}))
    assert answer.status == "error"
    assert answer.content == ("Error invoking tool 'lookup' with kwargs {'query': 'lamp'} with error:\n \n"
                              " Please fix the error and try again.")
    from langgraph.prebuilt.tool_node import ToolInvocationError

    with pytest.raises(ToolInvocationError) as caught:
        ToolNode([_lookup(_StrictQuery)], handle_tool_errors=False).invoke(
            _ask(("lookup", {"query": "lamp"})), runtime=Runtime())
    errors = [(e["loc"], e["type"]) for e in caught.value.source.errors()]
    assert errors == [(("runtime",), "extra_forbidden")]
    assert caught.value.filtered_errors == []


@lesson
def test_strict_alone_does_not_refuse_an_undeclared_toolruntime():
    class StrictOnly(BaseModel):
        model_config = ConfigDict(strict=True)
        query: str

    (answer,) = _run([_lookup(StrictOnly)], ("lookup", {"query": "lamp"}))
    assert (answer.status, answer.content) == ("success", "'lamp' for call_0")


@tool
def _lookup_signature_only(query: str, runtime: ToolRuntime) -> str:
    """Look a query up."""
    return f"{query!r} for {runtime.tool_call_id}"


def _warned_fields(run):
    import re

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return sorted({name for w in caught for name in re.findall(r"field_name='(\w+)'", str(w.message))})


@lesson
@pytest.mark.parametrize("make", [lambda: _lookup(_StrictQueryWithRuntime), lambda: _lookup_signature_only],
                         ids=["in the schema", "in the signature only"])
def test_a_toolruntime_tool_warns_in_a_standalone_toolnode_without_a_config_and_not_in_a_graph(make):
    lookup = make()
    call = (lookup.name, {"query": "lamp"})
    assert _warned_fields(lambda: _run([lookup], call)) == ["metadata", "state"]  # no config, a bare list
    assert _warned_fields(lambda: ToolNode([lookup]).invoke(
        {"messages": _ask(call)}, {"configurable": {"thread_id": "t"}}, runtime=Runtime())) == []
    assert _warned_fields(lambda: _graph(lookup).invoke({"messages": _ask(call)})) == []


@lesson
def test_a_strict_forbid_args_schema_that_declares_the_toolruntime_injects_it_and_still_forbids_extra_keys():
    lookup = _lookup(_StrictQueryWithRuntime)
    assert list(convert_to_openai_tool(lookup)["function"]["parameters"]["properties"]) == ["query"]
    graph = _graph(lookup)
    good = graph.invoke({"messages": _ask(("lookup", {"query": "lamp"}))})["messages"][-1]
    assert (good.status, good.content) == ("success", "'lamp' for call_0")
    extra = graph.invoke({"messages": _ask(("lookup", {"query": "lamp", "sort": "asc"}))})["messages"][-1]
    assert extra.status == "error" and "sort: Extra inputs are not permitted" in extra.content


class Query(BaseModel):
    query: str


@lesson
def test_an_injected_tool_call_id_named_tool_call_id_is_filled_when_a_lax_args_schema_leaves_it_out():
    @tool(args_schema=Query)
    def named_right(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Look a query up."""
        return f"{query} for {tool_call_id}"

    (answer,) = _run([named_right], ("named_right", {"query": "lamp"}))
    assert (answer.status, answer.content) == ("success", "lamp for call_0")
    assert list(convert_to_openai_tool(named_right)["function"]["parameters"]["properties"]) == ["query"]


@lesson
def test_an_injected_tool_call_id_under_another_name_a_lax_args_schema_leaves_out_crashes_with_type_error():
    @tool(args_schema=Query)
    def named_other(query: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Look a query up."""
        return f"{query} for {call_id}"

    with pytest.raises(TypeError, match=r"named_other\(\) missing 1 required positional argument: 'call_id'"):
        _run([named_other], ("named_other", {"query": "lamp"}))


@lesson
def test_a_toolruntime_or_injected_state_a_lax_args_schema_leaves_out_is_still_filled_in():
    @tool(args_schema=Query)
    def with_runtime(query: str, runtime: ToolRuntime) -> str:
        """Look a query up."""
        return f"{query} for {runtime.tool_call_id}"

    @tool(args_schema=Query)
    def with_state(query: str, state: Annotated[dict, InjectedState]) -> str:
        """Look a query up."""
        return f"{query} with {len(state['messages'])} message(s)"

    (answer,) = _run([with_runtime], ("with_runtime", {"query": "lamp"}))
    assert answer.content == "lamp for call_0"
    state_answer = ToolNode([with_state]).invoke({"messages": _ask(("with_state", {"query": "lamp"}))},
                                                runtime=Runtime())["messages"][0]
    assert state_answer.content == "lamp with 1 message(s)"


PAGED = {"type": "object", "required": ["query"],
         "properties": {"query": {"type": "string"}, "page": {"type": "integer", "default": 1}}}


@tool(args_schema=PAGED)
def paged(query: str, runtime: ToolRuntime, page: int = 5) -> str:
    """Search the catalogue, one page at a time."""
    return f"query={query!r} page={page!r} runtime for {runtime.tool_call_id}"


@lesson
def test_a_dict_args_schema_is_sent_as_written():
    function = convert_to_openai_tool(paged)["function"]
    assert function["parameters"] == {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "page": {"type": "integer", "default": 1}}}


@lesson
def test_a_dict_args_schema_validates_nothing_and_the_functions_default_applies():
    (typed_wrong,) = _run([paged], ("paged", {"query": 3}))
    assert (typed_wrong.status, typed_wrong.content) == ("success", "query=3 page=5 runtime for call_0")


@lesson
@pytest.mark.parametrize(("args", "message"), [
    ({"page": 2}, "missing 1 required positional argument: 'query'"),
    ({"query": "lamp", "sort": "asc"}, "got an unexpected keyword argument 'sort'"),
])
def test_a_dict_args_schema_crashes_the_run_on_a_missing_or_unknown_argument(args, message):
    with pytest.raises(TypeError, match=message):
        _run([paged], ("paged", args))


@lesson
def test_a_dict_args_schema_tool_gets_its_toolruntime_even_with_a_none_default():
    @tool(args_schema=PAGED)
    def optional_runtime(query: str, runtime: ToolRuntime = None) -> str:
        """Search."""
        return type(runtime).__name__

    (answer,) = _run([optional_runtime], ("optional_runtime", {"query": "lamp"}))
    assert answer.content == "ToolRuntime"


def _lookup_tool_call_id(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Look a query up."""
    return query


def _lookup_call_id(query: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Look a query up."""
    return query


@lesson
@pytest.mark.parametrize(("function", "name"),
                         [(_lookup_tool_call_id, "tool_call_id"), (_lookup_call_id, "call_id")])
def test_a_dict_args_schema_never_fills_an_injected_tool_call_id(function, name):
    lookup = tool("lookup", args_schema=PAGED)(function)
    with pytest.raises(TypeError, match=f"missing 1 required positional argument: '{name}'"):
        _run([lookup], ("lookup", {"query": "lamp"}))


def _store_kind(query: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Report the store."""
    return type(store).__name__


def _message_count(query: str, state: Annotated[dict, InjectedState]) -> str:
    """Report the state."""
    return str(len(state["messages"]))


@lesson
@pytest.mark.parametrize("schema", [Query, PAGED], ids=["lax pydantic", "dict"])
@pytest.mark.parametrize(("function", "expected"), [(_store_kind, "InMemoryStore"), (_message_count, "1")],
                         ids=["InjectedStore", "InjectedState"])
def test_an_injected_store_or_state_an_args_schema_leaves_out_is_still_filled_in(schema, function, expected):
    injected = tool("injected", args_schema=schema)(function)
    result = ToolNode([injected]).invoke({"messages": _ask(("injected", {"query": "lamp"}))},
                                         runtime=Runtime(store=InMemoryStore()))
    assert result["messages"][0].content == expected

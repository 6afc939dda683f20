"""helpers.models: the scripted tool-calling model and the real-model switch."""

from __future__ import annotations

import asyncio
import os
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from helpers.graphs import tool_loop
from helpers.models import (
    DEFAULT_OPENAI_MODEL,
    RealModelConfigError,
    ScriptedChatModel,
    ScriptError,
    arguments_json,
    check_server,
    get_chat_model,
    real_model_requested,
    split_arguments,
    split_text,
    tool_results_summary,
)
from helpers.tools import make_city_tools

BOTH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_attraction", "args": {"city": "Paris"}}]
FINAL = "Paris: sunny, 25 °C; Paris: the Louvre。"


def bound(script, tools=None):
    return ScriptedChatModel(script=script).bind_tools(tools or make_city_tools(0))


def added(chunks):
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


# -- bind_tools and replies ---------------------------------------------------------------------
def test_bind_tools_sends_the_same_schemas_as_chatopenai():
    from langchain_openai import ChatOpenAI

    tools = make_city_tools(0)
    ours = ScriptedChatModel(script=[]).bind_tools(tools).kwargs["tools"]
    theirs = ChatOpenAI(model="gpt-4o", api_key="unused").bind_tools(tools).kwargs["tools"]
    assert ours == theirs


def test_first_turn_returns_the_scripted_tool_calls_with_deterministic_ids():
    reply = bound([BOTH, FINAL]).invoke("Weather and sights in Paris?")
    assert reply.tool_calls == [
        {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call_0_0", "type": "tool_call"},
        {"name": "lookup_attraction", "args": {"city": "Paris"}, "id": "call_0_1", "type": "tool_call"},
    ]
    assert reply.id == "scripted-0"
    assert reply.response_metadata["finish_reason"] == "tool_calls"


def test_the_turn_is_the_number_of_ai_messages_in_the_conversation():
    model = bound([BOTH, FINAL])
    first = model.invoke("q")
    reply = model.invoke([HumanMessage("q"), first])
    assert (reply.content, reply.id, reply.response_metadata["finish_reason"]) == (
        FINAL, "scripted-1", "stop")


def test_rerunning_gives_an_identical_reply():
    model = bound([BOTH, FINAL])
    assert model.invoke("q") == model.invoke("q")


def test_a_callable_turn_sees_the_conversation():
    conversation = [HumanMessage("q"), AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "1"}]),
                    ToolMessage("A", tool_call_id="1"), ToolMessage("B", tool_call_id="2")]
    reply = bound([BOTH, tool_results_summary]).invoke(conversation)
    assert reply.content == "A; B"


def test_script_may_name_the_tool_call_id():
    calls = [{"name": "lookup_weather", "args": {"city": "London"}, "id": "call_weather"}]
    assert bound([calls]).invoke("q").tool_calls[0]["id"] == "call_weather"


def test_a_scripted_aimessage_is_copied_not_shared():
    scripted = AIMessage("", tool_calls=[{"name": "lookup_weather", "args": {"city": "Tokyo"}, "id": "w"}])
    model = bound([scripted])
    model.invoke("q").tool_calls[0]["args"]["city"] = "changed"
    assert model.invoke("q").tool_calls[0]["args"] == {"city": "Tokyo"}
    assert scripted.id is None


def test_ainvoke_matches_invoke():
    model = bound([BOTH, FINAL])
    assert asyncio.run(model.ainvoke("q")) == model.invoke("q")


# -- errors -------------------------------------------------------------------------------------
def test_calling_a_tool_without_bind_tools_says_to_bind():
    with pytest.raises(ScriptError, match=r"not bound.*call `model.bind_tools\(\[...\]\)` first"):
        ScriptedChatModel(script=[BOTH]).invoke("q")


def test_calling_a_tool_that_is_not_bound_lists_the_bound_ones():
    weather, _ = make_city_tools(0)
    with pytest.raises(ScriptError, match=r"'lookup_attraction'.*Bound tools: \['lookup_weather'\]"):
        ScriptedChatModel(script=[BOTH]).bind_tools([weather]).invoke("q")


def test_too_few_turns_says_how_many_and_what_to_do():
    model = bound([BOTH])
    with pytest.raises(ScriptError, match=r"has 1 scripted turn\(s\).*holds 1 AI message\(s\). Add a turn"):
        model.invoke([HumanMessage("q"), model.invoke("q")])


# -- streaming ----------------------------------------------------------------------------------
def test_streamed_chunks_add_up_to_the_invoked_reply():
    model = bound([BOTH, FINAL])
    streamed = added(list(model.stream("q")))
    assert streamed.tool_calls == model.invoke("q").tool_calls
    assert streamed.response_metadata["finish_reason"] == "tool_calls"


def test_streamed_text_comes_in_pieces_that_join_to_the_reply():
    model = bound([BOTH, FINAL])
    conversation = [HumanMessage("q"), model.invoke("q")]
    pieces = [c.content for c in model.stream(conversation) if c.content]
    assert len(pieces) > 1
    assert "".join(pieces) == FINAL


def test_streamed_tool_arguments_arrive_in_fragments_after_a_named_first_chunk():
    chunks = list(bound([BOTH[:1]]).stream("q"))
    pieces = [c.tool_call_chunks[0] for c in chunks if c.tool_call_chunks]
    assert (pieces[0]["name"], pieces[0]["id"], pieces[0]["args"]) == ("lookup_weather", "call_0_0", "")
    assert [p["args"] for p in pieces[1:]] == ['{"', "city", '":"', "Paris", '"}']


def test_astream_matches_stream():
    model = bound([BOTH, FINAL])

    async def collect():
        return [c async for c in model.astream("q")]

    assert asyncio.run(collect()) == list(model.stream("q"))



def test_graph_message_stream_keeps_tool_calls_and_reports_each_chunk_once():
    tools = make_city_tools(0, sync=True)
    model = ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools)
    graph = tool_loop(model, tools)
    events = list(graph.stream({"messages": [("user", "q")]}, stream_mode="messages"))
    first_turn = [m for m, meta in events if meta["langgraph_node"] == "llm" and m.id == "scripted-0"]
    assert added(first_turn).tool_calls == model.invoke("q").tool_calls
    expected = [c for c in model.stream("q")]
    assert len(first_turn) == len(expected)  # once each: no chunk reported twice
    assert [type(m).__name__ for m, meta in events if meta["langgraph_node"] == "tools"] == [
        "ToolMessage", "ToolMessage"]


# -- thread safety ------------------------------------------------------------------------------
def test_many_threads_get_the_same_answers():
    model = bound([BOTH, FINAL])
    second = [HumanMessage("q"), model.invoke("q")]
    expected = {0: model.invoke("q"), 1: model.invoke(second)}
    jobs = [0, 1] * 100
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda turn: model.invoke("q" if turn == 0 else second), jobs))
    assert all(result == expected[turn] for turn, result in zip(jobs, results, strict=True))


# -- small pieces -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [FINAL, "plain words, then more. done!", "", "无标点"])
def test_split_text_loses_nothing(text):
    assert "".join(split_text(text)) == text


def test_arguments_json_is_compact_and_keeps_chinese():
    assert arguments_json({"city": "Paris", "days": 2}) == '{"city":"Paris","days":2}'
    assert "".join(split_arguments(arguments_json({"city": "Paris"}))) == '{"city":"Paris"}'


def test_tool_results_summary_reads_only_the_trailing_tool_messages():
    old = ToolMessage("old", tool_call_id="0")
    assert tool_results_summary([old, AIMessage("x"), ToolMessage("new", tool_call_id="1")]) == "new"
    assert tool_results_summary([HumanMessage("q")]) == "(no tool results)"


# -- the real-model switch ----------------------------------------------------------------------
@pytest.fixture
def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return port  # closed again: nothing listens here


@pytest.fixture
def listening_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("value", [None, "", "scripted", " Scripted "])
def test_the_scripted_model_is_the_default(value):
    env = {} if value is None else {"TOOLNODE_LAB_MODEL": value}
    assert not real_model_requested(env)
    assert isinstance(get_chat_model([FINAL], env=env), ScriptedChatModel)


def test_an_unknown_switch_value_says_what_is_understood():
    with pytest.raises(RealModelConfigError, match="TOOLNODE_LAB_MODEL=openai"):
        get_chat_model(env={"TOOLNODE_LAB_MODEL": "claude"})


def test_switch_on_without_a_key_says_what_to_set():
    with pytest.raises(RealModelConfigError) as info:
        get_chat_model(env={"TOOLNODE_LAB_MODEL": "openai"})
    message = str(info.value)
    wanted = ("OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TOOLNODE_LAB_MODEL_NAME=", "unset TOOLNODE_LAB_MODEL")
    assert [w for w in wanted if w not in message] == []


def test_switch_on_with_a_key_returns_chatopenai_on_the_default_model():
    from langchain_openai import ChatOpenAI

    model = get_chat_model(env={"TOOLNODE_LAB_MODEL": "openai", "OPENAI_API_KEY": "sk-test"})
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == DEFAULT_OPENAI_MODEL
    assert model.openai_api_key.get_secret_value() == "sk-test"


def test_a_base_url_needs_a_model_name():
    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    with pytest.raises(RealModelConfigError, match="TOOLNODE_LAB_MODEL_NAME=<model>"):
        get_chat_model(env=env)


def test_an_unreachable_base_url_is_named_in_the_error(free_port):
    url = f"http://127.0.0.1:{free_port}/v1"
    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": url, "TOOLNODE_LAB_MODEL_NAME": "m"}
    with pytest.raises(RealModelConfigError, match=f"Nothing answers at OPENAI_BASE_URL={url} "):
        get_chat_model(env=env)


def test_a_reachable_base_url_gives_chat_completions_without_a_key(listening_port):
    url = f"http://127.0.0.1:{listening_port}/v1"
    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_API_BASE": url, "TOOLNODE_LAB_MODEL_NAME": "qwen2.5"}
    model = get_chat_model(env=env)
    assert (model.model_name, model.openai_api_base, model.use_responses_api) == ("qwen2.5", url, False)


def test_check_false_skips_the_reachability_check(free_port):
    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port}/v1",
           "TOOLNODE_LAB_MODEL_NAME": "m"}
    assert get_chat_model(env=env, check=False).model_name == "m"


@pytest.mark.parametrize("url", ["127.0.0.1:11434/v1", "ftp://127.0.0.1/v1", "http:///v1"])
def test_check_server_rejects_urls_that_are_not_http(url):
    with pytest.raises(RealModelConfigError, match="is not an http"):
        check_server(url)


def test_get_chat_model_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("TOOLNODE_LAB_MODEL", "openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with pytest.raises(RealModelConfigError, match="OPENAI_API_KEY is not set"):
        get_chat_model()


# -- what the learner is told: masked URLs, unreachable models, proxies ----------------------------
@pytest.mark.parametrize(("url", "shown"), [
    ("http://ann:s3cret@127.0.0.1:11434/v1", "http://ann:***@127.0.0.1:11434/v1"),
    ("https://:tok@host.example/v1", "https://:***@host.example/v1"),
    ("http://ann@127.0.0.1/v1", "http://ann@127.0.0.1/v1"),
    ("http://127.0.0.1:1234/v1", "http://127.0.0.1:1234/v1"),
])
def test_mask_url_hides_only_the_password(url, shown):
    from helpers.models import mask_url

    assert mask_url(url) == shown


def test_errors_never_print_a_password_in_the_base_url(free_port):
    url = f"http://ann:s3cret@127.0.0.1:{free_port}/v1"
    for env in ({"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": url},
                {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": url, "TOOLNODE_LAB_MODEL_NAME": "m"}):
        with pytest.raises(RealModelConfigError) as info:
            get_chat_model(env=env)
        assert "s3cret" not in str(info.value) and "ann:***@" in str(info.value)
    with pytest.raises(RealModelConfigError) as info:
        check_server("ftp://ann:s3cret@host/v1")
    assert "s3cret" not in str(info.value)


@pytest.fixture
def unreachable_model(free_port):
    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": f"http://ann:pw@127.0.0.1:{free_port}/v1",
           "TOOLNODE_LAB_MODEL_NAME": "m"}
    model = get_chat_model(env=env, check=False)
    # The same class and settings without the SDK's retries (each waits about half a second).
    return type(model)(**{**model.model_dump(include={"model_name", "openai_api_base"}),
                          "api_key": "x", "use_responses_api": False, "max_retries": 0})


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
def test_an_unreachable_model_says_what_to_do_not_just_connection_error(unreachable_model, how):
    from helpers.models import RealModelUnavailableError

    async def consume_async():
        if how == "ainvoke":
            return await unreachable_model.ainvoke("hi")
        return [chunk async for chunk in unreachable_model.astream("hi")]

    with pytest.raises(RealModelUnavailableError) as info:
        if how == "invoke":
            unreachable_model.invoke("hi")
        elif how == "stream":
            list(unreachable_model.stream("hi"))
        else:
            asyncio.run(consume_async())
    message = str(info.value)
    assert "Start the server" in message and "unset TOOLNODE_LAB_MODEL" in message
    assert "ann:***@" in message and ":pw@" not in message
    assert isinstance(info.value, RealModelConfigError)  # old `except RealModelConfigError` still works


def test_is_loopback():
    from helpers.models import is_loopback

    assert is_loopback("http://127.0.0.1:8000/v1") and is_loopback("http://localhost/v1")
    assert is_loopback("http://[::1]:8000/v1")
    assert not is_loopback("https://api.openai.com/v1") and not is_loopback(None)


PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def dead_proxy(free_port, monkeypatch):
    """Every proxy variable points at a port where nothing listens, and NO_PROXY is empty."""
    for name in PROXY_ENV:
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    return free_port


def test_the_loopback_endpoint_is_reached_directly_despite_a_proxy(dead_proxy, monkeypatch):
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([BOTH, "done"]) as endpoint:
        monkeypatch.setenv("TOOLNODE_LAB_MODEL", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("TOOLNODE_LAB_MODEL_NAME", "m")
        tools = make_city_tools(0)
        model = get_chat_model().bind_tools(tools)
        assert model.invoke("q").tool_calls[0]["name"] == "lookup_weather"
        assert asyncio.run(model.ainvoke("q")).tool_calls[0]["name"] == "lookup_weather"
        assert "".join(c.content for c in model.stream([HumanMessage("q"), model.invoke("q")])) == "done"
        assert len(endpoint.requests) == 4


def test_a_proxy_breaks_a_plain_client_of_the_loopback_endpoint_unless_no_proxy_names_it(
        dead_proxy, monkeypatch):
    import openai
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    def plain(endpoint):
        return ChatOpenAI(model="m", base_url=endpoint.base_url, api_key="x", use_responses_api=False,
                          max_retries=0)

    # (langchain-openai caches one httpx client per base URL, so each case gets its own endpoint.)
    with ScriptedOpenAIEndpoint(["hi"]) as endpoint:
        # Without 127.0.0.1 in NO_PROXY the request goes to the (dead) proxy: the bare
        # "Connection error" learners saw in lesson 04.
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.delenv("no_proxy")
        with pytest.raises(openai.APIConnectionError):
            plain(endpoint).invoke("q")
        assert endpoint.requests == []
    with ScriptedOpenAIEndpoint(["hi"]) as endpoint:
        # Starting the endpoint puts 127.0.0.1 in NO_PROXY: a plain ChatOpenAI (lesson 04) works.
        assert "127.0.0.1" in os.environ["NO_PROXY"].split(",")
        assert plain(endpoint).invoke("q").content == "hi"


def test_bypass_proxy_for_changes_nothing_without_a_proxy():
    from helpers.openai_endpoint import bypass_proxy_for

    env = {}
    assert not bypass_proxy_for("127.0.0.1", env) and env == {}
    env = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.com"}
    assert bypass_proxy_for("127.0.0.1", env)
    assert env["NO_PROXY"] == "example.com,127.0.0.1" and env["no_proxy"] == "127.0.0.1"
    assert not bypass_proxy_for("127.0.0.1", env)


# -- ping_model: one real request ---------------------------------------------------------------
@pytest.fixture
def not_openai_server():
    """A plain HTTP server on 127.0.0.1 that is not an OpenAI API (404 for GET, 501 for POST)."""
    import threading
    from http.server import HTTPServer, SimpleHTTPRequestHandler

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_error(404)

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_ping_model_answers_from_a_real_openai_compatible_server():
    from helpers.models import ping_model
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint(["hi"]) as endpoint:
        env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": endpoint.base_url,
               "TOOLNODE_LAB_MODEL_NAME": "scripted"}
        assert ping_model(env) == f"OPENAI_BASE_URL={endpoint.base_url} answered and lists 'scripted'"


def test_ping_model_names_the_models_a_server_does_serve():
    from helpers.models import RealModelUnavailableError, ping_model
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint(["hi"]) as endpoint:
        env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": endpoint.base_url,
               "TOOLNODE_LAB_MODEL_NAME": "qwen2.5"}
        wanted = r"does not serve 'qwen2.5' \(it lists 'scripted'\)"
        with pytest.raises(RealModelUnavailableError, match=wanted):
            ping_model(env)


def test_ping_model_rejects_a_web_server_that_is_not_an_openai_api(not_openai_server):
    from helpers.models import RealModelUnavailableError, ping_model

    env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": not_openai_server,
           "TOOLNODE_LAB_MODEL_NAME": "m"}
    check_server(not_openai_server)  # a TCP probe is fooled ...
    wanted = "not as an OpenAI-compatible API: GET /models gave 404"
    with pytest.raises(RealModelUnavailableError, match=wanted):
        ping_model(env)  # ... one real request is not

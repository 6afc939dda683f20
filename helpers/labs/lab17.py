"""Lab 17 — Predict the agent loop (after `notebooks/17_the_agent_around_tools.ipynb`).

q1: `STEPS`: four predictions about the graph `create_agent` builds and the steps a run takes —
    cases lesson 17 does not run, derived from its rules (one step per node on the path; the
    hooks' nodes; no `tools` node without tools or a `wrap_tool_call`).
q2: `OUTCOMES`: four predictions about structured output and the limits: where the router exits,
    which limit stops a model that never stops, and what a run holds when it stops.

Both are predict-and-check exercises (`helpers.labs.predict`): every scenario runs live on every
check, and a wrong prediction is shown beside what the run gave, the rule and the section.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
    wrap_tool_call,
)
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel

from helpers.labs.predict import PredictionLab
from helpers.models import ScriptedChatModel

LESSON = "17_the_agent_around_tools"
_lab = PredictionLab("17", LESSON)
_GO = {"messages": [HumanMessage("What is the weather in Paris?")]}
_GRAPH = "1. The graph `create_agent` builds"
_STRUCTURED = "2. Structured output: the schema is one more tool"
_LIMITS = "3. Three limits on one loop"


# -- the scenarios' small parts ------------------------------------------------------------------------
@tool
def _weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 20 °C"


_weather.name = "weather"


class _Answer(BaseModel):
    city: str
    temp: int


_Answer.__name__ = "Answer"


class _Audit(AgentMiddleware):
    """All four node-type hooks, doing nothing."""

    def before_agent(self, state, runtime):
        return None

    def before_model(self, state, runtime):
        return None

    def after_model(self, state, runtime):
        return None

    def after_agent(self, state, runtime):
        return None


class _AfterOnly(AgentMiddleware):
    """One `after_model` hook, doing nothing; `name` keeps two of them apart."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def after_model(self, state, runtime):
        return None


def _steps(agent) -> int:
    """How many steps a run of `agent` takes (the highest step number a task carries)."""
    return max(e["step"] for e in agent.stream(_GO, stream_mode="debug") if e["type"] == "task")


def _fetcher():
    pages: list[int] = []

    @tool
    def fetch(page: int) -> str:
        """Fetch one page."""
        pages.append(page)
        return f"page {page}"

    return fetch, pages


_FOREVER = [[{"name": "fetch", "args": {"page": n}}] for n in range(40)]


# -- q1: the graph and its steps ---------------------------------------------------------------------------
@_lab.question(
    "q1",
    ask="create_agent(model, [weather], middleware=[Audit()]) — Audit has all four node hooks. The model "
    "answers 'done' at once, no tool call. How many steps does the run take?",
    answers=None,
    rule="One step per node on the path: before_agent, then an answering turn costs 1 + b + a steps (here "
    "before_model, model, after_model), then after_agent: 1 + 3 + 1.",
    heading=_GRAPH,
)
def direct_answer_with_audit():
    return _steps(create_agent(ScriptedChatModel(script=["done"]), [_weather], middleware=[_Audit()]))


@_lab.question(
    "q1",
    ask="Two middlewares, each with only an after_model hook. The model makes one turn with one weather "
    "call, then answers. How many steps does the run take?",
    answers=None,
    rule="A tool turn costs 2 + b + a steps (model, its after_model nodes, tools), the answering turn "
    "1 + b + a; with b = 0 and a = 2: 4 + 3.",
    heading=_GRAPH,
)
def two_after_model_hooks():
    script = [[{"name": "weather", "args": {"city": "Paris"}}], "done"]
    agent = create_agent(ScriptedChatModel(script=script), [_weather],
                         middleware=[_AfterOnly("First"), _AfterOnly("Second")])
    return _steps(agent)


@_lab.question(
    "q1",
    ask="create_agent(model, tools=[]) with no middleware. Does its graph have a 'tools' node?",
    answers=("yes", "no"),
    rule="No tools passed or on a middleware's .tools, and no wrap_tool_call: an agent without tools has "
    "no tools node.",
    heading=_GRAPH,
)
def tools_node_without_tools():
    graph = create_agent(ScriptedChatModel(script=["done"]), []).get_graph()
    return "yes" if "tools" in graph.nodes else "no"


@_lab.question(
    "q1",
    ask="create_agent(model, tools=[], middleware=[a wrap_tool_call middleware]). Does its graph have a "
    "'tools' node?",
    answers=("yes", "no"),
    rule="A wrap_tool_call builds the tools node even with no tools, so that the wrapper can run tools "
    "it adds itself.",
    heading=_GRAPH,
)
def tools_node_with_only_a_wrapper():
    @wrap_tool_call
    def passthrough(request, handler):
        return handler(request)

    graph = create_agent(ScriptedChatModel(script=["done"]), [], middleware=[passthrough]).get_graph()
    return "yes" if "tools" in graph.nodes else "no"


# -- q2: structured output and the limits ----------------------------------------------------------------
@_lab.question(
    "q2",
    ask="ToolStrategy(Answer) and [weather]. The model's first turn calls weather only; its second calls "
    "Answer; a third reply would say 'more'. How many model calls does the run make?",
    answers=None,
    rule="The router exits after a turn with no tool calls or once a structured response is set: the turn "
    "that calls Answer sets it, so the run ends there.",
    heading=_STRUCTURED,
)
def schema_in_the_second_turn():
    script = [[{"name": "weather", "args": {"city": "Paris"}}],
              [{"name": "Answer", "args": {"city": "Paris", "temp": 20}}], "more"]
    agent = create_agent(ScriptedChatModel(script=script), [_weather], response_format=ToolStrategy(_Answer))
    messages = agent.invoke(_GO)["messages"]
    return sum(m.type == "ai" for m in messages)


@_lab.question(
    "q2",
    ask="A model that calls fetch(page=n) on every turn, forever, under "
    "ModelCallLimitMiddleware(run_limit=2) and its default exit. How many pages are fetched?",
    answers=None,
    rule="The model limit checks before each model call: two calls are made, each turn's call answered by "
    "a tools step, and the third call is refused.",
    heading=_LIMITS,
)
def model_limit_two():
    fetch, pages = _fetcher()
    agent = create_agent(ScriptedChatModel(script=_FOREVER), [fetch],
                         middleware=[ModelCallLimitMiddleware(run_limit=2)])
    agent.invoke({"messages": [HumanMessage("Fetch everything.")]})
    return len(pages)


@_lab.question(
    "q2",
    ask="ToolCallLimitMiddleware(run_limit=1), default exit. The model's first turn calls fetch twice "
    "(pages 0 and 1), then it answers 'done'. How many pages are fetched?",
    answers=None,
    rule="The tool limit judges the turn the model just made, call by call: the call over the limit is "
    "answered with an error ToolMessage instead of running.",
    heading=_LIMITS,
)
def tool_limit_one_two_calls():
    fetch, pages = _fetcher()
    script = [[{"name": "fetch", "args": {"page": 0}}, {"name": "fetch", "args": {"page": 1}}], "done"]
    agent = create_agent(ScriptedChatModel(script=script), [fetch],
                         middleware=[ToolCallLimitMiddleware(run_limit=1)])
    agent.invoke({"messages": [HumanMessage("Fetch two pages.")]})
    return len(pages)


@_lab.question(
    "q2",
    ask="No middleware; the model calls fetch on every turn, forever; recursion_limit=6. How many pages "
    "are fetched before GraphRecursionError?",
    answers=None,
    rule="recursion_limit counts steps whatever runs in them: model and tools take one step each, so six "
    "steps hold three model turns and three tools steps.",
    heading=_LIMITS,
)
def recursion_limit_six():
    fetch, pages = _fetcher()
    agent = create_agent(ScriptedChatModel(script=_FOREVER), [fetch])
    try:
        agent.invoke({"messages": [HumanMessage("Fetch everything.")]}, {"recursion_limit": 6})
    except GraphRecursionError:
        pass
    return len(pages)


q1 = _lab.exercise(
    "q1",
    "STEPS",
    hints=(
        "Count nodes on the path: every node a run passes through takes one step, and the calls of one "
        "turn share one tools step. before_agent and after_agent run once per run.",
        "Lesson 17 section 1: a tool turn costs 2 + b + a steps, an answering turn 1 + b + a, with b "
        "before_model and a after_model hooks; the tools node exists when there are tools or a "
        "wrap_tool_call.",
    ),
)
q2 = _lab.exercise(
    "q2",
    "OUTCOMES",
    hints=(
        "Ask where each thing sits in the graph: the model limit before the model call, the tool limit "
        "right after the turn it judges, the step limit on every node.",
        "Lesson 17 sections 2 and 3: the router exits once a structured response is set; a model limit "
        "of n makes n calls; a tool limit answers the calls over it with an error; recursion_limit=6 "
        "holds six nodes' steps.",
    ),
)


def show(key: str) -> None:
    """Print exercise `key`'s questions (`"q1"` or `"q2"`), numbered, with their allowed answers."""
    _lab.show(key)


def starter(key: str) -> dict[str, str]:
    """Exercise `key`'s question names, each with the starter's `'?'`."""
    return _lab.starter(key)


__all__ = ["q1", "q2", "show", "starter"]

"""toolnode-lab's helpers: the small, tested pieces every notebook and lab imports.

What maintainers and instructors run (the course map and its estimator, notebook tools, the
workshop agenda, the version matrix, platforms and the pre-flight doctor) lives apart, in the
`courseware` package beside this one.

Modules, by concept (each public helper's docstring names the notebook that teaches it):

- `helpers.timing`  — `Stopwatch`, `CallRecorder`, `Rendezvous`, `format_seconds`, `default_pool_size`
- `helpers.plots`   — `plot_timeline`, `plot_scaling`
- `helpers.tools`   — the demo tools (weather / attraction, failing, dependent)
- `helpers.batch`   — `tool_calls_message`, `make_timed_tools`: N timed tools and the call for them
- `helpers.nodes`   — `CustomAsyncToolNode`, the hand-built tool node of lesson 02
- `helpers.lean_node` — `LeanAsyncToolNode`: lesson 02's node minus BaseTool's per-call machinery
- `helpers.models`  — `ScriptedChatModel` (offline) and `get_chat_model` (real on request)
- `helpers.openai_endpoint` — `ScriptedOpenAIEndpoint`: an OpenAI-compatible server on 127.0.0.1 (it can
  reject a history with unanswered tool calls, as OpenAI does)
- `helpers.display` — `show_graph`: graphs as mermaid, rendered offline
- `helpers.returns` — the input kinds and return variants of lesson 05's table, `output_shape`
- `helpers.agents`  — `conversation`, `tool_task_inputs`, `route_after_model`: compare prebuilt agents with
  the hand-wired loop
- `helpers.history` — `unanswered_tool_calls`: tool calls no ToolMessage answers
- `helpers.seeds`   — what the source posts print, quoted exactly, to compare with live runs
- `helpers.source`  — `excerpt`: live, numbered excerpts of installed library source
- `helpers.mcp_server` — the course's MCP server (`python -m helpers.mcp_server`, FastMCP, stdio)
- `helpers.mcp_client` — `open_session` / `mcp_tools`: start it with a real errlog, always stop it
- `helpers.practice` — `PredictionSet`: a lesson's Practice questions, predicted, then checked live
- `helpers.labs`    — the labs' `q1.check()` / `hint()` / `solution()`, one module per lab; starters,
  `make labs` and reset (`python -m helpers.labs`)

Nothing is imported here, so `import helpers` is instant and has no side effects.
"""

__version__ = "0.1.0"

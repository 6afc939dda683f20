import asyncio

import pytest

from helpers.timing import CallRecorder
from helpers.tools import (
    fetch_attraction,
    fetch_weather,
    make_city_tools,
    make_dependent_tools,
    make_failing_tool,
)


def test_fetch_functions_answer_like_the_post():
    async def main():
        return await asyncio.gather(fetch_weather("Paris", 0), fetch_attraction("Paris", 0))

    assert asyncio.run(main()) == ["Paris: sunny, 25 °C", "Paris: the Louvre"]


def test_city_tools_async_record_spans_and_have_no_sync_body():
    rec = CallRecorder()
    weather, attraction = make_city_tools(0.01, recorder=rec)
    assert (weather.name, attraction.name) == ("lookup_weather", "lookup_attraction")
    assert asyncio.run(attraction.ainvoke({"city": "Paris"})) == "Paris: the Louvre"
    assert [c.label for c in rec.calls] == ["lookup_attraction"]
    with pytest.raises(NotImplementedError):
        weather.invoke({"city": "Paris"})


def test_city_tools_sync():
    weather, _ = make_city_tools(0, sync=True)
    assert weather.invoke({"city": "London"}) == "London: cloudy, 18 °C"


def test_failing_tool_raises_connection_error_and_is_recorded():
    rec = CallRecorder()
    tool = make_failing_tool(0, recorder=rec, sync=True)
    with pytest.raises(ConnectionError, match="Paris"):
        tool.invoke({"city": "Paris"})
    assert [c.label for c in rec.calls] == ["lookup_traffic"]


def test_dependent_pair():
    capital, weather = make_dependent_tools(0)
    assert capital.args == {"country": {"title": "Country", "type": "string"}}

    async def chain():
        return await weather.ainvoke({"city": await capital.ainvoke({"country": "France"})})

    assert asyncio.run(chain()) == "Paris: sunny, 25 °C"


def test_the_server_process_can_use_the_city_data_without_langchain():
    import subprocess
    import sys

    code = "import sys, helpers.mcp_server; print('langchain_core' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"

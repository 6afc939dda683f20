"""The course's city data and the answers its lookups give — no imports, so the MCP server process
(`helpers.mcp_server`) can use it without loading langchain-core.

Taught in `notebooks/01_sequential_vs_gather.ipynb` (through `helpers.tools`).
"""

WEATHER = {"杭州": "晴，25 摄氏度", "北京": "多云，18 摄氏度", "上海": "小雨，21 摄氏度"}
ATTRACTIONS = {"杭州": "西湖", "北京": "故宫", "上海": "外滩"}
CAPITALS = {"浙江": "杭州", "江苏": "南京", "广东": "广州"}


def weather_report(city: str) -> str:
    """`杭州：晴，25 摄氏度`, as the source posts print it (`未知` for an unknown city)."""
    return f"{city}：{WEATHER.get(city, '未知')}"


def attraction_report(city: str) -> str:
    """`杭州：西湖`, as the source posts print it (`未知` for an unknown city)."""
    return f"{city}：{ATTRACTIONS.get(city, '未知')}"


def capital_of(province: str) -> str:
    """`浙江` → `杭州` (`未知` for an unknown province)."""
    return CAPITALS.get(province, "未知")

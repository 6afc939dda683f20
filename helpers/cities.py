"""The course's city data and the answers its lookups give — no imports, so the MCP server process
(`helpers.mcp_server`) can use it without loading langchain-core.

Taught in `notebooks/01_sequential_vs_gather.ipynb` (through `helpers.tools`).
"""

WEATHER = {"Paris": "sunny, 25 °C", "London": "cloudy, 18 °C", "Tokyo": "light rain, 21 °C"}
ATTRACTIONS = {"Paris": "the Louvre", "London": "the Tower of London", "Tokyo": "Senso-ji"}
CAPITALS = {"France": "Paris", "England": "London", "Japan": "Tokyo"}


def weather_report(city: str) -> str:
    """`Paris: sunny, 25 °C` (`unknown` for an unknown city)."""
    return f"{city}: {WEATHER.get(city, 'unknown')}"


def attraction_report(city: str) -> str:
    """`Paris: the Louvre` (`unknown` for an unknown city)."""
    return f"{city}: {ATTRACTIONS.get(city, 'unknown')}"


def capital_of(country: str) -> str:
    """`France` → `Paris` (`unknown` for an unknown country)."""
    return CAPITALS.get(country, "unknown")

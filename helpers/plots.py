"""Matplotlib figures that make concurrency visible: a timeline of calls and a scaling plot.

Figures are small (PNG, modest dpi) so committed notebooks stay light; strict nbval does not compare
PNG bytes, only the figure's text, so every call ends the cell with `plt.show()` semantics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt

from helpers.timing import Call, CallRecorder

FIGSIZE = (7.0, 2.4)
DPI = 72


def plot_timeline(
    calls: CallRecorder | Sequence[Call],
    title: str = "",
    *,
    ax=None,
    xmax: float | None = None,
    show: bool = True,
):
    """Draw each recorded call as a bar from its start to its end (a Gantt chart).

    Calls that overlap in time stack on separate rows at the same x-position, so concurrency,
    or its absence, shows at a glance. The x-axis starts at the first call's start.

    Args:
        calls: a `CallRecorder` or its `.calls`.
        title: the axes title; the wall time is appended.
        ax: draw into this axes (for side-by-side comparisons) instead of a new figure.
        xmax: fix the x-axis end, so two timelines share one scale.
        show: call `plt.show()` when a new figure was made.

    Returns:
        The axes, unless the figure was shown (so a cell ending with this call prints nothing).

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    calls = calls.calls if isinstance(calls, CallRecorder) else list(calls)
    if not calls:
        raise ValueError("Nothing to plot: no calls were recorded (wrap tool bodies in recorder.span).")
    origin = min(c.start for c in calls)
    wall = max(c.end for c in calls) - origin
    own_figure = ax is None
    if own_figure:
        _, ax = plt.subplots(figsize=(FIGSIZE[0], max(1.8, 0.8 + 0.3 * len(calls))), dpi=DPI)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    palette: dict[str, str] = {}
    for row, call in enumerate(calls):
        colour = palette.setdefault(call.label, colours[len(palette) % len(colours)])
        ax.barh(row, call.seconds, left=call.start - origin, height=0.6, color=colour)
    ax.set_yticks(range(len(calls)), [c.label for c in calls])
    ax.invert_yaxis()
    ax.set_xlim(0, xmax if xmax is not None else wall * 1.05)
    ax.set_xlabel("seconds since the first call started")
    ax.set_title(f"{title}  (wall {wall:.2f} s)".strip())
    ax.grid(axis="x", alpha=0.3)
    if own_figure:
        plt.tight_layout()
        if show:
            plt.show()
            return None
    return ax


def plot_scaling(
    ns: Sequence[int],
    series: Mapping[str, Sequence[float]],
    title: str = "Wall time vs number of calls",
    *,
    show: bool = True,
):
    """Plot wall time against the number of calls, one line per strategy.

    Sequential execution climbs linearly; concurrent execution of I/O-bound calls stays flat.

    Args:
        ns: the numbers of calls measured.
        series: strategy name → wall seconds, one per entry of `ns`.
        show: call `plt.show()`; otherwise the axes are returned for more drawing.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    _, ax = plt.subplots(figsize=(5.5, 3.2), dpi=DPI)
    for name, seconds in series.items():
        if len(seconds) != len(ns):
            raise ValueError(f"series {name!r} has {len(seconds)} values for {len(ns)} values of N")
        ax.plot(ns, seconds, marker="o", label=name)
    ax.set_xlabel("number of calls N")
    ax.set_ylabel("wall time (s)")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    plt.tight_layout()
    if show:
        plt.show()
        return None
    return ax

"""Matplotlib figures that make concurrency visible: a timeline of calls and a scaling plot.

Figures are PNG at 120 dpi: crisp on high-DPI screens and still small (tens of KB), so committed
notebooks stay light; strict nbval does not compare PNG bytes, only the figure's text, so every call
ends the cell with `plt.show()` semantics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt

from helpers.timing import Call, CallRecorder

FIGSIZE = (6.5, 2.4)
DPI = 120
MAX_ROWS_LABELLED = 16
"""Above this many rows a timeline labels only some of them, so the labels stay readable."""


def figure(width: float = FIGSIZE[0], height: float = FIGSIZE[1], rows: int = 1):
    """A new figure at the course's size and dpi: `fig, axes = figure(rows=2)`.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    return plt.subplots(rows, 1, figsize=(width, height), dpi=DPI, sharex=rows > 1)


def _timeline_height(rows: int) -> float:
    return min(5.0, max(1.6, 0.9 + 0.28 * rows))


def _waves(calls: Sequence[Call]) -> list[int]:
    """Each call's wave: 1 + the wave of the latest call that had ended before it started."""
    waves: list[int] = []
    for call in calls:
        earlier = [w for other, w in zip(calls[: len(waves)], waves, strict=True) if other.end <= call.start]
        waves.append(1 + max(earlier, default=0))
    return waves


def plot_timeline(
    calls: CallRecorder | Sequence[Call],
    title: str = "",
    *,
    ax=None,
    xmax: float | None = None,
    show: bool = True,
    rows: str = "call",
    xlabel: bool = True,
    would_take: Mapping[str, float] | None = None,
    deadline: float | None = None,
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
        rows: `"call"` (one row per call, labelled with its label) or `"worker"` (one row per
            thread / task, coloured by wave, so a thread pool's waves line up as columns: readable
            for any pool size).
        xlabel: label the x-axis (turn off for the upper panel of a stacked pair).
        would_take: label → seconds the call would have taken: drawn as an outlined bar behind
            the real one, so a call cut short (a timeout) shows what was cut.
        deadline: seconds after the first start at which a timeout fired: a dashed line.

    Returns:
        The axes, unless the figure was shown (so a cell ending with this call prints nothing).

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    calls = calls.calls if isinstance(calls, CallRecorder) else list(calls)
    if not calls:
        raise ValueError("Nothing to plot: no calls were recorded (wrap tool bodies in recorder.span).")
    if rows not in ("call", "worker"):
        raise ValueError(f"rows={rows!r}: use 'call' (one row per call) or 'worker' (one per thread/task)")
    origin = min(c.start for c in calls)
    wall = max(c.end for c in calls) - origin
    if rows == "worker":
        names = list(dict.fromkeys(c.worker for c in calls))
        row_of = [names.index(c.worker) for c in calls]
        labels = [f"worker {i + 1}" for i in range(len(names))]
    else:
        row_of = list(range(len(calls)))
        labels = [c.label for c in calls]
    own_figure = ax is None
    if own_figure:
        _, ax = plt.subplots(figsize=(FIGSIZE[0], _timeline_height(len(labels))), dpi=DPI)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    palette: dict[str, str] = {}
    end = wall
    waves = _waves(calls) if rows == "worker" else None
    for index, (row, call) in enumerate(zip(row_of, calls, strict=True)):
        key = f"wave {waves[index]}" if waves else call.label
        colour = palette.setdefault(key, colours[len(palette) % len(colours)])
        if would_take and call.label in would_take:
            planned = would_take[call.label]
            ax.barh(row, planned, left=call.start - origin, height=0.6, fill=False, edgecolor=colour,
                    hatch="//", linewidth=1.0, label=f"{call.label} would take {planned:g} s")
            end = max(end, call.start - origin + planned)
        first_of_wave = waves is not None and waves.index(waves[index]) == index
        ax.barh(row, call.seconds, left=call.start - origin, height=0.6, color=colour,
                edgecolor="white" if rows == "worker" else colour, linewidth=0.8,
                label=key if first_of_wave else None)
    step = 1 if len(labels) <= MAX_ROWS_LABELLED else -(-len(labels) // MAX_ROWS_LABELLED)
    ticks = list(range(0, len(labels), step))
    ax.set_yticks(ticks, [labels[i] for i in ticks], fontsize=8 if len(labels) > 8 else None)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    if deadline is not None:
        ax.axvline(deadline, color="0.25", linestyle="--", linewidth=1, label=f"timeout {deadline:g} s")
        end = max(end, deadline)
    if would_take or deadline is not None:
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    elif waves:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_xlim(0, xmax if xmax is not None else end * 1.05)
    if xlabel:
        ax.set_xlabel("seconds since the first call started")
    ax.set_title(f"{title}  (wall {wall:.2f} s)".strip(), fontsize=10)
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
    step: float | None = None,
):
    """Plot wall time against the number of calls, one line per strategy.

    Sequential execution climbs linearly; concurrent execution of I/O-bound calls stays flat; a
    thread pool climbs in steps, one step per pool-full of calls.

    Args:
        ns: the numbers of calls measured (each becomes an x tick).
        series: strategy name → wall seconds, one per entry of `ns`.
        step: one call's latency: the y-axis is then drawn in multiples of it, so steps read as
            "1 latency, 2 latencies, ...".
        show: call `plt.show()`; otherwise the axes are returned for more drawing.

    Taught in `notebooks/01_sequential_vs_gather.ipynb`.
    """
    _, ax = plt.subplots(figsize=(5.5, 3.2), dpi=DPI)
    for name, seconds in series.items():
        if len(seconds) != len(ns):
            raise ValueError(f"series {name!r} has {len(seconds)} values for {len(ns)} values of N")
        values = [s / step for s in seconds] if step else list(seconds)
        ax.plot(ns, values, marker="o", label=name)
    ax.set_xlabel("number of calls N")
    ax.set_ylabel(f"wall time (× {step:g} s latency)" if step else "wall time (s)")
    ax.set_xticks(list(ns), [str(n) for n in ns], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plt.tight_layout()
    if show:
        plt.show()
        return None
    return ax

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.plots import plot_scaling, plot_timeline  # noqa: E402
from helpers.timing import Call, CallRecorder  # noqa: E402


def test_timeline_draws_one_bar_per_call_on_a_given_axes():
    calls = [Call("a", 1.0, 2.0, "w"), Call("b", 1.0, 1.5, "w")]
    _, ax = plt.subplots()
    assert plot_timeline(calls, "t", ax=ax) is ax
    assert len(ax.patches) == 2
    assert ax.patches[0].get_x() == 0.0  # starts at the first call
    assert "wall 1.00 s" in ax.get_title()
    plt.close("all")


def test_timeline_shown_returns_nothing_and_empty_recorder_says_what_to_do():
    assert plot_timeline([Call("a", 0, 1, "w")]) is None
    with pytest.raises(ValueError, match="recorder.span"):
        plot_timeline(CallRecorder())
    plt.close("all")


def test_scaling_checks_series_length():
    with pytest.raises(ValueError, match="2 values for 3"):
        plot_scaling([1, 2, 3], {"x": [1.0, 2.0]})
    assert plot_scaling([1, 2], {"x": [1.0, 2.0]}, show=False) is not None
    plt.close("all")


def test_timeline_rows_by_worker_line_up_a_pools_waves():
    calls = [Call(f"t{i}", i // 2, i // 2 + 1, f"w{i % 2}") for i in range(6)]  # 2 workers, 3 waves
    _, ax = plt.subplots()
    plot_timeline(calls, ax=ax, rows="worker")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 1", "worker 2"]
    assert len(ax.patches) == 6
    plt.close("all")


def test_timeline_labels_at_most_sixteen_rows_and_shows_what_a_timeout_cut():
    calls = [Call(f"t{i:02d}", 0, 1, "w") for i in range(40)]
    _, ax = plt.subplots()
    plot_timeline(calls, ax=ax)
    assert len(ax.get_yticks()) <= 16
    _, ax = plt.subplots()
    plot_timeline([Call("slow", 0, 0.3, "w")], ax=ax, would_take={"slow": 1.0}, deadline=0.3)
    assert ax.get_xlim()[1] >= 1.0, "the axis must show the full second the call would take"
    assert len(ax.patches) == 2
    plt.close("all")


def test_figures_are_crisp():
    from helpers.plots import DPI, figure

    fig, axes = figure(rows=2)
    assert DPI >= 110 and fig.dpi == DPI and len(axes) == 2
    plt.close("all")

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

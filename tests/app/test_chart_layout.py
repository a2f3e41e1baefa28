"""The charts' layouts: a count axis has whole-number ticks only (no 0.5 or 1.5 answers), and the accuracy chart's
legend sits below the plot, clear of its title."""

from __future__ import annotations

import pandas as pd

from app import charts
from app.services.classes import auc_column


def whole_ticks(axis: dict) -> bool:
    """Plotly draws ticks at tick0 + n * dtick: whole numbers when both are whole, and their text has no decimals."""
    return (
        axis.get("tickformat") == ",d"
        and isinstance(axis.get("dtick"), int)
        and axis["dtick"] >= 1
        and float(axis.get("tick0", 0)).is_integer()
    )


HISTORY = pd.DataFrame(
    {
        "n_labels": [1, 2, 3],
        "n_sv": [1, 2, 2],
        "n_bound": [0, 1, 1],
        "n_in_margin": [3, 2, 1],
        "auc": [None, 0.5, 0.75],
    }
)
CLASS_HISTORY = pd.DataFrame(
    {
        "labels": [1, 2, 3],
        "accuracy": [None, 0.5, 1.0],
        "macro_auc": [None, 0.5, 1.0],
        auc_column(0): [None, 0.5, 1.0],
        auc_column(1): [None, 0.5, 1.0],
    }
)


def test_a_count_per_class_has_whole_number_ticks_only():
    # one answer in a class and two in another: Plotly's own ticks would be 0, 0.5, 1, 1.5, 2
    for figure in (
        charts.class_counts_figure({"food": 1, "sport": 2}),
        charts.class_counts_figure({"food": 1, "sport": 2}, "Items learned per class", "items"),
    ):
        assert whole_ticks(figure["layout"]["yaxis"]), figure["layout"]["yaxis"]
    # many answers: still whole steps, a few ticks (not one a count)
    big = charts.class_counts_figure({"food": 400, "sport": 1234})["layout"]["yaxis"]
    assert whole_ticks(big) and 1234 / big["dtick"] <= 5


def test_every_count_axis_has_whole_number_ticks_only():
    counts = {
        "support vectors": charts.support_vector_figure(HISTORY)["layout"],
        "unsure": charts.margin_figure(HISTORY)["layout"],
    }
    for name, layout in counts.items():
        assert whole_ticks(layout["xaxis"]) and whole_ticks(layout["yaxis"]), name  # labels and items
    labels_axes = {
        "auc": charts.auc_figure(HISTORY, has_evaluation=False)["layout"]["xaxis"],
        "accuracy": charts.class_accuracy_figure(CLASS_HISTORY)["layout"]["xaxis"],
        "per class": charts.class_auc_figure(CLASS_HISTORY, ["a", "b"])["layout"]["xaxis"],
    }
    for name, axis in labels_axes.items():
        assert whole_ticks(axis), name


def test_the_accuracy_chart_s_legend_is_below_the_plot_clear_of_its_title():
    layout = charts.class_accuracy_figure(CLASS_HISTORY)["layout"]
    legend = layout["legend"]
    # below the plot area (paper y under 0, hanging from its top), as on the per-class chart, not under the title
    assert legend["y"] < 0 and legend["yanchor"] == "top", legend
    assert legend["y"] == charts.class_auc_figure(CLASS_HISTORY, ["a", "b"])["layout"]["legend"]["y"]
    # the room below holds the x-axis title and the legend's row
    assert layout["margin"]["b"] >= 60, layout["margin"]

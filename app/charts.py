"""Plotly figures for the Label and Compare pages (no Streamlit here).

Figures are built as plain Plotly figure dicts (``{"data": [...], "layout": {...}}``)
in one go: building a ``plotly.graph_objects.Figure`` trace by trace with
``add_trace`` / ``update_layout`` validates every step and costs tens of
milliseconds per chart, which the Label page would pay after every label.
``st.plotly_chart`` and ``plotly.graph_objects.Figure(fig)`` accept the dicts as they are.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from app.services.vocabulary import heuristic_words, solver_words

Figure = dict[str, Any]

PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f", "#c53030", "#319795", "#718096")
GRID = "#e2e8f0"
#: labelling sessions overlaid on a comparison: dark neutrals none of the heuristics use, and markers
SESSION_COLORS = ("#1a202c", "#4a5568", "#975a16", "#2c5282")
SESSION_MARKERS = ("circle-open", "square-open", "diamond-open", "triangle-up-open")
#: a one-line legend just above the plot, under a one-line title (the live charts keep
#: room for three title lines), where it covers neither the data nor the x-axis title
ABOVE_LEGEND = {
    "orientation": "h",
    "x": 0,
    "y": 1.02,
    "xanchor": "left",
    "yanchor": "bottom",
    "font": {"size": 10},
    "itemwidth": 30,
}

#: a legend below the plot, under the x-axis title (the figure's bottom margin holds it)
BELOW_LEGEND = {"orientation": "h", "x": 0, "y": -0.3, "xanchor": "left", "yanchor": "top", "font": {"size": 10}}

#: pixels between the figure's top edge and the first line of a title
TITLE_PAD = 12
#: characters per title line on the small live charts (four share half the page width)
LIVE_TITLE_CHARS = 30


#: why the AUC of the scores when asked can read low (no evaluation split: the live charts read the items asked)
ASKED_AUC_NOTE = (
    "AUC here: how often the model, when it asked, rated a positive above a negative (0.5: no better than "
    'chance; 1: always), against your answers. The items asked are the ones the model picked, with "Most '
    'uncertain first" the ones it found hardest, so this reads lower than it would on the whole pool, even below '
    "0.5: it is not an estimate of accuracy."
)


def wrap_title(title: str, width: int | None) -> str:
    """Break a chart title into lines of at most ``width`` characters at spaces (Plotly
    does not wrap titles: a long one runs off a narrow chart and is cut)."""
    if not width:
        return title
    lines = []
    for part in title.split("<br>"):
        line = ""
        for word in part.split():
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def _layout(
    title: str,
    *,
    height: int = 260,
    xtitle: str | None = None,
    ytitle: str | None = None,
    wrap: int | None = LIVE_TITLE_CHARS,
    **extra,
) -> dict[str, Any]:
    title = wrap_title(title, wrap)
    # Room for three title lines on every live chart, so the plots side by side stay aligned
    # whatever their titles' lengths.
    top = 40 if not wrap else 72
    # the title hangs from the figure's top edge (container coordinates) with room above its first line,
    # so a two-line title is never cut at the top
    layout: dict[str, Any] = {
        "title": {
            "text": title,
            "font": {"size": 13},
            "yref": "container",
            "y": 1.0,
            "yanchor": "top",
            "pad": {"t": TITLE_PAD},
        },
        "height": height + top - 40,
        "margin": {"l": 10, "r": 10, "t": top, "b": 10},
        "xaxis": {"title": {"text": xtitle or ""}, "gridcolor": GRID},
        "yaxis": {"title": {"text": ytitle or ""}, "gridcolor": GRID},
        "legend": {"orientation": "h", "y": -0.3},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def _empty(title: str, note: str, height: int = 260, wrap: int | None = LIVE_TITLE_CHARS) -> Figure:
    layout = _layout(title, height=height, wrap=wrap)
    layout["xaxis"] = {"visible": False}
    layout["yaxis"] = {"visible": False}
    layout["annotations"] = [
        {
            "text": note,
            "showarrow": False,
            "x": 0.5,
            "y": 0.5,
            "xref": "paper",
            "yref": "paper",
            "font": {"color": "#718096"},
        }
    ]
    # one empty trace: Plotly refuses a figure whose data list is empty
    return {"data": [{"type": "scatter", "x": [], "y": [], "hoverinfo": "skip", "showlegend": False}], "layout": layout}


def _values(series) -> list:
    """Plain floats (None for NaN) so the figure is JSON-able as is."""
    return [
        None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)
        for v in np.asarray(series, dtype=float)
    ]


#: most points of the live ROC curve sent to the browser. The curve has a point per distinct score
#: of the held-out items (up to 2,000), serialised, sent and redrawn after every label, on a chart a
#: few hundred pixels wide.
ROC_POINTS = 500


def count_axis(values) -> dict[str, Any]:
    """A count's axis (answers, items, labels): whole-number ticks only, from 0 in steps of 1, 2, 5, 10, … (about
    five ticks up to the largest of ``values``), never 0.5 or 1.5 of a count."""
    finite = [float(v) for v in values if v is not None and np.isfinite(v)]
    return {"tickformat": ",d", "tick0": 0, "dtick": _step(max([1.0, *finite]))}


def curve_points(x, y, max_points: int = ROC_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` points of the curve through ``(x, y)`` to draw it with: the
    first and the last, and the first point of each of ``max_points - 2`` equal stretches of the
    curve's length (``|dx| + |dy|``), so every point left out lies less than 1 / (max_points - 2) of
    that length along the curve after a drawn one."""
    x, y, max_points = np.asarray(x, dtype=float), np.asarray(y, dtype=float), max(int(max_points), 3)
    if len(x) <= max_points:
        return np.arange(len(x))
    length = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(x)) + np.abs(np.diff(y)))])
    if not np.isfinite(length[-1]) or length[-1] <= 0:
        return np.array([0, len(x) - 1])
    stretch = np.minimum(np.floor(length / length[-1] * (max_points - 2)), max_points - 3)
    first = np.flatnonzero(np.diff(stretch, prepend=-1.0) != 0)
    return np.union1d(first, [len(x) - 1])


def roc_figure(roc: tuple[np.ndarray, np.ndarray, float, str] | None, *, has_evaluation: bool) -> Figure:
    """The live ROC curve; ``roc`` is ``(fpr, tpr, auc, title)`` or None while one class is missing.
    At most ``ROC_POINTS`` of its points are drawn (``curve_points``); the AUC is the whole curve's."""
    if roc is None:
        title = "ROC · held-out items" if has_evaluation else "ROC · scores when asked"
        return _empty(title, "needs a positive and a negative label")
    fpr, tpr, auc, title = roc
    drawn = curve_points(fpr, tpr)
    fpr, tpr = np.asarray(fpr)[drawn], np.asarray(tpr)[drawn]
    data = [
        {
            "type": "scatter",
            "x": [0, 1],
            "y": [0, 1],
            "mode": "lines",
            "hoverinfo": "skip",
            "line": {"color": "#cbd5e0", "dash": "dot"},
            "showlegend": False,
        },
        {
            "type": "scatter",
            "x": _values(fpr),
            "y": _values(tpr),
            "mode": "lines",
            "name": f"AUC {auc:.3f}",
            "line": {"color": PALETTE[0], "width": 2},
            "showlegend": True,
        },
    ]
    layout = _layout(
        title,
        xtitle="false positive rate",
        ytitle="true positive rate",
        legend={"orientation": "v", "x": 0.55, "y": 0.08},
    )
    layout["xaxis"]["range"] = [0, 1]
    layout["yaxis"]["range"] = [0, 1.02]
    return {"data": data, "layout": layout}


def _by_labels(history: pd.DataFrame) -> pd.DataFrame:
    """One row per number of labels (the last one: skips do not add a label)."""
    if history is None or len(history) == 0 or "n_labels" not in history:
        return pd.DataFrame()
    return history.groupby("n_labels", as_index=False).last()


def auc_figure(history: pd.DataFrame, *, has_evaluation: bool) -> Figure:
    title = "AUC on the evaluation split vs labels" if has_evaluation else "AUC of the scores when asked vs labels"
    frame = _by_labels(history)
    if frame.empty or "auc" not in frame or frame["auc"].isna().all():
        return _empty(title, "needs a positive and a negative label")
    auc = _values(frame["auc"])
    data = [
        {
            "type": "scatter",
            "x": _values(frame["n_labels"]),
            "y": auc,
            "mode": "lines+markers",
            "marker": {"size": 4},
            "line": {"color": PALETTE[0]},
            "name": "AUC",
            "showlegend": False,
        }
    ]
    # The axis always spans chance (0.5) to perfect (1): an autoscaled axis would blow a
    # wobble of 0.46-0.50 up to the full height of the chart.
    low = min([0.5, *(v for v in auc if v is not None)])
    layout = _layout(
        title,
        xtitle="labels",
        ytitle="AUC",
        xaxis=count_axis(_values(frame["n_labels"])),
        yaxis={"range": [max(0.0, low - 0.02), 1.02]},
    )
    layout["shapes"] = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": 0.5,
            "y1": 0.5,
            "line": {"color": "#cbd5e0", "dash": "dot", "width": 1},
        }
    ]
    return {"data": data, "layout": layout}


def support_vector_figure(history: pd.DataFrame) -> Figure:
    title = "Support vectors vs labels"
    frame = _by_labels(history)
    if frame.empty or "n_sv" not in frame:
        return _empty(title, "no label yet")
    data = [
        {
            "type": "scatter",
            "x": _values(frame["n_labels"]),
            "y": _values(frame["n_sv"]),
            "mode": "lines",
            "name": "total",
            "line": {"color": PALETTE[0]},
        }
    ]
    if "n_bound" in frame:
        data.append(
            {
                "type": "scatter",
                "x": _values(frame["n_labels"]),
                "y": _values(frame["n_bound"]),
                "mode": "lines",
                "name": "at their bound",
                "line": {"color": PALETTE[1], "dash": "dash"},
            }
        )
    # legend above the plot: below it, it would sit on the x-axis title
    return {
        "data": data,
        "layout": _layout(
            title,
            xtitle="labels",
            ytitle="support vectors",
            xaxis=count_axis(_values(frame["n_labels"])),
            yaxis={"rangemode": "tozero", **count_axis(_values(frame["n_sv"]))},
            legend=ABOVE_LEGEND,
        ),
    }


def margin_figure(history: pd.DataFrame) -> Figure:
    title = "Unlabelled items the model is unsure of"
    frame = _by_labels(history)
    if frame.empty or "n_in_margin" not in frame or frame["n_in_margin"].isna().all():
        return _empty(title, "no label yet")
    data = [
        {
            "type": "scatter",
            "x": _values(frame["n_labels"]),
            "y": _values(frame["n_in_margin"]),
            "mode": "lines",
            "fill": "tozeroy",
            "name": "items the model is unsure of",
            "line": {"color": PALETTE[2]},
            "fillcolor": _rgba(PALETTE[2], 0.2),
        }
    ]
    layout = _layout(
        title,
        xtitle="labels",
        ytitle="items",
        xaxis=count_axis(_values(frame["n_labels"])),
        yaxis={"rangemode": "tozero", **count_axis(_values(frame["n_in_margin"]))},
    )
    return {"data": data, "layout": layout}


# --------------------------------------------------------------------------- comparisons


#: axis titles for the metrics of the tidy comparison rows
METRIC_NAMES = {
    "auc": "test AUC",
    "accuracy": "test accuracy",
    "macro_auc": "test macro AUC",
    "n_sv": "support vectors",
    "n_bound": "support vectors at the bound C",
    "n_in_margin": "unlabelled items the model is unsure of",
    "recall": "recall (positives labelled / in the pool)",
}


def plotly_text(text: object) -> str:
    """``text`` shown as it is in a Plotly name or title: Plotly reads tags such as ``<a href>``
    and ``<b>`` in them, and decodes entities, so ``<``, ``>`` and ``&`` become entities."""
    return html.escape(str(text), quote=False)


def _rgba(color: str, alpha: float) -> str:
    color = color.lstrip("#")
    r, g, b = (int(color[k : k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _series_name(rows: pd.DataFrame) -> pd.Series:
    """Each run's heuristic in words (and its model's, when a heuristic ran on several): a legend's names."""
    words = rows["strategy"].astype(str).map(heuristic_words)
    if "solver" in rows and rows.groupby("strategy")["solver"].nunique().max() > 1:
        return words + " / " + rows["solver"].astype(str).map(solver_words)
    return words


#: metrics that are shares: their band stays within [0, 1] (every metric here is a count or a share: >= 0)
SHARE_METRICS = ("auc", "accuracy", "macro_auc", "recall")
SPREAD = " (average over seeds; the band: ± one standard deviation)"


def curve_bands(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean and standard deviation of ``metric`` over seeds at each label count, per series."""
    data = rows.assign(series=_series_name(rows))
    out = data.groupby(["series", "n_labels"])[metric].agg(["mean", "std", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out


def learning_curve_figure(
    rows: pd.DataFrame,
    metric: str = "auc",
    *,
    title: str | None = None,
    overlay: pd.DataFrame | None = None,
    overlay_metric: str | None = None,
    wrap: int | None = None,
) -> Figure:
    """Mean ± std bands over seeds for each heuristic; stored sessions overlaid as dashed lines.  The title
    says "mean ± std over seeds" only when there are several seeds (``wrap``: its lines' characters at most, for
    a half-page chart); a band stays within what the metric can be (a share within [0, 1], a count at 0 or
    more)."""
    several = rows is not None and "seed" in rows and rows["seed"].nunique() > 1
    title = (title or f"{METRIC_NAMES.get(metric, metric)} vs labels") + (SPREAD if several else "")
    top = 1.0 if metric in SHARE_METRICS else np.inf
    if rows is None or len(rows) == 0 or metric not in rows:
        return _empty(title, "no results", height=380, wrap=wrap)
    data: list[dict[str, Any]] = []
    bands = curve_bands(rows.dropna(subset=[metric]), metric)
    for k, (series, part) in enumerate(bands.groupby("series", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        x = part["n_labels"].to_numpy(dtype=float)
        mean = part["mean"].to_numpy(dtype=float)
        std = part["std"].to_numpy(dtype=float)
        data.append(
            {
                "type": "scatter",
                "x": _values(np.concatenate([x, x[::-1]])),
                "y": _values(np.clip(np.concatenate([mean + std, (mean - std)[::-1]]), 0.0, top)),
                "fill": "toself",
                "fillcolor": _rgba(color, 0.15),
                "line": {"width": 0},
                "hoverinfo": "skip",
                "showlegend": False,
                "legendgroup": str(series),
            }
        )
        data.append(
            {
                "type": "scatter",
                "x": _values(x),
                "y": _values(mean),
                "mode": "lines",
                "line": {"color": color, "width": 2},
                "name": plotly_text(series),
                "legendgroup": str(series),
            }
        )
    overlay_metric = overlay_metric or metric
    # the comparison's own label axis: a long labelling session is cut there, not stretching the bands
    low, high = float(np.nanmin(rows["n_labels"])), float(np.nanmax(rows["n_labels"]))
    if overlay is not None and len(overlay) and overlay_metric in overlay:
        for k, (name, part) in enumerate(overlay.groupby("session", sort=True)):
            part = part.dropna(subset=[overlay_metric])
            part = part[part["n_labels"] <= high]
            if part.empty:
                continue
            # a session looks unlike any heuristic: dark dotted line with open markers
            data.append(
                {
                    "type": "scatter",
                    "x": _values(part["n_labels"]),
                    "y": _values(part[overlay_metric]),
                    "mode": "lines+markers",
                    "name": plotly_text(name),
                    "marker": {"symbol": SESSION_MARKERS[k % len(SESSION_MARKERS)], "size": 6},
                    "line": {"color": SESSION_COLORS[k % len(SESSION_COLORS)], "dash": "dot", "width": 2},
                }
            )
    layout = _layout(title, height=380, xtitle="labels", ytitle=METRIC_NAMES.get(metric, metric), wrap=wrap)
    layout["xaxis"] = {**layout["xaxis"], **count_axis([high]), "range": [low - 0.5, high + 0.5]}
    if not wrap:  # (one line of title; wrapped: room for three)
        layout["margin"]["t"] = 50
    return {"data": data, "layout": layout}


def latency_figure(rows: pd.DataFrame) -> Figure:
    """Median and 95th percentile of update and query milliseconds per heuristic."""
    title = "Latency per label (median and 95th percentile, ms)"
    if rows is None or len(rows) == 0 or "update_ms" not in rows:
        return _empty(title, "no results", height=340, wrap=None)
    data_rows = rows.assign(series=_series_name(rows))
    data = []
    for k, (column, label) in enumerate((("update_ms", "update"), ("query_ms", "query"))):
        if column not in data_rows or data_rows[column].isna().all():
            continue
        stats = data_rows.groupby("series")[column].quantile([0.5, 0.95]).unstack()
        names = [plotly_text(s) for s in stats.index]
        data.append(
            {
                "type": "bar",
                "x": names,
                "y": _values(stats[0.5]),
                "name": f"{label} median",
                "marker": {"color": PALETTE[k]},
            }
        )
        data.append(
            {
                "type": "bar",
                "x": names,
                "y": _values(stats[0.95]),
                "name": f"{label} p95",
                "marker": {"color": _rgba(PALETTE[k], 0.45)},
            }
        )
    layout = _layout(title, height=340, ytitle="ms", barmode="group", wrap=None)
    layout["margin"]["t"] = 50
    return {"data": data, "layout": layout}


# --------------------------------------------------------------------------- stopping


def _step(top: float, ticks: int = 5) -> int:
    """A whole-number tick step that puts at most about ``ticks`` ticks up to ``top``: 1, 2, 5, 10, 20, 50, …"""
    step = 1
    while top / step > ticks:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def gain_figure(
    gain: pd.DataFrame, estimate=None, target_recall: float | None = None, height: int | None = None
) -> Figure:
    """Positives found against labels (the gain curve), random draws of recall checks marked, and the
    estimated number of positives in the pool (with its interval) when there is an estimate (``height``:
    that of the plot; None: 330, and 260 while there is no label)."""
    title = "Positives found vs labels"
    if gain is None or len(gain) < 2:  # (one point is no curve)
        return _empty(
            title,
            "no label yet" if gain is None or len(gain) == 0 else "the curve starts at the second label",
            height=height or 260,
        )
    x, found = _values(gain["n_labels"]), _values(gain["found"])
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": x,
            "y": found,
            "mode": "lines",
            "name": "found",
            "line": {"color": PALETTE[0], "width": 2},
        }
    ]
    drawn = np.asarray(gain["drawn"], dtype=bool)
    if drawn.any():
        data.append(
            {
                "type": "scatter",
                "x": [v for v, d in zip(x, drawn, strict=True) if d],
                "y": [v for v, d in zip(found, drawn, strict=True) if d],
                "mode": "markers",
                "name": "random draws",
                "marker": {"color": PALETTE[1], "size": 4},
            }
        )
    shapes = []
    top = float(max(found)) if found else 0.0
    # an estimate too wide to say anything (``RecallEstimate.too_early``) is left out: the axis fits what was found
    if estimate is not None and np.isfinite(estimate.remaining) and not getattr(estimate, "too_early", False):
        total = estimate.found + estimate.remaining
        low, high = estimate.found + estimate.remaining_low, estimate.found + estimate.remaining_high
        shapes.append(
            {
                "type": "rect",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "yref": "y",
                "y0": low,
                "y1": high,
                "fillcolor": _rgba(PALETTE[2], 0.15),
                "line": {"width": 0},
            }
        )
        data.append(
            {
                "type": "scatter",
                "x": [x[0], x[-1]],
                "y": [total, total],
                "mode": "lines",
                "name": f"estimated in the pool ({estimate.method})",
                "line": {"color": PALETTE[2], "dash": "dash", "width": 1.5},
            }
        )
        if target_recall:
            data.append(
                {
                    "type": "scatter",
                    "x": [x[0], x[-1]],
                    "y": [target_recall * total] * 2,
                    "mode": "lines",
                    "name": f"{100 * target_recall:g}% of the estimate",
                    "line": {"color": "#a0aec0", "dash": "dot", "width": 1},
                }
            )
        top = max(top, high)
    # the axis fits what was found and the estimate's interval (and no more): 8% headroom, at least 1
    # counts: whole-number ticks only (no 0.2 or 0.5 steps on a short curve)
    yaxis = {"range": [0, max(1.0, 1.08 * top)], "autorange": False, "tickformat": ",d", "dtick": _step(top)}
    xaxis = {"tickformat": ",d", "dtick": _step(float(max(x)))}
    layout = _layout(
        title,
        height=height or 330,
        xtitle="labels",
        ytitle="positives",
        yaxis=yaxis,
        xaxis=xaxis,
        legend={"orientation": "h", "x": 0, "y": -0.28, "xanchor": "left", "yanchor": "top", "font": {"size": 10}},
        wrap=None,
    )
    layout["margin"]["b"] = 70
    layout["shapes"] = shapes
    return {"data": data, "layout": layout}


# --------------------------------------------------------------------------- sessions with named classes


def rated_waiting(*, per_class: bool, multi_label: bool = False, given: str = "answers given") -> str:
    """What an empty chart of the scores when asked waits for, in plain words (wrapped to a live chart's width):
    ``given`` (a project's: items learned) after the model could rate items, and for a class's own line
    (``per_class``) some in the class and some out of it (``multi_label``: with it and without it).  Answers
    given before then have no score to check, however many classes they are in."""
    where = ""
    if per_class:
        where = ", with the class and without it" if multi_label else ", in the class and out of it"
    can = "a class has answers with and without it" if multi_label else "two classes have answers"
    return wrap_title(f"needs {given} after the model could rate items{where} (it can once {can})", LIVE_TITLE_CHARS)


def class_accuracy_figure(
    history: pd.DataFrame, *, waiting: str | None = None, xtitle: str = "labels", when: str = "when asked"
) -> Figure:
    """A K-class session's accuracy and macro AUC of the scores when asked, against the answers, vs labels
    (``ClassesRun.history``; a project's: ``xtitle`` items learned, ``when`` scored); ``waiting``: what the empty
    chart says it needs (``rated_waiting``)."""
    title = f"Accuracy and macro AUC of the scores {when} vs {xtitle}"
    if history.empty or history["accuracy"].isna().all():
        return _empty(title, waiting or rated_waiting(per_class=False))
    x = _values(history["labels"])
    data = [
        {
            "type": "scatter",
            "x": x,
            "y": _values(history["accuracy"]),
            "mode": "lines+markers",
            "marker": {"size": 4},
            "line": {"color": PALETTE[0]},
            "name": "accuracy",
        },
        {
            "type": "scatter",
            "x": x,
            "y": _values(history["macro_auc"]),
            "mode": "lines",
            "line": {"color": PALETTE[1], "dash": "dash"},
            "name": "macro AUC",
        },
    ]
    # the legend below the x-axis title, as on the per-class chart: above the plot it ran into a title of two lines
    layout = _layout(
        title,
        height=290,
        xtitle=xtitle,
        ytitle="share / AUC",
        xaxis=count_axis(x),
        yaxis={"range": [0, 1.02]},
        legend=BELOW_LEGEND,
    )
    layout["margin"]["b"] = 80
    return {"data": data, "layout": layout}


def class_counts_figure(counts: dict[str, int], title: str = "Answers per class", what: str = "answers") -> Figure:
    """How many answers each class of a K-class session has (the class names are the user's: escaped);
    ``title`` and ``what`` (the axis) for other counts per class, such as a project's items learned."""
    if not any(counts.values()):
        return _empty(title, "no answer yet")
    data = [
        {
            "type": "bar",
            "x": [plotly_text(name) for name in counts],
            "y": list(counts.values()),
            "marker": {"color": [PALETTE[k % len(PALETTE)] for k in range(len(counts))]},
            "showlegend": False,
        }
    ]
    layout = _layout(title, ytitle=what, yaxis={"rangemode": "tozero", **count_axis(list(counts.values()))})
    return {"data": data, "layout": layout}


#: a colour per class (up to 9 classes; ``PALETTE`` and one more) on the per-class AUC chart
CLASS_COLORS = (*PALETTE, "#d53f8c")
#: the macro AUC's line on the per-class AUC chart (a dark neutral no class uses)
MACRO_COLOR = "#1a202c"


def class_auc_figure(
    history: pd.DataFrame,
    classes: tuple[str, ...] | list[str],
    *,
    multi_label: bool = False,
    xtitle: str = "labels",
    when: str = "when asked",
    waiting: str | None = None,
) -> Figure:
    """How well the model ranks each class first (its AUC) of the scores when asked, against the answers, vs
    labels: a line per class (``history``'s ``auc_<k>``: ``app.services.classes.rated_history``; named with the
    class's name as written, escaped), a point only where the class has rated answers in it and out of it
    (before that: "not yet", no point), and the macro AUC dashed.  Values rounded to 3 places within [0, 1],
    shown to 2 in the hover with their meaning; ``multi_label``: a class against the items without it; ``xtitle``
    and ``when``: a project's items learned, scored just before it learned each."""
    from app.services.classes import auc_column

    title = f"How well the model ranks each class first (scores {when}) vs {xtitle}"
    columns = [auc_column(k) for k in range(len(classes))]
    if history.empty or not set(columns) <= set(history) or history[columns].isna().all().all():
        note = waiting or rated_waiting(per_class=True, multi_label=multi_label)
        return _empty(title, note, wrap=2 * LIVE_TITLE_CHARS)
    x = _values(history["labels"])
    than = "items without it" if multi_label else "items of other classes"
    data = []
    for k, (name, column) in enumerate(zip(classes, columns, strict=True)):
        y = [None if v is None else round(min(1.0, max(0.0, v)), 3) for v in _values(history[column])]
        shown = plotly_text(name)
        data.append(
            {
                "type": "scatter",
                "x": x,
                "y": y,
                "mode": "lines+markers",
                "marker": {"size": 4},
                "line": {"color": CLASS_COLORS[k % len(CLASS_COLORS)], "width": 1.5},
                "connectgaps": False,
                "name": shown if any(v is not None for v in y) else f"{shown} (not yet)",
                # the class's name comes from the trace's name: a name holding %{...} is not read as a template
                "hovertemplate": (
                    "how well the model ranks %{fullData.name} first (AUC): %{y:.2f}<br>"
                    f"its items rated above {than}: 0.5 chance, 1 always · after %{{x}} {xtitle}<extra></extra>"
                ),
            }
        )
    data.append(
        {
            "type": "scatter",
            "x": x,
            "y": [None if v is None else round(min(1.0, max(0.0, v)), 3) for v in _values(history["macro_auc"])],
            "mode": "lines",
            "line": {"color": MACRO_COLOR, "dash": "dash", "width": 2},
            "name": "average over the classes",
            "hovertemplate": (
                "average over the classes (macro AUC): %{y:.2f}<br>0.5 chance, 1 always · after "
                f"%{{x}} {xtitle}<extra></extra>"
            ),
        }
    )
    # the legend below the x-axis title, about two names a row on the half-page chart column; the plot keeps its
    # height (about 180 pixels) whatever the number of classes
    rows = -(-(len(classes) + 1) // 2)
    layout = _layout(
        title,
        height=310 + 20 * rows,
        xtitle=xtitle,
        ytitle="ranks it first (0.5 chance, 1 always)",
        xaxis=count_axis(x),
        yaxis={"range": [0, 1.02]},
        legend=BELOW_LEGEND,
        wrap=2 * LIVE_TITLE_CHARS,
    )
    layout["margin"]["b"] = 60 + 20 * rows
    return {"data": data, "layout": layout}

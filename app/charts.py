"""Plotly figures for the Label and Compare pages (no Streamlit here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f", "#c53030", "#319795", "#718096")
SMALL = dict(height=260, margin=dict(l=10, r=10, t=40, b=10))


def _empty(title: str, note: str, **layout) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=note, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(color="#718096"))
    fig.update_layout(title=dict(text=title, font=dict(size=13)), xaxis_visible=False, yaxis_visible=False,
                      **{**SMALL, **layout})
    return fig


def roc_figure(roc: tuple[np.ndarray, np.ndarray, float, str] | None, *, has_evaluation: bool) -> go.Figure:
    """The live ROC curve; ``roc`` is ``(fpr, tpr, auc, title)`` or None while one class is missing."""
    if roc is None:
        title = "ROC on the evaluation split" if has_evaluation else \
            "ROC from the scores the model gave each item when it was asked"
        return _empty(title, "needs a positive and a negative label")
    fpr, tpr, auc, title = roc
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#cbd5e0", dash="dot"),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines", line=dict(color=PALETTE[0], width=2, shape="hv"),
                             name=f"AUC {auc:.3f}", showlegend=True))
    fig.update_layout(title=dict(text=title, font=dict(size=13)), xaxis_title="false positive rate",
                      yaxis_title="true positive rate", legend=dict(x=0.55, y=0.08), **SMALL)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    return fig


def _by_labels(history: pd.DataFrame) -> pd.DataFrame:
    """One row per number of labels (the last one: skips do not add a label)."""
    if history is None or len(history) == 0 or "n_labels" not in history:
        return pd.DataFrame()
    return history.groupby("n_labels", as_index=False).last()


def auc_figure(history: pd.DataFrame, *, has_evaluation: bool) -> go.Figure:
    title = "AUC on the evaluation split vs labels" if has_evaluation else \
        "AUC of the scores when asked vs labels"
    frame = _by_labels(history)
    if frame.empty or "auc" not in frame or frame["auc"].isna().all():
        return _empty(title, "needs a positive and a negative label")
    fig = go.Figure(go.Scatter(x=frame["n_labels"], y=frame["auc"], mode="lines+markers",
                               marker=dict(size=4), line=dict(color=PALETTE[0]), name="AUC"))
    fig.update_layout(title=dict(text=title, font=dict(size=13)), xaxis_title="labels", yaxis_title="AUC",
                      **SMALL)
    return fig


def support_vector_figure(history: pd.DataFrame) -> go.Figure:
    title = "Support vectors vs labels"
    frame = _by_labels(history)
    if frame.empty or "n_sv" not in frame:
        return _empty(title, "no label yet")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=frame["n_labels"], y=frame["n_sv"], mode="lines", name="total",
                             line=dict(color=PALETTE[0])))
    if "n_bound" in frame:
        fig.add_trace(go.Scatter(x=frame["n_labels"], y=frame["n_bound"], mode="lines", name="at the bound C",
                                 line=dict(color=PALETTE[1], dash="dash")))
    fig.update_layout(title=dict(text=title, font=dict(size=13)), xaxis_title="labels",
                      yaxis_title="support vectors", legend=dict(orientation="h", y=-0.3), **SMALL)
    return fig


def margin_figure(history: pd.DataFrame) -> go.Figure:
    title = "Unlabelled items inside the margin (|f| < 1)"
    frame = _by_labels(history)
    if frame.empty or "n_in_margin" not in frame:
        return _empty(title, "no label yet")
    fig = go.Figure(go.Scatter(x=frame["n_labels"], y=frame["n_in_margin"], mode="lines",
                               line=dict(color=PALETTE[2]), fill="tozeroy", name="inside the margin"))
    fig.update_layout(title=dict(text=title, font=dict(size=13)), xaxis_title="labels", yaxis_title="items",
                      **SMALL)
    return fig


# --------------------------------------------------------------------------- comparisons


def _hex_to_rgba(color: str, alpha: float) -> str:
    color = color.lstrip("#")
    r, g, b = (int(color[k:k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _series_name(rows: pd.DataFrame) -> pd.Series:
    if "solver" in rows and rows.groupby("strategy")["solver"].nunique().max() > 1:
        return rows["strategy"] + " / " + rows["solver"]
    return rows["strategy"]


def curve_bands(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean and standard deviation of ``metric`` over seeds at each label count, per series."""
    data = rows.assign(series=_series_name(rows))
    grouped = data.groupby(["series", "n_labels"])[metric]
    out = grouped.agg(["mean", "std", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out


def learning_curve_figure(rows: pd.DataFrame, metric: str = "auc", *, title: str | None = None,
                          overlay: pd.DataFrame | None = None, overlay_metric: str | None = None) -> go.Figure:
    """Mean ± std bands over seeds for each heuristic; stored sessions overlaid as dashed lines."""
    title = title or f"{metric} vs labels (mean ± std over seeds)"
    fig = go.Figure()
    if rows is None or len(rows) == 0 or metric not in rows:
        return _empty(title, "no results", height=380)
    bands = curve_bands(rows.dropna(subset=[metric]), metric)
    for k, (series, part) in enumerate(bands.groupby("series", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        x = part["n_labels"].to_numpy()
        upper = (part["mean"] + part["std"]).to_numpy()
        lower = (part["mean"] - part["std"]).to_numpy()
        fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([upper, lower[::-1]]),
                                 fill="toself", fillcolor=_hex_to_rgba(color, 0.15), line=dict(width=0),
                                 hoverinfo="skip", showlegend=False, legendgroup=series))
        fig.add_trace(go.Scatter(x=x, y=part["mean"], mode="lines", line=dict(color=color, width=2),
                                 name=str(series), legendgroup=series))
    overlay_metric = overlay_metric or metric
    if overlay is not None and len(overlay) and overlay_metric in overlay:
        for k, (name, part) in enumerate(overlay.groupby("session", sort=True)):
            part = part.dropna(subset=[overlay_metric])
            if part.empty:
                continue
            fig.add_trace(go.Scatter(x=part["n_labels"], y=part[overlay_metric], mode="lines",
                                     line=dict(color=PALETTE[(k + 4) % len(PALETTE)], dash="dash", width=1.5),
                                     name=str(name)))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), xaxis_title="labels", yaxis_title=metric,
                      height=380, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


def latency_figure(rows: pd.DataFrame) -> go.Figure:
    """Median and 95th percentile of update and query milliseconds per heuristic."""
    title = "Latency per label (median and 95th percentile, ms)"
    if rows is None or len(rows) == 0 or "update_ms" not in rows:
        return _empty(title, "no results", height=340)
    data = rows.assign(series=_series_name(rows))
    fig = go.Figure()
    for k, (column, label) in enumerate((("update_ms", "update"), ("query_ms", "query"))):
        if column not in data:
            continue
        stats = data.groupby("series")[column].quantile([0.5, 0.95]).unstack()
        fig.add_trace(go.Bar(x=stats.index.astype(str), y=stats[0.5], name=f"{label} median",
                             marker_color=PALETTE[k]))
        fig.add_trace(go.Bar(x=stats.index.astype(str), y=stats[0.95], name=f"{label} p95",
                             marker_color=_hex_to_rgba(PALETTE[k], 0.45)))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), barmode="group", yaxis_title="ms",
                      height=340, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.3))
    return fig

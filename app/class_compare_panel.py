"""The Compare page's comparisons with several classes (``app.services.class_comparisons``).

``form`` is the "Several classes" choice: a dataset whose label column kept its 3 to 9 values as classes (or a
yes / no one, as its two classes), one class per item or, when the column's cells hold sets (class names
separated by ``;``), several; the heuristics for named classes, the model, seeds and budget; Run shows the
progress with Cancel, stores the comparison and makes it the one shown.  ``show`` draws a stored one: which kind
it was, the accuracy and macro AUC curves with their bands, the summary (labels to reach each accuracy level) and,
for several classes per item, the figures per class.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from app import auth, charts
from app.services import SOLVERS, ServiceError
from app.services.class_comparisons import (
    CLASS_SOLVER,
    KIND_WORDS,
    MULTICLASS_STRATEGIES,
    MULTILABEL_STRATEGIES,
    ONE_CLASS,
    SEPARATOR,
    SEVERAL_CLASSES,
    TARGET_STRATEGY,
    class_kind,
    class_summary_table,
    per_class_table,
    rows_csv,
    strategy_words,
)
from app.services.comparisons import COMPARE_MAX_BUDGET, COMPARE_MAX_SEEDS, with_decimals
from app.services.vocabulary import solver_words
from app.ui.text import plain, visible


def _datasets(svc) -> list:
    """The datasets with classes to compare on: a label column kept as classes, or yes / no true labels."""
    return [d for d in svc.datasets() if d.meta.get("class_names") or d.has_true_labels]


def offered(svc) -> bool:
    """Whether some dataset has a label column kept as classes (the Compare page then offers this first)."""
    return any(d.meta.get("class_names") for d in svc.datasets())


def _classes_of(dataset) -> list[str]:
    names = dataset.meta.get("class_names")
    if names:
        return [str(n) for n in names]
    classes = dataset.meta.get("classes") or {}
    return [str(classes.get("negative", "negative")), str(classes.get("positive", "positive"))]


def form(svc) -> None:
    """The settings of a comparison with several classes, and its run (progress, Cancel)."""
    datasets = _datasets(svc)
    if not datasets:
        st.info("No dataset with a label column yet: add one on the Data page (keep every value as a class).")
        return
    by_id = {d.id: d for d in datasets}
    names = {d.id: visible(f"{d.name} ({d.n_items:,} items, {len(_classes_of(d))} classes)") for d in datasets}
    with st.container(border=True, key="class_compare_settings"):
        dataset_id = st.selectbox("Dataset", list(names), format_func=names.get, key="class_compare_dataset")
        classes = _classes_of(by_id[dataset_id])
        st.caption(plain("Classes: " + ", ".join(classes)))
        several = False
        if any(SEPARATOR in c for c in classes):  # (cells that hold sets of classes)
            several = (
                st.radio(
                    "Each item has",
                    [ONE_CLASS, SEVERAL_CLASSES],
                    key="class_compare_kind",
                    horizontal=True,
                    format_func=KIND_WORDS.get,
                    help=f"Several classes per item: each cell's class names separated by '{SEPARATOR}' are "
                    "the item's classes (any of them, or none).",
                )
                == SEVERAL_CLASSES
            )
        known = MULTILABEL_STRATEGIES if several else MULTICLASS_STRATEGIES
        strategies = st.multiselect(
            "Heuristics",
            list(known),
            default=list(known),
            format_func=lambda name: strategy_words(name, "<class>"),
            key=f"class_compare_strategies_{'several' if several else 'one'}",
        )
        target = None
        if not several and TARGET_STRATEGY in strategies:
            target = st.selectbox(
                "Class to find first (Most likely <class>)", classes, key="class_compare_target", format_func=visible
            )
        solver = st.selectbox(
            "Model",
            [CLASS_SOLVER, *(s for s in SOLVERS if s != CLASS_SOLVER)],
            key="class_compare_solver",
            format_func=lambda s: f"{solver_words(s)} (every heuristic)",
            help="One model per class, each that class against the rest; every heuristic runs on the model "
            "chosen here.",
        )
        cols = st.columns(4)
        budget = cols[0].number_input(
            "Label budget", min_value=4, max_value=COMPARE_MAX_BUDGET, value=60, step=10, key="class_compare_budget"
        )
        seeds = cols[1].number_input(
            "Seeds", min_value=1, max_value=COMPARE_MAX_SEEDS, value=3, step=1, key="class_compare_seeds"
        )
        initial = cols[2].number_input(
            "Initial labels",
            min_value=0,
            value=10,
            step=1,
            key="class_compare_initial",
            help="Chosen at random before the heuristic takes over.",
        )
        test_fraction = cols[3].number_input(
            "Evaluation share", min_value=0.1, max_value=0.9, value=0.3, step=0.05, key="class_compare_test_fraction"
        )
        run_clicked = st.button("Run the comparison", type="primary", key="class_compare_run")
    if st.session_state.get("class_compare_cancel"):  # (the click's rerun: the run it interrupted has stopped)
        st.info("Comparison cancelled: it stopped at once and nothing was stored.")
    if run_clicked:
        _run(
            svc,
            dataset_id,
            strategies=strategies,
            solver=solver,
            budget=int(budget),
            seeds=int(seeds),
            initial=int(initial),
            test_fraction=float(test_fraction),
            multi_label=several,
            target=target,
        )


def _run(svc, dataset_id: int, **settings: Any) -> None:
    """Run it with a progress bar and Cancel (which stops it at its next progress update: nothing is stored)."""
    bar = st.progress(0.0, text="starting…")
    cancel_slot = st.empty()
    cancel_slot.button("Cancel", key="class_compare_cancel", help="Stop this comparison; nothing of it is stored.")

    def _progress(fraction: float, text: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=plain(text))

    try:
        st.session_state.comparison_id = st.session_state.comparison_picker = svc.run_class_comparison(
            dataset_id, progress=_progress, by=auth.identity(), **settings
        )
        bar.progress(1.0, text="done")
    except ServiceError as error:
        bar.empty()
        st.error(plain(error))
    finally:
        cancel_slot.empty()


#: characters a title line at most on a half-page chart (at 1400 pixels)
HALF_PAGE_TITLE = 60


def describe(comparison, n_seeds: str) -> str:
    """A stored comparison's line in the picker, saying its kind."""
    config = comparison.config
    heuristics = ", ".join(strategy_words(s, config.get("target")) for s in config.get("strategies", []))
    return (
        f"#{comparison.id} · {config.get('dataset', '?')} · {len(config.get('classes', []))} classes, "
        f"{KIND_WORDS[class_kind(comparison) or ONE_CLASS]} · {heuristics} · budget {config.get('budget')} × "
        f"{n_seeds} · {comparison.created_at:%Y-%m-%d %H:%M}"
    )


def show(result, chosen: int) -> None:
    """A stored comparison with several classes: its kind, curves, summary and (several per item) per class."""
    config = result.config
    kind = class_kind(result) or ONE_CLASS
    target = config.get("target")

    def words(name: str) -> str:
        return strategy_words(name, target)

    separated = (
        f", the class names of a cell separated by '{config.get('separator')}'" if kind == SEVERAL_CLASSES else ""
    )
    st.info(
        plain(
            f"Comparison with several classes: {KIND_WORDS[kind]} ({len(config.get('classes', []))} classes: "
            f"{', '.join(config.get('classes', []))}{separated}), on {config.get('dataset', '?')}; model "
            f"{solver_words(config.get('solver'))}."
        )
    )
    rows = result.rows.assign(strategy=[words(s) for s in result.rows["strategy"]])
    left, right = st.columns(2)
    # half-page charts: short titles in words, wrapped (a title runs off a narrow chart and is cut)
    left.plotly_chart(
        charts.learning_curve_figure(
            rows, "accuracy", title="Share of held-out items right (accuracy) vs labels", wrap=HALF_PAGE_TITLE
        ),
        key="class_curve_accuracy",
    )
    right.plotly_chart(
        charts.learning_curve_figure(
            rows, "macro_auc", title="Ranking of held-out items per class (macro AUC) vs labels", wrap=HALF_PAGE_TITLE
        ),
        key="class_curve_macro_auc",
    )
    with st.expander("Advanced: timings"):
        st.plotly_chart(charts.latency_figure(rows), key="class_latency")
    st.subheader("Summary")
    st.dataframe(class_summary_table(result, words), hide_index=True, width="stretch", key="class_summary_table")
    st.caption(
        "Accuracy: "
        + (
            "the share of item-class yes / no the model gets right"
            if kind == SEVERAL_CLASSES
            else "the share of held-out items whose most likely class is their class"
        )
        + "; macro AUC: each class against the rest, averaged over the classes; both at the last label, mean ± "
        "spread over the seeds. Labels to an accuracy: until it was first reached, mean over the seeds that got "
        "there (how many did)."
    )
    per_class = per_class_table(result, words)
    if not per_class.empty:
        st.subheader("Per class at the last label")
        shown = with_decimals(per_class, {"precision": 3, "recall": 3, "F1": 3, "AUC": 3})
        st.dataframe(shown, hide_index=True, width="stretch", key="class_per_class_table")
        st.caption("Mean over the seeds; a class is said yes when its score is above 0.")
    st.download_button(
        "Download the tidy rows (CSV)",
        lambda: rows_csv(result),
        file_name=f"comparison-{chosen}.csv",
        mime="text/csv",
        key="download_class_rows",
        on_click="ignore",
    )
    with st.expander("Configuration"):
        st.json(config)

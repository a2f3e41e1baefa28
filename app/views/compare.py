"""Compare: heuristics side by side on a dataset with true labels (the labels play the oracle)."""

import streamlit as st

from app import auth, charts, class_compare_panel, replay_panel
from app.services import (
    BASELINE,
    COMPARE_STRATEGIES,
    DEFAULT_SOLVER,
    DEFAULT_STRATEGY,
    ORACLE_STRATEGIES,
    SOLVERS,
    ServiceError,
)
from app.services.class_comparisons import class_kind
from app.services.comparisons import COMPARE_MAX_BUDGET, COMPARE_MAX_SEEDS, with_decimals
from app.services.formatting import count
from app.services.replay import is_replay, replay_heuristic_words
from app.services.stopping import RULE_CHOICES, RULE_OPTIONS
from app.services.vocabulary import heuristic_words, rule_words, solver_words
from app.ui.forms import comparison_problem
from app.ui.state import service
from app.ui.tables import SUMMARY_FOR_ENGINEERS, SUMMARY_NOTE, runs_without_the_heuristic, summary_parts, summary_table
from app.ui.text import plain, visible

svc = service()
st.title("Compare heuristics")

#: the Solver box's choice of each heuristic's own default solver (which compares the solvers too)
EACH_OWN = "each heuristic's own"
EACH_OWN_WORDS = "each heuristic's own model (compares the models too)"

labelled = [d for d in svc.datasets() if d.has_true_labels]
HEURISTICS = "Heuristics on a dataset with true labels"
REPLAY = "Replay a session"
SEVERAL = "Several classes on a dataset with a label column"


def mode_of(comparison) -> str:
    """The mode whose form makes a stored comparison of ``comparison``'s kind."""
    return SEVERAL if class_kind(comparison) else REPLAY if is_replay(comparison) else HEURISTICS


def shown_comparison(stored: list):
    """The stored comparison the page shows below (the picker's, else the one last run, else the newest)."""
    by_id = {c.id: c for c in stored}
    for key in ("comparison_picker", "comparison_id"):
        if st.session_state.get(key) in by_id:
            return by_id[st.session_state[key]]
    return stored[0] if stored else None


def follow_the_comparison_shown() -> None:
    """The picker's change: the mode above becomes the one of the comparison now shown."""
    chosen = shown_comparison(svc.comparisons())
    if chosen is not None:
        st.session_state.compare_mode = mode_of(chosen)


if "compare_mode" not in st.session_state:  # (a new visit: the mode of the result shown below, else the first open)
    shown = shown_comparison(svc.comparisons())
    st.session_state.compare_mode = (
        mode_of(shown)
        if shown is not None
        else HEURISTICS
        if labelled
        else (SEVERAL if class_compare_panel.offered(svc) else REPLAY)
    )
mode = st.radio(
    "What to compare",
    [HEURISTICS, SEVERAL, REPLAY],
    horizontal=True,
    key="compare_mode",
    help="Several classes: a label column with 3 to 9 values (or a yes / no one as its two classes), "
    "each value a class, as the oracle. A replay runs the heuristics on the items a session labelled, its "
    "answers the oracle: no true labels needed.",
)
if mode == REPLAY:
    replay_panel.form(svc)
elif mode == SEVERAL:
    class_compare_panel.form(svc)
else:
    if not labelled:
        st.info("No dataset with true labels yet: add one on the Data page.")
        st.stop()
    names = {d.id: visible(f"{d.name} ({d.n_items:,} items)") for d in labelled}

    # Plain widgets, not a form: Enter in a field only takes the value; only the button starts a run.
    with st.container(border=True, key="compare_settings"):
        dataset_id = st.selectbox("Dataset", list(names), format_func=names.get, key="compare_dataset")
        strategies = st.multiselect(
            "Heuristics",
            list(COMPARE_STRATEGIES),
            default=[DEFAULT_STRATEGY, BASELINE],
            format_func=heuristic_words,
            help=" ".join(
                f'"{heuristic_words(name)}" peeks at the true labels: a simulation-only yardstick.'
                for name in ORACLE_STRATEGIES
            )
            or None,
            key="compare_strategies",
        )
        # the same solver for every heuristic unless asked otherwise: a comparison of heuristics, not of solvers
        same = DEFAULT_SOLVER[DEFAULT_STRATEGY]
        solver = st.selectbox(
            "Model",
            [same, *(s for s in SOLVERS if s != same), EACH_OWN],
            key="compare_solver",
            format_func=lambda s: EACH_OWN_WORDS if s == EACH_OWN else f"{solver_words(s)} (every heuristic)",
            help="Every heuristic runs on the model chosen here, so that the comparison is of the "
            "heuristics alone. Each heuristic's own: "
            + ", ".join(f"{heuristic_words(k)} → {solver_words(v)}" for k, v in DEFAULT_SOLVER.items())
            + " (this compares the models too).",
        )
        model = st.radio(
            "Standard or review model",
            ["standard", "review"],
            key="compare_model",
            horizontal=True,
            format_func={
                "standard": "Standard model (the one chosen above)",
                "review": "Review model: finds rare positives",
            }.get,
            help="The review model (as in New session on the Label page): a linear SVM whose "
            "class weights follow the labels, on the ramp solver; it sets its own solver and C.",
        )
        cols = st.columns(4)
        budget = cols[0].number_input(
            "Label budget",
            min_value=4,
            max_value=COMPARE_MAX_BUDGET,
            value=60,
            step=10,
            help="Counts every label, the initial ones included.",
            key="compare_budget",
        )
        seeds = cols[1].number_input(
            "Seeds", min_value=1, max_value=COMPARE_MAX_SEEDS, value=3, step=1, key="compare_seeds"
        )
        initial = cols[2].number_input(
            "Initial labels",
            min_value=0,
            value=10,
            step=1,
            key="compare_initial",
            help="Chosen at random (cold start) before the heuristic takes over.",
        )
        test_fraction = cols[3].number_input(
            "Evaluation share", min_value=0.1, max_value=0.9, value=0.3, step=0.05, key="compare_test_fraction"
        )
        stopping = st.multiselect(
            "Stopping rules",
            RULE_OPTIONS,
            default=list(RULE_CHOICES),
            key="compare_stopping",
            format_func=rule_words,
            help="Run beside each heuristic; a recall check targets 95% recall at 95% "
            "confidence (its random draws count as labels).",
        )
        run_clicked = st.button("Run the comparison", type="primary", key="compare_run")
        scheduler = svc.comparison_scheduler()
        if scheduler:  # (set by whoever runs the server: MARGINLAB_DASK_SCHEDULER)
            st.caption(
                plain(
                    "Runs on a Dask cluster started for each comparison on this server"
                    if scheduler == "local"
                    else f"Runs on Dask scheduler {scheduler}"
                )
            )

    problem = comparison_problem(int(budget), int(initial)) if run_clicked else None
    if st.session_state.get("compare_cancel"):  # (the click's rerun: the run it interrupted has stopped)
        st.info("Comparison cancelled: it stopped at once and nothing was stored.")
    if problem:
        st.error(problem)
    elif run_clicked:
        bar = st.progress(0.0, text="starting…")
        # Clicking Cancel (or closing the tab) stops the run at its next progress update, a fraction of a second later
        cancel_slot = st.empty()  # (emptied when the run ends: nothing is left to cancel)
        cancel_slot.button("Cancel", key="compare_cancel", help="Stop this comparison; nothing of it is stored.")

        def _progress(fraction: float, text: str) -> None:
            bar.progress(min(max(float(fraction), 0.0), 1.0), text=plain(text))

        try:
            st.session_state.comparison_id = st.session_state.comparison_picker = svc.run_comparison(
                dataset_id,
                strategies=strategies,
                solver=None if solver == EACH_OWN or model == "review" else solver,  # (review: its own solver)
                budget=int(budget),
                seeds=int(seeds),
                initial=int(initial),
                test_fraction=float(test_fraction),
                progress=_progress,
                stopping=stopping,
                model=model,
                by=auth.identity(),
            )
            bar.progress(1.0, text="done")
            cancel_slot.empty()
        except ServiceError as error:
            bar.empty()
            cancel_slot.empty()
            st.error(plain(error))

stored = svc.comparisons()
if not stored:
    st.info("No comparison stored yet.")
    st.stop()


def _describe(c) -> str:
    """A stored comparison's line in the picker: its heuristics in words, "1 seed" / "3 seeds"."""
    seeds = c.config.get("seeds")
    n_seeds = count(len(seeds) if isinstance(seeds, list) else int(seeds or 0), "seed")
    heuristics = ", ".join(heuristic_words(s) for s in c.config.get("strategies", []))
    if class_kind(c):
        return class_compare_panel.describe(c, n_seeds)
    if is_replay(c):
        heuristics = ", ".join(replay_heuristic_words(c, s) for s in c.config.get("strategies", []))
        return (
            f"#{c.id} · replay of {c.config['replay']['source']} · {c.config.get('dataset', '?')} · "
            f"{heuristics} × {n_seeds} · {c.created_at:%Y-%m-%d %H:%M}"
        )
    return (
        f"#{c.id} · {c.config.get('dataset', '?')} · {heuristics} · "
        f"budget {c.config.get('budget')} × {n_seeds} · {c.created_at:%Y-%m-%d %H:%M}"
    )


labels = {c.id: _describe(c) for c in stored}
# the picker's own state says which comparison is shown (a run above has just set it to the new one)
if st.session_state.get("comparison_picker") not in labels:
    st.session_state.comparison_picker = (
        st.session_state.comparison_id if st.session_state.comparison_id in labels else next(iter(labels))
    )
chosen = st.selectbox(
    "Stored comparisons",
    list(labels),
    format_func=labels.get,
    key="comparison_picker",
    on_change=follow_the_comparison_shown,
)
st.session_state.comparison_id = chosen
result = svc.comparison(chosen)
if is_replay(result):
    replay_panel.show(result, chosen)
    st.stop()
if class_kind(result):
    class_compare_panel.show(result, chosen)
    st.stop()
rows = result.rows

overlay = None
if result.dataset_id is not None and st.toggle(
    "Overlay the labelling sessions on this dataset",
    value=False,
    key="compare_overlay",
    help="Dotted lines with markers, on the comparison's label axis.",
):
    overlay = svc.session_curves(result.dataset_id)
    if overlay.empty:
        st.caption("No labelling session with an evaluation curve on this dataset yet.")
    else:
        st.caption("Sessions use their own held-out split, so their curves are indicative next to the bands.")

left, right = st.columns(2)
left.plotly_chart(
    charts.learning_curve_figure(
        rows, "auc", title="How well held-out items are ranked (AUC, 1 = perfect) vs labels", overlay=overlay
    ),
    key="curve_auc",
)
if "recall" in rows:
    right.plotly_chart(
        charts.learning_curve_figure(rows, "recall", title="Share of the positives found vs labels"), key="curve_recall"
    )
with st.expander("Advanced: support vectors and timings"):
    st.plotly_chart(
        charts.learning_curve_figure(
            rows, "n_sv", title="Support vectors vs labels", overlay=overlay, overlay_metric="n_sv"
        ),
        key="curve_sv",
    )
    st.plotly_chart(charts.latency_figure(rows), key="latency")

st.subheader("Summary")
summary, more, same_model = summary_parts(summary_table(svc.summary_frame(result)))
st.dataframe(summary, hide_index=True, width="stretch", key="summary_table")
st.caption(SUMMARY_NOTE + (f"  \n{same_model}" if same_model else ""))
if len(more.columns) > 1:
    with st.expander(
        "Advanced: more columns (learning speed on a log scale, AUCs, support vectors, timings, code names)"
    ):
        st.dataframe(more, hide_index=True, width="stretch", key="summary_more")
        st.caption(SUMMARY_FOR_ENGINEERS)
reference = svc.reference_note(result)
if reference:
    st.info(plain(reference))
idle = runs_without_the_heuristic(rows)
if idle:
    st.warning(plain(idle))
stops = svc.stop_summary_frame(result)
if not stops.empty:
    st.subheader("Stopping rules")
    stops = with_decimals(
        stops, {"labels at stop": 1, "recall at stop": 3, "lowest recall at stop": 3, "work saved": 3}
    )
    st.dataframe(stops, hide_index=True, width="stretch", key="stop_summary_table")
    st.caption(
        "Per rule and heuristic: seeds where the rule stopped within the budget, mean labels and recall "
        "there (a recall check's random draws are labels), and the work saved against labelling "
        "every training item."
    )
# written when the button is pressed (as every download: app.server_guard serves it to this browser only, briefly)
st.download_button(
    "Download the tidy rows (CSV)",
    lambda: rows.to_csv(index=False).encode(),
    file_name=f"comparison-{chosen}.csv",
    mime="text/csv",
    key="download_rows",
    on_click="ignore",
)
with st.expander("Configuration"):
    st.json(result.config)

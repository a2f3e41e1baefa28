"""The Compare page's replay: a stored session replayed under other heuristics (``app.services.replay``).

``form`` is the "Replay a session" choice (which session, which heuristics, seeds); ``show`` draws a stored
replay: the recall curves with their bands, the latency, the table against the reference, and the caveat
of what a replay can tell.  A session with named classes is replayed with the heuristics for named classes
and drawn as accuracy and macro AUC on a held-out part of its labelled items; a multi-label one (several
classes per item) with the multi-label heuristics, drawn the same way (accuracy: the share of item-class
answers right) with a per-class table.
"""

from __future__ import annotations

import streamlit as st

from app import auth, charts
from app.services import BASELINE, DEFAULT_STRATEGY, LABEL_STRATEGIES, ServiceError
from app.services.common import SOLVERS
from app.services.comparisons import COMPARE_MAX_SEEDS
from app.services.replay import (
    CLASS_HELD_OUT,
    Replays,
    class_replay_rows,
    class_replay_summary,
    is_class_replay,
    is_multi_label_replay,
    multi_label_replay_per_class,
    replay_lines,
    replay_rows_csv,
    replay_summary,
)
from app.services.vocabulary import solver_words
from app.ui.text import plain, visible


def form(svc) -> None:
    """Choose a session and heuristics; Replay runs it, stores it and makes it the comparison shown."""
    replays = Replays(svc)
    names = {key: visible(text) for key, text in replays.replayable(auth.identity()).items()}
    if not names:
        st.info("No session with answers yet: label on the Label page, then replay the session here.")
        return
    with st.container(border=True, key="replay_settings"):
        source = st.selectbox(
            "Session or team project",
            list(names),
            format_func=names.get,
            key="replay_session",
            help="A team project replays its settled answers, else each item's first answer (with named "
            "classes: the class settled on, else the first class answered).",
        )
        heuristics = replays.heuristics(source)
        sets = replays.takes_sets(source)  # (a multi-label session or project: its own heuristics)
        if sets:
            strategies = st.multiselect(
                "Heuristics (several classes per item)",
                list(heuristics),
                default=[BASELINE] if BASELINE in heuristics else [],
                format_func=lambda name: visible(heuristics[name]),
                key="replay_set_strategies",
                help="The session's (or project's) own heuristic runs too, with its model: the reference "
                "the others are measured against. Each run learns from part of the labelled items and is "
                "scored on the rest (30 %).",
            )
        elif set(heuristics) <= set(LABEL_STRATEGIES):
            strategies = st.multiselect(
                "Heuristics",
                list(LABEL_STRATEGIES),
                default=[s for s in (DEFAULT_STRATEGY, BASELINE) if s in LABEL_STRATEGIES],
                key="replay_strategies",
                help="The session's own heuristic runs too, with the session's model: the "
                "reference the others are measured against.",
            )
        else:  # named classes (a session or project): their heuristics (the choice is kept apart)
            strategies = st.multiselect(
                "Heuristics (named classes)",
                list(heuristics),
                default=[BASELINE] if BASELINE in heuristics else [],  # (random: the same name for named classes)
                format_func=lambda name: visible(heuristics[name]),
                key="replay_class_strategies",
                help="The session's (or project's) own heuristic runs too, with its model: the reference "
                "the others are measured against. Each run learns from part of the labelled items and is "
                "scored on the rest (30 %).",
            )
        many, one = ("sets of classes", "set") if sets else ("classes", "class")  # (what an item's answer is)
        cols = st.columns(2)
        seeds = cols[0].number_input(
            "Seeds", min_value=1, max_value=COMPARE_MAX_SEEDS, value=3, step=1, key="replay_seeds"
        )
        initial = cols[1].number_input(
            "Initial labels",
            min_value=0,
            value=10,
            step=1,
            key="replay_initial",
            help="Chosen at random before each heuristic takes over.",
        )
        st.caption(
            "The pool is the items the session labelled (skips left out), the oracle its answers as they "
            "stand (corrections applied); every run labels them all."
            if set(heuristics) <= set(LABEL_STRATEGIES) and not sets
            else f"The pool is the items labelled (skips left out), the oracle their {many} as they stand "
            f"(corrections applied; in a team project the {one} settled on, else the first {one} answered); "
            f"every run learns from {100 - 100 * CLASS_HELD_OUT:.0f} % of "
            f"them, chosen by the heuristic, and is scored on the other {100 * CLASS_HELD_OUT:.0f} % ("
            + ("a set given once is always learned from)." if sets else "every class needs two labelled items).")
        )
        solver, C = (None, None) if set(heuristics) <= set(LABEL_STRATEGIES) and not sets else _model(replays, source)
        clicked = st.button("Replay the session", type="primary", key="replay_run")
    if st.session_state.get("replay_cancel"):  # (the click's rerun: the replay it interrupted has stopped)
        st.info("Replay cancelled: it stopped at once and nothing was stored.")
    if not clicked:
        return
    bar = st.progress(0.0, text="starting…")
    cancel_slot = st.empty()  # (emptied when the replay ends)
    cancel_slot.button("Cancel", key="replay_cancel", help="Stop this replay; nothing of it is stored.")
    try:
        st.session_state.comparison_id = st.session_state.comparison_picker = replays.run_replay(
            source,
            strategies=strategies,
            seeds=int(seeds),
            initial=int(initial),
            progress=lambda f, text: bar.progress(min(max(float(f), 0.0), 1.0), text=plain(text)),
            by=auth.identity(),
            solver=solver,
            C=C,
        )
        bar.progress(1.0, text="done")
    except ServiceError as error:
        bar.empty()
        st.error(plain(error))
    cancel_slot.empty()


def _model(replays: Replays, source: str) -> tuple[str | None, float | None]:
    """Under "Advanced": the model every run of a replay with named classes uses, the session's (or project's)
    own by default; (solver, C) when another is chosen, else None for each (the keys name ``source``, so
    another session starts from its own model)."""
    own, own_C = replays.model(source)
    options = list(SOLVERS) + ([own] if own not in SOLVERS else [])
    with st.expander("Advanced: the model"):
        solver = st.selectbox(
            "Model",
            options,
            index=options.index(own),
            format_func=lambda name: visible(f"{solver_words(name)} ({name})" + (" · its own" if name == own else "")),
            key=f"replay_solver_{source}",
            help="Every run, the reference's too, learns with this model (one per class); its own by default.",
        )
        C = st.number_input(
            "C: how closely the model follows each answer",
            min_value=1e-4,
            value=own_C,
            format="%g",
            key=f"replay_C_{source}",
        )
    return (None if solver == own else solver), (None if float(C) == own_C else float(C))


def show(result, chosen: int) -> None:
    """A stored replay: its caveat first, then the curves and the table.  A session with named classes:
    accuracy and macro AUC against labels (mean with bands over the seeds) in place of recall."""
    said, reference, caveat = replay_lines(result)
    st.caption(plain(said))
    st.warning(plain(caveat))
    classes = is_class_replay(result)
    sets = is_multi_label_replay(result)
    if classes:
        rows = class_replay_rows(result)
        left, right = st.columns(2)
        title = "Share of item-class answers right vs labels" if sets else None
        left.plotly_chart(charts.learning_curve_figure(rows, "accuracy", title=title), key="replay_accuracy")
        right.plotly_chart(charts.learning_curve_figure(rows, "macro_auc"), key="replay_macro_auc")
    else:
        rows = result.rows
        st.plotly_chart(
            charts.learning_curve_figure(rows, "recall", title="Share of the positives found vs labels"),
            key="replay_recall",
        )
    st.plotly_chart(charts.latency_figure(rows), key="replay_latency")
    st.subheader("Summary")
    table = class_replay_summary(result) if classes else replay_summary(result)
    st.dataframe(table, hide_index=True, width="stretch", key="replay_summary_table")
    st.caption(plain(reference))
    if sets:
        st.caption(
            "Per class at the last label, on the held-out part (mean over the seeds; a class said yes: score above 0)."
        )
        st.dataframe(multi_label_replay_per_class(result), hide_index=True, width="stretch", key="replay_per_class")
    st.download_button(
        "Download the tidy rows (CSV)",
        lambda: replay_rows_csv(result),
        file_name=f"replay-{chosen}.csv",
        mime="text/csv",
        key="download_rows",
        on_click="ignore",
    )
    _configuration(result)


def _configuration(result) -> None:
    """The replay's settings (without the list of replayed rows), under an expander."""
    with st.expander("Configuration"):
        st.json(
            {k: v for k, v in result.config.items() if k != "replay"}
            | {"replay": {k: v for k, v in result.config["replay"].items() if k != "rows"}}
        )

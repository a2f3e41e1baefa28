"""The Compare page's replay: a stored session replayed under other heuristics (``app.services.replay``).

``form`` is the "Replay a session" choice (which session, which heuristics, seeds); ``show`` draws a stored
replay: the recall curves with their bands, the latency, the table against the reference, and the caveat
of what a replay can tell.
"""

from __future__ import annotations

import streamlit as st

from app import auth, charts
from app.services import DEFAULT_STRATEGY, LABEL_STRATEGIES, ServiceError
from app.services.comparisons import COMPARE_MAX_SEEDS
from app.services.replay import Replays, replay_lines, replay_summary
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
            help="A team project replays its settled answers, else each item's first answer.",
        )
        strategies = st.multiselect(
            "Heuristics",
            list(LABEL_STRATEGIES),
            default=[s for s in (DEFAULT_STRATEGY, "random") if s in LABEL_STRATEGIES],
            key="replay_strategies",
            help="The session's own heuristic runs too, with the session's model: the "
            "reference the others are measured against.",
        )
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
        )
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
        )
        bar.progress(1.0, text="done")
    except ServiceError as error:
        bar.empty()
        st.error(plain(error))
    cancel_slot.empty()


def show(result, chosen: int) -> None:
    """A stored replay: its caveat first, then the curves and the table."""
    said, reference, caveat = replay_lines(result)
    st.caption(plain(said))
    st.warning(plain(caveat))
    rows = result.rows
    st.plotly_chart(charts.learning_curve_figure(rows, "recall", title="Recall vs labels"), key="replay_recall")
    st.plotly_chart(charts.latency_figure(rows), key="replay_latency")
    st.subheader("Summary")
    st.dataframe(replay_summary(result), hide_index=True, width="stretch", key="replay_summary_table")
    st.caption(plain(reference))
    st.download_button(
        "Download the tidy rows (CSV)",
        lambda: rows.to_csv(index=False).encode(),
        file_name=f"replay-{chosen}.csv",
        mime="text/csv",
        key="download_rows",
        on_click="ignore",
    )
    with st.expander("Configuration"):
        st.json(
            {k: v for k, v in result.config.items() if k != "replay"}
            | {"replay": {k: v for k, v in result.config["replay"].items() if k != "rows"}}
        )

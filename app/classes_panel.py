"""The Label page's panel for a session with named classes: the item, one button per class (keys 1 to 9),
Skip and Undo, why the item was chosen, and the charts (accuracy and macro AUC of the scores when asked,
answers per class, confusion counts).  The class names are the analyst's: shown as plain text."""

from __future__ import annotations

import streamlit as st

from app import auth, charts, stopping_panel
from app.ui.item import draw_panel_item, model_timings, panel_item
from app.ui.messages import guarded, show_outcome, waiting_for_the_model
from app.ui.text import plain, visible_cells

STOPPING_NOTE = (
    "Stopping estimates (when can I stop?) are for two-class sessions, and for sessions with named "
    "classes that look for one class (Most likely <class>): this one shows how well the model rates "
    "the answers instead."
)


def target_note(target: str) -> str:
    """What a positive is on the stopping panel of a session that looks for ``target`` (plain text)."""
    return (
        f"Stopping works on {plain(target)} against the other classes: a positive is an answer "
        f"{plain(target)}, an answer of any other class a negative."
    )


@guarded
def _answer(svc, session_id: int, answer_class: int | None, item_index: int) -> None:
    with waiting_for_the_model():
        st.session_state.outcome = svc.open_session(session_id).answer(
            answer_class, item_index=item_index, by=auth.identity()
        )


@guarded
def _undo(svc, session_id: int, last_item: int | None) -> None:
    st.session_state.outcome = svc.open_session(session_id).undo(last_item_index=last_item, by=auth.identity())


def show(svc, session_id: int) -> None:
    """The panel of ``session_id`` (a ``ClassesRun``)."""
    run = svc.open_session(session_id)
    if run.problem is not None:
        st.error(plain(run.problem))
        return
    at = panel_item(run)
    shown, form_open, disabled, item, last = at.shown, at.form_open, at.disabled, at.item, at.last
    counts = run.class_counts()
    item_col, chart_col = st.columns([1, 1], gap="large")
    with item_col:
        item_box = st.container(key="item_view")
        with st.container(horizontal=True, key="class_buttons"):
            for k, name in enumerate(run.classes):
                # a button's label is Markdown: the class name (the analyst's own text) is shown as it is
                st.button(
                    f"{plain(name)} ({k + 1})",
                    shortcut=str(k + 1),
                    type="primary" if k == 0 else "secondary",
                    disabled=disabled,
                    on_click=_answer,
                    args=(svc, session_id, k, item),
                    key=f"class_{k}_{item}",
                )
            st.button(
                "Skip",
                shortcut="S",
                disabled=disabled,
                on_click=_answer,
                args=(svc, session_id, None, item),
                key=f"skip_{item}",
            )
            st.button(
                "Undo",
                shortcut="U",
                disabled=last is None or form_open,
                on_click=_undo,
                args=(svc, session_id, last),
                key=f"undo_{last}",
            )
        with item_box:
            guess = run.predicted_class()
            draw_panel_item(
                at,
                ""
                if shown is None
                else f"Chosen by **{plain(run.heuristic_words(shown.strategy))}**: {plain(shown.reason)}"
                + (f" · the model's best guess: {plain(guess)}" if guess is not None else ""),
            )
        if form_open:
            st.caption("Labelling is paused while **New session** is open.")
        show_outcome()
        per_class = " · ".join(f"{plain(name)} {n}" for name, n in counts.items())
        st.container(key="progress").markdown(
            f"**{run.n_labels}** {'label' if run.n_labels == 1 else 'labels'} ({per_class}) · "
            f"**{run.n_skips}** {'skip' if run.n_skips == 1 else 'skips'} · pool {len(run.pool_items):,} items"
        )
        st.caption(f"{model_timings(run, shown)} · one model per class ({len(run.classes)})")
    with chart_col:
        top = st.columns(2)
        top[0].plotly_chart(
            charts.class_accuracy_figure(run.history()), config={"displayModeBar": False}, key="class_accuracy"
        )
        top[1].plotly_chart(charts.class_counts_figure(counts), config={"displayModeBar": False}, key="class_counts")
        st.markdown("**Confusion counts** (rows: your answer; columns: the model's best guess when it asked)")
        st.dataframe(visible_cells(run.confusion().reset_index()), hide_index=True, key="class_confusion")
        if run.stopping_status() is None:
            st.caption(STOPPING_NOTE)
    if run.stopping_status() is not None:  # "Most likely <class>": the two-class panel, that class vs the rest
        st.markdown(f"**When can I stop finding {plain(run.target)}?**")
        st.caption(target_note(run.target))
        stopping_panel.show(svc, run)


def class_keys(classes) -> str:
    """The answer keys of ``classes`` (1 to K), Skip and Undo, in words (class names as plain text)."""
    keys = " · ".join(f"**{k + 1}** {plain(name)}" for k, name in enumerate(classes))
    return f"Keys: {keys} · **S** skip · **U** undo."


def key_help(classes) -> str:
    """The keys line under the panel."""
    return f"{class_keys(classes)} Every answer is saved before the next item appears."

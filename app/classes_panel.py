"""The Label page's panel for a session with named classes: the item, one button per class (keys 1 to 9),
Skip and Undo, why the item was chosen, and the charts (accuracy and macro AUC of the scores when asked,
answers per class, confusion counts).  A multi-label session has a toggle per class instead (keys 1 to 9;
the classes picked for the item are kept in the page's state until Submit, key Enter, stores them; none
picked is an answer: none of these) and per-class agreement counts.  The class names are the analyst's:
shown as plain text."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import auth, charts, stopping_panel
from app.ui.item import draw_panel_item, model_timings, panel_item
from app.ui.messages import guarded, show_outcome, waiting_for_the_model
from app.ui.text import plain, visible, visible_cells

STOPPING_NOTE = (
    "Stopping estimates (when can I stop?) work on one class against the rest: say which class you are "
    "looking for, and the rules, the estimate and the random check follow it."
)
#: the Label page's choice of the class looked for
STOP_CLASS_LABEL = "Which class are you looking for? (for 'when can I stop')"


def target_note(target: str, multi_label: bool = False) -> str:
    """What a positive is on the stopping panel of a session that looks for ``target`` (plain text)."""
    if multi_label:
        return (
            f"Stopping works on {plain(target)} against the other classes: a positive is an answer whose "
            f"classes include {plain(target)}, any other answer (none of these too) a negative."
        )
    return (
        f"Stopping works on {plain(target)} against the other classes: a positive is an answer "
        f"{plain(target)}, an answer of any other class a negative."
    )


@guarded
def _answer(svc, session_id: int, answer_class: int | list[int] | None, item_index: int) -> None:
    with waiting_for_the_model():
        st.session_state.outcome = svc.open_session(session_id).answer(
            answer_class, item_index=item_index, by=auth.identity()
        )


@guarded
def flip(state_key: str, k: int) -> None:
    """Toggle class ``k`` of the set being made (multi-label; kept in the page's state under ``state_key``):
    picked, or not any more."""
    picked = set(st.session_state.get(state_key, ()))
    picked ^= {k}
    st.session_state[state_key] = sorted(picked)


def picked_key(session_id: int, item_index: int) -> str:
    """Where the classes picked for the item shown are kept until Submit (multi-label)."""
    return f"picked_{session_id}_{item_index}"


@guarded
def _submit(svc, session_id: int, item_index: int) -> None:
    picked = st.session_state.pop(picked_key(session_id, item_index), [])
    _answer(svc, session_id, list(picked), item_index)


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
        # several classes per item: the toggles fill a row of their own and Submit, Skip and Undo the row below,
        # so the actions never wrap apart; one class per item: the classes, Skip and Undo in one row
        with st.container(key="class_buttons"):
            if run.multi_label:
                with st.container(horizontal=True, key="class_toggles"):
                    picked = _toggles(run.classes, session_id, item, disabled)
                actions = st.container(horizontal=True, key="answer_actions")
                actions.button(
                    "Submit" if picked else "Submit: none of these",
                    shortcut="Enter",
                    type="primary",
                    disabled=disabled,
                    on_click=_submit,
                    args=(svc, session_id, item),
                    key=f"submit_{item}",
                )
            else:
                actions = st.container(horizontal=True, key="answer_actions")
                for k, name in enumerate(run.classes):
                    # a button's label is Markdown: the class name (the analyst's own text) is shown as it is
                    actions.button(
                        plain(name),  # its key: the hint Streamlit shows beside it
                        shortcut=str(k + 1),
                        disabled=disabled,
                        on_click=_answer,
                        args=(svc, session_id, k, item),
                        key=f"class_{k}_{item}",
                    )
            actions.button(
                "Skip",
                shortcut="S",
                disabled=disabled,
                on_click=_answer,
                args=(svc, session_id, None, item),
                key=f"skip_{item}",
            )
            actions.button(
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
        if run.multi_label:
            per_class += f" · none of these {run.n_none}"
        st.container(key="progress").markdown(
            f"**{run.n_labels}** {'label' if run.n_labels == 1 else 'labels'} ({per_class}) · "
            f"**{run.n_skips}** {'skip' if run.n_skips == 1 else 'skips'} · pool {len(run.pool_items):,} items"
        )
        st.caption(f"{model_timings(run, shown)} · one model per class ({len(run.classes)})")
    with chart_col:
        history = run.history()
        top = st.columns(2)
        top[0].plotly_chart(
            charts.class_accuracy_figure(
                history, waiting=charts.rated_waiting(per_class=False, multi_label=run.multi_label)
            ),
            config={"displayModeBar": False},
            key="class_accuracy",
        )
        top[1].plotly_chart(charts.class_counts_figure(counts), config={"displayModeBar": False}, key="class_counts")
        class_auc_chart(history, run.classes, multi_label=run.multi_label, key="class_auc")
        if run.multi_label:
            heading = "**Agreement per class** (your answer and the model's call when it asked)"
        else:
            heading = "**Confusion counts** (rows: your answer; columns: the model's best guess when it asked)"
        counts_table(heading, run.confusion(), key="class_confusion")
    stopping_part(svc, run)


@guarded
def _choose_stop_class(svc, session_id: int, key: str) -> None:
    st.session_state.outcome = svc.open_session(session_id).set_stop_class(st.session_state[key], by=auth.identity())


def stopping_part(svc, run) -> None:
    """When can I stop: the class looked for (chosen here, any heuristic), then the two-class panel on that class
    against the rest (``app.services.class_stopping``; with several classes per item, a set that holds it is a
    positive)."""
    key = f"stop_class_{run.session_id}"
    st.session_state[key] = run.stop_class  # (the stored class: another tab may have changed it)
    st.selectbox(
        STOP_CLASS_LABEL,
        list(run.classes),
        key=key,
        format_func=visible,
        placeholder="choose a class to see when you can stop",
        on_change=_choose_stop_class,
        args=(svc, run.session_id, key),
        disabled=run.checking,
        help="The stopping rules, the estimate of its items still unlabelled and the random check work on this class "
        "against the others, whichever way items are picked. "
        + ("Stop the random check to change it." if run.checking else ""),
    )
    if run.stopping_status() is None:
        st.caption(STOPPING_NOTE)
        return
    st.markdown(f"**When can I stop finding {plain(run.stop_class)}?**")
    st.caption(target_note(run.stop_class, run.multi_label))
    stopping_panel.show(svc, run)


def auc_caption(multi_label: bool, when: str = "when it asked", against: str = "your answers") -> str:
    """What the per-class chart shows, in plain words, why it reads low (the items asked are the hardest), and its
    technical name (``Advanced``)."""
    than = "an item without it" if multi_label else "an item of another class"
    return (
        f"Each line: how often the model, {when}, rated an item of the class above {than} (0.5: no better "
        "than chance; 1: always), against "
        f"{against}. A class's line starts once the items rated include some in it and some out of it (not yet: "
        "no point). When items are picked where the model is least sure, the items asked are the ones the model "
        "found hardest, so this reads lower than it would on the whole pool, even below 0.5: it is not an estimate "
        "of accuracy. Advanced: the ROC AUC of each class's one-vs-rest scores; dashed, their mean (macro AUC)."
    )


def class_auc_chart(
    history: pd.DataFrame,
    classes,
    *,
    multi_label: bool,
    key: str,
    waiting: str | None = None,
    xtitle: str = "labels",
    scored: str = "when asked",
    when: str = "when it asked",
    against: str = "your answers",
) -> None:
    """The per-class AUC chart (a line per class, its name as written; the macro AUC) and its caption (``when``
    the model scored the items, ``against`` what)."""
    st.plotly_chart(
        charts.class_auc_figure(history, classes, multi_label=multi_label, xtitle=xtitle, when=scored, waiting=waiting),
        config={"displayModeBar": False},
        key=key,
    )
    st.caption(auc_caption(multi_label, when, against))


def counts_table(heading: str, table: pd.DataFrame, key: str) -> None:
    """``heading`` (Markdown) over a table of counts per class (its index: the rows' classes), names as written."""
    st.markdown(heading)
    st.dataframe(visible_cells(table.reset_index()), hide_index=True, key=key)


def class_toggles(
    classes, state_key: str | None, disabled: bool, keys: list[str], *, shortcuts: bool = True
) -> set[int]:
    """A toggle per class (``shortcuts``: keys 1 to 9; picked: the primary colour and a tick), the set being made
    kept in the page's state under ``state_key`` (None: no item, nothing picked); returns the classes picked.
    Class names are the person's own text: shown as it is."""
    picked = set(st.session_state.get(state_key, ())) if state_key is not None else set()
    for k, name in enumerate(classes):
        on = k in picked
        st.button(
            f"{'✓ ' if on else ''}{plain(name)}",  # its key (if any): the hint Streamlit shows beside it
            shortcut=str(k + 1) if shortcuts else None,
            type="primary" if on else "secondary",
            disabled=disabled,
            on_click=flip,
            args=(state_key, k),
            key=keys[k],
        )
    return picked


def _toggles(classes, session_id: int, item: int | None, disabled: bool) -> set[int]:
    """A toggle per class (keys 1 to 9) for the set being made of ``item``; returns the classes picked (Submit, with
    Enter, answers them; none picked answers none of these)."""
    state_key = None if item is None else picked_key(session_id, item)
    return class_toggles(classes, state_key, disabled, [f"class_{k}_{item}" for k in range(len(classes))])


def _keys(classes) -> str:
    return " · ".join(f"**{k + 1}** {plain(name)}" for k, name in enumerate(classes))


def class_keys(classes) -> str:
    """The answer keys of ``classes`` (1 to K), Skip and Undo, in words (class names as plain text)."""
    return f"Keys: {_keys(classes)} · **S** skip · **U** undo."


def set_keys(classes) -> str:
    """The keys of a multi-label answer (1 to K pick or drop a class, Enter submits), Skip and Undo, in words."""
    return (
        f"Keys: {_keys(classes)} (each picks or drops its class) · **Enter** submit (none picked: none of these) "
        "· **S** skip · **U** undo."
    )


def key_help(classes, multi_label: bool = False) -> str:
    """The keys line under the panel."""
    keys = set_keys(classes) if multi_label else class_keys(classes)
    return f"{keys} Every answer is saved before the next item appears."

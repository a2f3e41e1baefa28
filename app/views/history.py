"""Label history: every answer of a session; change or remove any earlier one."""

import pandas as pd
import streamlit as st

from app import auth, navigation
from app.services import Outcome
from app.services.common import answer_words
from app.services.vocabulary import CHOSEN_BY
from app.ui.messages import guarded, waiting_for_the_model
from app.ui.state import annotator_filter, follow_address, service, session_label, show_session
from app.ui.tables import (
    correction_note,
    heuristic_words_of,
    history_choices,
    history_summary,
    score_cells,
    table_height,
)
from app.ui.text import plain, visible, visible_cells

svc = service()
st.title("Label history")
state = st.session_state

sessions = svc.sessions()  # closed ones too: their history can be read
if not sessions:
    st.info("No labelling session yet: start one on the Label page.")
    st.stop()
follow_address(sessions, missing="is not in this database")
if state.session_id not in {s.id for s in sessions}:
    state.session_id = None
left, right = st.columns([3, 1], vertical_alignment="bottom")
with right:
    mine = annotator_filter(sessions, key="all_annotators_history")
if state.session_id is None:
    state.session_id = (mine or sessions)[0].id
navigation.put_session_in_address(state.session_id)
ids = [s.id for s in mine] or [state.session_id]
key = f"history_session_{state.session_id}"
left.selectbox(
    "Session",
    ids,
    index=ids.index(state.session_id),
    format_func=session_label(sessions).get,
    key=key,
    on_change=lambda k=key: show_session(state[k]),
)
info = next(s for s in sessions if s.id == state.session_id)

if not svc.is_open(info.id):
    with st.spinner("Rebuilding the session from its stored labels…"):
        svc.open_session(info.id)
run = svc.open_session(info.id)
if run.problem is not None:
    st.error(plain(run.problem))
table = run.label_table()
current = table[table["status"] == "current"]
#: a two-class answer as the Label page says it, with the dataset's class name ("Positive (8)"); a class's name as it is
said = (
    {}
    if getattr(run, "has_classes", False)
    else {name: answer_words(value, run.class_names) for value, name in run.class_names.items()}
)


def in_words(answers: pd.Series) -> pd.Series:
    """Stored answers (the dataset's class names) as the pages say them."""
    return answers.map(lambda name: said.get(name, name))


st.caption(history_summary(table, run.info.solver, run.info.params))


@guarded
def _change_class(pick_key: str, answer_class: int) -> None:
    """Change the answer picked in the box to the class ``answer_class`` (a session with named classes); the
    answer is the box's when the button was pressed, read now."""
    live = svc.open_session(info.id)
    state.history_outcome = live.change_label(int(state[pick_key]), answer_class, by=auth.identity())


@guarded
def _change_set(pick_key: str, set_key: str) -> None:
    """Change the answer picked in the box to the classes picked in ``set_key`` (a multi-label session; none
    picked: none of these), both read now."""
    live = svc.open_session(info.id)
    with waiting_for_the_model():
        state.history_outcome = live.change_label(int(state[pick_key]), list(state[set_key]), by=auth.identity())


@guarded
def _correct(pick_key: str, value: int | None) -> None:
    """Change the answer picked in the box to ``value`` (None: remove it). The answer is the box's when the
    button was pressed, read now, not the one the button was drawn for: a pick and a click can reach the
    server in one run."""
    live = svc.open_session(info.id)
    who = auth.identity()  # the correction is recorded under the signed-in person (refused once signed out)
    label_id = int(state[pick_key])
    if value is None:
        with waiting_for_the_model():  # (a first start's compile: the model waits for it, and says so)
            state.history_outcome = live.remove_label(label_id, by=who)
        return
    table = live.label_table()
    (answer,) = table[(table["label_id"] == label_id) & (table["status"] == "current")]["answer"]
    now = {name: v for v, name in live.class_names.items()}[answer]
    if now in (0, value):  # (the button was drawn for another answer: say so rather than guess)
        state.history_outcome = Outcome(
            False,
            "The answer picked is not one this button changes: pick it again and choose from the buttons shown for it.",
            "warning",
        )
        return
    with waiting_for_the_model():
        state.history_outcome = live.change_label(label_id, value, by=who)


with st.container(border=True, key="history_change"):
    if info.status != "active":
        st.info("This session is closed: reopen it on the Sessions page to change its answers.")
    elif current.empty:
        st.info("No answer yet in this session.")
    else:
        choices = history_choices(current.assign(answer=in_words(current["answer"])))
        options = list(choices)
        remembered = state.get("history_picked")
        # a new widget after every change of the session, so that the box shows the answer as it now stands
        # (and keeps the answer picked before, while it is still there)
        pick_key = f"history_pick_{info.id}_{run.version}"
        picked = st.selectbox(
            "Answer to change",
            options,
            format_func=choices.get,
            key=pick_key,
            index=options.index(remembered) if remembered in options else 0,
            on_change=lambda: state.update(history_picked=state[pick_key]),
            help="Newest first. The model becomes the one that learned the corrected answers from the start.",
        )
        state.history_picked = picked
        row = current[current["label_id"] == picked].iloc[0]
        named = getattr(run, "has_classes", False)  # a session with named classes: change to any other class
        value = 1 if named else {name: v for v, name in run.class_names.items()}[row["answer"]]
        if getattr(run, "multi_label", False) and row["answer"] != "skipped":
            now = next(a.answer_classes for a in run.answers if a.label_id == picked)
            set_key = f"history_set_{picked}_{run.version}"
            with st.container(horizontal=True, key="history_classes", vertical_alignment="bottom"):
                st.multiselect(
                    "Classes of this item",
                    list(range(len(run.classes))),
                    default=list(now or ()),
                    format_func=lambda k: visible(run.classes[k]),
                    key=set_key,
                    placeholder="none of these",
                )
                st.button(
                    "Change to these classes",
                    key=f"change_{picked}_set",
                    on_click=_change_set,
                    args=(pick_key, set_key),
                )
        elif named and row["answer"] != "skipped":
            with st.container(horizontal=True, key="history_classes"):
                for k, name in enumerate(run.classes):
                    if name != row["answer"]:
                        st.button(
                            f"Change to {plain(name)}",
                            key=f"change_{picked}_{k}",
                            on_click=_change_class,
                            args=(pick_key, k),
                        )
        cols = st.columns([1, 1, 2], vertical_alignment="center")
        if value != 0 and not named:
            other = answer_words(-value, run.class_names)
            # a button's label is Markdown: the class name (the dataset's own text) is shown as it is
            cols[0].button(
                f"Change to {plain(other)}",
                type="primary",
                key=f"change_{picked}",
                width="stretch",
                on_click=_correct,
                args=(pick_key, -value),
            )
        cols[1].button(
            "Remove this answer",
            key=f"remove_{picked}",
            width="stretch",
            on_click=_correct,
            args=(pick_key, None),
            help="Takes the answer back (the item can be asked about again); the original row and "
            "who removed it when are kept.",
        )
        cols[2].caption(correction_note(run.info.solver, run.info.params))
    outcome = state.get("history_outcome")
    if outcome is not None:
        (
            st.success
            if outcome.ok and outcome.kind == "info"
            else st.warning
            if outcome.kind == "warning"
            else st.error
        )(plain(outcome.message))
        state.history_outcome = None

#: pixels of the "changes" column: wide enough for who changed what and when to be read in full
CHANGES_WIDTH = 520
COLUMNS = {
    "#": st.column_config.TextColumn(help='Place among the current answers ("–": removed or undone)'),
    "item": st.column_config.NumberColumn(format="%d"),
    "when": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss"),
    "score when asked": st.column_config.TextColumn(
        help='f(x) of the model when it asked: positive on the side of the positives. "cold start" '
        'while the model could not score yet, "–" for answers imported from a file'
    ),
    "changes": st.column_config.TextColumn(width=CHANGES_WIDTH),
}
if "score when asked" in table:  # (a session with named classes keeps every class's score: not shown here)
    table = table.assign(**{"score when asked": score_cells(table)})
# a removed or undone answer has no place: "–", not "None"
table = table.assign(answer=in_words(table["answer"]), **{"as given": in_words(table["as given"])})
table = table.assign(**{"#": table["#"].map(lambda p: "–" if pd.isna(p) else f"{int(p)}")})
table = visible_cells(table.assign(**{"heuristic": heuristic_words_of(table)})).rename(columns={"heuristic": CHOSEN_BY})
corrected = table[table["changes"].str.len() > 0]
if len(corrected):
    st.markdown("**Changed or removed**")
    st.dataframe(
        corrected.drop(columns=["label_id"]).iloc[::-1],
        hide_index=True,
        width="stretch",
        height=table_height(len(corrected), most=220),
        key="history_corrected",
        column_config=COLUMNS,
    )
    st.markdown("**Every answer, newest first**")
st.dataframe(
    table.drop(columns=["label_id"]).iloc[::-1],
    hide_index=True,
    width="stretch",
    height=table_height(len(table)),
    key="history_table",
    column_config=COLUMNS,
)
st.page_link(
    navigation.view("label"),
    label="Back to labelling",
    icon=":material/label:",
    query_params={navigation.SESSION_PARAM: info.id},
    disabled=info.status != "active",
)

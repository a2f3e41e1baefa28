"""Sessions: every labelling session; name, close (archive) or reopen one, and bring in labels from elsewhere."""

import pandas as pd
import streamlit as st

from app import auth, navigation
from app.services import ServiceError
from app.services.datasets import label_column_guess
from app.services.vocabulary import PICKED_BY, heuristic_words, model_words, strategy_target
from app.ui.messages import data_error_text, guarded
from app.ui.state import annotator_filter, follow_address, service, session_label, show_session
from app.ui.text import plain, visible

svc = service()
st.title("Sessions")
state = st.session_state

sessions = svc.sessions()
if not sessions:
    st.info("No labelling session yet: start one on the Label page.")
    st.stop()
follow_address(sessions, missing="is not in this database")
filters = st.columns([1, 1, 2])
with filters[0]:
    mine = annotator_filter(sessions, key="all_annotators_sessions")
closed_too = filters[1].toggle("Closed sessions too", value=True, key="sessions_closed_too")
listed = [s for s in mine if closed_too or s.status == "active"]
st.dataframe(
    pd.DataFrame(
        [
            {
                "id": s.id,
                "name": visible(s.name or ""),
                "dataset": visible(s.dataset_name),
                "annotator": visible(s.annotator),
                PICKED_BY: heuristic_words(s.strategy, strategy_target(s.params)),
                "model": model_words(s.solver, s.params),
                "labels": s.n_labels,
                "skips": s.n_skips,
                "status": s.status,
                "started": s.created_at,
                "last change": s.updated_at,
            }
            for s in listed
        ]
    ),
    hide_index=True,
    width="stretch",
    key="sessions_table",
    column_config={
        "started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
        "last change": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
    },
)
if not listed:
    st.stop()

ids = [s.id for s in listed]
chosen_id = state.session_id if state.session_id in ids else ids[0]
picker = f"sessions_pick_{chosen_id}"
chosen_id = st.selectbox(
    "Session",
    ids,
    index=ids.index(chosen_id),
    format_func=session_label(listed).get,
    key=picker,
    on_change=lambda: show_session(state[picker]),
)
info = next(s for s in listed if s.id == chosen_id)
links = st.columns(3)
links[0].page_link(
    navigation.view("label"),
    label="Label it",
    icon=":material/label:",
    query_params={navigation.SESSION_PARAM: info.id},
    disabled=info.status != "active",
)
links[1].page_link(
    navigation.view("history"),
    label="Its label history",
    icon=":material/history:",
    query_params={navigation.SESSION_PARAM: info.id},
)


def _tell(outcome) -> None:
    state.sessions_outcome = outcome


@guarded
def _rename(session_id: int) -> None:
    _tell(svc.rename_session(session_id, state.get(f"session_name_{session_id}", ""), by=auth.identity()))


@guarded
def _close(session_id: int) -> None:
    _tell(svc.close_session(session_id, by=auth.identity()))


@guarded
def _reopen(session_id: int) -> None:
    _tell(svc.reopen_session(session_id, by=auth.identity()))


with st.container(border=True):
    name_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
    name_col.text_input(
        "Name", value=info.name or "", key=f"session_name_{info.id}", max_chars=200, placeholder=f"session {info.id}"
    )
    button_col.button("Rename", key=f"rename_{info.id}", on_click=_rename, args=(info.id,), width="stretch")
    if info.status == "active":
        st.button(
            "Close (archive) this session",
            key=f"close_{info.id}",
            on_click=_close,
            args=(info.id,),
            help="Its labels, history and model stay; it leaves the Label page's list until reopened.",
        )
    else:
        st.button("Reopen this session", key=f"reopen_{info.id}", on_click=_reopen, args=(info.id,))
    outcome = state.get("sessions_outcome")
    if outcome is not None:
        (st.success if outcome.ok else st.error)(plain(outcome.message))
        state.sessions_outcome = None

st.subheader("Import labels into this session")
st.caption(
    "A CSV file with an item key column and a label column (the dataset's class names, positive / negative, "
    "or +1 / -1; for a session with named classes, the session's class names): a review started elsewhere "
    "continues here. Every row is checked first; if any cannot be used, the message names it and nothing is "
    "imported."
)
if info.status != "active":
    st.info("Reopen the session to import labels into it.")
    st.stop()
upload = st.file_uploader("CSV of item key → label", type=["csv"], key=f"labels_upload_{info.id}")
if upload is not None:
    data = upload.getvalue()
    try:
        header = svc.preview_csv(data, n=0).header
    except ServiceError as error:  # too wide or too large to read at all
        st.error(plain(data_error_text(error, upload.name)))
        st.stop()
    header = [h.strip().lstrip("\ufeff") for h in header]
    if not any(header):
        st.error(plain(f"{upload.name}: the file is empty (a header row and data rows are needed)."))
        st.stop()
    key_guess = next((h for h in ("item_key", "key", "id", "item_index") if h in header), header[0])
    label_guess = label_column_guess(header) or header[min(1, len(header) - 1)]
    cols = st.columns(2)
    key_column = cols[0].selectbox(
        "Item key column",
        header,
        index=header.index(key_guess),
        key=f"labels_key_{info.id}",
        help="Matched to the dataset's item keys (or item numbers when it has none).",
    )
    label_column = cols[1].selectbox(
        "Label column", header, index=header.index(label_guess), key=f"labels_label_{info.id}"
    )
    if st.button("Import labels", type="primary", key=f"labels_import_{info.id}"):
        run = svc.open_session(info.id)
        try:
            outcome = run.import_labels(
                data, key_column=key_column, label_column=label_column, source=upload.name, by=auth.identity()
            )
        except ServiceError as error:
            st.error(plain(data_error_text(error, upload.name)))
        else:
            (st.success if outcome.ok else st.error)(plain(outcome.message))

"""Export: labelled sets with provenance (CSV, JSONL) and the model state of a session."""

import io

import pandas as pd
import streamlit as st

from app.services.vocabulary import heuristic_words, how_labelled, strategy_target
from app.ui.forms import export_default_dataset
from app.ui.state import service
from app.ui.tables import export_preview
from app.ui.text import plain, visible, visible_cells

svc = service()
st.title("Export")

datasets = {d.id: visible(d.name) for d in svc.datasets()}
sessions = svc.sessions()
annotators = svc.annotators()

st.subheader("Labelled items")
cols = st.columns(3)
# One dataset at a time (its own feature columns and class names); every dataset in one file on request.
choices = [*datasets, None]
if st.session_state.get("export_dataset", "unset") not in choices:
    st.session_state.export_dataset = export_default_dataset(sessions, list(datasets), st.session_state.session_id)
dataset_id = cols[0].selectbox(
    "Dataset",
    choices,
    key="export_dataset",
    format_func=lambda i: "every dataset in one file (feature columns merged)" if i is None else f"#{i} {datasets[i]}",
)
session_choices = [s for s in sessions if dataset_id is None or s.dataset_id == dataset_id]
session_id = cols[1].selectbox(
    "Session",
    [None, *[s.id for s in session_choices]],
    key="export_session",
    format_func=lambda i: (
        "all"
        if i is None
        else next(
            visible(
                f"#{s.id} · {s.dataset_name} · {heuristic_words(s.strategy, strategy_target(s.params))} · {s.annotator}"
            )
            for s in session_choices
            if s.id == i
        )
    ),
)
annotator = cols[2].selectbox(
    "Annotator", [None, *annotators], format_func=lambda a: "all" if a is None else visible(a), key="export_annotator"
)
include_skips = st.checkbox("Include skipped items", value=False)
all_features = st.checkbox(
    "Include the terms of documents and the bits of molecules as columns",
    value=False,
    key="export_all_features",
    help="Documents and molecules are exported with their text (display_text); their features are tens of "
    "thousands of TF-IDF terms or fingerprint bits, one column each, which spreadsheets cannot open. "
    "Numeric features are always included.",
)

filters = dict(session_id=session_id, annotator=annotator, dataset_id=dataset_id, include_skips=include_skips)
files = dict(filters, include_features=True if all_features else None)
listing = svc.export_labels("csv", include_features=False, **filters)
# (as the file has it: an empty cell stays empty, a key keeps its leading zeros)
frame = pd.read_csv(io.BytesIO(listing), dtype=str, keep_default_na=False) if listing.strip() else pd.DataFrame()
#: what a row's label and label_value hold, by the session's kind (``storage.export``)
LABEL_COLUMNS = {
    "two": "the label as the dataset's class name (and as +1 / -1 in label_value)",
    "classes": (
        "the answer as the class's name in label and as its number, 1 to {k}, in label_value (the key pressed; "
        "0 for a skip)"
    ),
    "several": (
        'the answer as the names of its classes in label, joined by "; " ("(none)" for none of them), and '
        "in label_value as one number: 1 for the first class, 2 for the second, 4 for the third, … summed over "
        "the classes given (0 for none)"
    ),
}
#: the kinds' names when rows of several kinds match
KIND_WORDS = {
    "two": "from a two-class session",
    "classes": "from a session with named classes",
    "several": "from a session with several classes per item",
}


def session_kind(info) -> tuple[str, int]:
    """A session's kind (``LABEL_COLUMNS``' keys) and its number of classes (0: two-class)."""
    try:
        settings = info.settings
    except ValueError:
        return "two", 0
    if not settings.classes:
        return "two", 0
    return ("several" if settings.multi_label else "classes"), len(settings.classes)


def label_columns(matching) -> str:
    """What the rows' label columns hold for the sessions ``matching`` the filters: one kind's words, or each
    kind's after its name when the rows mix kinds."""
    kinds: dict[str, set[int]] = {}
    for info in matching:
        kind, k = session_kind(info)
        kinds.setdefault(kind, set()).add(k)
    words = {kind: LABEL_COLUMNS[kind].format(k=k.pop() if len(k) == 1 else "K") for kind, k in kinds.items()}
    if len(words) <= 1:
        return next(iter(words.values()), LABEL_COLUMNS["two"])
    return "its label as its session's kind has it: " + "; ".join(
        f"a row {KIND_WORDS[kind]}: {words[kind]}" for kind in LABEL_COLUMNS if kind in words
    )


matching = [s for s in session_choices if session_id is None or s.id == session_id]
st.caption(
    f"{len(frame)} labelled items match. Each row carries {label_columns(matching)}. It also holds who labelled "
    "it and when, how the item was chosen (column strategy) and the model that asked (column solver), "
    "the score the "
    "model gave it (empty during the cold start, when there was no model to ask), the model version, the "
    "timings, and who changed it later in the label history; the files add the item's numeric feature "
    "values (documents and molecules: their text, and their terms or bits only when asked for below the "
    "filters)."
)
if len(frame):
    first = [
        c
        for c in (
            "item_index",
            "item_key",
            "label",
            "label_value",
            "annotator",
            "labelled_at",
            "strategy",
            "solver",
            "decision_value",
            "model_version",
            "session_id",
            "dataset_name",
        )
        if c in frame
    ]
    preview = frame[first + [c for c in frame.columns if c not in first]]
    st.dataframe(
        visible_cells(export_preview(preview.head(50))),
        hide_index=True,
        width="stretch",
        height=260,
        key="export_preview",
    )
left, right = st.columns(2)
named = dict(dataset_id=dataset_id, session_id=session_id)  # the file: dataset, session and date
# the files are written when a button is pressed, not on every visit of the page
left.download_button(
    "Download CSV",
    lambda: svc.export_labels("csv", **files),
    file_name=svc.export_file_name("csv", **named),
    mime="text/csv",
    type="primary",
    disabled=not len(frame),
    key="download_csv",
    width="stretch",
    on_click="ignore",
)
right.download_button(
    "Download JSONL",
    lambda: svc.export_labels("jsonl", **files),
    file_name=svc.export_file_name("jsonl", **named),
    mime="application/jsonl",
    disabled=not len(frame),
    key="download_jsonl",
    width="stretch",
    on_click="ignore",
)

st.subheader("Model state of a session")
if not sessions:
    st.info("No labelling session yet.")
    st.stop()
model_session = st.selectbox(
    "Session",
    [s.id for s in sessions],
    key="model_session",
    format_func=lambda i: next(
        visible(f"#{s.id} · {s.dataset_name} · {how_labelled(s.strategy, s.solver, s.params)} · {s.n_labels} labels")
        for s in sessions
        if s.id == i
    ),
)

st.caption(
    "A NumPy .npz file: the solver's arrays (support vectors, coefficients, labels, the stored points) "
    "and a JSON `__meta__` entry (solver, kernel, parameters, session). Load it with "
    "`numpy.load(path, allow_pickle=False)` or `core.solvers.base.OnlineSolver.load(path)`."
)
problem = svc.known_problem(model_session)
if problem is not None:
    st.error(plain(problem))
    st.stop()
st.download_button(
    "Download the model state (.npz)",
    lambda: svc.open_session(model_session).model_state(),
    file_name=f"marginlab-session-{model_session}-model.npz",
    mime="application/octet-stream",
    key="download_model",
    on_click="ignore",
)

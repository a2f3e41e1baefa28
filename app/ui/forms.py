"""What the pages' forms need: the New session fields, an uploaded file's preview and values, the Compare
form's check, the Export page's first dataset, and the Data page's Delete a dataset panel."""

from __future__ import annotations

import streamlit as st

from app.services import MarginLab, ServiceError
from app.services.accounts import Identity
from app.services.common import gamma_value
from app.ui.text import plain, visible

#: smallest C the New session form accepts (any positive C is a valid SVM; the solvers take 1e-6 and 1e6)
C_MIN = 1e-12


def classes_per_item(key: str, help: str) -> str:
    """The New session and New project forms' choice of one class per item or several: "one" or "several"."""
    return st.radio(
        "Classes per item",
        ["one", "several"],
        key=key,
        horizontal=True,
        format_func={"one": "One class per item", "several": "Several classes per item"}.get,
        help=help,
    )


def parse_gamma(text: str) -> float | str:
    """The gamma field of the New session form: ``scale``, ``auto`` or a positive number.

    Raises ``ServiceError`` with a message for the person who typed it (as the service's checks do).
    """
    value = str(text).strip()
    try:
        return gamma_value(value or "scale")
    except ServiceError:
        raise ServiceError(f"gamma must be 'scale' or a positive number such as 0.01, not '{value}'.") from None


@st.cache_data(max_entries=8, show_spinner=False)
def _preview(_service: MarginLab, data: bytes, sep: str = "auto", decimal: str = "auto"):
    return _service.preview_csv(data, sep=sep, decimal=decimal)


def csv_preview(service: MarginLab, data: bytes, sep: str = "auto", decimal: str = "auto"):
    """The preview of an uploaded file (delimiter and decimal separator detected unless given), parsed
    once per file and choice (the Data page reruns on every choice)."""
    return _preview(service, data, sep, decimal)


@st.cache_data(max_entries=8, show_spinner=False)
def _column_values(_service: MarginLab, data: bytes, column: str, sep: str) -> list[str]:
    return _service.column_values(data, column, sep=sep)


def column_values(service: MarginLab, data: bytes, column: str, sep: str) -> list[str]:
    """The distinct values of an uploaded file's column (to choose the positive class), read once per
    file, column and delimiter rather than on every rerun of the Data page."""
    return _column_values(service, data, column, sep)


def unreadable_csv(preview, filename: str) -> str | None:
    """Why an uploaded file cannot be imported at all (no header, no rows), or None."""
    if not any(str(h).strip() for h in preview.header):
        return f"{filename}: the file is empty (a CSV needs a header row and at least one data row)."
    if preview.n_rows == 0:
        return f"{filename}: the file has a header but no data rows."
    return None


def comparison_problem(budget: int, initial: int) -> str | None:
    """Why a comparison with these counts would compare nothing, or None."""
    if initial >= budget:
        return (
            f"The {initial} initial labels use the whole budget of {budget}: every label would be "
            "drawn at random and the heuristics would never choose an item. Lower the initial labels "
            "or raise the budget."
        )
    return None


def export_default_dataset(sessions, dataset_ids: list[int], session_id: int | None) -> int | None:
    """The dataset the Export page starts with: the shown session's, else the most recently labelled one, else
    the first (None only when there is no dataset)."""
    by_id = {s.id: s for s in sessions}
    if session_id in by_id and by_id[session_id].dataset_id in dataset_ids:
        return by_id[session_id].dataset_id
    labelled = [s.dataset_id for s in sessions if s.n_labels and s.dataset_id in dataset_ids]
    return labelled[0] if labelled else (dataset_ids[0] if dataset_ids else None)


def delete_dataset_panel(svc: MarginLab, datasets, by: Identity) -> None:
    """Data page: delete a dataset with everything that hangs off it, after saying what goes and asking
    for its name (``by``: the signed-in person)."""
    from app.services.housekeeping import describe_contents

    notice = st.session_state.pop("delete_notice", None)
    if notice:
        st.success(plain(notice))
    with st.expander("Delete a dataset"):
        names = {d.id: visible(f"#{d.id} {d.name}") for d in datasets}
        dataset_id = st.selectbox(
            "Dataset to delete",
            list(names),
            index=None,
            format_func=names.get,
            placeholder="choose a dataset",
            key="delete_dataset_id",
        )
        if dataset_id is None:
            return
        contents = svc.dataset_contents(dataset_id)
        st.warning(
            plain(
                f"Deleting '{contents.name}' removes {describe_contents(contents)}; the sessions' label "
                "histories and model snapshots go with them. This cannot be undone; a copy of the "
                "database is the backup."
            )
        )
        typed = st.text_input(
            "Type the dataset's name to confirm", key=f"delete_confirm_{dataset_id}", placeholder=contents.name
        )
        if st.button(
            "Delete the dataset",
            type="primary",
            key=f"delete_{dataset_id}",
            disabled=typed.strip() != contents.name.strip(),
        ):
            try:
                outcome = svc.delete_dataset(dataset_id, confirm_name=typed, by=by)
            except ServiceError as error:
                st.error(plain(error))
                return
            st.session_state.delete_notice = outcome.message
            st.session_state.pop("delete_dataset_id", None)
            st.rerun()

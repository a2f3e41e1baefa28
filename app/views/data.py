"""Data: the datasets in the database; add a bundled one or upload a CSV."""

import pandas as pd
import streamlit as st

from app import ui
from app.services import ServiceError
from core.datasets import BUNDLED, DataError
from storage.errors import StorageError

svc = ui.service()
st.title("Data")

datasets = svc.datasets()
st.subheader("Datasets in the database")
st.dataframe(
    pd.DataFrame([{
        "id": d.id, "name": d.name, "items": d.n_items, "features": d.n_features,
        "true labels": "yes" if d.has_true_labels else "no",
        "shown as": d.display_kind + (f" {d.image_shape[0]}×{d.image_shape[1]}" if d.image_shape else ""),
        "scaling": d.meta.get("scaling", "none"), "source": d.source,
    } for d in datasets]),
    hide_index=True, width="stretch", key="datasets_table")
st.caption("True labels are used only to draw the evaluation ROC curve and for simulations on the "
           "Compare page; they are never shown while labelling.")
if datasets:
    ui.delete_dataset_panel(svc, datasets)


def _report(result, where: str) -> None:
    """Say what the import did; after a new import draw the page again so the table above lists it."""
    st.session_state.data_notice = (where, result.created, result.message)
    if result.created:
        st.rerun()
    _notice(where)


def _notice(where: str) -> None:
    notice = st.session_state.get("data_notice")
    if notice and notice[0] == where:
        (st.success if notice[1] else st.info)(ui.plain(notice[2]))
        st.session_state.data_notice = None


bundled_tab, upload_tab = st.tabs(["Bundled dataset", "Upload a CSV"])

with bundled_tab:
    key = st.selectbox("Dataset", list(BUNDLED), format_func=lambda k: BUNDLED[k].title, key="bundled_name")
    info = BUNDLED[key]
    st.caption(f"{info.description} Source: {info.source}; licence {info.licence}.")
    values = [str(v) for v in info.positive_values]
    positive = st.selectbox("Positive class", values, index=values.index(str(info.default_positive)),
                            key=f"bundled_positive_{key}",
                            help="For digits: the digit labelled positive; every other digit is negative.")
    scaling = st.radio("Scaling", ["none", "standard"], horizontal=True, key="bundled_scaling")
    if st.button("Add to the database", type="primary", key="bundled_add"):
        try:
            value = int(positive) if key == "digits" else positive
            _report(svc.import_bundled(key, positive=value, scaling=scaling,
                                       name=f"{key}: {positive} vs rest" if key == "digits" else None), "bundled")
        except (DataError, StorageError, ServiceError) as error:
            st.error(ui.plain(error))
    _notice("bundled")

with upload_tab:
    upload = st.file_uploader("CSV file (UTF-8, header row)", type=["csv"], key="upload")
    if upload is not None:
        data = upload.getvalue()
        preview = ui.csv_preview(svc, data)
        problem = ui.unreadable_csv(preview, upload.name)
        if problem:
            st.error(ui.plain(problem))
            st.stop()
        st.caption(f"{preview.n_rows} rows, {len(preview.header)} columns; the first {len(preview.frame)}:")
        st.dataframe(preview.frame, hide_index=True, width="stretch", height=240)
        columns = preview.header
        # Plain widgets, not a form: the fields that matter appear as the choices are made
        # (the positive value lists the label column's values; image or text fields only
        # for that display).
        with st.container(border=True):
            name = st.text_input("Name", value=upload.name.rsplit(".", 1)[0], key=f"upload_name_{upload.name}")
            label_column = st.selectbox("True-label column (optional)", ["(none)", *columns],
                                        help="Used for evaluation and simulations only, never shown "
                                             "to the labeller.")
            positive = None
            if label_column != "(none)":
                values = svc.column_values(data, label_column)
                positive = st.selectbox(
                    "Positive value of the label column", values, index=len(values) - 1 if values else None,
                    help="Items with this value are positive; every other value is negative.")
            key_column = st.selectbox("Item key column (optional)", ["(none)", *columns],
                                      help="A name or id shown with each item and kept in the exports.")
            display = st.radio("Show each item as", ["table", "image", "text"], horizontal=True,
                               format_func={"table": "a table row", "image": "an image built from the features",
                                            "text": "a text column"}.get)
            width = height = 8
            text_column = None
            if display == "image":
                w_col, h_col = st.columns(2)
                width = w_col.number_input("Image width", min_value=1, value=8)
                height = h_col.number_input("Image height", min_value=1, value=8)
            elif display == "text":
                text_column = st.selectbox("Text column", columns, index=None, placeholder="choose the column",
                                           help="Shown as plain text; not used as a feature.")
            features = st.multiselect(
                "Feature columns (empty: every other column)", columns,
                help="Empty: every column except the label, key and text columns.")
            scaling = st.radio("Scaling", ["none", "standard"], horizontal=True, key="upload_scaling")
            constant = st.radio("Constant columns", ["error", "drop"], horizontal=True,
                                format_func={"error": "refuse the file", "drop": "leave them out"}.get)
            if st.button("Import", type="primary", key="upload_import"):
                try:
                    _report(svc.import_csv(
                        data, name=name, feature_columns=features or None,
                        label_column=None if label_column == "(none)" else label_column,
                        positive=positive, display=display, image_shape=(int(width), int(height)),
                        text_column=text_column,
                        key_column=None if key_column == "(none)" else key_column,
                        scaling=scaling, constant_columns=constant, source=upload.name), "upload")
                except (DataError, StorageError, ServiceError) as error:
                    st.error(ui.plain(ui.data_error_text(error, upload.name)))
            _notice("upload")

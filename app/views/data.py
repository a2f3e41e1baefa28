"""Data: the datasets in the database; add a bundled one or upload a CSV."""

import pandas as pd
import streamlit as st

from app import auth
from app.services import EVAL_FRACTION, ServiceError
from app.services.datasets import (
    CONSTANT_CHOICES,
    INVALID_SMILES_CHOICES,
    MAX_CLASSES,
    MISSING_CHOICES,
    SCALING_CHOICES,
    SCALING_LABEL,
    label_column_guess,
)
from app.services.reading import BUNDLED, DELIMITER_NAMES, MISSING_POLICIES
from app.ui.forms import column_values, csv_preview, delete_dataset_panel, unreadable_csv
from app.ui.messages import data_error_text
from app.ui.state import service
from app.ui.text import plain, visible, visible_cells

svc = service()
st.title("Data")

datasets = svc.datasets()
st.subheader("Datasets in the database")
st.dataframe(
    pd.DataFrame(
        [
            {
                "id": d.id,
                "name": visible(d.name),
                "items": f"{d.n_items:,}",
                "features": f"{d.n_features:,}",
                "true labels": "yes" if d.has_true_labels else "no",
                "shown as": d.display_kind + (f" {d.image_shape[0]}×{d.image_shape[1]}" if d.image_shape else ""),
                "held out for evaluation": f"{d.meta.get('eval_fraction', EVAL_FRACTION):.0%}"
                if d.has_true_labels
                else "–",
                "source": d.source and visible(d.source),
            }
            for d in datasets
        ]
    ),
    hide_index=True,
    width="stretch",
    key="datasets_table",
)
st.caption(
    "True labels are used only to draw the evaluation ROC curve and for simulations on the "
    "Compare page; they are never shown while labelling. No item is held out of a labelling session "
    "unless an evaluation share is set here (or asked for in New session): those items draw that curve "
    "and cannot be labelled."
)
with st.expander("Advanced: how the model reads each dataset"):
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "id": d.id,
                    "name": visible(d.name),
                    "scaling": d.meta.get("scaling", "none"),
                    "kernel": d.meta.get("default_kernel", "rbf"),
                    "features stored": "sparse" if d.meta.get("feature_format") == "csr" else "dense",
                }
                for d in datasets
            ]
        ),
        hide_index=True,
        width="stretch",
        key="datasets_model_table",
    )
labelled = [d for d in datasets if d.has_true_labels]
if labelled:
    with st.expander("Evaluation share of a dataset"):
        chosen = st.selectbox(
            "Dataset",
            [d.id for d in labelled],
            key="eval_dataset",
            format_func={d.id: visible(f"{d.name} ({d.n_items:,} items)") for d in labelled}.get,
        )
        current = next(d for d in labelled if d.id == chosen).meta.get("eval_fraction", EVAL_FRACTION)
        share = st.number_input(
            "Held out for evaluation (share of the items; 0: every item is in the pool)",
            min_value=0.0,
            max_value=0.9,
            value=float(current),
            step=0.05,
            format="%.2f",
            key=f"eval_share_{chosen}",
        )
        if st.button("Save", key="eval_save"):
            try:
                svc.set_eval_fraction(chosen, share, by=auth.identity())
                st.rerun()
            except ServiceError as error:
                st.error(plain(error))
        st.caption(
            "Sessions started after the change use it; the New session form on the Label page can "
            "choose another share for one session."
        )
if datasets:
    delete_dataset_panel(svc, datasets, by=auth.identity())


def _report(result, where: str) -> None:
    """Say what the import did; after a new import draw the page again so the table above lists it."""
    st.session_state.data_notice = (where, result.created, result.message)
    if result.created:
        st.rerun()
    _notice(where)


def _notice(where: str) -> None:
    notice = st.session_state.get("data_notice")
    if notice and notice[0] == where:
        (st.success if notice[1] else st.info)(plain(notice[2]))
        st.session_state.data_notice = None


bundled_tab, upload_tab = st.tabs(["Bundled dataset", "Upload a CSV"])

with bundled_tab:
    key = st.selectbox("Dataset", list(BUNDLED), format_func=lambda k: BUNDLED[k].title, key="bundled_name")
    info = BUNDLED[key]
    st.caption(f"{info.description} Source: {info.source}; licence {info.licence}.")
    values = [str(v) for v in info.positive_values]
    positive = st.selectbox(
        "Positive class",
        values,
        index=values.index(str(info.default_positive)),
        key=f"bundled_positive_{key}",
        help="For digits: the digit labelled positive; every other digit is negative.",
    )
    scaling = st.radio(
        SCALING_LABEL,
        ["standard", "none"],
        horizontal=True,
        key="bundled_scaling",
        format_func=SCALING_CHOICES.get,
        help="On one scale: every feature shifted and stretched to a mean of 0 and a spread of 1, from the data "
        "itself (no labels), so that no feature outweighs the others by its unit alone.",
    )
    if st.button("Add to the database", type="primary", key="bundled_add"):
        try:
            value = int(positive) if key == "digits" else positive
            _report(
                svc.import_bundled(
                    key,
                    positive=value,
                    scaling=scaling,
                    name=f"{key}: {positive} vs rest" if key == "digits" else None,
                    by=auth.identity(),
                ),
                "bundled",
            )
        except ServiceError as error:
            st.error(plain(error))
    _notice("bundled")

SEP_CHOICES = ["auto", ",", ";", "\t", "|"]


def _sep_name(value: str, detected: str) -> str:
    if value == "auto":
        return f"detected: {DELIMITER_NAMES.get(detected, detected)}"
    return DELIMITER_NAMES[value]


with upload_tab:
    upload = st.file_uploader("CSV file (UTF-8, header row)", type=["csv"], key="upload")
    if upload is not None:
        data = upload.getvalue()
        try:
            detected = csv_preview(svc, data)
        except ServiceError as error:  # too wide or too large to read at all: nothing of it was parsed
            st.error(plain(data_error_text(error, upload.name)))
            st.stop()
        problem = unreadable_csv(detected, upload.name)
        if problem:
            st.error(plain(problem))
            st.stop()
        sep_col, dec_col = st.columns(2)
        sep = sep_col.selectbox(
            "Delimiter",
            SEP_CHOICES,
            key=f"upload_sep_{upload.name}",
            format_func=lambda v: _sep_name(v, detected.detected_sep),
        )
        decimal = dec_col.selectbox(
            "Decimal separator",
            ["auto", ".", ","],
            key=f"upload_decimal_{upload.name}",
            format_func=lambda v: f"detected: '{detected.detected_decimal}'" if v == "auto" else f"'{v}'",
        )
        preview = detected if (sep, decimal) == ("auto", "auto") else csv_preview(svc, data, sep, decimal)
        st.caption(
            f"{preview.n_rows} rows, {len(preview.header)} columns, separated by "
            f"{DELIMITER_NAMES.get(preview.sep, preview.sep)}s, decimal separator '{preview.decimal}'; "
            f"the first {len(preview.frame)}:"
        )
        st.dataframe(visible_cells(preview.frame), hide_index=True, width="stretch", height=240)
        single = preview.one_column_note(upload.name)
        if single:
            st.info(plain(single))
        if preview.missing:
            st.warning(
                plain(
                    "Missing values: "
                    + ", ".join(f"'{c}' {k}" for c, k in preview.missing.items())
                    + ". Choose below whether to refuse the file, leave those rows out or fill the "
                    "gaps in."
                )
            )
        columns = preview.header
        answers = preview.label_like()  # named like the answer: the label column, never a suggested feature
        guess = label_column_guess(columns)
        text_like, categories, smiles_like = preview.of("text"), preview.of("category"), preview.of("smiles")
        # Plain widgets, not a form: the fields that matter appear as the choices are made
        # (the positive value lists the label column's values; image or text fields only
        # for that display).
        with st.container(border=True):
            name = st.text_input("Name", value=upload.name.rsplit(".", 1)[0], key=f"upload_name_{upload.name}")
            label_column = st.selectbox(
                "True-label column (optional)",
                ["(none)", *columns],
                index=1 + columns.index(guess) if guess else 0,
                help="Used for evaluation and simulations only, never shown to the labeller.",
            )
            positive = None
            eval_fraction = None
            keep_classes = False
            if label_column != "(none)":
                values = column_values(svc, data, label_column, preview.sep)
                keep_classes = len(values) > 2 and st.checkbox(
                    f"Keep every value as a class ({len(values)} values)",
                    # (3 to 9 values: the classes themselves, by default; one of them against the rest on request)
                    value=len(values) <= MAX_CLASSES,
                    key="upload_keep_classes",
                    help="For 3 to 9 values: sessions on this dataset answer each item with one of them (a "
                    "button per class) instead of Positive / Negative.",
                )
            if label_column != "(none)" and not keep_classes:
                positive = st.selectbox(
                    "Positive value of the label column",
                    values,
                    index=len(values) - 1 if values else None,
                    help="Items with this value are positive; every other value is negative (one against "
                    "the rest when the column has more than two values).",
                )
                eval_fraction = st.number_input(
                    "Held out for evaluation (share of the items; 0: every item is in the pool)",
                    min_value=0.0,
                    max_value=0.9,
                    value=EVAL_FRACTION,
                    step=0.05,
                    format="%.2f",
                    key="upload_eval_fraction",
                    help="These items draw the live ROC curve and are never asked about.",
                )
            key_column = st.selectbox(
                "Item key column (optional)",
                ["(none)", *columns],
                help="A name or id shown with each item and kept in the exports.",
            )
            others = [c for c in columns if c not in (label_column, key_column)]
            text_features = st.multiselect(
                "Documents: free-text features (words and word pairs)",
                others,
                default=[c for c in text_like if c in others and c not in answers],
                key=f"upload_text_{upload.name}",
                help="Documents: titles, abstracts, log lines. Each text's words and word pairs become its "
                "features, a word frequent in it but rare in the others weighing more (TF-IDF). Kept sparse; the "
                "item is shown as its text.",
            )
            smiles_column = st.selectbox(
                "Molecules: SMILES column (optional)",
                ["(none)", *others],
                index=1 + others.index(smiles_like[0]) if smiles_like and smiles_like[0] in others else 0,
                key=f"upload_smiles_{upload.name}",
                help="Molecules written as SMILES: each molecule's small substructures become its features "
                "(Morgan fingerprints); the item is drawn with RDKit.",
            )
            smiles_column = None if smiles_column == "(none)" else smiles_column
            text_analyzer, text_svd, text_blocks = "word", 0, False
            radius, bits, invalid_smiles = 2, 2048, "error"
            if text_features:
                t1, t2 = st.columns(2)
                text_analyzer = t1.radio(
                    "Terms",
                    ["word", "char"],
                    horizontal=True,
                    key="upload_analyzer",
                    format_func={"word": "words and word pairs", "char": "character 2–5-grams (URLs, identifiers)"}.get,
                )
                text_svd = t2.number_input(
                    "Compress the terms (0: keep every term)",
                    min_value=0,
                    value=0,
                    step=50,
                    key="upload_svd",
                    help="A number of columns: the terms summed up in that many (a compressed summary, dense; SVD "
                    "components). 0 keeps every term as its own sparse column.",
                )
                if len(text_features) > 1:
                    text_blocks = st.checkbox(
                        "Keep the text columns apart",
                        value=False,
                        key="upload_text_blocks",
                        help="By default each row's texts are read as one document (a title, then its abstract), "
                        "with one vocabulary. Apart: a word in the title and the same word in the abstract "
                        "are two different terms.",
                    )
            if smiles_column:
                m1, m2, m3 = st.columns(3)
                radius = m1.number_input("Fingerprint radius", min_value=0, max_value=6, value=2, key="upload_radius")
                bits = m2.number_input(
                    "Fingerprint bits", min_value=64, max_value=16384, value=2048, step=64, key="upload_bits"
                )
                invalid_smiles = m3.radio(
                    "Invalid SMILES",
                    ["error", "drop"],
                    horizontal=True,
                    key="upload_invalid_smiles",
                    format_func=INVALID_SMILES_CHOICES.get,
                )
            special = {label_column, key_column, smiles_column, *text_features}
            one_hot_candidates = [c for c in categories if c not in special]
            one_hot = []
            if one_hot_candidates:  # (one named like an answer is never in the hint: only chosen on purpose)
                one_hot = st.multiselect(
                    "One-hot encode (columns holding a few text values)",
                    one_hot_candidates,
                    default=[],
                    key=f"upload_onehot_{upload.name}",
                    help="Each value becomes a 0/1 feature. Not chosen: the column must be left out of the features.",
                )
                hinted = [c for c in preview.columns if c.name in one_hot_candidates and c.name not in answers]
                if hinted:
                    st.caption(
                        plain(
                            "Text-valued columns: "
                            + ", ".join(f"'{c.name}' ({c.distinct} values)" for c in hinted)
                            + " — encode them one-hot here, or leave them out of the feature columns."
                        )
                    )
            display = st.radio(
                "Show each item as",
                ["table", "image", "text"],
                horizontal=True,
                index=2 if text_features or smiles_column else 0,
                format_func={
                    "table": "a table row",
                    "image": "an image built from the features",
                    "text": "a text (documents; molecules are drawn)",
                }.get,
            )
            width = height = 8
            text_column = None
            if display == "image":
                w_col, h_col = st.columns(2)
                width = w_col.number_input("Image width", min_value=1, value=8)
                height = h_col.number_input("Image height", min_value=1, value=8)
            elif display == "text" and not (text_features or smiles_column):
                text_column = st.selectbox(
                    "Text column",
                    columns,
                    index=None,
                    placeholder="choose the column",
                    help="Shown as plain text; not used as a feature.",
                )
            numeric_default = "every other numeric column" if not (text_features or smiles_column) else "none"
            features = st.multiselect(
                f"Numeric feature columns (empty: {numeric_default})",
                [c for c in columns if c not in special],
                help="Empty: every column except the label, key and text columns and those named like an answer "
                "(none when text or SMILES columns are the features).",
            )
            if not features and not (text_features or smiles_column) and set(answers) - special:
                features = [c for c in columns if c not in special and c not in answers]
            c1, c2, c3 = st.columns(3)
            missing = c1.radio(
                "Missing values",
                list(MISSING_POLICIES),
                horizontal=True,
                key="upload_missing",
                format_func=MISSING_CHOICES.get,
            )
            scaling = c2.radio(
                SCALING_LABEL,
                ["standard", "none"],
                horizontal=True,
                key="upload_scaling",
                format_func=SCALING_CHOICES.get,
                help="On one scale: every numeric column shifted and stretched to a mean of 0 and a spread of 1, "
                "from the data itself (no labels), so that no column outweighs the others by its unit alone; "
                "text and fingerprint features are never shifted.",
            )
            constant = c3.radio(
                "Constant columns", ["drop", "error"], horizontal=True, format_func=CONSTANT_CHOICES.get
            )
            if st.button("Import", type="primary", key="upload_import"):
                try:
                    with st.spinner("Checking and importing…"):
                        result = svc.import_csv(
                            data,
                            name=name,
                            feature_columns=features or None,
                            label_column=None if label_column == "(none)" else label_column,
                            positive=positive,
                            display="table"
                            if display == "text" and text_column is None and (text_features or smiles_column)
                            else display,
                            image_shape=(int(width), int(height)),
                            text_column=text_column,
                            key_column=None if key_column == "(none)" else key_column,
                            scaling=scaling,
                            constant_columns=constant,
                            source=upload.name,
                            sep=sep,
                            decimal=decimal,
                            missing=missing,
                            one_hot=one_hot,
                            text_features=text_features,
                            text_analyzer=text_analyzer,
                            text_svd=int(text_svd) or None,
                            text_blocks=text_blocks,
                            smiles_column=smiles_column,
                            fingerprint_radius=int(radius),
                            fingerprint_bits=int(bits),
                            invalid_smiles=invalid_smiles,
                            eval_fraction=eval_fraction,
                            keep_classes=keep_classes,
                            by=auth.identity(),
                        )
                    _report(result, "upload")
                except ServiceError as error:
                    st.error(plain(data_error_text(error, upload.name)))
            _notice("upload")

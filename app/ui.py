"""Streamlit helpers shared by the pages: the service singleton, session defaults, item display.

The engine lives inside one ``MarginLab`` service per process and database URL
(``st.cache_resource``); database sessions are never cached or kept in
``st.session_state``: every repository call opens and closes its own.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from app import navigation
from app.services import LabellingRun, MarginLab, ServiceError, startup
from app.services.accounts import Identity
from app.services.common import BASELINE, EXACT_SOLVERS, gamma_value
from app.services.comparisons import with_decimals
from app.services.database import database_problem
from app.services.display import ItemDisplay
from core.formatting import count, signed
from storage.engine import database_url
from storage.errors import StorageError

logger = logging.getLogger(__name__)

DEFAULTS = {
    "session_id": None,  # the labelling session shown on the Label page
    "annotator": "",
    "outcome": None,  # the last Positive/Negative/Skip/Undo outcome
    "comparison_id": None,
    "start_error": None,
    "all_annotators": False,  # the session lists show every annotator's sessions, not only the current one's
}


@st.cache_resource(show_spinner="Opening the database…")
def _service_for(url: str) -> MarginLab:
    # opened while the server started (app.serve), or now
    return startup.take_prepared(url) or startup.open_service(url)


#: ASCII punctuation: CommonMark lets a backslash make any of these a literal character
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
#: where Streamlit's Markdown finds links, emoji and icons in text whose escapes are already
#: resolved (GFM autolinks ``http://``, ``www.``, ``a@b.c``; ``:smile:``, ``:material/home:``)
_SHORTCUTS = re.compile(r"(?<=[:@])(?=\S)|(?<=www)(?=\.)", re.IGNORECASE)
#: U+2060 WORD JOINER: invisible, and breaks those patterns
WORD_JOINER = "\u2060"


#: characters that reorder the text around them (bidirectional embeddings, overrides and isolates: U+202A-E,
#: U+2066-9): a name holding U+202E shows backwards and can pass for another ("Trojan Source")
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def visible(text: object) -> str:
    """``text`` with every bidirectional control character written out as its code point (``[U+202E]``), for
    elements that show text as it is (options of a select box, table cells, ``st.text``)."""
    return _BIDI_CONTROLS.sub(lambda found: f"[U+{ord(found.group()):04X}]", str(text))


def visible_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell through ``visible`` (a table shows its cells as they are, so a key or a
    column name from the user's file could otherwise turn the text around it)."""
    shown = frame.rename(columns=lambda name: visible(name) if isinstance(name, str) else name)
    for column in shown.columns:
        if not pd.api.types.is_numeric_dtype(shown[column]) and not pd.api.types.is_datetime64_any_dtype(shown[column]):
            shown[column] = shown[column].map(lambda cell: visible(cell) if isinstance(cell, str) else cell)
    return shown


def plain(text: object) -> str:
    """``text`` shown as it is by an element that renders Markdown (``st.error``, ``st.caption``,
    ``st.markdown``, ...): no link, image, emphasis, code, HTML, math, directive, emoji or icon can
    come out of it.

    Every user-controlled string (file, column and dataset names, item keys and text,
    annotator names, messages that quote them) goes through this before such an element.
    Every ASCII punctuation character is backslash-escaped; autolinks, emoji and icons are
    found after escapes are resolved, so an invisible word joiner follows each ``:`` and ``@``
    that something follows, and separates ``www`` from a following ``.``.  Characters that reorder
    text are written out as their code (:func:`visible`).
    """
    return _PUNCTUATION.sub(r"\\\1", _SHORTCUTS.sub(WORD_JOINER, visible(text)))


def service() -> MarginLab:
    """The process's service for ``$MARGINLAB_DATABASE_URL`` (default: SQLite in the data folder).

    A database that cannot be used (another program's file, a damaged one, a newer schema)
    gets a page that says so, and the page stops there.
    """
    try:
        return _service_for(database_url())
    except (ServiceError, StorageError, SQLAlchemyError) as error:
        logger.error("the database cannot be used", exc_info=error)
        database_failed(error)
        st.stop()


def process_service() -> MarginLab:
    """The same service as ``service``, for code outside a page run (the server's guard): errors raise."""
    return _service_for(database_url())


def database_failed(error: Exception, *, where: str = "page") -> None:
    """Say that the database cannot be opened or used (no traceback, no server path), with a way on: try
    again (once the server is back, the disk has room) or, from the menu, another page."""
    st.error(plain(database_problem(error)))
    st.button("Try again", key=f"try_again_{where}", icon=":material/refresh:")


#: what a page says in its own words rather than in Streamlit's error box: the database failed (a server
#: restarting, a full disk, a damaged page) or refused, or the service refused
PAGE_ERRORS = (ServiceError, StorageError, SQLAlchemyError)
#: the session-state key of a failure met by a button's callback, said on the next run of the page
FAILURE_KEY = "page_failure"


@contextlib.contextmanager
def failures_said(where: str) -> Iterator[None]:
    """Run a page, or a part of one (a fragment), saying a failure of the database in the app's words
    (``database_failed``) instead of Streamlit's generic error box; the server's log keeps the traceback."""
    try:
        yield
    except PAGE_ERRORS as error:
        logger.error("%s: the database failed", where, exc_info=error)
        database_failed(error, where=where)


def page_part(where: str) -> Callable[[Callable], Callable]:
    """A part of a page run on its own (a fragment) that says a callback's failure (``show_failure``) and its
    own (``failures_said``) itself: a fragment's rerun runs neither the page nor ``app/main.py``."""
    def wrap(part: Callable) -> Callable:
        @functools.wraps(part)
        def run(*args, **kwargs):
            show_failure()
            with failures_said(where):
                part(*args, **kwargs)
        return run
    return wrap


def guarded(callback: Callable) -> Callable:
    """A button's callback whose failure (as ``failures_said``) is kept to be said by ``show_failure`` on
    the page's next run, instead of Streamlit's error box."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except PAGE_ERRORS as error:
            logger.error("%s: the database failed", callback.__name__, exc_info=error)
            st.session_state[FAILURE_KEY] = database_problem(error)
    return run


def show_failure() -> None:
    """Say the failure a callback met (``guarded``), once."""
    failure = st.session_state.pop(FAILURE_KEY, None)
    if failure:
        st.error(plain(failure))


#: smallest C the New session form accepts (any positive C is a valid SVM; the solvers take 1e-6 and 1e6)
C_MIN = 1e-12


def parse_gamma(text: str) -> float | str:
    """The gamma field of the New session form: ``scale``, ``auto`` or a positive number.

    Raises ``ValueError`` with a message for the person who typed it.
    """
    value = str(text).strip()
    try:
        return gamma_value(value or "scale")
    except ServiceError:
        raise ValueError(f"gamma must be 'scale' or a positive number such as 0.01, not '{value}'.") from None


#: seconds the Label panel waits after the item's elements before it builds the charts: the browser
#: draws the item (a pass of 40-60 ms on a slow 2-core machine) before the charts arrive and Plotly's
#: drawing, 30-80 ms a chart there, holds up its next frame (30 ms was too short there: an image
#: item's next frame then waited behind the charts)
ITEM_FIRST_PAUSE_S = 0.06
#: the same, the first time a browser session shows the panel.  The page then has none of its elements'
#: code yet: the browser fetches each kind's code when it first arrives (a placeholder shows meanwhile),
#: and Plotly's, 4.7 MB, holds the page for 1.2-1.6 s while it is evaluated on a slow 2-core machine.
#: Charts sent 0.06 s after the item had a table item's grid and the answer buttons wait behind it
#: (sign-in click to the whole item 1.5-3.2 s, 100k-item session); sent 1 s after, the grid's and the
#: buttons' code has arrived and the item is drawn first (0.9-1.3 s).  0.5 s was not enough there.
FIRST_VIEW_PAUSE_S = 1.0


def pause_before_charts(state) -> float:
    """Seconds the Label panel waits, after writing the item, before it builds the charts:
    ``FIRST_VIEW_PAUSE_S`` the first time in a browser session (``state``: its session state, which
    is marked), ``ITEM_FIRST_PAUSE_S`` after that."""
    first_view = not state.get("label_charts_sent", False)
    state["label_charts_sent"] = True
    return FIRST_VIEW_PAUSE_S if first_view else ITEM_FIRST_PAUSE_S


def why_chosen(shown) -> str:
    """One line under the item: which heuristic asked, its score, and its reason."""
    score = "not scored yet" if shown.score is None else f"f(x) = {signed(shown.score)}"
    reason = str(shown.reason or "").strip()
    return f"Chosen by **{plain(shown.strategy)}** · {plain(score)}" + (f" · {plain(reason)}" if reason else "")


def live_roc(run: LabellingRun):
    """The live ROC curve, or None until both a positive and a negative label are in.

    Before that the model has not seen both classes, and the curve (a diagonal
    of a constant score, or the trace of a one-class model) says nothing.
    """
    if run.n_positive == 0 or run.n_positive == run.n_labels:
        return None
    return run.roc()


def data_error_text(error: Exception, filename: str | None) -> str:
    """A data error message naming the uploaded file (the loader only sees bytes and says 'data')."""
    text = str(error)
    if filename and text.startswith("data: "):
        return f"{filename}: {text[len('data: '):]}"
    return text


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


def runs_without_the_heuristic(rows: pd.DataFrame) -> str | None:
    """A notice naming the runs (heuristic, seed) in which every label was a cold-start draw, so the
    heuristic never chose an item (the budget ran out before both classes were found), or None."""
    if rows is None or rows.empty or "cold_start" not in rows:
        return None
    chosen = rows[rows["strategy"] != BASELINE]  # (its heuristic is the cold start's random draw)
    if chosen.empty:
        return None
    runs = chosen.groupby(["strategy", "seed"])["cold_start"].all()
    idle = [f"{strategy} (seed {seed})" for (strategy, seed), all_cold in runs.items() if all_cold]
    if not idle:
        return None
    shown = ", ".join(idle[:6]) + (f" and {len(idle) - 6} more" if len(idle) > 6 else "")
    return (f"In {len(idle)} of {len(runs)} runs every label was drawn at random by the cold start: {shown}. "
            "The budget ran out before both classes were found, so the heuristic never chose an item and its "
            "curves there are those of random draws. A larger budget (or a dataset with more positives) lets "
            "it act.")


SUMMARY_NOTE = ("ALC: area under the test-AUC learning curve, normalised (0 = chance, 1 = the full-data AUC from "
                "the first label); mean ± std over seeds. \"To 95 %\": labels until the test AUC first reached "
                "95 % of the full-data AUC (mean over the seeds that did; how many did). W/T/L: seeds on which "
                "the heuristic's ALC beat, tied or lost to random.")


def comparison_problem(budget: int, initial: int) -> str | None:
    """Why a comparison with these counts would compare nothing, or None."""
    if initial >= budget:
        return (f"The {initial} initial labels use the whole budget of {budget}: every label would be "
                "drawn at random and the heuristics would never choose an item. Lower the initial labels "
                "or raise the budget.")
    return None


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(value) else value


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The comparison summary with readable headers and cells (no raw None / NaN)."""
    if summary is None or summary.empty:
        return pd.DataFrame()

    def pm(mean, std) -> str:
        mean, std = _number(mean), _number(std)
        return "–" if mean is None else f"{mean:.3f} ± {std or 0.0:.3f}"

    def reach(labels, reached, seeds) -> str:
        labels, reached = _number(labels), int(_number(reached) or 0)
        return "never" if labels is None or reached == 0 else f"{labels:.0f} ({reached}/{int(seeds)} seeds)"

    def pair(a, b) -> str:
        a, b = _number(a), _number(b)
        return "–" if a is None else f"{a:.2f} / {b:.2f}"

    def wtl(r) -> str:
        w, t, lo = _number(r.get("wins")), _number(r.get("ties")), _number(r.get("losses"))
        return "baseline" if w is None else f"{w:.0f} / {t or 0:.0f} / {lo or 0:.0f}"

    rows = []
    against_random = BASELINE in set(summary["strategy"]) if "strategy" in summary else False
    for r in summary.to_dict(orient="records"):
        seeds = _number(r.get("n_seeds")) or 0
        rows.append({
            "heuristic": r.get("strategy"), "solver": r.get("solver"),
            "ALC": pm(r.get("alc_mean"), r.get("alc_std")),
            **({"vs random W / T / L": wtl(r)} if against_random else {}),
            # how soon the positives were found (what a reviewer asks), on screen without scrolling sideways
            **({f"to {level} % recall": reach(r.get(f"labels_recall_{level}"), r.get(f"reached_recall_{level}"),
                                              seeds) for level in (50, 80, 95)}
               | {"WSS@95": _number(r.get("wss_95"))} if "labels_recall_50" in r else {}),
            "seeds": int(seeds),
            "ALC (log2 labels)": pm(r.get("alc_log2_mean"), r.get("alc_log2_std")),
            "to 95 %": reach(r.get("labels_95"), r.get("reached_95"), seeds),
            "to 99 %": reach(r.get("labels_99"), r.get("reached_99"), seeds),
            "final AUC": _number(r.get("final_auc")), "full-data AUC": _number(r.get("reference_auc")),
            "support vectors": _number(r.get("final_n_sv")),
            "update ms p50 / p95": pair(r.get("update_ms_median"), r.get("update_ms_p95")),
            "query ms p50 / p95": pair(r.get("query_ms_median"), r.get("query_ms_p95")),
        })
    # numbers to a fixed number of decimals, "–" where missing: the table never shows None or NaN
    return with_decimals(pd.DataFrame(rows), {"final AUC": 3, "full-data AUC": 3, "WSS@95": 3, "support vectors": 1})


def session_label(sessions) -> dict[int, str]:
    """How a session is named in the lists: number, name (if any), dataset, heuristic / solver, annotator."""
    return {s.id: visible(f"#{s.id} · " + (f"{s.name} · " if s.name else "") +
                          f"{s.dataset_name} · {s.strategy} / {s.solver} · {s.annotator}") for s in sessions}


def annotator_filter(sessions, *, key: str = "all_annotators") -> list:
    """The sessions of the current annotator (and the one shown), or all of them when the toggle says so.

    The current annotator is the one who started a session in this browser tab, else the annotator of the
    session shown. The toggle appears when more than one annotator has sessions.
    """
    state = st.session_state
    by_id = {s.id: s for s in sessions}
    if not state.annotator and state.session_id in by_id:
        state.annotator = by_id[state.session_id].annotator
    if len({s.annotator for s in sessions}) > 1 or state.get(key):
        st.toggle("All annotators", key=key,
                  help=f"Off: the sessions of {plain(state.annotator) or 'the current annotator'} only.")
    return [s for s in sessions if state.get(key) or not state.annotator or s.annotator == state.annotator
            or s.id == state.session_id]


def show_session(session_id: int | None) -> None:
    """Make ``session_id`` the session the Label and History pages show, and name it in the address."""
    st.session_state.session_id = session_id
    st.session_state.outcome = None
    navigation.put_session_in_address(session_id)


def follow_address(sessions, *, missing: str = "is not open for labelling (it is closed, or not in this "
                                                "database)") -> None:
    """Open the session the address names (``?session=N``: a bookmark or a link), if it is among ``sessions``;
    otherwise say that it ``missing``."""
    asked = navigation.session_in_address()
    if asked is None or asked == st.session_state.session_id:
        return
    found = next((s for s in sessions if s.id == asked), None)
    if found is None:
        st.warning(plain(f"Session {asked} {missing}; the Sessions page lists every session and can reopen a "
                         "closed one."))
        return
    st.session_state.session_id = asked
    st.session_state.outcome = None
    if not st.session_state.annotator:
        st.session_state.annotator = found.annotator


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
        dataset_id = st.selectbox("Dataset to delete", list(names), index=None, format_func=names.get,
                                  placeholder="choose a dataset", key="delete_dataset_id")
        if dataset_id is None:
            return
        contents = svc.dataset_contents(dataset_id)
        st.warning(plain(f"Deleting '{contents.name}' removes {describe_contents(contents)}; the sessions' label "
                         "histories and model snapshots go with them. This cannot be undone; a copy of the "
                         "database is the backup."))
        typed = st.text_input("Type the dataset's name to confirm", key=f"delete_confirm_{dataset_id}",
                              placeholder=contents.name)
        if st.button("Delete the dataset", type="primary", key=f"delete_{dataset_id}",
                     disabled=typed.strip() != contents.name.strip()):
            try:
                outcome = svc.delete_dataset(dataset_id, confirm_name=typed, by=by)
            except (ServiceError, StorageError) as error:
                st.error(plain(error))
                return
            st.session_state.delete_notice = outcome.message
            st.session_state.pop("delete_dataset_id", None)
            st.rerun()


def correction_note(solver: str) -> str:
    """How a change of an earlier answer reaches the model, for the History page."""
    if solver in EXACT_SOLVERS:
        return (f"{solver}: the model unlearns the answer and learns the new one, exactly as if it had been given "
                "from the start.")
    return (f"{solver}: the model is rebuilt from every answer in order, with the new one in its place (the same "
            "model as had it been given from the start).")


def history_summary(table: pd.DataFrame, solver: str) -> str:
    current = table[table["status"] == "current"]
    labels = int((current["answer"] != "skipped").sum())
    changed = int((current["changes"].str.len() > 0).sum())
    removed = int((table["status"] == "removed").sum())
    return (f"{count(labels, 'label')} and {count(len(current) - labels, 'skip')} as they stand · {changed} changed · "
            f"{removed} removed · solver {plain(solver)}")


def history_choices(current: pd.DataFrame) -> dict[int, str]:
    """label id -> "#12 · item 1204 (key) · positive · 14:03:11 · 20 labels ago", newest first (the newest
    "latest", an answer with none after it "no label since")."""
    is_label = (current["answer"] != "skipped").to_numpy()
    after = is_label[::-1].cumsum()[::-1] - is_label  # labels given after each answer
    choices = {}
    for (_, row), ago in zip(current.iloc[::-1].iterrows(), after[::-1], strict=True):
        key = f" ({row['key']})" if row["key"] else ""
        when = row["when"].strftime("%H:%M:%S")
        choices[int(row["label_id"])] = visible(f"#{row['#']:.0f} · item {row['item']}{key} · {row['answer']} · "
                                                f"{when} · {_since(ago, newest=not choices)}")
    return choices


def _since(labels_after: int, newest: bool) -> str:
    if newest:
        return "latest"
    if labels_after == 0:
        return "no label since"  # only skips came after it
    return f"{labels_after} label{'s' if labels_after != 1 else ''} ago"


def score_cells(table: pd.DataFrame) -> pd.Series:
    """The "score when asked" column as a person reads it: the model's f(x) with its sign ("+0.412",
    never "-0.000"), "cold start" while the model could not score yet (a model of one class has no
    boundary: whatever it said then means nothing), "–" where no score was kept
    (answers imported from a file)."""
    cold = table["heuristic"].astype(str).str.contains("cold start", regex=False)
    return pd.Series(["cold start" if is_cold else "–" if value is None or pd.isna(value) else signed(value)
                      for value, is_cold in zip(table["score when asked"], cold, strict=True)],
                     index=table.index, dtype=object)


def table_height(rows: int, most: int = 420) -> int:
    """Pixels for a table of ``rows`` rows (and its header) without empty rows below, at most ``most``."""
    return min(38 + 35 * max(rows, 1), most)


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


@contextlib.contextmanager
def waiting_for_the_model():
    """Around an answer that the model learns (a button's callback): while a first start compiles what
    labelling needs, a spinner with the seconds spent says why the next item has not come yet (the
    page itself is greyed out until the answer returns)."""
    if not startup.compiled_code_progress().preparing_first_labels:
        yield
        return
    with st.spinner("Preparing the model for this computer (first start only): your answer is saved, the next "
                    "item follows when the model is ready…", show_time=True):
        yield


def preparing_model_notice() -> None:
    """On a first start, while the background compile has not yet prepared what labelling needs, say
    so above the item: a label given meanwhile is saved at once and the next item waits for it."""
    progress = startup.compiled_code_progress()
    if not progress.preparing_first_labels:
        return
    with st.container(key="preparing_model"):
        st.info(f"Preparing the model for this computer (first start only): {progress.ready_for_labelling} of "
                f"{progress.for_labelling} parts ready. A label given now is saved at once; the next item "
                "follows when the model is ready (a minute or two).", icon=":material/hourglass_top:")
        st.progress(progress.ready_for_labelling / progress.for_labelling)


def show_outcome() -> None:
    outcome = st.session_state.get("outcome")
    if outcome is None:
        return
    if outcome.ok and outcome.kind == "info":
        st.caption(plain(outcome.message))
    elif outcome.kind == "error":
        st.error(plain(outcome.message))
    else:
        st.warning(plain(outcome.message))


def pixel_svg(pixels: np.ndarray, cell: int = 20) -> str:
    """A grey image in [0, 1] (ink high) as an SVG of crisp ``cell``-pixel squares, dark ink on white.

    ``st.image`` puts an SVG into the page itself (a data URL) where a PNG becomes a file the browser
    fetches after the item has arrived, from a server then busy with the charts: the item would be on
    screen without its picture for a while."""
    ink = np.clip(np.nan_to_num(np.asarray(pixels, dtype=float)), 0.0, 1.0)
    h, w = ink.shape
    grey = np.rint(255 * (1.0 - ink)).astype(int)
    cells = "".join(f'<rect x="{x}" y="{y}" width="1" height="1" fill="#{v:02x}{v:02x}{v:02x}"/>'
                    for (y, x), v in np.ndenumerate(grey) if v < 255)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w * cell}" '
            f'height="{h * cell}" shape-rendering="crispEdges"><rect width="{w}" height="{h}" fill="#fff"/>'
            f"{cells}</svg>")


#: pictures up to this many pixels (64 x 64) go into the page as an SVG, one square per pixel; larger
#: ones as a PNG (an SVG of 10,000 squares is about 0.6 MB per item, the PNG a few kB)
SVG_PIXELS = 4096


def item_picture(pixels: np.ndarray) -> tuple[str | np.ndarray, int]:
    """An item's grey image in [0, 1] (ink high) as ``st.image`` takes it, enlarged to about 192 pixels
    a side, and its width on screen."""
    h, w = pixels.shape
    cell = max(4, 192 // max(h, w))
    if h * w <= SVG_PIXELS:
        return pixel_svg(pixels, cell), w * cell
    return np.kron(1.0 - np.nan_to_num(np.asarray(pixels, dtype=float)), np.ones((cell, cell))), w * cell


#: a document taller than this (pixels) scrolls inside its box: nothing is cut off
DOCUMENT_HEIGHT = 360
_WORD = re.compile(r"\w\w+")


#: a term is highlighted when it moved the score by at least this share of the largest move in the item
NOTABLE_SHARE = 0.02


def notable_terms(contributions: list[tuple[str, float]] | None) -> list[tuple[str, float]] | None:
    """The terms worth highlighting: those that moved the item's score by at least ``NOTABLE_SHARE`` of
    the largest move (common words with weights near zero, shown as "-0.000", are left plain)."""
    if not contributions:
        return contributions
    largest = max(abs(v) for _, v in contributions)
    return [(t, v) for t, v in contributions if abs(v) >= NOTABLE_SHARE * largest]


#: highlighted document terms: the page's text colour on green (they pushed the score up) or on red (down).
#: Each background stands at least 3:1 against the page's (#ffffff, app/.streamlit/config.toml: 3.25:1
#: and 3.42:1, WCAG contrast), so a highlight can be seen, and the words at least 4.5:1 on it (5.0:1 and
#: 4.8:1), so they can be read.  (Streamlit's :green-background[...] and :red-background[...] are 1.06:1
#: and 1.10:1 on the light theme: nearly white.)
TERM_COLOURS = {"up": ("#1a202c", "#38a169"), "down": ("#1a202c", "#f0564f")}


def highlighted_markdown(text: str, contributions: list[tuple[str, float]] | None) -> str:
    """The document as Markdown that shows it as plain text, with the words of the terms that pushed
    its score up on green and down on red (``TERM_COLOURS``, Streamlit's color directive).

    Every character of the document goes through :func:`plain`, so nothing in it can become
    Markdown, HTML or a directive; the directives around highlighted words are MarginLab's own.
    """
    up: set[str] = set()
    down: set[str] = set()
    for term, value in contributions or []:
        words = term.split(":", 1)[-1].split() if ":" in term else term.split()
        (up if value > 0 else down).update(w.lower() for w in words)
    pieces, last = [], 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        way = "up" if word.lower() in up else "down" if word.lower() in down else None
        if way is None:
            continue
        foreground, background = TERM_COLOURS[way]
        pieces.append(plain(text[last:match.start()]))
        pieces.append(f':color[{plain(word)}]{{foreground="{foreground}" background="{background}"}}')
        last = match.end()
    pieces.append(plain(text[last:]))
    # a line break in the document stays a line break
    return "".join(pieces).replace("\r\n", "\n").replace("\n", "  \n")


def show_item(items: ItemDisplay, item_index: int) -> None:
    """The item as it is meant to be seen: an image, a molecule, a document, or a compact table row."""
    item_view(items, item_index)()


def item_view(items: ItemDisplay, item_index: int) -> Callable[[], None]:
    """Work out now what showing the item needs; the function returned draws it, with nothing left to
    compute.  ``items``: a session's or a project's ``run.item_display``, both shown alike.  The Label
    pages call it before they write the item's first element, so that the item's elements leave the
    server together and the browser draws them in one pass (elements that leave while Python still
    works on the next arrive one by one, and the browser draws each arrival)."""
    image = items.image(item_index)
    if image is not None:
        picture, width = item_picture(image)
        return lambda: st.image(picture, width=width, clamp=True)
    drawing = items.molecule_drawing(item_index)
    if drawing is not None:
        smiles = plain(items.text(item_index))

        def molecule() -> None:
            # RDKit's drawing, shown as an image (never as HTML), or why there is none; the SMILES below as
            # plain text
            if drawing.svg is not None:
                st.image(drawing.svg, width=360)
            else:
                st.caption(plain(drawing.note))
            st.caption(smiles)
        return molecule
    text = items.text(item_index)
    if text is not None:
        return _document_view(items, item_index, text)
    return _features_view(items, item_index)


def _document_view(items: ItemDisplay, item_index: int, text: str) -> Callable[[], None]:
    contributions = notable_terms(items.term_contributions(item_index))
    long = len(text) > 700 or text.count("\n") > 12
    marked = highlighted_markdown(text, contributions) if contributions else None
    terms = None
    if contributions:
        ups = [f"{plain(t)} (+{v:.3f})" for t, v in contributions if v > 0][:6]
        downs = [f"{plain(t)} ({v:.3f})" for t, v in contributions if v < 0][:6]
        terms = "Terms that pushed the score up: " + (", ".join(ups) or "none") + " · down: " + (", ".join(downs)
                                                                                                  or "none")

    def document() -> None:
        with st.container(border=True, height=DOCUMENT_HEIGHT if long else "content", key="item_text"):
            if marked is not None:
                st.markdown(marked)
            else:
                st.text(visible(text))  # the item's own words: plain text, no Markdown interpretation
        if long:
            st.caption(f"{len(text):,} characters; scroll the box to read the whole text.")
        if terms is not None:
            st.caption(terms)
    return document


#: rows of a table item's features in view; the table scrolls to the rest
TOP_FEATURES = 8


def feature_table(items: ItemDisplay, item_index: int) -> tuple[pd.DataFrame, bool]:
    """The item's features, most relevant to the current model first, with a 0-1 relevance
    (relative to the most relevant); and whether that order comes from a model (False: the
    dataset's order, before the model has support vectors)."""
    from core.explain import most_relevant

    row = items.features(item_index)
    names, values = [str(name) for name in row.columns], row.to_numpy()[0]
    relevance = items.relevance(item_index)
    order = most_relevant(relevance, len(values))
    ranked = relevance is not None and float(np.max(relevance)) > 0
    share = (np.asarray(relevance)[order] / float(np.max(relevance))) if ranked else np.full(len(order), np.nan)
    table = pd.DataFrame({"feature": [names[j] for j in order], "value": values[order], "relevance": share})
    return table, ranked


RELEVANCE_HELP = ("How much the feature moves the model's decision about this item, relative to the most relevant "
                  "one (linear kernel: |w_j x_j|; rbf: |df/dx_j| times the feature's spread).")


def _features_view(items: ItemDisplay, item_index: int) -> Callable[[], None]:
    """A table item: all its features in one table, the most relevant first (see ``core.explain``),
    ``TOP_FEATURES`` rows in view and the rest a scroll away (one table for the browser to draw)."""
    table, ranked = feature_table(items, item_index)
    if not ranked:
        table = table.drop(columns="relevance")
    columns = {"relevance": st.column_config.ProgressColumn("relevance", format="%.2f", min_value=0.0,
                                                            max_value=1.0, help=RELEVANCE_HELP)}
    rows = min(len(table), TOP_FEATURES)
    note = None
    if len(table) > rows:
        note = (f"All {len(table)} features, the ones that matter most to the model's decision about this item "
                "first; scroll the table for the rest." if ranked else
                f"All {len(table)} features in the dataset's order (scroll the table for the rest); once the model "
                "has support vectors, the ones that matter most to its decision come first.")

    def features() -> None:
        st.dataframe(table, hide_index=True, height=36 + 35 * rows, width="stretch", column_config=columns)
        if note is not None:
            st.caption(note)
    return features

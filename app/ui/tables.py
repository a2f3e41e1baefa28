"""Tables as a person reads them, and the lines around them: the History and My labels tables, the Compare
summary and its notes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.services.common import BASELINE, EXACT_SOLVERS
from app.services.comparisons import run_words, with_decimals
from app.services.formatting import count, signed
from app.services.vocabulary import METRIC_WORDS, heuristic_words, model_words, solver_words
from app.ui.text import plain, visible


def runs_without_the_heuristic(rows: pd.DataFrame) -> str | None:
    """A notice naming the runs (heuristic, seed) in which every label was a cold-start draw, so the
    heuristic never chose an item (the budget ran out before both classes were found), or None."""
    if rows is None or rows.empty or "cold_start" not in rows:
        return None
    chosen = rows[rows["strategy"] != BASELINE]  # (its heuristic is the cold start's random draw)
    if chosen.empty:
        return None
    runs = chosen.groupby(["strategy", "seed"])["cold_start"].all()
    idle = [f"{heuristic_words(strategy)} (seed {seed})" for (strategy, seed), all_cold in runs.items() if all_cold]
    if not idle:
        return None
    shown = ", ".join(idle[:6]) + (f" and {len(idle) - 6} more" if len(idle) > 6 else "")
    return (
        f"In {len(idle)} of {len(runs)} runs every label was drawn at random by the cold start: {shown}. "
        "The budget ran out before both classes were found, so the heuristic never chose an item and its "
        "curves there are those of random draws. A larger budget (or a dataset with more positives) lets "
        "it act."
    )


#: the Compare summary's measures in words, one line each (their code names: ``SUMMARY_FOR_ENGINEERS``)
SUMMARY_NOTE = "  \n".join(
    [f"{m.name}: {m.meaning}." for m in METRIC_WORDS.values()]
    + [
        '"50% / 80% / 95% found": labels until that share of the positives was found (the mean over the seeds '
        'that got there; in brackets how many of the seeds did, "2/3": two of three).'
    ]
)

#: the same measures' code names, for engineers (under Advanced)
SUMMARY_FOR_ENGINEERS = (
    "For engineers: "
    + "; ".join(f"{m.name} is the {m.code}" for m in METRIC_WORDS.values())
    + '. "to 95 %", "to 99 %": labels until the test AUC first reached that share of the full-data AUC.'
)

ALC, WTL, WSS_95 = (METRIC_WORDS[k].name for k in ("alc", "wtl", "wss_95"))


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

    def pm(mean, std, seeds) -> str:
        """mean ± std over the seeds; the mean alone with one seed (a spread of one run is no spread)."""
        mean, std = _number(mean), _number(std)
        if mean is None:
            return "–"
        return f"{mean:.3f}" if seeds <= 1 else f"{mean:.3f} ± {std or 0.0:.3f}"

    def reach(labels, reached, seeds) -> str:
        labels, reached = _number(labels), int(_number(reached) or 0)
        return "never" if labels is None or reached == 0 else f"{labels:.0f} ({reached}/{int(seeds)})"

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
        rows.append(
            {
                "heuristic": run_words(r.get("strategy")),
                "model": solver_words(r.get("solver")),
                ALC: pm(r.get("alc_mean"), r.get("alc_std"), seeds),
                **({WTL: wtl(r)} if against_random else {}),
                # how soon the positives were found (what a reviewer asks), on screen without scrolling sideways
                **(
                    {
                        f"{level}% found": reach(
                            r.get(f"labels_recall_{level}"), r.get(f"reached_recall_{level}"), seeds
                        )
                        for level in (50, 80, 95)
                    }
                    | {WSS_95: _number(r.get("wss_95"))}
                    if "labels_recall_50" in r
                    else {}
                ),
                "seeds": int(seeds),
                f"{ALC} on log2 labels": pm(r.get("alc_log2_mean"), r.get("alc_log2_std"), seeds),
                "to 95 %": reach(r.get("labels_95"), r.get("reached_95"), seeds),
                "to 99 %": reach(r.get("labels_99"), r.get("reached_99"), seeds),
                "final AUC": _number(r.get("final_auc")),
                "full-data AUC": _number(r.get("reference_auc")),
                "support vectors": _number(r.get("final_n_sv")),
                "update ms p50 / p95": pair(r.get("update_ms_median"), r.get("update_ms_p95")),
                "query ms p50 / p95": pair(r.get("query_ms_median"), r.get("query_ms_p95")),
                "heuristic, for engineers": r.get("strategy"),  # (the code names, under "More columns")
                "solver, for engineers": r.get("solver"),
            }
        )
    # numbers to a fixed number of decimals, "–" where missing: the table never shows None or NaN
    return with_decimals(pd.DataFrame(rows), {"final AUC": 3, "full-data AUC": 3, WSS_95: 3, "support vectors": 0})


#: the Compare summary's columns shown at first (the others, the seeds and the test AUC's too, are under "More
#: columns"): what a reviewer compares, 7 (8 with the model), short headers and cells so that the 8 fit a
#: 1,400-pixel window
SUMMARY_FIRST = (
    "heuristic",
    "model",
    ALC,
    WTL,
    "50% found",
    "80% found",
    "95% found",
    WSS_95,
)


def summary_parts(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """The summary as (the columns shown at first, the rest beside the heuristic, a note): the model column
    only when the runs used different solvers (else the note names the one they all used)."""
    if table.empty:
        return table, table, None
    first = [c for c in SUMMARY_FIRST if c in table]
    note = None
    if "model" in table and table["model"].nunique(dropna=False) == 1:
        first.remove("model")
        note = f"Every heuristic ran on the same model: {table['model'].iloc[0]}."
    rest = [c for c in table.columns if c not in first and c != "model"]
    return table[first], table[["heuristic", *rest]], note


def export_preview(frame: pd.DataFrame) -> pd.DataFrame:
    """The Export page's preview of the exported rows, as a person reads them: the heuristic and solver in
    words, scores and timings to 3 significant digits, times to the second (UTC).  The files keep every
    digit and the code names."""
    frame = frame.copy()
    if "strategy" in frame:
        frame["strategy"] = frame["strategy"].map(lambda s: heuristic_words(str(s)) if s else s)
    if "solver" in frame:
        frame["solver"] = frame["solver"].map(lambda s: solver_words(str(s)) if s else s)
    for column in ("decision_value", "update_ms", "query_ms"):
        if column in frame:
            frame[column] = frame[column].map(_three_digits)
    for column in ("labelled_at", "changed_at"):
        if column in frame:
            frame[column] = frame[column].map(_to_the_second)
    return frame


def _three_digits(value) -> str:
    """A number to 3 significant digits, written out (no exponent), thousands separated: 4111.9 -> "4,110",
    0.012345 -> "0.0123", -0.9087 -> "-0.909"."""
    number = _number(value)
    if number is None:
        return ""
    if number == 0:
        return "0"
    places = 2 - int(np.floor(np.log10(abs(number))))
    return f"{round(number, places):,.{max(places, 0)}f}"


def _to_the_second(value) -> str:
    """ "2026-11-28T12:04:44.114360+00:00" -> "2026-11-28 12:04:44 UTC" (what is not such a time stays)."""
    text = "" if value is None else str(value)
    if not text:
        return text
    try:
        when = pd.Timestamp(text)
    except ValueError:
        return text
    if when.tzinfo is not None:
        when = when.tz_convert("UTC")
        return when.strftime("%Y-%m-%d %H:%M:%S") + " UTC"
    return when.strftime("%Y-%m-%d %H:%M:%S")


def correction_note(solver: str, params: dict | None = None) -> str:
    """How a change of an earlier answer reaches the model (``params``: the session's stored settings, for a named
    model's words), for the History page."""
    model = model_words(solver, params)
    model = model[:1].upper() + model[1:]
    if solver in EXACT_SOLVERS:
        return (
            f"{model}: it unlearns the answer and learns the new one, exactly as if it had been given from the start."
        )
    return (
        f"{model}: it is rebuilt from every answer in order, with the new one in its place (the same model "
        "as had it been given from the start)."
    )


def history_summary(table: pd.DataFrame, solver: str, params: dict | None = None) -> str:
    current = table[table["status"] == "current"]
    labels = int((current["answer"] != "skipped").sum())
    changed = int((current["changes"].str.len() > 0).sum())
    removed = int((table["status"] == "removed").sum())
    return (
        f"{count(labels, 'label')} and {count(len(current) - labels, 'skip')} as they stand · {changed} changed · "
        f"{removed} removed · {plain(model_words(solver, params))}"
    )


def history_choices(current: pd.DataFrame) -> dict[int, str]:
    """label id -> "#12 · item 1204 (key) · positive · 14:03:11 · 20 labels ago", newest first (the newest
    "latest", an answer with none after it "no label since")."""
    is_label = (current["answer"] != "skipped").to_numpy()
    after = is_label[::-1].cumsum()[::-1] - is_label  # labels given after each answer
    choices = {}
    for (_, row), ago in zip(current.iloc[::-1].iterrows(), after[::-1], strict=True):
        key = f" ({row['key']})" if row["key"] else ""
        when = row["when"].strftime("%H:%M:%S")
        choices[int(row["label_id"])] = visible(
            f"#{row['#']:.0f} · item {row['item']}{key} · {row['answer']} · {when} · {_since(ago, newest=not choices)}"
        )
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
    return pd.Series(
        [
            "cold start" if is_cold else "–" if value is None or pd.isna(value) else signed(value)
            for value, is_cold in zip(table["score when asked"], cold, strict=True)
        ],
        index=table.index,
        dtype=object,
    )


def heuristic_words_of(table: pd.DataFrame) -> pd.Series:
    """The "heuristic" column in a screener's words (``app.services.vocabulary``)."""
    return table["heuristic"].map(lambda name: heuristic_words(None if pd.isna(name) else str(name)))


def table_height(rows: int, most: int = 420) -> int:
    """Pixels for a table of ``rows`` rows (and its header) without empty rows below, at most ``most``."""
    return min(38 + 35 * max(rows, 1), most)

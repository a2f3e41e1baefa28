"""Replays of labelling sessions: which heuristic would have served a session best (``core.replay``).

A replay is stored as a comparison (``storage.repository.save_comparison``) whose configuration holds
``replay`` (what was replayed, the reference); the Compare page lists, reloads and draws it with the
comparisons, under the caveat ``core.replay.CAVEAT``.  A session or team project with named classes (the
project's final classes: ``core.replay.final_class``, what its model learns) is replayed with the
K-class heuristics (``core.replay.run_class_replay``: accuracy and macro AUC on a held-out part of its
labelled items) and stored the same way, its ``replay`` naming the classes (``is_class_replay``), under
``class_caveat`` (``core.replay.CLASS_CAVEAT`` in the page's words).  A multi-label session or team project
(each item's set as it stands; a project's settled set, else the first set answered) is replayed with the
multi-label heuristics (``core.replay.run_multi_label_replay``: Hamming accuracy and macro AUC on a held-out
part, per-class measures at the last label, stored as ``summary["per_class"]``), its ``replay`` saying
``multi_label`` (``is_multi_label_replay``), under ``multi_label_caveat``.  ``Replays(service)`` works over a
``MarginLab``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS, strategy_words
from app.services.common import LABEL_STRATEGIES, ServiceError, whole_number
from app.services.comparisons import COMPARE_MAX_LABELS, COMPARE_MAX_SEEDS, COMPARE_MAX_WORK, run_words
from app.services.errors import at_the_boundary, service_boundary
from app.services.vocabulary import METRIC_WORDS, solver_words
from storage import repository as repo
from storage import teams

if TYPE_CHECKING:
    from app.services.accounts import Identity
    from app.services.marginlab import MarginLab

#: the share of a session's labelled items a replay with named classes holds out to score the runs on
CLASS_HELD_OUT = 0.3
LARGER = "replay longer sessions with `python -m core replay --session N` (or `--project N`)"


def is_replay(comparison: repo.Comparison | repo.ComparisonInfo) -> bool:
    """Whether a stored comparison is a replay."""
    return "replay" in comparison.config


def is_class_replay(comparison: repo.Comparison | repo.ComparisonInfo) -> bool:
    """Whether a stored comparison is a replay of a session with named classes."""
    return is_replay(comparison) and bool(comparison.config["replay"].get("classes"))


def is_multi_label_replay(comparison: repo.Comparison | repo.ComparisonInfo) -> bool:
    """Whether a stored comparison is a replay of a multi-label session or team project."""
    return is_class_replay(comparison) and comparison.config["replay"].get("multi_label") is True


def multi_label_caveat(test_fraction: float, *, team: bool = False) -> str:
    """What a replay of a multi-label session or project can and cannot tell, in the page's words
    (``core.replay.MULTI_LABEL_CAVEAT`` for the command line): ``class_caveat`` of sets."""
    return class_caveat(test_fraction, team=team, sets=True)


def class_caveat(test_fraction: float, *, team: bool = False, sets: bool = False) -> str:
    """What a replay of a session with named classes can and cannot tell, in the page's words
    (``core.replay.CLASS_CAVEAT`` for the command line); ``test_fraction``: the share held out.  A team
    project's (``team``) also says which class of an item counts (``core.replay.TEAM_CLASS_CAVEAT``); a
    multi-label one's (``sets``) what its accuracy is, and which set of an item counts
    (``core.replay.TEAM_SET_CAVEAT``)."""
    from core.replay import TEAM_CLASS_CAVEAT, TEAM_SET_CAVEAT

    whose = "project" if team else "session"
    kind, accuracy = (
        (
            "several classes per item",
            "Accuracy (the share of item-class answers, has it or not, that the model gets right)",
        )
        if sets
        else ("named classes", "Accuracy")
    )
    return (
        f"What a replay of {kind} can tell: its pool is the items the {whose} labelled, chosen by the "
        f"{whose}'s own heuristic, so it favours heuristics that pick items like it. {accuracy} and macro AUC are "
        f"measured on {100 * test_fraction:.0f} % of those labelled items, held out from learning, so they say "
        "nothing of the items never labelled. Compare the heuristics with the "
        f"{whose}'s own heuristic under the same replay (the reference). {order_words(team)} is one more curve: "
        f"the model learns the same items in the order the {whose} labelled them, from the first (no initial "
        "labels at random), and is scored on the same held-out items; it favours nothing: it is what happened."
        + (" " + (TEAM_SET_CAVEAT if sets else TEAM_CLASS_CAVEAT) if team else "")
    )


def replay_lines(comparison: repo.Comparison) -> list[str]:
    """What a stored replay replayed, its reference, and what it can and cannot tell."""
    from core.replay import CAVEAT, class_replay_said, reference_said, replay_said

    replay = comparison.config["replay"]
    if is_class_replay(comparison):
        team = bool(replay.get("team"))
        whose = "project" if team else "session"
        reference = (
            f"Reference: {replay_heuristic_words(comparison, replay['reference'])}, the {whose}'s own "
            "heuristic, under the same replay."
            if replay.get("reference")
            else f"No reference: the {whose}'s heuristic is not one this version replays."
        )
        caveat = multi_label_caveat if is_multi_label_replay(comparison) else class_caveat
        return [
            class_replay_said(replay) + model_said(replay),
            reference,
            caveat(float(comparison.config.get("test_fraction", CLASS_HELD_OUT)), team=team),
        ]
    return [replay_said(replay), reference_said(replay), CAVEAT]


def model_said(replay: dict) -> str:
    """The model every run of a replay with named classes used, in words, and whether it is the session's (or
    project's) own ("" for a replay stored before it was recorded)."""
    solver = replay.get("solver")
    if not solver:
        return ""
    whose = "project" if replay.get("team") else "session"
    C = (replay.get("solver_params") or {}).get("C")
    return (
        f" · model: {solver_words(solver)} ({solver}"
        + (f", C {C:g}" if isinstance(C, (int, float)) else "")
        + ")"
        + (f", the {whose}'s own" if replay.get("own_model") else f", not the {whose}'s own")
    )


def order_words(team: bool) -> str:
    """The session's (or team project's) own order, one more curve of a replay with named classes, in words."""
    return f"The {'project' if team else 'session'}'s own order"


def replay_heuristic_words(comparison: repo.Comparison | repo.ComparisonInfo, name: str) -> str:
    """A replay's heuristic in words: a K-class one's for a session with named classes ("Most likely
    <class>"), a multi-label one's for a multi-label session, else a two-class one's; the session's own
    order of a replay with named classes: ``order_words``."""
    from core.replay import SESSION_ORDER

    if name == SESSION_ORDER and is_class_replay(comparison):
        return order_words(bool(comparison.config["replay"].get("team")))
    if is_multi_label_replay(comparison):
        return MULTI_LABEL_STRATEGY_WORDS.get(name, name)
    if is_class_replay(comparison):
        return strategy_words(name, comparison.config.get("target"))
    return run_words(name)


def class_replay_rows(comparison: repo.Comparison) -> pd.DataFrame:
    """A class replay's tidy rows with each heuristic in words (the charts' legend)."""
    rows = comparison.rows
    return rows.assign(strategy=[replay_heuristic_words(comparison, s) for s in rows["strategy"]])


def multi_label_replay_per_class(comparison: repo.Comparison) -> pd.DataFrame:
    """The per-class table of a stored multi-label replay: per heuristic and class, precision, recall, F1 and
    AUC at the last label on the held-out part (mean over the seeds), then their means over the classes
    ("(macro)"), as ``core.multi_label_experiment.format_per_class`` prints them."""
    frame = pd.DataFrame(comparison.summary.get("per_class", []))
    if frame.empty:
        return frame
    reference = comparison.config["replay"].get("reference")
    measures = {"precision": "precision", "recall": "recall", "f1": "F1", "auc": "AUC"}
    parts = []
    for strategy, g in frame.groupby("strategy", sort=False):
        means = g.groupby("class", sort=False)[list(measures)].mean()
        means.loc["(macro)"] = means.mean()
        words = replay_heuristic_words(comparison, str(strategy)) + (" (reference)" if strategy == reference else "")
        parts.append(means.rename_axis("class").reset_index().assign(heuristic=words))
    table = pd.concat(parts, ignore_index=True).rename(columns=measures)
    return table[["heuristic", "class", *measures.values()]].round(3)


def replay_rows_csv(comparison: repo.Comparison) -> bytes:
    """A stored replay's tidy rows as CSV, every text cell escaped against spreadsheet formulas (a replay with
    named classes writes class names in ``label``)."""
    from storage.export import escape_cell

    rows = comparison.rows.copy()
    for column in rows.columns:
        rows[column] = [escape_cell(v) if isinstance(v, str) else v for v in rows[column]]
    return rows.to_csv(index=False).encode()


def class_replay_summary(comparison: repo.Comparison) -> pd.DataFrame:
    """The per-heuristic table of a stored replay of a session with named classes: final accuracy and macro
    AUC on the held-out part (mean ± sd over the seeds), labels to each accuracy level, time per label."""
    frame = pd.DataFrame(comparison.summary.get("summary", []))
    if frame.empty:
        return frame
    reference = comparison.config["replay"].get("reference")
    levels = comparison.config.get("accuracy_levels", [])

    def spread(a, b):
        return [f"{x:.3f} ± {y:.3f}" for x, y in zip(frame[a], frame[b], strict=True)]

    def reach(level):
        name = round(100 * level)
        return [
            "never" if not k or v is None or pd.isna(v) else f"{v:.0f} ({int(k)}/{int(n)} seeds)"
            for v, k, n in zip(frame[f"labels_acc_{name}"], frame[f"reached_acc_{name}"], frame["n_seeds"], strict=True)
        ]

    table = {
        "heuristic": [
            replay_heuristic_words(comparison, s) + (" (reference)" if s == reference else "")
            for s in frame["strategy"]
        ],
        "model": [solver_words(s) for s in frame["solver"]],
        "final accuracy": spread("final_accuracy_mean", "final_accuracy_sd"),
        "final macro AUC": spread("final_macro_auc_mean", "final_macro_auc_sd"),
    }
    table |= {f"accuracy {round(100 * level)} %": reach(level) for level in levels}
    table["ms per label p50 / p95"] = [
        "–" if pd.isna(x) else f"{x:.2f} / {y:.2f}"
        for x, y in zip(frame["label_ms_median"], frame["label_ms_p95"], strict=True)
    ]
    return pd.DataFrame(table)


def replay_summary(comparison: repo.Comparison) -> pd.DataFrame:
    """The per-heuristic table of a stored replay, readable: recall levels, the work saved at 95% found
    (WSS@95), labels to 95% against the reference's, latency, the model in words and by its code name (a replay
    holds nothing out: no AUC)."""
    frame = pd.DataFrame(comparison.summary.get("summary", []))
    if frame.empty:
        return frame
    reference = comparison.config["replay"].get("reference")

    def reach(level):
        return [
            ("never" if not k or v is None or pd.isna(v) else f"{v:.0f} ({int(k)}/{int(n)} seeds)")
            for v, k, n in zip(
                frame[f"labels_recall_{level}"], frame[f"reached_recall_{level}"], frame["n_seeds"], strict=True
            )
        ]

    ref95 = frame.loc[frame["strategy"] == reference, "labels_recall_95"]
    ref95 = float(ref95.iloc[0]) if len(ref95) and pd.notna(ref95.iloc[0]) else None
    versus = [
        "–" if s == reference or ref95 is None or v is None or pd.isna(v) else f"{v - ref95:+.0f}"
        for s, v in zip(frame["strategy"], frame["labels_recall_95"], strict=True)
    ]

    def ms(a, b):
        return ["–" if pd.isna(x) else f"{x:.2f} / {y:.2f}" for x, y in zip(frame[a], frame[b], strict=True)]

    return pd.DataFrame(
        {
            "heuristic": [run_words(s) + (" (reference)" if s == reference else "") for s in frame["strategy"]],
            "model": [solver_words(s) for s in frame["solver"]],
            "recall 50 %": reach(50),
            "recall 80 %": reach(80),
            "recall 95 %": reach(95),
            METRIC_WORDS["wss_95"].name: ["–" if v is None or pd.isna(v) else f"{v:.3f}" for v in frame["wss_95"]],
            "to 95 % vs reference": versus,
            "update ms p50 / p95": ms("update_ms_median", "update_ms_p95"),
            "next item ms p50 / p95": ms("query_ms_median", "query_ms_p95"),
            "model, for engineers": frame["solver"],
        }
    )


def _classes_said(params: dict) -> str:
    """What a session's or project's settings say of its classes, for the list of what can be replayed."""
    if not params.get("classes"):
        return ""
    many = "several classes per item" if params.get("multi_label") is True else "named classes"
    return f" · {many}: {', '.join(map(str, params['classes']))}"


@service_boundary
class Replays:
    """Replay stored sessions (``core.replay``) over a service; results stored as comparisons."""

    def __init__(self, service: MarginLab):
        self.service = service

    def replayable(self, identity: Identity | None = None) -> dict[str, str]:
        """What can be replayed, key -> description: ``session:N`` for sessions with at least two answers,
        ``project:N`` for the team projects ``identity`` sees (all of them for an owner) with answers."""
        out = {
            f"session:{s.id}": f"session {s.id}{f' ({s.name})' if s.name else ''} · {s.dataset_name} · "
            f"{s.annotator} · {s.strategy} · {s.n_labels} labels" + _classes_said(s.params)
            for s in self.service.sessions()
            if s.n_labels >= 2
        }
        for p in self.service.projects(identity):
            out[f"project:{p.id}"] = (
                f"project {p.id} ({p.name}) · {p.dataset_name} · team · {p.strategy}" + _classes_said(p.params)
            )
        return out

    def _params(self, source: str) -> dict:
        """The settings of ``session:N`` or ``project:N`` (nothing for anything else)."""
        kind, _, number = str(source).rpartition(":")
        if kind not in ("", "session", "project"):
            return {}
        engine = self.service.engine
        return (teams.get_project if kind == "project" else repo.get_session)(engine, int(number)).params

    def takes_sets(self, source: str) -> bool:
        """Whether ``source`` is a multi-label session or team project (several classes per item)."""
        return self._params(source).get("multi_label") is True

    def heuristics(self, source: str) -> dict[str, str]:
        """The heuristics a replay of ``source`` may run, name -> words: the multi-label ones for a multi-label
        session or team project, the K-class ones for one with named classes (Most likely <class> only when it
        names its class), else the two-class ones."""
        params = self._params(source)
        if params.get("multi_label") is True:
            return dict(MULTI_LABEL_STRATEGY_WORDS)
        if params.get("classes"):
            target = (params.get("strategy_params") or {}).get("target")
            return {
                name: strategy_words(name, target)
                for name in CLASS_STRATEGY_WORDS
                if name != "target-class" or target is not None
            }
        return {name: run_words(name) for name in LABEL_STRATEGIES}

    def model(self, source: str) -> tuple[str, float]:
        """The model a replay of ``source`` runs by default: the session's (or project's) own solver and C."""
        from core.class_experiment import DEFAULT_SOLVER

        kind, _, number = str(source).rpartition(":")
        engine = self.service.engine
        if kind not in ("", "session", "project"):
            raise ServiceError(f"Nothing to replay is called '{source}'.")
        info = (teams.get_project if kind == "project" else repo.get_session)(engine, int(number))
        C = (info.params.get("solver_params") or {}).get("C", 1.0)
        return info.solver or DEFAULT_SOLVER, float(C) if isinstance(C, (int, float)) else 1.0

    def _labelled(self, source: str, by: Identity | None):
        """(dataset id, scaling, labelled items) of ``session:N`` or ``project:N`` (or a session id)."""
        from core.replay import project_items, session_items, settled_answers

        engine = self.service.engine
        kind, _, number = str(source).rpartition(":")
        if kind in ("", "session"):  # (one that does not exist: storage says so, ``errors``)
            info = repo.get_session(engine, int(number))
            return info, session_items(
                repo.label_events(engine, info.id),
                strategy=info.strategy,
                solver=info.solver,
                params=info.params,
                source=f"session {info.id}",
            )
        if kind != "project":
            raise ServiceError(f"Nothing to replay is called '{source}'.")
        info = teams.get_project(engine, int(number))
        if info.id not in {p.id for p in self.service.projects(by)}:
            raise ServiceError(f"Project {info.id} is not one of your projects.")
        settled = settled_answers(
            teams.settlements(engine, info.id),
            classes=bool(info.params.get("classes")),
            multi_label=info.params.get("multi_label") is True,
        )
        return info, project_items(
            teams.project_answers(engine, info.id)[1],
            settled,
            strategy=info.strategy,
            solver=info.solver,
            params=info.params,
            source=f"project {info.id}",
        )

    @at_the_boundary(also=(ValueError,))  # (core refusing the settings on this data: said as it is)
    def run_replay(
        self,
        source: int | str,
        *,
        strategies: Sequence[str],
        seeds: int = 3,
        initial: int = 10,
        progress: Callable[[float, str], None] | None = None,
        by: Identity | None = None,
        solver: str | None = None,
        C: float | None = None,
    ) -> int:
        """Replay a stored session (``session:N``, or its id) or team project (``project:N``: the settled
        answers, else each item's first; with named classes ``core.replay.final_class``) under ``strategies``,
        its own heuristic added as the reference; every run with its model, or ``solver`` and ``C`` in its
        place (its other settings kept); store the result as a comparison and return its id.
        ``progress(fraction, text)`` as for ``run_comparison``; an exception it raises (the page's Cancel) stops
        the replay, nothing stored."""
        from core.replay import ReplayError, run_class_replay, run_multi_label_replay, run_replay, session_features

        svc = self.service
        svc.acting(by)
        strategies = list(strategies)
        seeds = whole_number(
            seeds, f"The number of seeds (at most {COMPARE_MAX_SEEDS} seeds)", low=1, high=COMPARE_MAX_SEEDS
        )
        initial = whole_number(initial, "The initial labels")
        info, labelled = self._labelled(source, by)
        model = self._model_given(labelled, solver, C)
        allowed = (
            MULTI_LABEL_STRATEGY_WORDS
            if labelled.multi_label
            else CLASS_STRATEGY_WORDS
            if labelled.classes
            else LABEL_STRATEGIES
        )
        unknown = [s for s in strategies if s not in allowed]
        if labelled.multi_label and unknown:
            raise ServiceError(
                f"'{unknown[0]}' is not a heuristic for several classes per item; {labelled.source} takes several "
                "classes per item: choose among " + ", ".join(allowed) + "."
            )
        if labelled.classes and unknown:
            raise ServiceError(
                f"'{unknown[0]}' is not a heuristic for named classes; {labelled.source} has named classes: "
                "choose among " + ", ".join(allowed) + "."
            )
        if unknown or not strategies:
            raise ServiceError("Choose at least one heuristic among " + ", ".join(allowed) + ".")
        runs = len(set(strategies) | ({info.strategy} if info.strategy in allowed else set()))
        runs += 1 if labelled.classes else 0  # (with named classes the own order is one more run of the model)
        pool = len(labelled.rows)
        labels = runs * seeds * pool
        if labels > COMPARE_MAX_LABELS or labels * pool > COMPARE_MAX_WORK:
            raise ServiceError(
                f"heuristics × seeds × labelled items = {runs} × {seeds} × {pool} = {labels:,} labels "
                f"is over what a replay here may give ({COMPARE_MAX_LABELS:,}): fewer heuristics "
                f"or seeds, or {LARGER}."
            )
        dataset = svc.dataset(info.dataset_id)
        X, *_ = repo.load_dataset_arrays(svc.engine, info.dataset_id, writable=False)
        X = session_features(
            X, info.params.get("scaling", dataset.meta.get("scaling", "none")), dataset.meta.get("feature_blocks")
        )
        started = time.monotonic()

        def report(done: int, total: int, description: str, steps: int | None = None, of: int | None = None) -> None:
            if progress is None:
                return
            within = 0.0 if steps is None else steps / max(of or 1, 1)
            text = (
                f"run {min(done + 1, total)}/{total}: {description}"
                + ("" if steps is None else f" · label {steps}/{of}")
                + f" · {time.monotonic() - started:.0f} s elapsed"
            )
            progress(min((done + within) / max(total, 1), 1.0), text)

        try:
            common = dict(strategies=strategies, seeds=seeds, initial=initial, progress=report, label_progress=report)
            result = (  # (K-class or multi-label runs: the session's model, scored on a held-out part)
                run_multi_label_replay(
                    X,
                    labelled,
                    strategies=strategies,
                    seeds=seeds,
                    initial=initial,
                    progress=report,
                    test_fraction=CLASS_HELD_OUT,
                    **model,
                )
                if labelled.multi_label
                else run_class_replay(X, labelled, **common, **model, test_fraction=CLASS_HELD_OUT)
                if labelled.classes
                else run_replay(X, labelled, **common, **model, scheduler=svc.comparison_scheduler() or "none")
            )
        except ReplayError as error:
            raise ServiceError(
                f"{labelled.source.capitalize()} cannot be replayed: {str(error).split(': ', 1)[-1]}."
            ) from None
        config = dict(result.config, dataset=dataset.name, dataset_id=info.dataset_id)
        summary = {
            "summary": result.summary.to_dict(orient="records"),
            "runs": result.runs.to_dict(orient="records"),
        }
        if not labelled.classes:
            summary["references"] = result.references.to_dict(orient="records")
        if labelled.multi_label:
            summary["per_class"] = result.per_class.to_dict(orient="records")
        svc.acting(by)  # (it may have run for minutes)
        return repo.save_comparison(svc.engine, info.dataset_id, config, result.rows, summary)

    @staticmethod
    def _model_given(labelled, solver: str | None, C: float | None) -> dict:
        """``run_*_replay``'s ``solver`` / ``solver_params`` for a model given in place of the session's own
        (nothing when neither is given); a solver this version does not have or a C that is no positive
        number is refused, named."""
        from core.solvers import SOLVER_NAMES

        if solver is None and C is None:
            return {}
        if solver is not None and solver not in SOLVER_NAMES:
            raise ServiceError(f"'{solver}' is not a model this version has; choose among {', '.join(SOLVER_NAMES)}.")
        params = dict(labelled.solver_params)
        if C is not None:
            try:
                C = float(C)
            except (TypeError, ValueError):
                C = float("nan")
            if not (C > 0 and C < float("inf")):
                raise ServiceError("C (how closely the model follows each answer) must be a positive number.")
            params = {k: v for k, v in params.items() if k != "auto"} | {"C": C}
        return {"solver": solver or labelled.solver, "solver_params": params}


__all__ = [
    "CLASS_HELD_OUT",
    "Replays",
    "class_caveat",
    "class_replay_rows",
    "class_replay_summary",
    "is_class_replay",
    "is_multi_label_replay",
    "multi_label_caveat",
    "multi_label_replay_per_class",
    "is_replay",
    "model_said",
    "replay_heuristic_words",
    "replay_lines",
    "replay_rows_csv",
    "replay_summary",
]

"""Labelling sessions: start, open (the live run, rebuilt from the database when needed), close."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from app.services.accounts import Accounts, Identity
from app.services.classes import ClassesRun, class_list, class_looked_for
from app.services.common import (
    DEFAULT_C,
    DEFAULT_GAMMA,
    DEMO_NAME,
    DEMO_SESSION_NAME,
    EVAL_FRACTION,
    EXACT_SOLVERS,
    LABEL_STRATEGIES,
    SOLVERS,
    Outcome,
    ServiceError,
    find_words,
    gamma_value,
    model_choice,
    penalty_value,
    scaling_name,
    tuned_params,
    whole_number,
)
from app.services.datasets import Datasets
from app.services.errors import service_boundary
from app.services.labelling import LabellingRun
from app.services.multi_label import MultiLabelRun
from app.services.records import eval_share
from app.services.snapshots import save_behind
from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES
from core.presets import preset_of
from core.settings import (
    CLASS_SOLVER,
    MAX_CLASSES,
    MIN_MULTI_LABEL_CLASSES,
    STANDARD_MODEL,
    SessionSettings,
    SettingsError,
    StoppingSettings,
)
from core.solvers.auto_hyper import DEFAULT_LAG
from core.strategies import DEFAULT_SOLVER
from storage import history as stored_history
from storage import repository as repo
from storage import teams

#: one demo session per database, even when two tabs of the first owner ask for it at the same moment
_demo_lock = threading.Lock()


def untouched_demo(info: repo.SessionInfo) -> bool:
    """The demo session as it was opened: on the demo dataset, named so, with no answer yet."""
    return (
        info.name == DEMO_SESSION_NAME and info.dataset_name == DEMO_NAME and info.n_labels == 0 and info.n_skips == 0
    )


@service_boundary
class Sessions:
    """Labelling sessions: ``MarginLab.sessions`` (``sessions(...)`` lists them), with one live
    ``LabellingRun`` per open session and process.  ``use_snapshots``: runs resume from their latest
    snapshot (False: they always replay every event)."""

    def __init__(self, engine, accounts: Accounts, datasets: Datasets, *, use_snapshots: bool = True):
        self.engine, self.accounts, self.datasets = engine, accounts, datasets
        self.use_snapshots = bool(use_snapshots)
        self._runs: dict[int, LabellingRun] = {}
        self._runs_lock = threading.Lock()

    def __call__(
        self,
        dataset_id: int | None = None,
        annotator: str | None = None,
        status: str | None = None,
        *,
        solo: bool = False,
        tidy: bool = False,
    ) -> list[repo.SessionInfo]:
        """Sessions, most recently updated first; ``solo``: without those holding a project member's answers;
        ``tidy``: without the demo while it has no answer and other sessions are listed (it stays in the
        database and on the Sessions page; an answer, or being the only one, lists it again)."""
        found = repo.list_sessions(self.engine, dataset_id=dataset_id, annotator=annotator, status=status)
        if solo:
            in_projects = teams.project_session_ids(self.engine)
            found = [s for s in found if s.id not in in_projects]
        if tidy:
            others = [s for s in found if not untouched_demo(s)]
            found = others or found
        return found

    def start_session(
        self,
        *,
        dataset_id: int,
        annotator: str,
        strategy: str,
        solver: str | None = None,
        C: float = DEFAULT_C,
        gamma: float | str = DEFAULT_GAMMA,
        seed: int = 0,
        scaling: str | None = None,
        eval_fraction: float | None = None,
        strategy_params: dict | None = None,
        model: str | None = None,
        kernel: str | None = None,
        loss: str | None = None,
        tol: float | None = None,
        find: str | None = None,
        auto_hyper: bool = False,
        classes: str | Sequence[str] | None = None,
        target: str | None = None,
        multi_label: bool = False,
        by: Identity | None = None,
    ) -> LabellingRun | ClassesRun:
        """Store a new session and bring it to life.

        ``eval_fraction``: the share of a dataset with true labels held out to draw the live ROC curve,
        when the analyst asks for an evaluation split; None takes the dataset's own (set on the Data page),
        else ``EVAL_FRACTION`` (none: every item can be labelled, and the live curve is drawn from the
        scores the model gave the labelled items when it asked).  ``model="review"`` is
        ``core.presets.DOCUMENT_REVIEW`` (its own solver, kernel and C; ``C`` and ``gamma`` are not used);
        ``"auto"`` picks it for documents with largest-positive (``common.model_choice``).  ``kernel``,
        ``loss`` and ``tol`` are set only when given (``common.tuned_params``): left out, the session is
        the one the defaults always gave.  ``find``: what the analyst is looking for, in their words
        (shown beside the answer buttons; empty: the dataset's positive class).  ``by``: the signed-in
        person starting it (``SignedOutError`` once their sign-in has ended).  ``auto_hyper``: C and (rbf)
        gamma chosen from the labels as they come (``core.solvers.auto_hyper``; ``C`` and ``gamma`` are the
        starting values) when the session's model is the SVM on an exact solver (the New session form's
        default).  ``classes``: K named classes (3 to 9; a list, or names separated by commas) for a
        single-choice session (``ClassesRun``); None or empty: the dataset's classes when its label column was
        imported with every value kept, else a two-class session.  A K-class session's ``strategy`` is one of
        ``core.multiclass.MULTICLASS_STRATEGIES`` (``target``: the class looked for: "Most likely <class>" asks about it
        first, and the stopping rules work on it against the rest with any strategy; ``classes.class_looked_for``).
        ``multi_label``:
        several classes per item (``MultiLabelRun``; 2 to 9 classes, named or the dataset's), its ``strategy``
        one of ``core.multiclass.MULTILABEL_STRATEGIES``."""
        self.accounts.acting(by)
        dataset = self.datasets.dataset(dataset_id)
        names = class_list(classes, multi_label=multi_label) or tuple(dataset.meta.get("class_names") or ())
        if multi_label and not names:
            raise ServiceError(
                f"Several classes per item: name the classes ({MIN_MULTI_LABEL_CLASSES} to {MAX_CLASSES}, separated "
                "by commas)."
            )
        if names:
            return self._start_classes(
                dataset,
                names,
                annotator=annotator,
                strategy=strategy,
                solver=solver,
                C=C,
                gamma=gamma,
                seed=seed,
                scaling=scaling,
                kernel=kernel,
                tol=tol,
                target=target,
                multi_label=multi_label,
            )
        if strategy not in LABEL_STRATEGIES:
            raise ServiceError(f"Unknown heuristic '{strategy}'; choose one of {', '.join(LABEL_STRATEGIES)}.")
        if solver is not None and solver not in SOLVERS:
            raise ServiceError(f"Unknown solver '{solver}'; choose one of {', '.join(SOLVERS)}.")
        if not annotator or not str(annotator).strip():
            raise ServiceError("Enter the annotator's name.")
        # every parameter is checked before the session is stored: a refusal leaves nothing behind
        C, gamma, seed = penalty_value(C), gamma_value(gamma), whole_number(seed, "seed")
        tuned = tuned_params(kernel=kernel, loss=loss, tol=tol, solver=solver or DEFAULT_SOLVER[strategy])
        solver, solver_params = model_choice(model, solver, dataset.meta, C, gamma, strategy, tuned)
        solver = solver or DEFAULT_SOLVER[strategy]
        if auto_hyper and solver in EXACT_SOLVERS and "gamma" in solver_params:  # (the SVM, not a named model)
            solver_params["auto"] = ["C", "gamma"] if solver_params["kernel"] == "rbf" else ["C"]
            solver_params["auto_lag"] = DEFAULT_LAG  # (computed in the background, used 10 labels later)
        if eval_fraction is None:
            eval_fraction = dataset.meta.get("eval_fraction", EVAL_FRACTION)
        eval_fraction = eval_share(eval_fraction)
        scaling = scaling_name(scaling if scaling is not None else dataset.meta.get("scaling", "none"))
        find = find_words(find)
        try:  # the solver parameters under their own names (core.settings)
            settings = SessionSettings(
                strategy=strategy,
                solver=solver,
                model=preset_of(solver, solver_params) or STANDARD_MODEL,
                **solver_params,
                strategy_params=dict(strategy_params or {}),
                seed=seed,
                scaling=scaling,
                eval_fraction=eval_fraction if dataset.has_true_labels else 0.0,
                find=find,
            )
        except SettingsError as error:
            raise ServiceError(f"The session's settings are refused: {error}.") from None
        session_id = repo.start_session(
            self.engine, dataset_id=dataset_id, annotator=str(annotator).strip(), settings=settings
        )
        return self._bring_to_life(session_id)

    def _start_classes(
        self,
        dataset,
        names: tuple[str, ...],
        *,
        annotator: str,
        strategy: str,
        solver: str | None,
        C,
        gamma,
        seed,
        scaling: str | None,
        kernel: str | None,
        tol: float | None,
        target: str | None,
        multi_label: bool = False,
    ) -> ClassesRun:
        """A session with named classes (see ``start_session``): checked whole before anything is stored."""
        allowed = MULTILABEL_STRATEGIES if multi_label else MULTICLASS_STRATEGIES
        if strategy not in allowed:
            kind = "several classes per item" if multi_label else "named classes"
            raise ServiceError(
                f"Unknown way to pick items for {kind} '{strategy}'; choose one of {', '.join(allowed)}."
            )
        if solver is not None and solver not in SOLVERS:
            raise ServiceError(f"Unknown solver '{solver}'; choose one of {', '.join(SOLVERS)}.")
        if not annotator or not str(annotator).strip():
            raise ServiceError("Enter the annotator's name.")
        target, stop_on = class_looked_for(strategy, target, names)
        C, gamma, seed = penalty_value(C), gamma_value(gamma), whole_number(seed, "seed")
        solver = solver or CLASS_SOLVER
        tuned = tuned_params(kernel=kernel, loss=None, tol=tol, solver=solver)
        _, solver_params = model_choice("standard", solver, dataset.meta, C, gamma, None, tuned)
        scaling = scaling_name(scaling if scaling is not None else dataset.meta.get("scaling", "none"))
        try:
            settings = SessionSettings(
                strategy=strategy,
                solver=solver,
                **solver_params,
                seed=seed,
                scaling=scaling,
                strategy_params={} if target is None else {"target": target},
                classes=names,
                multi_label=bool(multi_label),
                stopping=StoppingSettings(target_class=stop_on),
            )
        except SettingsError as error:
            raise ServiceError(f"The session's settings are refused: {error}.") from None
        session_id = repo.start_session(
            self.engine, dataset_id=dataset.id, annotator=str(annotator).strip(), settings=settings
        )
        run = self._bring_to_life(session_id)
        assert isinstance(run, ClassesRun)
        return run

    def _bring_to_life(self, session_id: int) -> LabellingRun | ClassesRun:
        """Open a session just stored; one whose model cannot be built is deleted again (ServiceError)."""
        try:
            run = self.open_session(session_id)
            problem = run.problem_cause
        except Exception as error:
            problem = str(error)
        if problem is not None:
            # a session whose model cannot be built is not kept (it would fail on every resume, and a refused
            # start leaves nothing behind)
            with self._runs_lock:
                self._runs.pop(int(session_id), None)
            repo.delete_session(self.engine, session_id)
            raise ServiceError(f"The session could not start: {problem}")
        return run

    def open_demo_session(self, name: str, by: Identity | None = None) -> int | None:
        """The demo, open for a new installation's first owner: when ``name`` is the first owner account
        (created first, not disabled) and the database holds no labelling session at all (closed ones and
        a project's count), start one session on the bundled demo dataset with the New session form's
        defaults and return its id.  Once any session exists, None: the demo is started once, not again
        on a later sign-in or start, and not for anyone else.  ``by``: the signed-in person (checked as
        every write is)."""
        with _demo_lock:
            if repo.list_sessions(self.engine):
                return None
            owners = sorted(
                (a for a in teams.list_accounts(self.engine) if a.role == "owner" and not a.disabled),
                key=lambda a: (a.created_at, a.id),
            )
            if not owners or owners[0].name != name:
                return None
            demo = next((d for d in self.datasets() if d.name == DEMO_NAME and d.meta.get("bundled") == "digits"), None)
            if demo is None:
                return None
            run = self.start_session(
                dataset_id=demo.id, annotator=name, strategy=LABEL_STRATEGIES[0], model="auto", auto_hyper=True, by=by
            )
            # named, so that its line says what it is, and so that it leaves the lists while untouched
            stored_history.rename_session(self.engine, run.session_id, DEMO_SESSION_NAME)
            run.info = repo.get_session(self.engine, run.session_id)
            return run.session_id

    def open_session(self, session_id: int) -> LabellingRun | ClassesRun:
        """The live run of a session: the one in memory, or rebuilt from the database (a ``ClassesRun`` for a
        session with named classes)."""
        with self._runs_lock:
            run = self._runs.get(int(session_id))
            if run is None:
                info = repo.get_session(self.engine, session_id)
                if info.params.get("multi_label") is True:
                    run = MultiLabelRun(
                        self.engine, session_id, accounts=self.accounts, use_snapshots=self.use_snapshots
                    )
                elif info.params.get("classes"):
                    run = ClassesRun(self.engine, session_id, accounts=self.accounts, use_snapshots=self.use_snapshots)
                else:
                    run = LabellingRun(
                        self.engine, session_id, accounts=self.accounts, use_snapshots=self.use_snapshots
                    )
                self._runs[int(session_id)] = run
            return run

    def save_snapshots(self, wait_s: float = 5.0) -> int:
        """Store a model snapshot of every session in memory whose latest one is behind its answers,
        and return how many were stored: what the app does when its server stops, so that the next
        start resumes without learning those answers again.  A session busy for longer than
        ``wait_s`` in all is left as it is (its answers are stored; the next start learns them again)."""
        return save_behind(self._runs, self._runs_lock, wait_s)

    def close_session(self, session_id: int, *, by: Identity | None = None) -> Outcome:
        """Close a session (a snapshot of its model is stored first when it is in memory); ``by``: the
        signed-in person closing it (refused once their sign-in has ended)."""
        if ended := self.accounts.sign_in_ended(by):
            return Outcome(False, ended, "error")
        with self._runs_lock:
            run = self._runs.pop(int(session_id), None)
        if run is not None:
            return run.close()
        repo.close_session(self.engine, session_id)
        return Outcome(True, f"Session {session_id} closed.")

    def known_problem(self, session_id: int) -> str | None:
        """Why the session's model cannot be used, when its run is in memory and knows it; else None."""
        run = self.in_memory(session_id)
        return None if run is None else run.problem

    def in_memory(self, session_id: int) -> LabellingRun | None:
        """The session's run when it is in memory (None: opening it rebuilds it from the database)."""
        return self._runs.get(int(session_id))

    def is_open(self, session_id: int) -> bool:
        """Whether the session's run is in memory (opening it otherwise replays its labels)."""
        return int(session_id) in self._runs

    def forget_runs(self, session_ids=None) -> None:
        """Drop the in-memory runs of ``session_ids`` (None: every one); the next open rebuilds them
        from the database, as after a restart."""
        with self._runs_lock:
            if session_ids is None:
                self._runs.clear()
            for session_id in session_ids or ():
                self._runs.pop(int(session_id), None)

"""The labelling-session service: what the pages do, without Streamlit.

``MarginLab`` is one per process and database. It imports datasets, starts and
resumes labelling sessions, runs comparisons and produces exports; each concern
has its own module here:

- ``common``: the heuristics and solvers offered, defaults, checks of parameters, ``ServiceError``, ``Outcome``
- ``errors``: the boundary, where storage's, the database's and core's errors become ``ServiceError``
- ``database``: a database that is not MarginLab's is refused before anything touches it
- ``records``: what the modules share, below them all (``Answer``, ``ShownItem``, ``RunState``, the evaluation
  split and share, the text of an uploaded CSV)
- ``datasets``: bundled datasets and CSV uploads (preview, checks, import)
- ``sessions``: start, open, close labelling sessions
- ``labelling``: ``LabellingRun``, one session brought to life (labels, skips, undo), holding its parts:
  - ``history``: ``run.label_history``, the label history of a run (changes and removals of earlier labels,
    labels imported from a file)
  - ``snapshots``: ``run.snapshots``, model snapshots, so a session resumes without replaying every label
  - ``stopping``: ``run.stopping``, when can the analyst stop (the rules' state, the recall check, its random draws)
  - ``readouts``: ``run.readouts``, what the Label page shows of a run (history, ROC curve, the item)
  - ``priors``: ``run.priors``, known items (search the pool, mark the items known)
- ``classes``: ``ClassesRun``, a session with named classes (3 to 9, single choice) brought to life
- ``comparisons``: heuristics side by side with the true labels as the oracle
- ``replay``: a session replayed under other heuristics, its answers the oracle (stored as a comparison)
- ``exports``: labelled items with provenance as CSV or JSONL
- ``housekeeping``: session names, closing and reopening sessions, deleting a dataset
- ``accounts``: who may sign in (argon2id hashes, slowed and locked failures), the first owner
- ``projects``: projects shared by a team: reserved items, one shared model, agreement, settling
- ``marginlab``: ``MarginLab``, a facade over one object per concern (``datasets``, ``sessions``, ``housekeeping``,
  ``exports``, ``comparisons``, ``accounts``, ``projects``), each given the objects it uses
"""

from app.services.common import (
    BASELINE,
    COMPARE_STRATEGIES,
    DEFAULT_C,
    DEFAULT_GAMMA,
    DEFAULT_SOLVER,
    DEFAULT_STRATEGY,
    DEMO_NAME,
    EVAL_FRACTION,
    EVAL_MAX_ITEMS,
    LABEL_STRATEGIES,
    ORACLE_STRATEGIES,
    SOLVERS,
    STRATEGY_WORDS,
    VALUE_NAMES,
    DatabaseUnavailable,
    Outcome,
    ServiceError,
    scale_features,
)
from app.services.datasets import CsvPreview, ImportResult
from app.services.labelling import LabellingRun
from app.services.marginlab import MarginLab
from app.services.records import Answer, ShownItem, evaluation_split
from app.services.snapshots import SNAPSHOT_EVERY, SNAPSHOT_FORMAT, SNAPSHOT_UNDO_STATES

__all__ = [
    "BASELINE",
    "COMPARE_STRATEGIES",
    "DEFAULT_C",
    "DEFAULT_GAMMA",
    "DEFAULT_SOLVER",
    "DEFAULT_STRATEGY",
    "DEMO_NAME",
    "EVAL_FRACTION",
    "EVAL_MAX_ITEMS",
    "LABEL_STRATEGIES",
    "ORACLE_STRATEGIES",
    "SNAPSHOT_EVERY",
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_UNDO_STATES",
    "SOLVERS",
    "STRATEGY_WORDS",
    "VALUE_NAMES",
    "Answer",
    "CsvPreview",
    "DatabaseUnavailable",
    "ImportResult",
    "LabellingRun",
    "MarginLab",
    "Outcome",
    "ServiceError",
    "ShownItem",
    "evaluation_split",
    "scale_features",
]

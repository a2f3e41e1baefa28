"""Resume benchmark for a session with named classes: every answer learned again vs the latest snapshot.

Run from the repository root::

    .venv/bin/python benchmarks/bench_class_resume.py              # 1,000 answers
    .venv/bin/python benchmarks/bench_class_resume.py --answers 300 # a quicker run

The digits 1 to 9 (nine classes: a session has at most nine, one answer key each; the images of 0 are left
out) are labelled through the app's service with their true class, in a temporary SQLite file (the app's
defaults: RBF, C = 1, gamma = "scale", smallest margin), so the service stores a snapshot every
``SNAPSHOT_EVERY`` answers.  Then a new service on the same file opens the session, as a restarted app does,
once learning every answer again (``use_snapshots=False``, what every resume did before snapshots of sessions
with named classes) and once from the latest snapshot plus the answers after it, with the snapshot right at
the end and with ``SNAPSHOT_EVERY - 1`` answers after it (the worst case).  The resumed runs are checked
against each other (the same model and next item, bit for bit).  Both columns are printed side by side.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from app.services import SNAPSHOT_EVERY, MarginLab
from benchmarks._threads_info import thread_configuration
from benchmarks.bench_resume import best_of
from core.datasets import ASSETS_DIR, BUNDLED
from storage import repository as repo

SOLVERS = ["incremental", "lasvm"]


def digits_1_to_9() -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(ASSETS_DIR / BUNDLED["digits"].file)
    frame = frame[frame["digit"] != 0]
    return frame.drop(columns=["digit"]).to_numpy(dtype=np.float64), frame["digit"].to_numpy() - 1


def same(a, b) -> bool:
    return (
        [(x.item_index, x.answer_class, x.label_id) for x in a.answers]
        == [(x.item_index, x.answer_class, x.label_id) for x in b.answers]
        and np.array_equal(a.model.decision_function(), b.model.decision_function())
        and a.shown.item_index == b.shown.item_index
    )


def bench(folder: Path, solver: str, n_answers: int, repeat: int) -> dict:
    X, digit = digits_1_to_9()
    classes = [str(d) for d in range(1, 10)]
    svc = MarginLab.from_url(f"sqlite:///{folder / f'{solver}.db'}")
    dataset_id = repo.import_dataset(svc.engine, name="digits 1-9", X=X, feature_names=[f"p{i}" for i in range(64)])
    run = svc.start_session(
        dataset_id=dataset_id, annotator="bench", strategy="smallest-margin", classes=classes, solver=solver
    )
    t0 = time.perf_counter()
    while len(run.answers) < n_answers - 1:
        item = run.shown.item_index
        run.answer(int(digit[item]), item_index=item)
    out = {"answer_ms": 1e3 * (time.perf_counter() - t0) / len(run.answers), "items": len(X)}

    def open_with(use_snapshots: bool):
        return MarginLab(svc.engine, use_snapshots=use_snapshots).open_session(run.session_id)

    out["every_s"], relearned = best_of(lambda: open_with(False), repeat)
    out["worst_s"], worst = best_of(lambda: open_with(True), repeat)
    out["worst_after"] = len(worst.answers) - (worst.resumed_from or 0)
    out["worst_ok"] = same(worst, relearned)
    item = run.shown.item_index
    run.answer(int(digit[item]), item_index=item)  # the n-th answer
    if run.snapshot_is_behind:
        run.save_snapshot()
    t0 = time.perf_counter()
    run.save_snapshot()
    out["store_ms"] = 1e3 * (time.perf_counter() - t0)
    out["best_s"], best = best_of(lambda: open_with(True), repeat)
    out["best_from"] = best.resumed_from
    out["every2_s"], relearned = best_of(lambda: open_with(False), repeat)
    out["best_ok"] = same(best, relearned) and same(best, run)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=int, default=1000, help="answers in the session (default 1000)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many resumes (default 2)")
    args = parser.parse_args(argv)
    print(thread_configuration())
    print(f"digits 1-9, K = 9 classes, {args.answers} answers, snapshot every {SNAPSHOT_EVERY}; best of {args.repeat}")
    header = (
        f"{'solver':<12} {'every answer (before)':>22} {'snapshot at the end':>20} "
        f"{f'snapshot + {SNAPSHOT_EVERY - 1}':>16} {'store one':>10} {'same bits':>10}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for solver in SOLVERS:
            r = bench(Path(tmp), solver, args.answers, args.repeat)
            every = min(r["every_s"], r["every2_s"])
            print(
                f"{solver:<12} {every:>20.2f} s {r['best_s']:>18.2f} s {r['worst_s']:>14.2f} s "
                f"{r['store_ms']:>7.0f} ms {str(r['best_ok'] and r['worst_ok']):>10}"
            )
            print(f"{'':<12} ({r['items']} items; labelling {r['answer_ms']:.1f} ms per answer)")


if __name__ == "__main__":
    main()

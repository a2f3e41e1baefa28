"""Resume benchmark: rebuilding a 1,000-label session from its events only vs from a snapshot.

Run from the repository root::

    .venv/bin/python benchmarks/bench_resume.py              # 1,000 labels
    .venv/bin/python benchmarks/bench_resume.py --labels 300 # a quicker run

For each configuration (digits "8 vs rest", the app's defaults: RBF, C = 1,
gamma = "scale", 30% of the items held out for the live evaluation) a session
is labelled through the app's service (``app.services``) with the true labels,
in a temporary SQLite file, so the service stores a snapshot every
``SNAPSHOT_EVERY`` answers. Then a new service on the same file opens the
session, as a restarted app does:

* **events only**: every stored event replayed (``use_snapshots=False``),
* **snapshot + events**: the latest snapshot plus the events after it, once
  with the snapshot right at the end and once with ``SNAPSHOT_EVERY - 1``
  events after it (the worst case between two snapshots).

Both rebuilt runs are checked against the live one (same labels, pool scores
and next item). The table also gives the costs behind them: the loop alone
(``from_events`` vs ``from_state`` + replay, no database), storing one
snapshot, and the evaluation after a label with the kept kernel columns vs a
fresh K(evaluation items, support vectors) as the loop did before.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from app.services import SNAPSHOT_EVERY, MarginLab
from core.loop import ActiveLearningLoop
from storage import repository as repo

CONFIGS = [("near-boundary", "incremental"), ("randomized-search", "lasvm")]


def best_of(fn, repeat: int) -> tuple[float, object]:
    """Smallest wall time of ``repeat`` calls in seconds, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def same(run, live) -> bool:
    return (
        [(a.item_index, a.value) for a in run.answers] == [(a.item_index, a.value) for a in live.answers]
        and np.allclose(run.loop.pool_scores(), live.loop.pool_scores(), rtol=0, atol=1e-12)
        and run.shown.item_index == live.shown.item_index
    )


def bench_config(folder: Path, strategy: str, solver: str, n_labels: int, repeat: int) -> dict:
    url = f"sqlite:///{folder / f'{solver}.db'}"
    svc = MarginLab.from_url(url)
    svc.ensure_demo_dataset()
    run = svc.start_session(dataset_id=svc.datasets()[0].id, annotator="bench", strategy=strategy, solver=solver)
    t0 = time.perf_counter()
    while len(run.answers) < n_labels - 1:
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    label_s = time.perf_counter() - t0
    out: dict = {
        "label_ms": 1e3 * label_s / max(1, len(run.answers)),
        "pool": len(run.pool_items),
        "eval": len(run.eval_items),
    }

    # worst case: the latest snapshot is SNAPSHOT_EVERY - 1 events back
    def open_with(use_snapshots: bool):
        return MarginLab(svc.engine, use_snapshots=use_snapshots).open_session(run.session_id)

    s, resumed = best_of(lambda: open_with(True), repeat)
    out["worst_s"], out["worst_from"], out["worst_n"] = s, resumed.resumed_from, len(resumed.answers)
    out["worst_ok"] = same(resumed, run)

    item = run.shown.item_index
    run.answer(int(run.y_true[item]), item_index=item)  # the n-th label
    if run.snapshot_events != len(run.answers):
        run.save_snapshot()  # (stored by the service itself when n is a multiple of SNAPSHOT_EVERY)
    n_events = len(run.answers)
    s, replayed = best_of(lambda: open_with(False), max(1, repeat // 2))
    out["events_s"], out["events_ok"] = s, same(replayed, run) and replayed.resumed_from is None
    s, resumed = best_of(lambda: open_with(True), repeat)
    out["snap_s"], out["snap_from"], out["snap_ok"] = s, resumed.resumed_from, same(resumed, run)
    out["n_events"], out["n_labels"], out["n_sv"] = n_events, run.n_labels, int(run.loop.solver.n_support_)

    # the pieces: loop only (no database), one snapshot stored, its size
    data = run._loop_data()
    config = run._loop_config()
    pairs = list(run.loop.events)
    s, _ = best_of(lambda: ActiveLearningLoop.from_events(pairs, **data, **config), max(1, repeat // 2))
    out["loop_events_s"] = s
    arrays, meta = run.loop.to_state()
    s, _ = best_of(lambda: ActiveLearningLoop.from_state(arrays, meta, **data), repeat)
    out["loop_state_s"] = s
    s, _ = best_of(run.save_snapshot, repeat)
    out["save_ms"] = 1e3 * s
    snapshot = repo.latest_snapshot(svc.engine, run.session_id)
    out["snapshot_kb"] = sum(np.asarray(a).nbytes for a in snapshot.arrays.values()) / 1024

    # evaluation after a label: kept columns vs K(eval, sv) computed afresh
    loop, X_eval = run.loop, data["eval_X"]
    fresh, kept = [], []
    for _ in range(max(20, repeat)):
        t0 = time.perf_counter()
        loop.solver.decision_function(X=X_eval)
        fresh.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        loop.evaluation_scores()
        kept.append(time.perf_counter() - t0)
    out["eval_fresh_ms"], out["eval_kept_ms"] = 1e3 * statistics.median(fresh), 1e3 * statistics.median(kept)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=1000, help="labels in the session (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many rebuilds (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        results = {f"{st} / {so}": bench_config(Path(folder), st, so, args.labels, args.repeat) for st, so in CONFIGS}
    names = list(results)
    first = results[names[0]]
    print(
        f"\nResume of a {args.labels:,}-label session: digits 8 vs rest, {first['pool']} pool items, "
        f"{first['eval']} held out; snapshot every {SNAPSHOT_EVERY} answers; best of {args.repeat}\n"
    )
    rows = [
        ("labels / support vectors at the end", lambda r: f"{r['n_labels']} / {r['n_sv']}"),
        ("labelling through the service (ms per label)", lambda r: f"{r['label_ms']:.1f}"),
        ("rebuild from events only (s)", lambda r: f"{r['events_s']:.2f}" + ("" if r["events_ok"] else " MISMATCH")),
        (
            "rebuild from snapshot at the end (s)",
            lambda r: f"{r['snap_s']:.3f} (from {r['snap_from']})" + ("" if r["snap_ok"] else " MISMATCH"),
        ),
        (
            "rebuild from the snapshot before + later events (s)",
            lambda r: (
                f"{r['worst_s']:.3f} (from {r['worst_from']} of {r['worst_n']})"
                + ("" if r["worst_ok"] else " MISMATCH")
            ),
        ),
        (
            "speed-up over events only (snapshot before / at end)",
            lambda r: f"{r['events_s'] / r['worst_s']:.0f}x / {r['events_s'] / r['snap_s']:.0f}x",
        ),
        ("  loop only: from_events (s)", lambda r: f"{r['loop_events_s']:.2f}"),
        ("  loop only: from_state (s)", lambda r: f"{r['loop_state_s']:.3f}"),
        ("  store one snapshot (ms)", lambda r: f"{r['save_ms']:.1f}"),
        ("  snapshot arrays (KiB)", lambda r: f"{r['snapshot_kb']:.0f}"),
        ("  evaluation after a label: K(eval, sv) afresh (ms)", lambda r: f"{r['eval_fresh_ms']:.2f}"),
        ("  evaluation after a label: kept columns (ms)", lambda r: f"{r['eval_kept_ms']:.2f}"),
    ]
    width = max(len(r[0]) for r in rows) + 2
    cols = [max(len(n), 24) + 2 for n in names]
    print("".ljust(width) + "".join(n.ljust(c) for n, c in zip(names, cols, strict=True)))
    for label, fmt in rows:
        print(label.ljust(width) + "".join(fmt(results[n]).ljust(c) for n, c in zip(names, cols, strict=True)))
    print("\nMISMATCH would mean a rebuilt session differs from the live one (labels, pool scores or next item).")


if __name__ == "__main__":
    main()

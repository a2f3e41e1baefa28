"""A large dataset through the app's service: import, first query, labels, resume after a restart.

Run from the repository root::

    .venv/bin/python benchmarks/bench_scale_app.py                    # 1,000,000 rows x 20 features
    .venv/bin/python benchmarks/bench_scale_app.py --rows 100000      # a quicker run

What a user does, through the same service the pages call (``app.services.MarginLab``), on a
SQLite file in a temporary folder: a CSV of ``--rows`` rows (two Gaussians in ``--features``
columns, separation 2, and a 0/1 label column), made in memory, is imported as an upload is
(``import_csv``, standard scaling, 30% held out for the live evaluation); a session starts with
near-boundary + incremental (the app's defaults otherwise) and shows its first item; ``--labels``
items are answered with their true labels; then a new process opens the session
as a restarted app does (snapshot + events) and shows the next item, and ``--labels`` more are
answered.  Targets (issue 10): import <= 30 s, first query <= 2 s, resume <= 2 s; the restarted
session's resident memory <= 1.5 x the feature matrix + 300 MB (the peak of the new process that
opens it, as a restarted app is; what its libraries took before is printed with it).  The first
process's peak, with the import, is printed too.  No thread variable is set; each process turns
NumPy's huge-page advice off as the app's server does (``core.process``).
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._memory import status
from benchmarks._threads_info import thread_configuration
from core.datasets import make_gaussians


def make_csv(rows: int, features: int) -> bytes:
    X, y = make_gaussians(rows, np.random.default_rng(5), separation=2.0, n_features=features)
    frame = pd.DataFrame(X, columns=[f"f{k}" for k in range(features)])
    frame["label"] = (y > 0).astype(int)
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, float_format="%.6g")
    return buffer.getvalue().encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--labels", type=int, default=50, help="answers before the restart (default 50)")
    parser.add_argument("--resume", nargs=3, metavar=("URL", "SESSION", "LABELS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    # each process set up as the app's server sets itself up (python -m app.serve): NumPy's
    # huge-page advice off, unless NUMPY_MADVISE_HUGEPAGE says otherwise (core.process)
    from core.process import prefer_small_pages

    small_pages = prefer_small_pages()
    if args.resume:
        import app.services  # noqa: F401  (the libraries a started app has loaded, before the session)

        print(json.dumps(resume_in_this_process(args.resume[0], int(args.resume[1]), int(args.resume[2]))))
        return
    print(thread_configuration())
    print(
        "NumPy's huge-page advice: "
        + ("off, as the app's server sets it (core.process)" if small_pages else "as NUMPY_MADVISE_HUGEPAGE says")
    )

    from app.services import MarginLab

    t0 = time.perf_counter()
    data = make_csv(args.rows, args.features)
    print(
        f"\nCSV made in memory: {args.rows} rows x {args.features} features + label, "
        f"{len(data) / 2**20:.0f} MiB ({time.perf_counter() - t0:.1f} s, not counted)"
    )
    results = []
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'scale.db'}"
        svc = MarginLab.from_url(url)
        t0 = time.perf_counter()
        imported = svc.import_csv(data, name="scale", label_column="label", positive="1")
        results.append(("import (check, scale, store)", time.perf_counter() - t0, "<= 30 s"))
        del data
        dataset_id = imported.dataset_id
        t0 = time.perf_counter()
        run = svc.start_session(
            dataset_id=dataset_id, annotator="bench", strategy="near-boundary", solver="incremental"
        )
        first = run.shown.item_index
        results.append(("first query (start session, first item)", time.perf_counter() - t0, "<= 2 s"))
        answer_ms = []
        while len(run.answers) < args.labels:
            item = run.shown.item_index
            t0 = time.perf_counter()
            run.answer(int(run.y_true[item]), item_index=item)
            answer_ms.append(1e3 * (time.perf_counter() - t0))
        expected = run.shown.item_index
        session_id, n_answers = run.session_id, len(run.answers)
        del run
        svc.forget_runs()
        svc.engine.dispose()

        overall_peak = status("VmHWM", default=float("nan"))
        # the restart: a new process opens the session on the same file
        out = subprocess.run(
            [sys.executable, __file__, "--resume", url, str(session_id), str(args.labels)],
            capture_output=True,
            text=True,
            check=True,
        )
        after = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(("resume after restart (open session, next item)", after["resume_s"], "<= 2 s"))
        same = after["n_answers"] == n_answers and after["shown"] == expected

    print(f"\n{'step':<50} {'seconds':>8}  target")
    for name, seconds, target in results:
        print(f"{name:<50} {seconds:>8.2f}  {target}")
    print(
        f"answers 1..{len(answer_ms)} (label stored, model updated, next item chosen): median "
        f"{np.median(answer_ms):.1f} ms, p95 {np.percentile(answer_ms, 95):.1f} ms (first item {first})"
    )
    p50, p95 = after["answer_ms"]
    print(
        f"answers {n_answers + 1}..{n_answers + args.labels}, after the restart: median {p50:.1f} ms, p95 {p95:.1f} ms"
    )
    print(f"resumed from {after['resumed_from']}; same answers and next item as before the restart: {same}")
    matrix = args.rows * args.features * 8 / 2**20
    print(
        f"restarted process (open + {args.labels} answers): peak resident memory {after['peak_mib']:.0f} MiB, "
        f"{after['base_mib']:.0f} MiB of it the libraries before the session opened; limit 1.5 x features + "
        f"300 MB = {1.5 * matrix + 300 * 1e6 / 2**20:.0f} MiB (feature matrix {matrix:.0f} MiB as float64)"
    )
    print(f"first process (import, start, {args.labels} answers): peak resident memory {overall_peak:.0f} MiB")


def resume_in_this_process(url: str, session_id: int, labels: int) -> dict:
    """The restart: open the session in this (new) process, show the next item, answer ``labels`` more."""
    from app.services import MarginLab

    base = status("VmRSS", default=float("nan"))
    restarted = MarginLab.from_url(url)
    t0 = time.perf_counter()
    resumed = restarted.open_session(session_id)
    shown = resumed.shown.item_index
    resume_s = time.perf_counter() - t0
    n_answers = len(resumed.answers)
    times = []
    for _ in range(labels):
        item = resumed.shown.item_index
        t0 = time.perf_counter()
        resumed.answer(int(resumed.y_true[item]), item_index=item)
        times.append(1e3 * (time.perf_counter() - t0))
    restarted.engine.dispose()
    return dict(
        resume_s=resume_s,
        shown=int(shown),
        n_answers=n_answers,
        resumed_from=resumed.resumed_from,
        answer_ms=[float(np.median(times)), float(np.percentile(times, 95))],
        peak_mib=status("VmHWM", default=float("nan")),
        base_mib=base,
    )


if __name__ == "__main__":
    main()

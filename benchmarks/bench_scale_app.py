"""A large dataset through the app's service: import, first query, labels, resume after a restart.

Run from the repository root::

    .venv/bin/python benchmarks/bench_scale_app.py                    # 1,000,000 rows x 20 features
    .venv/bin/python benchmarks/bench_scale_app.py --rows 100000      # a quicker run

What a user does, through the same service the pages call (``app.service.MarginLab``), on a
SQLite file in a temporary folder: a CSV of ``--rows`` rows (two Gaussians in ``--features``
columns, separation 2, and a 0/1 label column), made in memory, is imported as an upload is
(``import_csv``, standard scaling, 30% held out for the live evaluation); a session starts with
near-boundary + incremental (the app's defaults otherwise) and shows its first item; ``--labels``
items are answered with their true labels; then a new service on a new engine opens the session
as a restarted app does (snapshot + events) and shows the next item.  Targets (issue 10): import
<= 30 s, first query <= 2 s, resume <= 2 s.  Peak resident memory of the process (imports
included) is printed with it.  No thread variable is set.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks._memory import status  # noqa: E402
from benchmarks._threads_info import thread_configuration  # noqa: E402
from core.datasets import make_gaussians  # noqa: E402


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
    args = parser.parse_args()
    print(thread_configuration())

    from app.service import MarginLab

    t0 = time.perf_counter()
    data = make_csv(args.rows, args.features)
    print(f"\nCSV made in memory: {args.rows} rows x {args.features} features + label, "
          f"{len(data) / 2**20:.0f} MiB ({time.perf_counter() - t0:.1f} s, not counted)")
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
        run = svc.start_session(dataset_id=dataset_id, annotator="bench", strategy="near-boundary",
                                solver="incremental")
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

        restarted = MarginLab.from_url(url)
        t0 = time.perf_counter()
        resumed = restarted.open_session(session_id)
        shown = resumed.shown.item_index
        results.append(("resume after restart (open session, next item)", time.perf_counter() - t0, "<= 2 s"))
        same = len(resumed.answers) == n_answers and shown == expected
        resumed_from = resumed.resumed_from
        restarted.engine.dispose()

    print(f"\n{'step':<50} {'seconds':>8}  target")
    for name, seconds, target in results:
        print(f"{name:<50} {seconds:>8.2f}  {target}")
    print(f"answers 1..{len(answer_ms)} (label stored, model updated, next item chosen): median "
          f"{np.median(answer_ms):.1f} ms, p95 {np.percentile(answer_ms, 95):.1f} ms (first item {first})")
    print(f"resumed from {resumed_from}; same answers and next item as before the restart: {same}")
    print(f"peak resident memory of this process: {status('VmHWM', default=float('nan')):.0f} MiB "
          f"(feature matrix {args.rows * args.features * 8 / 2**20:.0f} MiB as float64)")


if __name__ == "__main__":
    main()

"""One K-class comparison through the service the Compare page calls (``Comparisons.run_class_comparison``).

The bundled digits with their label column kept as classes: the app keeps up to 9 values as classes, so the
digits 0 to 8 (the 9s left out: 1,617 items, 9 classes), imported as the Data page does (``import_csv`` with
``keep_classes``, standard scaling) into a temporary SQLite database; then every K-class heuristic of the
registry, ``--seeds`` seeds × ``--budget`` labels on the default model (incremental, rbf, C 1), stored as
a comparison.  It prints the wall time, the load average before and after, and the summary the page shows.

Run:  .venv/bin/python benchmarks/bench_class_compare.py [--budget 100 --seeds 3]
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time

import pandas as pd

from app.services import MarginLab
from app.services.class_comparisons import MULTICLASS_STRATEGIES, class_summary_table, strategy_words
from core.datasets import ASSETS_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    with gzip.open(ASSETS_DIR / "digits.csv.gz", "rt") as f:
        frame = pd.read_csv(f)
    frame = frame[frame["digit"] != 9]
    with tempfile.TemporaryDirectory() as folder:
        svc = MarginLab.from_url(f"sqlite:///{os.path.join(folder, 'bench.db')}")
        imported = svc.import_csv(
            frame.to_csv(index=False).encode(),
            name="digits 0-8",
            label_column="digit",
            keep_classes=True,
            scaling="standard",
        )
        assert imported.created, imported.message
        strategies = list(MULTICLASS_STRATEGIES)
        load_before = os.getloadavg()
        started = time.perf_counter()
        comparison_id = svc.run_class_comparison(
            imported.dataset_id, strategies=strategies, budget=args.budget, seeds=args.seeds, initial=10
        )
        seconds = time.perf_counter() - started
        load_after = os.getloadavg()
        stored = svc.comparison(comparison_id)
        print(
            f"{len(frame):,} items, {len(stored.config['classes'])} classes; {len(strategies)} heuristics × "
            f"{args.seeds} seeds × {args.budget} labels: {seconds:.1f} s (load average "
            f"{load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} cores)"
        )
        table = class_summary_table(stored, lambda s: strategy_words(s, stored.config.get("target")))
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()

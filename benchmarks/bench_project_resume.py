"""A team project's shared model after a restart: from its snapshot, against learning every answer again.

Run from the repository root::

    .venv/bin/python benchmarks/bench_project_resume.py                        # 100,000 rows, 300 answers
    .venv/bin/python benchmarks/bench_project_resume.py --rows 1000000 --answers 150

Through the service the pages call (``app.services.MarginLab``), on a SQLite file in a temporary
folder: the two-Gaussian CSV of ``bench_scale_app.py`` (``--rows`` x ``--features``) is imported,
a project is made on it (near-boundary / incremental, the app's defaults otherwise) and one member
answers ``--answers`` items with their true labels, as the "Label together" page does.  Then the
process stops as the app's server does (its projects' snapshots stored: ``save_project_snapshots``),
and ``--after`` more answers come from another server that does not store one.  A new process then
opens the project as a restarted server does and takes the next item (catching up with every
answer): from the latest snapshot (the app's default), and, in another new process, with snapshots
switched off (``MarginLab(engine, use_snapshots=False)``: every answer learned again, what a
project did before it had snapshots).  Each is run twice, alternated.  No thread variable is set;
each process is set up as the app's server sets itself up (``core.process``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks._threads_info import machine_description, thread_configuration
from benchmarks.bench_scale_app import make_csv

PASSWORD = "bench-password"


def reopen(url: str, project_id: int, use_snapshots: bool) -> dict:
    """In this process (a restarted server): open the project and hand out its next item."""
    from app.services import MarginLab

    svc = MarginLab.from_url(url)
    svc.use_snapshots = use_snapshots
    t0 = time.perf_counter()
    run = svc.open_project(project_id)
    t1 = time.perf_counter()
    shown = run.next_item("ann")
    t2 = time.perf_counter()
    from storage import teams

    teams.release_reservation(svc.engine, project_id, "ann")  # (the next reopening chooses afresh)
    return {
        "open_s": t1 - t0,
        "next_item_s": t2 - t1,
        "labels": len(run.model_labels),
        "note": run.resume_note,
        "item": None if shown is None else shown.item_index,
    }


def answer(run, y: np.ndarray, count: int) -> None:
    for _ in range(count):
        shown = run.next_item("ann")
        assert run.answer("ann", shown.item_index, int(y[shown.item_index]), shown).ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--answers", type=int, default=300, help="answers before the server stops (default 300)")
    parser.add_argument(
        "--after",
        type=int,
        default=10,
        help="answers from another server after the stop, not in any snapshot (default 10)",
    )
    parser.add_argument("--reopen", nargs=3, metavar=("URL", "PROJECT", "SNAPSHOTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    from core.process import prefer_small_pages

    prefer_small_pages()  # (as the app's server: core.process)
    if args.reopen:
        import app.services  # noqa: F401  (the libraries a started app has loaded)

        print(json.dumps(reopen(args.reopen[0], int(args.reopen[1]), args.reopen[2] == "on")))
        return
    print(machine_description())
    print(thread_configuration())

    from app.services import MarginLab
    from app.services.accounts import hash_password
    from storage import repository as repo
    from storage import teams

    folder = tempfile.mkdtemp(prefix="marginlab-bench-")
    url = f"sqlite:///{folder}/bench.db"
    svc = MarginLab.from_url(url)
    t0 = time.perf_counter()
    svc.import_csv(make_csv(args.rows, args.features), name="bench", label_column="label", positive=1)
    dataset_id = next(d.id for d in svc.datasets() if d.name == "bench")
    for name, role in (("ann", "annotator"), ("bench owner", "owner")):
        teams.create_account(svc.engine, name=name, role=role, password_hash=hash_password(PASSWORD))
    me = svc.sign_in("bench owner", PASSWORD)
    project_id = svc.create_project(me, name="bench", dataset_id=dataset_id, strategy="near-boundary", members=["ann"])
    run = svc.open_project(project_id)
    y = repo.load_dataset_arrays(svc.engine, dataset_id)[1]
    print(
        f"\n{args.rows} rows x {args.features} features imported, project made ({time.perf_counter() - t0:.1f} s, "
        "not counted)"
    )
    t0 = time.perf_counter()
    answer(run, y, args.answers)
    print(
        f"{args.answers} answers through the project ({time.perf_counter() - t0:.1f} s); the server stops and "
        f"stores {svc.save_project_snapshots()} project snapshot(s)"
    )
    other = MarginLab.from_url(url)
    other.use_snapshots = False  # (another server that stores none: its answers are in no snapshot)
    answer(other.open_project(project_id), y, args.after)
    print(f"{args.after} more answers from another server, in no snapshot")
    svc.engine.dispose()
    other.engine.dispose()

    results = {"on": [], "off": []}
    for _ in range(2):
        for mode in ("on", "off"):
            out = subprocess.run(
                [sys.executable, __file__, "--reopen", url, str(project_id), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"\n{'reopened':<40} {'open s':>14} {'next item s':>14} {'total s':>14}  labels  next item")
    for mode, title in (("on", "from the latest snapshot (default)"), ("off", "every answer learned (reference)")):
        rows = results[mode]
        opened, nxt = (" / ".join(f"{r[key]:.2f}" for r in rows) for key in ("open_s", "next_item_s"))
        total = " / ".join(f"{r['open_s'] + r['next_item_s']:.2f}" for r in rows)
        print(f"{title:<40} {opened:>14} {nxt:>14} {total:>14}  {rows[0]['labels']:>6}  {rows[0]['item']}")
    print(f"resume note: {results['on'][0]['note']!r}")
    items = {r["item"] for mode in results for r in results[mode]}
    print("the same next item either way: " + str(len(items) == 1))


if __name__ == "__main__":
    main()

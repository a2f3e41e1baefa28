"""Several annotators labelling one project at once, each in a process of their own (as on separate servers).

Every annotator (a thread of one process sharing one service, as browsers on one app
server; or a process of its own, as separate servers on one database) runs the service
the "Label together" page calls: take the next item
(``ProjectRun.next_item``: catch up with the others' answers, choose, reserve it in
the database), answer it with the true label, repeat. Reported per database and number
of annotators: the milliseconds from asking for the next item until it is reserved and
shown (median, p95, max; target p95 <= 300 ms), the milliseconds to store an answer, and
the checks: answers stored = answers given (nothing lost or stored twice), items answered
twice without overlap, answers refused because someone else had the item. One annotator
alone is the reference.

    python benchmarks/bench_team.py [--labels 60] [--postgresql URL]

Without ``--postgresql`` a throwaway PostgreSQL server is started in a temporary folder
(Debian's ``postgresql`` package, as the tests do).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

TARGET_P95_MS = 300.0
STRATEGY = "near-boundary"
PASSWORD = "bench-password"


def annotate(url: str, project_id: int, name: str, labels: int, start, results) -> None:
    """One annotator in a process of its own (a separate server): its own service on the database."""
    from app.services import MarginLab

    svc = MarginLab.from_url(url)
    try:
        annotate_in_thread(svc, project_id, name, labels, start, results)
    finally:
        svc.engine.dispose()


def annotate_in_thread(svc, project_id: int, name: str, labels: int, start, results) -> None:
    """One annotator labelling through ``svc``: in a thread of one process sharing one service (one app
    server, several browsers), or called by ``annotate`` in a process of its own."""
    from storage import repository as repo

    run = svc.open_project(project_id)
    y = repo.load_dataset_arrays(svc.engine, run.info.dataset_id)[1]
    start.wait()
    next_ms, answer_ms, given, refused = [], [], [], 0
    for _ in range(labels):
        t0 = time.perf_counter()
        shown = run.next_item(name)
        t1 = time.perf_counter()
        if shown is None:
            break
        value = int(y[shown.item_index])
        outcome = run.answer(name, shown.item_index, value, shown)
        t2 = time.perf_counter()
        next_ms.append(1e3 * (t1 - t0))
        answer_ms.append(1e3 * (t2 - t1))
        if outcome.ok:
            given.append((shown.item_index, value))
        else:
            refused += 1
    results.put((name, next_ms, answer_ms, given, refused))


def run_once(url: str, annotators: int, labels: int, mode: str = "processes") -> dict:
    from app.services import MarginLab
    from app.services.accounts import hash_password
    from storage import teams

    svc = MarginLab.from_url(url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    names = [f"annotator {k}" for k in range(annotators)]
    for name in [*names, "bench owner"]:
        if teams.get_account(svc.engine, name) is None:
            teams.create_account(
                svc.engine,
                name=name,
                role="owner" if name == "bench owner" else "annotator",
                password_hash=hash_password(PASSWORD),
            )
    me = svc.sign_in("bench owner", PASSWORD)
    project_id = svc.create_project(
        me, name=f"bench {annotators} {time.time()}", dataset_id=dataset_id, strategy=STRATEGY, members=names
    )
    if mode == "threads":
        import queue
        import threading

        start, results = threading.Barrier(annotators), queue.Queue()
        workers = [
            threading.Thread(target=annotate_in_thread, args=(svc, project_id, name, labels, start, results))
            for name in names
        ]
    else:
        context = multiprocessing.get_context("spawn")
        start, results = context.Barrier(annotators), context.Queue()
        workers = [
            context.Process(target=annotate, args=(url, project_id, name, labels, start, results)) for name in names
        ]
    wall = time.perf_counter()
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=3600) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    wall = time.perf_counter() - wall
    _, answers = teams.project_answers(svc.engine, project_id)
    given = sorted((name, item, value) for name, _, _, rows, _ in reports for item, value in rows)
    stored = sorted((a.annotator, a.item_index, a.value) for a in answers)
    per_item: dict[int, int] = {}
    for a in answers:
        per_item[a.item_index] = per_item.get(a.item_index, 0) + 1
    svc.engine.dispose()
    next_ms = np.concatenate([np.asarray(r[1]) for r in reports])
    answer_ms = np.concatenate([np.asarray(r[2]) for r in reports])
    return {
        "next_ms": next_ms,
        "answer_ms": answer_ms,
        "wall": wall,
        "answers": len(stored),
        "lost_or_doubled": len(set(given) ^ set(stored)) + (len(stored) - len(set(stored))),
        "twice": sum(1 for n in per_item.values() if n > 1),
        "refused": sum(r[4] for r in reports),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=60, help="answers per annotator")
    parser.add_argument("--annotators", type=int, default=4)
    parser.add_argument("--postgresql", default=None, help="URL of an empty PostgreSQL database to use")
    args = parser.parse_args()

    from tests.conftest import PostgresServer, find_postgresql_bindir

    server = None
    with tempfile.TemporaryDirectory() as tmp:
        databases = []
        try:
            plan = [(1, "processes"), (args.annotators, "threads"), (args.annotators, "processes")]
            for k, (annotators, mode) in enumerate(plan):
                databases.append(("SQLite file", annotators, mode, f"sqlite:///{Path(tmp) / f'team{k}.db'}"))
            if args.postgresql:
                pg_urls = [args.postgresql] * len(plan)
            else:
                server = PostgresServer(find_postgresql_bindir())
                server.start()
                pg_urls = [server.url(server.create_database()) for _ in plan]
            databases += [
                ("PostgreSQL", annotators, mode, pg_url)
                for (annotators, mode), pg_url in zip(plan, pg_urls, strict=True)
            ]
            rows = [
                (kind, annotators, mode, run_once(url, annotators, args.labels, mode))
                for kind, annotators, mode, url in databases
            ]
        finally:
            if server is not None:
                server.stop()

    print(
        f"{args.annotators} annotators labelling one project at once through the service ({STRATEGY} / "
        f"incremental, digits 8 vs rest, 1,797 items, {args.labels} answers each): as threads of one process "
        "(one app server, one shared model) and as processes of their own (separate servers on one database, "
        "each process learning every answer);"
    )
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end; Python "
        f"{platform.python_version()}; default BLAS threads. One annotator alone is the reference."
    )
    print()
    head = (
        f"{'database':<12} {'annotators':>10} {'as':>10} {'answers':>8} {'next p50':>9} {'next p95':>9} "
        f"{'next max':>9} {'store p50':>10} {'lost/dup':>9} {'twice':>6} {'refused':>8} {'wall s':>7}  "
        "target next p95"
    )
    print(head)
    print("-" * len(head))
    for kind, annotators, mode, r in rows:
        p95 = np.percentile(r["next_ms"], 95)
        verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
        print(
            f"{kind:<12} {annotators:>10} {mode:>10} {r['answers']:>8} {np.median(r['next_ms']):>9.1f} {p95:>9.1f} "
            f"{r['next_ms'].max():>9.1f} {np.median(r['answer_ms']):>10.1f} {r['lost_or_doubled']:>9} "
            f"{r['twice']:>6} {r['refused']:>8} {r['wall']:>7.1f}  <= {TARGET_P95_MS:.0f} ms {verdict}"
        )
    print()
    print(
        "next: ask for the next item until it is reserved and shown (catching up with the others' answers "
        "included); store: the answer committed and learned. lost/dup: answers given but not stored, or stored "
        "twice (target 0); twice: items with two answers (no overlap asked for: target 0); refused: answers "
        "refused because another annotator had answered the item."
    )


if __name__ == "__main__":
    main()

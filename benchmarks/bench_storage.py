"""Storage benchmark: label latency, concurrent writers, session rebuild, export.

Run from the repository root::

    .venv/bin/python benchmarks/bench_storage.py            # full sizes
    .venv/bin/python benchmarks/bench_storage.py --quick    # smaller, for a smoke run

Prints one table. Everything happens in temporary SQLite files (WAL,
synchronous=FULL, as the app uses them, so the figures include an fsync per
commit); one line shows record_label with synchronous=NORMAL for comparison.

``--postgresql URL`` adds the label latency and the four concurrent writers on
a PostgreSQL database (``postgresql+psycopg://...``) next to SQLite's; the
benchmark drops MarginLab's tables there before each measurement, so give it
a database of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import insert, select, text

import storage
from storage.models import Base, Item, Label, utc_now
from storage.repository import writing

TARGET_RECORD_MS = 5.0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def new_database(folder: Path, name: str, synchronous: str = "FULL", server_url: str | None = None):
    """(url, engine) of a new MarginLab database: a SQLite file in ``folder``, or ``server_url`` emptied first."""
    url = server_url or f"sqlite:///{folder / name}"
    engine = storage.make_engine(url, sqlite_synchronous=synchronous)
    if server_url:
        with engine.begin() as connection:
            Base.metadata.drop_all(connection)
            connection.execute(text("DROP TABLE IF EXISTS alembic_version"))
    storage.init_db(engine)
    return url, engine


def make_dataset(engine, n_items: int, n_features: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_items, n_features))
    y = np.where(X[:, 0] > 0, 1, -1)
    y[:2] = (1, -1)
    return storage.import_dataset(
        engine,
        name=f"bench {n_items}x{n_features} #{seed}",
        X=X,
        feature_names=[f"feature_{j}" for j in range(n_features)],
        y_true=y,
        item_keys=[f"item-{i:06d}" for i in range(n_items)],
    )


def start(engine, dataset_id: int, annotator: str = "bench") -> int:
    return storage.start_session(
        engine,
        dataset_id=dataset_id,
        annotator=annotator,
        strategy="near-boundary",
        solver="incremental",
        params={"C": 1.0},
        seed=0,
    )


def record(engine, session_id: int, item_index: int, annotator: str = "bench"):
    return storage.record_label(
        engine,
        session_id,
        item_index=item_index,
        value=1 if item_index % 2 else -1,
        annotator=annotator,
        strategy="near-boundary",
        solver="incremental",
        decision_value=0.125 * (item_index % 17) - 1.0,
        model_version=item_index,
        update_ms=0.8,
        query_ms=0.3,
    )


# -- measurements -----------------------------------------------------------------


def bench_record_latency(
    folder: Path, n_labels: int, synchronous: str = "FULL", server_url: str | None = None
) -> list[float]:
    _url, engine = new_database(folder, f"latency-{synchronous}.db", synchronous, server_url)
    session_id = start(engine, make_dataset(engine, n_labels + 20, 10))
    for i in range(20):  # warm-up: connection, statement caches
        record(engine, session_id, i)
    timings = []
    for i in range(20, 20 + n_labels):
        started = time.perf_counter()
        record(engine, session_id, i)
        timings.append((time.perf_counter() - started) * 1e3)
    engine.dispose()
    return timings


def wal_bytes_per_label(folder: Path, n_labels: int = 10) -> float:
    """Bytes one record_label appends to the write-ahead log (what its commit must flush)."""
    _url, engine = new_database(folder, "wal-size.db")
    session_id = start(engine, make_dataset(engine, n_labels + 20, 10))
    for i in range(20):
        record(engine, session_id, i)
    with sqlite3.connect(folder / "wal-size.db", isolation_level=None) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # empty log: each commit below appends its frames
    for i in range(20, 20 + n_labels):
        record(engine, session_id, i)
    size = (folder / "wal-size.db-wal").stat().st_size
    engine.dispose()
    return size / n_labels


def bench_disk_sync(folder: Path, block: int = 4096, repeats: int = 200) -> list[float]:
    """The disk's own cost of a durable commit: append ``block`` bytes, fdatasync (ms)."""
    timings = []
    descriptor = os.open(folder / f"sync-probe-{block}", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for _ in range(repeats):
            os.write(descriptor, b"\0" * block)
            started = time.perf_counter()
            os.fdatasync(descriptor)
            timings.append((time.perf_counter() - started) * 1e3)
    finally:
        os.close(descriptor)
    return timings


def writer_process(url: str, session_id: int, first: int, count: int, go_file: str, synchronous: str) -> None:
    engine = storage.make_engine(url, sqlite_synchronous=synchronous)
    record(engine, session_id, first, annotator=f"writer {session_id}")  # warm-up, counted as a label
    while not os.path.exists(go_file):
        time.sleep(0.001)
    started = time.time()
    latencies = []
    for i in range(first + 1, first + count):
        t0 = time.perf_counter()
        record(engine, session_id, i, annotator=f"writer {session_id}")
        latencies.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"start": started, "end": time.time(), "labels": count - 1, "latencies": latencies}))


def bench_concurrent_writers(
    folder: Path, n_writers: int, per_writer: int, synchronous: str = "FULL", server_url: str | None = None
) -> dict[str, float]:
    url, engine = new_database(folder, f"concurrent-{synchronous}.db", synchronous, server_url)
    dataset_id = make_dataset(engine, n_writers * per_writer, 10)
    sessions = [start(engine, dataset_id, annotator=f"writer {k}") for k in range(n_writers)]
    go_file = folder / f"go-{synchronous}"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--writer",
                url,
                str(sid),
                str(k * per_writer),
                str(per_writer),
                str(go_file),
                synchronous,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, sid in enumerate(sessions)
    ]
    time.sleep(2.0 + 0.5 * n_writers)  # let every writer import and connect
    go_file.touch()
    reports = []
    for worker in workers:
        output, errors = worker.communicate(timeout=600)
        if worker.returncode != 0:
            raise RuntimeError(f"a writer failed:\n{errors}")
        reports.append(json.loads(output.strip().splitlines()[-1]))
    stored = sum(len(storage.label_events(engine, sid)) for sid in sessions)
    engine.dispose()
    total = sum(r["labels"] for r in reports)
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    latencies = [v for r in reports for v in r["latencies"]]
    return {
        "labels_per_second": total / wall,
        "wall_s": wall,
        "labels": total,
        "lost": n_writers * per_writer - stored,
        "median_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 95),
    }


def bench_rebuild(folder: Path, n_labels: int, repeats: int = 5) -> dict[str, float]:
    _url, engine = new_database(folder, "rebuild.db")
    dataset_id = make_dataset(engine, 2000, 2)
    session_id = start(engine, dataset_id)
    for i in range(n_labels):
        record(engine, session_id, i)
    read_s, read_cpu_s = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        events = storage.label_events(engine, session_id)
        read_s.append(time.perf_counter() - started)
        read_cpu_s.append(time.process_time() - cpu_started)
    assert len(events) == n_labels
    load_s = []
    for _ in range(repeats):
        started = time.perf_counter()
        storage.load_dataset_arrays(engine, dataset_id)
        storage.get_session(engine, session_id)
        storage.latest_snapshot(engine, session_id)
        load_s.append(time.perf_counter() - started)
    result = {
        "events_ms": 1e3 * statistics.median(read_s),
        "events_cpu_ms": 1e3 * statistics.median(read_cpu_s),
        "dataset_ms": 1e3 * statistics.median(load_s),
    }
    try:
        from core.loop import ActiveLearningLoop
    except ImportError:  # the loop is not part of storage; report what storage does alone
        return result
    X, y, _names, _display = storage.load_dataset_arrays(engine, dataset_id)
    replay_events = [(e.item_index, e.value) for e in events]
    started = time.perf_counter()
    ActiveLearningLoop.from_events(replay_events, X, strategy="random", solver="lasvm", seed=0)
    result["replay_ms"] = 1e3 * (time.perf_counter() - started)
    engine.dispose()
    return result


def bench_export(folder: Path, n_rows: int, n_features: int) -> dict[str, float]:
    _url, engine = new_database(folder, "export.db")
    dataset_id = make_dataset(engine, n_rows, n_features)
    session_id = start(engine, dataset_id)
    annotator_id = storage.get_or_create_annotator(engine, "bench")
    with writing(engine) as session:  # set-up only: all labels in one transaction
        item_ids = session.execute(select(Item.id).where(Item.dataset_id == dataset_id).order_by(Item.position))
        now = utc_now()
        session.execute(
            insert(Label),
            [
                dict(
                    session_id=session_id,
                    item_id=item_id,
                    annotator_id=annotator_id,
                    value=1 if k % 2 else -1,
                    created_at=now,
                    strategy="near-boundary",
                    solver="incremental",
                    decision_value=0.5,
                    model_version=k,
                    update_ms=1.0,
                    query_ms=0.5,
                )
                for k, item_id in enumerate(item_ids.scalars())
            ],
        )
    result = {}
    for fmt in ("csv", "jsonl"):
        path = folder / f"export.{fmt}"
        started, cpu_started = time.perf_counter(), time.process_time()
        storage.export_labels(engine, fmt=fmt, session_id=session_id, out=path)
        result[f"{fmt}_s"] = time.perf_counter() - started
        result[f"{fmt}_cpu_s"] = time.process_time() - cpu_started
        result[f"{fmt}_mb"] = path.stat().st_size / 2**20
    engine.dispose()
    return result


# -- main --------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--postgresql", metavar="URL", help="also measure on this PostgreSQL database (emptied)")
    parser.add_argument("--writer", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        url, session_id, first, count, go_file, synchronous = args.writer
        writer_process(url, int(session_id), int(first), int(count), go_file, synchronous)
        return

    n_latency = 300 if args.quick else 2000
    per_writer = 100 if args.quick else 500
    n_export = 10_000 if args.quick else 100_000
    with tempfile.TemporaryDirectory(prefix="marginlab-bench-") as tmp:
        folder = Path(tmp)
        disk_sync = bench_disk_sync(folder)
        commit_bytes = wal_bytes_per_label(folder)
        disk_sync_commit = bench_disk_sync(folder, block=round(commit_bytes))
        latency = bench_record_latency(folder, n_latency)
        latency_normal = bench_record_latency(folder, n_latency, "NORMAL")
        concurrent = bench_concurrent_writers(folder, 4, per_writer)
        concurrent_normal = bench_concurrent_writers(folder, 4, per_writer, "NORMAL")
        rebuild = bench_rebuild(folder, 1000)
        export = bench_export(folder, n_export, 10)
        if args.postgresql:
            latency_pg = bench_record_latency(folder, n_latency, server_url=args.postgresql)
            concurrent_pg = bench_concurrent_writers(folder, 4, per_writer, server_url=args.postgresql)

    median = statistics.median(latency)
    verdict = "met" if median <= TARGET_RECORD_MS else "MISSED"
    rows = [
        (
            "disk: 4 KiB append + fdatasync, median",
            f"{statistics.median(disk_sync):.2f} ms",
            "the floor of a durable commit on this disk",
        ),
        (
            f"  the same for one label's log frames ({commit_bytes / 1024:.1f} KiB)",
            f"{statistics.median(disk_sync_commit):.2f} ms",
            "what a record_label commit writes and flushes",
        ),
        ("record_label median (1 writer)", f"{median:.2f} ms", f"{verdict}: target <= {TARGET_RECORD_MS:.0f} ms"),
        ("record_label p95 (1 writer)", f"{percentile(latency, 95):.2f} ms", f"{n_latency} labels"),
        (
            "  with synchronous=NORMAL, median / p95",
            f"{statistics.median(latency_normal):.2f} / {percentile(latency_normal, 95):.2f} ms",
            "no fsync per commit: survives crashes, not power loss",
        ),
        (
            "4 concurrent writers, sustained",
            f"{concurrent['labels_per_second']:.0f} labels/s",
            f"{concurrent['labels']} labels in {concurrent['wall_s']:.1f} s, {concurrent['lost']} lost",
        ),
        (
            "  record_label under 4 writers, median / p95",
            f"{concurrent['median_ms']:.1f} / {concurrent['p95_ms']:.1f} ms",
            "",
        ),
        (
            "4 concurrent writers, synchronous=NORMAL",
            f"{concurrent_normal['labels_per_second']:.0f} labels/s",
            f"median / p95 {concurrent_normal['median_ms']:.1f} / {concurrent_normal['p95_ms']:.1f} ms, "
            f"{concurrent_normal['lost']} lost",
        ),
        (
            "rebuild 1,000-label session: read events",
            f"{rebuild['events_ms']:.1f} ms",
            f"label_events(); {rebuild['events_cpu_ms']:.1f} ms CPU",
        ),
        ("  load dataset, session, snapshot", f"{rebuild['dataset_ms']:.1f} ms", "2,000 x 2 dataset"),
    ]
    if "replay_ms" in rebuild:
        rows.append(("  replay events into core.loop", f"{rebuild['replay_ms']:.0f} ms", "lasvm + random; core's cost"))
    rows += [
        (
            f"export {n_export:,} labelled rows, CSV",
            f"{export['csv_s']:.2f} s",
            f"{export['csv_mb']:.1f} MB, 10 features; {export['csv_cpu_s']:.2f} s CPU",
        ),
        (
            f"export {n_export:,} labelled rows, JSONL",
            f"{export['jsonl_s']:.2f} s",
            f"{export['jsonl_mb']:.1f} MB, 10 features; {export['jsonl_cpu_s']:.2f} s CPU",
        ),
    ]
    if args.postgresql:
        rows += [
            (
                "PostgreSQL: record_label median / p95 (1 writer)",
                f"{statistics.median(latency_pg):.2f} / {percentile(latency_pg, 95):.2f} ms",
                f"{n_latency} labels; the server's own commit settings",
            ),
            (
                "PostgreSQL: 4 concurrent writers, sustained",
                f"{concurrent_pg['labels_per_second']:.0f} labels/s",
                f"median / p95 {concurrent_pg['median_ms']:.1f} / {concurrent_pg['p95_ms']:.1f} ms, "
                f"{concurrent_pg['lost']} lost",
            ),
        ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"MarginLab storage benchmark (SQLite {sqlite3.sqlite_version}, WAL, synchronous=FULL; "
        f"{os.cpu_count()} CPUs, load average {load:.1f})"
    )
    header = ("measure", "result", "notes")
    widths = [max(len(str(row[k])) for row in rows) for k in range(len(header))]
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()

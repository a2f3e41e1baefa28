"""Comparisons on Dask distributed: ``run_comparison(scheduler=...)``, ``compare --scheduler`` and repeated
``--data``, against a real ``LocalCluster`` of two worker processes on this machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from core import dask_runs
from core.datasets import make_gaussians
from core.experiment import SCHEDULER_ENV, SchedulerError, run_comparison, run_study, study_table
from tests.app import test_app

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]

# measured, so never the same twice: every other column must be
TIMING = {
    "rows": ["update_ms", "query_ms"],
    "references": ["seconds"],
    "summary": ["update_ms_median", "update_ms_p95", "query_ms_median", "query_ms_p95"],
}
TABLES = ["rows", "runs", "references", "summary", "stops", "stop_summary"]
RUN_PREFIXES = ("_run_strategy-", "full_data_reference-")


class Recorder(SchedulerPlugin):
    """The runs the scheduler sent to a worker and the ones that finished there."""

    def __init__(self):
        self.started: list[str] = []
        self.finished: list[str] = []

    def transition(self, key, start, finish, *args, **kwargs):
        if isinstance(key, str) and key.startswith(RUN_PREFIXES):
            if finish == "processing":
                self.started.append(key)
            elif finish == "memory":
                self.finished.append(key)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as c:
        c.recorder = Recorder()
        c.scheduler.add_plugin(c.recorder)
        yield c


@pytest.fixture(autouse=True)
def no_scheduler_from_the_environment(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)


def small_data(seed=3, n=160, separation=2.5):
    return make_gaussians(n, np.random.default_rng(seed), separation=separation)


KW = dict(
    strategies="near-boundary,random",
    budget=20,
    seeds=2,
    initial=4,
    solver_params={"C": 1.0},
    stopping="statistical,knee,margin",
)
N_TASKS = 2 * (2 + 2)  # per seed: the full-data references of incremental and lasvm, and the two strategies


@pytest.fixture(scope="module")
def serial():
    X, y = small_data()
    return run_comparison(X, y, **KW)


def assert_same(one, two):
    """Every table identical, exactly, but for the measured milliseconds and seconds."""
    for table in TABLES:
        a, b = getattr(one, table), getattr(two, table)
        drop = [c for c in TIMING.get(table, []) if c in a]
        pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop), check_exact=True, obj=table)
    assert one.config == two.config


def test_runs_on_a_scheduler_address_give_the_serial_tables(cluster, serial):
    X, y = small_data()
    before = len(cluster.recorder.finished)
    calls = []
    result = run_comparison(X, y, scheduler=cluster.scheduler_address, progress=lambda *a: calls.append(a), **KW)
    assert len(cluster.recorder.finished) - before == N_TASKS  # every run was a task on the cluster
    assert_same(serial, result)
    assert len(serial.stops) == 2 * 2 * 3 and serial.rows["n_labels"].max() == 20
    assert [(d, t) for d, t, _ in calls] == [(k, N_TASKS) for k in range(1, N_TASKS + 1)]
    assert len({desc for *_, desc in calls}) == N_TASKS


def worker_processes() -> set[int]:
    """This process's children but multiprocessing's own helper."""
    import psutil

    out = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(child.cmdline()):
                out.add(child.pid)
        except psutil.Error:  # gone meanwhile
            pass
    return out


def test_scheduler_local_starts_and_closes_its_own_cluster(serial):
    X, y = small_data()
    before = worker_processes()
    seen = []
    result = run_comparison(
        X, y, scheduler="local", n_jobs=2, progress=lambda *a: seen.append(worker_processes()), **KW
    )
    assert_same(serial, result)
    assert len(seen[0] - before) >= 2  # its two workers were there during the study
    deadline = time.monotonic() + 120  # (a guard: the wait ends as soon as they are gone)
    while worker_processes() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not worker_processes() - before  # and are gone


def test_the_environment_names_the_scheduler_and_an_explicit_argument_wins(cluster, serial, monkeypatch):
    X, y = small_data()
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    before = len(cluster.recorder.finished)
    assert_same(serial, run_comparison(X, y, **KW))
    assert len(cluster.recorder.finished) - before == N_TASKS
    assert_same(serial, run_comparison(X, y, scheduler="none", **KW))  # here, in this process
    assert len(cluster.recorder.finished) - before == N_TASKS


def test_a_raising_progress_callback_cancels_the_runs_and_the_cluster_stays_usable(cluster, serial):
    X, y = small_data(seed=4, n=600, separation=1.5)
    kw = dict(strategies="near-boundary,random", budget=120, seeds=6, initial=4)
    total = 6 * (2 + 2)

    class Cancelled(Exception):
        pass

    def cancel(done, total, description):
        raise Cancelled

    before = len(cluster.recorder.started)
    with pytest.raises(Cancelled):
        run_comparison(X, y, scheduler=cluster.scheduler_address, progress=cancel, **kw)
    deadline = time.monotonic() + 120  # (a guard: the wait ends as soon as the scheduler is empty)
    while cluster.scheduler.tasks and time.monotonic() < deadline:  # nothing left behind on the scheduler
        time.sleep(0.05)
    assert not cluster.scheduler.tasks, list(cluster.scheduler.tasks)
    started = len(cluster.recorder.started) - before
    assert 1 <= started < total  # the runs not begun never went to a worker
    time.sleep(0.5)
    assert len(cluster.recorder.started) - before == started
    # the same cluster takes the next comparison
    X, y = small_data()
    assert_same(serial, run_comparison(X, y, scheduler=cluster.scheduler_address, **KW))


def test_an_unreachable_or_malformed_scheduler_is_named_in_one_line(monkeypatch, capsys, tmp_path):
    from core.cli import main

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    X, y = small_data()
    monkeypatch.setattr(dask_runs, "SCHEDULER_TIMEOUT", 2.0)
    with pytest.raises(SchedulerError, match=rf"cannot reach the Dask scheduler at {address} \(waited 2 s\)"):
        run_comparison(X, y, scheduler=address, **KW)  # (it gave up after the time it was given)
    path = tmp_path / "d.csv"
    write_csv(path, *small_data())
    base = [
        "compare",
        "--data",
        str(path),
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--budget",
        "10",
        "--seeds",
        "1",
        "--initial",
        "4",
    ]
    for scheduler, words in [
        (address, f"cannot reach the Dask scheduler at {address} (waited 2 s)"),
        ("nonsense", "'nonsense' is not a Dask scheduler address"),
    ]:
        assert main([*base, "--scheduler", scheduler]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and words in err, err


def test_run_study_is_run_comparison_per_dataset_and_study_table_names_them(cluster):
    data = {"a": small_data(3), "b": small_data(5, n=120, separation=1.5)}
    kw = dict(KW, stopping=None)
    study = run_study(data, scheduler=cluster.scheduler_address, **kw)
    assert list(study) == ["a", "b"]
    for name, (X, y) in data.items():
        assert_same(run_comparison(X, y, **kw), study[name])
    rows = study_table(study)
    assert list(rows.columns[:2]) == ["dataset", "strategy"] and list(rows["dataset"].unique()) == ["a", "b"]
    assert len(rows) == len(study["a"].rows) + len(study["b"].rows)


# --------------------------------------------------------------------------- the command line


def write_csv(path, X, y):
    lines = ["f1,f2,outcome"] + [
        ",".join(repr(float(v)) for v in row) + f",{'sick' if t > 0 else 'well'}" for row, t in zip(X, y, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


def run_cli(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != SCHEDULER_ENV} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "core", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def test_compare_cli_with_a_scheduler_and_two_datasets_matches_the_serial_run(cluster, tmp_path):
    for folder, seed in (("one", 3), ("two", 5)):
        (tmp_path / folder).mkdir()
        write_csv(tmp_path / folder / "data.csv", *small_data(seed))
    write_csv(tmp_path / "other.csv", *small_data(7, n=120, separation=1.5))
    sources = [tmp_path / "one" / "data.csv", tmp_path / "two" / "data.csv", tmp_path / "other.csv"]
    names = [str(sources[0]), str(sources[1]), "other.csv"]  # the same file name twice: the paths tell them apart
    base = [
        "compare",
        *[a for s in sources for a in ("--data", s)],
        "--label-column",
        "outcome",
        "--positive",
        "sick",
        "--strategies",
        "near-boundary,random",
        "--budget",
        "16",
        "--seeds",
        "2",
        "--initial",
        "4",
        "--stopping",
        "knee,margin",
    ]
    r = run_cli(*base, "--out", tmp_path / "serial.csv", "--stops-out", tmp_path / "serial-stops.csv")
    assert r.returncode == 0, r.stderr
    before = len(cluster.recorder.finished)
    d = run_cli(
        *base,
        "--out",
        tmp_path / "dask.csv",
        "--stops-out",
        tmp_path / "dask-stops.csv",
        "--scheduler",
        cluster.scheduler_address,
    )
    assert d.returncode == 0, d.stderr
    assert len(cluster.recorder.finished) - before == 3 * 2 * (2 + 2)  # datasets x seeds x tasks, all on it
    for name in names:
        assert f"{name}: 160 items, positive sick" in d.stdout or f"{name}: 120 items, positive sick" in d.stdout
    assert d.stdout.count("near-boundary      incremental") == 3
    serial, dask = pd.read_csv(tmp_path / "serial.csv"), pd.read_csv(tmp_path / "dask.csv")
    assert list(dask.columns[:3]) == ["dataset", "strategy", "solver"]
    assert list(dask["dataset"].unique()) == names
    timing = ["update_ms", "query_ms"]
    pd.testing.assert_frame_equal(serial.drop(columns=timing), dask.drop(columns=timing), check_exact=True)
    stops = pd.read_csv(tmp_path / "dask-stops.csv")
    assert list(stops["dataset"].unique()) == names
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "serial-stops.csv"), stops, check_exact=True)

    # the summary tables printed are the same but for the measured milliseconds
    def table(out):
        return [line.split()[:6] for line in out.splitlines() if " written to " not in line]

    assert table(r.stdout) == table(d.stdout)


def test_one_dataset_keeps_its_output_and_json_lists_several(tmp_path):
    import json

    write_csv(tmp_path / "a.csv", *small_data(3))
    write_csv(tmp_path / "b.csv", *small_data(5))
    base = [
        "compare",
        "--label-column",
        "outcome",
        "--strategies",
        "random",
        "--budget",
        "10",
        "--seeds",
        "1",
        "--initial",
        "4",
        "--json",
    ]
    one = run_cli(*base, "--data", tmp_path / "a.csv", "--out", tmp_path / "a-rows.csv")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["dataset"] == "a"  # as before: the dataset's own name, no dataset column
    assert pd.read_csv(tmp_path / "a-rows.csv").columns[0] == "strategy"
    two = run_cli(*base, "--data", tmp_path / "a.csv", "--data", tmp_path / "b.csv")
    assert two.returncode == 0, two.stderr
    payload = json.loads(two.stdout)
    assert [d["dataset"] for d in payload["datasets"]] == ["a.csv", "b.csv"]

    def untimed(summary):
        return [{k: v for k, v in row.items() if "_ms_" not in k} for row in summary]

    assert untimed(payload["datasets"][0]["summary"]) == untimed(json.loads(one.stdout)["summary"])
    same = run_cli(*base, "--data", tmp_path / "a.csv", "--data", tmp_path / "a.csv")
    assert same.returncode == 2 and "names" in same.stderr and "twice" in same.stderr


# --------------------------------------------------------------------------- the Compare page


def test_the_compare_service_and_page_use_the_scheduler_of_the_environment(cluster, db_url, monkeypatch):
    from app.services import MarginLab, ServiceError
    from tests.app.test_app import shown, start_app

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    request = dict(strategies=["near-boundary", "random"], budget=8, seeds=2, initial=4)
    here = svc.comparison(svc.run_comparison(dataset_id, **request))
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    assert svc.comparison_scheduler() == cluster.scheduler_address
    before = len(cluster.recorder.finished)
    told = []
    there = svc.comparison(svc.run_comparison(dataset_id, progress=lambda f, t: told.append(t), **request))
    assert len(cluster.recorder.finished) - before == 2 * (2 + 2)
    timing = ["update_ms", "query_ms"]
    pd.testing.assert_frame_equal(here.rows.drop(columns=timing), there.rows.drop(columns=timing), check_exact=True)
    assert told[-1].startswith("8/8 runs done")
    at = start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    assert f"Runs on Dask scheduler {cluster.scheduler_address}" in shown(at.caption)
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://127.0.0.1:notaport")
    with pytest.raises(ServiceError, match="The comparison could not run on Dask: 'tcp://127.0.0.1:notaport'"):
        svc.run_comparison(dataset_id, **request)

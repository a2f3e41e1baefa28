"""Runs of a comparison as tasks on Dask distributed (``core.experiment``'s ``scheduler``).

Light to import: Dask itself is imported only when runs go to a scheduler, so the app and the
command line start as fast without it.  ``resolve_scheduler`` says where runs go (an explicit
value wins over ``$MARGINLAB_DASK_SCHEDULER``); ``run_on_dask`` sends one task per run, to a
``LocalCluster`` it starts on this machine (``"local"``) or to the scheduler at an address, and
gives the results back in the tasks' order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

#: the environment variable that names a Dask scheduler for comparisons (``run_comparison(scheduler=...)``)
SCHEDULER_ENV = "MARGINLAB_DASK_SCHEDULER"
#: seconds to wait for a Dask scheduler to answer before giving up
SCHEDULER_TIMEOUT = 10.0


class SchedulerError(ConnectionError):
    """The Dask scheduler a comparison was sent to cannot be used (unreachable, or Dask is missing)."""


def resolve_scheduler(scheduler: str | None = None) -> str | None:
    """Where a comparison's runs go: ``None`` (in this process, or ``n_jobs`` processes), ``"local"``
    or a scheduler address.  An explicit ``scheduler`` wins over ``$MARGINLAB_DASK_SCHEDULER``, which
    is read only when ``scheduler`` is None; ``""`` or ``"none"`` means no scheduler either way."""
    if scheduler is None:
        scheduler = os.environ.get(SCHEDULER_ENV)
    scheduler = (scheduler or "").strip()
    return None if scheduler.lower() in ("", "none") else scheduler


def run_on_dask(
    tasks: list[tuple[str, Callable, tuple]],
    scheduler: str,
    n_workers: int | None,
    progress: Callable[[int, int, str], None] | None,
) -> list[Any]:
    """``fn(*args)`` of every ``(description, fn, args)`` task, one Dask task each, on a ``LocalCluster``
    started here (``"local"``, of ``n_workers`` processes when more than 1, else one per core) or the
    scheduler at an address; the results in the tasks' order.  ``progress(done, total, description)``
    is called as each finishes.

    The data arrays are sent to the cluster once; each task calls the same function as a run in this
    process, so the results are the same.  An exception from ``progress`` (a Cancel) or from a run
    cancels the runs not yet done; what this function started (client, local cluster) is closed."""
    try:
        from distributed import Client, LocalCluster, as_completed
        from distributed.comm import get_address_host_port
    except ImportError as error:
        raise SchedulerError(f"running on a Dask scheduler needs the dask and distributed packages ({error})") from None
    if scheduler != "local":
        try:
            get_address_host_port(scheduler)  # (the form only: no connection yet)
        except ValueError as error:
            raise SchedulerError(
                f"{scheduler!r} is not a Dask scheduler address such as tcp://host:8786, nor "
                f"'local' ({_first_line(error)})"
            ) from None
    cluster = client = None
    try:
        if scheduler == "local":
            try:
                # on this machine only, without a dashboard (the scheduler's own small HTTP server for
                # health checks takes a free port, not 8787, which another cluster may hold)
                cluster = LocalCluster(
                    n_workers=int(n_workers) if n_workers and int(n_workers) > 1 else None,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                )
            except Exception as error:
                raise SchedulerError(f"could not start a local Dask cluster: {_first_line(error)}") from None
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            client = Client(address, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
        except Exception as error:
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} (waited {SCHEDULER_TIMEOUT:g} s): {_first_line(error)}"
            ) from None
        sent: dict[int, Any] = {}  # id of an array -> its future on the cluster (each array is sent once)
        for _, _, args in tasks:
            for a in args:
                if isinstance(a, np.ndarray) and id(a) not in sent:
                    sent[id(a)] = client.scatter(a, hash=False)
        futures = {}
        for k, (desc, fn, args) in enumerate(tasks):
            remote = tuple(sent[id(a)] if isinstance(a, np.ndarray) else a for a in args)
            futures[client.submit(fn, *remote, pure=False)] = (k, desc)
        try:
            return collect_in_order(as_completed(list(futures), loop=client.loop), futures, progress)
        except BaseException:
            client.cancel(list(futures))  # a cancel or a failure: the runs not yet done are dropped
            raise
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def collect_in_order(
    completed: Iterable, futures: dict[Any, tuple[int, str]], progress: Callable[[int, int, str], None] | None
) -> list[Any]:
    """The results of ``futures`` (future -> (task index, description)), taken as ``completed`` yields
    them (Dask's or ``concurrent.futures``' ``as_completed``) and put back in the tasks' order;
    ``progress(done, total, description)`` after each."""
    results: list[Any] = [None] * len(futures)
    for done, fut in enumerate(completed, start=1):
        k, desc = futures[fut]
        results[k] = fut.result()
        if progress:
            progress(done, len(futures), desc)
    return results


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0][:300] if text else "") or type(error).__name__


__all__ = [
    "SCHEDULER_ENV",
    "SCHEDULER_TIMEOUT",
    "SchedulerError",
    "collect_in_order",
    "resolve_scheduler",
    "run_on_dask",
]

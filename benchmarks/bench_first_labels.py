"""The first labels of a first start, without a browser: how long each label of the demo session waits
while the app's background compile (``core.solvers._compile.preload``) is still at work.

In a new process with an empty Numba cache (a temporary ``NUMBA_CACHE_DIR``), as the app's first start
does: the background compile starts, the service opens a temporary database with the demo dataset, the
demo session starts with the New session form's defaults (C and gamma chosen from the labels) and the
true labels are given one after the other (``--labels``, 40 by default: the choices of C and gamma at
20 and 40 included), at once or ``--think`` seconds apart.  Printed: for each label, the seconds
``answer`` took (the label saved, the model taught, the next item chosen), how many parts of the plan
were ready and which was being compiled, and the load average.

    .venv/bin/python benchmarks/bench_first_labels.py [--labels N] [--think SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, tempfile, time
from core.solvers import _compile
from app.services import LABEL_STRATEGIES, MarginLab
from storage import repository as repo

n_labels, think = int(sys.argv[1]), float(sys.argv[2])
_compile.preload()
t0 = time.perf_counter()
svc = MarginLab.from_url(f"sqlite:///{tempfile.mkdtemp()}/demo.db")
dataset_id = svc.ensure_demo_dataset()
y_true = repo.load_dataset_arrays(svc.engine, dataset_id)[1]
run = svc.start_session(dataset_id=dataset_id, annotator="owner", strategy=LABEL_STRATEGIES[0], model="auto",
                        auto_hyper=True)
print(json.dumps({"first_item_s": time.perf_counter() - t0}), flush=True)
for k in range(1, n_labels + 1):
    if k > 1:
        time.sleep(think)  # (a person looking at the item)
    before = _compile.progress()
    t = time.perf_counter()
    assert run.answer(int(y_true[run.shown.item_index]), item_index=run.shown.item_index).ok
    seconds = time.perf_counter() - t
    after = _compile.progress()
    print(json.dumps({"label": k, "seconds": seconds, "ready_before": before.done, "ready_after": after.done,
                      "compiling": before.current, "load": os.getloadavg()[0]}), flush=True)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=40)
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="seconds between an answer and the next, as a person looks at the item (default 0: "
        "the worst case for the waits)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="marginlab-numba-") as cache:
        env = dict(
            os.environ,
            NUMBA_CACHE_DIR=cache,
            PYTHONPATH=str(ROOT),
            MARGINLAB_OWNER_PASSWORD=os.environ.get("MARGINLAB_OWNER_PASSWORD", "bench-first-labels"),
        )
        print(f"load average at the start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(args.labels), str(args.think)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        for line in child.stdout:
            row = json.loads(line)
            if "first_item_s" in row:
                print(f"first item shown after {row['first_item_s']:.1f} s", flush=True)
            else:
                print(
                    f"label {row['label']:3d}: {row['seconds']:7.1f} s  parts ready {row['ready_before']:2d}->"
                    f"{row['ready_after']:2d}  compiling: {row['compiling']}  load {row['load']:.1f}",
                    flush=True,
                )
        return child.wait()


if __name__ == "__main__":
    sys.exit(main())

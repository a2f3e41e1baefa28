"""The compile plan of ``core.solvers._compile``: what a first start compiles, in which order, and what
it tells the person waiting.

The plan must hold every compiled routine (nothing left for a first use to compile unannounced), the
demo's first item and first label must need only its first units (the app compiles those first, in
the background), the console must hear of a compile while it runs and hear nothing on a start that
loads from the cache, and a routine compiled by the plan's worker processes must give the bits of
one compiled on first use.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from numba.core import event
from numba.core.compiler_lock import global_compiler_lock

from core import _kernels_jit as jit
from core.solvers import _compile
from core.solvers._compile import N_FOR_LABELLING, PLAN, Reporter, Unit

ROOT = Path(__file__).resolve().parents[2]


def kernel_units(plan) -> list[tuple[str, str]]:
    return [(u.name, u.dtype) for u in plan if u.kind == "kernel"]


def numba_modules() -> set[str]:
    """The project's modules that import Numba (read from their source, not imported)."""
    found = set()
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "numba" or name.startswith("numba.") for name in names):
                found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


# --------------------------------------------------------------------------- what the plan holds


def test_the_plan_holds_every_kernel_routine_for_each_dtype_it_serves_once():
    expected = {
        (name, dtype)
        for name in jit.ROUTINE_NAMES
        for dtype in (("float64",) if name in jit.FLOAT64_ONLY else ("float64", "float32"))
    }
    assert sorted(kernel_units(PLAN)) == sorted(expected)
    assert len(set(PLAN)) == len(PLAN)
    assert {u.name for u in PLAN if u.kind == "solver"} == set(_compile.SOLVER_WARM_UPS)


def test_every_module_that_compiles_with_numba_is_compiled_by_the_plan():
    # after the plan (loaded from the cache here), no compiled function of the project is left for a
    # first use to compile: each has machine code for a signature, or is called by one that has (and is
    # compiled into it: a function loaded from the cache brings its callees' code with it)
    _compile.warm_up(PLAN, Reporter(len(PLAN), "", write=lambda line: None))
    modules = numba_modules()
    assert "core._kernels_jit" in modules and "core.solvers._lasvm_compiled" in modules
    uncompiled = []
    for name in sorted(modules - {"core._kernels_jit"}):  # (its routines: the test above)
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        jitted = {
            attr: value
            for attr, value in vars(module).items()
            if getattr(value, "py_func", None) is not None
            and value.py_func.__module__ == name
            and value.targetoptions.get("inline", "never") == "never"
        }
        covered = {attr for attr, value in jitted.items() if value.signatures}
        while True:
            called = {callee for caller in covered for callee in jitted[caller].py_func.__code__.co_names}
            if called & set(jitted) <= covered:
                break
            covered |= called & set(jitted)
        uncompiled += [f"{name}.{attr}" for attr in sorted(set(jitted) - covered)]
    assert not uncompiled, f"compiled on first use, not by the plan: {uncompiled}"


def test_the_demo_s_first_160_labels_need_only_the_plan_s_first_units_first_item_first_labels_first_choice(
    tmp_path, monkeypatch
):
    """The Label page's default session on the bundled digits (the New session form as it opens: C and gamma
    chosen from the labels): the routines it asks for to show its first item are the plan's first, those
    for its labels before the first choice of C and gamma within the first ``N_FOR_LABELLING`` units, with
    its solver, and those for its first 160 labels (the choices at 20, 40, 80 and 160 included) are the
    first ``N_FOR_CHOOSING``: every unit it needs comes before every unit it does not need."""
    from app.services import LABEL_STRATEGIES, MarginLab
    from core.solvers.auto_hyper import DEFAULT_MOMENTS
    from storage import repository as repo

    asked: dict[tuple[str, str], int] = {}  # each routine asked for, and the label at which it was first
    label = [0]
    real = jit.routine

    def recording(name, dtype="float64"):
        asked.setdefault((name, dtype), label[0])
        return real(name, dtype)

    monkeypatch.setenv("MARGINLAB_OWNER_PASSWORD", "plan-test-password")
    svc = MarginLab.from_url(f"sqlite:///{tmp_path / 'demo.db'}")
    dataset_id = svc.ensure_demo_dataset()
    y_true = repo.load_dataset_arrays(svc.engine, dataset_id)[1]
    monkeypatch.setattr(jit, "routine", recording)
    run = svc.start_session(
        dataset_id=dataset_id, annotator="owner", strategy=LABEL_STRATEGIES[0], model="auto", auto_hyper=True
    )
    for label[0] in range(1, 161):
        assert run.answer(int(y_true[run.shown.item_index]), item_index=run.shown.item_index).ok

    assert run.info.params["solver_params"]["auto"] == ["C", "gamma"] and len(run.answers) == 160
    for_first_item = {key for key, at in asked.items() if at == 0}
    before_choice = {key for key, at in asked.items() if at < DEFAULT_MOMENTS[0]}
    assert for_first_item and for_first_item <= set(kernel_units(PLAN[: len(_compile.FIRST_ITEM_ROUTINES)]))
    assert before_choice <= set(kernel_units(PLAN[:N_FOR_LABELLING])), before_choice - set(kernel_units(PLAN))
    assert Unit("solver", run.info.solver) in PLAN[:N_FOR_LABELLING]
    needed = {Unit("kernel", name, dtype) for name, dtype in asked} | {Unit("solver", run.info.solver)}
    assert set(PLAN[: len(needed)]) == needed, [u.label for u in PLAN[: len(needed)] if u not in needed]
    assert len(needed) == _compile.N_FOR_CHOOSING and _compile.AUTO_FIRST_MOMENT == DEFAULT_MOMENTS[0]


def test_phases_keep_each_function_in_one_process_and_the_solvers_after_the_kernels():
    kernels, solvers = _compile.phases(PLAN)
    assert [u for group in kernels + solvers for u in group].count(PLAN[0]) == 1
    assert sorted(map(repr, (u for group in kernels + solvers for u in group))) == sorted(map(repr, PLAN))
    for phase in (kernels, solvers):
        entries = [{u.cache_entry for u in group} for group in phase]
        assert all(len(e) == 1 for e in entries)  # a group is one cache entry ...
        assert len({next(iter(e)) for e in entries}) == len(phase)  # ... and no entry is split over groups
    assert {u.kind for g in kernels for u in g} == {"kernel"} and {u.kind for g in solvers for u in g} == {"solver"}
    assert [u.dtype for u in kernels[[g[0].name for g in kernels].index("dense_rows")]] == ["float64", "float32"]


# --------------------------------------------------------------------------- what the console hears


class FakeUnit:
    """A unit whose compile is a Numba compile event (``compiles``) or a load from the cache (no event),
    held open until ``release`` is set when given."""

    def __init__(self, name: str, compiles: bool, release: threading.Event | None = None):
        self.name, self.compiles, self.release = name, compiles, release
        self.label = f"kernel {name} (float64)"

    def compile(self) -> None:
        if not self.compiles:
            return
        with event.trigger_event("numba:compile", data={"dispatcher": None, "args": (), "return_type": None}):
            if self.release is not None:
                assert self.release.wait(60), "the console never said what was being compiled"


def test_a_compile_is_announced_while_it_runs_and_each_compiled_unit_is_counted():
    lines: list[str] = []
    announced = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        if "compiling kernel slow" in line:
            announced.set()

    plan = [FakeUnit("slow", True, release=announced), FakeUnit("cached", False), FakeUnit("quick", True)]
    reporter = Reporter(len(plan), "compiling for this computer (first start only).", write)
    results = _compile.warm_up(plan, reporter)
    reporter.finished(len(plan))

    assert [compiled for _, _, compiled in results] == [True, False, True]
    assert lines[0] == "MarginLab: compiling for this computer (first start only)."
    assert lines[1].startswith("MarginLab: compiling kernel slow (float64) (0/3 ready")  # while it ran
    assert lines[2].startswith("MarginLab: compiled 1/3 parts: kernel slow (float64) in ")
    assert lines[3].startswith("MarginLab: compiled 3/3 parts: kernel quick (float64) in ")  # (the load is not news)
    assert lines[4].startswith("MarginLab: compiled code ready (3/3 parts) after ")
    assert len(lines) == 5


def test_a_start_that_loads_everything_from_the_cache_says_nothing():
    lines: list[str] = []
    plan = [FakeUnit("a", False), FakeUnit("b", False)]
    reporter = Reporter(len(plan), "compiling", lines.append)
    assert [c for _, _, c in _compile.warm_up(plan, reporter)] == [False, False]
    reporter.finished(len(plan))
    assert lines == []


def test_progress_tells_the_pages_while_the_units_for_labelling_are_compiled():
    state = _compile._State()
    state.begin()
    seen = []
    plan = [FakeUnit(f"u{k}", True) for k in range(N_FOR_LABELLING + 2)]

    class Watching(FakeUnit):
        def compile(self) -> None:
            seen.append(state.snapshot())
            super().compile()

    plan = [Watching(u.name, True) for u in plan]
    _compile.warm_up(plan, Reporter(len(plan), "", write=lambda line: None), state)
    assert not seen[0].preparing_first_labels  # (nothing compiled yet in this state)
    assert [p.preparing_first_labels for p in seen[1:]] == [True] * (N_FOR_LABELLING - 1) + [False] * 2
    assert [p.ready_for_labelling for p in seen] == [*range(N_FOR_LABELLING), N_FOR_LABELLING, N_FOR_LABELLING]
    assert state.snapshot().finished and not state.snapshot().preparing_first_labels


def test_the_kernel_routines_switch_the_vectoriser_on_only_under_numba_s_compiler_lock(monkeypatch):
    """The SLP setting is global: set while another thread compiles a solver loop, that loop would
    be compiled differently depending on timing."""
    real = jit.numba_config
    held = []

    class Recording:
        def __getattr__(self, name):
            return getattr(real, name)

        def __setattr__(self, name, value):
            if name == "SLP_VECTORIZE":
                held.append(global_compiler_lock.is_locked())
            setattr(real, name, value)

    monkeypatch.setattr(jit, "numba_config", Recording())
    monkeypatch.delitem(jit._dispatchers, ("dot", "float64"), raising=False)
    assert float(jit.routine("dot")(np.ones(3), np.ones(3))) == 3.0
    assert held == [True, True]  # (set, then restored)


def test_a_label_waiting_for_the_routine_the_background_compiles_gets_it_though_the_next_compile_begins(monkeypatch):
    """A first start's 20th label asked for a routine the background compile was compiling; when that
    compile ended, the background took Numba's compiler lock again at once for its next part, and the
    label waited through that one too (it waited for the lock, not for its routine)."""
    key = ("dot", "float64")
    monkeypatch.delitem(jit._dispatchers, key, raising=False)
    compiling, release, label_done = threading.Event(), threading.Event(), threading.Event()
    real_signatures = jit._signatures

    def held(name, dtype):  # (called while the routine is compiled: held there until released)
        if (name, dtype) == key:
            compiling.set()
            assert release.wait(60)
        return real_signatures(name, dtype)

    monkeypatch.setattr(jit, "_signatures", held)
    seen: dict[str, object] = {}

    def background() -> None:
        jit.routine("dot")
        with global_compiler_lock:  # the next part's compile, at once
            seen["label_done_meanwhile"] = label_done.wait(30)

    def label() -> None:
        seen["value"] = float(jit.routine("dot")(np.ones(3), np.ones(3)))
        label_done.set()

    compiler = threading.Thread(target=background)
    compiler.start()
    assert compiling.wait(60)
    asking = threading.Thread(target=label)
    asking.start()
    for _ in range(6000):  # until the label is inside routine() (it waits there)
        frame = sys._current_frames().get(asking.ident)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        if "routine" in names:
            break
        threading.Event().wait(0.01)
    release.set()
    compiler.join()
    asking.join()
    assert seen == {"value": 3.0, "label_done_meanwhile": True}


# --------------------------------------------------------------------------- the same bits, early or late

COMPUTE = """
import json, sys
import numpy as np
from numba.core import event
from core import _kernels_jit as jit
compiled = []
class Seen(event.Listener):
    def on_start(self, ev): compiled.append(1)
    def on_end(self, ev): pass
event.register("numba:compile", Seen())
rng = np.random.default_rng(7)
X = np.ascontiguousarray(rng.normal(size=(37, 29)))
out = np.empty(37)
jit.routine("dense_row_terms")(X, np.arange(37), False, out)
print(json.dumps({"bits": out.tobytes().hex(), "compiled": bool(compiled)}))
"""


@pytest.mark.slow
@pytest.mark.processes  # python -c in a subprocess
def test_a_routine_compiled_by_the_plan_s_workers_gives_the_bits_of_one_compiled_on_first_use(tmp_path):
    def python(code: str, cache: Path) -> str:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    early, late = tmp_path / "early", tmp_path / "late"
    # early: a worker process of the plan compiles it into the cache, then a new process loads it
    assert (
        python(
            "from core.solvers._compile import Unit, compile_group\n"
            "print(compile_group([Unit('kernel', 'dense_row_terms')])[0][2])",
            early,
        )
        == "True"
    )
    loaded = json.loads(python(COMPUTE, early))
    # late: a process with an empty cache compiles it at its first use
    first_use = json.loads(python(COMPUTE, late))
    assert (loaded["compiled"], first_use["compiled"]) == (False, True)
    assert loaded["bits"] == first_use["bits"]


@pytest.mark.processes
def test_the_compile_command_runs_the_whole_plan_in_two_processes_and_says_so():
    done = subprocess.run(
        [sys.executable, "-m", "core.solvers._compile", "--jobs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"MarginLab: compiled code ready: {len(PLAN)} parts ("), done.stderr[-3000:]


def test_a_start_after_an_interrupted_compile_says_it_resumes_not_that_it_is_the_first():
    lines: list[str] = []
    plan = [FakeUnit("a", False), FakeUnit("b", False), FakeUnit("c", True)]  # two compiled by an earlier start
    reporter = Reporter(len(plan), _compile.BACKGROUND_INTRO, lines.append)
    _compile.warm_up(plan, reporter)
    assert "first start" not in lines[0], lines[0]
    assert "resuming: 2 of 3 parts were compiled by an earlier start" in lines[0], lines[0]
    fresh: list[str] = []
    first = Reporter(2, _compile.BACKGROUND_INTRO, fresh.append)
    _compile.warm_up([FakeUnit("a", True), FakeUnit("b", True)], first)
    assert "resuming" not in fresh[0] and "(once" in fresh[0], fresh[0]

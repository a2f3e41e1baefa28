"""A strategy and a solver are each one registry entry, and every list derives from the registries.

A toy strategy and a toy solver, each one function or class plus one entry (registered here and removed
after each test), are seen by the command line's choices, the New session form and the loop; and no module
outside the two registries lists strategy or solver names or compares against them.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from core import solvers, strategies
from core.datasets import make_gaussians
from core.loop import ActiveLearningLoop
from core.solvers.base import OnlineSolver, StepResult
from core.strategies import Pool, Query, Strategy
from tests.app import test_app
from tests.app.test_app import click, start_app

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the toys: one class, one function


class KernelPerceptron(OnlineSolver):
    """A kernel perceptron without bias: an example joins the model, with coefficient y, when the model
    gets it wrong as it is learned."""

    name = "toy-perceptron"
    has_bias = False

    def _on_store_grown(self, n_new: int) -> None:
        self.coef = np.concatenate([getattr(self, "coef", np.zeros(0)), np.zeros(n_new)])

    def learn(self, i, y):
        i, y = self._check_learnable(i, y)
        wrong = y * float(self.decision_function([i])[0]) <= 0
        self.y[i] = y
        self.learned_order.append(i)
        self.coef[i] = y if wrong else 0.0
        return StepResult(status="ok" if wrong else "unchanged")

    def unlearn(self, i):
        i = self._check_unlearnable(i)
        self.y[i] = 0
        self.learned_order.remove(i)
        self.coef[i] = 0.0
        return StepResult(status="ok")

    def coefficients(self):
        sv = np.flatnonzero(self.coef).astype(np.intp)
        return sv, self.coef[sv].copy(), 0.0

    def _state_arrays(self):
        return {"coef": self.coef.copy()}

    def _load_state_arrays(self, arrays, meta):
        self.coef = np.array(arrays["coef"], dtype=np.float64)


def first_unlabelled(model, pool: Pool, rng=None) -> Query | None:
    """The unlabelled item with the lowest index."""
    if pool.n_available == 0:
        return None
    i = int(pool.candidates[0])
    return Query(i, float(pool.decision(model, [i])[0]), "toy-first", "the first unlabelled item")


def stream_in_order(model, pool: Pool, rng=None, *, order, cursor=0, threshold=1.0) -> Query | None:
    """The next unlabelled item of the stream whose |f| is within ``threshold``, counting those passed over."""
    n = len(order)
    passed = 0
    for step in range(n):
        at = (cursor + step) % n
        i = int(order[at])
        if pool.available[i]:
            f = float(pool.decision(model, [i])[0])
            if abs(f) <= threshold:
                return Query(i, f, "toy-stream", "next in the stream", passed_over=passed, cursor=(at + 1) % n)
            passed += 1
    return None


TOY_SOLVER = solvers.Solver("toy-perceptron", KernelPerceptron)
TOY_STRATEGY = Strategy(
    "toy-first", first_unlabelled, default_solver="toy-perceptron", words="Toy: the first unlabelled item"
)
TOY_STREAM = Strategy("toy-stream", stream_in_order, default_solver="toy-perceptron", streams=True)


@pytest.fixture
def toys():
    solvers.register(TOY_SOLVER)
    strategies.register(TOY_STRATEGY)
    strategies.register(TOY_STREAM)
    try:
        yield
    finally:
        strategies.unregister("toy-stream")
        strategies.unregister("toy-first")
        solvers.unregister("toy-perceptron")


def data(n=60, seed=0):
    return make_gaussians(n, np.random.default_rng(seed), separation=2.5)


# --------------------------------------------------------------------------- the registries themselves


def test_the_registries_hold_the_entries_the_contracts_name():
    assert strategies.names() == (
        "largest-positive",
        "near-boundary",
        "randomized-search",
        "autoactive",
        "ramp-region",
        "random",
        "gradient",
    )
    assert solvers.names() == ("incremental", "lasvm", "ramp", "active-set", "dual-cd")
    # dual-cd is found by name (the review model's solver on sparse rows) but offered nowhere on its own
    assert solvers.SOLVER_NAMES == ("incremental", "lasvm", "ramp", "active-set") and not solvers.get("dual-cd").offered
    assert strategies.STRATEGY_NAMES == strategies.names()
    assert strategies.get("ramp-region").streams and strategies.get("gradient").needs_oracle
    assert {s.name for s in strategies.REGISTRY.entries(lambda e: e.needs_whole_pool)} == {
        "largest-positive",
        "near-boundary",
    }
    assert strategies.get_strategy("autoactive") is strategies.autoactive
    for entry in solvers.REGISTRY.entries():  # the entry and its class agree (checked when it is loaded)
        cls = solvers.solver_class(entry.name)
        assert (cls.name, cls.exact_unlearn) == (entry.name, entry.exact_unlearn)


def test_registering_checks_the_entry_and_unknown_names_are_refused_naming_the_registered_ones(toys):
    with pytest.raises(ValueError, match="registered already"):
        strategies.register(TOY_STRATEGY)
    with pytest.raises(ValueError, match="unknown default solver 'nowhere'; choose one of incremental, lasvm"):
        strategies.register(Strategy("toy-lost", first_unlabelled, default_solver="nowhere"))
    with pytest.raises(ValueError, match="not both"):
        Strategy("toy-both", first_unlabelled, "lasvm", needs_whole_pool=True, streams=True)
    with pytest.raises(TypeError, match="exact_unlearn"):
        solvers.register(solvers.Solver("toy-perceptron-2", KernelPerceptron))  # its class says another name
    with pytest.raises(ValueError, match="unknown strategy 'closest'; choose one of .*toy-first"):
        strategies.get("closest")
    with pytest.raises(ValueError, match="unknown solver 'svc'; choose one of .*toy-perceptron"):
        solvers.solver_class("svc")
    assert "toy-first" not in strategies.REGISTRY.names(lambda e: e.needs_oracle)


def test_the_lists_derived_from_the_registries_follow_them():
    from app.services import COMPARE_STRATEGIES, DEFAULT_SOLVER, LABEL_STRATEGIES, SOLVERS, STRATEGY_WORDS
    from core.solvers._compile import SOLVER_WARM_UPS

    before = (tuple(LABEL_STRATEGIES), tuple(COMPARE_STRATEGIES), tuple(SOLVERS))
    assert LABEL_STRATEGIES[0] == strategies.DEFAULT_STRATEGY and "gradient" not in LABEL_STRATEGIES
    assert COMPARE_STRATEGIES[-1] == "gradient" and "toy-first" not in LABEL_STRATEGIES
    solvers.register(TOY_SOLVER)
    strategies.register(TOY_STRATEGY)
    try:
        assert LABEL_STRATEGIES == (*before[0], "toy-first") and COMPARE_STRATEGIES[-2:] == ("toy-first", "gradient")
        assert SOLVERS == (*before[2], "toy-perceptron") and "toy-perceptron" not in SOLVER_WARM_UPS
        assert DEFAULT_SOLVER["toy-first"] == "toy-perceptron"
        assert STRATEGY_WORDS["toy-first"] == "Toy: the first unlabelled item"
    finally:
        strategies.unregister("toy-first")
        solvers.unregister("toy-perceptron")
    assert (tuple(LABEL_STRATEGIES), tuple(COMPARE_STRATEGIES), tuple(SOLVERS)) == before
    assert "toy-first" not in DEFAULT_SOLVER and "toy-first" not in STRATEGY_WORDS


# --------------------------------------------------------------------------- the loop


def test_the_loop_runs_a_toy_strategy_on_a_toy_solver(toys):
    X, y = data()
    loop = ActiveLearningLoop(X, strategy="toy-first", seed=3)
    assert loop.solver_name == "toy-perceptron" and isinstance(loop.solver, KernelPerceptron)
    asked = []
    for _ in range(8):
        q = loop.next_query()
        expected = None if loop.in_cold_start else int(np.flatnonzero(~loop.labelled_mask)[0])
        asked.append((q.strategy, q.index, expected))
        loop.teach(q.index, int(y[q.index]))
    chosen = [(index, expected) for strategy, index, expected in asked if strategy == "toy-first"]
    assert len(chosen) >= 4 and all(index == expected for index, expected in chosen), asked
    assert all(s.endswith("(cold start)") for s, _, _ in asked[: len(asked) - len(chosen)])
    assert loop.solver.n_support_ >= 1

    # undo asks the same again; a restored loop continues as the original, bit for bit
    q = loop.next_query()
    loop.teach(q.index, int(y[q.index]))
    loop.undo()
    assert loop.next_query().index == q.index
    arrays, meta = loop.to_state()
    restored = ActiveLearningLoop.from_state(arrays, meta, X)
    for _ in range(4):
        a, b = loop.next_query(), restored.next_query()
        assert (a.index, a.score) == (b.index, b.score)
        loop.teach(a.index, int(y[a.index]))
        restored.teach(b.index, int(y[b.index]))
    assert np.array_equal(loop.pool_scores(), restored.pool_scores())


def test_the_loop_walks_a_stream_strategy_from_its_entry(toys):
    X, y = data(seed=1)
    loop = ActiveLearningLoop(X, strategy="toy-stream", seed=2, strategy_params={"threshold": 0.5})
    for _ in range(12):
        q = loop.next_query()
        loop.teach(q.index, int(y[q.index]))
    kinds = {row.asked_by for row in loop.history}
    assert kinds <= {"toy-stream", "toy-stream (cold start)"} and "toy-stream" in kinds
    # the stream is the pool in the loop's seeded order (its cold start: the stream's first item), and the
    # items it looks at are counted
    order = np.random.default_rng([2, 0x5EED]).permutation(len(X))
    assert loop.history[0].item == order[0] and loop.seen >= 12


# --------------------------------------------------------------------------- the command line


def test_the_command_line_offers_and_runs_the_toys(toys, tmp_path, capsys, monkeypatch):
    from core import cli

    monkeypatch.delenv("MARGINLAB_DASK_SCHEDULER", raising=False)
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for command in ("fit", "compare"):
        (solver,) = [a for a in subparsers[command]._actions if a.dest == "solver"]
        assert "toy-perceptron" in solver.choices
    (strategy_list,) = [a for a in subparsers["compare"]._actions if a.dest == "strategies"]
    assert "toy-first" in strategy_list.help and "ramp-region" in strategy_list.help
    assert "toy-perceptron" in subparsers["fit"].format_help()

    X, y = data(120)
    path = tmp_path / "toy.csv"
    path.write_text(
        "a,b,outcome\n"
        + "".join(f"{float(a)!r},{float(b)!r},{'yes' if t > 0 else 'no'}\n" for (a, b), t in zip(X, y, strict=True))
    )
    common = ["--data", str(path), "--label-column", "outcome", "--positive", "yes"]
    assert (
        cli.main(
            [
                "compare",
                *common,
                "--strategies",
                "toy-first",
                "--budget",
                "12",
                "--seeds",
                "1",
                "--initial",
                "4",
                "--json",
            ]
        )
        == 0
    )
    summary = {row["strategy"]: row for row in json.loads(capsys.readouterr().out)["summary"]}
    assert summary["toy-first"]["solver"] == "toy-perceptron"  # the strategy's default, from its entry
    assert cli.main(["fit", *common, "--solver", "toy-perceptron", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["solver"] == "toy-perceptron"
    # the ramp solver's own options are refused for the toy solver, naming the solver that takes them
    assert cli.main(["fit", *common, "--solver", "toy-perceptron", "--loss", "hinge"]) == cli.EXIT_USAGE
    assert (
        "--loss: only the ramp solver takes these (add --solver ramp); the run would use toy-perceptron"
        in capsys.readouterr().err
    )


# --------------------------------------------------------------------------- the New session form


def test_the_new_session_form_offers_and_starts_the_toys(toys, db_url):
    from app.services import MarginLab

    at = start_app()
    picker = at.selectbox(key="new_strategy")
    assert "Toy: the first unlabelled item" in picker.options and "toy-stream" in picker.options
    assert "toy-perceptron" in at.selectbox(key="new_solver").options
    picker.select("toy-first")
    at.button(key="start_session").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (info,) = MarginLab.from_url(db_url).sessions()
    assert (info.strategy, info.solver) == ("toy-first", "toy-perceptron")  # the solver: the entry's default
    for answer in ("positive", "negative", "negative", "positive", "negative"):
        click(at, answer)
    run = MarginLab.from_url(db_url).open_session(info.id)
    rows = run.loop.history
    assert len(rows) == 5 and isinstance(run.loop.solver, KernelPerceptron)
    labelled: set[int] = set()
    for row in rows:
        if row.asked_by == "toy-first":
            assert row.item == min(set(range(run.loop.n_items)) - labelled)
        labelled.add(row.item)
    assert [row.asked_by for row in rows][2:] == ["toy-first"] * 3


# --------------------------------------------------------------------------- nobody else lists the names


REGISTRIES = {Path("core/strategies.py"), Path("core/solvers/__init__.py")}


def name_literals(node: ast.AST, names: set[str]) -> list[str]:
    return [e.value for e in getattr(node, "elts", ()) if isinstance(e, ast.Constant) and e.value in names]


def listed_names(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """Where a module compares a value with a strategy or solver name (``== "ramp-region"``, ``in ("a",)``),
    or writes a list, set, tuple or dict of two or more of them: (line, what)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any("loss" in ast.unparse(side) for side in sides):
                continue  # ("ramp" is also the ramp solver's own loss)
            for side in sides:
                hits = (
                    [side.value]
                    if isinstance(side, ast.Constant) and side.value in names
                    else name_literals(side, names)
                )
                if hits:
                    found.append((node.lineno, f"compares with {', '.join(hits)}"))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(name_literals(node, names)) >= 2:
            found.append((node.lineno, f"lists {', '.join(name_literals(node, names))}"))
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in names]
            if len(keys) >= 2:
                found.append((node.lineno, f"maps {', '.join(keys)}"))
    return found


def test_no_module_outside_the_registries_lists_or_compares_strategy_or_solver_names():
    names = set(strategies.names()) | set(solvers.names())
    assert "ramp-region" in names and "active-set" in names
    # a solver's own modules (its class's and its warm-up's) name the solver (the class's ``name``) and its losses
    own = {
        Path(*module.split(".")).with_suffix(".py")
        for e in solvers.REGISTRY.entries()
        for module in (e.cls.partition(":")[0], e.warm_up)
    }
    offenders = []
    for folder in ("core", "app", "storage"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative in REGISTRIES or relative in own:
                continue
            offenders += [
                f"{relative}:{line}: {what}" for line, what in listed_names(ast.parse(path.read_text()), names)
            ]
    assert offenders == [], "\n".join(offenders)


def test_the_name_check_sees_what_it_looks_for():
    names = {"ramp-region", "random", "lasvm", "ramp"}
    source = (
        'if strategy == "ramp-region": pass\n'
        'ok = solver in ("lasvm",)\n'
        'CHOICES = ("random", "ramp-region")\n'
        'DEFAULTS = {"random": 1, "ramp-region": 2}\n'
        'fine = args.loss != "ramp" and kind == "rbf" and x in ("one-class", "hinge")\n'
        'START = ("random", "one-class")\n'
    )
    assert [line for line, _ in listed_names(ast.parse(source), names)] == [1, 2, 3, 4]

"""Comparisons with several classes on the Compare page: the service (``Comparisons.run_class_comparison``) stores
what the command line's experiment functions return, refuses a label column it cannot compare with, and the page
runs one with progress, stores it and shows it again (which kind it was, the curves, the summary)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.services import BASELINE, MarginLab, ServiceError
from app.services.class_comparisons import CLASS_SOLVER, SEVERAL_CLASSES, class_summary_table, per_class_table
from app.services.classes import strategy_words
from app.services.common import scale_features
from core.class_experiment import run_class_comparison
from core.multi_label_experiment import label_sets, run_multi_label_comparison
from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import start_app
from tests.app.test_app_first_day import code_names

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

KINDS = ["setosa", "versicolor", "virginica"]
#: the timings differ from run to run; every other column must be the same
TIMINGS = ["update_ms", "query_ms"]


def three_kinds(svc: MarginLab, cells=KINDS, name: str = "iris-like") -> tuple[int, np.ndarray]:
    """A CSV of three separated groups, its label column kept as classes (``cells``: each group's cell)."""
    rng = np.random.default_rng(2)
    group = np.repeat([0, 1, 2], 20)
    X = np.column_stack([3.0 * group, -2.0 * (group == 1)]) + rng.normal(0, 0.5, (60, 2))
    text = "a,b,kind\n" + "".join(f"{x:.3f},{y:.3f},{cells[g]}\n" for (x, y), g in zip(X, group, strict=True))
    result = svc.import_csv(text.encode(), name=name, label_column="kind", keep_classes=True)
    assert result.created, result.message
    return result.dataset_id, group


def features(svc: MarginLab, dataset_id: int) -> np.ndarray:
    X, _, _, _ = repo.load_dataset_arrays(svc.engine, dataset_id)
    meta = svc.dataset(dataset_id).meta
    return scale_features(X, meta.get("scaling", "none"), None)


def same_settings(stored, *, budget: int, initial: int) -> dict:
    """The settings the page's service ran with (the default model, its parameters as stored), and seeds 0 and 1."""
    assert (stored.config["budget"], stored.config["initial"], stored.config["solver"]) == (
        budget,
        initial,
        CLASS_SOLVER,
    )
    return dict(
        solver=CLASS_SOLVER, solver_params=stored.config["solver_params"], budget=budget, seeds=2, initial=initial
    )


def test_a_stored_k_class_comparison_is_what_the_experiment_function_returns(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, group = three_kinds(svc)
    chosen = list(MULTICLASS_STRATEGIES)[:2]
    comparison_id = svc.run_class_comparison(dataset_id, strategies=chosen, budget=12, seeds=2, initial=4)
    stored = svc.comparison(comparison_id)
    direct = run_class_comparison(
        features(svc, dataset_id),
        group,
        KINDS,
        strategies=chosen,
        **same_settings(stored, budget=12, initial=4),
    )
    pd.testing.assert_frame_equal(
        stored.rows.drop(columns=TIMINGS), direct.rows.drop(columns=TIMINGS), check_dtype=False
    )
    same = [c for c in direct.summary.columns if not c.endswith(("_median", "_p95"))]  # (not the timings)
    pd.testing.assert_frame_equal(
        pd.DataFrame(stored.summary["summary"])[same], direct.summary[same], check_dtype=False
    )
    pd.testing.assert_frame_equal(
        pd.DataFrame(stored.summary["runs"]).fillna(np.nan), direct.runs.fillna(np.nan), check_dtype=False
    )
    pd.testing.assert_frame_equal(pd.DataFrame(stored.summary["curve"]), direct.curve, check_dtype=False)
    assert stored.config["class_kind"] == "classes" and stored.config["classes"] == KINDS
    assert set(stored.config["seeds"]) == {0, 1}
    table = class_summary_table(stored, strategy_words)
    assert list(table["heuristic, for engineers"]) == chosen
    assert "labels to 80% accuracy" in table


def test_a_stored_multi_label_comparison_is_what_the_experiment_function_returns(db_url):
    svc = MarginLab.from_url(db_url)
    cells = ["red; round", "red", "blue;round"]
    dataset_id, group = three_kinds(svc, cells, name="sets")
    chosen = list(MULTILABEL_STRATEGIES)
    comparison_id = svc.run_class_comparison(
        dataset_id, strategies=chosen, budget=10, seeds=2, initial=3, multi_label=True
    )
    stored = svc.comparison(comparison_id)
    Y, names = label_sets([cells[g] for g in group])
    assert names == ("blue", "red", "round")
    direct = run_multi_label_comparison(
        features(svc, dataset_id),
        Y,
        names,
        strategies=chosen,
        **same_settings(stored, budget=10, initial=3),
    )
    pd.testing.assert_frame_equal(
        stored.rows.drop(columns=TIMINGS), direct.rows.drop(columns=TIMINGS), check_dtype=False
    )
    pd.testing.assert_frame_equal(pd.DataFrame(stored.summary["per_class"]), direct.per_class, check_dtype=False)
    assert stored.config["class_kind"] == SEVERAL_CLASSES and stored.config["separator"] == ";"
    table = per_class_table(stored, strategy_words)
    assert set(table["class"]) == {"blue", "red", "round", "(mean over the classes)"}


def test_a_column_it_cannot_compare_with_is_refused_and_nothing_is_stored(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_kinds(svc)
    one = repo.import_dataset(
        svc.engine,
        name="one value",
        X=np.arange(20.0).reshape(10, 2),
        feature_names=["a", "b"],
        meta={"class_names": ["cat", "dog", "fox"], "class_labels": [1] * 10},
    )
    with pytest.raises(ServiceError, match=r"'one value' has 1 value \(dog\).*at least two"):
        svc.run_class_comparison(one, strategies=list(MULTICLASS_STRATEGIES)[:1], budget=6, seeds=1, initial=2)
    ten = [f"c{k}" for k in range(10)]
    many = repo.import_dataset(
        svc.engine,
        name="ten values",
        X=np.arange(40.0).reshape(20, 2),
        feature_names=["a", "b"],
        meta={"class_names": ten, "class_labels": [k % 10 for k in range(20)]},
    )
    with pytest.raises(ServiceError, match="has 10 values; a comparison here takes up to 9 classes"):
        svc.run_class_comparison(many, strategies=list(MULTICLASS_STRATEGIES)[:1], budget=6, seeds=1, initial=2)
    with pytest.raises(ServiceError, match="Choose at least one heuristic among"):
        svc.run_class_comparison(dataset_id, strategies=list(MULTILABEL_STRATEGIES)[:1], budget=6, seeds=1)
    sets = repo.import_dataset(
        svc.engine,
        name="one class in sets",
        X=np.arange(20.0).reshape(10, 2) + 100.0,
        feature_names=["a", "b"],
        meta={"class_names": ["a", "a;a", "a; "], "class_labels": [k % 3 for k in range(10)]},
    )
    with pytest.raises(
        ServiceError, match=r"read as sets of classes \(split on ';'\): a K-class model needs at least two"
    ):
        svc.run_class_comparison(sets, strategies=list(MULTILABEL_STRATEGIES), budget=6, multi_label=True)
    assert svc.comparisons() == []


def test_progress_names_each_run_and_label_and_an_exception_from_it_stores_nothing(db_url):
    """As the two-class run: the text says which run (the heuristic in words), its labels, the time; an
    exception raised by ``progress`` (the page's Cancel) stops the comparison with nothing stored."""
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_kinds(svc)
    chosen = list(MULTICLASS_STRATEGIES)[:2]
    shown: list[tuple[float, str]] = []
    svc.run_class_comparison(
        dataset_id, strategies=chosen, budget=12, seeds=1, initial=4, progress=lambda f, t: shown.append((f, t))
    )
    assert [t.split(" runs done")[0] for _, t in shown if " runs done" in t] == ["1/2", "2/2"]
    first = strategy_words(chosen[0], None)
    assert any(t.startswith(f"run 1/2: {first} (") and " · label 12/12 · " in t for _, t in shown), shown
    assert [f for f, _ in shown] == sorted(f for f, _ in shown) and shown[-1][0] == 1.0

    class Cancelled(Exception):
        pass

    def cancel(fraction: float, text: str) -> None:
        raise Cancelled

    with pytest.raises(Cancelled):
        svc.run_class_comparison(dataset_id, strategies=chosen, budget=12, seeds=1, initial=4, progress=cancel)
    assert len(svc.comparisons()) == 1


def class_compare_page(at):
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception


def run_on_page(at, dataset_id: int, *, budget=10, seeds=2, initial=3, kind=None, strategies=None) -> None:
    at.radio(key="compare_mode").set_value("Several classes on a dataset with a label column").run()
    at.selectbox(key="class_compare_dataset").select(dataset_id).run()
    if kind is not None:
        at.radio(key="class_compare_kind").set_value(kind).run()
    if strategies is not None:
        (box,) = [m for m in at.multiselect if m.key.startswith("class_compare_strategies")]
        box.set_value(strategies)
    at.number_input(key="class_compare_budget").set_value(budget)
    at.number_input(key="class_compare_seeds").set_value(seeds)
    at.number_input(key="class_compare_initial").set_value(initial)
    at.button(key="class_compare_run").click().run()
    assert not at.exception, at.exception


def test_the_compare_page_runs_a_k_class_comparison_stores_it_and_shows_it_again(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_kinds(svc)
    at = start_app()
    class_compare_page(at)
    assert at.radio(key="compare_mode").value == "Several classes on a dataset with a label column"  # (offered first)
    chosen = list(MULTICLASS_STRATEGIES)
    run_on_page(at, dataset_id, strategies=chosen)
    assert not at.error, [e.value for e in at.error]
    (bar,) = at.get("progress")  # the run's bar, at its end
    assert bar.proto.value == 100 and "done" in bar.proto.text
    assert not [b for b in at.button if b.label == "Cancel"]  # the run is over: nothing left to cancel
    (stored,) = svc.comparisons()
    comparison = svc.comparison(stored.id)
    assert comparison.config["class_kind"] == "classes" and comparison.config["strategies"] == chosen
    assert comparison.config["target"] == KINDS[0]  # (Most likely <class>: the class chosen, the first)
    assert comparison.rows.groupby(["strategy", "seed"])["n_labels"].max().eq(10).all()

    def assert_shown(page) -> None:
        (kind,) = [i.value for i in page.info if "several classes" in i.value]
        assert "one class per item (3 classes: setosa, versicolor, virginica)" in kind.replace("\\", "")
        assert len(page.get("plotly_chart")) == 3  # accuracy, macro AUC, timings
        (table,) = [df.value for df in page.dataframe if "labels to 80% accuracy" in df.value.columns]
        assert list(table["heuristic"]) == [strategy_words(s, KINDS[0]) for s in chosen]
        picker = page.selectbox(key="comparison_picker")
        assert "3 classes, one class per item" in picker.format_func(picker.value)
        # plain words outside Advanced: no heuristic's or model's code name
        words = [i.value for i in page.info] + [c.value for c in page.caption] + [picker.format_func(picker.value)]
        names = code_names() + [s for s in MULTICLASS_STRATEGIES if s != BASELINE]
        assert not [(n, w) for n in names for w in words if n in w]

    assert_shown(at)
    again = start_app()  # reloading the page shows the stored comparison again
    class_compare_page(again)
    assert_shown(again)


def test_the_compare_page_runs_a_multi_label_comparison_with_its_figures_per_class(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_kinds(svc, ["red; round", "red", "blue;round"], name="sets")
    at = start_app()
    class_compare_page(at)
    run_on_page(at, dataset_id, kind=SEVERAL_CLASSES)
    assert not at.error, [e.value for e in at.error]
    (stored,) = svc.comparisons()
    assert svc.comparison(stored.id).config["class_kind"] == SEVERAL_CLASSES
    assert any("several classes per item" in i.value for i in at.info)
    (per_class,) = [df.value for df in at.dataframe if "F1" in df.value.columns]
    assert set(per_class["class"]) == {"blue", "red", "round", "(mean over the classes)"}


def test_the_compare_page_refuses_a_label_column_of_one_value_and_stores_nothing(db_url):
    svc = MarginLab.from_url(db_url)
    one = repo.import_dataset(
        svc.engine,
        name="one value",
        X=np.arange(20.0).reshape(10, 2),
        feature_names=["a", "b"],
        meta={"class_names": ["cat", "dog", "fox"], "class_labels": [1] * 10},
    )
    at = start_app()
    class_compare_page(at)
    run_on_page(at, one)
    (error,) = [e.value for e in at.error]
    assert "'one value' has 1 value (dog): a comparison with several classes needs at least two" in error.replace(
        "\\", ""
    ).replace("\u2060", "")
    assert svc.comparisons() == []


def test_a_yes_no_dataset_runs_as_its_two_classes_when_asked(db_url):
    """A label column of two values stays a yes / no dataset; asked for several classes, it runs as its two."""
    svc = MarginLab.from_url(db_url)
    rng = np.random.default_rng(5)
    side = np.repeat([0, 1], 20)
    X = np.column_stack([3.0 * side, side]) + rng.normal(0, 0.5, (40, 2))
    text = "a,b,kind\n" + "".join(
        f"{x:.3f},{y:.3f},{'yes' if s else 'no'}\n" for (x, y), s in zip(X, side, strict=True)
    )
    result = svc.import_csv(text.encode(), name="two", label_column="kind", keep_classes=True)
    dataset = svc.dataset(result.dataset_id)
    assert dataset.has_true_labels and "class_names" not in dataset.meta
    chosen = [s for s in MULTICLASS_STRATEGIES if s == BASELINE]
    stored = svc.comparison(
        svc.run_class_comparison(result.dataset_id, strategies=chosen, budget=8, seeds=1, initial=2)
    )
    names = [dataset.meta["classes"]["negative"], dataset.meta["classes"]["positive"]]
    assert stored.config["classes"] == names and sorted(names) == ["no", "yes"]
    truth = np.where(side == 1, "yes", "no")
    assert all(truth[item] == label for item, label in zip(stored.rows["item"], stored.rows["label"], strict=True))


def test_after_a_reload_the_mode_follows_the_stored_comparison_shown_and_its_charts_titles_fit(db_url):
    svc = MarginLab.from_url(db_url)
    two_class = svc.ensure_demo_dataset() or svc.datasets()[0].id
    older = svc.run_comparison(two_class, strategies=[BASELINE], budget=6, seeds=1, initial=2)
    dataset_id, _ = three_kinds(svc)
    newer = svc.run_class_comparison(dataset_id, strategies=[BASELINE], budget=8, seeds=2, initial=3)
    at = start_app()  # a reload: a new browser session
    class_compare_page(at)
    assert at.selectbox(key="comparison_picker").value == newer
    # the result shown has several classes: so has the mode above it (not "Heuristics on a dataset ...")
    assert at.radio(key="compare_mode").value == "Several classes on a dataset with a label column"
    # the charts' titles fit a half-page chart at 1400 pixels (about 60 characters a line at their size)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")][:2]
    lines = [line for title in titles for line in title.split("<br>")]
    assert len(titles) == 2 and all(len(line) <= 60 for line in lines), titles
    assert not [t for t in titles if "test macro AUC" in t or "test accuracy" in t], titles
    # choosing a stored two-class comparison brings its mode; and back
    at.selectbox(key="comparison_picker").select(older).run()
    assert not at.exception, at.exception
    assert at.radio(key="compare_mode").value == "Heuristics on a dataset with true labels"
    assert not at.warning, [w.value for w in at.warning]
    at.selectbox(key="comparison_picker").select(newer).run()
    assert at.radio(key="compare_mode").value == "Several classes on a dataset with a label column"
    assert not at.warning, [w.value for w in at.warning]

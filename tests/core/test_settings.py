"""A session's settings as one typed record (``core.settings.SessionSettings``): every field survives its JSON,
the dicts stored before the record load, each refusal names its field, and a setting chosen in the New session
form or on the command line reaches the solver under its own name."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from core.loop import ActiveLearningLoop
from core.presets import DOCUMENT_REVIEW
from core.settings import SETTINGS_VERSION, UNSET, SessionSettings, SettingsError, StoppingSettings
from storage import repository as repo
from storage.engine import init_db, make_engine
from storage.errors import StorageError
from tests.app import test_app

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: a record in which every field differs from its default
EVERY_FIELD = SessionSettings(
    strategy="randomized-search",
    solver="ramp",
    model="standard",
    kernel="poly",
    C=0.25,
    gamma=0.5,
    degree=2,
    coef0=0.5,
    tol=1e-4,
    loss="hinge",
    class_weight={1: 2.0, -1: 0.5},
    balance_ratio=3.0,
    max_nonsv=None,
    strategy_params={"sample_size": 17},
    seed=11,
    cold_start="spread",
    initial=4,
    scaling="standard",
    eval_fraction=0.25,
    find="loops that close",
    stopping=StoppingSettings(rule="consecutive:20", target_recall=0.9, confidence=0.8, checks=(14, 30), checking=True),
)

#: what a session started from the New session form with its defaults stores today (before the record)
STORED_TODAY = {
    "solver_params": {"kernel": "rbf", "C": 1.0, "gamma": "scale"},
    "strategy_params": {},
    "scaling": "none",
    "eval_fraction": 0.0,
}


# --------------------------------------------------------------------------- the record and its JSON


def test_every_field_survives_the_json_round_trip():
    defaults = SessionSettings(strategy="randomized-search", solver="ramp")
    unchanged = [
        f.name
        for f in dataclasses.fields(SessionSettings)
        # (auto, auto_lag: below, exact solvers only; classes, multi_label: below, a K-class session's own strategies)
        if f.name not in ("strategy", "solver", "model", "auto", "auto_lag", "classes", "multi_label")
        and getattr(EVERY_FIELD, f.name) == getattr(defaults, f.name)
    ]
    assert unchanged == [], "give every field a value of its own here"
    several = SessionSettings(strategy="least-sure-class", classes=["a", "b"], multi_label=True, C=2.0)
    assert SessionSettings.from_json(json.loads(json.dumps(several.to_json()))) == several
    chosen = SessionSettings(strategy="near-boundary", solver="incremental", auto=["gamma", "C"], auto_lag=10)
    assert chosen.auto == ("C", "gamma") and chosen.solver_params()["auto"] == ["C", "gamma"]
    assert chosen.solver_params()["auto_lag"] == 10
    assert SessionSettings.from_json(json.loads(json.dumps(chosen.to_json()))) == chosen
    with pytest.raises(SettingsError, match=r"^auto .*ramp"):
        SessionSettings(strategy="near-boundary", solver="ramp", auto=["C"])
    weighed = SessionSettings(strategy="near-boundary", solver="active-set", auto=["class_weight", "C", "gamma"])
    assert weighed.solver_params()["auto"] == ["C", "gamma", "class_weight"]
    assert SessionSettings.from_json(json.loads(json.dumps(weighed.to_json()))) == weighed
    with pytest.raises(SettingsError, match=r"^class_weight: .*not fixed weights"):
        weighed.replace(class_weight={1: 2.0, -1: 1.0})
    stored = json.loads(json.dumps(EVERY_FIELD.to_json()))  # as the database's JSON column gives it back
    assert stored["version"] == SETTINGS_VERSION
    again = SessionSettings.from_json(stored)
    assert again == EVERY_FIELD
    assert again.class_weight == {1: 2.0, -1: 0.5} and again.max_nonsv is None
    review = SessionSettings(strategy="largest-positive", model="review", **DOCUMENT_REVIEW["solver_params"])
    assert SessionSettings.from_json(json.loads(json.dumps(review.to_json()))) == review
    named = SessionSettings(strategy="target-class", classes=["a", "b", "c"], strategy_params={"target": "b"}, C=3.0)
    assert named.classes == ("a", "b", "c") and named.solver == "incremental"
    assert SessionSettings.from_json(json.loads(json.dumps(named.to_json()))) == named


def test_the_record_is_frozen_and_replace_checks_again():
    with pytest.raises(dataclasses.FrozenInstanceError):
        EVERY_FIELD.C = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        EVERY_FIELD.strategy_params["sample_size"] = 3  # type: ignore[index]
    assert EVERY_FIELD.replace(C=2.0).C == 2.0
    with pytest.raises(SettingsError, match=r"^C "):
        EVERY_FIELD.replace(C=-2.0)


def test_the_solver_gets_the_parameters_by_their_names_and_only_those_set():
    plain = SessionSettings(strategy="near-boundary")
    assert plain.solver == "incremental"  # the strategy's default solver (its registry entry)
    assert plain.solver_params() == {"kernel": "rbf", "C": 1.0, "gamma": "scale"}
    assert plain.degree is UNSET and plain.tol is UNSET
    assert EVERY_FIELD.solver_params() == {
        "kernel": "poly",
        "C": 0.25,
        "gamma": 0.5,
        "degree": 2,
        "coef0": 0.5,
        "tol": 1e-4,
        "loss": "hinge",
        "class_weight": {1: 2.0, -1: 0.5},
        "balance_ratio": 3.0,
        "max_nonsv": None,
    }
    review = SessionSettings(strategy="largest-positive", model="review", **DOCUMENT_REVIEW["solver_params"])
    assert review.solver == DOCUMENT_REVIEW["solver"]
    assert review.solver_params() == DOCUMENT_REVIEW["solver_params"]


# --------------------------------------------------------------------------- dicts stored before the record


def test_a_dict_stored_today_loads_with_the_row_s_strategy_solver_and_seed():
    settings = SessionSettings.from_json(STORED_TODAY, strategy="near-boundary", solver="incremental", seed=3)
    assert settings == SessionSettings(
        strategy="near-boundary",
        solver="incremental",
        seed=3,
        kernel="rbf",
        C=1.0,
        gamma="scale",
        scaling="none",
        eval_fraction=0.0,
    )
    assert settings.solver_params() == STORED_TODAY["solver_params"]
    assert settings.stopping == StoppingSettings()
    # written again it is the record's own JSON, and loads without the row's columns
    assert SessionSettings.from_json(settings.to_json()) == settings


def test_older_stored_dicts_keep_what_they_always_meant():
    # advanced settings, what to find and the stopping state a session stores today
    stored = {
        "solver_params": {"kernel": "linear", "C": 1.0, "gamma": "scale", "loss": "hinge", "tol": 1e-4},
        "strategy_params": {},
        "scaling": "none",
        "eval_fraction": 0.0,
        "find": "loops that close",
        "stopping": {
            "rule": "knee",
            "target_recall": 0.9,
            "confidence": 0.95,
            "checks": [30, 14, 14],
            "checking": False,
        },
    }
    settings = SessionSettings.from_json(stored, strategy="near-boundary", solver="ramp", seed=0)
    assert (settings.kernel, settings.loss, settings.tol, settings.find) == (
        "linear",
        "hinge",
        1e-4,
        "loops that close",
    )
    assert settings.stopping == StoppingSettings(rule="knee", target_recall=0.9, checks=(14, 30))
    # the review model, recognised by its parameters
    review = {
        "solver_params": dict(DOCUMENT_REVIEW["solver_params"]),
        "strategy_params": {},
        "scaling": "none",
        "eval_fraction": 0.0,
    }
    settings = SessionSettings.from_json(review, strategy="largest-positive", solver="ramp", seed=0)
    assert settings.model == "review" and settings.solver_params() == DOCUMENT_REVIEW["solver_params"]
    # the first sessions stored neither the scaling nor the held-out share: the dataset's scaling, 30 %
    first = SessionSettings.from_json(
        {"solver_params": {"kernel": "rbf", "C": 1.0, "gamma": "scale"}, "strategy_params": {}},
        strategy="random",
        solver="lasvm",
        seed=None,
    )
    assert (first.scaling, first.eval_fraction, first.seed) == (None, 0.3, 0)


def test_storage_stores_the_record_and_loads_it_and_the_dicts_it_stored_before(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    init_db(engine)
    dataset_id = repo.import_dataset(engine, name="blobs", X=np.eye(4), feature_names=list("abcd"))
    session_id = repo.start_session(engine, dataset_id=dataset_id, annotator="ada", settings=EVERY_FIELD)
    info = repo.get_session(engine, session_id)
    assert (info.strategy, info.solver, info.seed) == ("randomized-search", "ramp", 11)  # the row's columns
    assert info.settings == EVERY_FIELD
    assert info.params["solver_params"]["C"] == 0.25 and info.params["version"] == SETTINGS_VERSION
    with pytest.raises(StorageError, match="settings"):
        repo.start_session(
            engine, dataset_id=dataset_id, annotator="ada", strategy="random", solver="lasvm", settings=EVERY_FIELD
        )
    older = repo.start_session(
        engine,
        dataset_id=dataset_id,
        annotator="ada",
        strategy="near-boundary",
        solver="incremental",
        params=STORED_TODAY,
        seed=0,
    )
    assert repo.get_session(engine, older).settings == SessionSettings.from_json(
        STORED_TODAY, strategy="near-boundary", solver="incremental", seed=0
    )
    # the stopping state a run writes later is read back through the record
    repo.set_session_setting(
        engine,
        session_id,
        "stopping",
        {"rule": "knee", "target_recall": 0.9, "confidence": 0.95, "checks": [], "checking": False},
    )
    assert repo.get_session(engine, session_id).settings.stopping == StoppingSettings(rule="knee", target_recall=0.9)


# --------------------------------------------------------------------------- refusals name the field


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("strategy", "retired-heuristic", "unknown strategy 'retired-heuristic'; choose one of "),
        ("solver", "simplex", "unknown solver 'simplex'; choose one of "),
        ("model", "huge", "'huge'"),
        ("kernel", "sigmoid", "'sigmoid'"),
        ("C", -1.0, "-1.0"),
        ("C", 1e300, "1e+300"),
        ("C", float("nan"), "nan"),
        ("C", "abc", "'abc'"),
        ("gamma", 0.0, "0.0"),
        ("gamma", "often", "'often'"),
        ("degree", 0, "0"),
        ("degree", 1.5, "1.5"),
        ("coef0", float("inf"), "inf"),
        ("tol", 1.0, "1.0"),
        ("tol", None, "None"),
        ("loss", "hinge", "the incremental solver"),
        ("class_weight", "heavy", "'heavy'"),
        ("class_weight", {1: -2.0}, "-2.0"),
        ("balance_ratio", 2.0, "the incremental solver"),
        ("max_nonsv", 10, "the incremental solver"),
        ("auto_lag", -1, "a whole number from 0 to 1000"),
        ("strategy_params", {1: 2}, "{1: 2}"),
        ("seed", -1, "-1"),
        ("seed", True, "True"),
        ("seed", 1.5, "1.5"),
        ("cold_start", "warm", "'warm'"),
        ("initial", -2, "-2"),
        ("scaling", "minmax", "'minmax'"),
        ("eval_fraction", 1.0, "1.0"),
        ("find", 7, "7"),
        ("stopping", {"rule": "knee"}, "StoppingSettings"),
    ],
)
def test_a_refused_setting_is_named_with_its_value(field, value, words):
    with pytest.raises(SettingsError) as refused:
        SessionSettings(**{"strategy": "near-boundary", field: value})
    assert refused.value.field == field
    message = str(refused.value)
    assert message.startswith((f"{field} ", f"{field}: ")), message
    assert words in message, message


@pytest.mark.parametrize(
    "field, value",
    [("rule", "sometimes"), ("target_recall", 1.0), ("confidence", 0.0), ("checks", (-1,)), ("checking", "yes")],
)
def test_a_refused_stopping_setting_is_named(field, value):
    with pytest.raises(SettingsError) as refused:
        StoppingSettings(**{field: value})
    assert refused.value.field == f"stopping.{field}"
    assert str(refused.value).startswith((f"stopping.{field} ", f"stopping.{field}: ")), str(refused.value)


def test_the_class_stopped_on_is_one_of_the_sessions_classes():
    classes = ("cat", "dog", "fox")
    settings = SessionSettings(strategy="random", classes=classes, stopping=StoppingSettings(target_class="dog"))
    stored = settings.to_json()
    assert stored["stopping"]["class"] == "dog"
    assert SessionSettings.from_json(stored, strategy="random", solver=settings.solver, seed=0) == settings
    # a session without one writes the stopping settings as it always did
    assert "class" not in StoppingSettings().to_json() and StoppingSettings.from_json({}).target_class is None
    with pytest.raises(SettingsError, match=r"^stopping.class\b.*'cow'.*cat, dog, fox"):
        SessionSettings(strategy="random", classes=classes, stopping=StoppingSettings(target_class="cow"))
    several = SessionSettings(
        strategy="random", classes=classes, multi_label=True, stopping=StoppingSettings(target_class="dog")
    )
    assert SessionSettings.from_json(several.to_json(), strategy="random", solver=several.solver, seed=0) == several
    with pytest.raises(SettingsError, match=r"^stopping.class\b"):
        StoppingSettings(target_class="")


def test_a_named_model_keeps_its_own_parameters():
    with pytest.raises(SettingsError, match=r"^C\b.*review model sets"):
        SessionSettings(strategy="largest-positive", model="review", **{**DOCUMENT_REVIEW["solver_params"], "C": 1.0})
    with pytest.raises(SettingsError, match=r"^solver\b.*review model runs on the ramp solver"):
        SessionSettings(strategy="largest-positive", solver="lasvm", model="review", **DOCUMENT_REVIEW["solver_params"])


def test_stored_json_that_is_not_this_record_is_refused_by_name():
    stored = EVERY_FIELD.to_json()
    with pytest.raises(SettingsError, match=r"^colour\b.*not a setting"):
        SessionSettings.from_json({**stored, "colour": "blue"})
    with pytest.raises(SettingsError, match=r"^version\b.*newer"):
        SessionSettings.from_json({**stored, "version": SETTINGS_VERSION + 1})
    with pytest.raises(SettingsError, match=r"^solver_params\b.*'colour'"):
        SessionSettings.from_json(
            {**STORED_TODAY, "solver_params": {"colour": "blue"}}, strategy="random", solver="lasvm", seed=0
        )
    with pytest.raises(SettingsError, match=r"^strategy\b.*'near-boundary'.*'random'"):
        SessionSettings.from_json(stored | {"strategy": "random"}, strategy="near-boundary")


# --------------------------------------------------------------------------- from the form and the CLI to the solver


def test_the_loop_is_built_from_the_record():
    X = np.random.default_rng(0).normal(size=(40, 3))
    settings = SessionSettings(
        strategy="random", solver="lasvm", C=0.5, class_weight="balanced", seed=4, cold_start="spread", initial=2
    )
    loop = ActiveLearningLoop.from_settings(settings, X)
    assert (loop.strategy, loop.solver_name, loop.seed, loop.cold_start, loop.initial) == (
        "random",
        "lasvm",
        4,
        "spread",
        2,
    )
    assert (loop.solver.C, loop.solver.class_weight) == (0.5, "balanced")
    assert loop.config()["solver_params"] == {**settings.solver_params(), "random_state": 4}


@pytest.mark.app
def test_a_setting_chosen_in_the_new_session_form_reaches_the_solver(db_url):
    from app.services import MarginLab
    from tests.app.test_app import start_app, start_session

    at = start_app()
    at.number_input(key="new_C").set_value(0.5)
    at.selectbox(key="new_solver").select("ramp")
    at.selectbox(key="new_loss").select("hinge")
    at.number_input(key="new_seed").set_value(5)
    start_session(at, "ada", "near-boundary")
    (info,) = MarginLab.from_url(db_url).sessions()
    run = MarginLab.from_url(db_url).open_session(info.id)
    assert (run.settings.C, run.settings.solver, run.settings.loss, run.settings.seed) == (0.5, "ramp", "hinge", 5)
    assert run.settings == info.settings
    assert (run.loop.solver.C, run.loop.solver.loss, run.loop.solver.random_state) == (0.5, "hinge", 5)
    # the review model's class weights, chosen in the form, reach its solver under their names
    other = start_app("bo")
    other.radio(key="new_model").set_value("review")
    start_session(other, "bo", "largest-positive")
    (review,) = [s for s in MarginLab.from_url(db_url).sessions() if s.annotator == "bo"]
    run = MarginLab.from_url(db_url).open_session(review.id)
    assert run.settings.model == "review" and run.settings.class_weight == "balanced"
    assert (run.loop.solver.class_weight, run.loop.solver.balance_ratio) == ("balanced", 9.8)


def test_a_setting_given_on_the_command_line_reaches_the_solver(tmp_path, monkeypatch):
    import core.loop
    from core import cli

    rng = np.random.default_rng(0)
    rows = "".join(f"{a:.4f},{b:.4f},{'yes' if k % 2 else 'no'}\n" for k, (a, b) in enumerate(rng.normal(size=(40, 2))))
    data = tmp_path / "points.csv"
    data.write_text("a,b,label\n" + rows)
    made = []
    real = core.loop.make_solver
    monkeypatch.setattr(
        core.loop, "make_solver", lambda name, X, **params: made.append(real(name, X, **params)) or made[-1]
    )
    args = cli.build_parser().parse_args(
        [
            "compare",
            "--data",
            str(data),
            "--label-column",
            "label",
            "--positive",
            "yes",
            "--strategies",
            "near-boundary,random",
            "--budget",
            "6",
            "--seeds",
            "1",
            "--test-fraction",
            "0",
            "--initial",
            "2",
            "--C",
            "0.5",
            "--class-weight",
            "balanced",
            "--cold-start",
            "spread",
        ]
    )
    cli.run_compare(args)  # (built once, for both strategies: the record says what each run is)
    assert {(type(s).name, s.C, s.class_weight) for s in made} == {
        ("incremental", 0.5, "balanced"),
        ("lasvm", 0.5, "balanced"),
    }
    # the command line's settings are the record's (refused by their names before any data are read)
    settings = cli.compare_settings(args, ["near-boundary", "random"], {"kernel": "rbf", "C": 0.5, "gamma": "scale"})
    assert [(s.strategy, s.solver, s.C, s.cold_start, s.initial) for s in settings] == [
        ("near-boundary", "incremental", 0.5, "spread", 2),
        ("random", "lasvm", 0.5, "spread", 2),
    ]

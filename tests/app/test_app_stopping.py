"""Stopping in the app: the rules' state after every label, the recall check, provenance, resume (service and page)."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab
from app.services.stopping import RULE_CHOICES, SETTING
from core import stopping as rules
from storage import repository as repo
from tests.app.test_app import as_shown, run_comparison, shown_item, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)


@pytest.fixture
def db_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("MARGINLAB_DATABASE_URL", url)
    return url


def service(url: str) -> MarginLab:
    return MarginLab.from_url(url)


def labelled_run(
    svc: MarginLab, n: int, strategy: str = "largest-positive", seed: int = 0, eval_fraction: float | None = None
):
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(
        dataset_id=dataset_id, annotator="cy", strategy=strategy, seed=seed, eval_fraction=eval_fraction
    )
    answer(run, n)
    return run


def answer(run, n: int) -> None:
    """Answer ``n`` items as their true labels say."""
    for _ in range(n):
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok


def test_every_rule_in_words_after_every_label(db_url):
    run = labelled_run(service(db_url), 40)
    status = run.stopping_status()
    assert [s.rule for s in status.states] == list(RULE_CHOICES)
    for state in status.states:
        assert state.message.startswith(state.rule.split(":")[0] + ":")
    margin = next(s for s in status.states if s.rule == "margin")
    available = ~run.loop.labelled_mask & ~run.loop.skipped_mask
    inside = int(np.count_nonzero(np.abs(run.loop.pool_scores()[available]) < 1))
    assert margin.value == inside and f"{inside:,}" in margin.message
    assert status.rule == "statistical" and status.chosen is status.states[0]
    # largest-positive asks about the likely positives first: its scores when asked calibrate nothing below them
    assert status.estimate.method == "model-based" and not status.estimate.known
    assert "cannot estimate yet" in status.estimate.in_words() and "largest-positive" not in status.estimate.description
    assert rules.strategy_words("largest-positive") in status.estimate.description
    labels = [a.value for a in run.answers if a.value]
    assert list(status.gain["found"]) == list(np.cumsum(np.array(labels) > 0))
    # the rules read the session, never the true labels of unlabelled items: same status after the truth is hidden
    run.y_true = None
    run.version += 1
    again = run.stopping_status()
    assert [s.message for s in again.states] == [s.message for s in status.states]


def test_recall_check_draws_at_random_with_provenance_and_comes_back_after_a_restart(db_url):
    svc = service(db_url)
    # (30 % of the items held out: the pool on which the check is still on after the draws below)
    run = labelled_run(svc, 30, eval_fraction=0.3)
    assert run.start_check().ok and run.checking
    shown = run.shown
    assert shown.strategy == rules.CHECK_STRATEGY and "at random" in shown.reason
    status = run.stopping_status()
    assert status.check.phase == "checking" and status.check.design is not None
    assert "draw" in status.states[0].message and "more random items" in status.states[0].message
    # skip would leave a hole in the sample: refused, nothing stored
    skip = run.skip(item_index=shown.item_index)
    assert not skip.ok and "Skip is not available" in skip.message
    assert len(repo.label_events(svc.engine, run.session_id)) == 30
    # a few draws, stored with their provenance
    drawn = []
    for _ in range(4):
        if not run.checking:
            break
        item = run.shown.item_index
        drawn.append(item)
        assert run.answer(int(run.y_true[item]), item_index=item).ok
    events = repo.label_events(svc.engine, run.session_id)
    assert [e.strategy for e in events[30:]] == [rules.CHECK_STRATEGY] * len(drawn)
    assert [e.item_index for e in events[30:]] == drawn
    assert all(e.strategy != rules.CHECK_STRATEGY for e in events[:30])
    # a restarted app shows the same state and the same next draw
    restarted = service(db_url).open_session(run.session_id)
    assert restarted is not run
    assert restarted.checking == run.checking
    assert restarted.shown.item_index == run.shown.item_index
    assert restarted.shown.strategy == run.shown.strategy
    before, after = run.stopping_status(), restarted.stopping_status()
    assert [s.message for s in after.states] == [s.message for s in before.states]
    assert after.estimate == before.estimate
    # undo brings back the same draw
    if run.checking:
        last = run.answers[-1].item_index
        next_item = run.shown.item_index
        assert run.undo().ok and run.shown.item_index == last
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok
        assert run.shown.item_index == next_item
    assert run.stop_check().ok and not run.checking
    assert run.shown.strategy != rules.CHECK_STRATEGY
    stored = repo.get_session(svc.engine, run.session_id).params[SETTING]
    assert stored["checks"] == [30] and stored["checking"] is False


def test_draws_that_show_recall_below_target_send_the_session_back(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 12)  # a handful of positives found, about a hundred still unlabelled
    assert run.start_check().ok
    said = []
    for _ in range(200):
        if not run.checking:
            break
        item = run.shown.item_index
        outcome = run.answer(int(run.y_true[item]), item_index=item)
        said.append(outcome.message)
    assert not run.checking and "back to the model's picks" in said[-1]
    status = run.stopping_status()
    assert status.check.phase == "failed" and not status.can_stop
    assert status.estimate.method == "random draws"
    assert run.shown.strategy != rules.CHECK_STRATEGY
    assert repo.get_session(svc.engine, run.session_id).params[SETTING]["checking"] is False
    # the estimate from the draws covers what is really left (its interval is exact)
    left = int(np.sum(run.y_true[run.pool_items] > 0)) - run.n_positive
    assert status.estimate.remaining_low <= left <= status.estimate.remaining_high


def test_undo_before_the_start_of_a_check_ends_it(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 15)
    assert run.start_check().ok
    assert run.undo().ok  # the last heuristic label: the check's start is now beyond the labels
    assert not run.checking and run.stopping.settings["checks"] == []
    assert repo.get_session(svc.engine, run.session_id).params[SETTING]["checks"] == []


def test_removing_an_earlier_answer_in_history_moves_the_check_starts_with_the_labels(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 15)
    assert run.start_check().ok
    answer(run, 3)
    before = run.stopping_status().check.last  # the check's run of draws (it may have ended on its draws)
    assert run.stopping.settings["checks"] == [15] and (before.start, before.draws) == (15, 3)
    assert run.remove_label(run.answers[2].label_id).ok  # a heuristic label before the check
    assert run.stopping.settings["checks"] == [14]
    assert repo.get_session(svc.engine, run.session_id).params[SETTING]["checks"] == [14]
    after = run.stopping_status().check.last
    assert (after.start, after.draws, after.positives, after.urn) == (14, 3, before.positives, before.urn + 1)
    assert run.stopping_status().estimate.method == "random draws"
    # a restart reads the same
    again = service(db_url).open_session(run.session_id).stopping_status().check.last
    assert (again.start, again.draws) == (14, 3)
    # removing one of the check's own draws leaves its start where it is
    assert run.remove_label(run.answers[-1].label_id).ok
    assert run.stopping.settings["checks"] == [14] and run.stopping_status().check.last.draws == 2


def test_the_estimate_uses_the_sessions_target_and_confidence(db_url):
    run = labelled_run(service(db_url), 30)
    assert run.set_stopping(confidence=0.8).ok and run.start_check().ok
    answer(run, 5)
    est = run.stopping_status().estimate
    assert est.method == "random draws" and est.confidence == 0.8
    # (a few draws: an interval this wide is "too early" in words; its numbers below)
    assert est.too_early and f"too early to estimate from {est.draws} random draw" in est.in_words()
    view = run.stopping.view()
    at = {
        c: rules.estimate_remaining(view.labels, view.drawn, view.check_starts, pool_size=view.pool_size, confidence=c)
        for c in (0.8, 0.95)
    }
    assert (est.remaining_low, est.remaining_high) == (at[0.8].remaining_low, at[0.8].remaining_high)
    assert at[0.95].remaining_high - at[0.95].remaining_low > est.remaining_high - est.remaining_low
    unlabelled = len(run.pool_items) - run.n_labels
    assert 0 <= est.remaining_low <= est.remaining <= est.remaining_high <= unlabelled


def test_stopping_settings_are_checked_stored_and_resumed(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 5)
    outcome = run.set_stopping(rule="consecutive:20", target_recall=0.9, confidence=0.8)
    assert outcome.ok
    restarted = service(db_url).open_session(run.session_id)
    status = restarted.stopping_status()
    assert (status.rule, status.target_recall, status.confidence) == ("consecutive:20", 0.9, 0.8)
    assert status.chosen.rule == "consecutive:20" and status.states[-1].rule == "consecutive:20"
    for kwargs, words in [
        (dict(rule="oracle"), "Unknown stopping rule"),
        (dict(target_recall=1.0), "target recall"),
        (dict(confidence=-1), "confidence"),
        (dict(rule="knee:3"), "takes no parameter"),
    ]:
        bad = run.set_stopping(**kwargs)
        assert not bad.ok and words in bad.message
    assert repo.get_session(svc.engine, run.session_id).params[SETTING]["rule"] == "consecutive:20"


def test_stability_checkpoints_resume_from_a_snapshot_and_from_a_replay_alike(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 62)  # snapshots after 25 and 50 answers; checkpoints every 10 labels
    live = run.stopping.stability.checkpoints
    assert sorted(live)[-1] == 60
    from_snapshot = service(db_url).open_session(run.session_id)
    assert from_snapshot.resumed_from == 50
    replayed = MarginLab(from_snapshot.engine, use_snapshots=False).open_session(run.session_id)
    assert replayed.resumed_from is None
    for other in (from_snapshot, replayed):
        assert sorted(other.stopping.stability.checkpoints) == sorted(live)
        for n in live:
            assert np.array_equal(other.stopping.stability.checkpoints[n], live[n])
        assert other.stopping_status().states[3] == run.stopping_status().states[3]


# --------------------------------------------------------------------------- the page


def test_the_label_page_says_why_the_auc_of_the_scores_when_asked_can_read_below_chance(db_url):
    """Without an evaluation split the two live AUC charts read the scores when asked; under "Most uncertain
    first" the items asked are the hardest and a new user read "AUC 0.364" as a model worse than chance: a caption
    says why and that it is not an estimate of accuracy (as the per-class chart's does); with an evaluation split
    the charts read held-out items and the caption is not shown."""
    svc = service(db_url)
    labelled_run(svc, 12, strategy="near-boundary")
    at = start_app("cy")
    said = [as_shown(c.value) for c in at.caption]
    assert any("hardest" in w and "below 0.5" in w and "not an estimate of accuracy" in w for w in said), said


def test_the_auc_caption_is_not_shown_when_the_charts_read_held_out_items(db_url):
    svc = service(db_url)
    labelled_run(svc, 12, strategy="near-boundary", eval_fraction=0.2)
    at = start_app("cy")
    assert not [c for c in at.caption if "not an estimate of accuracy" in as_shown(c.value)]


def test_label_page_shows_the_stopping_panel_and_runs_a_check(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 20)
    at = start_app("cy")  # the session's annotator
    words = [as_shown(c.value) for c in at.caption] + [as_shown(m.value) for m in at.markdown]
    assert any(w.startswith("**When can I stop?**") or "When can I stop?" in w for w in words)
    # each rule in words (app.services.vocabulary), its state after it
    assert any(all(f"{rules.rule_words(r)}:" in w for r in ("margin", "statistical", "knee")) for w in words)
    assert any("positives still unlabelled" in w.lower() and "model-based" in w for w in words)
    assert [i for i in at.info if f"Not yet (rule: {rules.rule_words('statistical')}): " in as_shown(i.value)]
    # how many more labels the guarantee needs: before a check, the fewest random draws of one (here nearly
    # every item left, and said so)
    before = run.stopping_status()
    planned, urn = before.check.planned, before.check.urn
    assert before.outlook == (
        f"Guarantee: a random check now would mean reading about {rules._pct(planned / urn)} "
        f"of what is left (at least {planned:,} random draws of {urn:,} unlabelled items): "
        "keep labelling first; the check is suggested when the model's picks stop finding positives."
    )
    assert before.outlook in [as_shown(m.value) for m in at.markdown]
    assert len(at.get("plotly_chart")) == 5  # the four live charts and the gain curve
    at.button(key="start_check").click().run()
    assert not at.exception, at.exception
    again = service(db_url).open_session(run.session_id)  # as stored by the page's process
    assert again.checking
    item = shown_item(at)
    assert item == again.shown.item_index and again.shown.strategy == rules.CHECK_STRATEGY
    assert any("drawn at random" in as_shown(c.value) for c in at.caption)
    status = again.stopping_status()
    needed = status.check.needed
    assert 0 < needed <= len(again.pool_items) - again.n_labels
    assert status.outlook.startswith(f"Guarantee: {needed:,} more random draws, if none of them is a positive")
    assert status.outlook in [as_shown(m.value) for m in at.markdown]
    (skip,) = [b for b in at.button if b.key and b.key.startswith("skip_")]
    skip.click().run()
    assert any("Skip is not available" in as_shown(w.value) for w in at.warning)
    at.button(key="stop_check").click().run()
    assert not at.exception and not service(db_url).open_session(run.session_id).checking


def test_after_a_few_draws_of_a_stopped_check_the_panel_says_too_early_and_why_the_next_needs_more(db_url):
    """The tryout's: three draws, "Stop the random check", then "0–1,249 (95% interval)" and "at least 1,760"
    where the first check needed 1,688, unexplained."""
    svc = service(db_url)
    run = labelled_run(svc, 20)
    first = run.stopping_status().check.planned
    assert run.start_check().ok
    answer(run, 3)
    assert run.stop_check().ok
    status = run.stopping_status()
    assert status.check.check_number == 2 and status.check.planned > first
    words = status.estimate.in_words()
    assert words.startswith("Positives still unlabelled: too early to estimate from 3 random draws"), words
    assert "stopped" in words
    assert "each new check must pass a stricter test" in status.outlook
    at = start_app("cy")
    shown = [as_shown(m.value) for m in at.markdown]
    assert words in shown and status.outlook in shown


def test_the_start_button_stays_usable_and_says_when_a_check_now_would_read_most_of_what_is_left(db_url):
    svc = service(db_url)
    run = labelled_run(svc, 20)
    status = run.stopping_status()
    caution = rules.check_caution(status.check)
    assert caution and "keep labelling first" in caution
    at = start_app("cy")
    button = at.button(key="start_check")
    assert not button.disabled and button.help.startswith(caution)
    assert caution in [as_shown(c.value) for c in at.caption]


def test_compare_page_shows_the_rules_and_recall_curves(db_url):
    svc = service(db_url)
    svc.ensure_demo_dataset()
    at = start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception
    run_comparison(at, ["largest-positive", "random"], budget=80, seeds=2, initial=None)
    (stored,) = svc.comparisons()
    comparison = svc.comparison(stored.id)
    assert "recall" in comparison.rows and comparison.config["stopping"] == list(RULE_CHOICES)
    stops = svc.stop_summary_frame(comparison)
    assert list(stops["rule"])[:5] == [rules.rule_words(r) for r in RULE_CHOICES]  # in words; the code names beside
    assert list(stops["rule, for engineers"])[:5] == list(RULE_CHOICES)
    assert "recall ≥ 95%" in stops.columns  # (the target as the panel says it, not "0.95")
    assert set(stops["heuristic"]) == {rules.strategy_words("largest-positive"), rules.strategy_words("random")}
    raw = comparison.summary["stops"]
    assert len(raw) == 2 * 2 * 5 and {"n_labels_at_stop", "recall_at_stop", "positives_total"} <= set(raw[0])
    assert "curve_recall" in [k.key for k in at.get("plotly_chart")]
    assert any(len(df.value) == len(stops) and "rule" in df.value.columns for df in at.dataframe)


def test_the_gain_charts_axis_fits_what_was_found_and_the_estimates_interval():
    import pandas as pd

    from app import charts

    labels = np.array([1] * 30 + [-1] * 70)
    gain = pd.DataFrame(
        {"n_labels": np.arange(1, 101), "found": np.cumsum(labels > 0), "drawn": np.zeros(100, dtype=bool)}
    )
    est = rules.estimate_remaining(labels[:80].tolist() + [-1] * 20, np.arange(100) >= 80, [80], pool_size=400)
    assert est.method == "random draws"
    fig = charts.gain_figure(gain, est, 0.95)
    low, high = fig["layout"]["yaxis"]["range"]
    top = est.found + est.remaining_high
    assert low == 0 and top <= high <= 1.1 * top
    # no estimate (cannot estimate yet): the axis fits the curve itself, not the pool
    unknown = rules.estimate_remaining(labels, np.zeros(100, dtype=bool), [], pool_size=100_000)
    assert not unknown.known
    low, high = charts.gain_figure(gain, unknown, 0.95)["layout"]["yaxis"]["range"]
    assert low == 0 and 30 <= high <= 33


def test_in_a_document_session_the_stopping_panel_is_drawn_in_one_place(db_url):
    # a screener's session: titles and abstracts, most likely relevant first (the review model, suited to them)
    topics = ["Robot arm grasping", "Protein folding", "Speech recognition", "Graph networks for molecules"]
    rows = "".join(
        f"d{i},{topics[i % 4]} {i},A study of {topics[i % 4].lower()} in {i} settings,{'yes' if i % 4 == 0 else 'no'}\n"
        for i in range(60)
    )
    svc = service(db_url)
    dataset_id = svc.import_csv(
        f"key,title,abstract,relevant\n{rows}".encode(),
        name="abstracts",
        label_column="relevant",
        positive="yes",
        key_column="key",
        text_features=["title", "abstract"],
    ).dataset_id
    run = svc.start_session(dataset_id=dataset_id, annotator="cy", strategy="largest-positive", model="auto")
    assert not run.sparse_model  # (the review model: no support-vector or margin chart)
    answer(run, 10)
    at = start_app("cy")
    # the heading, the verdict, the estimate, the guarantee and the rules together, the heading first
    panel = at.get_by_key("stopping_panel")
    said = [as_shown(e.value) for e in panel if e.type in ("markdown", "caption", "info", "success")]
    assert said[0] == "**When can I stop?**", said
    assert any(s.startswith("Not yet (rule: ") for s in said), said
    assert any("positives still unlabelled" in s.lower() for s in said), said
    assert any(s.startswith("Guarantee: ") for s in said), said
    assert any(f"{rules.rule_words('statistical')}:" in s for s in said), said
    # and once on the page
    verdicts = [as_shown(e.value) for e in [*at.info, *at.success] if "(rule: " in as_shown(e.value)]
    assert len(verdicts) == 1, verdicts

"""The Label page's stopping panel: when can the analyst stop?

The estimate of the positives still unlabelled, how many more labels the statistical
guarantee will probably need, every rule's state in words,
the gain curve, the recall check's buttons and the session's stopping settings.
What it shows comes from ``LabellingRun.stopping_status()`` (``app.services.stopping``).
"""

from __future__ import annotations

import streamlit as st

from app import auth, charts
from app.services.stopping import RULE_OPTIONS, check_blocked, check_caution
from app.services.vocabulary import CHECK_MEANING, RULE_TERMS, rule_words
from app.ui.messages import guarded
from app.ui.text import plain

CHECK_HELP = (
    "Draws items at random from the unlabelled ones; each is labelled like any other. The check "
    "passes when the draws show recall (the share of the positives found) at or above the target with the "
    "stated confidence, and ends on its own (back to the model's picks) when they show recall below it."
)


def rule_line(state) -> str:
    """A rule's state with the rule in words: "stop after 50 irrelevant in a row: waits for the first positive"."""
    return f"{rule_words(state.rule)}: {state.message.removeprefix(f'{state.rule}: ')}"


@guarded
def _start_check(svc, session_id: int) -> None:
    st.session_state.outcome = svc.open_session(session_id).start_check(by=auth.identity())


@guarded
def _stop_check(svc, session_id: int) -> None:
    st.session_state.outcome = svc.open_session(session_id).stop_check(by=auth.identity())


@guarded
def _apply_settings(svc, session_id: int) -> None:
    state = st.session_state
    st.session_state.outcome = svc.open_session(session_id).set_stopping(
        rule=state.stopping_rule,
        target_recall=state.stopping_target / 100,
        confidence=state.stopping_confidence / 100,
        by=auth.identity(),
    )


def _percent(share: float) -> float:
    """A setting kept as a share (0.95) as the percentage the settings show (95.0, no float noise)."""
    return round(100.0 * float(share), 1)


def verdict(run) -> None:
    """Whether the analyst can stop by the chosen rule, and the estimate of the positives still unlabelled."""
    status = run.stopping_status()
    if status is None:
        return
    with st.container(key="stopping_verdict"):
        said = status.chosen.message.split(": ", 1)[-1].removesuffix(" — you can stop")
        rule = rule_words(status.rule)
        if status.can_stop:
            st.success(plain(f"You can stop (rule: {rule}): {said}."), icon=":material/flag:")
        else:
            st.info(plain(f"Not yet (rule: {rule}): {said}."))
        st.markdown(plain(status.estimate.in_words()))
        if status.outlook:
            st.markdown(plain(status.outlook))


def gain_chart(run, height: int | None = None) -> None:
    """The positives found against labels (the gain curve), with the estimate of those in the pool."""
    status = run.stopping_status()
    if status is None:
        return
    st.plotly_chart(
        charts.gain_figure(status.gain, status.estimate, status.target_recall, height=height),
        config={"displayModeBar": False},
        key="gain",
    )


def show(svc, run, *, gain_above: bool = False) -> None:
    """Draw the panel for a run that has a model, its verdict under its heading (``gain_above``: its gain curve is
    drawn among the live charts already, as ``gain_chart``)."""
    status = run.stopping_status()
    if status is None:
        return
    left, right = st.columns([1, 1], gap="large")
    with left, st.container(key="stopping_panel"):
        st.markdown("**When can I stop?**")
        verdict(run)
        lines = [("✓ " if state.stop else "· ") + plain(rule_line(state)) for state in status.states]
        st.caption("  \n".join(lines))
        st.caption(CHECK_MEANING)  # (the check's name in the buttons and lines above, said once in words)
        with st.expander("Advanced: the rules in the model's terms"):
            st.caption("  \n".join(plain(f"{words}: {term}") for words, term in RULE_TERMS.items()))
        buttons = st.container(horizontal=True)
        caution = None
        if status.checking:
            buttons.button(
                "Stop the random check",
                key="stop_check",
                on_click=_stop_check,
                args=(svc, run.session_id),
                help="Back to the model's picks; the draws so far are kept.",
            )
        else:
            # disabled, with the reason, whenever the panel says a check cannot start (the same test)
            blocked = check_blocked(status.check)
            # usable even when a check now would read nearly all that is left (the analyst's choice), but said
            caution = None if blocked else check_caution(status.check)
            buttons.button(
                "Start the random check",
                key="start_check",
                on_click=_start_check,
                args=(svc, run.session_id),
                disabled=blocked is not None,
                help=blocked or (f"{caution} {CHECK_HELP}" if caution else CHECK_HELP),
                type="primary" if status.check.suggest else "secondary",
            )
        with buttons.popover("Stopping settings", icon=":material/tune:"), st.form("stopping_settings", border=False):
            choices = list(RULE_OPTIONS) + ([status.rule] if status.rule not in RULE_OPTIONS else [])
            st.selectbox(
                "Rule that says you can stop",
                choices,
                index=choices.index(status.rule),
                key="stopping_rule",
                format_func=rule_words,
            )
            cols = st.columns(2)
            # in percent, as the panel says them ("recall ≥ 95% at 95% confidence"), not as 0.950
            cols[0].number_input(
                "Target recall (share of the positives to find), %",
                min_value=50.0,
                max_value=99.9,
                value=_percent(status.target_recall),
                step=1.0,
                format="%g",
                key="stopping_target",
            )
            cols[1].number_input(
                "Confidence, %",
                min_value=50.0,
                max_value=99.9,
                value=_percent(status.confidence),
                step=1.0,
                format="%g",
                key="stopping_confidence",
            )
            st.form_submit_button("Apply", on_click=_apply_settings, args=(svc, run.session_id))
        if caution:
            st.caption(plain(caution))
    if not gain_above:
        with right:
            gain_chart(run)

"""Label together: answer the items of a team project; one shared model learns every member's answers."""

import streamlit as st

from app import auth, charts
from app.classes_panel import class_auc_chart, class_keys, class_toggles, counts_table, set_keys
from app.services import ServiceError
from app.services.vocabulary import how_labelled, model_words
from app.ui.item import item_view, why_chosen, why_chosen_in_detail
from app.ui.messages import guarded, page_part, preparing_model_notice, waiting_for_the_model
from app.ui.state import service
from app.ui.text import plain, visible

svc = service()
me = auth.identity()
st.title("Label together")

projects = [p for p in svc.projects(me) if p.status == "active" and me.name in svc.members(p.id)]
if not projects:
    st.info(
        "You are not a member of an active project yet."
        + (
            " Create one on the **Projects** page and add yourself and your team."
            if me.is_owner
            else " Ask an owner of this MarginLab to add you to one."
        )
    )
    st.stop()

names = {
    p.id: visible(f"{p.name} · {p.dataset_name} · {how_labelled(p.strategy, p.solver, p.params)}") for p in projects
}
if st.session_state.get("team_project") not in names:
    st.session_state.team_project = projects[0].id
st.selectbox(
    "Project",
    list(names),
    format_func=names.get,
    key="team_project",
    on_change=lambda: st.session_state.update(team_outcome=None),
)


@guarded
def _answer(project_id: int, value: int | None, shown) -> None:
    """``value``: +1 / -1 / 0 (skip) in a yes / no project; a class's place, or None (skip), in one with classes."""
    run = svc.project_for(me, project_id)
    with waiting_for_the_model():
        st.session_state.team_outcome = run.answer(me.name, shown.item_index, value, shown, by=me)


def _picked_key(project_id: int, item: int) -> str:
    """Where the classes picked for the item shown are kept until Submit (a multi-label project)."""
    return f"team_picked_{project_id}_{item}"


@guarded
def _submit(project_id: int, shown) -> None:
    """Answer the item shown with the classes picked (a multi-label project; none picked: none of these)."""
    picked = st.session_state.pop(_picked_key(project_id, shown.item_index), [])
    _answer(project_id, list(picked), shown)


@guarded
def _undo(project_id: int) -> None:
    st.session_state.team_outcome = svc.project_for(me, project_id).undo(me.name, by=me)


@st.fragment
@page_part("team_panel")
def team_panel(project_id: int) -> None:
    auth.rerun_when_signed_out(svc)  # (a fragment reruns alone: the app's own check does not run)
    try:
        run = svc.project_for(me, project_id)
        shown = run.next_item(me.name)  # reserved for me until I answer (or it expires)
    except ServiceError as error:
        st.error(plain(error))
        return
    item = None if shown is None else shown.item_index
    # worked out before the first element, so the item's elements leave together (see the Label page)
    draw_item = None if shown is None else item_view(run.item_display, item)
    key = None if shown is None else run.item_display.key(item)
    preparing_model_notice()  # (a first start: what labelling needs is still being compiled)
    item_box = st.container(key="item_view")
    # several classes per item: the toggles fill a row of their own and Submit, Skip and Undo the row below, so the
    # actions never wrap apart (as on the Label page); otherwise the answers, Skip and Undo in one row
    with st.container(key="team_buttons"):
        if run.multi_label:  # a toggle per class (keys 1 to 9) and Submit (Enter) for the classes picked
            with st.container(horizontal=True, key="team_class_toggles"):
                picked = class_toggles(
                    run.classes,
                    None if shown is None else _picked_key(project_id, item),
                    shown is None,
                    [f"team_class_{k}_{item}" for k in range(len(run.classes))],
                )
            actions = st.container(horizontal=True, key="team_actions")
            actions.button(
                "Submit" if picked else "Submit: none of these",
                shortcut="Enter",
                type="primary",
                disabled=shown is None,
                on_click=_submit,
                args=(project_id, shown),
                key=f"team_submit_{item}",
            )
        elif run.has_classes:
            actions = st.container(horizontal=True, key="team_actions")
            for k, name in enumerate(run.classes):
                # a button's label is Markdown: the class name (the owner's own text) is shown as it is
                actions.button(
                    plain(name),  # its key: the hint Streamlit shows beside it
                    shortcut=str(k + 1),
                    disabled=shown is None,
                    on_click=_answer,
                    args=(project_id, k, shown),
                    key=f"team_class_{k}_{item}",
                )
        else:
            actions = st.container(horizontal=True, key="team_actions")
            # equal weight: neither answer is highlighted (a highlighted one would nudge towards it)
            actions.button(
                "Positive",
                shortcut="P",
                disabled=shown is None,
                on_click=_answer,
                args=(project_id, 1, shown),
                key=f"team_positive_{item}",
            )
            actions.button(
                "Negative",
                shortcut="N",
                disabled=shown is None,
                on_click=_answer,
                args=(project_id, -1, shown),
                key=f"team_negative_{item}",
            )
        actions.button(
            "Skip",
            shortcut="S",
            disabled=shown is None,
            on_click=_answer,
            args=(project_id, None if run.has_classes else 0, shown),
            key=f"team_skip_{item}",
        )
        actions.button("Undo", shortcut="U", on_click=_undo, args=(project_id,), key=f"team_undo_{item}")
    with item_box:
        if shown is None:
            st.success("Nothing is left for you in this project: every item has the answers it needs.")
        else:
            st.container(key="item_caption").markdown(f"**Item {item}**" + (f" · {plain(key)}" if key else ""))
            draw_item()
            if run.has_classes:
                guess = run.predicted_class(item)
                st.caption(
                    f"Chosen by **{plain(run.heuristic_words(shown.strategy))}**: {plain(shown.reason)}"
                    + (f" · the model's best guess: {plain(guess)}" if guess is not None else "")
                )
            else:
                st.caption(why_chosen(shown), help=why_chosen_in_detail(shown))
    looking_for = None if run.has_classes else run.looking_for
    if looking_for:
        st.container(key="looking_for").caption(f"**Positive** means: {plain(looking_for)}")
    outcome = st.session_state.get("team_outcome")
    if outcome is not None:
        (st.caption if outcome.ok else st.warning)(plain(outcome.message))
    progress = run.progress()
    mine = progress["by_member"].get(me.name, 0)
    learned = (
        " · ".join(f"{plain(name)} {n}" for name, n in progress["per_class"].items())
        if run.has_classes
        else f"{progress['positive']} positive"
    )
    if run.multi_label:
        learned += f" · none of these {progress['none']}"
    st.container(key="team_progress").markdown(
        f"**{mine}** {'answer' if mine == 1 else 'answers'} by you · project: **{progress['answers']}** "
        f"{'answer' if progress['answers'] == 1 else 'answers'}, {progress['items_done']} of "
        f"{progress['items']} items done · the shared model learned {progress['learned']} ({learned})"
    )
    if run.has_classes:  # (what a session's panel shows beside its item; the members' agreement to owners only)
        counts, agreement = st.columns(2, gap="large")
        counts.plotly_chart(
            charts.class_counts_figure(run.class_counts(), "Items learned per class", "items"),
            config={"displayModeBar": False},
            key="team_class_counts",
        )
        if me.is_owner:  # (an annotator would read another member's class off the count her answer moves)
            with agreement:
                counts_table(
                    "**Agreement counts per class** (the item's first two answers: both with the class, the first "
                    "only, the second only, neither)"
                    if run.multi_label
                    else "**Agreement counts** (rows: the item's first class answer; columns: its second; the "
                    "diagonal: the two agree)",
                    run.class_agreement(),
                    key="team_class_agreement",
                )
            # How well the shared model rates the items, to owners only: each point is an item's first class
            # answer scored against the model just before it learned it, so an annotator asked for the second
            # opinion on an item another member answered could read whether that answer was the model's guess
            # off the step it made (the answers stay blind to the other members).
            history = run.history()
            rated, by_class = st.columns(2, gap="large")
            rated.plotly_chart(
                charts.class_accuracy_figure(
                    history,
                    xtitle="items learned",
                    when="before learning",
                    waiting=charts.rated_waiting(per_class=False, multi_label=run.multi_label, given="items learned"),
                ),
                config={"displayModeBar": False},
                key="team_class_accuracy",
            )
            with by_class:
                class_auc_chart(
                    history,
                    run.classes,
                    multi_label=run.multi_label,
                    key="team_class_auc",
                    waiting=charts.rated_waiting(per_class=True, multi_label=run.multi_label, given="items learned"),
                    xtitle="items learned",
                    scored="before learning",
                    when="just before it learned the item",
                    against="the items' sets of classes (the set the owner settled on, else the first answer)"
                    if run.multi_label
                    else "the items' classes (the class the owner settled on, else the first answer)",
                )
    update = "" if run.last_update_ms is None else f"Last model update {run.last_update_ms:.1f} ms · "
    st.caption(
        f"{update}{plain(model_words(run.info.solver, run.info.params))} · items are reserved for "
        f"{run.info.reservation_seconds // 60} min for whoever they are handed to"
    )


team_panel(st.session_state.team_project)
params = next(p for p in projects if p.id == st.session_state.team_project).params
classes = params.get("classes")
if classes and params.get("multi_label") is True:
    keys = set_keys(classes)
else:
    keys = class_keys(classes) if classes else "Keys: **P** positive · **N** negative · **S** skip · **U** undo."
st.caption(
    keys + " Every answer is saved and learned by the shared model before your next item appears; nobody else is "
    "handed your item meanwhile."
)

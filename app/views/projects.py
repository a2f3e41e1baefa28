"""Projects (owners): a dataset labelled by a team with one shared model; progress, agreement, settling."""

import pandas as pd
import streamlit as st

from app import auth
from app.classes_panel import class_toggles
from app.services import DEFAULT_C, LABEL_STRATEGIES, SOLVERS, ServiceError
from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS, strategy_words
from app.services.common import FIND_CHARS, class_names, find_placeholder
from app.services.multi_label import set_words
from app.services.vocabulary import (
    AGREEMENT_ALL,
    AGREEMENT_TWO,
    CLASS_STRATEGY_MEANINGS,
    KAPPA_MEANING,
    KAPPA_SCALE,
    MULTI_LABEL_STRATEGY_MEANINGS,
    PICK_NEXT,
    STRATEGY_MEANINGS,
    choices_help,
    heuristic_words,
    how_labelled,
    kappa_words,
    solver_words,
)
from app.ui.forms import C_MIN, classes_per_item
from app.ui.item import show_item
from app.ui.state import service
from app.ui.text import plain, visible

svc = service()
me = auth.identity()
st.title("Projects")

datasets = svc.datasets()
FIND_HELP = (
    "What a Positive answer means, in your words (for example 'randomised trials in adults'). "
    "It is shown to the team beside the answer buttons."
)
accounts = [a.name for a in svc.accounts() if not a.disabled]

with (
    st.expander("New project", icon=":material/add:", expanded=not svc.projects(me)),
    st.form("new_project", border=False),
):
    name = st.text_input("Name", key="project_name")
    find = st.text_input(
        "What to find",
        key="project_find",
        max_chars=FIND_CHARS,
        placeholder="empty: the dataset's own positive class",
        help=FIND_HELP,
    )
    left, right = st.columns(2)
    dataset_id = left.selectbox(
        "Dataset",
        [d.id for d in datasets],
        key="project_dataset",
        format_func={d.id: visible(f"{d.name} ({d.n_items:,} items)") for d in datasets}.get,
    )
    strategy = right.selectbox(
        PICK_NEXT,
        list(LABEL_STRATEGIES),
        key="project_strategy",
        format_func=heuristic_words,
        help=choices_help(STRATEGY_MEANINGS, heuristic_words),
    )
    per_item = left.number_input(
        "Answers per item on the overlap share",
        min_value=1,
        max_value=10,
        value=2,
        key="project_k",
        help="2: dual screening. 1: every item is answered once.",
    )
    share = right.slider("Overlap share (% of items answered that many times)", 0, 100, 20, key="project_share")
    members = st.multiselect("Members", accounts, default=[me.name], key="project_members")
    with st.expander("Named classes (3 to 9): one button per class"):
        classes = st.text_input(
            "Classes",
            key="project_classes",
            placeholder="empty: Positive / Negative",
            help="Names separated by commas, for example 'cat, dog, fox': each member answers an item with one "
            "of them (keys 1 to 9); you settle disagreements on a class.",
        )
        per_item_classes = classes_per_item(
            "project_classes_per_item",
            "Several classes per item: each member answers an item with any of the classes, or none of them "
            "(2 to 9 classes; keys 1 to 9 pick or drop a class, Enter submits); you settle disagreements on a set.",
        )
        class_strategy = st.selectbox(
            "With one class per item: which item next",
            list(CLASS_STRATEGY_WORDS),
            key="project_class_strategy",
            format_func=lambda name: strategy_words(name, "<class>"),
            help=choices_help(CLASS_STRATEGY_MEANINGS),
        )
        target = st.text_input(
            "Class to find first (Most likely)",
            key="project_target",
            placeholder="empty: the first class",
            help="One of the classes above, written as there; only for Most likely <class>.",
        )
        set_strategy = st.selectbox(
            "With several classes per item: which item next",
            list(MULTI_LABEL_STRATEGY_WORDS),
            key="project_multi_label_strategy",
            format_func=MULTI_LABEL_STRATEGY_WORDS.get,
            help=choices_help(MULTI_LABEL_STRATEGY_MEANINGS),
        )
    with st.expander("Advanced: the model"):  # (the model's own terms: kept out of a screener's way)
        low, high = st.columns(2)
        solver = low.selectbox(
            "Solver",
            ["default for the heuristic", *SOLVERS],
            key="project_solver",
            format_func=lambda s: s if s.startswith("default") else solver_words(s),
        )
        C = high.number_input("C", min_value=C_MIN, value=DEFAULT_C, format="%g", key="project_C")
    if st.form_submit_button("Create project", type="primary"):
        named = bool(str(classes or "").strip())
        several = per_item_classes == "several"
        try:
            created = svc.create_project(
                me,
                name=name,
                dataset_id=dataset_id,
                strategy=set_strategy if several else class_strategy if named else strategy,
                classes=classes,
                multi_label=several,
                target=target,
                solver=None if solver.startswith("default") else solver,
                C=C,
                labels_per_item=int(per_item),
                overlap_share=share / 100,
                members=members,
                find=find,
            )
            st.session_state.project_notice = f"Project '{name.strip()}' created."
            st.session_state.project_shown = created  # (the picker's own state: show the new project)
            st.rerun()
        except ServiceError as error:
            st.error(plain(error))
if st.session_state.get("project_notice"):
    st.success(plain(st.session_state.project_notice))
    st.session_state.project_notice = None

projects = svc.projects(me)
if not projects:
    st.info("No project yet.")
    st.stop()
labels = {
    p.id: visible(f"{p.name} · {p.dataset_name} · {how_labelled(p.strategy, p.solver, p.params)}") for p in projects
}
project_id = st.selectbox("Project", list(labels), format_func=labels.get, key="project_shown")
project = next(p for p in projects if p.id == project_id)
run = svc.open_project(project_id)
members = svc.members(project_id)


def _save_find(project_id: int, key: str) -> None:
    try:
        svc.set_project_find(me, project_id, st.session_state[key])
        st.session_state.project_notice = "What to find saved."
        st.session_state.pop(key)  # (shown again as stored: spaces folded)
    except ServiceError as error:
        st.session_state.project_find_error = str(error)


if not run.has_classes:  # (a project with named classes is answered with its classes)
    with st.form("project_find_form", border=False):
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        find_key = f"project_find_edit_{project_id}"
        left.text_input(
            "What to find",
            value=project.find or "",
            key=find_key,
            max_chars=FIND_CHARS,
            placeholder=visible(find_placeholder(class_names(run.dataset_meta))),
            help=FIND_HELP,
        )
        right.form_submit_button("Save", on_click=_save_find, args=(project_id, find_key))
if st.session_state.get("project_find_error"):
    st.error(plain(st.session_state.project_find_error))
    st.session_state.project_find_error = None
progress = run.progress()
learned = (
    " · ".join(f"{plain(name)} {n}" for name, n in progress["per_class"].items())
    if run.has_classes
    else f"{progress['positive']} positive"
)
if run.multi_label:
    learned += f" · none of these {progress['none']}"

st.subheader("Progress")
if run.has_classes:
    st.caption("Classes: " + " · ".join(f"**{k + 1}** {plain(name)}" for k, name in enumerate(run.classes)))
st.caption(
    f"{progress['answers']} answers; {progress['items_done']} of {progress['items']} items have every answer "
    f"they need; the shared model learned {progress['learned']} labels ({learned}): it learns each item once, "
    "the owner's settled answer, else its first answer; second opinions count as answers but are not learned again, "
    "skips are not learned. "
    f"{project.labels_per_item} answers per item on {project.overlap_share:.0%} of the items."
)
st.dataframe(
    pd.DataFrame([{"member": m, "answers": progress["by_member"].get(m, 0)} for m in members]),
    hide_index=True,
    key="project_members_table",
)
with st.form("add_member", border=False):
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    new_member = left.selectbox("Add a member", [a for a in accounts if a not in members], key="project_add_member")
    if right.form_submit_button("Add") and new_member:
        svc.add_member(me, project_id, new_member)
        st.rerun()

st.subheader("Agreement")
report = run.agreement()
fleiss = report.fleiss
cols = st.columns(3)
cols[0].metric(
    AGREEMENT_ALL,
    kappa_words(None if fleiss is None else fleiss.value),
    help=f"{KAPPA_MEANING} {KAPPA_SCALE} All items with the project's number of answers, whoever gave them.",
)
cols[1].metric("Items with several answers", report.n_overlap_items)
cols[2].metric("Waiting to be settled", len(report.disagreements))
if report.cohen:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "annotator A": a,
                    "annotator B": b,
                    "items both answered": k.n_items,
                    AGREEMENT_TWO: kappa_words(k.value),
                    "share answered alike": "–" if k.observed is None else f"{k.observed:.3f}",
                }
                for (a, b), k in report.cohen.items()
            ]
        ),
        hide_index=True,
        key="cohen_table",
    )
undefined = [k for k in [fleiss, *report.cohen.values()] if k is None or k.value is None]
st.caption(f"{KAPPA_MEANING} {KAPPA_SCALE}")
if undefined:
    st.caption(
        "The agreement (kappa) is undefined (–) while every answer falls in one class, or no item has been answered "
        "by all it needs."
    )
# two files, one table each (a spreadsheet reads either whole): the items, and the kappas
for label, export, name in (
    ("Download agreement per item (CSV)", svc.agreement_csv, "agreement"),
    ("Download agreement summary (CSV)", svc.agreement_summary_csv, "agreement_summary"),
):
    st.download_button(
        label,
        lambda export=export: export(me, project_id),
        file_name=f"marginlab-project-{project_id}-{name.replace('_', '-')}.csv",
        mime="text/csv",
        key=f"download_{name}",
        on_click="ignore",
    )
if run.has_classes:
    st.download_button(
        "Download each item's classes (CSV)" if run.multi_label else "Download each item's class (CSV)",
        lambda: svc.project_labels_csv(me, project_id),
        file_name=f"marginlab-project-{project_id}-classes.csv",
        mime="text/csv",
        key="download_project_classes",
        on_click="ignore",
    )

st.subheader("Settle disagreements")
if not report.disagreements:
    st.caption("No open disagreement.")
for item in report.disagreements[:10]:
    with st.container(border=True, key=f"dispute_{item}"):
        left, right = st.columns([1, 2])
        with left:
            show_item(run.item_display, item)
        with right:
            key = run.item_display.key(item)
            st.markdown(f"**Item {item}**" + (f" · {plain(key)}" if key else ""))
            votes = report.per_item[item]
            if run.multi_label:  # a toggle per class, then settle on the set picked (none: none of these)
                st.markdown(" · ".join(f"{plain(n)}: **{plain(run.vote_words(v))}**" for n, v in sorted(votes.items())))
                picked_key = f"settle_picked_{project_id}_{item}"
                # (the classes every answer has are ticked to begin with: the members' common ground)
                st.session_state.setdefault(picked_key, list(run.agreed_classes(votes)))
                with st.container(horizontal=True):
                    picked = class_toggles(
                        run.classes,
                        picked_key,
                        False,
                        [f"settle_class_{k}_{item}" for k in range(len(run.classes))],
                        shortcuts=False,
                    )
                    chosen = tuple(sorted(picked))
                    if st.button(
                        f"Settle as {plain(set_words(run.classes, chosen))}", type="primary", key=f"settle_set_{item}"
                    ):
                        st.session_state.pop(picked_key, None)
                        st.session_state.project_notice = svc.settle(me, project_id, item, list(chosen)).message
                        st.rerun()
                continue
            if run.has_classes:
                st.markdown(" · ".join(f"{plain(n)}: **{plain(run.classes[v])}**" for n, v in sorted(votes.items())))
                with st.container(horizontal=True):
                    for k, class_name in enumerate(run.classes):
                        if st.button(f"Settle as {plain(class_name)}", key=f"settle_{k}_{item}"):
                            st.session_state.project_notice = svc.settle(me, project_id, item, k).message
                            st.rerun()
                continue
            st.markdown(
                " · ".join(f"{plain(n)}: **{'positive' if v > 0 else 'negative'}**" for n, v in sorted(votes.items()))
            )
            b1, b2 = st.columns(2)
            if b1.button("Settle as positive", key=f"settle_pos_{item}"):
                st.session_state.project_notice = svc.settle(me, project_id, item, 1).message
                st.rerun()
            if b2.button("Settle as negative", key=f"settle_neg_{item}"):
                st.session_state.project_notice = svc.settle(me, project_id, item, -1).message
                st.rerun()
if len(report.disagreements) > 10:
    st.caption(f"… and {len(report.disagreements) - 10} more after these.")

"""Label: start or resume a session, answer the item the model asks about, watch it learn."""

import time

import streamlit as st

from app import auth, charts, classes_panel, known_items, navigation, stopping_panel
from app.services import DEFAULT_C, DEFAULT_SOLVER, LABEL_STRATEGIES, SOLVERS, STRATEGY_WORDS, ServiceError
from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS, strategy_words
from app.services.common import ANSWER_BUTTONS, FIND_CHARS, class_names, find_placeholder
from app.services.formatting import count
from app.services.vocabulary import (
    CLASS_STRATEGY_MEANINGS,
    KERNEL_NAMES,
    LOSSES,
    MULTI_LABEL_STRATEGY_MEANINGS,
    PICK_NEXT,
    STRATEGY_MEANINGS,
    choices_help,
)
from app.ui.forms import C_MIN, classes_per_item, parse_gamma
from app.ui.item import (
    draw_panel_item,
    live_roc,
    model_timings,
    panel_item,
    pause_before_charts,
    why_chosen,
    why_chosen_in_detail,
)
from app.ui.messages import guarded, page_part, preparing_model_notice, show_outcome, waiting_for_the_model
from app.ui.state import follow_address, service, session_label, show_session
from app.ui.text import plain, visible

svc = service()
st.title("Label")

datasets = svc.datasets()
who = auth.identity()  # every write is checked against it in the service (a sign-in that ended writes nothing)
me = who.name  # every label is stored under the signed-in identity
sessions = svc.sessions(status="active", annotator=me, solo=True, tidy=True)  # one's own: labels go under one's name
state = st.session_state
if not sessions and not state.get("demo_asked"):
    # a new installation's first owner finds the demo open on its first item (started once: svc.open_demo_session)
    state.demo_asked = True
    with st.spinner("Opening the demo…"):
        if svc.open_demo_session(me, by=who) is not None:
            sessions = svc.sessions(status="active", annotator=me, solo=True, tidy=True)


@guarded
def _start_session() -> None:
    """Form callback: start the session before the page is drawn again, then show it."""
    several = state.get("new_classes_per_item") == "several"
    named = bool(str(state.get("new_classes") or "").strip()) or bool(class_names_of.get(state.new_dataset))
    try:
        run = svc.start_session(
            dataset_id=state.new_dataset,
            annotator=me,
            strategy=state.new_multi_label_strategy
            if several
            else state.new_class_strategy
            if named
            else state.new_strategy,
            classes=state.get("new_classes"),
            multi_label=several,
            target=state.get("new_target"),
            solver=None if state.new_solver == "default" else state.new_solver,
            C=state.new_C,
            gamma=parse_gamma(state.new_gamma),
            seed=int(state.new_seed),
            eval_fraction=state.get("new_eval_fraction"),
            model=state.get("new_model", "auto"),
            kernel=state.new_kernel,
            loss=None if state.new_loss == "default" else state.new_loss,
            tol=state.new_tol,
            find=state.new_find,
            auto_hyper=state.get("new_auto_hyper", True),
            by=who,
        )
    except ServiceError as error:
        state.start_error = str(error)
        return
    state.start_error = None
    show_session(run.session_id)
    state.outcome = None
    state.new_session_popover = False  # close the popover: the new session's first item is waiting


#: the classes of each dataset imported with every value of its label column kept (a session on it has them)
class_names_of = {d.id: d.meta.get("class_names") for d in datasets}
meta_of = {d.id: d.meta for d in datasets}


def target_placeholder(dataset_id: int | None) -> str:
    """The placeholder of the class looked for: the dataset's own first class as an example, else plain words."""
    first = next(iter(class_names_of.get(dataset_id) or []), None)
    if first is None:
        return "empty: the first class when the items most likely of a class come first, else none yet"
    return f"for example {first} (empty: the first class for {strategy_words('target-class', first)}, else none yet)"


# -- choose a session: the one the address names, else the one shown before, else the most recent -----
follow_address(sessions)
if state.session_id not in {s.id for s in sessions}:
    state.session_id = None
top_left, top_right = st.columns([4.1, 1.9], vertical_alignment="bottom")
mine = sessions
if state.session_id is None and mine:
    state.session_id = mine[0].id  # the most recently updated
navigation.put_session_in_address(state.session_id)
if mine:
    ids = [s.id for s in mine]
    # A new widget for every session shown: the keyboard focus leaves with the old one, so the
    # shortcut keys label at once after a switch instead of typing into the box.
    key = f"session_picker_{state.session_id}"
    top_left.selectbox(
        "Session",
        ids,
        index=ids.index(state.session_id),
        format_func=session_label(mine).get,
        key=key,
        on_change=lambda k=key: show_session(state[k]),
    )

new_session = top_right.popover(
    "New session", icon=":material/add:", width="stretch", key="new_session_popover", on_change="rerun"
)
# what a screener decides first; how the model learns under Advanced, with the defaults it always had. The
# dataset is picked outside the form: the fields below then give examples from its own classes at once.
chosen_dataset = new_session.selectbox(
    "Dataset",
    [d.id for d in datasets],
    key="new_dataset",
    format_func={d.id: visible(f"{d.name} ({d.n_items:,} items)") for d in datasets}.get,
)
with new_session, st.form("new_session", border=False):
    st.text_input(
        "What to find",
        key="new_find",
        max_chars=FIND_CHARS,
        placeholder=visible(find_placeholder(class_names(meta_of.get(chosen_dataset)))),
        help="What a Positive answer means, in your words (for example 'randomised trials in adults'). "
        "It is shown beside the answer buttons.",
    )
    st.selectbox(
        PICK_NEXT,
        list(LABEL_STRATEGIES),
        key="new_strategy",
        format_func=STRATEGY_WORDS.get,
        help=choices_help(STRATEGY_MEANINGS, STRATEGY_WORDS.__getitem__),
    )
    with st.expander("Named classes (3 to 9): one button per class"):
        st.text_input(
            "Classes",
            key="new_classes",
            placeholder="empty: Positive / Negative (or the dataset's own classes)",
            help="Names separated by commas, for example 'cat, dog, fox': each item gets one of them "
            "(keys 1 to 9). A dataset imported with every value of its label column kept has its "
            "classes already.",
        )
        classes_per_item(
            "new_classes_per_item",
            "Several classes per item: each item gets any of the classes, or none of them (2 to 9 classes; "
            "keys 1 to 9 pick or drop a class, Enter submits).",
        )
        st.selectbox(
            "With one class per item: which item next",
            list(CLASS_STRATEGY_WORDS),
            key="new_class_strategy",
            format_func=lambda name: strategy_words(name, "<class>"),
            help=choices_help(CLASS_STRATEGY_MEANINGS),
        )
        st.text_input(
            "Which class are you looking for? (for 'when can I stop')",
            key="new_target",
            placeholder=visible(target_placeholder(chosen_dataset)),
            help="One of the classes above. The stopping rules, the estimate of its items still unlabelled and the "
            "random check work on it against the others, with any way of picking items (you can name or change "
            "it later on the Label page). 'Most likely' a class also picks the items most likely of it first. With "
            "several classes per item, an item is one of it when its classes include it.",
        )
        st.selectbox(
            "With several classes per item: which item next",
            list(MULTI_LABEL_STRATEGY_WORDS),
            key="new_multi_label_strategy",
            format_func=MULTI_LABEL_STRATEGY_WORDS.get,
            help=choices_help(MULTI_LABEL_STRATEGY_MEANINGS),
        )
    st.radio(
        "Model",
        ["auto", "standard", "review"],
        key="new_model",
        horizontal=True,
        format_func={
            "auto": "Suited to the data",
            "standard": "SVM (settings under Advanced)",
            "review": "Review model: finds rare positives",
        }.get,
        help="The review model suits finding the few relevant documents of a collection, most likely "
        "relevant first: a linear SVM that re-weights the two classes after every label so that "
        "the positives together weigh 9.8 times the negatives (ASReview's default model, learned "
        "exactly after each label by the ramp solver with the squared hinge). It sets its own solver "
        "and settings. 'Suited to the data' takes it for documents picked most likely relevant first "
        "(and nothing set under Advanced), the SVM otherwise.",
    )
    with st.expander("Advanced"):
        st.selectbox(
            "Solver",
            ["default", *SOLVERS],
            key="new_solver",
            format_func=lambda name: "default for the heuristic" if name == "default" else name,
            help="Defaults: "
            + ", ".join(f"{STRATEGY_WORDS[k].lower()} → {DEFAULT_SOLVER[k]}" for k in LABEL_STRATEGIES),
        )
        k_col, l_col = st.columns(2)
        k_col.selectbox(
            "Kernel",
            ["auto", *KERNEL_NAMES],
            key="new_kernel",
            format_func=lambda name: "suited to the data" if name == "auto" else name,
            help="Suited to the data: linear for documents, tanimoto for molecules, rbf otherwise.",
        )
        l_col.selectbox(
            "Loss",
            ["default", *LOSSES],
            key="new_loss",
            format_func=lambda name: "the solver's own" if name == "default" else name,
            help="The ramp solver only: ramp (its own), hinge or squared hinge. The other solvers "
            "learn the hinge loss.",
        )
        c_col, g_col, t_col = st.columns(3)
        c_col.number_input(
            "C",
            min_value=C_MIN,
            value=DEFAULT_C,
            format="%g",
            key="new_C",
            help="Penalty on margin violations: small C, smoother boundary; large C, fewer errors "
            "on the labelled items.",
        )
        g_col.text_input(
            "gamma", value="scale", key="new_gamma", help="'scale' = 1 / (features × variance), or a number"
        )
        t_col.number_input(
            "Tolerance",
            min_value=C_MIN,
            max_value=0.999,
            value=None,
            format="%g",
            key="new_tol",
            placeholder="0.001",
            help="How far the solver may leave the optimality (KKT) conditions, in units of the "
            "margin; empty: the solver's default (0.001).",
        )
        st.checkbox(
            "Choose C and gamma from the labels",
            value=True,
            key="new_auto_hyper",
            help="At 20, 40, 80 and 160 labels (once 3 of each class are labelled), the C and gamma (rbf "
            "kernel) that best rank each label among the others when it is left out (exact leave-one-out) "
            "are taken, from C 0.1-100 and 0.5-2 times "
            "the typical distance's gamma; the values above are used until then. The incremental "
            "and active-set solvers only; the label that reaches such a count takes up to a second "
            "or two.",
        )
        s_col, e_col = st.columns([1, 2])
        s_col.number_input("Seed", min_value=0, value=0, step=1, key="new_seed")
        e_col.number_input(
            "Evaluation split (share held out)",
            min_value=0.0,
            max_value=0.9,
            value=None,
            step=0.05,
            format="%.2f",
            key="new_eval_fraction",
            placeholder="none",
            help="For a dataset with true labels: this share of its items is kept out of the "
            "session to draw the live ROC curve. Those items are never asked about and cannot "
            "be labelled or imported. Empty: the dataset's share (none unless set on the Data "
            "page); the live curve is then drawn from the scores the model gave each labelled "
            "item when it asked.",
        )
    st.form_submit_button("Start labelling", type="primary", key="start_session", on_click=_start_session)
    if st.session_state.get("start_error"):
        # inside the form, next to the fields to correct (the popover would hide it on the page)
        st.error(plain(st.session_state.start_error))

if st.session_state.session_id is None:
    st.info("Start a session with **New session**: the bundled handwritten digits (8 vs the rest) are ready.")
    st.stop()


# -- the labelling panel: a fragment, so a click reruns only this part -------------------------------
@guarded
def _answer(session_id: int, value: int, item_index: int) -> None:
    with waiting_for_the_model():
        st.session_state.outcome = svc.open_session(session_id).answer(value, item_index=item_index, by=who)


@guarded
def _undo(session_id: int, last_item: int | None) -> None:
    st.session_state.outcome = svc.open_session(session_id).undo(last_item_index=last_item, by=who)


@guarded
def _close(session_id: int) -> None:
    st.session_state.outcome = svc.close_session(session_id, by=who)
    show_session(None)  # the most recent active session is shown instead


def session_without_model(run) -> None:
    """A session whose model cannot be rebuilt: why, what is kept, and a way out."""
    st.error(plain(run.problem))
    st.caption(f"Stored: {count(run.n_labels, 'label')} ({run.n_positive} positive) and {count(run.n_skips, 'skip')}.")
    st.button("Close this session", key="close_broken_session", on_click=_close, args=(run.session_id,))


@st.fragment
@page_part("label_panel")
def labelling_panel(session_id: int) -> None:
    auth.rerun_when_signed_out(svc)  # (a fragment reruns alone: the app's own check does not run)
    run = svc.open_session(session_id)
    if run.problem is not None:
        session_without_model(run)
        return
    at = panel_item(run)
    shown, form_open, disabled, item, last = at.shown, at.form_open, at.disabled, at.item, at.last
    progress = (
        f"**{run.n_labels}** {'label' if run.n_labels == 1 else 'labels'} ({run.n_positive} positive) · "
        f"**{run.n_skips}** {'skip' if run.n_skips == 1 else 'skips'}"
    )
    if run.n_seen is not None:  # (a stream heuristic: ramp-region)
        progress += f" · **{run.n_seen}** items seen by the stream"
    progress += f" · pool {len(run.pool_items):,} items"
    if run.has_evaluation:
        progress += f" · {len(run.eval_items):,} held out for evaluation (share {run.eval_fraction:.0%})"
    item_col, chart_col = st.columns([1, 1], gap="large")
    with item_col:
        preparing_model_notice()  # (a first start: what labelling needs is still being compiled)
        # The item goes in this box, above the buttons, but is written after them: the
        # browser then never shows an item while the buttons still belong to the one before.
        item_box = st.container(key="item_view")
        # Keys name the item. A second click of a double click that reaches the server
        # after the next item was drawn belongs to a button that no longer exists and is
        # dropped; one that arrives before carries the old item and the service refuses it.
        with st.container(horizontal=True, key="answer_buttons"):
            # equal weight: neither answer is highlighted (a highlighted one would nudge towards it)
            st.button(
                ANSWER_BUTTONS[1],
                shortcut="P",
                disabled=disabled,
                on_click=_answer,
                args=(session_id, 1, item),
                key=f"positive_{item}",
            )
            st.button(
                ANSWER_BUTTONS[-1],
                shortcut="N",
                disabled=disabled,
                on_click=_answer,
                args=(session_id, -1, item),
                key=f"negative_{item}",
            )
            st.button(
                ANSWER_BUTTONS[0],
                shortcut="S",
                disabled=disabled,
                on_click=_answer,
                args=(session_id, 0, item),
                key=f"skip_{item}",
            )
            st.button(
                "Undo",
                shortcut="U",
                disabled=last is None or form_open,
                on_click=_undo,
                args=(session_id, last),
                key=f"undo_{last}",
            )
        with item_box:
            draw_panel_item(
                at, "" if shown is None else why_chosen(shown), None if shown is None else why_chosen_in_detail(shown)
            )
        if run.looking_for:
            st.container(key="looking_for").caption(f"**Positive** means: {plain(run.looking_for)}")
        if form_open:
            st.caption("Labelling is paused while **New session** is open.")
        show_outcome()
        st.container(key="progress").markdown(progress)
        st.caption(model_timings(run, shown))
        if run.hyper_words_for_screeners:
            st.caption(plain(run.hyper_words_for_screeners))
    # Hand the item to the browser before building the charts: the deltas above are
    # sent by the server's event loop, which the chart work below would hold up (and on a page's
    # first view the browser fetches the item's own code before Plotly's: see pause_before_charts).
    time.sleep(pause_before_charts(st.session_state))
    with chart_col:
        history = run.history()
        top = st.columns(2)
        top[0].plotly_chart(
            charts.roc_figure(live_roc(run), has_evaluation=run.has_evaluation),
            config={"displayModeBar": False},
            key="roc",
        )
        top[1].plotly_chart(
            charts.auc_figure(history, has_evaluation=run.has_evaluation), config={"displayModeBar": False}, key="auc"
        )
        if not run.has_evaluation:
            st.caption(charts.ASKED_AUC_NOTE)
        if run.sparse_model:
            bottom = st.columns(2)
            with bottom[0]:
                stopping_panel.gain_chart(run, height=260)  # (the live charts' height)
            bottom[1].plotly_chart(charts.margin_figure(history), config={"displayModeBar": False}, key="margin")
        else:
            # every label is a support vector and every item inside the margin (the review model): the count of
            # items the model is unsure of follows the labels, so the positives found take the row (whether one
            # can stop stays in the panel below, with its heading and rules)
            stopping_panel.gain_chart(run, height=260)
        if run.sparse_model or run.hyper_words:
            with st.expander("Advanced: the model's settings and support vectors", key="label_advanced"):
                if run.hyper_words:
                    st.caption(plain(run.hyper_words))
                if run.sparse_model:
                    if run.support_vector_words:
                        st.caption(plain(run.support_vector_words))
                    st.plotly_chart(charts.support_vector_figure(history), config={"displayModeBar": False}, key="sv")
    # when can the analyst stop? (estimate, rules, gain curve, recall check)
    stopping_panel.show(svc, run, gain_above=True)


@st.fragment
@page_part("class_panel")
def class_panel(session_id: int) -> None:
    auth.rerun_when_signed_out(svc)  # (a fragment reruns alone: the app's own check does not run)
    classes_panel.show(svc, session_id)


if not svc.is_open(st.session_state.session_id):
    with st.spinner("Rebuilding the session from its stored labels…"):
        svc.open_session(st.session_state.session_id)
open_run = svc.open_session(st.session_state.session_id)
if getattr(open_run, "has_classes", False):  # a session with named classes: a button per class
    class_panel(st.session_state.session_id)
    if not open_run.multi_label:  # (known items are one class each: not for several classes per item)
        known_items.show(svc, st.session_state.session_id, who)  # search the pool, mark items known to be of a class
    st.caption(classes_panel.key_help(open_run.classes, open_run.multi_label))
else:
    labelling_panel(st.session_state.session_id)
    known_items.show(svc, st.session_state.session_id, who)  # search the pool, mark known positives and negatives
    st.caption(
        "Keys: **P** positive · **N** negative · **S** skip · **U** undo. "
        "Every answer is saved before the next item appears."
    )
st.page_link(
    navigation.view("history"),
    label="Label history: change or remove any earlier answer",
    icon=":material/history:",
    query_params={navigation.SESSION_PARAM: st.session_state.session_id},
)

"""Label: start or resume a session, answer the item the model asks about, watch it learn."""

import streamlit as st

from app import charts, ui
from app.service import DEFAULT_C, DEFAULT_SOLVER, LABEL_STRATEGIES, SOLVERS, ServiceError

svc = ui.service()
st.title("Label")

datasets = svc.datasets()
sessions = svc.sessions()
if st.session_state.session_id is None and sessions:
    st.session_state.session_id = sessions[0].id  # resume the most recent session

# -- choose a session ----------------------------------------------------------------------------
choices = {s.id: f"#{s.id} · {s.dataset_name} · {s.strategy} / {s.solver} · {s.annotator} · "
                 f"{s.n_labels} labels" for s in sessions}
top_left, top_right = st.columns([3, 2], vertical_alignment="bottom")
if choices:
    current = st.session_state.session_id if st.session_state.session_id in choices else next(iter(choices))
    picked = top_left.selectbox("Session", list(choices), index=list(choices).index(current),
                                format_func=choices.get, key="session_picker")
    st.session_state.session_id = picked

with top_right.popover("New session", icon=":material/add:", width="stretch"), \
        st.form("new_session", border=False):
    annotator = st.text_input("Annotator", value=st.session_state.annotator, placeholder="your name")
    dataset_id = st.selectbox("Dataset", [d.id for d in datasets],
                              format_func={d.id: f"{d.name} ({d.n_items} items)" for d in datasets}.get)
    strategy = st.selectbox("Heuristic", LABEL_STRATEGIES, help="How the next item is chosen.")
    solver = st.selectbox("Solver", ["default for the heuristic", *SOLVERS],
                          help="Defaults: " + ", ".join(f"{k} → {v}" for k, v in DEFAULT_SOLVER.items()
                                                        if k in LABEL_STRATEGIES))
    c_col, g_col, s_col = st.columns(3)
    C = c_col.number_input("C", min_value=1e-4, value=DEFAULT_C, format="%g")
    gamma = g_col.text_input("gamma", value="scale", help="'scale' = 1 / (features × variance), or a number")
    seed = s_col.number_input("Seed", min_value=0, value=0, step=1)
    if st.form_submit_button("Start labelling", type="primary"):
        try:
            run = svc.start_session(
                dataset_id=dataset_id, annotator=annotator, strategy=strategy,
                solver=None if solver.startswith("default") else solver, C=C,
                gamma=gamma if gamma.strip() == "scale" else float(gamma), seed=int(seed))
        except (ServiceError, ValueError) as error:
            st.error(str(error))
        else:
            st.session_state.annotator = annotator
            st.session_state.session_id = run.session_id
            st.session_state.outcome = None
            st.rerun()

if st.session_state.session_id is None:
    st.info("Start a session with **New session**: the bundled handwritten digits (8 vs the rest) are ready.")
    st.stop()


# -- the labelling panel: a fragment, so a click reruns only this part -------------------------------
def _answer(session_id: int, value: int, item_index: int) -> None:
    st.session_state.outcome = svc.open_session(session_id).answer(value, item_index=item_index)


def _undo(session_id: int) -> None:
    st.session_state.outcome = svc.open_session(session_id).undo()


@st.fragment
def labelling_panel(session_id: int) -> None:
    run = svc.open_session(session_id)
    shown = run.shown
    item_col, chart_col = st.columns([2, 3], gap="large")
    with item_col:
        if shown is None:
            st.success("Every item of the pool has been answered.")
        else:
            key = run.item_key(shown.item_index)
            st.container(key="item_caption").markdown(
                f"**Item {shown.item_index}**" + (f" · `{key}`" if key else ""))
            ui.show_item(run, shown.item_index)
            score = "not scored yet (cold start)" if shown.score is None else f"f(x) = {shown.score:+.3f}"
            st.caption(f"Chosen by **{shown.strategy}**: {score}. {shown.reason}")
        buttons = st.columns(4)
        disabled = shown is None
        item = None if shown is None else shown.item_index
        buttons[0].button("Positive", shortcut="P", type="primary", width="stretch", disabled=disabled,
                          on_click=_answer, args=(session_id, 1, item), key="positive")
        buttons[1].button("Negative", shortcut="N", width="stretch", disabled=disabled,
                          on_click=_answer, args=(session_id, -1, item), key="negative")
        buttons[2].button("Skip", shortcut="S", width="stretch", disabled=disabled,
                          on_click=_answer, args=(session_id, 0, item), key="skip")
        buttons[3].button("Undo", shortcut="U", width="stretch", disabled=not run.answers,
                          on_click=_undo, args=(session_id,), key="undo")
        ui.show_outcome()
        update = "–" if run.last_update_ms is None else f"{run.last_update_ms:.1f} ms"
        query = "–" if shown is None or shown.query_ms is None else f"{shown.query_ms:.1f} ms"
        progress = f"**{run.n_labels}** labels ({run.n_positive} positive) · **{run.n_skips}** skips"
        if run.n_seen is not None and run.info.strategy == "ramp-region":
            progress += f" · **{run.n_seen}** items seen by the stream"
        progress += f" · pool {len(run.pool_items)} items"
        st.container(key="progress").markdown(progress)
        st.caption(f"Model update {update} · next query {query} · solver {run.info.solver}")
    with chart_col:
        history = run.history()
        top = st.columns(2)
        top[0].plotly_chart(charts.roc_figure(run.roc(), has_evaluation=run.has_evaluation),
                            config={"displayModeBar": False}, key="roc")
        top[1].plotly_chart(charts.auc_figure(history, has_evaluation=run.has_evaluation),
                            config={"displayModeBar": False}, key="auc")
        bottom = st.columns(2)
        bottom[0].plotly_chart(charts.support_vector_figure(history), config={"displayModeBar": False},
                               key="sv")
        bottom[1].plotly_chart(charts.margin_figure(history), config={"displayModeBar": False}, key="margin")


labelling_panel(st.session_state.session_id)
st.caption("Keys: **P** positive · **N** negative · **S** skip · **U** undo. "
           "Every answer is saved before the next item appears.")

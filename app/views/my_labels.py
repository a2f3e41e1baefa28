"""My labels: the signed-in person's own answers (nobody else's), and their password."""

import pandas as pd
import streamlit as st

from app import auth, ui
from app.services import ServiceError

svc = ui.service()
me = auth.identity()
st.title("My labels")

events = svc.own_history(me)
st.caption(f"{ui.count(len(events), 'answer')} by {ui.plain(me.name)}, newest first (undone answers are not listed).")
if events:
    table = pd.DataFrame([{
        "item": e.item_index, "answer": {1: "positive", -1: "negative", 0: "skip"}[e.value],
        "when": e.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"), "session": e.session_id, "heuristic": e.strategy,
        "solver": e.solver, "score when asked": e.decision_value,
    } for e in events])
    st.dataframe(table.assign(**{"score when asked": ui.score_cells(table)}), hide_index=True, width="stretch",
                 height=ui.table_height(len(table)), key="my_labels")

with st.expander("Change my password"), st.form("change_password", clear_on_submit=True):
    current = st.text_input("Current password", type="password")
    new = st.text_input("New password", type="password")
    again = st.text_input("New password again", type="password")
    if st.form_submit_button("Change password"):
        try:
            if new != again:
                raise ServiceError("The two new passwords differ.")
            svc.change_password(me, me.name, new, current_password=current)
            auth.sign_out()
            st.rerun()
        except ServiceError as error:
            st.error(ui.plain(error))

"""My labels: the signed-in person's own answers (nobody else's), and their password."""

import pandas as pd
import streamlit as st

from app import auth
from app.services import ServiceError
from app.services.formatting import count
from app.services.vocabulary import CHOSEN_BY, solver_words
from app.ui.state import service
from app.ui.tables import heuristic_words_of, score_cells, table_height
from app.ui.text import plain

svc = service()
me = auth.identity()
st.title("My labels")

events = svc.own_history(me)
st.caption(f"{count(len(events), 'answer')} by {plain(me.name)}, newest first (undone answers are not listed).")
if events:
    answers = svc.own_answer_words(me, events)  # (as History says the same answers)
    table = pd.DataFrame(
        [
            {
                "item": e.item_index,
                "answer": answer,
                "when": e.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                "session": e.session_id,
                "heuristic": e.strategy,
                "model": solver_words(e.solver),
                "score when asked": e.decision_value,
            }
            for e, answer in zip(events, answers, strict=True)
        ]
    )
    # (the score's cells read the heuristic's code name: a cold start's has no score)
    table = table.assign(**{"score when asked": score_cells(table), "heuristic": heuristic_words_of(table)})
    table = table.rename(columns={"heuristic": CHOSEN_BY})
    st.dataframe(table, hide_index=True, width="stretch", height=table_height(len(table)), key="my_labels")

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
            st.error(plain(error))

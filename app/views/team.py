"""Team (owners): the accounts that may sign in, their roles, passwords and whether they are enabled."""

import pandas as pd
import streamlit as st

from app import auth
from app.services import ServiceError
from app.ui.state import service
from app.ui.text import plain, visible

svc = service()
me = auth.identity()
st.title("Team")

accounts = svc.accounts()
st.dataframe(
    pd.DataFrame(
        [
            {
                "name": visible(a.name),
                "role": a.role,
                "enabled": not a.disabled,
                "sign-in": "password" if a.password_hash else "identity provider",
                "last sign-in": "" if a.last_sign_in_at is None else a.last_sign_in_at.strftime("%Y-%m-%d %H:%M UTC"),
                "failed sign-ins": a.failed_attempts,
            }
            for a in accounts
        ]
    ),
    hide_index=True,
    width="stretch",
    key="accounts_table",
)
st.caption(
    "Names are shown as they were typed. An account whose name is an e-mail address can sign in through the "
    "identity provider too, where one is configured."
)

add, change = st.columns(2)
with add, st.form("add_account", clear_on_submit=True):
    st.subheader("Add an account")
    new_name = st.text_input("Name", key="account_name")
    new_password = st.text_input("Password (empty: identity provider only)", type="password", key="account_password")
    role = st.radio("Role", ["annotator", "owner"], horizontal=True, key="account_role")
    if st.form_submit_button("Add", type="primary"):
        try:
            svc.create_account(me, name=new_name, password=new_password or None, role=role)
            st.session_state.team_notice = f"Account '{new_name.strip()}' added."
            st.rerun()
        except ServiceError as error:
            st.error(plain(error))
with change, st.form("reset_account"):
    st.subheader("Reset a password, disable or enable")
    who = st.selectbox("Account", [a.name for a in accounts], key="reset_name", format_func=visible)
    password = st.text_input("New password", type="password", key="reset_password")
    left, middle, right = st.columns(3)
    try:
        if left.form_submit_button("Set password"):
            svc.change_password(me, who, password)
            st.session_state.team_notice = f"The password of '{who}' changed; their sign-ins ended."
            st.rerun()
        if middle.form_submit_button("Disable"):
            svc.set_disabled(me, who, True)
            st.session_state.team_notice = f"'{who}' is disabled."
            st.rerun()
        if right.form_submit_button("Enable"):
            svc.set_disabled(me, who, False)
            st.session_state.team_notice = f"'{who}' is enabled."
            st.rerun()
    except ServiceError as error:
        st.error(plain(error))
if st.session_state.get("team_notice"):
    st.success(plain(st.session_state.team_notice))
    st.session_state.team_notice = None

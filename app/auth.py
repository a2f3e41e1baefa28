"""Sign-in for the Streamlit app: nobody sees data before signing in.

How a sign-in is kept. Streamlit has no password sign-in of its own. MarginLab
keeps who is signed in on the server, in the browser session's
``st.session_state`` (one per tab's connection): nothing goes into a URL or a
cookie, so there is nothing in the browser to steal or replay, and a reload or a
new tab asks again. On every page the identity is checked against the database
(``MarginLab.still_valid``): a sign-in ends after ``SIGN_IN_HOURS``, when the
account is disabled, or when its password or role changed. A fragment, which
reruns alone, checks too (``rerun_when_signed_out``), and every action that
writes hands the identity to the service, which checks it against the database
before it writes. Failed sign-ins are slowed down and lock the name for the
client they come from, and the client, for a growing time (``app.services.accounts``).

Where an identity provider is configured for Streamlit (``[auth]`` in
``.streamlit/secrets.toml``, see Streamlit's ``st.login``), the sign-in page also
offers it; the provider's e-mail address must be the name of a MarginLab account.
"""

from __future__ import annotations

import streamlit as st

from app import ui
from app.services.accounts import SIGN_IN_ENDED, Identity, SignInError, client_of
from app.services.database import database_problem

#: the key in ``st.session_state`` that holds the signed-in identity
IDENTITY_KEY = "identity"


def identity() -> Identity:
    """The signed-in identity (pages run only after ``signed_in`` found one)."""
    found = st.session_state.get(IDENTITY_KEY)
    if not isinstance(found, Identity):
        st.stop()
    return found


def name() -> str:
    """The signed-in person's name: every label is stored under it."""
    return identity().name


def signed_in(svc) -> Identity | None:
    """Who is signed in in this browser session, as the database has it now; None for nobody."""
    found = st.session_state.get(IDENTITY_KEY)
    valid = svc.still_valid(found) if isinstance(found, Identity) else None
    if valid is None and _oidc_configured() and getattr(st.user, "is_logged_in", False):
        try:
            valid = svc.sign_in_external(st.user.get("email", ""))
        except SignInError as error:
            st.session_state.sign_in_error = str(error)
    if valid is None:
        if found is not None:  # a sign-in that ended: nothing of it stays for whoever signs in next
            _forget()
            st.session_state.sign_in_error = SIGN_IN_ENDED
    else:
        st.session_state[IDENTITY_KEY] = valid
    return valid


def rerun_when_signed_out(svc) -> None:
    """In a fragment: when the sign-in has ended, the whole app runs again (to the sign-in page)."""
    if signed_in(svc) is None:
        st.rerun()


def _oidc_configured() -> bool:
    """Whether Streamlit has an identity provider configured (``[auth]`` in secrets.toml)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all
        return False


def _submit() -> None:
    state = st.session_state
    try:
        state[IDENTITY_KEY] = ui.service().sign_in(state.get("sign_in_name", ""), state.get("sign_in_password", ""),
                                                   client=client_of(st.context.ip_address,
                                                                    st.context.headers.get("X-Forwarded-For")))
        state.sign_in_error = None
    except SignInError as error:
        state.sign_in_error = str(error)
    except ui.PAGE_ERRORS as error:  # the database could not be used (a full disk, a server restarting)
        ui.logger.error("a sign-in could not be checked", exc_info=error)
        state.sign_in_error = database_problem(error)  # (the form stays: sign in again once it passes)
    state.sign_in_password = ""  # the password is not kept in the session


def sign_in_page() -> None:
    """The only page an anonymous browser sees."""
    st.title("Sign in")
    st.caption("MarginLab keeps its datasets and labels for signed-in members only.")
    with st.columns([2, 3])[0], st.form("sign_in", border=True, enter_to_submit=True):
        st.text_input("Name", key="sign_in_name", autocomplete="username")
        st.text_input("Password", type="password", key="sign_in_password", autocomplete="current-password")
        st.form_submit_button("Sign in", type="primary", on_click=_submit, key="sign_in_submit")
    if st.session_state.get("sign_in_error"):
        st.error(ui.plain(st.session_state.sign_in_error))
    if _oidc_configured():
        st.button("Sign in with the identity provider", on_click=st.login, key="sign_in_oidc")
    if ui.service().nobody_signed_in_yet():  # a new installation: say how the first account gets in
        # (without its name: whoever reaches this page need not learn which account to guess at)
        st.caption("First start: the first account's name and password are the ones set with "
                   "`MARGINLAB_OWNER_NAME` and `MARGINLAB_OWNER_PASSWORD`, or printed once in the server's console.")


def _forget() -> None:
    """Drop the identity and what the pages kept for it (the session or project on screen, messages)."""
    for key in (IDENTITY_KEY, "session_id", "session_picker", "team_project", "outcome", "team_outcome",
                "model_session", "export_session", "export_annotator"):
        st.session_state.pop(key, None)


def sign_out() -> None:
    _forget()
    if _oidc_configured() and getattr(st.user, "is_logged_in", False):
        st.logout()


def sidebar(who: Identity) -> None:
    with st.sidebar:
        st.caption(f"Signed in as **{ui.plain(who.name)}** ({who.role})")
        st.button("Sign out", on_click=sign_out, key="sign_out", icon=":material/logout:")

"""Sign-in for the Streamlit app: nobody sees data before signing in.

How a sign-in is kept. Streamlit has no password sign-in of its own. A sign-in
lasts for the browser, not the tab: a reload, a new tab and a bookmarked
``/label?session=N`` stay signed in until the person signs out, the sign-in
expires (``SIGN_IN_HOURS``), or the account is disabled or its password or role
changes.

- The browser holds a random token (``secrets.token_urlsafe(32)``, 256 bits) in
  the cookie ``marginlab_signin``; the database holds only its SHA-256
  (``browser_sign_ins``, with the account, when it began, when it was last used,
  its expiry and its revocation). Nothing secret goes into an address.
- The cookie is ``HttpOnly`` (no script on the page can read it), ``SameSite=Strict``
  (no other site's page, form or link makes the browser send it), ``Path`` the
  app's, ``Max-Age`` the time the sign-in has left, and ``Secure`` when the page is
  on https. Streamlit's page runs over a websocket, which cannot set a cookie; so
  after the sign-in form succeeds, the service makes a one-time ticket (its hash
  stored, valid for ``TICKET_SECONDS``) and the page runs a small script
  (``st.html`` with JavaScript) that POSTs the ticket, in the body, to the
  server's ``/_marginlab/browser-sign-in``; the server (``app.server_guard``, put
  in place by ``app.serve``, which ``make run`` runs) answers only a request from
  a page of its own (``Origin``) and only once per ticket, with ``Set-Cookie``.
  Why so: an HttpOnly cookie is the one place a browser keeps a secret out of
  reach of the page's script and of addresses (history, logs, a shared link);
  Strict rather than Lax costs nothing here, since the cookie is read from the
  page's own websocket, never from a navigation another site starts.
- On every page run the identity of the tab (``st.session_state``) is checked
  against the database (``MarginLab.still_valid``, which also finds its browser
  sign-in revoked or expired); a tab without one reads the cookie its websocket
  brought (``st.context.cookies``: HttpOnly cookies come with it) and looks up its
  hash (``MarginLab.browser_identity``).
- Signing out revokes every browser sign-in of the account in the database:
  every tab and browser that used one is signed out at its next page run, and the
  cookie, if it is ever sent again, finds nothing; the page then has the server
  remove the cookie (``/_marginlab/browser-sign-out``). A new password or role,
  or disabling the account, revokes them in the same transaction.
- Where the page's script does not run, or the server was started with
  ``streamlit run app/main.py`` (no endpoint to set the cookie), the sign-in is
  held by the tab alone, as before: a reload asks again.

A fragment, which reruns alone, checks too (``rerun_when_signed_out``), and every
action that writes hands the identity to the service, which checks it against the
database before it writes. Failed sign-ins are slowed down and lock the name for
the client they come from, and the client, for a growing time
(``app.services.accounts``); a cookie is not a password guess (its token is
random and 256 bits long), so it is looked up without them.

Where an identity provider is configured for Streamlit (``[auth]`` in
``.streamlit/secrets.toml``, see Streamlit's ``st.login``), the sign-in page also
offers it; the provider's e-mail address must be the name of a MarginLab account.
"""

from __future__ import annotations

import json
import secrets
import time

import streamlit as st

from app.server_guard import SIGN_IN_COOKIE, SIGN_IN_PATH, SIGN_OUT_PATH
from app.services.accounts import SIGN_IN_ENDED, TICKET_SECONDS, Identity, SignInError, client_of
from app.services.database import database_problem
from app.ui.messages import PAGE_ERRORS, logger
from app.ui.state import service
from app.ui.text import plain

#: the key in ``st.session_state`` that holds the signed-in identity
IDENTITY_KEY = "identity"
#: the key of the one-time ticket the page hands to the server for the browser's cookie: (ticket, when made)
TICKET_KEY = "browser_ticket"
#: the key that asks the sign-in page to have the browser's cookie removed (after signing out)
FORGET_COOKIE_KEY = "forget_browser_cookie"


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
    if valid is None:  # the browser's sign-in: a reload, a new tab, a bookmarked address
        valid = svc.browser_identity(_browser_cookie())
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


def _browser_cookie() -> str | None:
    """The browser's sign-in cookie as its websocket brought it (HttpOnly cookies come with it too), or None."""
    try:
        return st.context.cookies.get(SIGN_IN_COOKIE)
    except Exception:  # noqa: BLE001 - no browser behind the session (a test harness)
        return None


def _server_path(path: str) -> str:
    """``path`` under the server's ``server.baseUrlPath``."""
    from streamlit import config

    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}{path}" if base else path


def _post_once(path: str, body: str) -> None:
    """Have the browser POST ``body`` to ``path`` on this server, once per page load (a script in the page:
    the answer's cookie is the browser's, and script never sees it)."""
    target, text = json.dumps(_server_path(path)), json.dumps(body)
    st.html(
        f"""<script>(function () {{
  var sent = window.marginlabPosted = window.marginlabPosted || {{}};
  if (sent[{target} + {text}]) return;
  sent[{target} + {text}] = true;
  fetch({target}, {{method: "POST", body: {text}, credentials: "same-origin", cache: "no-store",
                    headers: {{"Content-Type": "text/plain"}}}});
}})();</script>""",
        unsafe_allow_javascript=True,
        width="content",
    )


def _keep_in_browser() -> None:
    """Right after a sign-in: the page hands its one-time ticket to the server, which answers with the
    browser's cookie (for ``TICKET_SECONDS``; a ticket is taken once)."""
    pending = st.session_state.get(TICKET_KEY)
    if not pending:
        return
    ticket, made = pending
    if time.monotonic() - made > TICKET_SECONDS:
        st.session_state.pop(TICKET_KEY, None)
        return
    _post_once(SIGN_IN_PATH, ticket)


def _oidc_configured() -> bool:
    """Whether Streamlit has an identity provider configured (``[auth]`` in secrets.toml)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all
        return False


def _submit() -> None:
    state = st.session_state
    try:
        svc = service()
        who = svc.sign_in(
            state.get("sign_in_name", ""),
            state.get("sign_in_password", ""),
            client=client_of(st.context.ip_address, st.context.headers.get("X-Forwarded-For")),
        )
        state[IDENTITY_KEY], ticket = svc.begin_browser_sign_in(who)  # (kept by the browser: _keep_in_browser)
        state[TICKET_KEY] = (ticket, time.monotonic())
        state.sign_in_error = None
    except SignInError as error:
        state.sign_in_error = str(error)
    except PAGE_ERRORS as error:  # the database could not be used (a full disk, a server restarting)
        logger.error("a sign-in could not be checked", exc_info=error)
        state.sign_in_error = database_problem(error)  # (the form stays: sign in again once it passes)
    state.sign_in_password = ""  # the password is not kept in the session


def sign_in_page() -> None:
    """The only page an anonymous browser sees."""
    st.title("Sign in")
    st.caption("MarginLab keeps its datasets and labels for signed-in members only.")
    if st.session_state.pop(FORGET_COOKIE_KEY, False):  # signed out: the browser drops its (revoked) cookie
        _post_once(SIGN_OUT_PATH, secrets.token_hex(8))  # (a body of its own: a second sign-out posts again)
    with st.columns([2, 3])[0], st.form("sign_in", border=True, enter_to_submit=True):
        st.text_input("Name", key="sign_in_name", autocomplete="username")
        st.text_input("Password", type="password", key="sign_in_password", autocomplete="current-password")
        st.form_submit_button("Sign in", type="primary", on_click=_submit, key="sign_in_submit")
    if st.session_state.get("sign_in_error"):
        st.error(plain(st.session_state.sign_in_error))
    if _oidc_configured():
        st.button("Sign in with the identity provider", on_click=st.login, key="sign_in_oidc")
    if service().nobody_signed_in_yet():  # a new installation: say how the first account gets in
        # (without its name: whoever reaches this page need not learn which account to guess at)
        st.caption(
            "First start: the first account's name and password are the ones set with "
            "`MARGINLAB_OWNER_NAME` and `MARGINLAB_OWNER_PASSWORD`, or printed once in the server's console."
        )


def _forget() -> None:
    """Drop the identity and what the pages kept for it (the session or project on screen, messages)."""
    for key in (
        IDENTITY_KEY,
        TICKET_KEY,
        "session_id",
        "session_picker",
        "team_project",
        "outcome",
        "team_outcome",
        "model_session",
        "export_session",
        "export_annotator",
    ):
        st.session_state.pop(key, None)


def sign_out() -> None:
    """End the account's sign-ins everywhere (every browser sign-in revoked in the database), then this tab's."""
    who = st.session_state.get(IDENTITY_KEY)
    try:
        service().sign_out(who if isinstance(who, Identity) else None)
    except PAGE_ERRORS as error:  # the database could not be used: this tab forgets the sign-in all the same
        logger.error("a sign-out could not be stored", exc_info=error)
        st.session_state.sign_in_error = (
            "You are signed out in this tab only: the database could not be used, so "
            "other tabs may stay signed in. Sign in and out again once it works."
        )
    _forget()
    st.session_state[FORGET_COOKIE_KEY] = True
    if _oidc_configured() and getattr(st.user, "is_logged_in", False):
        st.logout()


def sidebar(who: Identity) -> None:
    with st.sidebar:
        st.caption(f"Signed in as **{plain(who.name)}** ({who.role})")
        st.button("Sign out", on_click=sign_out, key="sign_out", icon=":material/logout:")
        _keep_in_browser()

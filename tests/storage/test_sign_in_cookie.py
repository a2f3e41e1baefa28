"""A sign-in kept by the browser: the service and storage (``browser_sign_ins``), and the server's endpoint
that sets the cookie (``app.server_guard``), over HTTP against a real server as ``make run`` starts it.

The browser holds a random token in an HttpOnly cookie; the database holds only its SHA-256. A page
just signed in hands a one-time ticket to the server, which answers with the cookie. Signing out ends
every browser sign-in of the account; a new password or role, or a disabled account, ends them too.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
import requests
from sqlalchemy import MetaData, select

from app import server_guard
from app.services import MarginLab, accounts
from app.services.accounts import SIGN_IN_HOURS, TICKET_SECONDS, SignedOutError, secret_digest
from storage import teams
from storage.models import utc_now
from tests.browser.test_browser import OWNER, OWNER_PASSWORD, AppServer, ensure_account
from tests.wire import WireBrowser

PASSWORD = "a-long-password"


@pytest.fixture
def svc(engine):
    service = MarginLab(engine)
    service.failure_delay_s = 0.0
    for name, role in (("olga", "owner"), ("bea", "owner"), ("ann", "annotator")):
        teams.create_account(engine, name=name, role=role, password_hash=accounts.hash_password(PASSWORD))
    return service


@pytest.fixture
def clock(monkeypatch):
    """The service's clock, moved on by the test (it starts at the real time: storage deletes sign-ins that
    ended a day before the real time)."""
    now = [utc_now()]
    monkeypatch.setattr(accounts, "utc_now", lambda: now[0])
    return now


def kept_in_browser(svc, name: str):
    """Sign ``name`` in and have the browser keep it: (the identity, the cookie's token)."""
    who, ticket = svc.begin_browser_sign_in(svc.sign_in(name, PASSWORD))
    cookie = svc.redeem_browser_ticket(ticket)
    assert cookie is not None
    return who, cookie.token


def every_stored_text(engine) -> str:
    """Every value of every row of every table, as text."""
    meta = MetaData()
    meta.reflect(engine)
    with engine.connect() as connection:
        return "\n".join(repr(tuple(row)) for table in meta.sorted_tables for row in connection.execute(select(table)))


def test_a_browser_keeps_a_sign_in_under_a_token_the_database_holds_only_the_hash_of(svc):
    signed_in = svc.sign_in("olga", PASSWORD)
    who, ticket = svc.begin_browser_sign_in(signed_in)
    assert who.browser_sign_in is not None and who.name == "olga" and who.signed_in_at == signed_in.signed_in_at
    assert svc.still_valid(who) == who
    cookie = svc.redeem_browser_ticket(ticket)
    assert cookie is not None and len(cookie.token) >= 43
    assert cookie.expires_at == signed_in.signed_in_at + dt.timedelta(hours=SIGN_IN_HOURS)
    assert SIGN_IN_HOURS * 3600 - 60 <= cookie.max_age() <= SIGN_IN_HOURS * 3600
    # a reload or a new tab: the cookie alone brings back the same sign-in
    assert svc.browser_identity(cookie.token) == who
    # a ticket is taken once; neither it nor a made-up token is a sign-in
    assert svc.redeem_browser_ticket(ticket) is None
    assert svc.browser_identity(ticket) is None
    assert svc.browser_identity(cookie.token[:-1] + ("A" if cookie.token[-1] != "A" else "B")) is None
    assert svc.browser_identity("") is None and svc.browser_identity(None) is None
    # at rest: the token's hash, never the token or the ticket
    stored = every_stored_text(svc.engine)
    assert cookie.token not in stored and ticket not in stored
    assert secret_digest(cookie.token) in stored
    [kept] = teams.browser_sign_ins(svc.engine, who.account_id)
    assert kept.redeemed and kept.revoked_at is None and kept.last_used_at is not None


def test_signing_out_ends_the_account_s_sign_ins_in_every_browser_and_nothing_more(svc):
    first, first_token = kept_in_browser(svc, "olga")
    second, second_token = kept_in_browser(svc, "olga")  # another browser of hers
    waiting, waiting_ticket = svc.begin_browser_sign_in(svc.sign_in("olga", PASSWORD))  # its ticket not handed over
    colleague, colleague_token = kept_in_browser(svc, "bea")
    assert svc.sign_out(second) == 3
    for token in (first_token, second_token):
        assert svc.browser_identity(token) is None
    for who in (first, second, waiting):
        assert svc.still_valid(who) is None
        with pytest.raises(SignedOutError):  # an open tab of hers writes nothing more
            svc.acting(who)
    assert svc.redeem_browser_ticket(waiting_ticket) is None
    assert svc.browser_identity(colleague_token) == colleague and svc.still_valid(colleague) == colleague
    # she signs in again: a new sign-in, the old cookies stay dead
    again, again_token = kept_in_browser(svc, "olga")
    assert svc.browser_identity(again_token) == again and svc.browser_identity(first_token) is None


def test_a_browser_sign_in_ends_when_it_expires_and_its_ticket_soon_after_it_is_made(svc, clock):
    who, token = kept_in_browser(svc, "olga")
    _, late_ticket = svc.begin_browser_sign_in(svc.sign_in("olga", PASSWORD))
    clock[0] += dt.timedelta(seconds=TICKET_SECONDS + 1)
    assert svc.redeem_browser_ticket(late_ticket) is None  # handed over too late
    assert svc.browser_identity(token) == who
    clock[0] = who.signed_in_at + dt.timedelta(hours=SIGN_IN_HOURS, seconds=1)
    assert svc.browser_identity(token) is None and svc.still_valid(who) is None


@pytest.mark.parametrize("change", ["password", "own password", "role", "disabled"])
def test_a_new_password_or_role_or_a_disabled_account_ends_its_browser_sign_ins(svc, change):
    owner = svc.sign_in("bea", PASSWORD)
    name = "olga" if change != "role" else "ann"
    who, token = kept_in_browser(svc, name)
    _, ticket = svc.begin_browser_sign_in(svc.sign_in(name, PASSWORD))
    account = teams.get_account(svc.engine, name)
    if change == "password":
        svc.change_password(owner, name, "another-long-password")
    elif change == "own password":
        svc.change_password(who, name, "another-long-password", current_password=PASSWORD)
    elif change == "role":
        teams.set_account_role(svc.engine, account.id, "owner")
    else:
        svc.set_disabled(owner, name, True)
    assert svc.browser_identity(token) is None and svc.still_valid(who) is None
    assert svc.redeem_browser_ticket(ticket) is None
    assert all(kept.revoked_at is not None for kept in teams.browser_sign_ins(svc.engine, account.id))
    if change == "disabled":  # enabled again: the old cookie does not come back to life
        svc.set_disabled(owner, name, False)
        assert svc.browser_identity(token) is None


def test_a_sign_in_that_ended_cannot_be_kept_by_a_browser(svc):
    who = svc.sign_in("olga", PASSWORD)
    svc.change_password(svc.sign_in("bea", PASSWORD), "olga", "another-long-password")
    with pytest.raises(SignedOutError):
        svc.begin_browser_sign_in(who)
    assert teams.browser_sign_ins(svc.engine, who.account_id) == []


# --------------------------------------------------------------------------- the pages (AppTest, no browser)


def test_signing_out_in_one_tab_signs_out_another_at_its_next_run(tmp_path, monkeypatch):
    """Two tabs of one account (AppTest: no browser, so each holds its identity; both belong to browser
    sign-ins): signing out in one ends the other's, which says so and writes nothing more."""
    from app.services.accounts import SIGN_IN_ENDED
    from app.ui.text import plain
    from tests.app import test_app

    monkeypatch.setenv("MARGINLAB_DATABASE_URL", f"sqlite:///{tmp_path / 'app.db'}")
    first, second = test_app.start_app("olga"), test_app.start_app("olga")
    other = test_app.start_app("bea")
    for at in (first, second):  # the page hands its ticket to the server, in a script, never in an address
        [script] = [h.proto.body for h in at.sidebar.get("html")]
        assert server_guard.SIGN_IN_PATH in script and re.search(r'body: "[A-Za-z0-9_-]{43}"', script)
        assert at.session_state["identity"].browser_sign_in is not None
    first.button(key="sign_out").click().run()
    assert [t.value for t in first.title] == ["Sign in"]
    assert any(server_guard.SIGN_OUT_PATH in h.proto.body for h in first.get("html"))  # the cookie goes too
    second.run()
    assert [t.value for t in second.title] == ["Sign in"] and [e.value for e in second.error] == [plain(SIGN_IN_ENDED)]
    other.run()
    assert [t.value for t in other.title] != ["Sign in"]  # (another account's sign-in holds)


# --------------------------------------------------------------------------- the endpoint, without a server


@pytest.mark.parametrize(
    ("headers", "allowed", "secure"),
    [
        ({"origin": "http://127.0.0.1:8501", "host": "127.0.0.1:8501"}, True, False),
        ({"origin": "http://127.0.0.1:8501", "host": "127.0.0.1:8501", "sec-fetch-site": "same-origin"}, True, False),
        (
            {"origin": "https://lab.example.org", "host": "127.0.0.1:8501", "x-forwarded-host": "lab.example.org"},
            True,
            True,
        ),
        ({"origin": "https://lab.example.org", "host": "lab.example.org"}, True, True),
        ({"origin": "http://evil.example.com", "host": "127.0.0.1:8501"}, False, None),
        ({"origin": "http://127.0.0.1:8501", "host": "127.0.0.1:8501", "sec-fetch-site": "cross-site"}, False, None),
        ({"origin": "http://127.0.0.1:8501", "host": "127.0.0.1:8501", "sec-fetch-site": "same-site"}, False, None),
        ({"origin": "null", "host": "127.0.0.1:8501"}, False, None),
        ({"host": "127.0.0.1:8501"}, False, None),
    ],
)
def test_only_a_page_of_this_server_may_ask_for_the_cookie(headers, allowed, secure):
    scope = {"type": "http", "scheme": "http", "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    if allowed:
        assert server_guard._from_this_server(scope) is secure
    else:
        with pytest.raises(server_guard.Refused) as refused:
            server_guard._from_this_server(scope)
        assert refused.value.status == 403


# --------------------------------------------------------------------------- over HTTP, against a real server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cookie")
    db_url = f"sqlite:///{folder / 'marginlab.db'}"
    ensure_account(db_url, OWNER)
    with AppServer(db_url, folder / "server.log") as running:
        yield running


def ticket_on(page) -> str:
    """The one-time ticket the page just signed in hands to the server (in the script it runs)."""
    found = [m for text in page.texts for m in re.findall(r'body: "([A-Za-z0-9_-]{43})"', text)]
    assert len(found) == 1, page.texts
    return found[0]


def post_ticket(server, ticket: str, origin: str | None = None, **headers) -> requests.Response:
    return requests.post(
        f"{server.url}{server_guard.SIGN_IN_PATH}",
        data=ticket.encode(),
        timeout=30,
        headers={"Origin": origin or server.url, "Content-Type": "text/plain", **headers},
    )


def cookie_attributes(answer: requests.Response) -> dict[str, str]:
    header = answer.headers["Set-Cookie"]
    name_value, *attributes = [part.strip() for part in header.split(";")]
    name, _, value = name_value.partition("=")
    assert name == server_guard.SIGN_IN_COOKIE, header
    return {"value": value, **{a.partition("=")[0].lower(): a.partition("=")[2] for a in attributes}}


def test_a_ticket_from_a_signed_in_page_gets_the_cookie_once_and_the_cookie_signs_in_a_new_tab(server):
    with WireBrowser(server.url) as browser:
        ticket = ticket_on(browser.sign_in(OWNER, OWNER_PASSWORD))
    answer = post_ticket(server, ticket)
    assert answer.status_code == 204, answer.text
    cookie = cookie_attributes(answer)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", cookie["value"]) and cookie["value"] != ticket
    assert "httponly" in cookie and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    assert "secure" not in cookie  # (the page is on http here: a Secure cookie would never come back)
    assert SIGN_IN_HOURS * 3600 - 120 <= int(cookie["max-age"]) <= SIGN_IN_HOURS * 3600
    assert answer.headers["Cache-Control"] == "no-store"
    used = post_ticket(server, ticket)  # the same ticket again
    assert used.status_code == 403 and "Set-Cookie" not in used.headers
    # a new tab of that browser: its websocket brings the cookie, and the page is signed in
    with WireBrowser(server.url, cookies={server_guard.SIGN_IN_COOKIE: cookie["value"]}) as tab:
        page = tab.run()
        assert "sign_in_name" not in page.widgets
        assert any(text.startswith(f"Signed in as **{OWNER}**") for text in page.texts), page.texts
    with WireBrowser(server.url, cookies={server_guard.SIGN_IN_COOKIE: ticket}) as forged:  # not a token
        assert "sign_in_name" in forged.run().widgets


def test_a_ticket_sent_from_another_site_gets_nothing(server):
    with WireBrowser(server.url) as browser:
        ticket = ticket_on(browser.sign_in(OWNER, OWNER_PASSWORD))
    for refused in (
        post_ticket(server, ticket, origin="http://evil.example.com"),
        post_ticket(server, ticket, **{"Sec-Fetch-Site": "cross-site"}),
        requests.post(f"{server.url}{server_guard.SIGN_IN_PATH}", data=ticket, timeout=30),  # no Origin
        requests.get(f"{server.url}{server_guard.SIGN_IN_PATH}", timeout=30, headers={"Origin": server.url}),
    ):
        assert refused.status_code in (403, 405) and "Set-Cookie" not in refused.headers, refused.text
    # the refused requests did not use it up: the page itself still gets its cookie, Secure on https
    answer = post_ticket(server, ticket, origin=server.url.replace("http://", "https://"))
    assert answer.status_code == 204 and "secure" in cookie_attributes(answer)


def test_signing_out_in_one_tab_signs_out_the_tab_the_cookie_opened_and_removes_the_cookie(server):
    with WireBrowser(server.url) as first:
        page = first.sign_in(OWNER, OWNER_PASSWORD)
        token = cookie_attributes(post_ticket(server, ticket_on(page)))["value"]
        with WireBrowser(server.url, cookies={server_guard.SIGN_IN_COOKIE: token}) as second:
            signed_in = second.run()
            assert "sign_in_name" not in signed_in.widgets
            out = first.run(widgets=((page.widgets["sign_out"].id, "trigger_value", True),))
            assert "sign_in_name" in out.widgets
            assert any(server_guard.SIGN_OUT_PATH in text for text in out.texts), out.texts
            again = second.run()
            assert "sign_in_name" in again.widgets  # the other tab, on its next run
        with WireBrowser(server.url, cookies={server_guard.SIGN_IN_COOKIE: token}) as reloaded:
            assert "sign_in_name" in reloaded.run().widgets
    cleared = requests.post(f"{server.url}{server_guard.SIGN_OUT_PATH}", headers={"Origin": server.url}, timeout=30)
    assert cleared.status_code == 204
    assert cookie_attributes(cleared)["value"] == "" and cookie_attributes(cleared)["max-age"] == "0"
    assert (
        requests.post(
            f"{server.url}{server_guard.SIGN_OUT_PATH}", timeout=30, headers={"Origin": "http://evil.example.com"}
        ).status_code
        == 403
    )

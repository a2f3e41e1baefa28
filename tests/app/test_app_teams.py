"""Sign-in, roles and team projects through ``streamlit.testing.v1.AppTest`` (no browser).

The real entry point ``app/main.py`` on a temporary SQLite database; what the pages did is
checked in the database.
"""

from __future__ import annotations

import pytest

from app.services import MarginLab
from storage import repository as repo
from storage import teams
from tests.app import test_app
from tests.app.test_app import PASSWORD, anonymous_app, ensure_account, sign_in, start_app

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL, the owner's password set


def titles(at) -> list[str]:
    return [t.value for t in at.title]


def test_nobody_signed_in_gets_the_sign_in_page_and_nothing_else(db_url):
    at = anonymous_app()
    assert titles(at) == ["Sign in"]
    assert not at.dataframe and not at.get("plotly_chart") and not at.get("download_button")
    assert [b.label for b in at.button] == ["Sign in"]
    at.text_input(key="sign_in_name").input("owner")
    at.text_input(key="sign_in_password").input("wrong password")
    at.button(key="sign_in_submit").click().run()
    assert titles(at) == ["Sign in"] and [e.value for e in at.error] == ["Wrong name or password\\."]
    assert at.text_input(key="sign_in_password").value == ""  # the password is not kept
    assert "identity" not in at.session_state
    # the first owner signs in with the password from MARGINLAB_OWNER_PASSWORD
    sign_in(at, "owner")
    assert titles(at) == ["Label"]
    at.button(key="sign_out").click().run()
    assert titles(at) == ["Sign in"] and "identity" not in at.session_state


def test_an_annotator_labels_in_a_project_and_sees_only_their_answers(db_url):
    ensure_account(db_url, "ann", role="annotator")
    ensure_account(db_url, "bob", role="annotator")
    owner = start_app("olga")
    owner.switch_page("views/projects.py").run()
    owner.text_input(key="project_name").input("screening")
    owner.multiselect(key="project_members").select("ann").select("bob")
    owner.slider(key="project_share").set_value(100)
    owner.button(key="FormSubmitter:new_project-Create project").click().run()
    assert not owner.exception, owner.exception
    svc = MarginLab.from_url(db_url)
    (project,) = teams.list_projects(svc.engine)
    assert (project.name, project.labels_per_item, project.overlap_share) == ("screening", 2, 1.0)
    assert set(teams.project_members(svc.engine, project.id)) == {"ann", "bob", "olga"}

    ann = start_app("ann", role="annotator")
    assert titles(ann) == ["Label together"]
    y = repo.load_dataset_arrays(svc.engine, project.dataset_id)[1]
    asked = []
    for _ in range(3):
        item = test_app.shown_item(ann)
        asked.append(item)
        key = "team_positive" if y[item] == 1 else "team_negative"
        (button,) = [b for b in ann.button if b.key == f"{key}_{item}"]
        button.click().run()
        assert not ann.exception, ann.exception
    bob = start_app("bob", role="annotator")
    second = test_app.shown_item(bob)
    assert second == asked[0]  # the first of ann's items, for a second opinion
    (button,) = [b for b in bob.button if b.key == f"team_{'negative' if y[second] == 1 else 'positive'}_{second}"]
    button.click().run()  # bob disagrees
    _, answers = teams.project_answers(svc.engine, project.id)
    assert [(a.annotator, a.item_index) for a in answers] == [("ann", i) for i in asked] + [("bob", second)]

    ann.switch_page("views/my_labels.py").run()
    assert titles(ann) == ["My labels"]
    (table,) = ann.dataframe
    assert sorted(table.value["item"]) == sorted(asked)
    assert any("3 answers by ann" in c.value for c in ann.caption)

    # the owner sees the disagreement and settles it; the shared model learns the settled answer
    owner.switch_page("views/projects.py").run()
    owner.selectbox(key="project_shown").select(project.id).run()
    assert [m.label for m in owner.metric][:1] == ["Agreement among all members (Fleiss' kappa)"]
    settle = [b for b in owner.button if b.key == f"settle_pos_{second}"]
    assert settle, [b.key for b in owner.button]
    settle[0].click().run()
    assert not owner.exception, owner.exception
    settled = teams.settlements(svc.engine, project.id)
    assert settled[second].value == 1 and settled[second].settled_by == "olga"
    run = svc.open_project(project.id)
    run.sync()
    assert run.model_labels[second] == 1


def test_what_to_find_is_set_by_the_owner_and_shown_to_the_team_as_plain_text(db_url):
    """The owner writes what Positive means in the project form (Markdown and HTML in it stay text); the
    annotator and the owner see it beside the answer buttons of Label together; the owner changes it later."""
    from tests.app.test_app import shown

    ensure_account(db_url, "ann", role="annotator")
    owner = start_app("olga")
    owner.switch_page("views/projects.py").run()
    assert owner.text_input(key="project_find").label == "What to find"
    words = "**loops** <b>that</b> [close](http://e.org) :smile:"
    owner.text_input(key="project_name").input("screening")
    owner.text_input(key="project_find").input(words)
    owner.multiselect(key="project_members").select("ann")
    owner.button(key="FormSubmitter:new_project-Create project").click().run()
    assert not owner.exception, owner.exception
    svc = MarginLab.from_url(db_url)
    (project,) = teams.list_projects(svc.engine)
    assert project.params["find"] == words

    ann = start_app("ann", role="annotator")
    assert titles(ann) == ["Label together"]
    (meaning,) = [c for c in ann.caption if "means:" in c.value]
    assert meaning.value.startswith("**Positive** means: ")
    assert shown([meaning]) == [f"**Positive** means: {words}"]  # every character of the words shown as typed
    assert "**loops**" not in meaning.value and "<b>" not in meaning.value  # (escaped: no bold, no HTML)
    owner.switch_page("views/team_label.py").run()
    assert any(c.value == meaning.value for c in owner.caption)  # the owner labelling sees it too

    # the owner changes the words on the Projects page; the annotator's next page shows the new ones
    owner.switch_page("views/projects.py").run()
    assert owner.text_input(key=f"project_find_edit_{project.id}").value == words
    owner.text_input(key=f"project_find_edit_{project.id}").input("open loops")
    owner.button(key="FormSubmitter:project_find_form-Save").click().run()
    assert not owner.exception, owner.exception
    assert teams.get_project(svc.engine, project.id).params["find"] == "open loops"
    ann.run()
    assert "**Positive** means: open loops" in test_app.texts(ann)


def test_an_annotator_cannot_reach_the_owner_pages(db_url):
    import pytest

    ensure_account(db_url, "ann", role="annotator")
    at = start_app("ann", role="annotator")
    assert titles(at) == ["Label together"]
    assert any("not a member of an active project" in i.value for i in at.info)
    for page in (
        "views/export.py",
        "views/data.py",
        "views/team.py",
        "views/projects.py",
        "views/label.py",
        "views/compare.py",
        "views/history.py",
        "views/sessions.py",
    ):
        # the navigation of an annotator has two pages; no other can be opened (the owners' pages' addresses
        # are hidden pages without a file of their own: they open her first page)
        with pytest.raises(
            Exception,
            match=r"Known pages: \['MarginLab', [^,]*team_label\.py', [^,]*my_labels\.py'"
            r"(, '[a-z_]+')*\]",
        ):
            at.switch_page(page)
    at.switch_page("views/my_labels.py").run()
    assert titles(at) == ["My labels"] and not at.get("download_button")
    assert PASSWORD  # the accounts above sign in with the tests' password


def test_the_sign_in_page_of_a_new_installation_names_no_account(db_url):
    """Before the first sign-in the page says where the first account's name and password come from,
    not the name itself: whoever reaches the page need not learn which account to guess at."""
    import re

    at = anonymous_app()
    shown = " ".join(test_app.texts(at) + [t.value for t in at.title] + [e.value for e in at.error])
    assert "MARGINLAB_OWNER_PASSWORD" in shown and "server's console" in shown  # the first-start help is there
    assert not re.search(r"\bowner\b", shown, flags=re.IGNORECASE), shown
    assert teams.get_account(MarginLab.from_url(db_url).engine, "owner") is not None  # (the account exists)


def test_a_disabled_annotator_pressing_a_key_on_an_open_page_stores_nothing(db_url):
    """The attack: the owner disables ann, or resets a labeller's password, while their pages are open;
    they press P. The click's callback runs before the page checks the sign-in (and a fragment's rerun
    never does): the service refuses the write, and the page then asks them to sign in again."""
    from app.services.accounts import SIGN_IN_ENDED
    from app.ui.text import plain

    ensure_account(db_url, "ann", role="annotator")
    ensure_account(db_url, "bea")  # an owner who labels on her own
    owner = start_app("olga")
    svc = MarginLab.from_url(db_url)
    me = svc.sign_in("olga", PASSWORD)
    project_id = svc.create_project(
        me, name="screening", dataset_id=svc.datasets()[0].id, strategy="random", members=["ann"]
    )
    svc.start_session(dataset_id=svc.datasets()[0].id, annotator="bea", strategy="random")
    ann, bea = start_app("ann", role="annotator"), start_app("bea")
    assert titles(ann) == ["Label together"] and titles(bea) == ["Label"]
    item, labelled = test_app.shown_item(ann), test_app.shown_item(bea)
    svc.set_disabled(me, "ann", True)
    svc.change_password(me, "bea", "another-password")
    [b for b in ann.button if b.key == f"team_positive_{item}"][0].click().run()
    [b for b in bea.button if b.key == f"positive_{labelled}"][0].click().run()
    for at in (ann, bea):
        assert not at.exception, at.exception
        assert titles(at) == ["Sign in"] and [e.value for e in at.error] == [plain(SIGN_IN_ENDED)]
    assert teams.project_answers(svc.engine, project_id)[1] == []
    assert all(repo.label_events(svc.engine, s.id) == [] for s in repo.list_sessions(svc.engine))
    assert owner.session_state["identity"].name == "olga"  # (the owner's own sign-in holds)

"""The Label page's "Known items" panel: search the pool and mark items known to be positive or negative (in
a session with named classes: known to be of a class, a button per class).

What it shows and does lives in ``app.services.priors`` (``LabellingRun.search_pool``, ``mark_known``);
this draws it. Hits are shown as plain text.
"""

from __future__ import annotations

import streamlit as st

from app.services import ServiceError
from app.services.priors import QUERY_CHARS
from app.ui.messages import guarded
from app.ui.text import plain

#: what the search box asks for, by how the pool is searched
PROMPTS = {
    "words": ('Words or "a phrase"', "every word and quoted phrase must occur (case does not matter)"),
    "substructure": ("SMILES substructure", "molecules that contain it (SMILES or SMARTS, e.g. C(=O)O)"),
    "column filter": ("Column filter", "column, comparison, number: e.g. radius > 15 (< <= > >= = !=)"),
}


def show(svc, session_id: int, who) -> None:
    """The panel, collapsed until opened; a mark stores the answer and the model learns it at once."""
    run = svc.open_session(session_id)
    if run.problem is not None:
        return
    how = run.search_how
    label, help_text = PROMPTS[how]
    with st.expander(f"Known items ({run.n_known} marked)", icon=":material/search:"):
        st.caption(
            "Search the pool for items you already know and mark them: they are stored as labels "
            "known beforehand (not asked by the model) and the model learns them at once (before the "
            "first question, they are its start)."
        )
        query = st.text_input(
            label, key=f"known_query_{session_id}", max_chars=QUERY_CHARS, help=help_text, placeholder=help_text
        )
        if not query:
            return
        try:
            result = run.search_pool(query)
        except ServiceError as error:
            st.error(plain(str(error)))
            return
        (st.info if result.n_matches == 0 else st.caption)(plain(result.message))
        classes = getattr(run, "classes", None) if getattr(run, "has_classes", False) else None
        for hit in result.hits:
            widths = [5, 4] if classes else [6, 1.4, 1.4]
            text_col, pos_col, *neg = st.columns(widths, vertical_alignment="center")
            name = f"Item {hit.item_index}" + (f" ({hit.key})" if hit.key else "")
            text_col.text(f"{name}: {hit.text}")
            if hit.answer is not None:
                pos_col.text(f"answered: {hit.answer}")
                continue
            if classes:  # named classes: a button per class
                with pos_col.container(horizontal=True):
                    for k, name in enumerate(classes):
                        st.button(
                            f"Known {plain(name)}",
                            key=f"known_{session_id}_{hit.item_index}_{k}",
                            on_click=_mark,
                            args=(svc, session_id, hit.item_index, k, who),
                        )
                continue
            pos_col.button(
                "Known positive",
                key=f"known_pos_{session_id}_{hit.item_index}",
                on_click=_mark,
                args=(svc, session_id, hit.item_index, 1, who),
            )
            neg[0].button(
                "Known negative",
                key=f"known_neg_{session_id}_{hit.item_index}",
                on_click=_mark,
                args=(svc, session_id, hit.item_index, -1, who),
            )


@guarded
def _mark(svc, session_id: int, item_index: int, value: int, who) -> None:
    st.session_state.outcome = svc.open_session(session_id).mark_known(item_index, value, by=who)

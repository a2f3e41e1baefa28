"""Streamlit widgets and helpers shared by the pages, a module a purpose; a page imports from the module:

- ``state``: the service singleton, the browser session's defaults, the labelling session a page shows
- ``text``: user text shown as it is (``plain`` before Markdown, ``visible`` and ``visible_cells`` elsewhere)
- ``messages``: failures of the database in the app's words, outcomes, a first start's notices
- ``item``: the item as it is meant to be seen, why it was chosen, the live ROC curve after it
- ``forms``: the New session fields, an upload's preview, the Compare and Export forms, deleting a dataset
- ``tables``: the History, My labels and Compare tables and the lines around them

The pages' charts are ``app.charts`` (Plotly figures as plain dicts, no Streamlit).
"""

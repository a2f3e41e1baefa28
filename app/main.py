"""MarginLab's Streamlit entry point: ``streamlit run app/main.py``.

The pages live in ``app/views/``; each reads like a description of its screen.
What they do is in ``app/services/`` (datasets, sessions, labels, comparisons, exports)
and ``app/charts.py`` (figures), which tests call without a browser.
"""

import sys
from pathlib import Path

# ``streamlit run app/main.py`` puts app/ on the import path, not the project root.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from sqlalchemy.exc import SQLAlchemyError  # noqa: E402

from app import navigation, ui  # noqa: E402
from app.launch import keep_error_details_on_the_server  # noqa: E402

keep_error_details_on_the_server()
st.set_page_config(page_title="MarginLab", page_icon=":material/label:", layout="wide")
ui.init_state()

try:
    st.navigation(navigation.pages()).run()
except SQLAlchemyError as error:  # the database failed while a page was drawn
    ui.logger.error("the database failed", exc_info=error)
    ui.database_failed(error)

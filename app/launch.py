"""Settings that keep the app safe however it is started.

``app/.streamlit/config.toml`` (beside the main script, so read wherever the
server is started from) sets them too; this holds when the script runs without
it, as under ``streamlit.testing``.
"""

from __future__ import annotations

import streamlit as st
from streamlit import config

#: what the browser is told about an uncaught error: nothing (no message, type or traceback
#: with server paths); the server's log keeps the whole traceback
ERROR_DETAILS = "none"


def keep_error_details_on_the_server() -> None:
    """Show uncaught errors to the browser without details, unless the server was started asking
    for them (``--client.showErrorDetails``, or a config file that sets it)."""
    if not config.is_manually_set("client.showErrorDetails"):
        st.set_option("client.showErrorDetails", ERROR_DETAILS)

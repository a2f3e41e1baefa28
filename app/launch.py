"""Settings that keep the app safe wherever it is started from.

Streamlit reads ``.streamlit/config.toml`` from the current directory only, so
what must hold everywhere is set here, in code.
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

"""Conversation rooms: the web app's entry point (``streamlit run app.py``).

An ``st.App`` (Streamlit's ASGI server) serving the Streamlit script ``streamlit_app.py``. Its
lifespan (:func:`ui.bootstrap.lifespan`) opens the database and starts the in-process runner
when the server starts, not on the first page visit, so rooms left running by a previous server
go on at once; when the server stops (SIGTERM) the runner releases its rooms' leases.
"""

from pathlib import Path

import streamlit as st

from ui.bootstrap import lifespan

app = st.App(str(Path(__file__).resolve().with_name("streamlit_app.py")), lifespan=lifespan)

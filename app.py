"""Conversation rooms: the web app's entry point (``streamlit run app.py``).

An ``st.App`` (Streamlit's ASGI server) serving the Streamlit script ``streamlit_app.py`` and,
beside it, the study participant's page (``/participate`` and ``/study/...``: our own routes,
``ui.participant``, not a Streamlit page). Its lifespan (:func:`ui.bootstrap.lifespan`) opens
the database and starts the in-process runner when the server starts, not on the first page
visit, so rooms left running by a previous server go on at once; when the server stops (SIGTERM)
the participants' streams end and the runner releases its rooms' leases.

Executed as a Streamlit script itself (``AppTest.from_file("app.py")``), it draws the app.
"""

from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui.bootstrap import database, lifespan, run_app, wake_runner

if get_script_run_ctx(suppress_warning=True) is not None:
    run_app()  # a script run: the same screens as streamlit_app.py
else:
    from ui.participant import ParticipantSite

    site = ParticipantSite(database, wake_runner=wake_runner)
    app = st.App(
        str(Path(__file__).resolve().with_name("streamlit_app.py")),
        lifespan=site.lifespan(lifespan),
        routes=site.routes,
    )

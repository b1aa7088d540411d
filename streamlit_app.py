"""Conversation rooms: the Streamlit script of the web app (screens, sidebar, navigation).

Page configuration, navigation over the screens in ``pages/``, the shared sidebar and the
in-process runner all live in :mod:`ui.bootstrap`; this file only starts them. The server's entry
point is ``app.py`` (``streamlit run app.py``), which serves this script and starts the runner
with the server; ``streamlit run streamlit_app.py`` works too, its runner starting on the first
page visit.
"""

from ui.bootstrap import run_app

run_app()

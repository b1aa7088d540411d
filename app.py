"""Conversation rooms: the web app's entry point (`streamlit run app.py`).

Page configuration, navigation over the screens in ``pages/``, the shared sidebar and the
in-process runner all live in :mod:`ui.bootstrap`; this file only starts them.
"""

from ui.bootstrap import run_app

run_app()

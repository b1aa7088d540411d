"""A participant who edits their link to a researcher's Streamlit page (the participant's own
page is not a Streamlit page: ``ui.participant``) is refused it, without sidebar or navigation,
and stays refused in that session even when the token leaves the URL."""

from __future__ import annotations

import pytest

from storage import Database
from tests.app.study_support import joined, launch, page, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_a_researcher_page_with_a_participant_token_is_refused(db: Database) -> None:
    found = launch(db)
    token = joined(db, found.code)
    for path in ("pages/room.py", "pages/study_monitor.py", "pages/home.py"):
        at = page(path, p=token, room="1", study=found.code)
        assert not at.exception
        assert "not part of the study" in texts(at)
        assert not at.sidebar.children or all(not c for c in at.sidebar.children.values())
        del at.query_params["p"]
        at.run()  # the session held a token: still refused
        assert "not part of the study" in texts(at)


def test_without_a_token_the_researcher_pages_are_drawn(db: Database) -> None:
    at = page("pages/home.py")
    assert not at.exception
    assert "not part of the study" not in texts(at)

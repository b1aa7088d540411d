"""Results reaches archived experiments: hidden by default like on the other screens,
listed with "Show archived", reachable by a link, and their (archived) rooms are shown."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

import storage
from storage import Database
from tests.app.page_support import app, results_rooms


def _rooms_table(at: AppTest) -> pd.DataFrame:
    return results_rooms(at)


def _two_studies(db: Database) -> tuple[int, int]:
    live = storage.create_experiment(db, "live study", status="done")
    old = storage.create_experiment(db, "old study", status="done")
    for experiment in (live, old):
        for i in range(2):
            storage.create_room(db, f"room {experiment}-{i}", experiment_id=experiment)
    storage.set_experiment_archived(db, old)
    return live, old


def test_an_archived_experiment_is_picked_in_results_with_show_archived(db: Database) -> None:
    live, old = _two_studies(db)
    at = app("pages/results.py")
    assert at.selectbox(key="res-exp").options == ["All rooms", f"#{live} live study"]
    assert set(_rooms_table(at)["name"]) == {f"room {live}-0", f"room {live}-1"}

    at.toggle(key="res-show-archived").set_value(True).run()
    label = f"#{old} old study (archived)"
    assert label in at.selectbox(key="res-exp").options
    at.selectbox(key="res-exp").set_value(label).run()
    assert not at.exception, at.exception
    assert set(_rooms_table(at)["name"]) == {f"room {old}-0", f"room {old}-1"}


def test_a_link_to_an_archived_experiment_opens_it_in_results(db: Database) -> None:
    _, old = _two_studies(db)
    at = app("pages/results.py", experiment=str(old))
    assert at.selectbox(key="res-exp").value == f"#{old} old study (archived)"
    assert set(_rooms_table(at)["name"]) == {f"room {old}-0", f"room {old}-1"}
    assert not at.error


def test_both_experiment_pickers_list_and_mark_archived_experiments_alike(db: Database) -> None:
    """Experiments and Results share one picker rule (ui.experiments.experiment_labels)."""
    live, old = _two_studies(db)
    experiments = app("pages/experiments.py")
    assert experiments.selectbox(key="exp-pick").options == [
        "+ New experiment",
        f"#{live} live study",
    ]
    experiments.toggle(key="exp-show-archived").set_value(True).run()
    results = app("pages/results.py")
    results.toggle(key="res-show-archived").set_value(True).run()
    archived = f"#{old} old study (archived)"
    assert archived in experiments.selectbox(key="exp-pick").options
    assert archived in results.selectbox(key="res-exp").options
    from ui.experiments import experiment_labels

    # Archived and not asked for, but named by a link: listed first, so it stays reachable.
    assert experiment_labels(db, show_archived=False, linked=old) == {
        old: archived,
        live: f"#{live} live study",
    }
    assert experiment_labels(db, show_archived=False, linked=999_999) == {
        live: f"#{live} live study"
    }

"""The researcher's study monitor through AppTest: who is where, attrition by condition, the
groups; lock and unlock the link, the cap, message one participant, remove one; and a monitor
behind sign-in is not drawn for a visitor who has not signed in."""

from __future__ import annotations

import pytest

from conversation import study
from storage import Database
from tests.app.study_support import click, in_lobby, joined, launch, page, refusal, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def monitor(code: str):  # type: ignore[no-untyped-def]
    at = page("pages/study_monitor.py", study=code)
    assert not at.exception, at.exception
    return at


def table(at, column: str):  # type: ignore[no-untyped-def]
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_without_a_code_the_monitor_asks_for_one(db: Database) -> None:
    at = page("pages/study_monitor.py")
    assert "Enter a study's code" in texts(at)
    assert at.sidebar.children  # a researcher page: the app's sidebar is there


def test_without_a_code_the_monitor_lists_the_studies_to_pick_from(db: Database) -> None:
    older = launch(db)
    in_lobby(db, older.code)
    newer = launch(db)
    at = page("pages/study_monitor.py")
    picker = at.selectbox(key="monitor-pick")
    assert picker.options[0].startswith(f"{newer.code} · Mug bargaining")  # newest first
    assert picker.options[1].startswith(f"{older.code} · ")
    assert "1 person (1 in the lobby)" in picker.options[1]
    assert "Pick a study above" in texts(at)
    picker.set_value(older.code).run()
    assert not at.exception, at.exception
    assert at.query_params["study"] == older.code
    assert sorted(table(at, "participant")["where"]) == ["lobby"]


def test_the_monitor_shows_who_is_where_and_the_groups(db: Database) -> None:
    found = launch(db)
    ana, bo, cy = in_lobby(db, found.code), in_lobby(db, found.code), in_lobby(db, found.code)
    study.tick(db, found.code)  # the study's clock forms a group of two
    at = monitor(found.code)
    shown = texts(at)
    assert "Mug bargaining with a mediator" in shown
    assert "participate?study=" + found.code in shown
    people = table(at, "participant")
    assert sorted(people["where"]) == ["lobby", "room", "room"]
    assert not any(p in people.to_csv() for p in (ana, bo, cy))  # no tokens shown
    groups = table(at, "replicate")
    assert len(groups) == 1 and "Buyer" in groups["seats"][0]
    assert "attrition" in table(at, "attrition").columns
    assert [m.value for m in at.metric][:3] == ["1", "2", "0"]


def test_lock_unlock_and_cap(db: Database) -> None:
    found = launch(db)
    at = monitor(found.code)
    click(at, "Lock the link")
    assert study.get_study(db, found.code).status == "locked"
    assert "not taking participants" in refusal(db, found.code)
    click(at, "Unlock the link")
    assert study.get_study(db, found.code).status == "open"
    at.number_input(key=f"study-cap-{found.code}").set_value(3)
    click(at, "Set the cap")
    assert study.get_study(db, found.code).cap == 3


def test_message_then_remove_a_participant(db: Database) -> None:
    found = launch(db)
    ana = in_lobby(db, found.code)
    at = monitor(found.code)
    at.text_area[0].input("Are you still there?")
    click(at, "Send")
    assert not at.exception, at.exception
    view = study.participant_view(db, ana)
    assert [h.text for h in view.help if h.from_researcher] == ["Are you still there?"]
    at.text_input(key="monitor-remove-reason").input("test run")
    at.checkbox[0].check()
    click(at, "Remove the participant")
    left = study.participant_view(db, ana).exit
    assert left is not None and left.status == "removed" and left.code == "CMUG0005"


def test_the_help_thread_is_shown_per_participant_and_marked_read(db: Database) -> None:
    """Issue 31: a participant's help message was counted as unread but shown nowhere."""
    found = launch(db)
    ana = in_lobby(db, found.code)
    study.message_researcher(db, ana, "The button does nothing")
    before = monitor(found.code)
    assert list(table(before, "participant")["help unread"]) == [1]
    shown = texts(before)  # the thread of the participant picked (the only one)
    assert "Participant: The button does nothing" in shown
    after = monitor(found.code)  # shown once: read
    assert list(table(after, "participant")["help unread"]) == [0]


def test_end_a_conversation_now_sends_its_group_to_the_post_survey(db: Database) -> None:
    """Issue 31: Stop was disabled on a settled room and the monitor had no action."""
    found = launch(db)
    ana, bo = in_lobby(db, found.code), in_lobby(db, found.code)
    study.tick(db, found.code)
    at = monitor(found.code)
    [sure] = [c for c in at.checkbox if c.label.startswith("Yes, end this conversation")]
    sure.check()
    click(at, "End this conversation now")
    assert not at.exception, at.exception
    for person in (ana, bo):
        assert study.participant_view(db, person).stage == "post_survey"
    assert "No conversation is running." in texts(monitor(found.code))


def test_the_monitor_says_full_when_the_link_does(db: Database) -> None:
    """Issue 31: the cap counted people who never consented, and the monitor said "open" while
    the link answered "full"."""
    found = launch(db, participants={"cap": 1})
    reader = joined(db, found.code)  # reading the consent: holds no place
    assert "(full:" not in texts(monitor(found.code))
    assert refusal(db, found.code) == ""  # a second reader gets in
    in_lobby(db, found.code)
    assert "(full: the link refuses newcomers)" in texts(monitor(found.code))
    assert "This study is full" in refusal(db, found.code)
    study.give_consent(db, reader)  # the place went meanwhile: told so, with a code
    left = study.participant_view(db, reader).exit
    assert left is not None and left.code == "CMUG0003"


def test_done_people_have_no_idle_time_and_results_picks_the_study(db: Database) -> None:
    """Issue 31: "idle (s)" kept counting for people who are done; Results made you type the
    code where the monitor has a picker; a survey nobody answered is said, not a silent
    failure."""
    found = launch(db)
    study.decline(db, joined(db, found.code))
    idle = table(monitor(found.code), "participant")["idle (s)"]
    assert idle.isna().all()
    at = page("pages/results.py")
    at.session_state["res-study-exports"] = True  # the Study exports box, drawn while open
    at.run()
    picker = at.selectbox(key="results-study-pick")
    assert picker.options[0].startswith(found.code)
    picker.set_value(found.code).run()
    assert not at.exception, at.exception
    assert "Nobody has answered this survey yet." in texts(at)
    post = next(b for b in at.get("download_button") if "Post-survey" in b.proto.label)
    assert post.proto.disabled


def test_an_ended_study_rooms_page_does_not_offer_to_restart_it(db: Database) -> None:
    """Issue 31: a study room's Room page offered "sending a message restarts it" after the
    study's conversation ended."""
    found = launch(db)
    in_lobby(db, found.code), in_lobby(db, found.code)
    study.tick(db, found.code)
    (group,) = study.study_monitor(db, found.code).groups
    assert study.end_conversation(db, found.code, group.group_id)
    at = page("pages/room.py", room=str(group.room_id))
    assert not at.exception, at.exception
    shown = texts(at)
    assert "study group's conversation, which has ended" in shown
    assert "restarts" not in shown
    assert at.chat_input[0].disabled

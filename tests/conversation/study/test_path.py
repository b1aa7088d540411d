"""The participant's path through the public API: link, consent, surveys, lobby, room, exit."""

from __future__ import annotations

from datetime import timedelta

import pytest

import storage
from conversation import study as S
from conversation.exceptions import ConversationValueError
from conversation.rooms.room import Room
from conversation.study.participant.identity import token_hash
from tests.conversation.study.helpers import launched, seated, to_lobby


def test_join_consent_survey_lobby_and_a_seat(db: storage.Database) -> None:
    study = launched(db)
    token = S.join(
        db,
        study.code,
        {
            "study": study.code,
            "PROLIFIC_PID": "pid-1",
            "STUDY_ID": "st",
            "SESSION_ID": "se",
            "source": "ad",
        },
    )
    view = S.participant_view(db, token.token)
    assert view.stage == "consent" and "research study" in (view.consent or "")
    assert S.give_consent(db, token.token).stage == "pre_survey"
    with pytest.raises(ConversationValueError, match="Please answer"):
        S.answer_survey(db, token.token, {})
    with pytest.raises(ConversationValueError, match="must be one of"):
        S.answer_survey(db, token.token, {"bargained_before": "maybe"})
    lobby = S.answer_survey(db, token.token, {"bargained_before": "yes"})
    assert lobby.stage == "lobby" and lobby.waiting_for == 1
    assert S.tick(db, study.code).formed == 0
    other = to_lobby(db, study.code, "pid-2")
    assert S.tick(db, study.code).formed == 1
    mine, theirs = S.participant_view(db, token.token), S.participant_view(db, other.token)
    assert mine.stage == theirs.stage == "room" and mine.room_id == theirs.room_id
    assert {mine.seat, theirs.seat} == {"Buyer", "Seller"}
    assert mine.instructions and "mug" in mine.instructions
    assert mine.messages[0].speaker == "Host" and 590 < (mine.time_left or 0) <= 600
    person = storage.get_participant(db, token.participant_id)
    assert person.labels == {"source": "ad"}  # the link's own and Prolific's ids apart
    assert person.recruitment == {"PROLIFIC_PID": "pid-1", "STUDY_ID": "st", "SESSION_ID": "se"}


def test_the_same_pid_gets_the_same_participant_and_a_reload_the_same_place(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    first = to_lobby(db, study.code, "pid-9")
    again = S.join(db, study.code, {"PROLIFIC_PID": "pid-9"})
    assert again.resumed and again.participant_id == first.participant_id
    assert again.token != first.token  # both tabs work
    assert S.participant_view(db, again.token).stage == "lobby"
    assert S.participant_view(db, first.token).stage == "lobby"
    assert len(storage.list_participants(db, study.id)) == 1


def test_people_who_never_consented_do_not_use_up_the_cap_and_the_monitor_says_full(
    db,
) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: the cap counts people who consented (or were assigned); someone reading the
    consent, or gone from it, holds no place; the last place taken at consent tells the next
    person the study is full; and the monitor says "full" when the link does."""
    study = launched(db, participants={"cap": 2})
    readers = [S.join(db, study.code, {"PROLIFIC_PID": f"r{i}"}) for i in range(3)]
    assert not S.study_monitor(db, study.code).full
    S.give_consent(db, readers[0].token)
    S.decline(db, readers[1].token)  # left without consenting: no place taken
    late = S.join(db, study.code, {"PROLIFIC_PID": "late"})
    S.give_consent(db, late.token)
    assert S.study_monitor(db, study.code).full
    with pytest.raises(S.StudyRefused) as refused:
        S.join(db, study.code, {"PROLIFIC_PID": "one more"})
    assert refused.value.reason == "full"
    # The third reader consents after the last place went: told so, with the lobby-timeout code.
    view = S.give_consent(db, readers[2].token)
    assert view.stage == "exit" and view.exit is not None
    assert (view.exit.status, view.exit.code) == ("lobby_timeout", "CMUG0003")
    assert [s.line() for s in S.list_studies(db)][0].count("full") == 1


def test_locked_full_unknown_and_forged_are_refused_politely(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, participants={"cap": 1})
    a = S.join(db, study.code, {"PROLIFIC_PID": "a"})
    S.give_consent(db, a.token)  # the cap counts people who consented
    with pytest.raises(S.StudyRefused) as full:
        S.join(db, study.code, {"PROLIFIC_PID": "b"})
    assert full.value.reason == "full" and "full" in str(full.value)
    S.set_cap(db, study.code, None)
    S.lock_study(db, study.code)
    with pytest.raises(S.StudyRefused) as locked:
        S.join(db, study.code, {"PROLIFIC_PID": "b"})
    assert locked.value.reason == "locked"
    assert S.join(db, study.code, {"PROLIFIC_PID": "a"}).resumed  # already in: back to their place
    S.unlock_study(db, study.code)
    assert not S.join(db, study.code, {"PROLIFIC_PID": "b"}).resumed
    with pytest.raises(S.StudyRefused) as unknown:
        S.join(db, "no-such-study", {})
    assert unknown.value.reason == "unknown"
    with pytest.raises(S.NotAParticipant):
        S.participant_view(db, "forged-token")


def test_declining_consent_exits_with_its_code_and_the_redirect(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    token = S.join(db, study.code, {"PROLIFIC_PID": "x"})
    view = S.decline(db, token.token)
    assert view.stage == "exit" and view.exit is not None
    assert (view.exit.status, view.exit.code) == ("declined", "CMUG0002")
    assert view.exit.redirect == "https://app.prolific.com/submissions/complete?cc=CMUG0002"
    with pytest.raises(S.WrongStage):
        S.give_consent(db, token.token)


def test_posts_pass_the_room_door_with_provenance_and_a_rate_limit(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, participants={"rate": {"messages": 2, "seconds": 60}})
    waiting = to_lobby(db, study.code, "solo")
    with pytest.raises(S.WrongStage):
        S.post_as_participant(db, waiting.token, "hello?")
    buyer, seller = seated(db, study.code, "b1")[0], waiting
    with pytest.raises(ConversationValueError):
        S.post_as_participant(db, buyer.token, "x" * 30_000)
    with pytest.raises(ConversationValueError):
        S.post_as_participant(db, buyer.token, "   ")
    person = storage.participant_by_token(db, token_hash(buyer.token))
    before = person.last_seen_at
    seq = S.post_as_participant(db, buyer.token, "<b>I offer $5</b>", request_id="r1")
    # a post proves the participant is here (no dropout is decided while they write)
    assert storage.get_participant(db, int(person.id)).last_seen_at > before
    assert S.post_as_participant(db, buyer.token, "<b>I offer $5</b>", request_id="r1") == seq
    bucket = f"study-participant:{int(person.id)}"

    def left() -> float:  # posts left in the participant's bucket (the model calls' own kind)
        return next(b.requests for b in storage.rate_buckets(db) if b.key == bucket)

    counted = left()
    assert counted < 1  # two posts (one resent) of two: none left
    with pytest.raises(S.TooFast) as fast:
        S.post_as_participant(db, buyer.token, "and again")
    assert 0 < fast.value.retry_after <= 60
    # Refused: nothing written, nothing counted (the count and the message are one write).
    assert all(
        e.content != "and again"
        for e in storage.events(db, S.participant_view(db, buyer.token).room_id or 0)
    )
    assert left() >= counted  # the bucket only refilled: the refused post took nothing
    view = S.participant_view(db, seller.token)
    message = next(m for m in view.messages if m.seq == seq)
    assert message.content == "<b>I offer $5</b>" and not message.own  # shown literally
    event = next(e for e in storage.events(db, view.room_id) if e.seq == seq)
    me = S.participant_view(db, buyer.token)
    assert event.speaker == me.seat and event.kind == "human"
    assert event.data["by"] == f"participant {me.pseudonym}"


def test_agents_never_see_a_recruitment_id(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    a, b = seated(db, study.code, "PID-SECRET-1", "PID-SECRET-2")
    S.post_as_participant(db, a.token, "Shall we say $6?")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    turns = room.run(3)
    assert turns
    everything = repr([t.inputs for t in turns]) + repr(storage.events(db, room.id))
    assert "PID-SECRET" not in everything and a.token not in everything


def test_the_view_shows_drafts_only_once_approved_and_who_is_typing(db) -> None:  # type: ignore[no-untyped-def]
    from tests.conversation.study.helpers import definition_dict

    data = definition_dict()
    data["experiment"]["template"]["moderated"] = True
    study = S.launch_study(db, S.definition_from_dict(data))
    a, _ = seated(db, study.code, "p1", "p2")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    room.run(1)
    pending = room.pending()
    assert pending is not None and pending.state == "waiting"
    view = S.participant_view(db, a.token)
    assert view.typing == ["Mediator"] and all(m.speaker != "Mediator" for m in view.messages)
    pending.approve()
    view = S.participant_view(db, a.token)
    assert view.typing == [] and view.messages[-1].speaker == "Mediator"


@pytest.mark.parametrize("pace", [60, {"Mediator": 60}])
def test_paced_agents_appear_at_typing_speed(db, pace) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, room={"words_per_minute": pace})
    a, _ = seated(db, study.code, "p1", "p2")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    room.run(1)
    said = [e for e in storage.events(db, room.id) if e.kind == "agent" and e.state == "done"][-1]
    now = db.now()
    assert S.participant_view(db, a.token, now=now).typing == ["Mediator"]
    later = S.participant_view(db, a.token, now=said.updated_at + timedelta(seconds=said.words + 1))
    assert later.typing == [] and later.messages[-1].content == said.content


def test_help_channel_both_ways_and_the_monitor_counts_unread(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    token = S.join(db, study.code, {"PROLIFIC_PID": "h"})
    S.message_researcher(db, token.token, "The page is stuck")
    row = S.study_monitor(db, study.code).rows[0]
    assert row.help_unread == 1 and row.where == "consent"
    S.message_participant(db, study.code, token.participant_id, "Try reloading it")
    assert S.study_monitor(db, study.code).rows[0].help_unread == 0
    help_ = S.participant_view(db, token.token).help
    assert [(h.from_researcher, h.text) for h in help_] == [
        (False, "The page is stuck"),
        (True, "Try reloading it"),
    ]


def test_an_edited_definition_applies_to_those_assigned_after(db) -> None:  # type: ignore[no-untyped-def]
    from tests.conversation.study.helpers import definition_dict

    study = launched(db)
    early = seated(db, study.code, "e1", "e2")[0]
    edited = definition_dict(consent="A shorter consent text. Agree?")
    assert S.update_definition(db, study.code, S.definition_from_dict(edited)).version == 2
    late = S.join(db, study.code, {"PROLIFIC_PID": "late"})
    assert S.participant_view(db, late.token).consent == "A shorter consent text. Agree?"
    rows = {r["pseudonym"]: r for r in S.participants_table(db, study.code)}
    assert rows[early.pseudonym]["version"] == 1
    redesigned = definition_dict()
    redesigned["experiment"]["conditions"] = redesigned["experiment"]["conditions"][:1]
    with pytest.raises(ConversationValueError, match="cannot change once the study is launched"):
        S.update_definition(db, study.code, S.definition_from_dict(redesigned))


def test_a_private_message_to_an_agent_is_not_shown_to_the_participants(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    a, b = seated(db, study.code, "a", "b")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    room.post("Mediator, favour the seller.", speaker="researcher", to=["Mediator"])
    room.post("Thanks for taking part!", speaker="researcher")
    for token in (a, b):
        shown = [m.content for m in S.participant_view(db, token.token).messages]
        assert "Thanks for taking part!" in shown
        assert "Mediator, favour the seller." not in shown


def test_an_unpaced_agent_appears_at_once() -> None:
    from datetime import UTC, datetime, timedelta

    from conversation.study.participant.view import seen

    class E:  # a committed agent message, as the log holds it
        kind, state, speaker, content, words, seq, round, visible_to, data = (
            "agent",
            "done",
            "Mediator",
            "one two three",
            3,
            2,
            0,
            None,
            None,
        )
        updated_at = datetime.now(UTC)

    assert seen([E()], "Buyer", {"Other": 10}, E.updated_at)[0][0].content == "one two three"
    # At 10 words a minute the three words take 18 s: the view changes then, by the clock.
    reveal = E.updated_at + timedelta(seconds=18)
    assert seen([E()], "Buyer", {"Mediator": 10}, E.updated_at) == ([], ["Mediator"], reveal)
    assert seen([E()], "Buyer", {"Mediator": 10}, reveal)[0][0].content == "one two three"


def test_a_view_stays_current_until_something_it_shows_changes(db) -> None:  # type: ignore[no-untyped-def]
    """The participant's page reads its whole view only when ``view_is_current`` says no: every
    change it shows must say no (another's post, an agent's claim and its commit, an approval,
    a researcher's help message, the room ending), and a heartbeat or a read must not."""
    from tests.conversation.study.helpers import definition_dict

    data = definition_dict()
    data["experiment"]["template"]["moderated"] = True
    study = S.launch_study(db, S.definition_from_dict(data))
    a, b = seated(db, study.code, "p1", "p2")
    view = S.participant_view(db, a.token)
    room = Room(db, view.room_id or 0)

    def stale_after(change) -> bool:  # type: ignore[no-untyped-def]
        nonlocal view
        assert S.view_is_current(db, a.token, view)
        change()
        stale = not S.view_is_current(db, a.token, view)
        view = S.participant_view(db, a.token)
        return stale

    assert not stale_after(lambda: S.heartbeat(db, a.token))
    assert not stale_after(lambda: S.participant_view(db, b.token))
    assert stale_after(lambda: S.post_as_participant(db, b.token, "hello"))
    assert stale_after(lambda: room.run(1))  # the Mediator drafts: "is typing"
    assert stale_after(lambda: room.pending().approve())  # type: ignore[union-attr]
    person = next(p for p in S.study_monitor(db, study.code).rows if p.pseudonym == a.pseudonym)
    assert stale_after(
        lambda: S.message_participant(db, study.code, person.participant_id, "All fine?")
    )
    assert stale_after(room.stop)
    assert view.stage != "room" or view.notice or view.messages[-1].kind == "system"


def test_a_paced_message_makes_the_view_stale_when_it_appears(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, room={"words_per_minute": 60})
    a, _ = seated(db, study.code, "p1", "p2")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    room.run(1)
    said = [e for e in storage.events(db, room.id) if e.kind == "agent" and e.state == "done"][-1]
    view = S.participant_view(db, a.token, now=said.updated_at)
    assert view.typing == ["Mediator"] and view.changes_at is not None
    assert S.view_is_current(db, a.token, view, now=view.changes_at - timedelta(seconds=0.1))
    assert not S.view_is_current(db, a.token, view, now=view.changes_at)
    assert S.participant_view(db, a.token, now=view.changes_at).typing == []


def test_a_participants_post_is_checked_by_the_message_rule_once_and_as_their_seat(
    db, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The room's door checks the text (once), and the actor is the participant's own role,
    which may speak only in their seat."""
    from conversation.access import Role
    from conversation.text import limits

    study = launched(db)
    a, _ = seated(db, study.code, "a", "b")
    checked: list[object] = []
    rule = limits.message_problem

    def counted(value, *args, **kwargs):  # type: ignore[no-untyped-def]
        checked.append(value)
        return rule(value, *args, **kwargs)

    monkeypatch.setattr(limits, "message_problem", counted)
    actors = []
    from conversation.rooms import posting

    post = posting.post_message

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        actors.append(kwargs["actor"])
        return post(*args, **kwargs)

    monkeypatch.setattr("conversation.study.participant.acts.post_message", spy)
    S.post_as_participant(db, a.token, "Hello there")
    assert checked == ["Hello there"]
    (actor,) = actors
    me = S.participant_view(db, a.token)
    assert actor.role is Role.PARTICIPANT and actor.seat == me.seat
    assert actor.identity == f"participant {me.pseudonym}"

"""Prompts a small model does not parrot (issue 24): a chat model's turn is sent as the
instructions in the system message and the conversation as chat turns, with stop sequences at
the next speaker's turn; what a room stores has no scaffolding and no made-up turns (the raw reply
stays in the turn's details), and a reply that is nothing else is retried, then stored as a pass
with the reason."""

from __future__ import annotations

import storage
from conversation.models.chat_shape import YOUR_TURN, chat_messages, transcript_records
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.prompt import CHAT_ROOM_PROMPT, DEFAULT_ROOM_PROMPT
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.text.scaffolding import reply_problems, without_scaffolding
from conversation.text.transcript import render_transcript
from storage import Database
from tests.support.openai_server import OpenAICompatibleServer, Reply
from ui.room import provenance, rooms


def make_room(db: Database, url: str, turns: int = 2) -> Room:
    room = Room.create(
        db,
        name="chat",
        agents=[
            {"name": "Ann", "instruction": "You sell a mug."},
            {"name": "Ben", "instruction": "You buy a mug."},
        ],
        planner=RoundRobinPolicy(),
        termination=MaxTurns(turns),
        model={"service": "openai_compatible", "model": "tiny", "base_url": url},
        retry={"max_attempts": 2, "base_delay": 0.01},
    )
    room.post("Hello, what does the mug cost?")
    return room


def agent_turns(db: Database, room: Room) -> list[storage.Event]:
    return [e for e in storage.events(db, room.id) if e.kind in ("agent", "pass")]


def test_a_turn_is_sent_as_chat_turns_with_stop_sequences(db: Database) -> None:
    with OpenAICompatibleServer(default_text="Ten dollars.") as server:
        room = make_room(db, server.base_url)
        room.run()
        first, second = (r.body for r in server.requests if r.path.endswith("/completions"))
    system, *turns = first["messages"]
    assert system["role"] == "system"
    assert "You are Ann" in system["content"] and "You sell a mug." in system["content"]
    assert "Reply as Ann only" in system["content"]
    assert turns == [{"role": "user", "content": "user: Hello, what does the mug cost?"}]
    assert first["stop"] == ["\nBen:", "\nuser:"]
    assert first["max_tokens"] <= 256  # a conversational default, not 512
    # Ben sees Ann's message as a named user turn, not his own
    assert second["messages"][1:] == [
        {"role": "user", "content": "user: Hello, what does the mug cost?"},
        {"role": "user", "content": "Ann: Ten dollars."},
    ]
    assert second["stop"] == ["\nAnn:", "\nuser:"]


def test_a_stored_reply_keeps_no_scaffolding_or_made_up_turn(db: Database) -> None:
    sent = "This is turn 1 of 2. I want $9 for it.\nBen: I offer $5\nAnn: no"
    with OpenAICompatibleServer(default_text="Fine.") as server:
        server.script(Reply(text=sent))
        room = make_room(db, server.base_url)
        room.run()
    first = agent_turns(db, room)[0]
    assert first.content == "I want $9 for it."
    assert first.data["raw_reply"] == sent  # the raw reply stays in the turn's details
    shown = dict(provenance.one_click_texts(first))  # one click away on the Room page
    assert [sent] in shown.values()


def test_a_reply_of_scaffolding_only_is_retried_then_stored_as_a_pass(db: Database) -> None:
    echo = Reply(text="This is turn 1 of 2.\nBen: I offer $5")
    with OpenAICompatibleServer(default_text="Fine.") as server:
        server.script(echo, echo)
        room = make_room(db, server.base_url)
        room.run()
        asked = len([r for r in server.requests if r.path.endswith("/completions")])
    first, second = agent_turns(db, room)
    assert asked == 3  # two tries for Ann, one for Ben
    assert first.kind == "pass" and first.content == ""
    assert "all 2 tries" in first.data["pass_reason"]
    assert rooms.turn_details(first)["why a pass"] == first.data["pass_reason"]
    assert first.data["raw_reply"] == echo.text
    assert second.content == "Fine."
    assert room.status == "terminated"  # ended by its rule, not failed


def test_an_echo_once_is_retried_and_the_second_answer_kept(db: Database) -> None:
    with OpenAICompatibleServer(default_text="Deal at $7.") as server:
        server.script(Reply(text="Write Ann's reply to the last message."))
        room = make_room(db, server.base_url, turns=1)
        room.run()
    (turn,) = agent_turns(db, room)
    assert turn.kind == "agent" and turn.content == "Deal at $7." and turn.attempts == 2


def test_chat_messages_shape() -> None:
    transcript = render_transcript(
        [
            {"seq": 1, "speaker": "user", "text": "Hi"},
            {"seq": 2, "speaker": "Ann", "text": "Ten.\nOr nine."},
            {"seq": 3, "speaker": "Ben", "passed": True},
            {"seq": 4, "speaker": "Cy", "text": "psst", "private_to": ["Ann"]},
            {"seq": 5, "speaker": "Ann", "text": "Nine."},
        ]
    )
    messages = chat_messages("SYS", transcript, "Ann")
    assert messages == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "user: Hi"},
        {"role": "assistant", "content": "Ten.\nOr nine."},
        {"role": "user", "content": "Ben passed."},
        {"role": "user", "content": "Cy (privately to Ann): psst"},
        {"role": "assistant", "content": "Nine."},
        {"role": "user", "content": YOUR_TURN},  # a chat model answers a user turn
    ]
    assert chat_messages("SYS", "(no messages yet)", "Ann") == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": YOUR_TURN},
    ]
    # a room's own template (not a bare transcript) is sent as EDSL sends it
    assert transcript_records("Say something.\n" + transcript) is None
    assert chat_messages("SYS", "Say something.", "Ann") is None


def test_every_sentence_of_the_prompts_is_recognised_as_scaffolding() -> None:
    for prompt in (CHAT_ROOM_PROMPT, DEFAULT_ROOM_PROMPT):
        rendered = (
            prompt.replace('{{ agent_names | join(", ") }}', "Ann, Ben")
            .replace("{{ speaker_name }}", "Ann")
            .replace("{{ current_turn + 1 }}", "3")
            .replace("{{ max_turns }}", "8")
            .replace("{{ turns_left }}", "6")
            .replace("{{ addressee }}", "Ben")
        )
        lines = [
            line
            for line in rendered.splitlines()
            if "{%" not in line and "{{" not in line and line.strip()
        ]
        for line in lines:
            assert without_scaffolding(line) == "", line
    assert reply_problems("I offer $7.", ["Ann"], ["Ann", "Ben"]) == set()
    assert reply_problems("Ben: ok", ["Ann"], ["Ann", "Ben"]) == {"made_up_turn"}

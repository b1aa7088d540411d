"""What a participant's page reads, each in one statement or one read transaction: their seat
(a post, a heartbeat), their whole state (the page), and the marker that says whether the page
changed since it was drawn.

Core reads and detached snapshots, not ORM queries: every open participant page reads here about
once a second (``benchmarks/participants_load.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select

from storage.database import Database
from storage.errors import ParticipantNotFound
from storage.rooms.rows import EVENTS, ROOMS, event_from_row
from storage.studies._columns import GROUPS, NOTES, PEOPLE, STUDIES, TOKENS
from storage.studies.watch import participant_markers
from storage.tables import Event, Study, StudyEvent, StudyGroup, StudyParticipant
from vocabulary import ParticipantStage, StudyEventKind


@dataclass(frozen=True, slots=True)
class ParticipantSeat:
    """A participant, their study (without its definition, which callers cache by version) and
    where they sit: their group's status and room, the room's status and settings."""

    participant: StudyParticipant
    study: Study
    group_status: str | None
    room_id: int | None
    room_status: str | None
    room_config: dict[str, Any] | None


def participant_seat(db: Database, token_hash: str) -> ParticipantSeat:
    """The participant holding a token and their seat, in one statement (a post and a heartbeat
    need nothing more; they were four reads). Raises :class:`ParticipantNotFound`."""
    people, groups_t, rooms_t = PEOPLE, GROUPS, ROOMS
    studies = STUDIES
    study_columns = [c for c in studies.c if c.name != "definition"]
    query = sa_select(
        people,
        *(c.label(f"s__{c.name}") for c in study_columns),
        groups_t.c.status.label("group_status"),
        groups_t.c.room_id.label("group_room_id"),
        rooms_t.c.status.label("room_status"),
        rooms_t.c.config.label("room_config"),
    )
    row = _by_token(db, query, token_hash)
    values = row._mapping
    return ParticipantSeat(
        StudyParticipant.model_construct(**{c.name: values[c] for c in people.c}),
        Study.model_construct(**{c.name: values[f"s__{c.name}"] for c in study_columns}),
        values["group_status"],
        values["group_room_id"],
        values["room_status"],
        values["room_config"],
    )


@dataclass(frozen=True, slots=True)
class ParticipantState:
    """Everything a participant's page reads, from one snapshot (see :func:`participant_state`)."""

    participant: StudyParticipant
    study: Study
    group: StudyGroup | None
    events: list[Event]
    notes: list[StudyEvent]
    lobby: int
    groups: dict[str, int]


def _room_log(conn: Any, room_id: int | None) -> list[Event]:
    """A room's log in order (none for a group without its room yet)."""
    if room_id is None:
        return []
    rows = conn.execute(sa_select(EVENTS).where(EVENTS.c.room_id == room_id).order_by(EVENTS.c.seq))
    return [event_from_row(r) for r in rows]


def participant_state(
    db: Database,
    token_hash: str,
    *,
    group_kinds: Collection[str] = (),
    person_kinds: Collection[str] = (),
) -> ParticipantState:
    """In one read transaction: the participant holding the token, their study, their group and
    its room's log (in a room), their help messages and their own events of ``person_kinds``,
    their group's events of ``group_kinds``, and (in the lobby) how many wait and how many
    groups each condition has.
    Raises :class:`ParticipantNotFound`.

    Core reads and detached snapshots, not ORM queries: every open participant page calls this
    about once a second, and the ORM's per-statement work was a fifth of the app server's CPU
    at 24 participants (``benchmarks/participants_load.py``)."""
    people, studies, groups_t, notes_t = PEOPLE, STUDIES, GROUPS, NOTES
    with db.read_connection() as conn:
        row = conn.execute(
            sa_select(people)
            .join(TOKENS, TOKENS.c.participant_id == people.c.id)
            .where(TOKENS.c.token_hash == token_hash)
        ).first()
        if row is None:
            raise ParticipantNotFound("no participant holds this token")
        person = StudyParticipant.model_construct(**row._mapping)
        study_row = conn.execute(sa_select(studies).where(studies.c.id == person.study_id)).one()
        study = Study.model_construct(**study_row._mapping)
        group = None
        if person.stage == ParticipantStage.ROOM and person.group_id is not None:
            found = conn.execute(
                sa_select(groups_t).where(groups_t.c.id == person.group_id)
            ).first()
            group = StudyGroup.model_construct(**found._mapping) if found is not None else None
        events = _room_log(conn, group.room_id) if group is not None else []
        kinds = sorted({StudyEventKind.HELP, *person_kinds})
        mine = (notes_t.c.participant_id == person.id) & notes_t.c.kind.in_(kinds)
        if group is not None and group_kinds:
            mine = mine | (
                (notes_t.c.group_id == group.id) & notes_t.c.kind.in_(sorted(group_kinds))
            )
        notes = [
            StudyEvent.model_construct(**r._mapping)
            for r in conn.execute(
                sa_select(notes_t)
                .where(notes_t.c.study_id == study.id, mine)
                .order_by(notes_t.c.id)
            )
        ]
        lobby, groups = 0, dict[str, int]()
        if person.stage == ParticipantStage.LOBBY:
            lobby, groups = _lobby_counts(conn, int(study.id or 0))
    return ParticipantState(person, study, group, events, notes, int(lobby), groups)


def participant_marker(db: Database, token_hash: str) -> tuple[Any, ...]:
    """The marker of the participant holding the token (``storage.studies.watch``: what changes
    whenever their page can change but for the clock), read by itself; the page reads the whole
    view only when it differs. Raises :class:`ParticipantNotFound`."""
    found = participant_markers(db, [token_hash]).get(token_hash)
    if found is None:
        raise ParticipantNotFound("no participant holds this token")
    return found


def _by_token(db: Database, columns: Any, token_hash: str) -> Any:
    """``columns`` (a select of the participant's, study's, group's and room's tables) for the
    participant holding the token: one row, or :class:`ParticipantNotFound`."""
    people, groups_t, rooms_t = PEOPLE, GROUPS, ROOMS
    tokens, studies = TOKENS, STUDIES
    query = (
        columns.select_from(tokens)
        .join(people, people.c.id == tokens.c.participant_id)
        .join(studies, studies.c.id == people.c.study_id)
        .outerjoin(groups_t, groups_t.c.id == people.c.group_id)
        .outerjoin(rooms_t, rooms_t.c.id == groups_t.c.room_id)
        .where(tokens.c.token_hash == token_hash)
    )
    with db.read_connection() as conn:
        row = conn.execute(query).first()
    if row is None:
        raise ParticipantNotFound("no participant holds this token")
    return row


def _lobby_counts(conn: Any, study_id: int) -> tuple[int, dict[str, int]]:
    """How many participants of the study wait in the lobby, and its groups per condition."""
    people, groups_t = PEOPLE, GROUPS
    lobby = conn.execute(
        sa_select(func.count())
        .select_from(people)
        .where(people.c.study_id == study_id, people.c.stage == ParticipantStage.LOBBY)
    ).scalar_one()
    groups = {
        str(c): int(n)
        for c, n in conn.execute(
            sa_select(groups_t.c.condition, func.count())
            .where(groups_t.c.study_id == study_id)
            .group_by(groups_t.c.condition)
        ).all()
    }
    return int(lobby), groups


__all__ = [
    "ParticipantSeat",
    "ParticipantState",
    "participant_marker",
    "participant_seat",
    "participant_state",
]

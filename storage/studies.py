"""Studies with real participants: studies, participants and their tokens, groups, the study log.

Every change that must not race is one write transaction that locks the study's row first
(PostgreSQL ``FOR UPDATE``; SQLite serialises writers anyway): admitting a participant (the cap,
the same recruitment id twice) and forming a group (the same people, or the same group number,
twice). A participant's stage changes are conditional (``expected_stages``): two browser tabs, or
a lobby tick and a decline at once, change it once. Tokens are stored only as hashes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, json_object
from storage.database import Database
from storage.errors import RecordNotFound, StorageError, StorageValueError
from storage.experiments.experiments import ExperimentRoom, _checked_room, _insert_rooms
from storage.rooms.rows import EVENTS, event_from_row
from storage.tables import (
    Event,
    Experiment,
    Room,
    Study,
    StudyEvent,
    StudyGroup,
    StudyParticipant,
    StudyToken,
)
from vocabulary import PARTICIPANT_STAGES, STUDY_STATUSES

STAGES = PARTICIPANT_STAGES  # the name this module's face has always had


class StudyNotFound(RecordNotFound):
    """No study has that code (or id)."""


class ParticipantNotFound(RecordNotFound):
    """No participant holds that token (or id)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """What :func:`admit_participant` did: the participant, whether they were already there
    (the same recruitment id), or why they were refused (``locked``, ``closed``, ``full``)."""

    participant: StudyParticipant | None
    resumed: bool = False
    refused: str | None = None


# --- studies ----------------------------------------------------------------------------------


def create_study(
    db: Database,
    *,
    code: str,
    name: str,
    definition: Mapping[str, Any],
    seed: int,
    cap: int | None,
    experiment_config: Mapping[str, Any],
) -> Study:
    """Store a study and the experiment its rooms belong to (status ``draft``: its rooms are
    added one group at a time, never all at once by the runner), in one transaction."""
    document = json_object(dict(definition), "definition")
    config = json_object(dict(experiment_config), "experiment config")
    now = db.now()
    with db.write() as session:
        experiment = Experiment(
            name=name, config=config, status="draft", created_at=now, updated_at=now
        )
        session.add(experiment)
        session.flush()
        study = Study(
            code=code,
            name=name,
            definition=document,
            seed=seed,
            cap=cap,
            experiment_id=experiment.id,
            created_at=now,
            updated_at=now,
        )
        session.add(study)
        session.flush()
        return study


def get_study(db: Database, code: str | None = None, *, study_id: int | None = None) -> Study:
    """A study by its code (or id). Raises :class:`StudyNotFound`."""
    with db.read() as session:
        query = select(Study).where(
            Study.code == code if study_id is None else Study.id == study_id
        )
        study = session.exec(query).first()
    if study is None:
        raise StudyNotFound(f"study {code or study_id!r} does not exist")
    return study


def list_studies(db: Database) -> list[Study]:
    """Every study, newest first."""
    with db.read() as session:
        return list(session.exec(select(Study).order_by(col(Study.id).desc())))


@dataclass(frozen=True, slots=True)
class StudyCounts:
    """One study's numbers for a listing: its participants by where they are (their stage; for
    those who left, their exit status, e.g. ``completed``) and its groups by status."""

    participants: dict[str, int]
    groups: dict[str, int]


def study_counts(db: Database) -> dict[int, StudyCounts]:
    """Every study's :class:`StudyCounts` by study id (a study with no one yet is absent): two
    grouped reads, whatever the number of studies."""
    by_place = (
        col(StudyParticipant.study_id),
        col(StudyParticipant.stage),
        col(StudyParticipant.exit_status),
    )
    people = select(*by_place, func.count()).group_by(*by_place)
    by_status = (col(StudyGroup.study_id), col(StudyGroup.status))
    groups = select(*by_status, func.count()).group_by(*by_status)
    found: dict[int, StudyCounts] = {}

    def of(study_id: int) -> StudyCounts:
        return found.setdefault(study_id, StudyCounts(participants={}, groups={}))

    with db.read() as session:
        for study_id, stage, exit_status, n in session.exec(people):
            where = (exit_status or "exit") if stage == "exit" else stage
            counts = of(study_id).participants
            counts[where] = counts.get(where, 0) + int(n)
        for study_id, status, n in session.exec(groups):
            of(study_id).groups[status] = int(n)
    return found


def update_study(
    db: Database,
    study_id: int,
    *,
    status: str | _Unset = UNSET,
    cap: int | None | _Unset = UNSET,
    definition: Mapping[str, Any] | _Unset = UNSET,
) -> Study:
    """Change a study's status, cap or definition (a new definition bumps ``version``)."""
    if not isinstance(status, _Unset) and status not in STUDY_STATUSES:
        raise StorageValueError(f"status={status!r} must be one of {sorted(STUDY_STATUSES)}")
    with db.write() as session:
        study = _locked_study(session, study_id)
        if not isinstance(status, _Unset):
            study.status = status
        if not isinstance(cap, _Unset):
            study.cap = cap
        if not isinstance(definition, _Unset):
            study.definition = json_object(dict(definition), "definition")
            study.version += 1
        study.updated_at = db.now()
        session.add(study)
        return study


def _locked_study(session: Any, study_id: int) -> Study:
    study = session.exec(select(Study).where(Study.id == study_id).with_for_update()).first()
    if study is None:
        raise StudyNotFound(f"study {study_id} does not exist")
    return study  # type: ignore[no-any-return]


# --- participants -----------------------------------------------------------------------------


def admit_participant(
    db: Database,
    study_id: int,
    *,
    token_hash: str,
    pseudonym: str,
    recruitment_id: str | None,
    recruitment: Mapping[str, Any] | None,
    labels: Mapping[str, Any] | None,
    stage: str,
    cap: int | None,
) -> Admission:
    """Admit a person, or find them again: the same ``recruitment_id`` gets the participant
    already there (``resumed``, with this token added to theirs). A new person is refused when
    the study is not ``open`` or holds ``cap`` participants already."""
    now = db.now()
    with db.write() as session:
        study = _locked_study(session, study_id)
        if recruitment_id is not None:
            found = session.exec(
                select(StudyParticipant).where(
                    StudyParticipant.study_id == study_id,
                    StudyParticipant.recruitment_id == recruitment_id,
                )
            ).first()
            if found is not None:
                session.add(
                    StudyToken(
                        token_hash=token_hash, participant_id=int(found.id or 0), created_at=now
                    )
                )
                return Admission(found, resumed=True)
        if study.status != "open":
            return Admission(None, refused=study.status)
        if cap is not None and _participant_count(session, study_id) >= cap:
            return Admission(None, refused="full")
        person = StudyParticipant(
            study_id=study_id,
            pseudonym=pseudonym,
            recruitment_id=recruitment_id,
            recruitment=dict(recruitment) if recruitment else None,
            labels=dict(labels) if labels else None,
            stage=stage,
            version=study.version,
            joined_at=now,
            last_seen_at=now,
            updated_at=now,
        )
        session.add(person)
        session.flush()
        session.add(
            StudyToken(token_hash=token_hash, participant_id=int(person.id or 0), created_at=now)
        )
        session.add(StudyEvent(study_id=study_id, participant_id=person.id, kind="joined", at=now))
        return Admission(person)


def _participant_count(session: Any, study_id: int) -> int:
    query = select(func.count()).select_from(StudyParticipant)
    return int(session.exec(query.where(StudyParticipant.study_id == study_id)).one())


def participant_by_token(db: Database, token_hash: str) -> StudyParticipant:
    """The participant holding a token (by its hash). Raises :class:`ParticipantNotFound`."""
    with db.read() as session:
        person = session.exec(
            select(StudyParticipant)
            .join(StudyToken, col(StudyToken.participant_id) == col(StudyParticipant.id))
            .where(StudyToken.token_hash == token_hash)
        ).first()
    if person is None:
        raise ParticipantNotFound("no participant holds this token")
    return person


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
    people, groups_t, rooms_t = _table(StudyParticipant), _table(StudyGroup), _table(Room)
    studies = _table(Study)
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


def participant_state(
    db: Database, token_hash: str, *, group_kinds: Collection[str] = ()
) -> ParticipantState:
    """In one read transaction: the participant holding the token, their study, their group and
    its room's log (in a room), their help messages and their group's events of
    ``group_kinds``, and (in the lobby) how many wait and how many groups each condition has.
    Raises :class:`ParticipantNotFound`.

    Core reads and detached snapshots, not ORM queries: every open participant page calls this
    about once a second, and the ORM's per-statement work was a fifth of the app server's CPU
    at 24 participants (``benchmarks/participants_load.py``)."""
    people, studies, groups_t = _table(StudyParticipant), _table(Study), _table(StudyGroup)
    notes_t = _table(StudyEvent)
    with db.read_connection() as conn:
        row = conn.execute(
            sa_select(people)
            .join(_table(StudyToken), _table(StudyToken).c.participant_id == people.c.id)
            .where(_table(StudyToken).c.token_hash == token_hash)
        ).first()
        if row is None:
            raise ParticipantNotFound("no participant holds this token")
        person = StudyParticipant.model_construct(**row._mapping)
        study_row = conn.execute(sa_select(studies).where(studies.c.id == person.study_id)).one()
        study = Study.model_construct(**study_row._mapping)
        group = None
        if person.stage == "room" and person.group_id is not None:
            found = conn.execute(
                sa_select(groups_t).where(groups_t.c.id == person.group_id)
            ).first()
            group = StudyGroup.model_construct(**found._mapping) if found is not None else None
        events: list[Event] = []
        if group is not None and group.room_id is not None:
            events = [
                event_from_row(r)
                for r in conn.execute(
                    sa_select(EVENTS)
                    .where(EVENTS.c.room_id == group.room_id)
                    .order_by(EVENTS.c.seq)
                )
            ]
        mine = (notes_t.c.participant_id == person.id) & (notes_t.c.kind == "help")
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
        if person.stage == "lobby":
            lobby, groups = _lobby_counts(conn, int(study.id or 0))
    return ParticipantState(person, study, group, events, notes, int(lobby), groups)


def participant_marker(db: Database, token_hash: str) -> tuple[Any, ...]:
    """What changes whenever the participant's page can change but for the clock: their stage,
    group, seat and exit; their study's definition version; their group's status and start;
    their room's status, last change (``rooms.updated_at``, bumped by every edit of its log) and
    newest event (a claimed turn adds one without touching the room); the newest note for them
    or their group. One statement of primary-key reads and index probes: an open participant
    page reads it about once a second and reads the whole view only when it differs. Raises
    :class:`ParticipantNotFound`."""
    people, groups_t, rooms_t = _table(StudyParticipant), _table(StudyGroup), _table(Room)
    notes_t, studies = _table(StudyEvent), _table(Study)
    newest_event = (
        sa_select(func.max(EVENTS.c.seq))
        .where(EVENTS.c.room_id == groups_t.c.room_id)
        .scalar_subquery()
    )
    my_note = (
        sa_select(func.max(notes_t.c.id))
        .where(notes_t.c.participant_id == people.c.id)
        .scalar_subquery()
    )
    group_note = (
        sa_select(func.max(notes_t.c.id))
        .where(notes_t.c.group_id == people.c.group_id)
        .scalar_subquery()
    )
    query = sa_select(
        people.c.stage,
        people.c.group_id,
        people.c.seat,
        people.c.exit_status,
        studies.c.version,
        studies.c.status,
        groups_t.c.status,
        groups_t.c.started_at,
        rooms_t.c.status,
        rooms_t.c.updated_at,
        rooms_t.c.stop_reason,
        newest_event,
        my_note,
        group_note,
    )
    row = _by_token(db, query, token_hash)
    return tuple(row)


def _by_token(db: Database, columns: Any, token_hash: str) -> Any:
    """``columns`` (a select of the participant's, study's, group's and room's tables) for the
    participant holding the token: one row, or :class:`ParticipantNotFound`."""
    people, groups_t, rooms_t = _table(StudyParticipant), _table(StudyGroup), _table(Room)
    tokens, studies = _table(StudyToken), _table(Study)
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


def _table(model: Any) -> Any:
    return model.__table__


def _lobby_counts(conn: Any, study_id: int) -> tuple[int, dict[str, int]]:
    """How many participants of the study wait in the lobby, and its groups per condition."""
    people, groups_t = _table(StudyParticipant), _table(StudyGroup)
    lobby = conn.execute(
        sa_select(func.count())
        .select_from(people)
        .where(people.c.study_id == study_id, people.c.stage == "lobby")
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


def get_participant(db: Database, participant_id: int) -> StudyParticipant:
    with db.read() as session:
        person = session.get(StudyParticipant, participant_id)
    if person is None:
        raise ParticipantNotFound(f"participant {participant_id} does not exist")
    return person


def list_participants(
    db: Database, study_id: int, *, stage: str | Collection[str] | None = None
) -> list[StudyParticipant]:
    """A study's participants (at ``stage``), in the order they joined."""
    query = select(StudyParticipant).where(StudyParticipant.study_id == study_id)
    if stage is not None:
        stages = [stage] if isinstance(stage, str) else sorted(stage)
        query = query.where(col(StudyParticipant.stage).in_(stages))
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyParticipant.id))))


def update_participant(
    db: Database,
    participant_id: int,
    *,
    expected_stages: Collection[str] | None = None,
    event: tuple[str, Mapping[str, Any] | None] | None = None,
    **fields: Any,
) -> StudyParticipant | None:
    """Set ``fields`` (columns of ``study_participants``) and record ``event`` (kind, data) in
    the study's log, in one transaction; ``None`` (nothing changed) when the participant's stage
    is not one of ``expected_stages``."""
    if "stage" in fields and fields["stage"] not in STAGES:
        raise StorageValueError(f"stage={fields['stage']!r} must be one of {sorted(STAGES)}")
    unknown = sorted(set(fields) - set(StudyParticipant.model_fields))
    if unknown:
        raise StorageValueError(f"unknown participant field(s) {unknown}")
    now = db.now()
    with db.write() as session:
        person = session.exec(
            select(StudyParticipant).where(StudyParticipant.id == participant_id).with_for_update()
        ).first()
        if person is None:
            raise ParticipantNotFound(f"participant {participant_id} does not exist")
        if expected_stages is not None and person.stage not in expected_stages:
            return None
        for name, value in fields.items():
            setattr(person, name, value)
        person.updated_at = now
        session.add(person)
        if event is not None:
            session.add(
                StudyEvent(
                    study_id=person.study_id,
                    participant_id=person.id,
                    group_id=person.group_id,
                    kind=event[0],
                    data=dict(event[1]) if event[1] else None,
                    at=now,
                )
            )
        return person


class RateLimited(StorageError):
    """Over the participant's posting rate: ``wait`` seconds until a post would be allowed.
    (Not a value error: the caller says "wait", it does not refuse the text.)"""

    def __init__(self, wait: float) -> None:
        super().__init__(f"over the posting rate: wait {wait:.1f} s")
        self.wait = wait


@dataclass(frozen=True, slots=True)
class PostRate:
    """A post counted in the participant's rate window (``limit`` posts per ``window`` seconds,
    ``now`` in ``time.time()`` seconds); ``seen_at``: the post also proves they are here
    (``last_seen_at``), in the same write. Called with a write connection (``append_message``'s
    ``charge``): counts the post, or raises :class:`RateLimited` having written nothing."""

    participant_id: int
    now: float
    window: float
    limit: int
    seen_at: datetime | None = None

    def __call__(self, conn: Any) -> None:
        people = _table(StudyParticipant)
        mine = people.c.id == self.participant_id
        row = conn.execute(sa_select(people.c.posts).where(mine).with_for_update()).first()
        if row is None:
            raise ParticipantNotFound(f"participant {self.participant_id} does not exist")
        recent = [t for t in (row.posts or []) if self.now - t < self.window]
        if len(recent) >= self.limit:
            raise RateLimited(max(0.01, self.window - (self.now - min(recent))))
        values: dict[str, Any] = {"posts": [*recent, self.now]}
        if self.seen_at is not None:
            values["last_seen_at"] = self.seen_at
        conn.execute(people.update().where(mine).values(**values))


def note_post(
    db: Database,
    participant_id: int,
    *,
    now: float,
    window: float,
    limit: int,
    seen_at: datetime | None = None,
) -> float:
    """Count a post in the participant's rate window: 0 when it is allowed (and counted), else
    the seconds until it would be (see :class:`PostRate`; a message to a room passes its
    ``PostRate`` to ``append_message`` instead, one write for both)."""
    try:
        with db.write_connection() as conn:
            PostRate(participant_id, now, window, limit, seen_at)(conn)
    except RateLimited as limited:
        return limited.wait
    return 0.0


# --- the study's log --------------------------------------------------------------------------


def record_study_event(
    db: Database,
    study_id: int,
    kind: str,
    *,
    participant_id: int | None = None,
    group_id: int | None = None,
    data: Mapping[str, Any] | None = None,
) -> int:
    """Append to the study's log; returns the event's id."""
    with db.write() as session:
        event = StudyEvent(
            study_id=study_id,
            participant_id=participant_id,
            group_id=group_id,
            kind=kind,
            data=json_object(dict(data), "data") if data else None,
            at=db.now(),
        )
        session.add(event)
        session.flush()
        return int(event.id or 0)


def study_events(
    db: Database,
    study_id: int,
    *,
    participant_id: int | None = None,
    kinds: Collection[str] | None = None,
) -> list[StudyEvent]:
    """The study's log (of one participant, of some kinds), oldest first."""
    query = select(StudyEvent).where(StudyEvent.study_id == study_id)
    if participant_id is not None:
        query = query.where(StudyEvent.participant_id == participant_id)
    if kinds is not None:
        query = query.where(col(StudyEvent.kind).in_(sorted(kinds)))
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyEvent.id))))


# --- groups -----------------------------------------------------------------------------------


def form_group(
    db: Database,
    study_id: int,
    *,
    room: ExperimentRoom,
    seats: Mapping[str, int | str],
    assignment: Mapping[str, Any],
    expected_stage: str = "lobby",
) -> StudyGroup | None:
    """Form a group in one transaction: its room (with its opening, running), the group row,
    each participant of ``seats`` (``{seat: participant id or "agent"}``) moved to ``room`` and
    an ``assigned`` event each. ``None`` (nothing written) when one of them is no longer at
    ``expected_stage`` or the group number of that condition is taken (another tick won)."""
    checked = _checked_room(db, room)
    people = {seat: pid for seat, pid in seats.items() if isinstance(pid, int)}
    now = db.now()
    with db.write() as session:
        study = _locked_study(session, study_id)
        taken = session.exec(
            select(StudyGroup.id).where(
                StudyGroup.study_id == study_id,
                StudyGroup.condition == room.condition,
                StudyGroup.number == room.replicate,
            )
        ).first()
        rows = session.exec(
            select(StudyParticipant).where(col(StudyParticipant.id).in_(sorted(people.values())))
        ).all()
        if taken is not None or len(rows) != len(people):
            return None
        if any(p.stage != expected_stage or p.group_id is not None for p in rows):
            return None
        conn = session.connection()
        _insert_rooms(conn, int(study.experiment_id or 0), [checked], now)
        room_id = session.exec(
            select(Room.id).where(
                Room.experiment_id == study.experiment_id,
                Room.condition == room.condition,
                Room.replicate == room.replicate,
            )
        ).one()
        group = StudyGroup(
            study_id=study_id,
            condition=room.condition,
            number=room.replicate,
            room_id=room_id,
            seats=dict(seats),
            assignment=json_object(dict(assignment), "assignment"),
            started_at=now,
        )
        session.add(group)
        session.flush()
        _seat_people(session, study, group, {p.id: p for p in rows}, people, assignment, now)
        return group


def _seat_people(
    session: Any,
    study: Any,
    group: StudyGroup,
    by_id: Mapping[Any, StudyParticipant],
    people: Mapping[str, int],
    assignment: Mapping[str, Any],
    now: Any,
) -> None:
    """:func:`form_group`'s participants moved into ``group``'s room, each with its ``assigned``
    event (inside the caller's transaction)."""
    for seat, pid in people.items():
        person = by_id[pid]
        person.stage, person.group_id, person.seat = "room", group.id, seat
        person.condition, person.assigned_at, person.updated_at = group.condition, now, now
        person.version = study.version
        session.add(person)
        session.add(
            StudyEvent(
                study_id=study.id,
                participant_id=pid,
                group_id=group.id,
                kind="assigned",
                data={"condition": group.condition, "seat": seat, **assignment},
                at=now,
            )
        )


def list_groups(db: Database, study_id: int, *, status: str | None = None) -> list[StudyGroup]:
    query = select(StudyGroup).where(StudyGroup.study_id == study_id)
    if status is not None:
        query = query.where(StudyGroup.status == status)
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyGroup.id))))


def get_group(db: Database, group_id: int) -> StudyGroup:
    with db.read() as session:
        group = session.get(StudyGroup, group_id)
    if group is None:
        raise RecordNotFound(f"study group {group_id} does not exist")
    return group


def update_group(
    db: Database,
    group_id: int,
    *,
    expected_status: str | None = None,
    seat_changes: Mapping[str, Any] | None = None,
    status: str | _Unset = UNSET,
    ended_at: datetime | None | _Unset = UNSET,
) -> StudyGroup | None:
    """Change a group (``seat_changes``: ``{seat: holder}`` merged into its seats under the
    lock); ``None`` (nothing changed) when its status is not ``expected_status``."""
    with db.write() as session:
        group = session.exec(
            select(StudyGroup).where(StudyGroup.id == group_id).with_for_update()
        ).first()
        if group is None:
            raise RecordNotFound(f"study group {group_id} does not exist")
        if expected_status is not None and group.status != expected_status:
            return None
        if seat_changes:
            group.seats = {**group.seats, **seat_changes}
        if not isinstance(status, _Unset):
            group.status = status
        if not isinstance(ended_at, _Unset):
            group.ended_at = ended_at
        session.add(group)
        return group


def running_groups(db: Database, study_id: int) -> list[tuple[StudyGroup, str, str | None]]:
    """The study's running groups with their room's status and stop reason (one query)."""
    with db.read() as session:
        rows = session.exec(
            select(StudyGroup, Room.status, Room.stop_reason)
            .join(Room, col(Room.id) == col(StudyGroup.room_id))
            .where(StudyGroup.study_id == study_id, StudyGroup.status == "running")
            .order_by(col(StudyGroup.id))
        ).all()
    return [(group, str(status), reason) for group, status, reason in rows]


def group_numbers(db: Database, study_id: int) -> dict[str, int]:
    """How many groups each condition has so far."""
    with db.read() as session:
        rows = session.exec(
            select(StudyGroup.condition, func.count())
            .where(StudyGroup.study_id == study_id)
            .group_by(StudyGroup.condition)
        ).all()
    return {str(condition): int(n) for condition, n in rows}


__all__ = [
    "STAGES",
    "STUDY_STATUSES",
    "Admission",
    "ParticipantNotFound",
    "ParticipantState",
    "StudyNotFound",
    "admit_participant",
    "create_study",
    "form_group",
    "get_group",
    "get_participant",
    "get_study",
    "group_numbers",
    "list_groups",
    "list_participants",
    "list_studies",
    "note_post",
    "participant_by_token",
    "participant_state",
    "running_groups",
    "record_study_event",
    "study_events",
    "update_group",
    "update_participant",
    "update_study",
]

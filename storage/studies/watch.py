"""What a process serving participants' pages reads and writes for all of them at once (issue 32):
the marker of every watched participant's page in one statement, and their presence in one write.

A process holds the event streams of many participants. Instead of one read per page a second (a
Streamlit fragment each), it asks :func:`participant_markers` for all of them together and reads
a participant's whole view again only when their marker moved; and instead of one heartbeat
write per person per interval it says "these people's pages are open" in one UPDATE
(:func:`mark_present`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, case, func, update
from sqlalchemy import select as sa_select

from storage.database import Database
from storage.database.statements import by_dialect, in_list
from storage.rooms.rows import EVENTS, ROOMS
from storage.studies._columns import GROUPS, NOTES, PEOPLE, STUDIES, TOKENS
from vocabulary import ParticipantStage


def _markers(server: bool) -> Any:
    people, groups, notes = PEOPLE, GROUPS, NOTES
    newest_event = (
        sa_select(func.max(EVENTS.c.seq)).where(EVENTS.c.room_id == groups.c.room_id)
    ).scalar_subquery()
    my_note = (
        sa_select(func.max(notes.c.id)).where(notes.c.participant_id == people.c.id)
    ).scalar_subquery()
    group_note = (
        sa_select(func.max(notes.c.id)).where(notes.c.group_id == people.c.group_id)
    ).scalar_subquery()
    # The lobby's page shows how many more people its group needs: it changes with the study's
    # lobby and its groups, read only for people in the lobby.
    others = PEOPLE.alias("others")
    waiting = (
        sa_select(func.count())
        .select_from(others)
        .where(others.c.study_id == people.c.study_id, others.c.stage == ParticipantStage.LOBBY)
    ).scalar_subquery()
    formed = GROUPS.alias("formed")
    formed_groups = (
        sa_select(func.count()).select_from(formed).where(formed.c.study_id == people.c.study_id)
    ).scalar_subquery()
    in_lobby = people.c.stage == ParticipantStage.LOBBY
    return (
        sa_select(
            TOKENS.c.token_hash,
            people.c.stage,
            people.c.group_id,
            people.c.seat,
            people.c.exit_status,
            STUDIES.c.version,
            STUDIES.c.status,
            groups.c.status,
            groups.c.started_at,
            ROOMS.c.status,
            ROOMS.c.updated_at,
            ROOMS.c.stop_reason,
            newest_event,
            my_note,
            group_note,
            case((in_lobby, waiting), else_=None),
            case((in_lobby, formed_groups), else_=None),
        )
        .select_from(TOKENS)
        .join(people, people.c.id == TOKENS.c.participant_id)
        .join(STUDIES, STUDIES.c.id == people.c.study_id)
        .outerjoin(groups, groups.c.id == people.c.group_id)
        .outerjoin(ROOMS, ROOMS.c.id == groups.c.room_id)
        .where(in_list(TOKENS.c.token_hash, "hashes", server=server))
    )


_MARKERS = by_dialect(_markers)


def participant_markers(db: Database, token_hashes: Collection[str]) -> dict[str, tuple[Any, ...]]:
    """``{token_hash: marker}`` for every hash a participant holds (the others are left out), in
    one statement. A marker changes whenever that participant's page can change but for the
    clock: their stage, group, seat and exit; their study's version and status; their group's
    status and start; their room's status, last change, stop reason and newest event; the newest
    note for them or their group; in the lobby, how many wait and how many groups exist."""
    if not token_hashes:
        return {}
    with db.read_connection() as conn:
        rows = conn.execute(_MARKERS(conn), {"hashes": sorted(set(token_hashes))}).all()
    return {str(row[0]): tuple(row[1:]) for row in rows}


_PRESENT = by_dialect(
    lambda server: (
        update(PEOPLE)
        .where(
            PEOPLE.c.id.in_(
                sa_select(TOKENS.c.participant_id).where(
                    in_list(TOKENS.c.token_hash, "hashes", server=server)
                )
            ),
            PEOPLE.c.stage != ParticipantStage.EXIT,
            PEOPLE.c.last_seen_at < bindparam("now"),
        )
        .values(last_seen_at=bindparam("now"))
    )
)


def mark_present(db: Database, token_hashes: Collection[str], now: datetime) -> int:
    """Say that the participants holding ``token_hashes`` were present at ``now`` (their pages'
    streams are open): one UPDATE for all of them, whatever their number; people who left are
    not touched, nor anyone already seen later. Returns how many rows changed. Not durable (a
    presence lost with a power cut is said again at the next interval)."""
    if not token_hashes:
        return 0
    with db.write_connection(durable=False) as conn:
        result = conn.execute(_PRESENT(conn), {"hashes": sorted(set(token_hashes)), "now": now})
    return int(result.rowcount or 0)


__all__ = ["mark_present", "participant_markers"]

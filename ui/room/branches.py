"""Forks on the Room page: fork at a message (edited, or given to another speaker), the branch tree
of a room, and two branches side by side from the point where they diverge.

Each panel is a fragment: picking a message, a branch or a speaker reruns only that panel. All
text (names, messages) is drawn as plain text (``st.text``, which wraps), never as markdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

import streamlit as st

from conversation import browse
from conversation.rooms.status_words import status_word
from conversation.vocabulary import (
    AgentTurn,
    HumanMessage,
    LogEntry,
    Notice,
    Pass,
    entries_of,
    entry_of,
)
from ui.access import note
from ui.bootstrap import human_name, wake_runner
from ui.widgets import escape_markdown

#: Messages shown per side when comparing two branches.
COMPARE_LIMIT = 200


def _messages(events: Sequence[Any]) -> list[LogEntry]:
    """What a fork can start from: a message (a person's, or an agent's published turn)."""
    return [e for e in entries_of(events) if e.is_message]


@st.fragment
def fork_panel(db: Any, room_id: int, actor: Any = None, since: int = 0) -> None:
    """Fork at a message after seq ``since`` (the messages the page read: a long room's newest
    page, more after "Show earlier messages"), optionally edited or given to another speaker
    (then resumed there). ``actor``: who acts (forking needs the researcher role)."""
    from conversation.access import Action
    from conversation.rooms.room import Room

    if actor is not None and not actor.can(Action.CREATE_ROOM):
        note(Action.CREATE_ROOM)  # no fork or edit-and-replay controls without the role
        return
    room = Room.open(db, room_id)
    messages = _messages(room.events(after_seq=since))
    if not messages:
        st.caption(
            "No messages to fork from yet." if not since else "No message to fork from here."
        )
        return
    by_seq = {e.seq: e for e in messages}
    at = st.selectbox(
        "Fork at message",
        [e.seq for e in reversed(messages)],
        format_func=lambda s: f"#{s} {by_seq[s].speaker}: {by_seq[s].content[:60]}",
        key=f"fork-at-{room_id}",
    )
    chosen = by_seq[at]
    text = st.text_area(
        "The message in the fork (edit it to replay from a different message)",
        value=chosen.content,
        key=f"fork-text-{room_id}-{at}",
    )
    roster = list(room.config.names)
    speaker = chosen.speaker
    if isinstance(chosen, AgentTurn):
        speaker = st.selectbox(
            "Said by",
            roster,
            index=roster.index(chosen.speaker) if chosen.speaker in roster else 0,
            key=f"fork-speaker-{room_id}-{at}",
        )
    edited = text.strip() != chosen.content.strip()
    moved = speaker != chosen.speaker
    label = "Fork with these changes" if edited or moved else "Fork from here"
    if st.button(label, key=f"fork-{room_id}"):
        try:
            fork = room.fork(
                at,
                name=f"{room.name} (fork at #{at})",
                edit=text if edited else None,
                speaker=speaker if moved else None,
                actor=actor,
                by=human_name(),
            )
        except ValueError as exc:
            st.error("Not forked: " + escape_markdown(exc))
            return
        if edited or moved:
            st.session_state[f"_notice:{fork.id}"] = (
                "This branch starts paused at the changed message: press Resume to continue."
            )
        wake_runner()
        st.query_params["room"] = str(fork.id)
        st.rerun()


def tree_rows(family: Sequence[Any], current: int) -> list[dict[str, Any]]:
    """The branch tree as rows (depth-first, children by id), each name indented by its depth."""
    children: dict[int | None, list[Any]] = {}
    ids = {r.id for r in family}
    for r in family:
        parent = r.parent_room_id if r.parent_room_id in ids else None
        children.setdefault(parent, []).append(r)
    rows: list[dict[str, Any]] = []

    def walk(parent: int | None, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda x: x.id):
            marker = "▶ " if r.id == current else ""
            rows.append(
                {
                    # the status in the branch's own cell: a status column of its own was cut
                    # to "termi…" in the page's narrow right column
                    "branch": "    " * depth
                    + ("└ " if depth else "")
                    + f"{marker}#{r.id} {r.name} ({status_word(r.status)})",
                    "forked at": r.parent_seq if r.parent_room_id is not None else None,
                    "id": r.id,
                }
            )
            walk(r.id, depth + 1)

    walk(None, 0)
    return rows


def tree_line(row: dict[str, Any]) -> str:
    """A branch of the tree as one line of plain text that wraps in the page's narrow right
    column: in a table, its status (and the "forked at" column) were cut there ("termi…",
    then "(fork at 2) (not…" at the end of a fork's long name)."""
    forked = row["forked at"]
    return row["branch"] + (f", forked at #{forked}" if forked is not None else "")


@st.fragment
def branch_tree(db: Any, room_id: int) -> None:
    """The tree of forks this room belongs to, a line per branch, with a picker to open one."""
    family = browse.room_family(db, room_id)
    if len(family) < 2:
        st.caption("No branches yet: fork at a message to try another continuation.")
        return
    rows = tree_rows(family, room_id)
    for row in rows:
        st.text(tree_line(row))
    names = {row["id"]: row["branch"].strip() for row in rows}
    others = [row["id"] for row in rows if row["id"] != room_id]
    target = st.selectbox(
        "Open branch", others, format_func=lambda i: names[i], key=f"branch-open-{room_id}"
    )
    if st.button("Open", key=f"branch-go-{room_id}"):
        st.query_params["room"] = str(target)
        st.rerun()


def divergence(left: Sequence[Any], right: Sequence[Any]) -> int:
    """The first seq at which two logs differ (speaker, kind or text); past the shorter's end
    when one is a prefix of the other."""
    for a, b in zip(left, right, strict=False):
        if (a.kind, a.speaker, a.content) != (b.kind, b.speaker, b.content):
            return int(a.seq)
    shorter = min(len(left), len(right))
    return shorter + 1


def message_text(event: Any) -> str | None:
    """A log entry as one compared line (``speaker: text``; a notice in brackets), or None for
    what is not a message yet (a turn in flight, a draft)."""
    entry = entry_of(event)
    if isinstance(entry, Notice):
        return f"[{entry.content}]"
    if isinstance(entry, HumanMessage) or entry.is_done:
        return f"{entry.speaker}: " + ("(passes)" if isinstance(entry, Pass) else entry.content)
    return None


#: A row of a comparison: branch A's seq and line, branch B's, and whether they differ (a seq is
#: None, and its line "", where one branch has no message facing the other's).
Row = tuple[int | None, int | None, str, str, bool]


def comparison_rows(left: Sequence[Any], right: Sequence[Any], from_seq: int) -> list[Row]:
    """The two logs from ``from_seq`` on, aligned by what the messages are, not by their
    numbers: the lines both branches have face each other, and what only one has (a fork's own
    notice, a message the other lacks) faces an empty line (``difflib``'s alignment of the two
    lists of lines), so a branch that differs from #3 by one notice is not shown as differing
    everywhere after it. At most ``COMPARE_LIMIT`` rows."""
    a = [(int(e.seq), t) for e in left if e.seq >= from_seq and (t := message_text(e)) is not None]
    b = [(int(e.seq), t) for e in right if e.seq >= from_seq and (t := message_text(e)) is not None]
    a, b = a[: 2 * COMPARE_LIMIT], b[: 2 * COMPARE_LIMIT]  # bounded work on long branches
    matcher = SequenceMatcher(None, [t for _, t in a], [t for _, t in b], autojunk=False)
    rows: list[Row] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [(a[i][0], b[j][0], a[i][1], b[j][1], False) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]  # fmt: skip
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            mine = a[i1 + k] if i1 + k < i2 else None
            theirs = b[j1 + k] if j1 + k < j2 else None
            rows.append((
                mine[0] if mine else None, theirs[0] if theirs else None,
                mine[1] if mine else "", theirs[1] if theirs else "", True,
            ))  # fmt: skip
    return rows[:COMPARE_LIMIT]


def row_label(row: Row) -> str:
    """``#5 =``, or ``#5 / #6 ≠`` when the two messages have different numbers."""
    a_seq, b_seq, *_, differs = row
    mark = "≠" if differs else "="
    if a_seq == b_seq:
        return f"#{a_seq} {mark}"
    return f"#{a_seq if a_seq is not None else '-'} / #{b_seq if b_seq is not None else '-'} {mark}"


@st.fragment
def compare_branches(db: Any, room_id: int) -> None:
    """Two branches of the tree aligned message by message, from where they diverge, across the
    page's width; a row whose messages differ is marked."""
    family = browse.room_family(db, room_id)
    if len(family) < 2:
        st.caption("No branches yet: fork at a message to compare two continuations.")
        return
    rows = tree_rows(family, room_id)
    names = {row["id"]: row["branch"].strip() for row in rows}
    ids = [row["id"] for row in rows]
    current = next((r for r in family if r.id == room_id), None)
    other = current.parent_room_id if current and current.parent_room_id in ids else None
    if other is None:
        other = next(i for i in ids if i != room_id)
    c0, c1, c2 = st.columns([1, 8, 8])
    left_id = c1.selectbox(
        "Branch A",
        ids,
        index=ids.index(room_id),
        format_func=lambda i: names[i],
        key=f"cmp-a-{room_id}",
    )
    right_id = c2.selectbox(
        "Branch B",
        ids,
        index=ids.index(other),
        format_func=lambda i: names[i],
        key=f"cmp-b-{room_id}",
    )
    left, right = browse.events(db, left_id), browse.events(db, right_id)
    start = divergence(left, right)
    aligned = comparison_rows(left, right, start)
    differing = sum(1 for *_, differs in aligned if differs)
    st.caption(
        escape_markdown(
            f"From message #{start}, where the two branches diverge: {differing} of "
            f"{len(aligned)} messages differ (marked ≠; the messages are aligned by what they "
            "say, so a fork's own notice shifts nothing)."
        )
    )
    if not aligned:
        st.text("(nothing after this point in either branch)")
    for row in aligned:
        _, _, a_line, b_line, _ = row
        c0, c1, c2 = st.columns([1, 8, 8])
        c0.text(row_label(row))
        c1.text(a_line or "(no message)")
        c2.text(b_line or "(no message)")


__all__ = [
    "branch_tree",
    "compare_branches",
    "divergence",
    "comparison_rows",
    "row_label",
    "fork_panel",
    "message_text",
    "tree_line",
    "tree_rows",
]

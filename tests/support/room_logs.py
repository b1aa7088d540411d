"""Stored room logs built without running a room: the mug template's configuration and a log of
``n`` events (a person's opening, then the two agents in turn, with tokens, cost and latency), for
the streamed-export tests in storage and in the app."""

from __future__ import annotations

from typing import Any


def room_config() -> dict[str, Any]:
    """The stored configuration of a room made from the mug negotiation template."""
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION

    return rooms.draft_from_template(MUG_NEGOTIATION).config().to_dict()


def room_log(n: int) -> list[dict[str, Any]]:
    """``n`` event records: the opening (with markup and a non-ASCII letter), then agents' offers."""
    records = [
        {"kind": "human", "speaker": "user", "content": "Négocie, <b>mug</b>?", "activity": 1}
    ]
    for i in range(1, n):
        records.append(
            {"kind": "agent", "speaker": ("Buyer", "Seller")[i % 2], "activity": 1,
             "content": f"Offer {i}: ${3 + i % 7}, \"final\"\nmaybe", "model": "offline",
             "input_tokens": 120 + i, "output_tokens": 14, "cost": 0.0001, "latency": 0.01}
        )  # fmt: skip
    return records

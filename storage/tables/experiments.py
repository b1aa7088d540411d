"""The tables of what rooms are designed from: experiments and the agent library."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow


class Experiment(SQLModel, table=True):
    """A batch of rooms: a template room x variations x replicates (the Experiments page)."""

    __tablename__ = "experiments"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    status: str = Field(default="draft")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # Set when a person archives it (revision 0005): hidden from pickers unless asked for.
    archived_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AgentProfile(SQLModel, table=True):
    """An agent in the web app's library (name, traits, persona instruction, model spec)."""

    __tablename__ = "agent_profiles"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    traits: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    instruction: str = Field(default="", sa_type=sa.Text)
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


__all__ = ["AgentProfile", "Experiment"]

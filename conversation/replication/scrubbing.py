"""A package's scrubbing: two scrubbers (``conversation.privacy``), one for the messages and
answers a package shows and one for its model cache, so each count is its own; or none, when
``--no-scrub`` was given (then every text passes unchanged and the README says so)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Scrubbing:
    """The scrubbers of one package (``messages`` and ``calls``; both None: not scrubbed)."""

    messages: Any | None = None
    calls: Any | None = None

    @classmethod
    def make(cls, scrub: bool, *, known_ids: Iterable[str] = ()) -> Scrubbing:
        """Two scrubbers that also replace ``known_ids`` (the people's recruitment ids), or none."""
        if not scrub:
            return cls()
        from conversation.privacy import Scrubber

        known = list(known_ids)
        return cls(Scrubber(known_ids=known), Scrubber(known_ids=known))

    @property
    def on(self) -> bool:
        return self.messages is not None

    @property
    def translate(self) -> Callable[[str], str] | None:
        """The messages' text function (None: not scrubbed)."""
        return self.messages.scrub if self.messages is not None else None

    @property
    def translate_calls(self) -> Callable[[str], str] | None:
        """The model cache's text function (None: not scrubbed)."""
        return self.calls.scrub if self.calls is not None else None

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it scrubbed (unchanged when not scrubbing)."""
        return self.messages.scrub_value(value) if self.messages is not None else value

    def lines(self) -> list[str]:
        """The scrub report's lines for the README (none when not scrubbing)."""
        if self.messages is None or self.calls is None:
            return []
        return [*self.messages.report.lines(), f"model cache: {self.calls.report.lines()[0]}"]

    def report(self) -> dict[str, Any] | None:
        """The messages' scrub report (``data/scrub_report.json``; None when not scrubbing)."""
        return self.messages.report.to_dict() if self.messages is not None else None


__all__ = ["Scrubbing"]

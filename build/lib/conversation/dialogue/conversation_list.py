"""``ConversationList``: many conversations run concurrently (docs/design.md, "The conversation API").

Both ``run(max_workers)`` and ``run_async(max_concurrency)`` run the conversations as tasks on an
event loop, at most N at a time (a bounded pool). When one fails, the conversations that have not
started never start, the ones in flight are cancelled (a cancelled turn is never appended), and the
failure is raised as ``RuntimeError("Conversation <i> failed")`` with the original as its cause.
"""

from __future__ import annotations

import asyncio
import copy
import os
from typing import Any

from conversation.dialogue.conversation import FORMAT_VERSION, Conversation
from conversation.exceptions import ConversationValueError
from conversation.models.retries import validate_retry_settings
from conversation.sync import run_sync


def _validate_bound(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConversationValueError(
            f"{field} must be a positive integer or None, got {value!r}; e.g. {field}=8"
        )
    return value


class ConversationList:
    """A list of ``Conversation`` objects that run together."""

    def __init__(self, conversations: Any = None) -> None:
        if conversations is None:
            conversations = []
        if not isinstance(conversations, list | tuple):
            what = (
                "a single Conversation"
                if isinstance(conversations, Conversation)
                else (f"a {type(conversations).__name__}")
            )
            raise ConversationValueError(
                f"conversations must be a list of Conversation objects, got {what}; "
                "pass [conversation, ...]"
            )
        items = list(conversations)
        for i, item in enumerate(items):
            if not isinstance(item, Conversation):
                raise ConversationValueError(
                    f"conversations[{i}] is a {type(item).__name__}, not a Conversation"
                )
        if len({id(c) for c in items}) != len(items):
            raise ConversationValueError(
                "the same Conversation object appears twice in conversations; "
                "create a separate Conversation for each run"
            )
        self.conversations: list[Conversation] = items
        for index, conversation in enumerate(items):
            if conversation.conversation_index is None:
                conversation.conversation_index = index

    def __len__(self) -> int:
        return len(self.conversations)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.conversations)

    def __getitem__(self, index: int) -> Conversation:
        return self.conversations[index]

    # -- running ------------------------------------------------------------------------------

    def run(
        self, max_workers: int | None = None, max_retries: int = 3, retry_delay: float = 5.0
    ) -> None:
        """Run every conversation, at most ``max_workers`` at once (default: as a thread pool
        would, ``min(32, cpu_count + 4)``)."""
        bound = _validate_bound(max_workers, "max_workers")
        validate_retry_settings(max_retries, retry_delay)
        if bound is None:
            bound = min(32, (os.cpu_count() or 1) + 4)
        run_sync(
            self.run_async(max_concurrency=bound, max_retries=max_retries, retry_delay=retry_delay)
        )

    async def run_async(
        self, max_concurrency: int | None = None, max_retries: int = 3, retry_delay: float = 5.0
    ) -> None:
        """Run every conversation on the caller's loop, at most ``max_concurrency`` at once
        (default: all at once)."""
        bound = _validate_bound(max_concurrency, "max_concurrency")
        validate_retry_settings(max_retries, retry_delay)
        if not self.conversations:
            return
        gate = asyncio.Semaphore(bound or len(self.conversations))
        failed = asyncio.Event()

        async def one(index: int, conversation: Conversation) -> None:
            async with gate:
                if failed.is_set():  # another conversation failed while this one waited
                    return
                try:
                    await conversation.converse_async(
                        max_retries=max_retries, retry_delay=retry_delay
                    )
                except Exception as exc:
                    failed.set()
                    raise RuntimeError(f"Conversation {index} failed") from exc

        tasks = [asyncio.ensure_future(one(i, c)) for i, c in enumerate(self.conversations)]
        try:
            for finished in asyncio.as_completed(tasks):
                await finished
        finally:
            pending = [t for t in tasks if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    # -- results ------------------------------------------------------------------------------

    def to_results(self) -> Any:
        """All statements of all conversations as one EDSL ``Results`` (empty list: empty Results)."""
        from edsl import QuestionFreeText, Results, Survey

        if not self.conversations:
            survey = Survey(
                [QuestionFreeText(question_text="What do you say next?", question_name="dialogue")]
            )
            return Results(survey=survey, data=[])
        survey = self.conversations[0]._survey()
        rows = [row for c in self.conversations for row in c._results_rows(survey)]
        return Results(survey=survey, data=rows)

    def summarize(self) -> Any:
        """A ``ScenarioList`` with one summary per conversation (empty list: empty ScenarioList)."""
        from edsl import ScenarioList

        return ScenarioList([c.summarize() for c in self.conversations])

    # -- serialization ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Every conversation, versioned."""
        return {
            "format": "conversation_list",
            "version": FORMAT_VERSION,
            "conversations": [c.to_dict() for c in self.conversations],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationList:
        if not isinstance(data, dict) or not isinstance(data.get("conversations"), list):
            raise ConversationValueError(
                "ConversationList.from_dict expects {'version': ..., 'conversations': [...]} "
                "as made by ConversationList.to_dict"
            )
        data = copy.deepcopy(data)
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ConversationValueError(
                f"unknown conversation list format version {version!r}; "
                f"this library reads version {FORMAT_VERSION}"
            )
        return cls([Conversation.from_dict(c) for c in data["conversations"]])

    def __repr__(self) -> str:
        return f"ConversationList({len(self.conversations)} conversations)"


__all__ = ["ConversationList"]

"""Personal data and exports (issue 34): :class:`Scrubber` replaces personal data in text by
typed placeholders (Presidio) and counts them in a :class:`ScrubReport`."""

from conversation.privacy.scrub import LABELS, NAME_MODELS, Scrubber, ScrubReport, scrub_text

__all__ = ["LABELS", "NAME_MODELS", "ScrubReport", "Scrubber", "scrub_text"]

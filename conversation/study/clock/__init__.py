"""A study's clock: everything time-driven, in one idempotent call (``ticks``: ``tick``), with the
lobby's recorded draw (``lobby``), what happens to a seat its person left (``seats``), human
seats' turns (``turns``), a person's limits in their room (``limits``), the idle rules
(``idle``) and attention checks (``attention``)."""

from conversation.study.clock.ticks import TickReport, tick

__all__ = ["TickReport", "tick"]

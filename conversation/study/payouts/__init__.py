"""Payouts computed (issue 33): what each person of a study earns under the definition's
``[payouts]`` (``definition/payouts.py`` is its shape), from what was stored.

``money`` holds the rule, pure and documented once (Decimal amounts, each line rounded once to
cents half up, the cap, the part paid as a bonus); ``report`` reads storage:
:func:`study_payouts` (per person: pseudonym, PROLIFIC_PID, base, each bonus from its source,
waiting pay, the cap applied, total; the study's total), :func:`person_earnings` (one person's,
for their exit page) and :func:`prolific_bonus_csv` (Prolific's bulk bonus file). Withdrawn
people are left out. The same stored data gives the same amounts and the same file.
"""

from conversation.study.payouts.money import (
    BASE,
    CAP,
    WAITING,
    PayoutLine,
    PersonPayout,
    amount_text,
)
from conversation.study.payouts.report import (
    Earnings,
    PayoutReport,
    person_earnings,
    prolific_bonus_csv,
    study_payouts,
)

__all__ = [
    "BASE",
    "CAP",
    "WAITING",
    "Earnings",
    "PayoutLine",
    "PayoutReport",
    "PersonPayout",
    "amount_text",
    "person_earnings",
    "prolific_bonus_csv",
    "study_payouts",
]

"""Agreement between raters (human coders, model judges, a panel): Cohen's kappa for two raters,
Krippendorff's alpha for any number with missing values, each with a bootstrap interval, and the
raters x raters table of both.

The statistics are the libraries' own: ``sklearn.metrics.cohen_kappa_score`` and
``krippendorff.alpha`` (imported on first use; scikit-learn takes about a second). What this
module adds is what a study needs around them:

- **Values as researchers write them.** Labels (``"concession"``) or numbers; a missing rating is
  ``None`` or NaN. Ordered labels take an explicit ``order=[...]`` (lowest first); interval and
  ratio levels need numbers. Bad input raises ``ConversationValueError`` naming the field.
- **Undefined is a value, not a crash.** When a statistic has no meaning for the data (no
  variation: everyone gave the same label; no unit rated by two raters) the result is
  :class:`Undefined`, a NaN float that carries its ``reason``.
- **Intervals.** A percentile bootstrap over units (units are resampled, each keeping all its
  ratings), seeded and so repeatable; it reports the estimate, the interval, ``n_units`` and how
  many bootstrap samples were undefined (a resample can lose all variation).

    krippendorff_alpha([[1, 2, 3, None], [1, 2, 2, 4]], level="ordinal")
    cohen_kappa(["yes", "no", "yes"], ["yes", "no", "no"])
    alpha_interval(table, level="interval", n_boot=2000, seed=1)
    agreement_table(long_frame, level="ordinal", order=["low", "mid", "high"])


The package: ``values`` (ratings, :class:`Undefined`, :class:`Agreement`), ``coefficients``
(alpha, kappa), ``intervals`` (their bootstrap intervals) and ``tables`` (the raters x raters
table).
"""

from conversation.analysis.agreement.coefficients import cohen_kappa, krippendorff_alpha
from conversation.analysis.agreement.intervals import alpha_interval, interval, kappa_interval
from conversation.analysis.agreement.tables import AgreementTable, agreement_table, ratings_table
from conversation.analysis.agreement.values import (
    LEVELS,
    TABLE_COLUMNS,
    WEIGHTS,
    Agreement,
    Undefined,
    reason_of,
)

__all__ = [
    "LEVELS",
    "TABLE_COLUMNS",
    "WEIGHTS",
    "Agreement",
    "AgreementTable",
    "Undefined",
    "agreement_table",
    "alpha_interval",
    "cohen_kappa",
    "interval",
    "kappa_interval",
    "krippendorff_alpha",
    "ratings_table",
    "reason_of",
]

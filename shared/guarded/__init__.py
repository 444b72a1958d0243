"""The ``guarded`` admission policy: groundgate's decisions, then guards that read the document
as a table reader would (the cell under a column, the row a label names, the scale in force,
bracketed negatives), flag what contradicts the candidate and relieve groundgate flags the
document settles. Every groundgate code and receipt member stays; the receipt gains ``guard``
(the settings and revision) and each decision ``guard`` (what each guard found).
"""

from __future__ import annotations

from groundswell.shared.admit.guard_codes import GUARD_CODES, GUARD_FLAGS, GUARD_INFO
from groundswell.shared.guarded.settings import (
    DEFAULT_GUARD,
    GUARD_REVISION,
    GuardSettings,
    GuardSettingsError,
)

__all__ = [
    "DEFAULT_GUARD",
    "GUARD_CODES",
    "GUARD_FLAGS",
    "GUARD_INFO",
    "GUARD_REVISION",
    "GuardSettings",
    "GuardSettingsError",
]

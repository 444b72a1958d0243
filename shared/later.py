"""``Later``: the core's way to say "do this task again in N seconds" without Celery.

The one task base class (workers/base.py) turns it into a Celery retry with that countdown;
the core decides when (a webhook's backoff), the base class how.
"""

from __future__ import annotations


class Later(Exception):
    def __init__(self, countdown: float, why: str = "") -> None:
        super().__init__(why or f"again in {countdown:g} s")
        self.countdown = countdown

"""Small charts for the HTML pages: server-rendered SVG, no scripts, nothing fetched, so a
page's strict CSP stays as it is (``templates/_macros.html``: ``bar_chart``).

A chart is plain data: a title and bars, each with a label, a count, a css class (the page's
colour for it) and its length in the drawing's units, so a template only draws it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

BAR_LENGTH = 240  # the longest bar, in the drawing's units
ROW = 18  # one bar's row, in the drawing's units
MOST_BARS = 12


def bar_chart(
    name: str,
    title: str,
    bars: Iterable[tuple[str, int | float, str]],
    most: int = MOST_BARS,
    href: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """A horizontal bar chart of ``(label, count, css class)`` bars in the order given (at
    most ``most``; bars of 0 are kept, so a chart shows what is absent); None when every
    count is 0. ``href``: a link for a bar, by label."""
    rows = [(label, value, css) for label, value, css in bars][:most]
    top = max((value for _, value, _ in rows), default=0)
    if not top:
        return None
    return {
        "id": name,
        "title": title,
        "height": ROW * len(rows),
        "length": BAR_LENGTH,
        "bars": [
            {
                "label": label,
                "value": value,
                "css": css,
                "y": ROW * n,
                "w": round(BAR_LENGTH * value / top, 1),
                "href": (href or {}).get(label),
            }
            for n, (label, value, css) in enumerate(rows)
        ],
    }

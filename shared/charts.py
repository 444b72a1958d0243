"""Small charts for the HTML pages: server-rendered SVG, no scripts, nothing fetched, so a
page's strict CSP stays as it is (``templates/_macros.html``: ``bar_chart``).

A chart is plain data: a title and bars, each with a label, a count, a css class (the page's
colour for it) and its length in the drawing's units, so a template only draws it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

BAR_LENGTH = 240  # the longest bar, in the drawing's units
ROW = 18  # one bar's row, in the drawing's units
MOST_BARS = 12
LABELS = 160  # the label column, in the drawing's units


def bar_chart(
    name: str,
    title: str,
    bars: Iterable[tuple[str, int | float, str]],
    most: int = MOST_BARS,
    href: dict[str, str] | None = None,
    *,
    shown: Callable[[int | float], str] = str,
    labels: int = LABELS,
    top: int | float | None = None,
) -> dict[str, Any] | None:
    """A horizontal bar chart of ``(label, count, css class)`` bars in the order given (at
    most ``most``; bars of 0 are kept, so a chart shows what is absent); None when every
    count is 0. ``href``: a link for a bar, by label; ``shown``: how a bar's number is
    written beside it; ``labels``: the width of the label column, in the drawing's units;
    ``top``: the number a full-length bar stands for (default: the largest bar's)."""
    rows = [(label, value, css) for label, value, css in bars][:most]
    if not any(value for _, value, _ in rows):
        return None
    top = top or max(value for _, value, _ in rows)
    return {
        "id": name,
        "title": title,
        "height": ROW * len(rows),
        "length": BAR_LENGTH,
        "labels": labels,
        "bars": [
            {
                "label": label,
                "value": value,
                "text": shown(value),
                "css": css,
                "y": ROW * n,
                "w": round(BAR_LENGTH * value / top, 1),
                "href": (href or {}).get(label),
            }
            for n, (label, value, css) in enumerate(rows)
        ],
    }


def percent(rate: int | float) -> str:
    """A share as a percentage: 0.1234 is ``12.3%``."""
    return f"{100 * rate:.1f}%"


def rate_chart(
    name: str,
    title: str,
    bars: Iterable[tuple[str, float | None, str]],
    most: int = MOST_BARS,
    href: dict[str, str] | None = None,
    labels: int = LABELS,
) -> dict[str, Any] | None:
    """A bar chart of shares (0 to 1), written as percentages, a full-length bar 100% (so
    two charts' bars compare); a bar without a share (a run without gold labels has no
    escape rate) is left out, not drawn as 0."""
    known = [(label, rate, css) for label, rate, css in bars if rate is not None]
    return bar_chart(name, title, known, most, href, shown=percent, labels=labels, top=1)

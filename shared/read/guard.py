"""What keeps reading one document bounded and honest: its deadline, and a look at its first
bytes to tell a mislabelled file (a ``.pdf`` that is HTML, an ``.xml`` that is a PDF).

The deadline (setting ``read_seconds``) holds in two ways. Readers call :func:`check_deadline`
as they go (between markup events, between PDF pages), which works in any thread. In the main
thread, where a CLI command and a prefork worker's task run, a ``SIGALRM`` timer also interrupts
a reader stuck inside one long step, unless a timer is already running there.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from groundswell.shared.read.models import ReadTimeout

# (monotonic deadline, seconds allowed, document name) of the reading in progress
_CURRENT: ContextVar[tuple[float, float, str] | None] = ContextVar("read_deadline", default=None)


def _overdue(seconds: float, name: str) -> ReadTimeout:
    return ReadTimeout(f"{name}: reading took longer than {seconds:g} s (setting read_seconds)")


def check_deadline() -> None:
    """Raise :class:`ReadTimeout` when the reading in progress has run past its deadline."""
    current = _CURRENT.get()
    if current is not None and time.monotonic() > current[0]:
        raise _overdue(current[1], current[2])


def remaining_seconds() -> float | None:
    """The seconds left to the reading in progress (None: no limit), for a program it runs."""
    current = _CURRENT.get()
    return None if current is None else max(current[0] - time.monotonic(), 0.01)


def _can_alarm() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )


@contextlib.contextmanager
def time_limit(seconds: float | None, name: str) -> Iterator[None]:
    """Run the body as the reading of ``name``, which may take ``seconds`` (None: no limit)."""
    if not seconds:
        yield
        return
    token = _CURRENT.set((time.monotonic() + seconds, seconds, name))
    alarm = _can_alarm()
    if alarm:

        def ring(_signum: int, _frame: Any) -> None:
            raise _overdue(seconds, name)

        saved = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if alarm:
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
            finally:  # the alarm may ring here, once: the handler is put back all the same
                signal.signal(signal.SIGALRM, saved)
        _CURRENT.reset(token)


# First bytes of formats that are never a text, HTML or XML file, and what to call them.
BINARY = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (such as .docx or .xlsx)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 file (such as .doc or .xls)"),
    (b"\x89PNG\r\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
)


def has_pdf_header(data: bytes) -> bool:
    """A PDF header in the first KB, where PDF readers look for it."""
    return b"%PDF-" in data[:1024]


def binary_kind(data: bytes) -> str | None:
    """What a file is when its first bytes say it is a binary format; None otherwise."""
    head = data[:16].removeprefix(b"\xef\xbb\xbf").lstrip()
    return next((what for magic, what in BINARY if head.startswith(magic)), None)


def looks_like(data: bytes) -> str | None:
    """What the first bytes of ``data`` suggest, for a hint in an error message."""
    kind = binary_kind(data)
    if kind:
        return kind
    head = data[:4096].removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    # a web page saved as .pdf often has no <html> tag in its first bytes (a long comment or
    # head first, or none at all): any of these tags says HTML, not XML
    if head.startswith(b"<!doctype html") or re.search(
        rb"<(html|head|body|meta|title|div)[\s>]", head
    ):
        return "HTML"
    if head.startswith(b"<"):
        return "XML"
    if head.startswith((b"{", b"[")):
        return "JSON"
    return "plain text" if head else None

"""Plain text (and the characters of an HTML file): UTF-8, an optional byte order mark, and any
line end (CRLF, CR) read as ``\\n``, as groundgate 0.11.0 reads them. Other charsets are refused
rather than guessed: a wrong guess would change the text that quotations are checked against.
"""

from __future__ import annotations

from groundswell.shared.read.models import ReadError


def decode_text(data: bytes, name: str) -> str:
    """``data`` as text with ``\\n`` line ends; :class:`ReadError` if it is not UTF-8."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(
            f"{name} is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it to UTF-8 first"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")

"""A fast reader of PDF content streams: the operands and operators pdfminer's own content
parser would give, from one regular-expression scan instead of a byte-by-byte state machine.

pdfminer spends most of a page's time tokenizing its content stream. ``content_objects`` gives
the same sequence of objects (numbers, strings, names, arrays, dictionaries and operator
keywords, using pdfminer's interned ``PSLiteral``/``PSKeyword`` objects) for the constructs that
real content streams use. Where pdfminer's tokenizer has quirks that depend on its 4 KB buffers,
on where one stream of a page ends and the next begins, or on inline images, it returns None
and the caller uses pdfminer's parser: the result is then the same by construction. The tests
compare both on every content stream of the corpus and on generated streams.

Rules followed (pdfminer.six 20260107, ``psparser``):

* whitespace and NUL bytes separate tokens; ``%`` starts a comment to the end of the line;
* a number is a sign or digit, digits, and optionally a dot and digits (or a dot and digits);
  text that is not a number (a lone ``-``) gives nothing; ``1.2.3`` is 1.2 then .3;
* a keyword starts with an ASCII letter and runs to a delimiter or whitespace (NUL included);
  ``true`` and ``false`` are booleans;
* a name runs to a delimiter; ``#`` and up to two hex digits give one byte;
* a literal string nests parentheses; escapes are pdfminer's (an unknown one is dropped);
* ``<`` starts a hex string that ends at the first byte that is neither a hex digit nor space,
  which is left in place; an odd last digit d is the byte d; ``<<`` and ``>>`` are dictionary
  delimiters and a lone ``>`` is skipped;
* any other byte is a one-byte keyword; ``[ ]``, ``{ }`` and ``<< >>`` build lists and
  dictionaries; a closing delimiter that matches nothing is ignored.
"""

from __future__ import annotations

import binascii
import re
from typing import Any

from pdfminer.psparser import KWD, LIT, literal_name

_SCAN = re.compile(
    rb"[\s\x00]*(?:"
    rb"(?P<num>[-+0-9][0-9]*(?:\.[0-9]*)?|\.[0-9]*)"
    rb"|(?P<kw>[A-Za-z][^#/%\[\]()<>{}\s]*)"
    rb"|(?P<name>/(?:[^#/%\[\]()<>{}\s]|\#[0-9A-Fa-f]{0,2})*)"
    rb"|(?P<str>\([^()\\]*\))"
    rb"|(?P<paren>\()"
    rb"|(?P<hex><(?!<)[\s0-9A-Fa-f]*)"
    rb"|(?P<dopen><<)"
    rb"|(?P<dclose>>>?)"
    rb"|(?P<comment>%[^\r\n]*)"
    rb"|(?P<one>[^\s\x00])"
    rb")"
)
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{0,2})")
_ESCAPE_AT_END = re.compile(rb"#[0-9A-Fa-f]{0,2}\Z")
_STRING_STOP = re.compile(rb"[()\\]")
_SPACE = re.compile(rb"\s")
_ESCAPES = {
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("f"): 12,
    ord("r"): 13,
    ord("("): 40,
    ord(")"): 41,
    ord("\\"): 92,
}
_OCTAL = b"01234567"
_TRUE, _FALSE = b"true", b"false"
# Keywords that the caller must leave to pdfminer's parser (inline images).
_INLINE = frozenset({KWD(b"BI"), KWD(b"ID"), KWD(b"EI")})
# Bytes that leave pdfminer's tokenizer in a state with no text yet when a stream ends there;
# it then carries that state into the next stream, which a joined scan cannot reproduce.
_OPEN_AT_END = frozenset(b"/#<>(\\")


class _Fallback(Exception):
    pass


def content_objects(streams: list[bytes]) -> list[Any] | None:
    """The top-level objects of a page's content streams, in order, or None when only
    pdfminer's own parser reproduces its result."""
    for data in streams[:-1]:
        if data and data[-1] in _OPEN_AT_END:
            return None
    data = b"\n".join(streams)
    if b"\\\r" in data:  # pdfminer skips the LF of an escaped CRLF only inside one 4 KB buffer
        return None
    bounds = []
    at = 0
    for s in streams[:-1]:
        at += len(s)
        bounds.append(at)  # the joining newline's offset
        at += 1
    try:
        return _scan(data, bounds)
    except _Fallback:
        return None


# the groups of _SCAN, by number
_NUM, _KW, _NAME, _STR, _PAREN, _HEX, _DOPEN, _DCLOSE, _COMMENT, _ONE = range(1, 11)
# pdfminer's interned keywords and names by their bytes, as long as the memo is small
_KEYWORDS: dict[bytes, Any] = {_TRUE: True, _FALSE: False}
_NAMES: dict[bytes, Any] = {}
_MEMO_SIZE = 4096


def _keyword(token: bytes) -> Any:
    keyword = KWD(token)
    if keyword in _INLINE:
        raise _Fallback
    if len(_KEYWORDS) < _MEMO_SIZE:
        _KEYWORDS[token] = keyword
    return keyword


def _name(token: bytes, pos: int, end: int, bounds: list[int]) -> Any:
    raw = token[1:]
    if b"#" in raw:
        if (pos == end or pos in bounds) and _ESCAPE_AT_END.search(raw):
            # pdfminer's tokenizer is still inside the escape when the stream ends: at the
            # very end it drops the name, between two streams it runs on into the next
            raise _Fallback
        raw = _NAME_ESCAPE.sub(_name_byte, raw)
    try:
        name = LIT(raw.decode("utf-8"))
    except UnicodeDecodeError:
        name = LIT(raw)
    if len(_NAMES) < _MEMO_SIZE and b"#" not in token:
        _NAMES[token] = name
    return name


def _scan(data: bytes, bounds: list[int]) -> list[Any]:
    out: list[Any] = []
    stack: list[tuple[str, list[Any]]] = []  # open containers: their kind and items
    items = out
    append = out.append
    end = len(data)
    keywords = _KEYWORDS
    names = _NAMES
    pos = 0
    while pos < end:
        restart = False
        for m in _SCAN.finditer(data, pos):
            kind = m.lastindex
            if kind == _NUM:
                token = m[kind]
                try:
                    number = float(token) if b"." in token else int(token)
                except ValueError:  # a sign or a dot alone
                    continue
                append(number)
            elif kind == _KW:
                token = m[kind]
                found = keywords.get(token)
                append(_keyword(token) if found is None else found)
            elif kind == _NAME:
                token = m[kind]
                found = names.get(token)
                append(_name(token, m.end(), end, bounds) if found is None else found)
            elif kind == _STR:
                if bounds:
                    _whole(m.start(kind), m.end(), bounds)
                append(m[kind][1:-1])
            elif kind == _PAREN:
                start = m.start(kind)
                value, pos = _string(data, m.end())
                if bounds:
                    _whole(start, pos, bounds)
                append(value)
                restart = True  # the scan goes on after the string
                break
            elif kind == _HEX:
                if m.end() >= end:  # no byte ends it: pdfminer never completes the token
                    raise _Fallback
                if bounds:
                    _whole(m.start(kind), m.end(), bounds)
                append(_hex(m[kind]))
            elif kind == _DOPEN:
                stack.append(("d", items))
                items = []
                append = items.append
            elif kind == _DCLOSE:
                if len(m[kind]) == 2 and stack and stack[-1][0] == "d":
                    if len(items) % 2:
                        raise _Fallback  # pdfminer raises PSSyntaxError: let it
                    pairs = {
                        literal_name(items[k]): items[k + 1]
                        for k in range(0, len(items), 2)
                        if items[k + 1] is not None
                    }
                    items = stack.pop()[1]
                    append = items.append
                    append(pairs)
            elif kind == _ONE:
                token = m[kind]
                if token == b"[" or token == b"{":
                    stack.append(("a" if token == b"[" else "p", items))
                    items = []
                    append = items.append
                elif token == b"]" or token == b"}":
                    if stack and stack[-1][0] == ("a" if token == b"]" else "p"):
                        inner = items
                        items = stack.pop()[1]
                        append = items.append
                        append(inner)
                else:
                    append(KWD(token))
            # a comment gives nothing
        if not restart:
            break
    return out  # objects inside containers never closed are lost, as in pdfminer


def _hex(token: bytes) -> bytes:
    """A hex string's bytes (``<`` and its digits, spaces allowed; an odd last digit d is
    the byte d)."""
    digits = token[1:]
    if not len(digits) % 2:
        try:
            return binascii.unhexlify(digits)
        except binascii.Error:  # spaces between the digits
            pass
    digits = _SPACE.sub(b"", digits)
    if len(digits) % 2:
        return bytes.fromhex(digits[:-1].decode()) + bytes((int(digits[-1:], 16),))
    return bytes.fromhex(digits.decode())


def _name_byte(escape: re.Match[bytes]) -> bytes:
    """``#`` and one or two hex digits: that byte; ``#`` alone: nothing."""
    digits = escape.group(1)
    return bytes((int(digits, 16),)) if digits else b""


def _whole(start: int, stop: int, bounds: list[int]) -> None:
    """A string that spans the joint between two streams: pdfminer's result depends on it."""
    for b in bounds:
        if start < b < stop:
            raise _Fallback


def _string(data: bytes, pos: int) -> tuple[bytes, int]:
    """A literal string whose opening parenthesis ends at ``pos``: its bytes and the offset
    after its closing parenthesis."""
    out = bytearray()
    depth = 1
    size = len(data)
    while True:
        m = _STRING_STOP.search(data, pos)
        if m is None:
            raise _Fallback  # unterminated: pdfminer drops it at the end
        k = m.start()
        out += data[pos:k]
        c = data[k]
        if c == 40:  # (
            depth += 1
            out.append(40)
            pos = k + 1
        elif c == 41:  # )
            depth -= 1
            if depth == 0:
                return bytes(out), k + 1
            out.append(41)
            pos = k + 1
        else:  # a backslash
            if k + 1 >= size:
                raise _Fallback
            e = data[k + 1]
            if e in _OCTAL:
                n = 1
                while n < 3 and k + 1 + n < size and data[k + 1 + n] in _OCTAL:
                    n += 1
                value = int(data[k + 1 : k + 1 + n], 8)
                if value > 255:
                    raise _Fallback  # pdfminer fails an assertion here
                out.append(value)
                pos = k + 1 + n
            elif e in _ESCAPES:
                out.append(_ESCAPES[e])
                pos = k + 2
            else:  # an unknown escape, or a line continuation: both bytes are dropped
                pos = k + 2

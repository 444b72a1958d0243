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


def _scan(data: bytes, bounds: list[int]) -> list[Any]:
    out: list[Any] = []
    stack: list[tuple[str, list[Any]]] = []  # open containers: their kind and items
    items = out
    end = len(data)
    pos = 0
    match = _SCAN.match
    while True:
        m = match(data, pos)
        if m is None:  # only separators were left
            break
        kind = m.lastgroup
        pos = m.end()
        token = m.group(kind)  # type: ignore[arg-type]
        if kind == "num":
            try:
                number = float(token) if b"." in token else int(token)
            except ValueError:  # a sign or a dot alone
                continue
            items.append(number)
        elif kind == "kw":
            if token == _TRUE:
                items.append(True)
            elif token == _FALSE:
                items.append(False)
            else:
                keyword = KWD(token)
                if keyword in _INLINE:
                    raise _Fallback
                items.append(keyword)
        elif kind == "name":
            raw = token[1:]
            if b"#" in raw:
                if (pos == end or pos in bounds) and _ESCAPE_AT_END.search(raw):
                    # pdfminer's tokenizer is still inside the escape when the stream ends:
                    # at the very end it drops the name, between streams it runs on
                    raise _Fallback
                raw = _NAME_ESCAPE.sub(_name_byte, raw)
            try:
                items.append(LIT(raw.decode("utf-8")))
            except UnicodeDecodeError:
                items.append(LIT(raw))
        elif kind == "str":
            _whole(m.start(kind), pos, bounds)
            items.append(token[1:-1])
        elif kind == "paren":
            start = m.start(kind)
            value, pos = _string(data, pos)
            _whole(start, pos, bounds)
            items.append(value)
        elif kind == "hex":
            if pos >= end:  # no byte ends it: pdfminer never completes the token
                raise _Fallback
            _whole(m.start(kind), pos, bounds)
            digits = _SPACE.sub(b"", token[1:])
            if len(digits) % 2:
                items.append(bytes.fromhex(digits[:-1].decode()) + bytes((int(digits[-1:], 16),)))
            else:
                items.append(bytes.fromhex(digits.decode()))
        elif kind == "dopen":
            stack.append(("d", items))
            items = []
        elif kind == "dclose":
            if len(token) == 2 and stack and stack[-1][0] == "d":
                if len(items) % 2:
                    raise _Fallback  # pdfminer raises PSSyntaxError: let it
                pairs = {
                    literal_name(items[k]): items[k + 1]
                    for k in range(0, len(items), 2)
                    if items[k + 1] is not None
                }
                items = stack.pop()[1]
                items.append(pairs)
        elif kind == "one":
            if token == b"[":
                stack.append(("a", items))
                items = []
            elif token == b"{":
                stack.append(("p", items))
                items = []
            elif token == b"]" or token == b"}":
                if stack and stack[-1][0] == ("a" if token == b"]" else "p"):
                    inner = items
                    items = stack.pop()[1]
                    items.append(inner)
            else:
                items.append(KWD(token))
        # comments give nothing
    return out  # objects inside containers never closed are lost, as in pdfminer


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

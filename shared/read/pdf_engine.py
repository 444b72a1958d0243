"""pdfminer.six, driven page by page: the glyphs of each page grouped into text boxes and lines
in reading order, and the straight rules the page draws.

What a page reads as is pdfminer's (its interpreter, fonts and glyph geometry, and its layout
analysis with the default LAParams, text inside figures included), because that is what
groundgate 0.11.0 reads. The work is ours, arranged to cost less:

* content streams are tokenized by ``pdf_content`` (one regular-expression scan) and the
  operators dispatched from a table, instead of pdfminer's byte-at-a-time parser;
* a drawn character becomes a small ``Glyph`` (text, box, size), not pdfminer's ``LTChar``
  with its copies of the graphic state; the box is computed with pdfminer's arithmetic, in its
  order, so every coordinate is the same float;
* glyphs are grouped into lines and lines into boxes here, by pdfminer's rules (the same
  thresholds and the same iteration order), and boxes are put in reading order by pdfminer's
  hierarchical grouping;
* where pdfminer breaks a tie between two equally distant boxes by memory address (so the
  order could change from run to run), the tie goes to the box that came first on the page,
  then to the older group: the same result every time.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from cryptography.hazmat.primitives.ciphers import Cipher
from pdfminer import settings as pdfminer_settings
from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import LTChar, LTFigure, LTLayoutContainer, LTLine, LTRect
from pdfminer.pdfdocument import (
    PDFDocument,
    PDFStandardSecurityHandler,
    PDFStandardSecurityHandlerV4,
)
from pdfminer.pdffont import PDFUnicodeNotDefined
from pdfminer.pdfinterp import PDFInterpreterError, PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage
from pdfminer.pdftypes import stream_value
from pdfminer.psparser import PSKeyword, keyword_name
from pdfminer.utils import Plane, apply_matrix_rect

from .pdf_content import content_objects
from .pdf_grid import THIN

try:  # cryptography 43 and later
    from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4
except ImportError:  # pragma: no cover - older cryptography (pdfminer needs 36 or later)
    from cryptography.hazmat.primitives.ciphers.algorithms import ARC4  # type: ignore[no-redef]

Rect = tuple[float, float, float, float]

# pdfminer's LAParams defaults, which groundgate reads with (plus all_texts=True)
LINE_OVERLAP = 0.5
CHAR_MARGIN = 2.0
LINE_MARGIN = 0.5
WORD_MARGIN = 0.1
BOXES_FLOW = 0.5

_NUMBERS = (int, float)
CHECK_EVERY = 4096  # operators (or box pairs) between two looks at the deadline
# The reading order compares every pair of a page's text boxes (pdfminer's algorithm), so its
# memory grows with the square of their number: a page of more boxes (typically a chart or
# a map drawn as scattered glyphs; real pages have a few hundred at most) is refused.
MAX_BOXES = 2000


# -- decryption ----------------------------------------------------------------------------


def _rc4(key: bytes, data: bytes) -> bytes:
    """RC4 by OpenSSL (through ``cryptography``, a dependency of pdfminer's): pdfminer's own
    RC4 builds its output one byte at a time, in time quadratic in the stream's length."""
    return Cipher(ARC4(key), mode=None).decryptor().update(data)


class _RC4Streams:
    """The Standard security handler's per-object RC4 (PDF 1.7, 7.6.2, algorithm 1): the
    document key, the object and generation numbers (3 and 2 bytes, little-endian), MD5, then
    RC4 with the first n + 5 bytes of the digest (at most 16)."""

    key: bytes | None

    def decrypt_rc4(self, objid: int, genno: int, data: bytes) -> bytes:
        assert self.key is not None
        base = self.key + objid.to_bytes(4, "little")[:3] + genno.to_bytes(4, "little")[:2]
        return _rc4(hashlib.md5(base).digest()[: min(len(base), 16)], data)


class _Handler(_RC4Streams, PDFStandardSecurityHandler):
    pass


class _HandlerV4(_RC4Streams, PDFStandardSecurityHandlerV4):
    pass


class Document(PDFDocument):
    """pdfminer's document, decrypting RC4 streams with OpenSSL (the same bytes, faster)."""

    security_handler_registry: ClassVar[dict[int, type[PDFStandardSecurityHandler]]] = {
        **PDFDocument.security_handler_registry,
        1: _Handler,
        2: _Handler,
        4: _HandlerV4,
    }


class TooManyBoxes(ValueError):
    """A page with more text boxes than the reading order allows (MAX_BOXES)."""


class Glyph:
    """One drawn character: its text (possibly several code points, or ``(cid:N)``), its box
    in pdfminer's layout space (origin bottom-left) and its size (the glyph's height, or its
    width in a vertical font)."""

    __slots__ = ("height", "size", "text", "width", "x0", "x1", "y0", "y1")

    def __init__(self, text: str, x0: float, y0: float, x1: float, y1: float, size: float):
        self.text = text
        self.x0 = x0
        self.y0 = y0
        self.x1 = x1
        self.y1 = y1
        self.width = x1 - x0
        self.height = y1 - y0
        self.size = size


# A text line: glyphs, and None where pdfminer puts a space or the line end (a word break).
GlyphLine = list["Glyph | None"]


@dataclass
class PageGlyphs:
    visible: Rect  # the CropBox in layout coordinates
    boxes: list[list[GlyphLine]]  # text boxes in reading order, each its lines top to bottom
    rules: list[Rect]  # thin lines and rectangles (stroked rectangles give four sides)


def visible_area(page: PDFPage) -> Rect:
    """The page's CropBox in the coordinates pdfminer lays glyphs out in (the page rotated and
    its MediaBox origin moved to 0, 0)."""
    x0, y0, x1, y1 = page.mediabox
    turn = page.rotate % 360
    if turn == 90:
        ctm = (0, -1, 1, 0, -y0, x1)
    elif turn == 180:
        ctm = (-1, 0, 0, -1, x1, y1)
    elif turn == 270:
        ctm = (0, 1, -1, 0, y1, -x0)
    else:
        ctm = (1, 0, 0, 1, -x0, -y0)
    a, b, c, d = apply_matrix_rect(ctm, page.cropbox)
    return min(a, c), min(b, d), max(a, c), max(b, d)


class PageReader:
    """Reads the pages of one document, one at a time, sharing fonts between pages.
    ``check`` is called every few thousand operators (to enforce a deadline)."""

    def __init__(self, check: Callable[[], None] | None = None) -> None:
        self.resources = PDFResourceManager(caching=True)
        self.device = _GlyphDevice(self.resources)
        self.interpreter = _Interpreter(self.resources, self.device)
        self.interpreter.check = check or _no_check

    def read(self, page: PDFPage) -> PageGlyphs:
        self.interpreter.process_page(page)
        layout = self.device.get_result()
        boxes: list[list[GlyphLine]] = []
        rules: list[Rect] = []
        _collect(layout, boxes, rules, self.interpreter.check)
        return PageGlyphs(visible_area(page), boxes, rules)


def _no_check() -> None:
    return None


# -- interpreting content ------------------------------------------------------------------


class _Interpreter(PDFPageInterpreter):
    """pdfminer's interpreter (its operators, graphic and text state) with a faster loop."""

    # keyword -> (the do_ function, its argument count), or None for an unknown operator
    _operators: ClassVar[dict[PSKeyword, tuple[Callable[..., None], int] | None]] = {}

    def __init__(self, resources: PDFResourceManager, device: Any) -> None:
        super().__init__(resources, device)
        self.check: Callable[[], None] = _no_check

    def dup(self) -> _Interpreter:
        twin = super().dup()  # for a form: its own interpreter, the same deadline
        twin.check = self.check  # type: ignore[attr-defined]
        return twin  # type: ignore[return-value]

    def pop(self, n: int) -> list[Any]:
        # in place (pdfminer rebinds the list), so that execute may hold on to the stack
        if n == 0:
            return []
        stack = self.argstack
        taken = stack[-n:]
        del stack[-n:]
        return taken

    def execute(self, streams: Any) -> None:
        chosen = []
        self.stream_ids.clear()
        for obj in streams:
            stream = stream_value(obj)
            # pdfminer skips streams with no object number, and any stream already being
            # executed higher up (a form that draws itself)
            if stream.objid is None or stream.objid in self.parent_stream_ids:
                continue
            chosen.append(stream)
            self.stream_ids.add(stream.objid)
        objects = content_objects([s.get_data() for s in chosen])
        if objects is None:  # a construct only pdfminer's parser reads as pdfminer does
            super().execute(streams)
            return
        operators = self._operators
        stack = self.argstack
        countdown = CHECK_EVERY
        for obj in objects:
            if obj.__class__ is not PSKeyword:
                stack.append(obj)
                continue
            countdown -= 1
            if not countdown:
                countdown = CHECK_EVERY
                self.check()
            try:
                entry = operators[obj]
            except KeyError:
                entry = operators[obj] = self._operator(obj)
            if entry is None:
                continue
            func, n = entry
            if n:
                args = stack[-n:]
                del stack[-n:]
                if len(args) == n:
                    func(self, *args)
            else:
                func(self)

    def _operator(self, keyword: PSKeyword) -> tuple[Callable[..., None], int] | None:
        """The method that runs an operator, named as pdfminer names it (``T*`` is
        ``do_T_a``, ``'`` is ``do__q`` and ``"`` is ``do__w``)."""
        name = keyword_name(keyword)
        method = "do_" + name.replace("*", "_a").replace('"', "_w").replace("'", "_q")
        func = getattr(type(self), method, None)
        if func is None:
            if pdfminer_settings.STRICT:
                raise PDFInterpreterError(f"Unknown operator: {name!r}")
            return None
        return func, func.__code__.co_argcount - 1

    def do_Td(self, tx: Any, ty: Any) -> None:
        # pdfminer's, without its casting helpers for plain numbers
        if tx.__class__ in _NUMBERS and ty.__class__ in _NUMBERS:
            tx_, ty_ = float(tx), float(ty)
            state = self.textstate
            a, b, c, d, e, f = state.matrix
            state.matrix = (a, b, c, d, tx_ * a + ty_ * c + e, tx_ * b + ty_ * d + f)
            state.linematrix = (0, 0)
        else:
            super().do_Td(tx, ty)

    def do_TJ(self, seq: Any) -> None:
        # the device keeps no graphic state, so there is nothing to copy for it
        if self.textstate.font is None:
            return
        self.device.render_string(self.textstate, seq, self.graphicstate.ncs, self.graphicstate)


class _GlyphDevice(PDFPageAggregator):
    """pdfminer's layout device (pages, figures, paths), drawing text as ``Glyph`` objects."""

    def __init__(self, resources: PDFResourceManager) -> None:
        super().__init__(resources, laparams=None)
        # per font: whether it is vertical, whether multibyte, its descent, and per code its
        # text and width (each asked of pdfminer once)
        self._fonts: dict[Any, tuple[bool, bool, float, dict[int, tuple[str, float]]]] = {}

    def _font(self, font: Any) -> tuple[bool, bool, float, dict[int, tuple[str, float]]]:
        facts = self._fonts.get(font)
        if facts is None:
            facts = (font.is_vertical(), font.is_multibyte(), font.get_descent(), {})
            self._fonts[font] = facts
        return facts

    def _char(self, font: Any, cid: int, known: dict[int, tuple[str, float]]) -> tuple[str, float]:
        try:
            text = font.to_unichr(cid)
        except PDFUnicodeNotDefined:
            text = self.handle_undefined_char(font, cid)
        found = known[cid] = (text, font.char_width(cid))
        return found

    def render_string(self, textstate: Any, seq: Any, ncs: Any, graphicstate: Any) -> None:
        font = textstate.font
        facts = self._fonts.get(font)
        vertical, multibyte, descent, known = self._font(font) if facts is None else facts
        if vertical:  # rare: pdfminer's own path, then its LTChars made Glyphs
            super().render_string(textstate, seq, ncs, graphicstate)
            return
        # mult_matrix(textstate.matrix, self.ctm), written out
        a1, b1, c1, d1, e1, f1 = textstate.matrix
        a0, b0, c0, d0, e0, f0 = self.ctm
        a = a0 * a1 + c0 * b1
        b = b0 * a1 + d0 * b1
        c = a0 * c1 + c0 * d1
        d = b0 * c1 + d0 * d1
        e = a0 * e1 + c0 * f1 + e0
        f = b0 * e1 + d0 * f1 + f0
        fontsize = textstate.fontsize
        scaling = textstate.scaling * 0.01
        charspace = textstate.charspace * scaling
        wordspace = 0 if multibyte else textstate.wordspace * scaling
        dxscale = 0.001 * fontsize * scaling
        lo = descent * fontsize + textstate.rise
        hi = lo + fontsize
        # The glyph box (0, lo)-(adv, hi), moved to (x, y) in text space, through the matrix:
        # pdfminer's expressions term by term (translate_matrix, then apply_matrix_pt at each
        # corner, then min and max in its argument order), so that every float is the same.
        # The terms that do not depend on the glyph are computed once per string.
        a_0, b_0 = a * 0, b * 0
        cl, dl, ch, dh = c * lo, d * lo, c * hi, d * hi
        x_lb0, y_lb0, x_lt0, y_lt0 = a_0 + cl, b_0 + dl, a_0 + ch, b_0 + dh
        glyphs = self.cur_item._objs
        char = self._char
        x, y = textstate.linematrix
        yc, yd = y * c, y * d
        spaced = False
        for obj in seq:
            if isinstance(obj, (int, float)):
                x -= obj * dxscale
                spaced = True
            elif isinstance(obj, bytes):
                for cid in font.decode(obj):
                    if spaced:
                        x += charspace
                    found = known.get(cid)
                    text, width = char(font, cid, known) if found is None else found
                    adv = width * fontsize * scaling
                    te = x * a + yc + e
                    tf = x * b + yd + f
                    ax, bx = a * adv, b * adv
                    x_lb, y_lb = x_lb0 + te, y_lb0 + tf
                    x_rb, y_rb = ax + cl + te, bx + dl + tf
                    x_rt, y_rt = ax + ch + te, bx + dh + tf
                    x_lt, y_lt = x_lt0 + te, y_lt0 + tf
                    # in pdfminer's argument order (min and max keep the first of equals)
                    x0 = min(x_lb, x_lt, x_rb, x_rt)
                    y0 = min(y_lb, y_rb, y_rt, y_lt)
                    x1 = max(x_lb, x_lt, x_rb, x_rt)
                    y1 = max(y_lb, y_rb, y_rt, y_lt)
                    glyphs.append(Glyph(text, x0, y0, x1, y1, y1 - y0))
                    x += adv
                    if cid == 32 and wordspace:
                        x += wordspace
                    spaced = True
        textstate.linematrix = (x, y)

    def render_char(self, *args: Any) -> float:
        # only vertical fonts come here (through pdfminer's render_string)
        before = len(self.cur_item._objs)
        adv = super().render_char(*args)
        char = self.cur_item._objs[before]
        if isinstance(char, LTChar):
            self.cur_item._objs[before] = Glyph(
                char.get_text(), char.x0, char.y0, char.x1, char.y1, char.size
            )
        return adv


# -- layout: glyphs into lines, lines into boxes, boxes in reading order ---------------------


class _Line:
    """A horizontal text line being built: glyphs left to right, None for each gap wider
    than WORD_MARGIN times the glyph's size (pdfminer's inserted space)."""

    __slots__ = ("items", "last_x1", "x0", "x1", "y0", "y1")

    def __init__(self) -> None:
        self.items: GlyphLine = []
        self.last_x1 = float("inf")
        self.x0 = self.y0 = float("inf")
        self.x1 = self.y1 = float("-inf")

    def add(self, g: Glyph) -> None:
        margin = WORD_MARGIN * max(g.width, g.height)
        if self.last_x1 < g.x0 - margin:
            self.items.append(None)
        self.last_x1 = g.x1
        self.items.append(g)
        # min() and max() of the box so far and the glyph, keeping the first of equals
        if g.x0 < self.x0:
            self.x0 = g.x0
        if g.y0 < self.y0:
            self.y0 = g.y0
        if g.x1 > self.x1:
            self.x1 = g.x1
        if g.y1 > self.y1:
            self.y1 = g.y1

    def blank(self) -> bool:
        if self.x1 - self.x0 <= 0 or self.y1 - self.y0 <= 0:
            return True
        return "".join(" " if g is None else g.text for g in self.items).isspace()


class _Box:
    """A text box: lines, and the box around them."""

    __slots__ = ("lines", "x0", "x1", "y0", "y1")

    def __init__(self) -> None:
        self.lines: list[_Line] = []
        self.x0 = self.y0 = float("inf")
        self.x1 = self.y1 = float("-inf")

    def add(self, line: _Line) -> None:
        self.lines.append(line)
        self.x0 = min(self.x0, line.x0)
        self.y0 = min(self.y0, line.y0)
        self.x1 = max(self.x1, line.x1)
        self.y1 = max(self.y1, line.y1)


def _lines(glyphs: list[Glyph]) -> list[_Line]:
    """Consecutive glyphs that overlap vertically by more than LINE_OVERLAP of the smaller
    height and are closer than CHAR_MARGIN times the wider glyph form a line (pdfminer's
    ``group_objects``, horizontal writing)."""
    out: list[_Line] = []
    line: _Line | None = None
    prev: Glyph | None = None
    for g in glyphs:
        if prev is not None:
            # pdfminer's is_voverlap, voverlap and hdistance of prev and g
            joined = False
            if g.y0 <= prev.y1 and prev.y0 <= g.y1:
                overlap = min(abs(prev.y0 - g.y1), abs(prev.y1 - g.y0))
                if min(prev.height, g.height) * LINE_OVERLAP < overlap:
                    if g.x0 <= prev.x1 and prev.x0 <= g.x1:
                        gap = 0.0
                    else:
                        gap = min(abs(prev.x0 - g.x1), abs(prev.x1 - g.x0))
                    joined = gap < max(prev.width, g.width) * CHAR_MARGIN
            if joined and line is not None:
                line.add(g)
            elif line is not None:
                out.append(line)
                line = None
            elif joined:
                line = _Line()
                line.add(prev)
                line.add(g)
            else:
                single = _Line()
                single.add(prev)
                out.append(single)
        prev = g
    if line is None:
        line = _Line()
        assert prev is not None
        line.add(prev)
    out.append(line)
    return out


def _neighbours(line: _Line, plane: Plane) -> list[_Line]:
    """Lines near ``line`` (within LINE_MARGIN of its height, above or below) of about its
    height and aligned with it left, right or centre (pdfminer's ``find_neighbors``)."""
    d = LINE_MARGIN * (line.y1 - line.y0)
    height = line.y1 - line.y0
    centre = (line.x0 + line.x1) / 2
    return [
        other
        for other in plane.find((line.x0, line.y0 - d, line.x1, line.y1 + d))
        if abs((other.y1 - other.y0) - height) <= d
        and (
            abs(other.x0 - line.x0) <= d
            or abs(other.x1 - line.x1) <= d
            or abs((other.x0 + other.x1) / 2 - centre) <= d
        )
    ]


def _boxes(bbox: Rect, lines: list[_Line]) -> list[_Box]:
    """Lines and their neighbours, transitively, form boxes (pdfminer's ``group_textlines``)."""
    plane: Plane = Plane(bbox)
    plane.extend(lines)
    box_of: dict[_Line, _Box] = {}
    for line in lines:
        members = [line]
        for other in _neighbours(line, plane):
            members.append(other)
            if other in box_of:
                members.extend(box_of.pop(other).lines)
        box = _Box()
        seen: set[_Line] = set()
        for member in members:
            if member not in seen:
                seen.add(member)
                box.add(member)
                box_of[member] = box
    out: list[_Box] = []
    done: set[int] = set()
    for line in lines:
        box = box_of.get(line)
        if box is None or id(box) in done:
            continue
        done.add(id(box))
        if box.x1 - box.x0 > 0 and box.y1 - box.y0 > 0:
            out.append(box)
    return out


class _Node:
    """A text box or a group of two nodes, with its bounding box and its creation order."""

    __slots__ = ("box", "kids", "order", "x0", "x1", "y0", "y1")

    def __init__(self, order: int, x0: float, y0: float, x1: float, y1: float, box=None, kids=()):
        self.order = order
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.box = box
        self.kids = kids


def _gap_area(a: Any, b: Any) -> float:
    """The area of the rectangle around both, less both areas (negative when they overlap)."""
    x0 = min(a.x0, b.x0)
    y0 = min(a.y0, b.y0)
    x1 = max(a.x1, b.x1)
    y1 = max(a.y1, b.y1)
    return (x1 - x0) * (y1 - y0) - (a.x1 - a.x0) * (a.y1 - a.y0) - (b.x1 - b.x0) * (b.y1 - b.y0)


def _reading_order(bbox: Rect, boxes: list[_Box], check: Callable[[], None]) -> list[_Box]:
    """pdfminer's hierarchical grouping of text boxes (closest pair first; a pair with another
    node between them waits until no closer pair is left), then the boxes in the order of the
    group tree, each group's two members left-top first. Ties break by creation order."""
    if not boxes:
        return []
    if len(boxes) > MAX_BOXES:
        raise TooManyBoxes(
            f"{len(boxes):,} text boxes on one page, more than the {MAX_BOXES:,} the reader puts "
            "in reading order"
        )
    nodes = [_Node(n, b.x0, b.y0, b.x1, b.y1, box=b) for n, b in enumerate(boxes)]
    plane: Plane = Plane(bbox)
    plane.extend(nodes)
    heap = [
        (False, _gap_area(nodes[i], nodes[j]), i, j)
        for i in range(len(nodes))
        for j in range(i + 1, len(nodes))
    ]
    heapq.heapify(heap)
    merged: set[int] = set()
    countdown = CHECK_EVERY
    while heap:
        countdown -= 1
        if not countdown:
            countdown = CHECK_EVERY
            check()
        blocked, gap, i, j = heapq.heappop(heap)
        if i in merged or j in merged:
            continue
        a, b = nodes[i], nodes[j]
        x0, y0 = min(a.x0, b.x0), min(a.y0, b.y0)
        x1, y1 = max(a.x1, b.x1), max(a.y1, b.y1)
        if not blocked and any(o is not a and o is not b for o in plane.find((x0, y0, x1, y1))):
            heapq.heappush(heap, (True, gap, i, j))
            continue
        k = len(nodes)
        group = _Node(k, x0, y0, x1, y1, kids=(a, b))
        plane.remove(a)
        plane.remove(b)
        merged.update((i, j))
        nodes.append(group)
        for other in plane:
            heapq.heappush(heap, (False, _gap_area(group, other), k, other.order))
        plane.add(group)
    ordered: list[_Box] = []
    for top in plane:
        _walk(top, ordered)
    return ordered


def _walk(node: _Node, out: list[_Box]) -> None:
    if node.box is not None:
        out.append(node.box)
        return
    kids = sorted(
        node.kids, key=lambda n: (1 - BOXES_FLOW) * n.x0 - (1 + BOXES_FLOW) * (n.y0 + n.y1)
    )
    for kid in kids:
        _walk(kid, out)


def _collect(
    container: LTLayoutContainer,
    boxes: list[list[GlyphLine]],
    rules: list[Rect],
    check: Callable[[], None],
) -> None:
    """Lay out one page or figure: its own text boxes first, then each figure's, in the order
    the figures were drawn; rules from anywhere in it."""
    glyphs: list[Glyph] = []
    figures = []
    for obj in container:
        if obj.__class__ is Glyph:
            glyphs.append(obj)
        elif isinstance(obj, LTFigure):
            figures.append(obj)
        elif isinstance(obj, LTRect):
            x0, y0, x1, y1 = obj.bbox
            if min(x1 - x0, y1 - y0) <= THIN:
                rules.append((x0, y0, x1, y1))
            elif obj.stroke:
                rules.extend(
                    ((x0, y0, x1, y0), (x0, y1, x1, y1), (x0, y0, x0, y1), (x1, y0, x1, y1))
                )
        elif isinstance(obj, LTLine):
            rules.append(obj.bbox)
    if glyphs:
        lines = [line for line in _lines(glyphs) if not line.blank()]
        for box in _reading_order(container.bbox, _boxes(container.bbox, lines), check):
            ordered = sorted(box.lines, key=lambda line: -line.y1)
            boxes.append([[*line.items, None] for line in ordered])
    for figure in figures:
        _collect(figure, boxes, rules, check)

"""pdfminer.six, driven page by page: the glyphs of each page grouped into text boxes and lines
in reading order, and the straight rules the page draws.

The grouping is pdfminer's (LAParams defaults, text inside figures included), so that the words
and their order are those groundgate 0.11.0 reads. One thing is ours: pdfminer orders two text
boxes at the same distance by their memory addresses, which differ from run to run; here the
tie goes to the box that came first on the page (then to the older group), every time.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import (
    LAParams,
    LTAnno,
    LTChar,
    LTFigure,
    LTLayoutContainer,
    LTLine,
    LTRect,
    LTTextLineHorizontal,
)
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage
from pdfminer.utils import Plane, apply_matrix_rect

from .pdf_grid import THIN

LAPARAMS = LAParams(all_texts=True)
FLOW = 0.5  # LAParams.boxes_flow: how much the vertical position weighs in box order

Rect = tuple[float, float, float, float]


class Glyph:
    """One drawn character: its text (possibly several code points, or ``(cid:N)``), its box
    in PDF user space (origin bottom-left) and its size (the font size on the page)."""

    __slots__ = ("size", "text", "x0", "x1", "y0", "y1")

    def __init__(self, text: str, x0: float, y0: float, x1: float, y1: float, size: float):
        self.text = text
        self.x0 = x0
        self.y0 = y0
        self.x1 = x1
        self.y1 = y1
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
    """Reads pages of one document, one at a time, sharing fonts between pages."""

    def __init__(self) -> None:
        self.resources = PDFResourceManager(caching=True)
        self.device = PDFPageAggregator(self.resources, laparams=None)
        self.interpreter = PDFPageInterpreter(self.resources, self.device)

    def read(self, page: PDFPage) -> PageGlyphs:
        self.interpreter.process_page(page)
        layout = self.device.get_result()
        boxes: list[list[GlyphLine]] = []
        rules: list[Rect] = []
        _collect(layout, boxes, rules)
        return PageGlyphs(visible_area(page), boxes, rules)


def _collect(container: LTLayoutContainer, boxes: list, rules: list[Rect]) -> None:
    """Lay out one page or figure: its own text boxes first, then each figure's, in the order
    the figures were drawn; rules from anywhere in it."""
    glyphs = []
    figures = []
    for obj in container:
        if isinstance(obj, LTChar):
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
        boxes.extend(_text_boxes(container, glyphs))
    for fig in figures:
        _collect(fig, boxes, rules)


def _text_boxes(container: LTLayoutContainer, glyphs: list[LTChar]) -> list[list[GlyphLine]]:
    lines = [line for line in container.group_objects(LAPARAMS, glyphs) if not line.is_empty()]
    boxes = list(container.group_textlines(LAPARAMS, lines))
    ordered = _reading_order(container.bbox, boxes)
    out = []
    for box in ordered:
        box_lines = sorted(box, key=lambda ln: -ln.y1)
        out.append([_glyph_line(line) for line in box_lines])
    return out


def _glyph_line(line: LTTextLineHorizontal) -> GlyphLine:
    out: GlyphLine = []
    for obj in line:
        if isinstance(obj, LTAnno):
            out.append(None)
        else:
            out.append(Glyph(obj.get_text(), obj.x0, obj.y0, obj.x1, obj.y1, obj.size))
    out.append(None)  # the end of the line
    return out


class _Node:
    """A text box or a group of two nodes, with its bounding box."""

    __slots__ = ("box", "kids", "order", "x0", "x1", "y0", "y1")

    def __init__(self, order: int, x0: float, y0: float, x1: float, y1: float, box=None, kids=()):
        self.order = order  # creation order: the tie-break between equal distances
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.box = box
        self.kids = kids


def _gap_area(a: _Node, b: _Node) -> float:
    """The area of the rectangle around both, less both areas (negative when they overlap)."""
    x0 = min(a.x0, b.x0)
    y0 = min(a.y0, b.y0)
    x1 = max(a.x1, b.x1)
    y1 = max(a.y1, b.y1)
    return (x1 - x0) * (y1 - y0) - (a.x1 - a.x0) * (a.y1 - a.y0) - (b.x1 - b.x0) * (b.y1 - b.y0)


def _reading_order(bbox: Rect, boxes: list) -> list:
    """pdfminer's hierarchical grouping of text boxes (closest pair first, a pair with another
    node between them later), then boxes in the order of the group tree, each group's members
    sorted left-top first. Ties break by creation order: boxes in page order, then groups."""
    if not boxes:
        return []
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
    while heap:
        blocked, gap, i, j = heapq.heappop(heap)
        if i in merged or j in merged:
            continue
        a, b = nodes[i], nodes[j]
        if not blocked:
            x0, y0 = min(a.x0, b.x0), min(a.y0, b.y0)
            x1, y1 = max(a.x1, b.x1), max(a.y1, b.y1)
            if any(o is not a and o is not b for o in plane.find((x0, y0, x1, y1))):
                heapq.heappush(heap, (True, gap, i, j))
                continue
        k = len(nodes)
        group = _Node(
            k, min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1), kids=(a, b)
        )
        plane.remove(a)
        plane.remove(b)
        merged.update((i, j))
        nodes.append(group)
        for other in plane:
            heapq.heappush(heap, (False, _gap_area(group, other), k, other.order))
        plane.add(group)
    ordered: list = []
    for top in plane:
        _walk(top, ordered)
    return ordered


def _walk(node: _Node, out: list) -> None:
    if node.box is not None:
        out.append(node.box)
        return
    kids = sorted(node.kids, key=lambda n: (1 - FLOW) * n.x0 - (1 + FLOW) * (n.y0 + n.y1))
    for kid in kids:
        _walk(kid, out)

"""HTML and XML turned into text, as groundgate 0.11.0's ``read`` turns them.

Both formats feed one :class:`Flow`, which lays text runs out in reading order:

- block elements end the line (``div``, ``li``, ``tr``, ``br``...) or the paragraph (``p``,
  headings, ``table``, ``section``...), and runs of whitespace collapse to one space, as a
  browser shows them; ``pre`` keeps its whitespace;
- the cells of a table row are separated by one tab;
- a superscript is marked ``^`` and a subscript ``_`` (``10<sup>9</sup>`` reads ``10^9``); a digit
  right after one is set apart by a space (``10<sup>9</sup>5`` reads ``10^9 5``);
- ``script``, ``style``, ``noscript`` and ``template`` are dropped, and in HTML so is the head and
  any element hidden by its ``hidden`` attribute or an inline ``display:none`` or
  ``visibility:hidden`` style (stylesheets are not evaluated).

HTML goes through the standard library's ``html.parser``. XML goes through expat (``pyexpat``),
element by element, with a fence around the DTD: no external entity, external DTD or parameter
entity is ever fetched (a reference to one is an error), and the text that internal entities can
expand to is bounded, so an entity bomb fails in milliseconds instead of filling memory.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from xml.parsers import expat

from groundswell.shared.read.guard import check_deadline

# How many line breaks an element's start and end owe to the text that follows: 2 ends a
# paragraph (a blank line), 1 a line.
BREAKS: dict[str, int] = dict.fromkeys(
    ("p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "blockquote", "pre",
     "section", "article", "header", "footer", "nav", "aside", "main", "figure", "hr", "title",
     "paragraph", "caption", "list"),
    2,
) | dict.fromkeys(
    ("div", "li", "tr", "dt", "dd", "br", "figcaption", "address", "item", "thead", "tbody"), 1
)  # fmt: skip
CELLS = frozenset({"td", "th"})
MARKS = {"sup": "^", "sub": "_"}
DROPPED = frozenset({"script", "style", "noscript", "template"})
HEAD_ONLY = frozenset(
    {"head", "title", "meta", "link", "style", "script", "base", "noscript", "template"}
)
EMPTY_ELEMENTS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip

# Reader option ``xml_breaks="uslm-1"``: where groundgate's reading of USLM (U.S. bills and laws)
# fuses words across elements ("A BILLMaking", "TITLE IDEPARTMENT", "130 STAT. 1009and"). These
# elements also end a line...
USLM_1_LINES = dict.fromkeys(
    ("doctitle", "officialtitle", "enactingformula", "action", "sidenote", "page"), 1
)
# ...and these set the words on either side apart by a space, when the text on neither side has
# one there, unless the word before ends with a dash or an opening bracket or quote (".—This"
# is how the printed law reads) or the word after starts with punctuation.
USLM_1_GAPS = frozenset(
    {"num", "heading", "subheading", "actiondescription", "type", "docnumber", "citableas",
     "citableasshorttitle", "publisher", "creator", "format", "language", "rights",
     "processedby", "processeddate", "congress", "session", "publicprivate", "docstage",
     "currentchamber", "relateddocument", "currentthroughpubliclaw", "containsshorttitle",
     "property", "approveddate"}
)  # fmt: skip
XML_BREAKS = {"uslm-1": ({**BREAKS, **USLM_1_LINES}, USLM_1_GAPS)}  # option value -> rules
_NO_GAP_AFTER = "—–-([{“‘\"'/"
_GAP_BEFORE = "“‘\"'"

_SPACE_RUN = re.compile(r"\s+")
_INVISIBLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_EVERY = 2048  # markup events between two looks at the reading's deadline


class Flow:
    """Text runs, block breaks and cell gaps, written out as lines."""

    def __init__(self, breaks: dict[str, int] = BREAKS, gaps: frozenset[str] = frozenset()) -> None:
        self._breaks = breaks
        self._gaps = gaps  # elements that keep the words around them apart (reader options)
        self._parts: list[str] = []  # never an empty string
        self._owed = 0  # line breaks due before the next run
        self._cell_ended = False  # a cell closed and no block or run has come since
        self._marked = False  # a superscript or subscript closed just before
        self._gap = False  # a gap element began or ended since the last run

    def open(self, tag: str) -> None:
        if tag in self._gaps:
            self._gap = True
        if tag in self._breaks:
            self._break(self._breaks[tag])
        elif tag in CELLS:
            if self._cell_ended:
                self._parts.append("\t")
                self._cell_ended = False
        elif tag in MARKS:
            self.add(MARKS[tag], verbatim=True)

    def close(self, tag: str) -> None:
        if tag in self._gaps:
            self._gap = True
        if tag in self._breaks:
            self._break(self._breaks[tag])
        elif tag in CELLS:
            self._cell_ended = True
        elif tag in MARKS:
            self._marked = True

    def _break(self, lines: int) -> None:
        if self._parts and lines > self._owed:
            self._owed = lines
        self._cell_ended = False

    def add(self, run: str, verbatim: bool = False) -> None:
        """One run of character data; ``verbatim`` keeps its whitespace (``pre``, markers)."""
        if not verbatim:
            # Every run of whitespace becomes one space (str.split and str.isspace know the
            # same whitespace as the regular expression \s, and are faster on short runs).
            words = run.split()
            if not words:  # only whitespace (or nothing)
                if not run or self._cell_ended or self._after_space():
                    return  # nothing, the whitespace between two cells, or a second space
                run = " "
            else:
                joined = " ".join(words)
                if run[-1].isspace():
                    joined += " "
                if run[0].isspace() and not self._after_space():
                    joined = " " + joined
                run = joined
        elif self._cell_ended and not run.strip():
            return  # the whitespace between two cells
        elif not run:
            return
        if self._gap:
            if self._parts and not self._owed and self._apart(run):
                run = " " + run
            self._gap = False
        if self._marked:
            if run[0].isdigit():
                run = " " + run
            self._marked = False
        if self._owed:
            self._parts.append("\n" * self._owed)
            self._owed = 0
        self._parts.append(run)

    def _apart(self, run: str) -> bool:
        """Whether a gap element between the last run and ``run`` needs a space."""
        last, first = self._parts[-1][-1], run[0]
        return (
            not last.isspace()
            and last not in _NO_GAP_AFTER
            and (first.isalnum() or first in _GAP_BEFORE)
        )

    def _after_space(self) -> bool:
        """Whether a run starting now starts a line or follows a space or a tab."""
        return not self._parts or bool(self._owed) or self._parts[-1][-1] in "\n\t "

    def text(self) -> str:
        lines = "".join(self._parts).split("\n")
        return "\n".join(line.rstrip(" \t") for line in lines).strip("\n")


def _invisible(attrs: list[tuple[str, str | None]]) -> bool:
    for name, value in attrs:  # a loop, not any(): most elements have one attribute or none
        if name == "hidden" or (name == "style" and value and _INVISIBLE.search(value)):
            return True
    return False


class _HTMLReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.flow = Flow()
        self._in_head = False
        self._hidden: list[str] = []  # the open elements inside a hidden one, outermost first
        self._dropping = 0  # open script, style... elements
        self._pre = 0
        self._events = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._events += 1
        if self._events % _EVERY == 0:
            check_deadline()
        if tag == "head":
            self._in_head = True
            return
        if self._in_head and tag not in HEAD_ONLY:
            self._in_head = False  # the body began without </head>
        if self._hidden or (tag not in EMPTY_ELEMENTS and _invisible(attrs)):
            if tag not in EMPTY_ELEMENTS:
                self._hidden.append(tag)
            return
        if tag in DROPPED:
            self._dropping += 1
        elif tag == "pre":
            self._pre += 1
        if not self._in_head:
            self.flow.open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <p/>: only a break, and only where text would show
        if tag in BREAKS and not (self._hidden or self._in_head or _invisible(attrs)):
            self.flow.open(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._in_head = False
            return
        if self._hidden:
            if tag in self._hidden:  # close it and whatever was left open inside it
                last = len(self._hidden) - 1 - self._hidden[::-1].index(tag)
                del self._hidden[last:]
            return
        if tag in DROPPED:
            self._dropping = max(0, self._dropping - 1)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        if not self._in_head:
            self.flow.close(tag)

    def handle_data(self, data: str) -> None:
        if not (self._dropping or self._in_head or self._hidden):
            self.flow.add(data, verbatim=self._pre > 0)


def html_text(source: str) -> str:
    """The text of an HTML document (already decoded, line ends already ``\\n``)."""
    reader = _HTMLReader()
    reader.feed(source)  # in one piece: the parser's data runs depend on how it is fed
    reader.close()
    return reader.flow.text()


class XMLError(ValueError):
    """The XML is not well-formed (``str`` is expat's message with line and column)."""


class UnsafeXML(ValueError):
    """The XML asks for something a reader must not do: fetch an external entity, or expand
    internal entities beyond the limit."""


def expansion_limit(size: int) -> int:
    """Characters of text an XML document of ``size`` bytes may hold once its entities are
    expanded. Without entities the text never exceeds the byte count."""
    return 10 * size + 1_000_000


class _XMLReader:
    def __init__(self, size: int, breaks: str | None = None) -> None:
        self.flow = Flow(*XML_BREAKS[breaks]) if breaks else Flow()
        self._run: list[str] = []  # character data since the last tag (comments do not split it)
        self._dropping = 0  # depth inside a dropped element
        self._events = _EVERY  # elements until the next look at the deadline
        self._tags: dict[str, str] = {}  # element name as expat gives it -> its tag
        self._limit = expansion_limit(size)
        self._chars = 0
        self._entities: dict[str, int] = {}  # internal general entity -> expanded length
        self._external: dict[str, str] = {}  # external general entity -> its system id
        self.parser = p = expat.ParserCreate(namespace_separator="}")
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        # Character data in pieces of up to 8 KiB rather than line by line: fewer calls, and
        # the expansion limit is still checked at least every 8 KiB.
        p.buffer_text = True
        p.ordered_attributes = True  # attributes are not read: a list is cheaper than a dict
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._data
        p.EntityDeclHandler = self._entity
        # What expat does not expand reaches the default handler: references to undeclared
        # entities (allowed where a DTD is external) and to external ones.
        p.DefaultHandlerExpand = self._default

    def _flush(self) -> None:
        run = self._run
        if run:
            if not self._dropping:
                self.flow.add(run[0] if len(run) == 1 else "".join(run))
            run.clear()

    def _tag(self, name: str) -> str:
        """The local name of an element, lower case (``ns}Name`` -> ``name``), remembered."""
        tag = self._tags[name] = name.rsplit("}", 1)[-1].lower()
        return tag

    def _start(self, name: str, _attrs: object) -> None:
        self._events -= 1
        if not self._events:
            self._events = _EVERY
            check_deadline()
        if self._run:
            self._flush()
        if self._dropping:
            self._dropping += 1
            return
        tag = self._tags.get(name) or self._tag(name)
        if tag in DROPPED:
            self._dropping = 1
        else:
            self.flow.open(tag)

    def _end(self, name: str) -> None:
        if self._run:
            self._flush()
        if self._dropping:
            self._dropping -= 1
        else:
            self.flow.close(self._tags.get(name) or self._tag(name))

    def _data(self, data: str) -> None:
        self._chars += len(data)
        if self._chars > self._limit:
            raise UnsafeXML(
                f"its entities expand to more than {self._limit:,} characters of text "
                "(an entity expansion bomb?)"
            )
        self._run.append(data)

    def _entity(
        self,
        name: str,
        is_parameter: int,
        value: str | None,
        _base: str | None,
        system_id: str | None,
        _public_id: str | None,
        notation: str | None,
    ) -> None:
        if is_parameter or notation:
            return  # never expanded into the text
        if value is None:
            self._external.setdefault(name, system_id or "")
            return
        size = len(value)
        for ref in re.finditer(r"&([^;&\s]+);", value):
            size += self._entities.get(ref.group(1), 0) - len(ref.group(0))
        if size > self._limit:
            raise UnsafeXML(
                f"the entity &{name}; expands to {size:,} characters, more than the limit of "
                f"{self._limit:,} (an entity expansion bomb?)"
            )
        self._entities.setdefault(name, size)

    def _default(self, data: str) -> None:
        if len(data) < 2 or not data.startswith("&"):
            return  # the XML declaration, the DOCTYPE, whitespace outside the root...
        name = data[1:-1]
        if name in self._external:
            raise UnsafeXML(
                f"the external entity &{name}; ({self._external[name]}) is not read: "
                "a reader never fetches files or URLs named by a document"
            )
        p = self.parser
        raise XMLError(
            f"undefined entity {data}: line {p.CurrentLineNumber}, column {p.CurrentColumnNumber}"
        )

    def read(self, data: bytes) -> str:
        try:
            self.parser.Parse(data, True)
        except expat.ExpatError as exc:
            raise XMLError(str(exc)) from None
        return self.flow.text()


def xml_text(data: bytes, breaks: str | None = None) -> str:
    """The text of an XML document, from its bytes (expat reads the encoding it declares).
    ``breaks`` names extra break rules (a key of XML_BREAKS); None reads as groundgate does.

    Raises :class:`XMLError` when it is not well-formed and :class:`UnsafeXML` when it needs an
    external entity or expands its entities too far."""
    return _XMLReader(len(data), breaks).read(data)

"""Small PDFs written byte by byte for the PDF reader's tests: pages of text in the standard
Helvetica font (no embedded font: pdfminer knows its widths), optional CropBox and rotation,
and the Standard security handler (RC4, revision 2 or 3) for encrypted files.

Nothing here reads a PDF; the tests compare what groundswell and groundgate read from these.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field

# The padding string of the Standard security handler (PDF 1.7, 7.6.3.3).
PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def rc4(key: bytes, data: bytes) -> bytes:
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


@dataclass
class Page:
    content: bytes | list[bytes]  # the content stream (a list: several streams, in order)
    media: tuple[float, float, float, float] = (0, 0, 612, 792)
    crop: tuple[float, float, float, float] | None = None
    rotate: int = 0
    extra: dict[str, bytes] = field(default_factory=dict)  # more page dictionary entries
    forms: dict[str, bytes] = field(default_factory=dict)  # form XObjects: name -> content


@dataclass
class Encryption:
    user: bytes = b""  # the user password ("" opens the file without one)
    owner: bytes = b"owner"
    revision: int = 2  # 2: 40-bit key; 3: 128-bit key
    permissions: int = -4
    file_id: bytes = b"0123456789abcdef"

    @property
    def length(self) -> int:
        return 5 if self.revision == 2 else 16

    def owner_entry(self) -> bytes:
        digest = hashlib.md5((self.owner + PAD)[:32]).digest()
        if self.revision >= 3:
            for _ in range(50):
                digest = hashlib.md5(digest[: self.length]).digest()
        key = digest[: self.length]
        value = rc4(key, (self.user + PAD)[:32])
        if self.revision >= 3:
            for i in range(1, 20):
                value = rc4(bytes(b ^ i for b in key), value)
        return value

    def key(self) -> bytes:
        h = hashlib.md5((self.user + PAD)[:32])
        h.update(self.owner_entry())
        h.update(self.permissions.to_bytes(4, "little", signed=True))
        h.update(self.file_id)
        digest = h.digest()
        if self.revision >= 3:
            for _ in range(50):
                digest = hashlib.md5(digest[: self.length]).digest()
        return digest[: self.length]

    def user_entry(self) -> bytes:
        key = self.key()
        if self.revision == 2:
            return rc4(key, PAD)
        value = rc4(key, hashlib.md5(PAD + self.file_id).digest())
        for i in range(1, 20):
            value = rc4(bytes(b ^ i for b in key), value)
        return value + b"\0" * 16

    def object_key(self, number: int) -> bytes:
        base = self.key() + number.to_bytes(3, "little") + (0).to_bytes(2, "little")
        return hashlib.md5(base).digest()[: min(len(self.key()) + 5, 16)]


def _number(v: float) -> bytes:
    return (str(int(v)) if float(v).is_integer() else repr(float(v))).encode()


def _rect(r: tuple[float, float, float, float]) -> bytes:
    return b"[" + b" ".join(_number(v) for v in r) + b"]"


def build(
    pages: list[Page | bytes],
    *,
    encryption: Encryption | None = None,
    compress: bool = False,
    font2: bytes | None = None,
) -> bytes:
    """A complete PDF file: catalog, page tree, two fonts (/F1 Helvetica; /F2 the same with
    ligatures at codes 128 and 129, or the font dictionary ``font2``), the pages."""
    pages = [p if isinstance(p, Page) else Page(p) for p in pages]
    objects: dict[int, bytes] = {}
    streams: dict[int, bytes] = {}
    stream_entries: dict[int, bytes] = {}  # more stream dictionary entries
    kids = []
    number = 5
    for page in pages:
        parts = page.content if isinstance(page.content, list) else [page.content]
        refs = []
        for part in parts:
            streams[number + 1 + len(refs)] = part
            refs.append(b"%d 0 R" % (number + 1 + len(refs)))
        kids.append(b"%d 0 R" % number)
        contents = refs[0] if not isinstance(page.content, list) else b"[" + b" ".join(refs) + b"]"
        fonts = b"/Font << /F1 3 0 R /F2 4 0 R >>"
        forms = []
        for name, content in page.forms.items():
            at = number + 1 + len(parts) + len(forms)
            streams[at] = content
            stream_entries[at] = (
                b" /Type /XObject /Subtype /Form /BBox " + _rect(page.media)
                + b" /Resources << " + fonts + b" >>"
            )  # fmt: skip
            forms.append(b"/" + name.encode() + b" %d 0 R" % at)
        xobjects = b" /XObject << " + b" ".join(forms) + b" >>" if forms else b""
        entries = [
            b"/Type /Page /Parent 2 0 R",
            b"/MediaBox " + _rect(page.media),
            b"/Resources << " + fonts + xobjects + b" >>",
            b"/Contents " + contents,
        ]
        if page.crop is not None:
            entries.append(b"/CropBox " + _rect(page.crop))
        if page.rotate:
            entries.append(b"/Rotate %d" % page.rotate)
        entries.extend(b"/" + k.encode() + b" " + v for k, v in page.extra.items())
        objects[number] = b"<< " + b" ".join(entries) + b" >>"
        number += 1 + len(parts) + len(forms)
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % len(pages)
    objects[3] = (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    # codes 128 and 129 draw the fi and fl ligature glyphs (unless font2 gives another font)
    objects[4] = font2 or (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding"
        b" << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [128 /fi /fl] >> >>"
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    last = max([*objects, *streams])
    encrypt_ref = b""
    if encryption is not None:
        last += 1
        objects[last] = b"<< /Filter /Standard /V %d /R %d /Length %d /O <%s> /U <%s> /P %d >>" % (
            1 if encryption.revision == 2 else 2,
            encryption.revision,
            8 * encryption.length,
            encryption.owner_entry().hex().encode(),
            encryption.user_entry().hex().encode(),
            encryption.permissions,
        )
        encrypt_ref = b" /Encrypt %d 0 R" % last
    for number in range(1, last + 1):
        offsets[number] = len(out)
        if number in streams:
            data = streams[number]
            filters = b""
            if compress:
                data = zlib.compress(data)
                filters = b" /Filter /FlateDecode"
            if encryption is not None:
                data = rc4(encryption.object_key(number), data)
            entries = stream_entries.get(number, b"")
            out += b"%d 0 obj\n<< /Length %d%s%s >>\nstream\n" % (
                number,
                len(data),
                filters,
                entries,
            )
            out += data + b"\nendstream\nendobj\n"
        else:
            out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (last + 1)
    for number in range(1, last + 1):
        out += b"%010d 00000 n \n" % offsets[number]
    file_id = (encryption.file_id if encryption else b"0123456789abcdef").hex().encode()
    out += b"trailer\n<< /Size %d /Root 1 0 R%s /ID [<%s> <%s>] >>\n" % (
        last + 1,
        encrypt_ref,
        file_id,
        file_id,
    )
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def text(x: float, y: float, s: str, size: float = 12, font: str = "F1") -> bytes:
    """A content-stream snippet that draws ``s`` (Latin-1) at (x, y)."""
    escaped = s.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(")
    escaped = escaped.replace(b")", b"\\)")
    return b"BT /%s %s Tf %s %s Td (%s) Tj ET\n" % (
        font.encode(),
        _number(size),
        _number(x),
        _number(y),
        escaped,
    )

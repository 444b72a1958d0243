"""Small source files that exercise the readers' edge cases, as file name -> bytes.

``SAME`` are read the same way by groundswell and groundgate 0.11.0 (the differential tests
compare text, warnings and exit status). ``DIFFERENT`` are where groundswell deliberately
refuses what groundgate reads or reports differently: each says why.
"""

from __future__ import annotations

from pathlib import Path

import groundgate.read

SPL = """<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet href="https://www.accessdata.fda.gov/spl/stylesheet/spl.xsl" type="text/xsl"?>
<document xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <id root="1b2c3d4e"/>
  <title>These highlights do not include all the information needed to use
    <content styleCode="bold">EXAMPLEDRUG</content> safely.</title>
  <component><structuredBody><component>
    <section ID="s1"><code code="34067-9" codeSystem="2.16.840.1.113883.6.1"/>
      <title>1 INDICATIONS &amp; USAGE</title>
      <text><paragraph>Exampledrug is indicated for adults &#8805; 18 years.</paragraph>
        <list listType="unordered"><item>Dose: 10 mg/m<sup>2</sup> daily</item>
          <item>Clearance 1.5 &#215; 10<sup>9</sup>/L</item></list>
        <table><thead><tr><th>Adverse reaction</th><th>Placebo</th><th>Drug</th></tr></thead>
          <tbody><tr><td>Nausea</td><td>3%</td><td>12%</td></tr>
            <tr><td>H<sub>2</sub>O retention</td><td/><td>1%</td></tr></tbody></table>
      </text>
    </section>
  </component></structuredBody></component>
</document>
"""

HIDDEN = """<!DOCTYPE html><html><head><title>Form 10-Q</title>
<meta charset="utf-8"><style>p {color: red}</style><script>var x = "<p>no</p>";</script>
</head><body>
<div style="display:none"><ix:header><ix:hidden>dei:AmendmentFlag false</ix:hidden></ix:header>
<p>still hidden <b>deeper</b></div>
<p hidden>hidden paragraph</p><p>shown <span style="Visibility : Hidden">not this</span>here</p>
<div style="color: red; DISPLAY: NONE">gone</div><br hidden>after br
<p>an <img hidden src="x.png"> image<hr hidden></p>
<noscript>enable JavaScript</noscript><template><p>template</p></template>
</body></html>
"""

TABLE = """<table>
  <tr><th>Item</th> <th>2024</th>
      <th>2025</th></tr>
  <tr><td> Revenue </td><td>$ 1,234</td><td><span>$</span> <span>1,500</span></td></tr>
  <tr><td>Net (loss)</td><td></td><td>(12)</td></tr>
  <tr><td colspan="3">Note <sup>(1)</sup> restated</td></tr>
</table>
<p>After the table.</p><td>stray</td> <td>cells</td>
"""

SCRIPTS = (
    "<p>10<sup>9</sup> cells; 10<sup>9</sup>5 (a digit after); E = mc<sup>2</sup>;"
    " CO<sub>2</sub>; x<sub>i</sub><sup>2</sup>; footnote<sup>a</sup>.</p>"
    "<p>10<sup>9</sup></p><p>5 on a new paragraph</p><p>2<sup>10</sup>\u00b2</p>"
)

ENTITIES = (
    "<p>AT&amp;T &nbsp;&nbsp; caf&eacute; &#169; &#x1F600; &notanentity; &amp &lt;b&gt;"
    " fish &amp chips &#0; &#xD800; &copy2024</p>"
    "<p>A\u030a\u0301 ﬁ \u00a0non\u2009breaking</p>"
)

PRE = "<p>before</p><pre>  line 1\n    line 2\n\n  line 4  </pre><p>after  text</p>"

HEADLESS = (
    "<html><title>Body title?</title><meta name=x><body><p>One<br>two<br/>three</p>"
    "<ul><li>a<li>b</ul><dl><dt>term<dd>definition</dl><p/>x<div/>y"
    "<h1>Heading</h1><blockquote>quoted</blockquote><figure><figcaption>cap</figcaption></figure>"
    "<!-- a comment --><![CDATA[html cdata]]><?php echo 1 ?></body></html>"
)

SAME: dict[str, bytes] = {
    "hidden.html": HIDDEN.encode(),
    "table.htm": TABLE.encode(),
    "scripts.HTML": SCRIPTS.encode(),
    "entities.xhtml": ENTITIES.encode(),
    "pre.html": PRE.encode(),
    "headless.html": HEADLESS.encode(),
    "crlf-bom.html": b"\xef\xbb\xbf<p>first\r\nline</p>\r\n<pre>a\r\nb\rc</pre>",
    "only-space.html": b"<p> \n </p><script>x</script>",
    "spl.xml": SPL.encode(),
    "cdata.xml": (
        b"<r><p>one <![CDATA[<b>two</b> & three]]> four</p><!-- c --><p>fi<!-- x -->ve"
        b"<?pi data?>six</p><script>dropped</script>tail<p>x</p></r>"
    ),
    "entities.Xml": (
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY co "Acme &#38;amp; Co">'
        b'<!ENTITY both "&co; and &co;">]><r><p>&co; &both; &#169; &lt;&gt;</p></r>'
    ),
    "ns.xml": (
        b'<u:doc xmlns:u="urn:x" xmlns="urn:y"><u:Title>Upper</u:Title><Paragraph>p'
        b"</Paragraph><TD>c1</TD><TD>c2</TD><x:style xmlns:x='urn:z'>gone</x:style>end</u:doc>"
    ),
    "latin1.xml": b'<?xml version="1.0" encoding="ISO-8859-1"?><r>caf\xe9 na\xefve</r>',
    "cp1252.xml": b'<?xml version="1.0" encoding="windows-1252"?><r>\x93quoted\x94 \x80 5</r>',
    "utf16.xml": "\ufeff<r><p>sixteen</p> bits</r>".encode("utf-16-le"),
    "utf16be.XML": '<?xml version="1.0" encoding="UTF-16"?><r>big end</r>'.encode("utf-16"),
    "crlf-bom.xml": b"\xef\xbb\xbf<r>\r\n<p>a\r\nb</p>\r<p>c</p></r>\r\n",
    "nfd.xml": "<r>e\u0301t\u00e9 A\u030a</r>".encode(),
    "external-dtd.xml": (  # a declared but unused external DTD is never fetched
        b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "http://127.0.0.1:9/r.dtd"><r>fine</r>'
    ),
    "broken.xml": b"<r><p>unclosed</r>",
    "two-roots.xml": b"<r/><s/>",
    "undefined-entity.xml": (b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "r.dtd"><r>a &nbsp; b</r>'),
    "notes.txt": "\ufeffLine one\r\nline two\rline three\n".encode(),
    "nfd.md": "e\u0301t\u00e9\n# Title\n".encode(),
    "plain.TEXT": b"upper-case ending\n",
    "space.markdown": b"   \n\t\n",
    "latin1.txt": b"caf\xe9",
    "latin1.html": b"<p>caf\xe9</p>",
    "report.docx": b"PK\x03\x04 not read",
    "noending": b"no ending",
}

DIFFERENT: dict[str, tuple[bytes, str]] = {
    "empty.html": (b"", "a zero-byte file is an error, not an empty text"),
    "empty.txt": (b"", "a zero-byte file is an error, not an empty text"),
    "empty.xml": (b"", "zero bytes: the error says so"),
    "pdf.html": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF named .html is refused"),
    "pdf.txt": (b"%PDF-1.4 1 0 obj", "a PDF named .txt is refused (groundgate reads it as text)"),
    "html.pdf": (b"<html><body><p>hello</p></body></html>", "the error says it is HTML"),
    "zip.xml": (b"PK\x03\x04\x14\x00", "the error says it is a ZIP archive"),
}


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def groundgate_read(path: Path) -> tuple[str, tuple[str, ...]] | str:
    """groundgate's text and warnings for a file, or its error message."""
    try:
        doc = groundgate.read.read(path)
    except (ValueError, OSError) as exc:
        return str(exc)
    return doc.text, doc.warnings

"""Producer formats: the files an extraction pipeline writes, read as a corpus's records.

A corpus is a source of records (DESIGN.md, "Where the next capabilities go"). A record is
what one document gives a run: its text (or a file to read), its claims with offsets, its
candidates, and its producer (format, producer version, model, prompt or schema version).
The layout folder or prefix (``corpus.py``) is one source; this package holds the others
that are files a producer wrote: LangExtract JSONL, provider citations, document-AI
results, and a declared mapping for anything else. A JSONL file is cut into line-aligned
byte ranges that units read where they lie, so planning never downloads it whole.

Offsets are converted here, once, at the source: from the producer's unit (code points,
UTF-8 bytes, UTF-16 code units) to the engines'. Everything after the record is unchanged:
receipts, reuse, summaries, review, the ledger.

File names, as in every domain: ``models.py`` (the record and the producer, pydantic at the
boundary), one module a format (``langextract.py``, ``citations.py``, ``docai.py``,
``mapping.py``), ``offsets.py`` (the unit conversion). It builds on ``corpus``, ``storage``,
``text`` and ``settings`` and is read by planning and the units; it imports no run
machinery, no reader of a run and no API.
"""

"""OCR: a reader of scanned pages, beside ``pdf.py``, ``markup.py`` and ``text.py``.

OCR is a reader (DESIGN.md, "Where the next capabilities go"): it turns a page image, or a PDF
page without a text layer (``Reading.pages_without_text``), into the same text and layout a
PDF reading writes (NFC text; groundgate_layout with the page and box of every word), and is
content-addressed like the other readers: the engine and its settings are part of its
``reader_id``, so a stored reading is reused only when the same OCR made it. It builds on
``models.py`` (Reading, ReadError) and ``guard.py`` (time and size limits) as the other
readers do; ``__init__.py`` picks it by format or by a page that has no text.
"""

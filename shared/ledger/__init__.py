"""The claims ledger (issue 16): what a corpus says, who says it, and where.

A claim is a subject–relation–object with a modality (one of six), an asserter and evidence
located in its source document (offsets found here, never taken from the extractor). The
ledger keeps claims, their evidence, the entities they name and the closed relation
vocabularies they were checked against, in PostgreSQL in production and in an embedded
SQLite file by default, behind the same code.

- ``vocab``: vocabularies (xrad-compatible YAML): closed relation sets with subject and
  object types, and the check of one claim against them;
- ``locate``: a quote found in its document, in xrad's order (exact, case-insensitive,
  whitespace-insensitive; never fuzzy), with offsets into the original text;
- ``importer``: xrad-style claim files (``relations/<doc_id>.jsonl``) read into claims and
  refusals, each refusal naming file, line and field;
- ``models`` and ``migrations``: the SQLAlchemy tables and their Alembic migrations;
- ``store``: opening a ledger (migrating it), bulk writes (COPY on PostgreSQL), counts.
"""

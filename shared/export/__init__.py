"""The columnar export (issue 34): a finished run's certificates and decisions as Parquet.

- ``models``: the tables' schemas and version, the layout of the files, the manifest;
- ``service``: writing a run's tables from its index and receipts in streaming steps;
- ``query``: DuckDB over the exported files (a local folder or s3://).

docs/export.md documents the schema.
"""

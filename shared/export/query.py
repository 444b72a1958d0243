"""``groundswell query``: DuckDB over exported runs, a local folder or s3://bucket/prefix.

Two views, ``certificates`` and ``decisions``, over every part file under the root, with the
Hive partitions as columns ``policy`` and ``run``. A local folder is read by DuckDB itself;
an S3 root through a pyarrow dataset (DuckDB scans it lazily, pushing projections and
filters down), so no DuckDB extension has to be downloaded.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from groundswell.shared.export.models import TABLES, arrow_schema

if TYPE_CHECKING:
    from groundswell.shared.settings import Settings


class QueryError(ValueError):
    """A query DuckDB refused (the message is DuckDB's), or a root that cannot be read."""


def _s3_filesystem(settings: Settings) -> Any:
    from pyarrow import fs

    secret = settings.s3_secret_access_key
    options: dict[str, Any] = {"region": settings.s3_region}
    if settings.s3_endpoint_url:
        scheme, _, host = settings.s3_endpoint_url.partition("://")
        options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    if settings.s3_access_key_id and secret is not None:
        options.update(access_key=settings.s3_access_key_id, secret_key=secret.get_secret_value())
    return fs.S3FileSystem(**options)


def _dataset(root: str, table: str, settings: Settings) -> Any:
    """The pyarrow dataset of one table under ``root``; an empty table when none is there."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from pyarrow import fs

    schema = arrow_schema(table)
    partitioning = ds.partitioning(
        pa.schema([("policy", pa.string()), ("run", pa.string())]), flavor="hive"
    )
    if root.startswith("s3://"):
        filesystem: Any = _s3_filesystem(settings)
        base = f"{root[5:].rstrip('/')}/{table}"
    else:
        filesystem = fs.LocalFileSystem()
        base = os.path.join(os.path.abspath(root.removeprefix("file://")), table)
    try:
        info = filesystem.get_file_info(base)
        if info.type == fs.FileType.NotFound:
            return pa.table({f.name: pa.array([], f.type) for f in schema}, schema=schema)
        return ds.dataset(base, filesystem=filesystem, format="parquet", partitioning=partitioning)
    except OSError as exc:
        raise QueryError(f"cannot read the export at {root}: {exc}") from None


def connect(root: str, settings: Settings) -> Any:
    """A DuckDB connection with the views ``certificates`` and ``decisions`` over ``root``."""
    import duckdb

    con = duckdb.connect()
    for table in TABLES:
        con.register(table, _dataset(root, table, settings))
    return con


def run_query(root: str, sql: str, settings: Settings) -> tuple[list[str], list[tuple]]:
    """Column names and rows of ``sql`` over the export at ``root``."""
    import duckdb

    con = connect(root, settings)
    try:
        result = con.execute(sql)
        columns = [d[0] for d in result.description or ()]
        return columns, result.fetchall()
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip()) from None
    finally:
        con.close()

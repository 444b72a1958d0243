"""open_store picks the backend from the URL; the S3 one (and boto3) only for s3://."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys, tempfile
from groundswell.shared.storage import open_store
store = open_store(tempfile.mkdtemp())
store.put("a", b"x")
print(type(store).__name__, "boto3" in sys.modules)
store = open_store("s3://bucket/prefix")
print(type(store).__name__, "boto3" in sys.modules)
"""


def test_boto3_is_imported_only_when_an_s3_location_is_opened() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["LocalStore False", "S3Store True"]

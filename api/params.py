"""What a route accepts as an id or a cursor, checked at the boundary before anything is
listed or read (issue 25, item 5): a run id and a policy name must have the form the
server makes (else 404: no such run or policy can exist), a cursor must decode to the form
its route made (else 400 ``invalid cursor``). Every route takes its ids and cursors from here."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Annotated, Any

from fastapi import HTTPException, Query, status
from pydantic import TypeAdapter, ValidationError

from groundswell.shared.policies import POLICY_NAME

# ``new_run_id``: 20261129T215000Z-1f43f9a1c (older ids had a shorter suffix).
RUN_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{3,32}$")
# Cursors are base64url of a small JSON value: longer text is no cursor the API made.
CURSOR_MAX = 4000
Cursor = Annotated[
    str | None,
    Query(max_length=CURSOR_MAX, description="The previous page's next_cursor."),
]


def run_id_or_404(run_id: str) -> str:
    """``run_id`` when it has the form of a run id; else 404 (no such run can exist)."""
    if not RUN_ID.fullmatch(run_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id[:80]!r}")
    return run_id


def policy_name_or_404(name: str) -> str:
    """``name`` when it has the form of a policy name; else 404, before any listing."""
    if not POLICY_NAME.fullmatch(name):
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no policy {name[:80]!r}: a policy name is 1 to 64 lowercase letters, digits, "
            "'_' or '-', starting with a letter",
        )
    return name


def decode_cursor(cursor: str, form: TypeAdapter[Any]) -> Any:
    """The value of a base64url JSON cursor, validated (strictly) as ``form``; 400
    ``invalid cursor`` for anything else: bad base64 or JSON, another shape, huge numbers."""
    invalid = HTTPException(status.HTTP_400_BAD_REQUEST, "invalid cursor")
    if len(cursor) > CURSOR_MAX:
        raise invalid
    try:
        data = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return form.validate_python(json.loads(data), strict=True)
    except (ValueError, binascii.Error, UnicodeDecodeError, ValidationError, RecursionError):
        raise invalid from None

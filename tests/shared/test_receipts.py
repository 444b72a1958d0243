"""Unit receipts: sealed over canonical JSON, and refused when their content was changed."""

from __future__ import annotations

import pytest

from groundswell.shared.canonical import canonical_json, json_sha256
from groundswell.shared.receipts import RECEIPT_FORMAT, ReceiptError, open_receipt, seal


def test_seal_is_the_canonical_body_with_its_digest():
    body = {"kind": "verify", "records": [{"é": [1.5, None], "a": "x\n"}], "zz": {"k": 1e21}}
    data, digest = seal(body)
    expected = {**body, "format": RECEIPT_FORMAT}
    assert digest == json_sha256(expected)
    assert data == canonical_json({**expected, "receipt_sha256": digest})
    assert open_receipt(data, "k")["receipt_sha256"] == digest
    assert seal({**body, "receipt_sha256": "stale"}) == (data, digest)


def test_a_changed_receipt_is_refused():
    data, _ = seal({"kind": "admit", "value": "7000"})
    with pytest.raises(ReceiptError, match="does not match its content"):
        open_receipt(data.replace(b"7000", b"8000"), "receipts/admit/x.json")
    with pytest.raises(ReceiptError, match="not a JSON receipt"):
        open_receipt(b"{", "k")

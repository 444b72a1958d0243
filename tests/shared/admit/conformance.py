"""Reading groundgate's conformance suite and checking one vector against the engine.

Used by ``test_conformance.py``, and runnable to print the counts by layer for the README:

    .venv/bin/python -m tests.shared.admit.conformance
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from groundswell.shared.admit import PacketError, admit_packet, digest
from groundswell.shared.admit.rederive import check_receipt
from groundswell.shared.settings import get_settings

HERE = Path(__file__).resolve().parent
EXPECTED_FAILURES = HERE / "conformance_expected_failures.txt"


def conformance_dir() -> Path:
    return get_settings().shared_corpus.parent / "reference" / "groundgate" / "conformance"


def vector_files() -> list[Path]:
    return sorted((conformance_dir() / "vectors").glob("*.json"))


def invalid_files() -> list[Path]:
    return sorted((conformance_dir() / "invalid").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def layers() -> dict[str, str]:
    """Vector name -> layer (core, intermediate, advanced), from conformance/LAYERS.md."""
    out = {}
    for line in (conformance_dir() / "LAYERS.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 6 and re.fullmatch(r"`[^`]+`", cells[2]):
            out[cells[2].strip("`")] = cells[5]
    return out


def expected_failures() -> set[str]:
    names = set()
    for line in EXPECTED_FAILURES.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(line)
    return names


def oracle_receipt(vector: dict[str, Any]) -> dict[str, Any]:
    """groundgate 0.11.0's receipt for the vector (a dev-only test oracle)."""
    import groundgate

    return groundgate.admit(
        vector["document"],
        vector["schema"],
        vector["candidates"],
        vector.get("policy"),
        None,
        vector.get("judgments"),
        references=vector.get("references"),
        document_source=vector.get("document_source"),
        packs=vector.get("packs") or (),
    ).to_dict()


def problems(vector: dict[str, Any], *, oracle: bool = True) -> list[str]:
    """Every way the engine's receipt differs from the vector's expectations (SPEC's
    conformance rule), from re-derivation, and (with ``oracle``) from groundgate's receipt."""
    try:
        receipt = admit_packet(vector)
    except PacketError as exc:
        return [f"refused a valid packet: {exc}"]
    out: list[str] = []
    by_sha: dict[str, list[dict[str, Any]]] = {}
    for d in receipt["decisions"]:
        by_sha.setdefault(d["candidate_sha256"], []).append(d)
    expected = vector["expected"]
    if len(receipt["decisions"]) != len(expected["decisions"]):
        out.append("the number of decisions differs")
    for i, (cand, want) in enumerate(
        zip(vector["candidates"], expected["decisions"], strict=False)
    ):
        got = by_sha[digest("candidate", cand)].pop(0)
        label = f"candidate {i} ({cand.get('id') if isinstance(cand, dict) else cand!r})"
        if (got["outcome"], got["codes"]) != (want["outcome"], want["codes"]):
            out.append(
                f"{label}: {got['outcome']} {got['codes']}, want {want['outcome']} {want['codes']}"
            )
        if "missing" in want and got["missing"] != want["missing"]:
            out.append(f"{label}: missing {got['missing']}, want {want['missing']}")
        if "parts" in want:
            parts = [{"role": p["role"], "passed": p["passed"]} for p in got["parts"]]
            if parts != want["parts"]:
                out.append(f"{label}: parts {parts}, want {want['parts']}")
        if "evidence_units" in want and got.get("evidence_units") != want["evidence_units"]:
            out.append(f"{label}: evidence_units {got.get('evidence_units')}")
    if receipt["coverage"] != expected["coverage"]:
        out.append(f"coverage {receipt['coverage']}, want {expected['coverage']}")
    if receipt.get("relations") != expected.get("relations"):
        out.append(f"relations {receipt.get('relations')}, want {expected.get('relations')}")
    rederived = check_receipt(
        receipt,
        vector["document"],
        vector["schema"],
        vector["candidates"],
        vector.get("policy"),
        document_source=vector.get("document_source"),
        references=vector.get("references"),
        judgments=vector.get("judgments"),
        packs=vector.get("packs"),
    )
    out += [f"re-derivation: {p}" for p in rederived]
    if oracle and not out:
        theirs = oracle_receipt(vector)
        if receipt != theirs:
            keys = [k for k in theirs if receipt.get(k) != theirs[k]]
            out.append(f"receipt differs from groundgate's in {keys}")
    return out


def refused(vector: dict[str, Any]) -> bool:
    try:
        admit_packet(vector)
    except PacketError:
        return True
    return False


def main() -> None:
    by_layer = layers()
    counts: dict[str, list[int]] = {"core": [0, 0], "intermediate": [0, 0], "advanced": [0, 0]}
    failing = []
    for path in vector_files():
        vector = load(path)
        layer = by_layer.get(vector["name"], "advanced")
        counts[layer][1] += 1
        if problems(vector):
            failing.append(f"{vector['name']} [{layer}]")
        else:
            counts[layer][0] += 1
    invalid = [refused(load(p)) for p in invalid_files()]
    total = sum(c[0] for c in counts.values()) + sum(invalid)
    for layer, (ok, n) in counts.items():
        print(f"{layer:13} {ok:3} / {n}")
    print(f"{'invalid':13} {sum(invalid):3} / {len(invalid)}")
    print(f"{'total':13} {total:3} / {len(invalid) + sum(c[1] for c in counts.values())}")
    for name in failing:
        print("failing:", name)


if __name__ == "__main__":
    main()

"""Vendors the JSON schemas tests/deploy/test_k8s.py validates the rendered manifests against.

Reads two archives fetched from package registries and writes this folder's schema files
(README.md here says where they come from and how to fetch them):

    python deploy/k8s/schemas/vendor.py kubernetes_validate-1.37.0-py3-none-any.whl \\
        kubernetes-models-keda-0.3.2.tgz

Kubernetes: the strict schemas (no field the API does not define) of the kinds the manifests
use, and of their shared definitions only those these kinds reach. KEDA: the ScaledObject
schema as the npm package carries it, a JSON literal in a JavaScript module, written out as
JSON unchanged.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KUBERNETES = "v1.35.0"
KINDS = (
    "namespace-v1",
    "configmap-v1",
    "secret-v1",
    "service-v1",
    "deployment-apps-v1",
    "statefulset-apps-v1",
    "poddisruptionbudget-policy-v1",
    "ingress-networking-v1",
)
KEDA_MODULE = "package/keda.sh/v1alpha1/ScaledObject.js"
REF = re.compile(r"#/\$defs/([^\"']+)")


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def vendor_kubernetes(wheel: Path) -> None:
    root = f"kubernetes_validate/kubernetes-json-schema/{KUBERNETES}-local-strict/"
    out = HERE / f"kubernetes-{KUBERNETES}-strict"
    with zipfile.ZipFile(wheel) as archive:
        kinds = {kind: json.loads(archive.read(f"{root}{kind}.json")) for kind in KINDS}
        definitions = json.loads(archive.read(f"{root}_definitions.json"))
    wanted: set[str] = set()
    todo = [name for schema in kinds.values() for name in REF.findall(json.dumps(schema))]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(REF.findall(json.dumps(definitions["$defs"][name])))
    pruned = dict(definitions, **{"$defs": {n: definitions["$defs"][n] for n in sorted(wanted)}})
    for kind, schema in kinds.items():
        write_json(out / f"{kind}.json", schema)
    write_json(out / "_definitions.json", pruned)


def vendor_keda(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(KEDA_MODULE)
        assert member is not None, KEDA_MODULE
        source = member.read().decode("utf-8")
    start = source.index("const schema = ") + len("const schema = ")
    end = source.index("\n};\n", start) + 2
    write_json(
        HERE / "keda-2.10.1" / "scaledobject-keda.sh-v1alpha1.json", json.loads(source[start:end])
    )


if __name__ == "__main__":
    vendor_kubernetes(Path(sys.argv[1]))
    vendor_keda(Path(sys.argv[2]))

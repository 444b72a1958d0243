"""Repair: a near-miss quotation replaced by its source's own text, annotated, or refused with
the stage that refused it; and calibrated thresholds for the replacement.

The names below load with the module that defines them, when first asked for: ``verify``
reads gtrex policy files through ``repair.gtrex_policy`` and never pays for the aligner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundswell.shared.repair.align import Alignment
    from groundswell.shared.repair.engine import (
        ACTIONS,
        STAGES,
        DefaultThresholdWarning,
        Repair,
        Repairer,
        Salvage,
    )
    from groundswell.shared.repair.params import AlignmentParams
    from groundswell.shared.repair.policy import (
        DEFAULT_REPAIR_THRESHOLD,
        RepairPolicy,
        RepairSettings,
        get_repair_policy,
    )

_WHERE = {
    "Alignment": "align",
    "AlignmentParams": "params",
    "ACTIONS": "engine",
    "STAGES": "engine",
    "DefaultThresholdWarning": "engine",
    "Repair": "engine",
    "Repairer": "engine",
    "Salvage": "engine",
    "DEFAULT_REPAIR_THRESHOLD": "policy",
    "RepairPolicy": "policy",
    "RepairSettings": "policy",
    "get_repair_policy": "policy",
}

__all__ = [
    "ACTIONS",
    "DEFAULT_REPAIR_THRESHOLD",
    "STAGES",
    "Alignment",
    "AlignmentParams",
    "DefaultThresholdWarning",
    "Repair",
    "RepairPolicy",
    "RepairSettings",
    "Repairer",
    "Salvage",
    "get_repair_policy",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

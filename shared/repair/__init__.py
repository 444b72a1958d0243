"""Repair: a near-miss quotation replaced by its source's own text, annotated, or refused with
the stage that refused it; and calibrated thresholds for the replacement."""

from groundswell.shared.repair.align import Alignment, AlignmentParams
from groundswell.shared.repair.engine import (
    ACTIONS,
    STAGES,
    DefaultThresholdWarning,
    Repair,
    Repairer,
    Salvage,
)
from groundswell.shared.repair.policy import (
    DEFAULT_REPAIR_THRESHOLD,
    RepairPolicy,
    RepairSettings,
    get_repair_policy,
)

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

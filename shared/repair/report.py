"""What the cascade did over many claims: additive counts by action and stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.repair.engine import Repair


@dataclass
class RepairSummary:
    """``retained`` counts records that keep a text; ``grounded`` those whose text verifies
    (an annotation is retained, not grounded); ``changed`` those whose text was rewritten."""

    policy_fingerprint: str | None = None
    actions: dict[str, int] = field(default_factory=dict)
    stages: dict[str, int] = field(default_factory=dict)
    total: int = 0
    changed: int = 0
    grounded: int = 0

    def add(self, result: Repair) -> None:
        self.actions[result.action] = self.actions.get(result.action, 0) + 1
        self.stages[result.stage] = self.stages.get(result.stage, 0) + 1
        self.total += 1
        self.changed += result.changed
        self.grounded += result.grounded

    @property
    def retained(self) -> int:
        return self.total - self.actions.get("rejected", 0)

    def as_dict(self) -> dict[str, Any]:
        total = self.total
        return {
            "policy_fingerprint": self.policy_fingerprint,
            "total": total,
            "by_action": dict(self.actions),
            "by_stage": dict(self.stages),
            "changed": self.changed,
            "retained": self.retained,
            "acceptance_rate": self.retained / total if total else 0.0,
            "grounded": self.grounded,
            "grounded_rate": self.grounded / total if total else 0.0,
        }

    def lines(self) -> list[str]:
        d = self.as_dict()
        head = (
            f"cascade: {d['retained']:,} retained ({d['acceptance_rate']:.2%}), "
            f"{d['grounded']:,} with grounded text, {d['changed']:,} rewritten to source text"
        )
        rows = sorted(self.actions.items(), key=lambda kv: -kv[1])
        return [head, *(f"  {action:<14} {count:>8,}" for action, count in rows)]

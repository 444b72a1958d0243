"""Verification: is a quotation in its source, at which tier, and where (original offsets)."""

from groundswell.shared.verify.certificate import VERDICTS, Certificate
from groundswell.shared.verify.engine import Verifier
from groundswell.shared.verify.policy import (
    BUILTIN_VERIFY_POLICIES,
    DEFAULT,
    ENGINE_REVISION,
    PERMISSIVE,
    STRICT,
    PolicyError,
    VerifyPolicy,
    get_verify_policy,
)
from groundswell.shared.verify.report import (
    LadderProfile,
    explain,
    manifest,
    sensitivity,
    spread_points,
)

__all__ = [
    "BUILTIN_VERIFY_POLICIES",
    "DEFAULT",
    "ENGINE_REVISION",
    "PERMISSIVE",
    "STRICT",
    "VERDICTS",
    "Certificate",
    "LadderProfile",
    "PolicyError",
    "Verifier",
    "VerifyPolicy",
    "explain",
    "get_verify_policy",
    "manifest",
    "sensitivity",
    "spread_points",
]

"""Verification: is a quotation in its source, at which tier, and where (original offsets)."""

from shared.verify.certificate import VERDICTS, Certificate
from shared.verify.engine import Verifier
from shared.verify.policy import (
    BUILTIN_VERIFY_POLICIES,
    DEFAULT,
    ENGINE_REVISION,
    PERMISSIVE,
    STRICT,
    PolicyError,
    VerifyPolicy,
    get_verify_policy,
)

__all__ = [
    "BUILTIN_VERIFY_POLICIES",
    "DEFAULT",
    "ENGINE_REVISION",
    "PERMISSIVE",
    "STRICT",
    "VERDICTS",
    "Certificate",
    "PolicyError",
    "Verifier",
    "VerifyPolicy",
    "get_verify_policy",
]

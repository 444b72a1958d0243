"""groundswell: verify quotations and admit extracted facts at corpus scale.

The packages of the system live under this one name (``groundswell.shared``, the core;
``groundswell.workers``; ``groundswell.api``), so installing groundswell adds a single
top-level name to site-packages.
"""

from __future__ import annotations

import os as _os

# In the repository the packages sit beside this folder (shared/, api/, workers/), which is
# where the project keeps them; installed, they sit inside it. Either way they import as
# groundswell.shared, groundswell.api and groundswell.workers.
_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_here, "shared")):
    __path__.append(_os.path.dirname(_here))  # type: ignore[name-defined]

# -- the public API ----------------------------------------------------------------------
# What gtrex's and groundgate's users call in process, and a client of the HTTP API. Names
# load on first use, so ``import groundswell`` stays cheap.

__all__ = [
    "APIError",
    "Certificate",
    "Client",
    "Decision",
    "Receipt",
    "Verifier",
    "admit",
    "check_receipt",
    "verify",
    "verify_at",
    "verify_claim",
]

_INPROCESS = {"Decision", "Receipt", "Verifier", "admit", "check_receipt", "verify"}
_INPROCESS |= {"verify_at", "verify_claim"}


def __getattr__(name: str):
    # groundswell.inprocess (verify, admit and their results), groundswell.client (the HTTP
    # API's): each imported when one of its names is first used.
    if name in _INPROCESS:
        from groundswell import inprocess

        return getattr(inprocess, name)
    if name == "Certificate":
        from groundswell.shared.verify import Certificate

        return Certificate
    if name in ("Client", "APIError"):
        from groundswell import client

        return getattr(client, name)
    raise AttributeError(f"module 'groundswell' has no attribute {name!r}")

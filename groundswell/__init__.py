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

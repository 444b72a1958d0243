"""Text normalization: the ladder of tiers, registered transforms, offset maps, boundaries."""

from groundswell.shared.text.boundaries import Boundaries
from groundswell.shared.text.ladder import Ladder, LadderError, Tier, default_ladder, strict_ladder
from groundswell.shared.text.offsets import OffsetMap
from groundswell.shared.text.projections import Projection, Projections
from groundswell.shared.text.transforms import (
    Transform,
    TransformError,
    make_transform,
    register_transform,
)
from groundswell.shared.text.unicode import UNICODE_VERSION

__all__ = [
    "UNICODE_VERSION",
    "Boundaries",
    "Ladder",
    "LadderError",
    "OffsetMap",
    "Projection",
    "Projections",
    "Tier",
    "Transform",
    "TransformError",
    "default_ladder",
    "make_transform",
    "register_transform",
    "strict_ladder",
]

"""Text normalization: the ladder of tiers, registered transforms, offset maps, boundaries."""

from shared.text.boundaries import Boundaries
from shared.text.ladder import Ladder, LadderError, Tier, default_ladder, strict_ladder
from shared.text.offsets import OffsetMap
from shared.text.projections import Projection, Projections
from shared.text.transforms import (
    Transform,
    TransformError,
    make_transform,
    register_transform,
)
from shared.text.unicode import UNICODE_VERSION

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

"""The one error of the admission engine: a packet that breaks SPEC §2 (no receipt)."""

from __future__ import annotations


class PacketError(ValueError):
    """An invalid packet: the message names the member that breaks the specification."""

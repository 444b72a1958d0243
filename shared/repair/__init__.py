"""Repair: the cascade that substitutes a located source span for a near-miss quotation,
its policy, and the calibration of its acceptance threshold."""

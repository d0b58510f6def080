"""git layer."""

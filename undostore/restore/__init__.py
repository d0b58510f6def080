"""restore layer."""

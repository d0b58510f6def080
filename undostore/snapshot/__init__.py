"""snapshot layer."""

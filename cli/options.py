"""The global options that take a value, read by the lean entry (entry.py), which imports
nothing heavier before it knows whether a command line is a hook call, and by click's side."""

from __future__ import annotations

# `--root DIR`, `--store DIR` (also `--root=DIR`).
GLOBAL_WITH_VALUE = ("--root", "--store")

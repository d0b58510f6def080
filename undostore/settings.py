"""Numbers read from the environment (`UNDOSTORE_UNDO_LIMIT`, `_GC_EVERY`, `_KEEP_DAYS`,
`_MAX_STORE_MB`): one parser, so every setting refuses a bad value with the same clear message
(a usage error naming the variable) instead of being silently ignored."""

from __future__ import annotations

import math
import os

from undostore.errors import UsageError


def env_number(variable: str, default: float | None = None, *, minimum: float = 0,
               above_minimum: bool = False, whole: bool = False) -> float | None:
    """The value of `variable` (unset or blank: `default`): a whole number if `whole`, at least
    `minimum` (more than it with `above_minimum`), finite."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value: float = int(text) if whole else float(text)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"{variable} must be {kind}, not {text!r}") from None
    if value < minimum or (above_minimum and value == minimum) or math.isinf(value):
        bound = "more than" if above_minimum else "at least"
        raise UsageError(f"{variable} must be {bound} {minimum}, not {text!r}")
    return value

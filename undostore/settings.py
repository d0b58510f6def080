"""Every `UNDOSTORE_*` setting, read in one place.

A setting with a bad value never switches protection off. A command a person types refuses it
(exit 2 naming the variable, the value and what is accepted) before doing anything: the CLI
calls `check_all` first. The entries hosts and clients run unattended (`hook`, `mcp`, `status`)
run inside `defaults_for_bad_values` instead: a bad value then counts as unset, and `notify`
hears one line naming it, once per variable, so a hook still records its point.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from undostore.errors import UsageError


class Setting(NamedTuple):
    """One variable: its default, what it accepts (for people), and its parser (ValueError on a
    bad value)."""

    name: str
    default: Any
    accepted: str
    parse: Callable[[str], Any]


def _number(whole: bool, minimum: float, above: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if not text.isascii():   # int() and float() also read other scripts' digits: "٣" is 3
            raise ValueError(text)
        value: float = int(text) if whole else float(text)
        if math.isnan(value) or math.isinf(value) or value < minimum or (above and
                                                                          value == minimum):
            raise ValueError(text)
        return value
    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError(text)
        return text.lower()
    return parse


SETTINGS = {s.name: s for s in (
    Setting("UNDOSTORE_UNDO_LIMIT", 50, "a whole number of 1 or more",
            _number(True, 1, False)),
    Setting("UNDOSTORE_GC_EVERY", 20, "a whole number of 0 or more",
            _number(True, 0, False)),
    Setting("UNDOSTORE_KEEP_DAYS", None, "a number of days more than 0",
            _number(False, 0, True)),
    Setting("UNDOSTORE_MAX_STORE_MB", None, "a number of megabytes more than 0",
            _number(False, 0, True)),
    Setting("UNDOSTORE_FSMONITOR", "auto", "auto, watchman or off",
            _choice("auto", "watchman", "off")),
    Setting("UNDOSTORE_MAX_FILES", 1_000_000, "a whole number of 1 or more",
            _number(True, 1, False)),
    # The hook through a resident per-user process that has its imports done
    # (cli/resident_client.py): on by default where the system can serve it (Linux, macOS).
    Setting("UNDOSTORE_RESIDENT", "on", "on or off", _choice("on", "off")),
)}

_lenient: Callable[[str], None] | None = None
_told: set[str] = set()


def value(name: str) -> Any:
    """The value of setting `name` (unset or blank: its default); a bad one is a UsageError,
    or, inside `defaults_for_bad_values`, the default with one line to its `notify`."""
    setting = SETTINGS[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return setting.default
    try:
        return setting.parse(text)
    except ValueError:
        message = f"{name}={text!r} is not {setting.accepted}"
        if _lenient is None:
            raise UsageError(message) from None
        if name not in _told:
            _told.add(name)
            default = "none" if setting.default is None else setting.default
            _lenient(f"{message}; using the default ({default})")
        return setting.default


def check_all() -> None:
    """UsageError for the first setting with a bad value (a command a person types)."""
    for name in SETTINGS:
        value(name)


@contextmanager
def defaults_for_bad_values(notify: Callable[[str], None]) -> Iterator[None]:
    """Within it a bad value counts as unset and `notify` hears of it once (the hook, the MCP
    server and `status`, which no one watches type); the way values were read before comes
    back after it (the MCP server runs commands inside its own)."""
    global _lenient
    before, _lenient = _lenient, notify
    try:
        yield
    finally:
        _lenient = before


DEFAULT_SESSION = "default"


def named_session(session: str | None) -> str | None:
    """The session a caller named: `session` (`--session`, an MCP argument), else
    `UNDOSTORE_SESSION`, else None (the caller's default: "default" for recording, the session
    last acted on for the history commands). Decided here, once."""
    return session or os.environ.get("UNDOSTORE_SESSION") or None



"""One host event, performed once: the answers given to recent events, by key.

A host may deliver one event twice: Codex runs a project's hooks and the user-wide ones at the
same time, and a host may retry a hook that timed out. Performing `/undo` twice would take back
two turns. `Workspace.once` holds the store lock, reads the answers once (`Book`), asks
`recall` whether this event's key was answered before it arrived or within a window after, and
if not acts and `remember`s its answer; a duplicate that waited for the lock then gives the same
answer without acting.

The answers live in `cache/events` (JSON, this user's, never followed through a link), the
newest `KEEP` of the last `MAX_AGE` seconds: a cache, so a lost file only forgets duplicates.
Beside them, when each host's hook last ran here (`hosts_seen`: what `doctor` reports), kept
with no age limit.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, NamedTuple

from undostore.fileio import read_small, write_small


class OnceKey(NamedTuple):
    """What an event is known by, and how long after the first's answer a duplicate may come
    (seconds)."""

    key: str
    window: float


class EventAnswer(NamedTuple):
    """An event's answer, and what is kept to answer its duplicates (JSON-able)."""

    answer: Any
    kept: Any


FILE = "events"
KEEP = 256
MAX_AGE = 3600.0


def _path(cache_dir: str) -> str:
    return os.path.join(cache_dir, FILE)


def _load(cache_dir: str) -> tuple[dict[str, list[Any]], dict[str, float]]:
    """({key: [time, answer]}, {host: time}); empty when missing or unreadable."""
    raw = read_small(_path(cache_dir))
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        return {}, {}
    if not isinstance(data, dict):
        return {}, {}
    events, hosts = data.get("events"), data.get("hosts")
    events = events if isinstance(events, dict) else {}
    hosts = hosts if isinstance(hosts, dict) else {}
    return ({k: v for k, v in events.items()
             if isinstance(v, list) and len(v) == 2 and isinstance(v[0], (int, float))},
            {k: v for k, v in hosts.items() if isinstance(v, (int, float))})


class Book:
    """The answers and hosts as `load` read them, under the store lock: an event asks `recall`
    and, when it acted, `remember` writes what it kept (one read and one write per event)."""

    __slots__ = ("cache_dir", "events", "hosts")

    def __init__(self, cache_dir: str) -> None:
        self.cache_dir = cache_dir
        self.events, self.hosts = _load(cache_dir)

    def recall(self, key: str, window: float, arrived: float) -> Any | None:
        """The answer remembered for `key` if this event `arrived` (its hook started) before
        that answer was given or at most `window` seconds after it, else None."""
        entry = self.events.get(key)
        if entry is None or arrived - entry[0] > window or entry[0] - arrived > MAX_AGE:
            return None
        return entry[1]

    def remember(self, host: str, key: str | None, answer: Any,
                 now: float | None = None) -> None:
        """Keep `answer` (JSON-able) for `key` (None: nothing to keep, an event that is never
        a duplicate) and that `host`'s hook ran now; best effort (a cache)."""
        now = time.time() if now is None else now
        events = {k: v for k, v in self.events.items() if now - v[0] <= MAX_AGE}
        if key is not None:
            events[key] = [now, answer]
        self.events = dict(sorted(events.items(), key=lambda item: item[1][0])[-KEEP:])
        self.hosts[host] = now
        write_small(_path(self.cache_dir),
                    json.dumps({"events": self.events, "hosts": self.hosts}).encode())


def hosts_seen(cache_dir: str) -> dict[str, float]:
    """host -> when its hook last ran here."""
    return _load(cache_dir)[1]

"""Retention you can predict: `UNDOSTORE_KEEP_DAYS` and `UNDOSTORE_MAX_STORE_MB`.

After an undo point is recorded, `enforce` (store lock held):
1. drops undo points older than KEEP_DAYS days;
2. while the store is larger than MAX_STORE_MB (10^6 bytes), drops the oldest undo points across
   sessions, as many as the bytes only they hold require (usage.newest_reach: dropping every
   point older than t frees exactly the objects no newer root reaches), and runs gc; again if
   the store still does not fit and something is left to drop.
The newest undo point of each session is never dropped, nor a redo entry, nor what gc's grace
keeps (ids the operation log vouches for, the files now, a pending restore; an evicted point's
own id is let go by its `evict` op): when only those are left the store stays over the limit,
and the report says so. Each drop goes to
`on_evict` (the operation log records it) and into the report.

A limit below what must stay (one snapshot of the tree is larger) is said once: an `over-cap`
op in the operation log and `RetentionReport.over_cap` (the caller's one stderr line), with the
size given up at kept in `cache/cap`. Later points do not try again (each try reads every tree
and runs gc: seconds per point on a big store) until the store grew by a tenth or the limit
changed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from undostore import settings
from undostore.fileio import atomic_write, read_small, remove_quietly
from undostore.history import anchors
from undostore.history import journal as journals
from undostore.history.reflog import CAP_REASON, read_reflog
from undostore.store import oplog

if TYPE_CHECKING:
    from undostore.history.gc import GcResult
    from undostore.store.store import Store

# gc.py and usage.py are imported where a limit needs them: every undo point calls `enforce`,
# and with no limit set (the default) it pays none of their imports.

MB = 1_000_000
DAY = 86400.0
MAX_ROUNDS = 4


class Eviction(NamedTuple):
    """One undo point retention dropped."""

    session: str
    id: str
    time: float
    label: str | None
    reason: str             # "keep_days" or "max_store_mb"

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "id": self.id, "time": self.time, "label": self.label,
                "reason": self.reason}


class RetentionReport:
    """What one `enforce` did. A plain slotted class: recording an undo point imports this
    module, and the per-prompt hook does not pay for dataclasses (docs/design.md, "Start-up")."""

    __slots__ = ("evicted", "gc_runs", "freed_bytes", "store_bytes", "limit_bytes", "over_cap")

    def __init__(self, limit_bytes: int | None = None) -> None:
        self.evicted: list[Eviction] = []
        self.gc_runs = 0
        self.freed_bytes = 0
        self.store_bytes: int | None = None    # after, when a size limit is set
        self.limit_bytes = limit_bytes
        # The limit cannot be met: said once (module docstring).
        self.over_cap: str | None = None

    @property
    def fits(self) -> bool:
        return self.limit_bytes is None or (self.store_bytes or 0) <= self.limit_bytes

    def to_json(self) -> dict[str, Any]:
        return {"evicted": [e.to_json() for e in self.evicted], "gc_runs": self.gc_runs,
                "freed_bytes": self.freed_bytes, "store_bytes": self.store_bytes,
                "limit_bytes": self.limit_bytes, "fits": self.fits, "over_cap": self.over_cap}


OnEvict = Callable[[Eviction], None]


def keep_days() -> float | None:
    """`UNDOSTORE_KEEP_DAYS` (a positive number of days), else None: no age limit."""
    return settings.value("UNDOSTORE_KEEP_DAYS")


def max_store_bytes() -> int | None:
    """`UNDOSTORE_MAX_STORE_MB` in bytes (MB = 10^6), else None: no size limit."""
    mb = settings.value("UNDOSTORE_MAX_STORE_MB")
    return None if mb is None else int(mb * MB)


def store_bytes(store: Store) -> int:
    """Bytes of every file in the store."""
    total = 0
    for folder, _, names in os.walk(store.path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def enforce(store: Store, on_evict: OnEvict | None = None,
            now: float | None = None) -> RetentionReport:
    """Apply KEEP_DAYS and MAX_STORE_MB (see the module docstring). Cheap when neither is set."""
    days, limit = keep_days(), max_store_bytes()
    report = RetentionReport(limit_bytes=limit)
    if days is None and limit is None:
        return report
    now = time.time() if now is None else now
    with store.lock:
        if days is not None:
            old = [(s, p) for s, p in _droppable(store) if p.time < now - days * DAY]
            _evict(store, old, "keep_days", report, on_evict)
            if old and limit is None:
                _gc(store, report)
        if limit is not None:
            _fit_once(store, limit, report, on_evict)
    return report


CAP_STATE = "cap"    # in the store's cache folder: {"limit": bytes, "size": bytes given up at}
RETRY_GROWTH = 10    # a store over an unmeetable limit is tried again when it grew by 1/10


def _fit_once(store: Store, limit: int, report: RetentionReport,
              on_evict: OnEvict | None) -> None:
    """`_fit`, unless this limit was found unmeetable and the store has not grown much since."""
    path = os.path.join(store.cache_dir, CAP_STATE)
    given_up = _read_cap_state(path)
    size = store_bytes(store)
    if size <= limit:
        report.store_bytes = size
        if given_up is not None:
            remove_quietly(path)
        return
    same_limit = given_up is not None and given_up["limit"] == limit
    if same_limit and size < given_up["size"] + given_up["size"] // RETRY_GROWTH:
        report.store_bytes = size
        return
    _fit(store, limit, report, on_evict)
    if report.fits:
        if given_up is not None:
            remove_quietly(path)
        return
    atomic_write(path, json.dumps({"limit": limit, "size": report.store_bytes}).encode(),
                 durable=False)
    if same_limit:
        return   # said when it was first found
    report.over_cap = (
        f"the store ({(report.store_bytes or 0) / MB:,.1f} MB) cannot fit "
        f"UNDOSTORE_MAX_STORE_MB={limit / MB:g}: what must stay (each session's newest undo "
        "point and the files now) is larger; raise the limit, or leave big files out with "
        ".undostoreignore (tried again when the store grows by a tenth)")
    oplog.append(store.path, oplog.Op(time.time(), "over-cap", label=report.over_cap,
                                      reason=CAP_REASON))


def _read_cap_state(path: str) -> dict[str, int] | None:
    raw = read_small(path, 4096)
    try:
        state = json.loads(raw) if raw is not None else None
        return {"limit": int(state["limit"]), "size": int(state["size"])} if state else None
    except (ValueError, TypeError, KeyError):
        return None


def _fit(store: Store, limit: int, report: RetentionReport, on_evict: OnEvict | None) -> None:
    collected = False
    for _ in range(MAX_ROUNDS):
        size = store_bytes(store)
        report.store_bytes = size
        if size <= limit:
            return
        chosen, freeable = _oldest_to_free(store, size - limit, limit)
        if not freeable or (not chosen and collected):
            return   # only what must stay is left: the report says the store does not fit
        _evict(store, chosen, CAP_REASON, report, on_evict)
        _gc(store, report)
        collected = True
    report.store_bytes = store_bytes(store)


def _droppable(store: Store) -> list[tuple[str, journals.Point]]:
    """(session, point) of every undo point but the newest of each session, oldest first."""
    out = [(name, point) for name in journals.session_names(store)
           for point in journals.load(store, name).undo[:-1]]
    return sorted(out, key=lambda item: item[1].time)


def _oldest_to_free(store: Store, excess: int, limit: int
                    ) -> tuple[list[tuple[str, journals.Point]], int]:
    """(the oldest droppable points whose dropping frees at least `excess` bytes, the bytes
    that frees with the garbage). When dropping every droppable point would not make the store
    fit (the files now alone are too large), only points holding a share of the limit go:
    dropping history that frees next to nothing would lose it for no gain."""
    from undostore.history import usage
    from undostore.history.gc import DEFAULT_GRACE_SECONDS

    droppable = _droppable(store)
    when: dict[bytes, float] = {}
    sessions_of: dict[bytes, set[str | None]] = {}
    for session, point in droppable:
        sha = bytes.fromhex(point.id)
        when[sha] = max(when.get(sha, -math.inf), point.time)
        sessions_of.setdefault(sha, set()).add(session)
    # What stays whatever is dropped: each session's newest point and redo stack, and gc's
    # standing roots (ids the operation log vouches for, the files now, a pending restore),
    # except the droppable points themselves: an eviction by the cap lets them go.
    since = time.time() - DEFAULT_GRACE_SECONDS
    standing = usage.standing_roots(store, since)
    vouchers = read_reflog(store, since).vouchers
    for sha, sessions in sessions_of.items():
        if vouchers.get(sha, set()) <= sessions:
            standing[usage.RECENT].trees.discard(sha)
    for sha in _kept_ids(store).union(*(roots.trees for roots in standing.values())):
        when[sha] = math.inf
    freed_at: dict[float, int] = {}
    for t, size in usage.newest_reach(store, when, standing[usage.FILES_NOW].blobs):
        if t != math.inf:
            freed_at[t] = freed_at.get(t, 0) + size
    freed, cutoff = 0, -math.inf
    if sum(freed_at.values()) >= excess:
        for t in sorted(freed_at):
            if freed >= excess:
                break
            freed += freed_at[t]
            cutoff = t
    else:   # cannot fit: go as far as the newest point that frees a real share
        worth = [t for t, size in freed_at.items() if size >= limit // 100 or t == -math.inf]
        cutoff = max(worth, default=-math.inf)
        freed = sum(size for t, size in freed_at.items() if t <= cutoff)
    return [(s, p) for s, p in droppable if p.time <= cutoff], freed


def _kept_ids(store: Store) -> set[bytes]:
    """Ids of the entries retention never drops: each session's newest point, its redo stack."""
    kept: set[bytes] = set()
    for name in journals.session_names(store):
        journal = journals.load(store, name)
        kept |= {bytes.fromhex(p.id) for p in journal.undo[-1:] + journal.redo}
    return kept


def _evict(store: Store, chosen: list[tuple[str, journals.Point]], reason: str,
           report: RetentionReport, on_evict: OnEvict | None) -> None:
    """Drop `chosen` from their journals: write the journal, then release the anchors it no
    longer lists (the order sessions use: a crash leaves at most an extra anchor)."""
    by_session: dict[str, list[journals.Point]] = {}
    for session, point in chosen:
        by_session.setdefault(session, []).append(point)
    for session, points in by_session.items():
        journal = journals.load(store, session)
        doomed = {(p.id, p.time) for p in points}
        newest = journal.undo[-1:]
        journal.undo = [p for p in journal.undo[:-1] if (p.id, p.time) not in doomed] + newest
        journals.save(store, journal)
        anchors.release(store, session, keep=journal.ids())
    for session, point in chosen:   # oldest first
        eviction = Eviction(session, point.id, point.time, point.label, reason)
        report.evicted.append(eviction)
        why = "UNDOSTORE_MAX_STORE_MB" if reason == CAP_REASON else "older than UNDOSTORE_KEEP_DAYS"
        oplog.append(store.path, oplog.Op(time.time(), "evict", session=session, id=point.id,
                                          label=f"{point.label or ''} ({why})".strip(),
                                          reason=reason))
        if on_evict is not None:
            on_evict(eviction)


def collect_explained(store: Store, grace_seconds: float | None = None) -> GcResult:
    """gc (history/gc.py), and what holds the bytes it kept, largest first, in `kept`: each
    session's bytes alone, ids handed out outside sessions within the grace, the files now,
    a pending restore, and what several of them share."""
    from undostore.history import usage
    from undostore.history.gc import DEFAULT_GRACE_SECONDS, collect

    with store.lock:
        result = collect(store, grace_seconds)
        grace = DEFAULT_GRACE_SECONDS if grace_seconds is None else float(grace_seconds)
        groups = {**usage.session_roots(store),
                  **usage.standing_roots(store, time.time() - grace)}
        alone = usage.held_alone(store, groups)
    kept = [{"what": usage.GROUP_KEYS.get(name, "session"),
             "session": None if name in usage.GROUP_KEYS else name, "bytes": size}
            for name, size in alone.items() if size]
    result.kept = sorted(kept, key=lambda k: -k["bytes"])
    return result


def _gc(store: Store, report: RetentionReport) -> GcResult:
    from undostore.history.gc import collect

    result = collect(store)
    report.gc_runs += 1
    report.freed_bytes += result.freed_bytes
    return result

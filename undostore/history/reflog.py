"""The operation log as the reflog: which snapshot ids it still vouches for.

The contract: an id undostore printed stays restorable for a day after the last moment a journal
listed it, or after it was handed out, whichever is later. Every op that hands an id out (a
snapshot, the safety snapshot of a restore) or takes one out of a journal (an undo, a cleared
redo entry, a point past the cap, an eviction, a drop) names it, so the newest op naming an id
is that moment; gc walks from these ids and prefixes resolve against them. Two ops let ids go
at once: `drop` (the user forgets a session on purpose: every id its ops named) and an eviction
by `UNDOSTORE_MAX_STORE_MB` (its id, in its session), the one limit the contract lets take an
id early. An id another session's op, or an op outside sessions, vouches for stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from undostore.store import oplog
from undostore.store.recent import recent_ids

if TYPE_CHECKING:
    from undostore.store.store import Store

WINDOW_SECONDS = oplog.KEEP_SECONDS
CAP_REASON = "max_store_mb"


class Reflog(NamedTuple):
    """Ids the log vouches for since a moment, the sessions (None: outside any) whose ops
    vouch for each, and ids whose newest op in every session let them go."""

    vouched: set[bytes]
    released: set[bytes]
    vouchers: dict[bytes, set[str | None]]


def releases(op: oplog.Op) -> bool:
    """Whether `op` lets the ids it names go at once (module docstring)."""
    return op.op == "drop" or (op.op == "evict" and op.reason == CAP_REASON)


def read_reflog(store: Store, since: float) -> Reflog:
    """What the operation log says of every id it names: vouched for when, in some session
    (or outside any), its newest op is at or after `since` and does not let it go."""
    newest: dict[tuple[str, str | None], oplog.Op] = {}
    by_session: dict[str | None, set[str]] = {}
    for op in reversed(oplog.read(store.path)):        # oldest first: the newest op wins
        if op.op == "drop":   # every id the session's ops named goes with it
            for sha in by_session.pop(op.session, set()) | set(op.named_ids()):
                newest[(sha, op.session)] = op
            continue
        for sha in op.named_ids():
            newest[(sha, op.session)] = op
            by_session.setdefault(op.session, set()).add(sha)
    vouchers: dict[bytes, set[str | None]] = {}
    named: set[bytes] = set()
    for (sha, session), op in newest.items():
        raw = _raw(sha)
        if raw is None:
            continue
        named.add(raw)
        if op.time >= since and not releases(op):
            vouchers.setdefault(raw, set()).add(session)
    return Reflog(set(vouchers), named - set(vouchers), vouchers)


def handed_out(store: Store, since: float,
               listed_by: dict[str, set[bytes]] | None = None) -> set[bytes]:
    """Ids handed out or let go by a journal at or after `since` that nothing has released:
    roots for gc, besides the journals (the recent list covers ids whose op was not logged).
    With `listed_by` (session -> the ids its journal lists), an id only sessions that still
    list it vouch for is left out: dropping those sessions would let it go (what `sessions`
    and gc's report count as a session's own bytes)."""
    log = read_reflog(store, since)
    ids = (recent_ids(store.path, since) | log.vouched) - log.released
    if listed_by is None:
        return ids
    return {sha for sha in ids
            if not _held_by_listing_sessions(log.vouchers.get(sha), sha, listed_by)}


def _held_by_listing_sessions(vouchers: set[str | None] | None, sha: bytes,
                              listed_by: dict[str, set[bytes]]) -> bool:
    return bool(vouchers) and all(s is not None and sha in listed_by.get(s, ())
                                  for s in vouchers)


def _raw(sha: str) -> bytes | None:
    try:
        raw = bytes.fromhex(sha)
    except ValueError:
        return None
    return raw if len(raw) == 20 else None

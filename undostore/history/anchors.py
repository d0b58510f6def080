"""Anchor refs: every snapshot a journal lists is reachable from `refs/undostore/<session>/<id>`.

Plain loose-ref files (`<40 hex>\n`), written with `atomic_write`. The journals are the truth:
an anchor is created before the journal listing it is written and released after the journal
dropping it is written, so a crash leaves at most an extra anchor; `sweep` (first step of every
gc) makes anchors match journals. The store lock must be held. Why not dulwich's refs:
docs/design.md "Anchors".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from undostore.errors import StoreError, from_oserror
from undostore.fileio import atomic_write
from undostore.history import journal as journals
from undostore.store.store import Store

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def anchors_root(store: Store) -> str:
    return os.path.join(store.path, "refs", "undostore")


def session_dir(store: Store, session: str) -> str:
    return os.path.join(anchors_root(store), journals.encode_name(journals.validate_name(session)))


def held(store: Store, session: str) -> set[str]:
    """The snapshot ids that `session` has anchor files for."""
    folder = session_dir(store, session)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return set()
    except OSError as err:
        raise from_oserror(err, "list anchors", folder, StoreError) from err
    return {name for name in names if _HEX40.match(name)}


def _intact(path: str, sha: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(64).strip() == sha.encode("ascii")
    except OSError:
        return False


def hold(store: Store, session: str, ids: Iterable[str], existing: set[str] | None = None
         ) -> int:
    """Make sure each of `ids` has an intact anchor in `session`; returns how many were
    (re)written."""
    folder = session_dir(store, session)
    existing = held(store, session) if existing is None else existing
    wanted = [i for i in set(ids)
              if i not in existing or not _intact(os.path.join(folder, i), i)]
    if not wanted:
        return 0
    try:
        os.makedirs(folder, exist_ok=True)
        for sha in wanted:
            atomic_write(os.path.join(folder, sha), (sha + "\n").encode("ascii"), durable=False)
    except OSError as err:
        raise from_oserror(err, "write an anchor", folder, StoreError) from err
    return len(wanted)


def release(store: Store, session: str, keep: Iterable[str] = (),
            existing: set[str] | None = None) -> int:
    """Remove the anchors of `session` except those of `keep` (and its folder when it empties);
    returns how many were removed."""
    folder = session_dir(store, session)
    keep = set(keep)
    existing = held(store, session) if existing is None else existing
    removed = 0
    for sha in existing - keep:
        path = os.path.join(folder, sha)
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
        except OSError as err:
            raise from_oserror(err, "remove an anchor", path, StoreError) from err
    if not keep:
        _remove_if_empty(folder)
    return removed


def _remove_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass  # absent, or holds something that is not ours


class SweepResult:
    """What one `sweep` changed: anchors made and released, sessions whose anchors all went."""

    __slots__ = ("created", "released", "sessions_removed")

    def __init__(self) -> None:
        self.created = self.released = self.sessions_removed = 0


def sweep(store: Store) -> SweepResult:
    """Make the anchors match the journals (see the module docstring)."""
    result = SweepResult()
    sessions = set(journals.session_names(store))
    listed_by = {name: journals.load(store, name).ids() for name in sessions}
    damaged = journals.damaged_sessions(store)   # their anchors stay until repaired or dropped
    for name, listed in listed_by.items():
        result.created += hold(store, name, listed)
        if name not in damaged:
            result.released += release(store, name, keep=listed)
    for name in anchored_sessions(store) - sessions - set(damaged):
        result.released += release(store, name)
        result.sessions_removed += 1
    return result


def anchored_sessions(store: Store) -> set[str]:
    """Sessions that have an anchor folder (folders whose names are not ours are left alone)."""
    try:
        entries = os.listdir(anchors_root(store))
    except FileNotFoundError:
        return set()
    except OSError as err:
        raise from_oserror(err, "list anchors", anchors_root(store), StoreError) from err
    names = (journals.decode_name(e) for e in entries)
    return {n for n in names if n is not None}


def anchored_ids(store: Store) -> set[str]:
    """Every snapshot id that some session anchors."""
    out: set[str] = set()
    for name in anchored_sessions(store):
        out.update(held(store, name))
    return out


def listed_snapshots(store: Store) -> set[bytes]:
    """Every snapshot id a journal lists or an anchor holds (raw ids): what `Store.resolve`
    accepts prefixes of, besides the ids handed out recently."""
    listed = set(anchored_ids(store))
    for name in journals.session_names(store):
        listed |= journals.load(store, name).ids()
    return {bytes.fromhex(i) for i in listed if len(i) == 40}

"""The session a history command acts on by default, and `status`: one line for a host's footer.

Without `--session` or `UNDOSTORE_SESSION`, `undo`, `redo`, `log` and `status` act on the session
whose newest entry (undo point recorded, or undo done) is the most recent: the one the user was
just working in. `status` runs on every prompt render, so it reads only the journals and the
restore folder, and never creates a store.
"""

from __future__ import annotations

import os
import time
from typing import Any, NamedTuple

from undostore.history import journal as journals
from undostore.settings import DEFAULT_SESSION, named_session
from undostore.store import overlimit
from undostore.store.lock import held_elsewhere
from undostore.store.store import Store


def _last_activity(journal: journals.Journal) -> float:
    """When the session last recorded a point or had an undo or redo applied."""
    if not journal.undo and not journal.redo:
        return 0.0
    return max(journal.stepped, *(p.time for p in (*journal.undo, *journal.redo)))


def newest_session(store: Store) -> str | None:
    """The session the user last acted on: the newest undo point, or the newest undo or redo
    applied (after `undo -s A`, plain `redo` is A's); None when no session has a point."""
    best: tuple[float, str] | None = None
    for name in journals.session_names(store):
        when = _last_activity(journals.load(store, name))
        if when and (best is None or when > best[0]):
            best = (when, name)
    return best[1] if best else None


def history_session(store: Store, session: str | None) -> tuple[str, bool]:
    """(name, chosen): `session`, else `UNDOSTORE_SESSION`, else the newest session (chosen is
    True then: callers say which one on stderr), else "default"."""
    named = named_session(session)
    if named:
        return named, False
    newest = newest_session(store)
    return (newest, True) if newest else (DEFAULT_SESSION, False)


class Status(NamedTuple):
    """What `status` reports for one session (the footer's line, or JSON)."""

    session: str
    undo: int
    redo: int
    pending: dict[str, Any] | None
    last_point_age_seconds: float | None
    chosen: bool = False   # the session was chosen as the newest (not named)
    damage: tuple[str, ...] = ()   # one line per damaged session journal (journal.damage_notes)
    restoring: bool = False        # a live process is restoring now (it holds the store lock)
    no_hook: bool = False          # the host's conversation has never reached the hook here
    over_max_files: int | None = None  # the last snapshot passed this many files: none taken

    def line(self) -> str:
        text = f"undo:{self.undo} redo:{self.redo}"
        if self.restoring:
            text += " restoring"
        elif self.pending is not None:
            text += " recovery_required"
        if self.over_max_files is not None:
            text += f" over-max-files({self.over_max_files:,}: UNDOSTORE_MAX_FILES)"
        return text + " no-hook" if self.no_hook else text

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "undo": self.undo, "redo": self.redo,
                "restoring": self.restoring, "pending": self.pending,
                "last_point_age_seconds": self.last_point_age_seconds,
                "no_hook": self.no_hook, "over_max_files": self.over_max_files}


class RestoreState(NamedTuple):
    """A restore journal in the store: a live process's (`restoring`), or one a dead process
    left (`pending`, as JSON data)."""

    restoring: bool
    pending: dict[str, Any] | None


def restore_state(store: Store) -> RestoreState:
    """Whether a restore runs now, or one a crash left waits (the journal is there while a
    restore runs too: a live restorer holds the store lock, a dead one's lock went with it)."""
    try:
        if not os.listdir(store.restore_dir):
            return RestoreState(False, None)
    except FileNotFoundError:
        return RestoreState(False, None)
    if held_elsewhere(store.lock.path):
        return RestoreState(True, None)
    # Imported only when something is there.
    from undostore.restore.pending import pending_restore as pending

    found = pending(store)
    if found is not None and held_elsewhere(store.lock.path):
        return RestoreState(True, None)   # a restore began between the two looks
    return RestoreState(False, found.to_json() if found is not None else None)


def read_status(store: Store | None, session: str | None, host_session: bool = False
                ) -> Status:
    """The status of `session` (default as `history_session`) in `store`; a store that does not
    exist yet (None) has empty sessions. `host_session`: the session is a host's conversation
    (its statusLine named it), which has reached the hook here only if it has a journal: else
    `no_hook` (a host that does not call the hook, or not yet, is never silent)."""
    if store is None:
        name = named_session(session) or DEFAULT_SESSION
        journals.validate_name(name)
        return Status(name, 0, 0, None, None, no_hook=host_session)
    name, chosen = history_session(store, session)
    journal = journals.load(store, name)
    age = round(time.time() - journal.undo[-1].time, 3) if journal.undo else None
    state = restore_state(store)
    no_hook = host_session and not os.path.exists(journals.journal_path(store, name))
    return Status(name, journal.undoable, len(journal.redo), state.pending, age,
                  chosen, tuple(journals.damage_notes(store)), state.restoring, no_hook,
                  overlimit.read(store.cache_dir))


def open_existing(root: str | os.PathLike[str] | None = None, store: str | None = None, *,
                  force: bool = False) -> Store | None:
    """The store of the root found as `Workspace` finds it, or None when that root was never
    protected (nothing is created: for read-only callers such as status and completion)."""
    from undostore.store.discover import discover, named
    from undostore.store.store import check_root

    store = store or os.environ.get("UNDOSTORE_STORE") or None
    found = discover(store=store, force=force) if root is None else named(root, store)
    check_root(found.root, force)
    return Store(found.store, root=found.root, create=False) if found.existed else None


def status_at(root: str | os.PathLike[str] | None = None, store: str | None = None,
              session: str | None = None, *, force: bool = False,
              host_session: bool = False) -> Status:
    """`status` without creating a store: a root never protected has empty sessions."""
    opened = open_existing(root, store, force=force)
    if opened is None:
        return read_status(None, session, host_session)
    with opened:
        return read_status(opened, session, host_session)


def known_points(store: Store) -> list[tuple[str, str, journals.Point]]:
    """(session, "undo" or "redo", point) for every entry of every journal, newest first:
    what shell completion offers for ids."""
    out = []
    for name in journals.session_names(store):
        journal = journals.load(store, name)
        out += [(name, "undo", p) for p in journal.undo]
        out += [(name, "redo", p) for p in journal.redo]
    return sorted(out, key=lambda entry: entry[2].time, reverse=True)

"""Sessions: record undo points, undo, redo, list and drop (the library calls behind the CLI).

Every change follows the same order, under the store lock: anchor the snapshots the journal is
about to list, write the journal, release the anchors it no longer lists. A crash between two
steps leaves at most an extra anchor, which the next gc's sweep releases.

Undo restores the newest undo point through the safe restore (`restore.restore`); the restore's
safety snapshot (the files as they were just before the undo) becomes the redo entry. Redo
restores that safety snapshot, and the undo point comes back, with the id of the redo's own safety
snapshot: that is the undone point itself when nothing was touched in between (snapshot ids are
content hashes), and otherwise keeps the edits made between the undo and the redo one undo away.

Settings (environment): `UNDOSTORE_UNDO_LIMIT` (undo points kept per session, default 50) and
`UNDOSTORE_GC_EVERY` (run gc after every N undo points recorded in a session, default 20;
0 turns automatic gc off).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from undostore.errors import StoreError, UndostoreError, UsageError
from undostore.history import anchors
from undostore.history import journal as journals
from undostore.history.journal import Point, SessionWarning
from undostore.settings import env_number
from undostore.store import oplog

if TYPE_CHECKING:
    from undostore.history.retention import OnEvict
    from undostore.history.steps import StepResult
    from undostore.progress import OnProgress
    from undostore.restore.restore import Confirm, RestoreResult, Worktree
    from undostore.snapshot.snapshot import SnapshotResult
    from undostore.store.store import Store

DEFAULT_GC_EVERY = 20


@dataclass(frozen=True)
class Log:
    """A session's undo points, newest first, and its redo stack, next redo first."""

    session: str
    undo: list[Point]
    redo: list[Point]

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "undo": [p.to_json() for p in self.undo],
                "redo": [p.to_json() for p in self.redo]}


@dataclass(frozen=True)
class SessionInfo:
    name: str
    undo: int
    redo: int
    bytes: int = 0      # what the session alone holds: what dropping it and gc would free

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "undo": self.undo, "redo": self.redo, "bytes": self.bytes}


def gc_every() -> int:
    """`UNDOSTORE_GC_EVERY`, else 20; 0 means never."""
    return int(env_number("UNDOSTORE_GC_EVERY", DEFAULT_GC_EVERY, minimum=0, whole=True))


def record_undo_point(store: Store, session: str, snapshot_id_hex: str, label: str | None,
                      meta: Mapping[str, Any] | None,
                      on_evict: OnEvict | None = None) -> bool:
    """Record `snapshot_id_hex` as the newest undo point of `session` (clearing its redo stack
    unless the files are what the last undo or redo left: `Journal.record`), then apply
    retention (history/retention.py; `on_evict` hears of each point it drops). Called with the
    store lock held, right after the snapshot. A point equal to the session's newest one
    records nothing (False): undoing to it would change no file. If the newest point's turn
    ended having changed nothing (its files after are its own), the new turn takes it over
    (label, meta, time; no files after yet), so `log`, `show` and `/undo` name the turn that
    does change them. What leaves the journal is named in the operation log, which keeps it
    restorable for a day (history/reflog.py)."""
    from undostore.history import retention  # recording only: undo and redo skip its imports

    point = journals.make_point(snapshot_id_hex, label, meta)
    retention.keep_days(), retention.max_store_bytes()   # a bad setting fails before recording
    with store.lock:
        journal = journals.load(store, session)
        if journal.undo and journal.undo[-1].id == point.id:
            if journal.undo[-1].after == point.id:
                journal.undo[-1] = point
                _commit(store, journal, new_ids=[point.id])
            return False
        dropped = journal.record(point, journals.undo_limit())
        _commit(store, journal, new_ids=[point.id])
        _log_dropped(store, session, dropped)
        collected = _apply_retention(store, on_evict)
        every = gc_every()
        if every and journal.recorded % every == 0 and not collected:
            _auto_gc(store)
    return True


def _log_dropped(store: Store, session: str, dropped: journals.Dropped) -> None:
    """Name in the operation log what left a journal: the log keeps it for a day."""
    now = time.time()
    for kind, points in (("clear-redo", dropped.cleared), ("expire", dropped.expired)):
        for point in points:
            oplog.append(store.path, oplog.Op(now, kind, session=session, id=point.id,
                                              label=point.label))


def record_turn_end(store: Store, session: str, snapshot_id_hex: str) -> journals.Point | None:
    """Record the files after the turn of `session`'s newest undo point (the host's after-turn
    event); None when the session has no point. The store lock is held."""
    with store.lock:
        journal = journals.load(store, session)
        point = journal.end_turn(snapshot_id_hex)
        if point is not None:
            _commit(store, journal, new_ids=[snapshot_id_hex])
    return point


def _apply_retention(store: Store, on_evict: OnEvict | None) -> bool:
    """KEEP_DAYS and MAX_STORE_MB; True if gc ran. A failure only postpones the cleanup."""
    from undostore.history import retention

    try:
        return retention.enforce(store, on_evict).gc_runs > 0
    except (UndostoreError, OSError) as err:
        warnings.warn(SessionWarning(f"retention failed: {err}"), stacklevel=3)
        return False


def _commit(store: Store, journal: journals.Journal, new_ids: list[str]) -> None:
    """Anchor, write the journal, release: the crash-safe order (module docstring)."""
    existing = anchors.held(store, journal.name)
    anchors.hold(store, journal.name, new_ids, existing=existing)
    journals.save(store, journal)
    anchors.release(store, journal.name, keep=journal.ids(), existing=existing | set(new_ids))


def _auto_gc(store: Store) -> None:
    from undostore.history.gc import collect

    try:
        collect(store)
    except (UndostoreError, OSError) as err:
        # The undo point is recorded; a failed gc only postpones the cleanup.
        warnings.warn(SessionWarning(f"automatic gc failed: {err}"), stacklevel=3)


def read_log(store: Store, session: str) -> Log:
    journal = journals.load(store, session)
    return Log(session, list(reversed(journal.undo)), list(reversed(journal.redo)))


def undo(wt: Worktree, session: str, *, steps: int = 1, to: str | None = None,
         dry_run: bool = False, confirm: Confirm | None = None,
         on_progress: OnProgress | None = None) -> StepResult:
    """Go back `steps` undo points (or to the point `to`: an id or prefix) in one restore; the
    undone points move to the redo stack so that `redo` steps forward one turn at a time
    (history/steps.py)."""
    return _step(wt, session, "undo", dry_run, confirm, on_progress, steps=steps, to=to)


def redo(wt: Worktree, session: str, *, steps: int = 1, dry_run: bool = False,
         confirm: Confirm | None = None, on_progress: OnProgress | None = None
         ) -> StepResult:
    """Take back the last undo, `steps` turns forward in one restore."""
    return _step(wt, session, "redo", dry_run, confirm, on_progress, steps=steps)


def _step(wt: Worktree, session: str, step: str, dry_run: bool,
          confirm: Confirm | None, on_progress: OnProgress | None = None, *, steps: int = 1,
          to: str | None = None) -> StepResult:
    # Here, not at the top: recording an undo point (the hook, on every prompt) needs none of
    # the restore machinery.
    from undostore.history import steps as multi
    from undostore.restore.restore import restore

    store = wt.store
    with store.lock:
        journal = journals.load(store, session)
        wanted = store.resolve(to).hex() if to is not None else None
        if step == "undo":
            if not journal.undo:
                raise UsageError(f"nothing to undo in session {session!r}")
            wt, now = _with_files_now(wt)
            move = multi.plan_undo(journal, now, steps, wanted)
        else:
            move = multi.plan_redo(journal, steps)
        context = move.context(session, os.urandom(8).hex())
        if len(move.moved) == 1:    # one step: complete_step's own context, as it always was
            context = {k: context[k] for k in ("session", "step", "token", "skipped")}
        result = restore(wt, move.target, dry_run=dry_run, confirm=confirm, context=context,
                         on_progress=on_progress)
        if not dry_run:  # usually done already, inside the restore; a no-op restore is not
            finish_step(store, context, move.target, _safety_of(result))
    # In the order taken back or brought back (both stacks hold the next one last).
    return multi.StepResult.of(result, step, list(reversed(move.moved)))


def finish_step(store: Store, context: dict, target: str, safety: str) -> None:
    """What a restore runs once the files are at `target` (Worktree.step_done): one step goes
    through `complete_step`; several (undo N, redo N: the context lists the ids it moves)
    through history/steps.py, under the same step-token rule (applied once, even when recovery
    after a crash finishes the restore)."""
    if "moved" not in context:
        complete_step(store, context, target, safety)
        return
    from undostore.history import steps as multi

    session, token = context.get("session"), context.get("token")
    if not isinstance(session, str) or context.get("step") not in ("undo", "redo") \
            or not isinstance(token, str):
        return
    journal = journals.load(store, session)
    if journal.last_step == token or not multi.matches(journal, context):
        return  # applied already, or the session changed since: nothing left to move
    multi.apply(journal, context, safety)
    journal.last_step = token
    journal.landed = target
    _commit(store, journal, new_ids=[safety])


def _with_files_now(wt: Worktree) -> tuple[Worktree, str]:
    """The id of the files now, and a worktree whose next snapshot reuses it (the restore's
    safety snapshot, taken moments later under the same lock), so undo walks the tree once."""
    first = wt.snapshot()
    pending = [first]

    def snapshot() -> SnapshotResult:
        return pending.pop() if pending else wt.snapshot()

    return replace(wt, snapshot=snapshot), first.id


def complete_step(store: Store, context: dict, target: str, safety: str) -> None:
    """Move an undo point to the redo stack (undo) or back (redo) once its restore to `target`
    is done; `safety` is the restore's safety snapshot. Runs inside the restore, before its
    journal is removed, so recovery after a crash runs it too; the step token makes it run
    once only. The store lock is held."""
    session, step, token = context.get("session"), context.get("step"), context.get("token")
    if not isinstance(session, str) or not isinstance(token, str):
        return
    if step in BEFORE_STEPS:
        _record_before(store, session, token, safety, context.get("label"))
        return
    if step not in ("undo", "redo"):
        return
    journal = journals.load(store, session)
    if journal.last_step == token:
        return
    stack = journal.undo if step == "undo" else journal.redo
    skipped = context.get("skipped") if step == "undo" else None
    skip = len(skipped) if isinstance(skipped, list) else 0
    if skip and [p.id for p in stack[len(stack) - skip:]] != list(reversed(skipped)):
        return  # the session changed since
    if len(stack) <= skip or stack[-1 - skip].id != target:
        return  # the session changed since (dropped, or a new point): nothing left to move
    del stack[len(stack) - skip:]  # points equal to the files the undo started from
    if step == "undo":
        journal.push_redo(journal.take_undo(), safety, time.time())
    else:
        journal.push_back(journal.take_redo(), safety)
    journal.last_step = token
    journal.landed = target
    _commit(store, journal, new_ids=[safety])


BEFORE_STEPS = ("restore", "revert")


def before_step(session: str, step: str, label: str) -> dict[str, Any]:
    """The restore context that records the files before a restore or revert as an undo point
    of `session` labelled `label` once it is done (even by recovery after a crash), so the next
    undo takes back exactly that restore or revert."""
    return {"session": session, "step": step, "token": os.urandom(8).hex(), "label": label}


def _record_before(store: Store, session: str, token: str, safety: str, label: object) -> None:
    journal = journals.load(store, session)
    if journal.last_step == token:
        return
    dropped = journals.Dropped([], [])
    if not (journal.undo and journal.undo[-1].id == safety):
        point = journals.make_point(safety, label if isinstance(label, str) else None, None)
        dropped = journal.record(point, journals.undo_limit())
    journal.last_step = token
    _commit(store, journal, new_ids=[safety])
    _log_dropped(store, session, dropped)


def _safety_of(result: RestoreResult) -> str:
    safety = getattr(result, "safety", None)
    if not isinstance(safety, str) or len(safety) != 40:
        raise StoreError(f"restore returned no safety snapshot ({safety!r}); the journal is "
                         "left as it was")
    return safety


def list_sessions(store: Store) -> list[SessionInfo]:
    """Every session with its counts and the bytes it alone holds."""
    from undostore.history import usage
    from undostore.history.gc import DEFAULT_GRACE_SECONDS

    with store.lock:
        out = []
        for name in journals.session_names(store):
            journal = journals.load(store, name)
            out.append(SessionInfo(name, len(journal.undo), len(journal.redo)))
        groups = {**usage.session_roots(store),
                  **usage.standing_roots(store, time.time() - DEFAULT_GRACE_SECONDS)}
        alone = usage.held_alone(store, groups)
    return [replace(info, bytes=alone.get(info.name, 0)) for info in out]


def require_session(store: Store, name: str, doing: str = "") -> None:
    """UsageError (exit 2) "no session named X", listing the sessions there are, unless
    session `name` has a journal; `doing` starts the message ("nothing to undo: ")."""
    journals.validate_name(name)
    names = journals.session_names(store)
    if name not in names:
        there = ", ".join(repr(n) for n in names) if names else "none yet"
        raise UsageError(f"{doing}no session named {name!r} (sessions: {there})")


def drop_session(store: Store, name: str) -> bool:
    """Forget session `name`: its journal, then its anchors; the `drop` op names what it listed
    and lets it go (the user asked: gc frees it at once). False if it did not exist."""
    journals.validate_name(name)
    with store.lock:
        listed = journals.load(store, name).ids() | anchors.held(store, name)
        existed = journals.delete(store, name)
        released = anchors.release(store, name)
        if existed or released:
            oplog.append(store.path, oplog.Op(time.time(), "drop", session=name,
                                              ids=tuple(sorted(listed))))
    return existed or released > 0


def next_point(store: Store, point: str) -> str | None:
    """Where the turn of undo point `point` ended: the files after it where the host said so
    (`Point.after`), else the undo point after it in the session listing it (its last listing,
    so a turn that changed nothing is skipped); None when it is the newest (the files now).
    Not an undo point: UsageError."""
    wanted = store.resolve(point).hex()
    for name in journals.session_names(store):
        points = journals.load(store, name).undo
        ids = [p.id for p in points]
        if wanted in ids:
            at = len(ids) - 1 - ids[::-1].index(wanted)
            if points[at].after:
                return points[at].after
            return ids[at + 1] if at + 1 < len(ids) else None
    raise UsageError(f"{wanted[:12]} is not an undo point of any session: name the state to "
                     "revert to as well (revert FROM TO)")

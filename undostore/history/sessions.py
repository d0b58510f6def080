"""Sessions: record undo points, undo, redo, list and drop (the library calls behind the CLI).

Every change follows the same order, under the store lock: anchor the snapshots the journal is
about to list, write the journal, release the anchors it no longer lists. A crash between two
steps leaves at most an extra anchor, which the next gc's sweep releases.

A turn is an undo point and the files after it (journal.Point): the host's after-turn event
ends it, else the next snapshot any session records or any restore takes (`close_turns`). Undo
takes back the turns' own changes, 3-way against the files now, and redo applies them again
(history/steps.py): one restore each, whose safety snapshot keeps the files before it. A turn
that changed files ends its session's redo chain once its end is known; prompts do not.

Settings (environment): `UNDOSTORE_UNDO_LIMIT` (undo points kept per session, default 50) and
`UNDOSTORE_GC_EVERY` (run gc after every N undo points recorded in a session, default 20;
0 turns automatic gc off).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from undostore import settings
from undostore.errors import StoreError, UndostoreError, UsageError
from undostore.history import anchors
from undostore.history import journal as journals
from undostore.history.direction import Direction
from undostore.history.journal import Point, SessionWarning
from undostore.history.stepcontext import StepContext
from undostore.history.toolcall import OpenCall, ToolCall
from undostore.store import oplog
from undostore.store.store import MadeId

if TYPE_CHECKING:
    from undostore.diff.pickfile import FilePick
    from undostore.history.retention import OnEvict
    from undostore.history.steps import HeldFile, StepRequest, StepResult
    from undostore.progress import OnProgress
    from undostore.restore.pending import PendingRestore
    from undostore.restore.plan import Differences
    from undostore.restore.restore import Confirm, RestoreResult, Worktree
    from undostore.store.store import Store



class Log(NamedTuple):
    """A session's undo points, newest first, and its redo stack, next redo first; `turns`:
    each undo point's turn number as `undo N` counts (turns.numbers: None, it changed no file;
    the newest turn, while open, counts)."""

    session: str
    undo: list[Point]
    redo: list[Point]
    turns: list[int | None]

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session,
                "undo": [{**p.to_json(), "turn": n} for p, n in zip(self.undo, self.turns,
                                                                    strict=True)],
                "redo": [p.to_json() for p in self.redo]}


class SessionInfo(NamedTuple):
    name: str
    undo: int
    redo: int
    bytes: int = 0      # what the session alone holds: what dropping it and gc would free

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "undo": self.undo, "redo": self.redo, "bytes": self.bytes}


def gc_every() -> int:
    """`UNDOSTORE_GC_EVERY`, else 20; 0 means never."""
    return int(settings.value("UNDOSTORE_GC_EVERY"))


def record_undo_point(store: Store, session: str, snapshot_id_hex: str, label: str | None,
                      meta: Mapping[str, Any] | None,
                      on_evict: OnEvict | None = None) -> bool:
    """Record `snapshot_id_hex` as the newest undo point of `session`, then apply retention
    (history/retention.py; `on_evict` hears of each point it drops). Called with the store lock
    held, right after the snapshot, which ends every open turn (`close_turns`). A point equal
    to the session's newest one records nothing (False): undoing to it would change no file.
    If the newest point's turn changed nothing, a new turn with a label takes it over (label,
    meta, time), so `log`, `show` and `/undo` name the turn that does change them. What leaves the
    journal is named in the operation log, which keeps it restorable for a day
    (history/reflog.py)."""
    from undostore.history import retention  # recording only: undo and redo skip its imports

    point = journals.make_point(snapshot_id_hex, label, meta)
    retention.keep_days(), retention.max_store_bytes()   # a bad setting fails before recording
    with store.lock:
        finish_calls(store, session, snapshot_id_hex)   # the session's next event ends them
        journal = close_turns(store, snapshot_id_hex, session)
        if any(p.by_calls for p in (*journal.undo[-1:], *journal.redo[-1:])):
            # The session's host reports its tool calls (its newest turn, or the one its last
            # undo took back, says so): this turn too is its calls' changes, from its first
            # moment (history/attribution.py).
            point = point._replace(own=())
        newest = journal.undo[-1] if journal.undo else None
        # The files are where the newest turn began: a new turn changes nothing more, unless
        # that turn is its calls' changes and they changed files (and then changed them back:
        # each turn is its own calls, the next prompt's are not the last one's).
        if newest is not None and newest.id == point.id and not (newest.by_calls
                                                                 and newest.changed):
            if not newest.changed and point.label is not None:
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


def close_turns(store: Store, files_id: str, session: str) -> journals.Journal:
    """The files are at `files_id` as a point is recorded or a restore begins: every session's
    open turn ends there (a provisional end the host's after-turn event may replace), and
    `session`'s turn ends for good (it moves on). A turn that changed files ends its
    session's redo chain (`Journal.close_turn`). Returns `session`'s journal. The store lock
    is held."""
    own = None
    for name in journals.session_names(store):
        journal = journals.load(store, name)
        if name == session:
            own = journal
        if journal.undo and not journal.undo[-1].ended:
            cleared = journal.close_turn(files_id, final=name == session)
            _commit(store, journal, new_ids=[files_id])
            _log_dropped(store, name, journals.Dropped(cleared, []))
    return own if own is not None else journals.load(store, session)


def _log_dropped(store: Store, session: str, dropped: journals.Dropped) -> None:
    """Name in the operation log what left a journal: the log keeps it for a day."""
    now = time.time()
    for kind, points in (("clear-redo", dropped.cleared), ("expire", dropped.expired)):
        for point in points:
            oplog.append(store.path, oplog.Op(now, kind, session=session, id=point.id,
                                              label=point.label,
                                              ids=(point.after,) if point.after else ()))


def record_turn_end(store: Store, session: str, snapshot_id_hex: str,
                    event_id: str | None = None) -> journals.Point | None:
    """Record the files after the turn of `session`'s newest undo point (the host's after-turn
    event); a turn that changed files ends the session's redo chain. None when the session has
    no point, its newest turn ended already (the event of an `/undo` prompt, say), or
    `event_id` names another turn than that point's. The store lock is held."""
    with store.lock:
        finish_calls(store, session, snapshot_id_hex)
        journal = journals.load(store, session)
        if not journal.undo or journal.undo[-1].ended:
            return None
        if event_id is not None and journal.undo[-1].meta.get("event_id") not in (None,
                                                                                  event_id):
            return None
        cleared = journal.close_turn(snapshot_id_hex, final=True)
        _commit(store, journal, new_ids=[snapshot_id_hex])
        _log_dropped(store, session, journals.Dropped(cleared, []))
    return journal.undo[-1]


def record_call_start(store: Store, session: str, call: ToolCall | None,
                      before: str | None = None,
                      new_meta: Callable[[], Mapping[str, Any] | None] | None = None) -> bool:
    """A tool call of `session` began with the files at `before`: its newest turn takes it
    (history/attribution.py), and is from now on its calls' changes; `call` None: a call that
    changes nothing here, which says only that much. A session with no open turn to take it
    (its host was wired mid-conversation; its turn ended, or an undo or redo ended it) gets
    one, from the files as the call began, so no call goes unrecorded or into a turn that is
    over (its metadata from `new_meta`); False where there are no such files (a call that
    changes nothing). The store lock is held."""
    with store.lock:
        journal = journals.load(store, session)
        if not journal.undo or journal.undo[-1].ended:
            if before is None:
                return bool(journal.undo)
            meta = new_meta() if new_meta is not None else None
            journal.record(journals.make_point(before, None, meta)._replace(own=()),
                           journals.undo_limit())
        point = journal.undo[-1]
        if call is None or before is None:
            if point.own is None:
                journal.undo[-1] = point._replace(own=())
                _commit(store, journal, new_ids=[])
            return True
        from undostore.history import activity

        now = time.time()
        others = tuple(c for c in point.open_calls if c.call.call_id != call.call_id)
        journal.undo[-1] = point._replace(
            own=point.own if point.own is not None else (),
            open_calls=(*others, OpenCall(call, before, now)))
        _commit(store, journal, new_ids=[before])
        activity.begin(store.cache_dir, activity.Span(session, call.call_id, call.kind,
                                                      call.paths, now, before=before))
    return True


def open_call(store: Store, session: str, call_id: str) -> OpenCall | None:
    """`session`'s call `call_id` if it is still open in its newest turn."""
    journal = journals.load(store, session)
    open_calls = journal.undo[-1].open_calls if journal.undo else ()
    return next((c for c in open_calls if c.call.call_id == call_id), None)


def finish_calls(store: Store, session: str, after: str, call_id: str | None = None) -> int:
    """End `session`'s open call `call_id` (None: every open one: the session's next prompt,
    turn end or step ends a call whose after event never came) with the files at `after`,
    adding what it changed to its turn. How many ended. The store lock is held."""
    with store.lock:
        journal = journals.load(store, session)
        point = journal.undo[-1] if journal.undo else None
        ending = [c for c in point.open_calls
                  if call_id is None or c.call.call_id == call_id] if point else []
        if point is None or not ending:
            return 0
        from undostore.history import activity, attribution  # only where a call ends

        now = time.time()
        from undostore.history.toolcall import CallNote

        own = point.own or ()
        doubt = dict(point.doubt)
        notes = list(point.notes)
        for call in ending:
            activity.end(store.cache_dir, session, call.call.call_id, now, after)
            found = attribution.call_changes(store, call, after)
            if call_id is None:   # its after event never came: ended by what came next
                found = attribution.unreported_end(store.root, call, found, now)
            changes, doubtful = attribution.shared(store, session, call, found, after, now)
            own = attribution.add_call(store, own, point.id, changes, listed=True)
            doubt.update(doubtful)
            changed = [path for path, (was, now_is) in changes.items() if was != now_is]
            if changed:
                notes.append(CallNote.of(call, changed, after))
        journal.undo[-1] = point._replace(
            own=own, open_calls=tuple(c for c in point.open_calls if c not in ending),
            calls=point.calls + len(ending), doubt=tuple(sorted(doubt.items())),
            notes=tuple(notes))
        # `after` is listed (and anchored) only by the note of a call that changed files
        noted = len(notes) > len(point.notes)
        _commit(store, journal, new_ids=[*(sha for pair in own for sha in pair),
                                         *([after] if noted else [])])
    return len(ending)


def _apply_retention(store: Store, on_evict: OnEvict | None) -> bool:
    """KEEP_DAYS and MAX_STORE_MB; True if gc ran. A failure only postpones the cleanup."""
    from undostore.history import retention

    try:
        report = retention.enforce(store, on_evict)
        if report.over_cap is not None:   # said once, when first found (retention.py)
            warnings.warn(SessionWarning(report.over_cap), stacklevel=3)
        return report.gc_runs > 0
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
    from undostore.history.turns import numbers

    journal = journals.load(store, session)
    return Log(session, list(reversed(journal.undo)), list(reversed(journal.redo)),
               numbers(journal))


def undo(wt: Worktree, session: str, *, steps: int = 1, to: str | None = None,
         whole: bool = False, merge: bool = False, dry_run: bool = False,
         confirm: Confirm | None = None, on_progress: OnProgress | None = None) -> StepResult:
    """Take back the session's last `steps` turns that changed files (or every turn back to
    point `to`: an id or prefix), each turn's own change 3-way against the files now, in one
    restore; `whole`: the whole folder back to the oldest undone point. The turns move to
    the redo stack (history/steps.py)."""
    return step(wt, session, Direction.UNDO, steps=steps, to=to, whole=whole, merge=merge,
                 dry_run=dry_run, confirm=confirm, on_progress=on_progress)


def redo(wt: Worktree, session: str, *, steps: int = 1, merge: bool = False,
         dry_run: bool = False, confirm: Confirm | None = None,
         on_progress: OnProgress | None = None) -> StepResult:
    """Apply the session's last `steps` undone turns again, 3-way, in one restore."""
    return step(wt, session, Direction.REDO, steps=steps, merge=merge, dry_run=dry_run,
                 confirm=confirm, on_progress=on_progress)


def step(wt: Worktree, session: str, direction: Direction, *, steps: int = 1, to: str | None = None,
         whole: bool = False, merge: bool = False, keep_doubtful: bool = False,
         paths: list[str] | None = None, turn: int | None = None, call: int | None = None,
         picks: list[FilePick] | None = None, dry_run: bool = False,
         confirm: Confirm | None = None, on_progress: OnProgress | None = None) -> StepResult:
    """An undo or redo of `session` (`undo`, `redo`): the one entry every caller's request
    goes through. `whole` is for undo alone (UsageError before any work otherwise). A turn
    whose files are in doubt (another conversation's call ran too) is refused
    (DoubtfulChange) unless `keep_doubtful`, which leaves those files as they are. `paths`
    (root-relative pathspecs, as git takes them): only those paths of the turns' change
    (history/steps.py `narrow`); the rest of each turn stays where it is. `turn` (undo only):
    turn K as `log` numbers them alone, the newer turns kept (3-way; conflicts refused).
    `call` (undo only): that call of the turn (`turn`, default 1) alone (steps.call_paths).
    `picks`: only the hunks picked of the files `held_files` listed for the same request
    (steps.narrow_hunks)."""
    check = _checked_request(direction, steps=steps, to=to, whole=whole, paths=paths,
                             turn=turn, call=call)
    if whole and picks is not None:
        raise UsageError("--whole puts the whole folder back, so it takes no hunks")
    # Here, not at the top: recording an undo point (the hook, on every prompt) needs none of
    # the restore machinery.
    from dataclasses import replace

    from undostore.history import steps as multi
    from undostore.history.blame import name_changes
    from undostore.restore.restore import recover_pending, restore
    from undostore.restore.revert import UnresolvedMarkers

    store = wt.store
    recovered: list[str] = []
    told = wt.on_recovery

    def on_recovery(pending: PendingRestore) -> None:
        recovered.append(f"an interrupted restore to {pending.target[:12]} "
                         f"({pending.files} file(s))")
        if told is not None:
            told(pending)

    wt = replace(wt, on_recovery=on_recovery)
    with store.lock:
        recover_pending(wt)
        now = wt.snapshot()
        request = _request(store, session, direction, now.id, check)
        if picks is not None:
            request = multi.narrow_hunks(store, request, picks)
        # The trees the merge read and made, and those it flattened, for the restore.
        bodies: dict[bytes, bytes] = {}
        differences: Differences = {}
        doubt = {} if whole else multi.doubt_of(request)
        if doubt and not keep_doubtful:
            raise multi.DoubtfulChange(request, doubt)
        composed = multi.compose(store, request, bodies, leave=frozenset(doubt),
                                 differences=differences)
        if composed.conflicts and not merge:
            raise multi.StepConflict(request, name_changes(store, composed.conflicts, now.id))
        if composed.still_marked:
            raise UnresolvedMarkers(composed.still_marked)
        context = request.context(os.urandom(8).hex())
        result = restore(wt, MadeId(composed.target), expected=None if whole else MadeId(now.id),
                         dry_run=dry_run, confirm=confirm, context=context.to_json(),
                         on_progress=on_progress, now=now, bodies=bodies,
                         differences=differences)
        if not dry_run:  # usually done already, inside the restore; a no-op restore is not
            finish_step(store, context, composed.target, _safety_of(result))
            _tell_the_model(store, session, request, result)
    return multi.StepResult.of(result, request, composed, recovered[0] if recovered else None)


def held_files(wt: Worktree, session: str, direction: Direction, *, steps: int = 1,
               to: str | None = None, paths: list[str] | None = None,
               turn: int | None = None, call: int | None = None) -> list[HeldFile]:
    """Each file's change the same `step` would take (steps.held_files): what `undo -p` shows
    hunk by hunk before it asks `step` for the hunks picked (`picks`). A restore a crash left
    half-done is finished first, as `step` would: the person is asked about the files as they
    are, never about a half-restored one."""
    from undostore.history import steps as multi
    from undostore.restore.restore import recover_pending

    check = _checked_request(direction, steps=steps, to=to, whole=False, paths=paths,
                             turn=turn, call=call)
    store = wt.store
    with store.lock:
        recover_pending(wt)
        now = wt.snapshot()
        return multi.held_files(store, _request(store, session, direction, now.id, check))


class _Asked(NamedTuple):
    """A step's options once checked (`_checked_request`)."""

    steps: int
    to: str | None
    whole: bool
    paths: list[str] | None
    wanted: Callable[[str], bool] | None   # the paths' filter; None: every path
    turn: int | None
    call: int | None


def _checked_request(direction: Direction, *, steps: int, to: str | None, whole: bool,
                     paths: list[str] | None, turn: int | None, call: int | None) -> _Asked:
    """The step's options, UsageError for ones that do not go together (before any work)."""
    if whole and direction is Direction.REDO:
        raise UsageError("--whole is for undo: redo applies the undone turns again")
    if call is not None:
        if direction is Direction.REDO or paths:
            raise UsageError("--call N takes back one call's change: it is for undo, with no "
                             "paths")
        turn = 1 if turn is None else turn
    if turn is not None:
        if direction is Direction.REDO:
            raise UsageError("--turn is for undo: redo applies the next undone turn again")
        if whole or to is not None or steps != 1:
            raise UsageError("--turn K takes back that one turn: it goes with no N, --to or "
                             "--whole")
        steps = turn
    if whole and paths:
        raise UsageError("--whole puts the whole folder back, so it takes no paths (`undostore "
                         "restore ID -- PATH` puts some paths back to a point)")
    wanted_paths = None
    if paths:
        from undostore.diff.trees import PathFilter

        wanted_paths = PathFilter(paths)   # a path leaving the root: UsageError, before any work
    return _Asked(steps, to, whole, paths, wanted_paths.wants_file if wanted_paths else None,
                  turn, call)


def _request(store: Store, session: str, direction: Direction, now: str, asked: _Asked
             ) -> StepRequest:
    """The step's request from the journal (the store lock held, `now` the files now)."""
    from undostore.history import steps as multi

    finish_calls(store, session, now)
    wanted = resolve_point(store, asked.to) if asked.to is not None else None
    journal = journals.load(store, session)
    journal.close_turn(now, final=True)   # as finish_step will, for good, once done
    request = multi.plan(journal, direction, now, steps=asked.steps, to=wanted,
                         whole=asked.whole)
    if asked.call is not None:
        picked = multi.call_paths(store, request.turns[-1], asked.call)
        return multi.narrow(store, request, picked.__contains__, sorted(picked),
                            oldest_only=True)
    if asked.wanted is not None or asked.turn is not None:
        return multi.narrow(store, request, asked.wanted, list(asked.paths or ()),
                            oldest_only=asked.turn is not None)
    return request


def _tell_the_model(store: Store, session: str, request: Any, result: Any) -> None:
    """Leave the session's model a note of the turns this step moved and their files (given
    with its next prompt: history/notes.py)."""
    from undostore.history import notes

    if not (result.created or result.modified or result.deleted):
        return
    notes.add(store, session, request.direction.value,
              [(p.id, p.label or p.id[:12]) for p, _ in request.moving()],
              [*result.created, *result.modified, *result.deleted])


def resolve_point(store: Store, ref: str) -> str:
    """The full id of `ref` (an id or prefix), which `undo --to` takes back to."""
    return store.resolve(ref).hex()


def finish_step(store: Store, context: StepContext | None, target: str, safety: str,
                wrote: list[str] | None = None) -> None:
    """What a restore runs once the files are at `target` (Worktree.step_done), even when
    recovery after a crash finishes it: an undo or redo moves its turns (history/steps.py), a
    restore or revert records the files before it as a point; each once (its token). None:
    the restore did no history step. `wrote`: the paths the restore changed, as its journal
    lists them (None: found from the two trees)."""
    if context is None:
        return
    session, step, token = context.session, context.step, context.token
    journal = journals.load(store, session)
    if journal.last_step == token:
        # Applied already: by the restore itself, which `step` then calls this again after, or
        # before a crash that recovery finishes (its files were noted first).
        return
    _step_wrote(store, token, safety, target, wrote)
    if step in BEFORE_STEPS:
        _record_before(store, session, token, safety, target, context.label)
        return
    if step not in (Direction.UNDO.value, Direction.REDO.value):
        return
    from undostore.history import steps as multi

    if context.now is not None:
        journal = close_turns(store, context.now, session)   # the files before the step end them
    if not multi.matches(journal, context):
        return  # the session changed since: nothing left to move
    multi.apply(journal, context)
    journal.last_step = token
    journal.stepped = time.time()
    _commit(store, journal, new_ids=[safety])


def _step_wrote(store: Store, token: str, safety: str, target: str,
                wrote: list[str] | None) -> None:
    """Note the files a step wrote (from the files before it to its target) as an undostore
    step's, so that no session's shell call running meanwhile takes them for its own
    (history/activity.py). The restore's own list where it gives one: a diff of two big trees
    costs a tenth of a 2,000-file undo."""
    from undostore.history import activity
    from undostore.history.attribution import tree_changes

    if safety and target and safety != target:
        paths = tuple(wrote) if wrote is not None else tuple(tree_changes(store, safety, target))
        now = time.time()
        activity.begin(store.cache_dir, activity.Span(None, token, activity.STEP, paths, now,
                                                      now))


BEFORE_STEPS = ("restore", "revert")


def before_step(session: str, step: str, label: str) -> StepContext:
    """The restore context that records the files before a restore or revert as an undo point
    of `session` labelled `label` once it is done (even by recovery after a crash), so the next
    undo takes back exactly that restore or revert."""
    return StepContext(session, step, os.urandom(8).hex(), label=label)


def _record_before(store: Store, session: str, token: str, safety: str, target: str,
                   label: str | None) -> None:
    """The files before a restore or revert (`safety`) become an undo point whose turn is the
    restore (it ended at `target`): the next undo takes back exactly that change."""
    journal = close_turns(store, safety, session)
    point = journals.make_point(safety, label, None)
    dropped = journals.Dropped([], [])
    if journal.undo and journal.undo[-1].id == safety and not journal.undo[-1].changed:
        journal.undo[-1] = point   # a turn that changed nothing gives way, as to a prompt
    else:
        dropped = journal.record(point, journals.undo_limit())
    cleared = journal.close_turn(target, final=True)   # a restore that changed files ends redo
    dropped = dropped._replace(cleared=cleared)
    journal.last_step = token
    _commit(store, journal, new_ids=[safety, target])
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

    with store.reading():
        out = []
        for name in journals.session_names(store):
            journal = journals.load(store, name)
            out.append(SessionInfo(name, len(journal.undo), len(journal.redo)))
        groups = {**usage.session_roots(store),
                  **usage.standing_roots(store, time.time() - DEFAULT_GRACE_SECONDS)}
        alone = usage.held_alone(store, groups)
    return [info._replace(bytes=alone.get(info.name, 0)) for info in out]


def require_session(store: Store, name: str, doing: str = "") -> None:
    """UsageError (exit 2) "no session named X", listing the sessions there are, unless
    session `name` has a journal; `doing` starts the message ("nothing to undo: ")."""
    journals.validate_name(name)
    names = journals.session_names(store)
    if name not in names:
        raise no_session(name, names, doing)


def no_session(name: str, names: list[str], doing: str = "") -> UsageError:
    """The error for a `--session` naming none of `names` (the sessions there are)."""
    there = ", ".join(repr(n) for n in names) if names else "none yet"
    return UsageError(f"{doing}no session named {name!r} (sessions: {there})")


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


def next_point(store: Store, point: str, session: str | None = None) -> str | None:
    """Where the turn of undo point `point` ended: the files after it where known
    (`Point.after`), else the undo point after it in the session listing it (its last listing,
    so a turn that changed nothing is skipped); None when it is the newest (the files now).
    `session`'s turns are looked at first (another session may hold a point with the same id:
    the same files). Not an undo point: UsageError."""
    wanted = store.resolve(point).hex()
    names = journals.session_names(store)
    if session in names:
        names = [session, *(n for n in names if n != session)]
    for name in names:
        points = journals.load(store, name).undo
        ids = [p.id for p in points]
        if wanted in ids:
            at = len(ids) - 1 - ids[::-1].index(wanted)
            if points[at].after:
                return points[at].after
            return ids[at + 1] if at + 1 < len(ids) else None
    raise UsageError(f"{wanted[:12]} is not an undo point of any session: name the state to "
                     "revert to as well (revert FROM TO)")

"""The library's front door: one root, its store, and every operation as one method call.

    from undostore import Workspace
    with Workspace("path/to/project") as ws:
        point = ws.snapshot(session="agent", label="before turn 7")
        ...
        ws.undo(session="agent", confirm=lambda plan: True)

Each method is the single library call behind one CLI command. The facade composes policy that
no layer below knows about: finishing an interrupted restore before anything else, undo as a
restore plus a journal step, and which ids a prefix may name. No library module imports it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from undostore.errors import UnknownSnapshotError
from undostore.git.objects import TREE
from undostore.limits import DEFAULT_LIMITS, Limits
from undostore.restore.cancel import Cancel
from undostore.settings import DEFAULT_SESSION, named_session
from undostore.store.discover import discover, named
from undostore.store.store import MadeId, Store, check_root, default_store_path

if TYPE_CHECKING:
    from undostore.diff.change import Change
    from undostore.diff.pickfile import FileChange, FilePick
    from undostore.diff.trees import DiffResult, PathFilter
    from undostore.history.direction import Direction
    from undostore.history.gc import GcResult
    from undostore.history.journal import Point
    from undostore.history.retention import Eviction
    from undostore.history.sessions import Log, SessionInfo
    from undostore.history.status import Status
    from undostore.history.steps import GitMoved, HeldFile, StepResult
    from undostore.history.stores import Adoption
    from undostore.history.toolcall import ToolCall
    from undostore.history.turns import Turn, TurnSpan
    from undostore.history.verify import VerifyResult
    from undostore.progress import OnProgress
    from undostore.restore.pending import PendingRestore
    from undostore.restore.restore import Confirm, RestoreResult, Worktree
    from undostore.restore.revert import RevertResult
    from undostore.snapshot.resume import Kept
    from undostore.snapshot.snapshot import FirstSnapshot, SnapshotOptions, SnapshotResult
    from undostore.store.once import EventAnswer, OnceKey
    from undostore.store.oplog import Op


def session_name(session: str | None) -> str:
    """`--session`, else `UNDOSTORE_SESSION`, else "default" (the contract)."""
    return named_session(session) or DEFAULT_SESSION


class Workspace:
    """A root folder and its private store."""

    def __init__(self, root: str | os.PathLike[str] | None = None,
                 store: str | os.PathLike[str] | None = None, *, force: bool = False,
                 rebind: bool = False, limits: Limits = DEFAULT_LIMITS,
                 create: bool = True) -> None:
        """`root` None: found from the current folder as the contract's "root" says
        (`self.discovery` tells how); `store` None: `UNDOSTORE_STORE`, else the default. A store
        refuses another root unless `rebind` re-points it here (a moved project). `limits`: the
        batch and size limits of its snapshots and restores (limits.py). `create` False: a
        root with no store is NoStoreError (read-only callers make nothing)."""
        store_path = os.fspath(store) if store is not None else os.environ.get("UNDOSTORE_STORE")
        store_path = store_path or None
        if root is None:
            self.discovery = discover(store=store_path, force=force)
        else:
            self.discovery = named(root, store_path)
        self.root = check_root(self.discovery.root if root is None else os.fspath(root), force)
        self.force = force
        self.limits = limits
        # A moved project: the store its old place left, taken along, or the candidates
        # (history/stores.py); None: nothing of the kind.
        self.adopted: Adoption | None = None
        if store_path is None and not rebind and not os.path.isfile(
                os.path.join(default_store_path(self.root), "FORMAT")):
            from undostore.history.stores import adopt_moved

            self.adopted = adopt_moved(self.root)
        self.store = Store(store_path or default_store_path(self.root), root=self.root,
                           rebind=rebind, create=create)
        self.store.listed_snapshots = self._listed_snapshots
        self._recovered = False
        # Called before a command finishes a restore a crash left half-done (see
        # restore.PendingRestore.finishing_notice); the CLI prints it on stderr.
        self.on_recovery: Callable[[PendingRestore], None] | None = None
        # Called for each undo point retention drops (UNDOSTORE_KEEP_DAYS, _MAX_STORE_MB):
        # the operation log records it.
        self.on_evict: Callable[[Eviction], None] | None = None
        # Called as checkpoint(what, path) around each file operation of a restore, undo, redo,
        # revert or recovery (restore.Worktree.checkpoint): fine-grained progress, or a test
        # pausing a restore at one step.
        self.checkpoint: Callable[[str, str], None] | None = None
        # A stop request for a restore, undo, redo or revert (restore/cancel.py): set it from
        # another thread or a signal handler; the restore rolls back and raises Interrupted.
        self.cancel = Cancel()
        # How to fork this process, set by a front end that may (the CLI: `os.fork` where no
        # other thread runs): a big tree's walk then lstats in two processes
        # (snapshot/lstatsplit.py). None: the library never forks.
        self.fork: Callable[[], int | None] | None = None

    def _listed_snapshots(self) -> set[bytes]:
        """What prefixes resolve against: what the journals list, and every id the operation
        log vouches for (handed out, or let go by a journal, within the day)."""
        from undostore.history.anchors import listed_snapshots
        from undostore.history.reflog import WINDOW_SECONDS, handed_out

        return listed_snapshots(self.store) | handed_out(self.store,
                                                         time.time() - WINDOW_SECONDS)

    # --- snapshot -----

    def first_snapshot_kept(self) -> Kept | None:
        """None when this tree was snapshotted before (its stat cache vouches for its files);
        else what earlier tries of its first snapshot kept (none: `files` 0), so that a front
        end can say that the first snapshot, which reads every file, is under way and how far
        the last try got (snapshot/resume.py)."""
        if os.path.exists(self.store.stat_cache_path):
            return None
        from undostore.snapshot.resume import kept_path, load, usable

        return usable(load(kept_path(self.store)), self.store)

    def first_snapshot(self, options: SnapshotOptions | None = None) -> FirstSnapshot | None:
        """The tree's first snapshot, taken ahead of a host's first prompt (`init`), which
        would otherwise wait while every file is read (None: the tree has one). On a tree big
        enough to be worth a watchman daemon, where the setting and the installed programs
        allow it (snapshot/watchman.py `worth_starting`), one more snapshot starts watchman's
        daemon and watch, so every later one asks it what changed instead of walking."""
        from undostore.snapshot.snapshot import FirstSnapshot, SnapshotOptions
        from undostore.snapshot.watchman import worth_starting

        if self.first_snapshot_kept() is None:
            return None
        result = self.snapshot(options=options)
        if not worth_starting(result.files):
            return FirstSnapshot(result, False)
        trouble: list[str] = []
        watched = self.snapshot(options=SnapshotOptions(
            force=self.force, fsmonitor="watchman",
            on_warning=lambda path, message: trouble.append(message))).watched
        return FirstSnapshot(result, watched, None if watched
                             else "; ".join(trouble) or "no daemon answered")

    def snapshot(self, session: str | None = None, label: str | None = None,
                 meta: dict[str, Any] | None = None,
                 options: SnapshotOptions | None = None) -> SnapshotResult:
        """Capture the files now; with `session`, also record an undo point."""
        from undostore.store.oplog import cut_label

        label = cut_label(label)
        if session is not None:
            from undostore.history.journal import validate_name

            validate_name(session_name(session))  # a bad name fails before any work is done
        with self.store.lock:
            self._recover_if_needed()
            result = self._snapshot_locked(options)
            self._log("snapshot", session=session_name(session) if session is not None else None,
                      id=result.id, label=label)
            if session is not None:
                result = result._replace(recorded=self._record_point(
                    session_name(session), result.id, label, meta))
            self._merge_small_packs()
        return result

    def _merge_small_packs(self) -> None:
        """Each capture writes a pack: once they pile up, one (store/packmerge.py). The lock is
        held; called where a hook's work is done, never inside a restore."""
        from undostore.store.packmerge import merge_small_packs

        merge_small_packs(self.store)

    def _record_point(self, session: str, snapshot_id: str, label: str | None,
                      meta: dict[str, Any] | None = None) -> bool:
        """An undo point of `session` (lock held), with the commit the user's git HEAD names
        as its turn begins (`git_head`: an undo says when it moved since, usergit.py)."""
        from undostore.history.sessions import record_undo_point

        return record_undo_point(self.store, session, snapshot_id, label,
                                 {**(meta or {}), **self._turn_meta()}, on_evict=self._evicted)

    def _turn_meta(self) -> dict[str, Any]:
        """What every undo point keeps of the moment its turn begins: the commit the user's
        git HEAD names (usergit.py), where it names one."""
        from undostore.usergit import POINT_META, head_commit

        head = head_commit(self.root)
        return {POINT_META: head} if head is not None else {}

    def end_turn(self, session: str | None = None,
                 options: SnapshotOptions | None = None,
                 event_id: str | None = None) -> SnapshotResult:
        """Capture the files after a turn and record them with the session's newest undo point
        (the host's after-turn event: `Stop`); `show`, `diff --turn` and `revert` of the turn
        compare with it. A session with no point records nothing (`recorded` False), nor does
        an `event_id` naming another turn than the newest point's (its `meta["event_id"]`):
        the late end of an earlier turn, which a host may deliver after the next prompt."""
        from undostore.history.sessions import record_turn_end

        name = session_name(session)
        with self.store.lock:
            self._recover_if_needed()
            result = self._snapshot_locked(options)
            point = record_turn_end(self.store, name, result.id, event_id)
            self._merge_small_packs()
            result = result._replace(recorded=point is not None)
            self._log("end-turn", session=name, id=result.id,
                      label=point.label if point is not None else None)
        return result

    def once(self, host: str, key: OnceKey | None, arrived: float,
             act: Callable[[], EventAnswer], replay: Callable[[Any], Any]) -> Any:
        """A host's event performed once (store/once.py): under the store lock, the answer kept
        for `key` is replayed when this event `arrived` (its hook started) before that answer
        was given or within `key.window` after it (`replay` None: unusable, performed
        again); else `act` performs it, and what it keeps answers its duplicates. Either way
        `host`'s hook is noted as seen here (`hosts_seen`). `key` None: an event never taken
        for a duplicate."""
        from undostore.store import once

        with self.store.lock:
            book = once.Book(self.store.cache_dir)   # read once: the lock keeps it current
            if key is not None:
                kept = book.recall(key.key, key.window, arrived)
                earlier = replay(kept) if kept is not None else None
                if earlier is not None:
                    return earlier
            performed = act()
            book.remember(host, key.key if key is not None else None, performed.kept)
            return performed.answer

    def hosts_seen(self) -> dict[str, float]:
        """Each host whose hook ran for this store, and when it last did (`time.time()`)."""
        from undostore.store import once

        return once.hosts_seen(self.store.cache_dir)

    def file_limit_passed(self) -> int | None:
        """The file limit (`UNDOSTORE_MAX_FILES`) the last snapshot found the tree over (it
        recorded nothing), None when it was not."""
        from undostore.store import overlimit

        return overlimit.read(self.store.cache_dir)

    def call_started(self, call: ToolCall | None, session: str | None = None) -> bool:
        """A tool call of the session begins (the host's before-tool event): the files are
        captured as it finds them, and the session's newest turn becomes the sum of its calls'
        changes (history/attribution.py). `call` None: a tool known to change nothing, which
        says only that the host reports its calls. False: the session has no turn to take it."""
        from undostore.history.sessions import record_call_start
        from undostore.history.toolcall import FILE

        if call is not None and call.kind == FILE:   # none under the root: changes nothing here
            call = call._replace(paths=self._under_root(call.paths))
            if not call.paths:
                call = None
        with self.store.lock:
            before = None
            if call is not None:
                self._recover_if_needed()
                before = self._call_snapshot(call)
            started = record_call_start(self.store, session_name(session), call, before,
                                        self._turn_meta)
            if call is not None:
                self._merge_small_packs()
            return started

    def _call_snapshot(self, call: ToolCall) -> str:
        """The files as a call finds or leaves them: a file tool's named files read alone
        (the rest as the stat cache has them: no walk), any other call's whole tree."""
        from undostore.history.toolcall import FILE
        from undostore.snapshot.snapshot import SnapshotOptions

        # Listed before the lock goes (the journal's open call, the activity record, the
        # call's note): no recent-id write.
        options = SnapshotOptions(force=self.force, limits=self.limits, listed=True)
        if call.kind == FILE:
            options = options._replace(only=call.paths)
        return self._snapshot_locked(options).id

    def _under_root(self, paths: tuple[str, ...]) -> tuple[str, ...]:
        """`paths` (absolute, or relative to the root) as the root's own `/`-separated paths,
        each as the file system resolves it (a link to a file: the file it writes); those
        outside the root left out."""
        root = os.path.realpath(self.root)
        inside = []
        for path in paths:
            try:
                rel = os.path.relpath(os.path.realpath(os.path.join(self.root, path)), root)
            except ValueError:   # Windows: another drive
                continue
            if rel not in (".", os.pardir) and not rel.startswith(os.pardir + os.sep) \
                    and not os.path.isabs(rel):
                inside.append(rel.replace(os.sep, "/"))
        return tuple(dict.fromkeys(inside))

    def call_finished(self, call_id: str, session: str | None = None) -> bool:
        """The session's tool call `call_id` ended (the host's after-tool event, or its
        failure): what it changed is added to its turn. False: no such call is open (it
        ended with the session's next prompt, or began before its turn)."""
        from undostore.history.sessions import finish_calls, open_call

        name = session_name(session)
        with self.store.lock:
            self._recover_if_needed()
            running = open_call(self.store, name, call_id)
            if running is None:
                return False
            after = self._call_snapshot(running.call)
            finished = finish_calls(self.store, name, after, call_id) > 0
            self._merge_small_packs()
            return finished

    def notes_for_model(self, session: str | None = None) -> list[str]:
        """What the session's model is to be told with its next prompt (the turns an undo or
        redo took back or applied again, and their files), oldest first; gone once taken."""
        from undostore.history import notes

        with self.store.lock:
            return notes.take(self.store, session_name(session))

    def _snapshot_locked(self, options: SnapshotOptions | None = None) -> SnapshotResult:
        """A snapshot with the lock already held (also the safety snapshot of a restore)."""
        from undostore.snapshot.snapshot import SnapshotOptions, take_snapshot

        if options is None:
            options = SnapshotOptions(force=self.force, limits=self.limits)
        elif options.limits is None:
            options = options._replace(limits=self.limits)
        if options.fork is None and self.fork is not None:
            options = options._replace(fork=self.fork)
        return take_snapshot(self.root, self.store, options)

    def look(self) -> SnapshotResult:
        """The files now as a snapshot, for a read-only command (`diff`, `show` of the open
        turn): its new objects held in memory (`store.held`), nothing written to the store,
        which may be on a read-only disk. A restore a crash left half-done is refused, not
        finished: the files are half-way, and a command that changes files finishes it."""
        from undostore.errors import SnapshotError
        from undostore.git.heldobjects import HeldTooMuch

        try:
            return self._look()
        except HeldTooMuch:
            self.store.held.clear()
            raise SnapshotError(
                f"the files now hold more than {self.limits.look_held_bytes // 2**20} MiB of "
                "content no recorded snapshot has, which a read-only command would hold in "
                "memory: `undostore snapshot` records it, then ask again", self.root) from None

    def _look(self) -> SnapshotResult:
        from undostore.errors import PendingRecoveryError
        from undostore.snapshot.snapshot import SnapshotOptions, take_snapshot

        with self.store.reading():
            self.store.held.clear()   # the last look's objects: only the newest is compared with
            if self._restore_pending():
                raise PendingRecoveryError(
                    "a restore a crash left half-done is pending, so the files are half-way: "
                    "any command that changes files (`undostore snapshot`) finishes it, "
                    "`undostore restore --abort` rolls it back", self.store.restore_dir)
            return take_snapshot(self.root, self.store, SnapshotOptions(
                force=self.force, limits=self.limits, read_only=True, fork=self.fork))

    def resolve(self, snapshot_id: str) -> bytes:
        return self.store.resolve(snapshot_id)

    # --- diff -----

    def compare(self, from_id: str, to_id: str | None = None, paths: list[str] | None = None,
                find_renames: bool = False) -> DiffResult:
        """Changes from snapshot `from_id` to `to_id` (None: snapshot the files now, outside
        any journal), with the two ids compared."""
        from undostore.diff.trees import DiffResult, diff_trees

        from_sha = self._resolve_side(from_id, "FROM")
        to_sha = (bytes.fromhex(self.look().id) if to_id is None
                  else self._resolve_side(to_id, "TO"))
        changes = diff_trees(self.store, from_sha, to_sha, paths=paths, find_renames=find_renames)
        return DiffResult(from_sha.hex(), to_sha.hex(), changes, to_is_now=to_id is None)

    def diff(self, from_id: str, to_id: str | None = None, paths: list[str] | None = None,
             find_renames: bool = False) -> list[Change]:
        """Changes from snapshot `from_id` to `to_id` (None: the files now)."""
        return self.compare(from_id, to_id, paths=paths, find_renames=find_renames).changes

    def _resolve_side(self, ref: str, which: str) -> bytes:
        """A side of a comparison: what `resolve` takes, or the full id of a `look` this
        process took (held in memory, never handed out: a front end compares with it), or an
        id the library made (`MadeId`: a journal's point), taken as it is."""
        if isinstance(ref, MadeId):
            return bytes.fromhex(ref)
        if len(ref) == 40:
            try:
                sha = bytes.fromhex(ref)
            except ValueError:
                sha = b""
            if self.store.held.get(sha, (0,))[0] == TREE:
                return sha
        try:
            return self.resolve(ref)
        except UnknownSnapshotError as err:
            raise UnknownSnapshotError(f"{which}: {err.message}") from None

    # --- restore -----

    def _worktree(self) -> Worktree:
        from undostore.history.sessions import finish_step
        from undostore.history.stepcontext import StepContext
        from undostore.restore.restore import Worktree

        return Worktree(self.root, self.store, self._snapshot_locked,
                        step_done=lambda context, target, safety, wrote: finish_step(
                            self.store, StepContext.of_json(context), target, safety, wrote),
                        on_recovery=self.on_recovery, checkpoint=self.checkpoint,
                        cancel=self.cancel, limits=self.limits)

    def restore(self, target: str, *, session: str | None = None, expected: str | None = None,
                paths: list[str] | None = None, picks: list[FilePick] | None = None,
                dry_run: bool = False, confirm: Confirm | None = None,
                on_progress: OnProgress | None = None) -> RestoreResult:
        """Make the files equal to snapshot `target`, safely (see restore/restore.py);
        `on_progress` hears how far it is (restore/progress.py). The files before it become an
        undo point of `session` (default as `history_session`) labelled "before restore <id>",
        so `undo` takes back exactly this restore. `paths` (pathspecs relative to the root):
        only those files, the rest staying as they are. `picks`: only the hunks picked of the
        files `restore_files` listed (`restore -p`)."""
        from undostore.history.sessions import before_step
        from undostore.restore.restore import restore

        picked = _path_filter(paths)
        name = self.history_session(session)[0]
        context = before_step(name, "restore", f"before restore {target.strip()[:12]}")
        try:
            result = restore(self._worktree(), target, expected=expected, dry_run=dry_run,
                             confirm=confirm, on_progress=on_progress, context=context.to_json(),
                             paths=picked, picks=picks)
        finally:
            self._recovered = False  # a restore that stopped half-way left a journal
        self._log_restore("restore", result, session=name)
        return result

    def revert(self, from_id: str, to_id: str | None = None, *, session: str | None = None,
               merge: bool = False, paths: list[str] | None = None,
               picks: list[FilePick] | None = None, dry_run: bool = False,
               confirm: Confirm | None = None, on_progress: OnProgress | None = None
               ) -> RevertResult:
        """Take back the change FROM -> TO on the files now, keeping later changes (see
        restore/revert.py). With one id, an undo point: TO is where its turn ended (the files
        after it, else the next point, else the files now). The files before it become an undo
        point of `session` labelled "before revert <id>". `paths` (pathspecs relative to the
        root): only those paths of the change; `picks`: only the hunks picked of the files
        `revert_files` listed (`revert -p`)."""
        from undostore.history.sessions import before_step
        from undostore.restore.revert import revert

        picked = _path_filter(paths)
        name = self.history_session(session)[0]
        if to_id is None:
            to_id = self._turn_end(from_id, name)
        context = before_step(name, "revert", f"before revert {from_id.strip()[:12]}")
        try:
            result = revert(self._worktree(), from_id, to_id, merge=merge, dry_run=dry_run,
                            confirm=confirm, on_progress=on_progress, context=context.to_json(),
                            paths=picked, picks=picks)
        finally:
            self._recovered = False
        if not result.dry_run:
            start, end = result.reverted
            label = f"{start[:12]}..{end[:12]}" + (
                f", {len(result.conflicts)} conflict(s) merged with markers"
                if result.conflicts else "")
            self._log("revert", session=name, id=result.target, label=label,
                      safety=result.safety)
        return result

    def abort_restore(self) -> RestoreResult | None:
        """Roll an interrupted restore back to its safety snapshot."""
        from undostore.restore.restore import abort_pending

        try:
            result = abort_pending(self._worktree())
        finally:
            self._recovered = False
        if result is not None:
            self._log_restore("abort", result)
        return result

    def pending_restore(self) -> PendingRestore | None:
        """The restore a crash left half-done (the next command finishes it), or None."""
        from undostore.restore.pending import pending_restore

        return pending_restore(self.store)

    def _restore_pending(self) -> bool:
        try:
            return bool(os.listdir(self.store.restore_dir))
        except FileNotFoundError:
            return False

    def _recover_if_needed(self) -> None:
        """Finish an interrupted restore before anything else touches the files (lock held)."""
        if self._recovered:
            return
        if self._restore_pending():  # the common case skips importing the restore machinery
            from undostore.restore.restore import recover_pending

            recover_pending(self._worktree())
        self._recovered = True

    # --- sessions -----

    def history_session(self, session: str | None = None) -> tuple[str, bool]:
        """(name, chosen) of the session `log`, `undo`, `redo` and `status` act on: `session`,
        else `UNDOSTORE_SESSION`, else the one with the newest undo point (chosen: True), else
        "default"."""
        from undostore.history.status import history_session

        return history_session(self.store, session)

    def status(self, session: str | None = None) -> Status:
        """Undo and redo counts, a pending restore, the newest point's age (history/status)."""
        from undostore.history.status import read_status

        return read_status(self.store, session)

    def log(self, session: str | None = None, n: int | None = None) -> Log:
        """The session's undo points, newest first, and its redo stack; with `n`, at most `n`
        of each."""
        from undostore.history.sessions import read_log

        log = read_log(self.store, self.history_session(session)[0])
        return log if n is None else log._replace(undo=log.undo[:n], redo=log.redo[:n],
                                                  turns=log.turns[:n])

    def require_session(self, session: str, doing: str = "") -> None:
        """UsageError "no session named X" listing the sessions, unless `session` exists (a
        `--session` naming no session is a usage error; `doing` prefixes the message)."""
        from undostore.history.sessions import require_session

        require_session(self.store, session, doing)

    def restore_files(self, target: str, paths: list[str] | None = None) -> list[FileChange]:
        """Each file's change a restore to snapshot `target` would make (from the files now;
        `paths`: only those), with its hunks: what `restore -p` asks about. Nothing changes."""
        from undostore.restore.picked import file_changes

        with self.store.lock:
            now = bytes.fromhex(self.snapshot().id)
            return file_changes(self.store, now, self.resolve(target), _path_filter(paths))

    def revert_files(self, from_id: str, to_id: str | None = None, *,
                     session: str | None = None, paths: list[str] | None = None
                     ) -> list[FileChange]:
        """Each file's change of FROM -> TO (as `revert` takes them) with its hunks: what
        `revert -p` asks about. Nothing changes."""
        from undostore.restore.picked import file_changes

        if to_id is None:
            to_id = self._turn_end(from_id, self.history_session(session)[0])
        end = self.resolve(to_id) if to_id is not None else bytes.fromhex(self.snapshot().id)
        return file_changes(self.store, self.resolve(from_id), end, _path_filter(paths))

    def _turn_end(self, point: str, session: str) -> str | None:
        """Where the turn of undo point `point` ended (None: the files now), as `revert`
        with one id takes it."""
        from undostore.history.sessions import next_point

        return next_point(self.store, point, session)

    def undo(self, session: str | None = None, *, steps: int = 1, to: str | None = None,
             whole: bool = False, merge: bool = False, keep_doubtful: bool = False,
             paths: list[str] | None = None, turn: int | None = None,
             call: int | None = None, picks: list[FilePick] | None = None,
             dry_run: bool = False, confirm: Confirm | None = None,
             on_progress: OnProgress | None = None) -> StepResult:
        """Take back the session's last `steps` turns (or every turn back to its point `to`):
        each turn's own change, 3-way against the files now, so other changes stay; they move
        to the redo stack. Overlaps: StepConflict (exit 3) with nothing changed, or with
        `merge` conflict markers; `whole`: the whole folder back to the point. Files whose
        change is in doubt (another conversation's call ran too): DoubtfulChange (exit
        3), or with `keep_doubtful` left as they are. `paths` (pathspecs relative to the
        root): only those paths of the turns' change; the rest of each turn stays on the undo
        stack, and the part taken goes to the redo stack. `turn`: turn K as `log` numbers
        them (1 = the last that changed files) alone, the newer turns kept. `call`: that tool
        call of the turn (`turn`, default the last) alone, as `show` numbers them. `picks`:
        only the hunks picked of the files `step_files` listed for the same options
        (`undo -p`); each file's other hunks stay on the undo stack."""
        from undostore.history.direction import Direction

        return self.step(Direction.UNDO, session, steps=steps, to=to, whole=whole,
                         merge=merge, keep_doubtful=keep_doubtful, paths=paths, turn=turn,
                         call=call, picks=picks, dry_run=dry_run, confirm=confirm,
                         on_progress=on_progress)

    def redo(self, session: str | None = None, *, steps: int = 1, merge: bool = False,
             keep_doubtful: bool = False, paths: list[str] | None = None,
             picks: list[FilePick] | None = None, dry_run: bool = False,
             confirm: Confirm | None = None, on_progress: OnProgress | None = None
             ) -> StepResult:
        """Apply the session's last `steps` undone turns again, 3-way, as `undo` takes them
        back (`paths`, `picks`: only those paths or hunks of them, as `undo` takes)."""
        from undostore.history.direction import Direction

        return self.step(Direction.REDO, session, steps=steps, merge=merge,
                         keep_doubtful=keep_doubtful, paths=paths, picks=picks,
                         dry_run=dry_run, confirm=confirm, on_progress=on_progress)

    def step_files(self, direction: Direction, session: str | None = None, *, steps: int = 1,
                   to: str | None = None, paths: list[str] | None = None,
                   turn: int | None = None, call: int | None = None) -> list[HeldFile]:
        """Each file's change that `undo` or `redo` with the same options would take, with its
        hunks (`undo -p` asks about them): `HeldFile.pick` turns a person's answers into
        what `picks` takes. Nothing changes."""
        from undostore.history import sessions

        name = self.history_session(session)[0]
        return sessions.held_files(self._worktree(), name, direction, steps=steps, to=to,
                                   paths=paths, turn=turn, call=call)

    def step(self, direction: Direction, session: str | None = None, **how: Any) -> StepResult:
        """`undo` or `redo` by `direction`, with the same options (`whole` for undo only):
        what the CLI, the hook and the MCP server call with the direction they were asked.
        An undo whose first turn began at another commit of the user's git than HEAD names now
        says so (`git_moved`)."""
        from undostore.history import sessions
        from undostore.history.direction import Direction

        name = self.history_session(session)[0]
        try:
            result = sessions.step(self._worktree(), name, direction, **how)
        finally:
            self._recovered = False
        if direction is Direction.UNDO and result.turns:
            result.git_moved = self._git_moved(result.turns[-1])
        if not result.dry_run and result.target:
            labels = "; ".join(p.label or p.id[:12] for p in result.turns)
            self._log(direction.value, session=name, id=result.target, label=labels,
                      safety=result.safety)
        return result

    def _git_moved(self, first_turn: Point) -> GitMoved | None:
        """The user's git HEAD now, where it is not the commit it named as the first turn
        taken back began (the agent may have committed: an undo cannot take that back)."""
        from undostore.history.steps import GitMoved
        from undostore.usergit import POINT_META, head_commit

        began = first_turn.meta.get(POINT_META)
        now = head_commit(self.root) if isinstance(began, str) else None
        return GitMoved(began, now) if now is not None and now != began else None

    # --- turns -----

    def show(self, n: int | None = None, id: str | None = None, session: str | None = None,
             paths: list[str] | None = None) -> Turn:
        """Turn `n` of the session (1, the default, is the last that changed files), or the turn
        of undo point `id`: its point and what it changed (history/turns.py). `paths` limits the
        changes."""
        from undostore.history import turns
        from undostore.history.journal import load

        journal = load(self.store, self.history_session(session)[0])
        wanted = self.resolve(id).hex() if id is not None else None
        now, open_changed = self._open_turn(journal)
        return self._turn(turns.find(journal, n, wanted, open_changed), paths, now)

    def turns(self, session: str | None = None, n: int | None = None) -> list[Turn]:
        """The session's turns, newest first (at most `n`), each with what it changed and its
        number (None: it changed no file)."""
        from undostore.history import turns
        from undostore.history.journal import load

        journal = load(self.store, self.history_session(session)[0])
        now, open_changed = self._open_turn(journal)
        return [self._turn(span, now=now) for span in turns.spans(journal, n, open_changed)]

    def timeline(self, n: int | None = None) -> list[Turn]:
        """Every session's turns in one timeline, newest first (at most `n`), each with what
        it changed and its calls (`log --all`): who did what beside whom. The files now are
        looked at once, for all the sessions whose newest turn is open."""
        from undostore.history import turns
        from undostore.history.journal import load, session_names

        looked: list[str] = []
        found: list[Turn] = []
        for name in session_names(self.store):
            journal = load(self.store, name)
            now, open_changed = self._open_turn(journal, looked)
            found += [self._turn(span, now=now) for span in turns.spans(journal, n, open_changed)]
        found.sort(key=lambda turn: turn.point.time, reverse=True)
        return found if n is None else found[:n]

    def _open_turn(self, journal: Any, looked: list[str] | None = None
                   ) -> tuple[str | None, bool | None]:
        """The files now (a look; the one in `looked` where a caller keeps it for several
        journals) and whether the newest turn changed them, when that turn is still open;
        (None, None) when no turn is."""
        if not journal.undo or journal.undo[-1].after is not None:
            return None, None
        if looked is None:
            now = self.look().id
        else:
            if not looked:
                looked.append(self.look().id)
            now = looked[0]
        newest = journal.undo[-1]
        return now, newest.changed if newest.by_calls else now != newest.id

    def _turn(self, span: TurnSpan, paths: list[str] | None = None,
              now: str | None = None) -> Turn:
        from undostore.diff.trees import own_changes
        from undostore.history.turns import Turn

        end = MadeId(span.end) if span.end is not None else now
        if span.point.by_calls:   # its calls' own change (history/attribution.py)
            from undostore.history.attribution import net

            own = span.point.own or ((span.point.id, span.point.id),)
            before, after = net(self.store, own)
            result = self.compare(MadeId(before), MadeId(after), paths=paths)
            to_id = end if end is not None else self.look().id
        else:
            result = self.compare(MadeId(span.point.id), end, paths=paths)
            to_id = result.to_id
        changes = own_changes(self.store, bytes.fromhex(result.from_id),
                              bytes.fromhex(result.to_id), result.changes)
        if span.point.left_out:   # part of the turn: an undo or redo of some paths took those
            changes = [c for c in changes if c.path not in span.point.left_out]
        return Turn(span, to_id, changes)

    def sessions(self) -> list[SessionInfo]:
        from undostore.history.sessions import list_sessions

        return list_sessions(self.store)

    def drop(self, session: str) -> bool:
        from undostore.history.sessions import drop_session

        return drop_session(self.store, session)

    def gc(self, grace_seconds: float | None = None) -> GcResult:
        """gc, and what holds the bytes it kept (`kept`: why it freed what it freed)."""
        from undostore.history.retention import collect_explained

        result = collect_explained(self.store, grace_seconds=grace_seconds)
        self._log("gc", label=f"freed {result.freed_bytes} bytes, objects "
                              f"{result.objects_before} -> {result.objects_after}")
        return result

    # --- the operation log -----

    def ops(self, session: str | None = None, since: str | float | None = None) -> list[Op]:
        """The operations done through this store, newest first (store/oplog.py); `since` is a
        duration ('2h', '30m') or seconds ago."""
        from undostore.store.oplog import read, since_cutoff

        cutoff = (time.time() - since if isinstance(since, (int, float))
                  else since_cutoff(since))
        return read(self.store.path, session=session, since=cutoff)

    def _log(self, op: str, **fields: str | None) -> None:
        from undostore.store.oplog import Op, append

        with self.store.lock:
            append(self.store.path, Op(time.time(), op, **fields))

    def _log_restore(self, op: str, result: RestoreResult, session: str | None = None) -> None:
        if result.dry_run or not result.target:
            return
        self._log(op, session=session, id=result.target, safety=result.safety)

    def _evicted(self, eviction: Eviction) -> None:
        """Retention dropped an undo point (the operation log has it already): to `on_evict`."""
        if self.on_evict is not None:
            self.on_evict(eviction)

    def verify(self, snapshot_id: str | None = None, *, repair: bool = False) -> VerifyResult:
        from undostore.history.verify import verify

        if not repair:
            return verify(self.store, snapshot_id)
        with self.store.lock:
            self._recover_if_needed()
            return verify(self.store, snapshot_id, repair=True, snapshot=self._snapshot_locked)

    def damage_notes(self) -> list[str]:
        """One line per session whose journal was damaged (see history/journal.py)."""
        from undostore.history.journal import damage_notes

        return damage_notes(self.store)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _path_filter(paths: list[str] | None) -> PathFilter | None:
    """Pathspecs relative to the root as the restore layer takes them (None: every path);
    UsageError for one that leaves the root, before any work."""
    if not paths:
        return None
    from undostore.diff.trees import PathFilter

    return PathFilter(paths)

"""Restore: make the files under root equal to a snapshot, safely, even across a crash.

    result = restore(worktree, "1a2b3c", confirm=lambda plan: ask(plan.summary()))
    result.safety      # the files as they were just before: restore it to take this back

Under the store lock, in this order (nothing changes on disk before step 6):

1. finish an interrupted restore, if its journal is still there (`recover_pending`);
2. take a safety snapshot of the files now (its id is in the result);
3. read the target's trees where they differ from the safety snapshot (hash-checked; folders
   with the same tree id are the files already there), refusing unsafe names (paths.py), modes
   a restore cannot write, paths into the store; check every blob of the differing paths is in
   the store and verify (inflate and hash) every blob it will write, so a tree that outlived a
   blob is refused, not half-applied;
4. plan only the paths whose entry differs (plan.py); refuse what would overwrite or write
   through something the safety snapshot does not hold (ignored files, symlinked folders), and,
   with `expected`, any touched path that differs from that snapshot;
5. ask `confirm(plan)`, if given;
6. write the journal durably, apply the plan (checkout.py), make it durable, drop the journal,
   and record the written files in the stat cache so the next snapshot need not read them
   (a restore of a few files leaves the cache alone and hashes what it checks: cachechoice.py).

A kill at any moment leaves each file old or new; the next command (any that takes the lock)
finishes the restore from the journal, or `abort_pending` rolls back what it changed.

Declining: `confirm` returning False raises ConfirmationNeeded (exit 2) with nothing changed, so a
caller such as `undo` cannot mistake a declined restore for a done one. Without `confirm` the
restore proceeds (library callers decide).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from undostore.errors import (
    ConfirmationNeeded,
    ConflictError,
    IncompleteSnapshotError,
    Interrupted,
    PendingRecoveryError,
    SnapshotError,
    UndostoreError,
    UnsafePathError,
    from_oserror,
    store_write_error,
)
from undostore.fileio import TEMP_PREFIX
from undostore.git.reader import ObjectReader
from undostore.limits import DEFAULT_LIMITS, Limits
from undostore.platform import IS_WINDOWS
from undostore.progress import OnProgress
from undostore.restore.blobs import BlobSource, Checkpoints
from undostore.restore.cachechoice import (
    FolderTrees,
    cache_for,
    drops_clock,
    record_written,
    uses_cache,
)
from undostore.restore.cancel import Cancel, Cancelled
from undostore.restore.checkout import (
    Checkout,
    CheckoutResult,
    Target,
    remove_temp_files,
    temp_files_left,
)
from undostore.restore.diskstate import DiskMatcher, find_obstacles, is_case_insensitive, probe
from undostore.restore.filemeta import Modes
from undostore.restore.fsops import ABSENT
from undostore.restore.notices import Kind, RestoreWarning, Warn
from undostore.restore.pending import PendingRestore, pending_of, pending_restore
from undostore.restore.plan import (
    Differences,
    Entry,
    FlatTree,
    RestorePlan,
    entries_at,
    expected_conflicts,
    flatten,
    flatten_difference,
    make_plan,
    parent_dirs,
    root_tree,
)
from undostore.restore.progress import Reporter
from undostore.restore.restorelog import (
    JournalDamaged,
    RestoreJournal,
    read_journal,
    remove_journal,
    remove_restore_temps,
    set_journal_aside,
    write_journal,
)
from undostore.restore.syncing import RestoreSync
from undostore.snapshot.ignore import excluded_by, root_rules, undostore_ignore
from undostore.snapshot.snapshot import store_exclusion
from undostore.snapshot.treeignore import TreeIgnores, touches_ignore_files
from undostore.snapshot.walk import disk_path
from undostore.store import moderecord
from undostore.store.statcache import StatCache
from undostore.store.store import MadeId

if TYPE_CHECKING:
    from undostore.diff.pickfile import FilePick
    from undostore.diff.trees import PathFilter
    from undostore.snapshot.snapshot import SnapshotResult
    from undostore.store.store import Store

Confirm = Callable[[RestorePlan], bool]
# (context, target, safety, the paths the restore changed), once the files are at the target.
StepDone = Callable[[dict, str, str, list[str]], None]

__all__ = ["Confirm", "PendingRestore", "RestorePlan", "RestoreResult", "Worktree",
           "abort_pending", "pending_restore", "recover_pending", "restore"]


@dataclass(frozen=True)
class Worktree:
    """What a restore works on: the root, its store, how to snapshot the files now (the store
    lock held), and what to run once the files are restored for a journal that carries a
    `context` (a session step), before the journal goes, so a crash runs it again."""

    root: str
    store: Store
    snapshot: Callable[[], SnapshotResult]
    step_done: StepDone | None = None
    # Told before a command finishes a restore a crash left half-done (the CLI says so on
    # stderr; the library prints nothing).
    on_recovery: Callable[[PendingRestore], None] | None = None
    # Called as checkpoint(what, path) after each file operation of a restore ("delete",
    # "rmdir", "temp", "replace", "chmod"; "journal" before the first) and as
    # checkpoint("before <op>", path) right before each change: progress, or a test pausing the
    # restore at one step.
    checkpoint: Callable[[str, str], None] | None = None
    # A stop request (cancel.py), checked between steps and at each file operation; a restore
    # it stops rolls back what it changed and raises Interrupted.
    cancel: Cancel = field(default_factory=Cancel)
    limits: Limits = DEFAULT_LIMITS


@dataclass
class RestoreResult:
    """What a restore did (or, with `dry_run`, would do)."""

    target: str                    # hex id the files are now at
    safety: str                    # hex id of the files before: restore it to take this back
    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    dry_run: bool = False
    operation: str = "restore"     # "restore", or "abort" for a rolled-back interrupted restore
    removed_dirs: list[str] = field(default_factory=list)
    warnings: Warn = field(default_factory=list)
    seconds: float = 0.0
    plan: RestorePlan | None = field(default=None, repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.modified or self.deleted)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "safety": self.safety, "created": self.created,
                "modified": self.modified, "deleted": self.deleted, "dry_run": self.dry_run,
                "operation": self.operation, "removed_dirs": self.removed_dirs,
                "warnings": [w.to_json() for w in self.warnings],
                "seconds": round(self.seconds, 4)}


class Run(Enum):
    """What an application of a journaled plan is, which decides how it may stop."""

    FRESH = "restore"          # begun by this call: a cancel rolls it back; a failure before
    #                            any change forgets it
    FINISH = "finish"          # a journal a dead process left: a cancel rolls it back
    ABORT = "abort"            # `restore --abort`: runs to its end
    ROLL_BACK = "roll back"    # after a cancel: runs to its end, the caller's checkpoint unheard

    @property
    def cancellable(self) -> bool:
        return self in (Run.FRESH, Run.FINISH)


@dataclass
class _Prepared:
    """A plan checked against the store and the disk, with its blobs verified."""

    plan: RestorePlan
    current: FlatTree
    wanted: FlatTree
    blobs: BlobSource
    case_insensitive: Callable[[], bool]
    uses_cache: bool   # the stat cache checks the files and records the writes (cachechoice)


class _CaseProbe:
    """Asks the file system about case once, and only if some check needs to know."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._answer: bool | None = None

    def __call__(self) -> bool:
        if self._answer is None:
            self._answer = is_case_insensitive(self.root)
        return self._answer


# --- the public operations -----------------------------------------------------------------------


def restore(wt: Worktree, target: str, *, expected: str | None = None,
            dry_run: bool = False, confirm: Confirm | None = None,
            context: dict | None = None, on_progress: OnProgress | None = None,
            now: SnapshotResult | None = None,
            bodies: dict[bytes, bytes] | None = None,
            paths: PathFilter | None = None, picks: list[FilePick] | None = None,
            differences: Differences | None = None) -> RestoreResult:
    """Make the files under `wt.root` equal to snapshot `target` (see the module docstring);
    with `paths`, only the files those select (picked.py), the rest staying as they are; with
    `picks`, only the hunks picked of the change from the files now (`restore -p`).

    `context` (JSON-able) is kept in the restore journal and handed to `wt.step_done` once the
    files are restored, even by recovery after a crash. `on_progress` hears how far the restore
    is (progress.py). `now`: the safety snapshot, when the caller took it under the store lock
    it still holds (revert: the files it merged with), so the files are not walked twice.
    `bodies`: tree bodies by id the caller already read or made (a merge's), not read again;
    `differences`: pairs of trees it flattened where they differ (plan.py), not flattened again.

    `wt.cancel` set while files change rolls back what was changed, then raises `Interrupted`
    (a KeyboardInterrupt) saying so; set before, it stops the restore with nothing changed. A
    KeyboardInterrupt raised while files change (a host that installed no handler) is rolled
    back the same way, as far as a second one lets it."""
    started = time.perf_counter()
    progress = Reporter(on_progress)
    with wt.store.lock:
        progress.step("safety")
        (target_sha, expected_sha), safety = begin(wt, target, expected, now=now)
        assert target_sha is not None
        if paths is not None:
            from undostore.restore.picked import restore_target

            target_sha = restore_target(wt.store, safety.id, target_sha, paths)
        if picks is not None:
            from undostore.restore.picked import picked_tree

            now_sha = bytes.fromhex(safety.id)
            target_sha = picked_tree(wt.store, now_sha, (now_sha, target_sha), picks)
        _stop_if_cancelled(wt)
        progress.step("plan")
        with ObjectReader(wt.store) as reader:
            bodies = bodies if bodies is not None else {}
            if target_sha not in bodies:
                bodies[target_sha] = root_tree(reader.read, target_sha)  # a blob is no snapshot
            current, wanted = flatten_difference(reader.read_tree_body, bytes.fromhex(safety.id),
                                                 target_sha, bodies=bodies, memo=differences)
            prepared = _prepare(wt, reader, current, wanted)
            plan = prepared.plan
            if expected_sha is not None and expected_sha.hex() != safety.id:
                _check_expected(plan, expected_sha, entries_at(
                    reader.read_tree_body, expected_sha, plan.touched(), bodies))
            if prepared.uses_cache:
                wanted.keep_canonical_trees(bodies)   # the ids it may leave (cachechoice)
            bodies.clear()   # the plan is made: the folders read for it are not needed again
            result = _result(plan, dry_run=dry_run)
            if dry_run or plan.is_empty:
                result.seconds = time.perf_counter() - started
                return result
            if confirm is not None and not confirm(plan):
                raise ConfirmationNeeded(f"restore of {plan.target[:12]} not confirmed; "
                                         "nothing was changed")
            _stop_if_cancelled(wt)
            journal = RestoreJournal.new("restore", plan.target, plan.safety, plan.safety, plan)
            journal.context = dict(context or {})
            with wt.cancel.watching():
                _write_journal(wt, journal)
                outcome = _execute(wt, prepared, journal, Run.FRESH, progress=progress)
            if wt.cancel.is_set():
                raise Interrupted(f"interrupted as the restore to {plan.target[:12]} completed: "
                                  f"the files are at it; `undostore restore {plan.safety[:12]}` "
                                  "takes it back")
    result.removed_dirs = outcome.removed_dirs
    result.warnings = outcome.warnings
    result.seconds = time.perf_counter() - started
    return result


def begin(wt: Worktree, *refs: str | None, now: SnapshotResult | None = None
          ) -> tuple[list[bytes | None], SnapshotResult]:
    """The first steps of every restore-like operation, store lock held: finish an interrupted
    restore, resolve the ids (None stays None), take the safety snapshot of the files now.
    With `now` (taken by a caller that did these steps under the lock it still holds), only
    the ids are resolved."""
    if now is None:
        recover_pending(wt)
    shas = [None if ref is None else bytes.fromhex(ref) if isinstance(ref, MadeId)
            else wt.store.resolve(ref) for ref in refs]
    return shas, now if now is not None else wt.snapshot()


def recover_pending(wt: Worktree) -> None:
    """Finish an interrupted restore (the store lock must be held). Raises PendingRecoveryError
    when it cannot, saying to run `undostore restore --abort`."""
    try:
        journal = read_journal(wt.store)
    except JournalDamaged as err:
        raise PendingRecoveryError(
            f"{err}; the files may be partly restored. Run `undostore restore --abort` to set "
            "the journal aside, then compare the files with `undostore diff`") from None
    if journal is None:
        _remove_stray_journal_temps(wt)
        return
    if wt.on_recovery is not None:
        wt.on_recovery(pending_of(journal))
    remove_temp_files(wt.root, journal.write_folders(), journal.token)
    try:
        with ObjectReader(wt.store) as reader:
            bodies: dict[bytes, bytes] = {}
            current = _flat(reader, bytes.fromhex(journal.safety), bodies)
            wanted = _flat(reader, bytes.fromhex(journal.target), bodies, check=True)
            prepared = _prepare(wt, reader, current, wanted, only=journal.touched(),
                                extra_dirs=journal.remove_dirs, check_disk=False)
            with wt.cancel.watching():
                _execute(wt, prepared, journal, Run.FINISH)
    except PendingRecoveryError:
        raise
    except UndostoreError as err:
        raise PendingRecoveryError(
            f"an interrupted {journal.operation} to {journal.target[:12]} cannot be finished: "
            f"{err}. Run `undostore restore --abort` to roll back to the safety snapshot "
            f"{journal.rollback[:12]} (the files as they are now are snapshotted first)",
            err.path) from err


def abort_pending(wt: Worktree) -> RestoreResult | None:
    """Roll an interrupted restore back to the safety snapshot taken before it. Only the paths
    it touched are rolled back; one changed since by someone else is kept (and named in the
    warnings). Returns None when no restore is pending. A journal too damaged to read is moved
    aside instead (a result with empty ids whose warning says where to): nothing to roll back
    with, but every later command works again. A cancel request waits until the roll-back is
    done."""
    started = time.perf_counter()
    with wt.store.lock, wt.cancel.watching():
        try:
            journal = read_journal(wt.store)
        except JournalDamaged as err:
            removed = remove_restore_temps(wt.root, wt.store.path)   # folders unknown: all
            aside = set_journal_aside(wt.store)
            return RestoreResult(target="", safety="", operation="abort", warnings=[
                RestoreWarning(aside, f"{err}: moved aside; nothing was rolled back, "
                                      f"{len(removed)} temp files removed", Kind.JOURNAL_ASIDE)])
        if journal is None:
            return None
        result = _roll_back(wt, journal, Run.ABORT)
    if wt.cancel.is_set():
        raise Interrupted(f"interrupted once the roll-back to {result.target[:12]} was done "
                          f"({_count(result)} file(s) put back); nothing is pending")
    result.seconds = time.perf_counter() - started
    return result


def _roll_back(wt: Worktree, journal: RestoreJournal, run: Run) -> RestoreResult:
    """Return the paths `journal` touched to its rollback snapshot (lock held; `run` is ABORT
    or ROLL_BACK, neither stopped by a cancel request)."""
    remove_temp_files(wt.root, journal.write_folders(), journal.token)
    now = wt.snapshot()
    with ObjectReader(wt.store) as reader:
        bodies: dict[bytes, bytes] = {}
        current = _flat(reader, bytes.fromhex(now.id), bodies)
        wanted = _flat(reader, bytes.fromhex(journal.rollback), bodies, check=True)
        only, kept = _abort_scope(journal, current, wanted,
                                  _flat(reader, bytes.fromhex(journal.safety), bodies),
                                  _flat(reader, bytes.fromhex(journal.target), bodies))
        created_dirs = {d for p in journal.create + journal.modify for d in parent_dirs(p)}
        prepared = _prepare(wt, reader, current, wanted, only=only, extra_dirs=created_dirs)
        plan = prepared.plan
        result = _result(plan, operation="abort")
        result.warnings = [RestoreWarning(p, "kept as it is: changed after the interrupted "
                                             "restore", Kind.KEPT_CHANGED) for p in kept]
        if plan.is_empty and not plan.remove_dirs:
            remove_journal(wt.store)
        else:
            aborting = RestoreJournal.new("abort", plan.target, plan.safety,
                                          journal.rollback, plan)
            _write_journal(wt, aborting)
            outcome = _execute(wt, prepared, aborting, run)
            result.removed_dirs = outcome.removed_dirs
            result.warnings += outcome.warnings
    return result


def _interrupted(wt: Worktree, journal: RestoreJournal, finishing: bool) -> BaseException:
    """A cancel request (or Ctrl-C) stopped the files changing: roll back and say what was
    done."""
    what = "finishing of an interrupted restore" if finishing else "restore"
    try:
        result = _roll_back(wt, journal, Run.ROLL_BACK)
    except UndostoreError as err:
        return PendingRecoveryError(
            f"interrupted, and rolling the {what} to {journal.target[:12]} back failed: "
            f"{err.message}. Fix the cause and run `undostore restore --abort`", err.path)
    kept = sum(1 for w in result.warnings if w.kind is Kind.KEPT_CHANGED)
    extra = f"; {kept} file(s) changed meanwhile were kept" if kept else ""
    return Interrupted(f"interrupted: the {what} to {journal.target[:12]} was rolled back "
                       f"({_count(result)} file(s) put back{extra}); nothing is pending")


def _count(result: RestoreResult) -> int:
    return len(result.created) + len(result.modified) + len(result.deleted)


def _write_journal(wt: Worktree, journal: RestoreJournal) -> None:
    try:
        write_journal(wt.store, journal)
    except OSError as err:
        raise store_write_error(err, wt.store.path) from err


def _remove_stray_journal_temps(wt: Worktree) -> None:
    """A journal write killed before its rename leaves a temp file: the journal never existed,
    but the file would make every command look for one."""
    try:
        names = os.listdir(wt.store.restore_dir)
    except OSError:
        return
    for name in names:
        if name.startswith(TEMP_PREFIX):
            try:
                os.unlink(os.path.join(wt.store.restore_dir, name))
            except OSError:
                pass


# --- steps ------------------------------------------------------------------------------------


def _flat(reader: ObjectReader, sha: bytes, bodies: dict[bytes, bytes],
          check: bool = False) -> FlatTree:
    if sha not in bodies:
        bodies[sha] = root_tree(reader.read, sha)
    return flatten(reader.read_tree_body, sha, check=check, bodies=bodies)


def _prepare(wt: Worktree, reader: ObjectReader, current: FlatTree, wanted: FlatTree, *,
             only: set[str] | None = None, extra_dirs: Iterable[str] = (),
             check_disk: bool = True) -> _Prepared:
    """Everything checked before the first change (with `check_disk`, also what is on disk in
    the plan's way: a journal being finished was checked when it began). `wanted` must come
    from a checking flatten (names, modes, duplicates)."""
    _refuse_store_paths(wt, wanted)
    case = _CaseProbe(wt.root)
    if wanted.case_clashes and case():
        first, second = wanted.case_clashes[0]
        raise UnsafePathError(f"differs from {first!r} only in case; this file system cannot "
                              "hold both", second)
    _leave_alone(wt.root, current, wanted)
    if only is None:
        _leave_ignored(wt, reader, current, wanted)
    plan = make_plan(current, wanted, only=only, extra_dirs=extra_dirs)
    blobs = BlobSource.verified(reader, (plan.after[p][1] for p in plan.create + plan.modify))
    _check_complete(reader, wanted, blobs)
    try:
        if check_disk:
            find_obstacles(wt.root, plan, current.files, case)
    except OSError as err:
        raise from_oserror(err, "inspect", cls=SnapshotError) from err
    return _Prepared(plan, current, wanted, blobs, case,
                     uses_cache(plan, hash_at_most=wt.limits.restore_hash_at_most))


def _leave_alone(root: str, *flats: FlatTree) -> None:
    """Take what the root's `.undostoreignore` excludes out of the plan: a restore never
    creates, changes or deletes those files, whatever the snapshots hold."""
    top = undostore_ignore(root)
    if top is None:
        return
    for flat in flats:
        for path in [p for p in flat.files if excluded_by(top, p)]:
            del flat.files[path]
            flat.drop_trees(path.rpartition("/")[0])


def _leave_ignored(wt: Worktree, reader: ObjectReader, current: FlatTree, wanted: FlatTree
                   ) -> None:
    """Take ignored files out of a plan whose two snapshots differ in an ignore file. A file the
    target's own rules ignore is not deleted: a turn that deleted `.gitignore` showed the `.env`
    it kept out, and going back hides it again. A file the target has where an ignored one
    already holds exactly its content needs no write (a turn that only hid `build/`); an
    ignored file holding anything else is refused as before (find_obstacles): it was never
    captured, so a restore never overwrites it."""
    if not touches_ignore_files(current.files.keys() | wanted.files.keys()):
        return
    base = root_rules(wt.root)
    hidden_after = TreeIgnores(reader.read_tree_body, reader.read_blob,
                               bytes.fromhex(wanted.id), base)
    for path in [p for p in current.files if p not in wanted.files]:
        if hidden_after.ignores(path):
            del current.files[path]
            current.drop_trees(path.rpartition("/")[0])
    hidden_now = TreeIgnores(reader.read_tree_body, reader.read_blob,
                             bytes.fromhex(current.id), base)
    disk = DiskMatcher(wt.root, StatCache(identity=wt.store.identity))
    for path in [p for p in wanted.files if p not in current.files]:
        if hidden_now.ignores(path):
            found = probe(disk_path(wt.root, path))
            if found.kind != ABSENT and disk.holds(path, found, wanted.files[path]):
                del wanted.files[path]


def _refuse_store_paths(wt: Worktree, wanted: FlatTree) -> None:
    for store_rel in store_exclusion(wt.root, wt.store):
        hits = [p for p in (store_rel, *parent_dirs(store_rel)) if p in wanted.files]
        if store_rel in wanted.dirs or hits:
            raise UnsafePathError("the snapshot writes into (or over) the store, which lies "
                                  "under the root; refused", hits[0] if hits else store_rel)


def _check_complete(reader: ObjectReader, wanted: FlatTree, blobs: BlobSource) -> None:
    """Every blob the target lists must be in the store (trees were read, hash-checked). Of a
    partial flat tree, the blobs of paths that differ from the files now: the others are the
    files' own content, captured by the safety snapshot. `blobs`: those the plan writes,
    already checked (the rest are looked up)."""
    located = blobs.located
    missing = [(path, sha) for path, (_, sha) in wanted.files.items()
               if sha not in located and not reader.has(sha)]
    if missing:
        path, sha = min(missing)
        raise IncompleteSnapshotError(
            f"snapshot {wanted.id[:12]} is incomplete: {len(missing)} file(s) have no content "
            f"in the store (blob {sha.hex()} is missing); nothing was changed",
            missing=sorted({s.hex() for _, s in missing}), path=path)


def _check_expected(plan: RestorePlan, expected_sha: bytes,
                    expected: dict[str, Entry]) -> None:
    """ConflictError when a path the plan touches is not as snapshot `expected_sha` has it (the
    files now are always as the safety snapshot has them: the caller skips that case)."""
    differing = expected_conflicts(plan, expected)
    if differing:
        shown = ", ".join(differing[:5]) + (" ..." if len(differing) > 5 else "")
        raise ConflictError(f"{len(differing)} file(s) the restore would change differ from the "
                            f"expected snapshot {expected_sha.hex()[:12]} (changed since?): "
                            f"{shown}; "
                            "nothing was changed", differing[0])


def _abort_scope(journal: RestoreJournal, now: FlatTree, rollback: FlatTree, before: FlatTree,
                 after: FlatTree) -> tuple[set[str], list[str]]:
    """(paths to roll back, paths kept because someone changed them after the crash)."""
    only: set[str] = set()
    kept: list[str] = []
    for path in sorted(journal.touched()):
        entry = now.files.get(path)
        if entry == rollback.files.get(path):
            continue
        if entry == after.files.get(path) or entry == before.files.get(path):
            only.add(path)
        else:
            kept.append(path)
    return only, kept


def _execute(wt: Worktree, prepared: _Prepared, journal: RestoreJournal, run: Run,
             progress: Reporter | None = None) -> CheckoutResult:
    """Apply a journaled plan; the journal goes once every change is durable. A cancellable
    `run` stopped by `wt.cancel` (or a KeyboardInterrupt) while files change, or before the
    restore is complete, rolls back what changed and raises Interrupted. For a FRESH run, an
    OSError (a full disk, say) before any file of the plan changed removes the restore's temp
    files and its journal and says nothing was changed; later, the restore is left pending."""
    # The caller's checkpoint belongs to the restore, not to the roll-back of an interrupted one.
    checkpoint = Checkpoints(None if run is Run.ROLL_BACK else wt.checkpoint,
                             wt.cancel if run.cancellable else None)
    finishing = run is Run.FINISH
    cache_path = wt.store.stat_cache_path
    remember = prepared.uses_cache
    cache = cache_for(remember, cache_path, wt.store.identity)
    target = Target(prepared.plan, prepared.blobs, DiskMatcher(wt.root, cache),
                    prepared.wanted.dirs, prepared.case_insensitive,
                    Modes(moderecord.load(wt.store.path, prepared.plan.target)))
    checkout = Checkout(wt.root, target, journal.token, checkpoint, progress=progress,
                        sync=RestoreSync.for_files(wt.root, len(prepared.plan.touched())))
    try:
        checkpoint("journal", "")  # a crash test stops here: journal written, nothing changed
        outcome = checkout.run()
    except (Cancelled, KeyboardInterrupt):
        if not run.cancellable:
            raise
        raise _interrupted(wt, journal, finishing) from None
    except IncompleteSnapshotError as err:
        # A blob whose record passed the check before the first change (`verify_blobs`) and
        # yet does not hash to its id (only a pack written wrong does that), met as it is
        # written and before its temp file is put in place: a fresh restore is taken back.
        if run is not Run.FRESH:
            raise
        where = checkout.current or err.path
        if checkout.touched:
            _roll_back(wt, journal, Run.ROLL_BACK)
            said = "the files it had changed were put back"
        else:
            _forget_unstarted(wt, journal)
            said = "nothing was changed"
        raise IncompleteSnapshotError(f"cannot restore: {err}; {said}", err.missing,
                                      err.corrupt, where) from err
    except OSError as err:
        where = checkout.current or err.filename
        if run is Run.FRESH and not checkout.touched and _forget_unstarted(wt, journal):
            raise UndostoreError(f"cannot restore: {err.strerror or err}; nothing was changed "
                                 "(the temp files written so far were removed)", where) from err
        what = "finish the restore" if finishing else "restore"
        raise PendingRecoveryError(
            f"cannot {what}: {err.strerror or err}; the restore stopped half-way. Fix the cause "
            "and run any command to finish it, or run `undostore restore --abort` to roll back",
            where) from err
    if run.cancellable and wt.cancel.is_set():   # after the last file, before the end
        raise _interrupted(wt, journal, finishing)
    if journal.context and wt.step_done is not None:
        # Before the journal goes: a crash in between makes recovery run this again, and a
        # session step applies once only.
        wt.step_done(journal.context, journal.target, journal.safety, sorted(journal.touched()))
    remove_journal(wt.store)
    prepared.blobs.release()   # every file is written: their blobs' places are not needed
    if remember:
        # A fresh plan makes every change between its two trees, so the folders it touched
        # may keep the target's tree ids (cachechoice._claimable); a finish or a roll-back may
        # cover only part of that.
        trees = FolderTrees(prepared.current.trees, prepared.wanted.trees) \
            if run is Run.FRESH else None
        _remember_written(wt, cache_path, cache, prepared.plan, outcome, trees)
    return outcome


def _stop_if_cancelled(wt: Worktree) -> None:
    """Between the steps before the journal: a cancel request stops here, nothing changed."""
    if wt.cancel.is_set():
        raise Interrupted("interrupted before any file changed; nothing was changed")


def _forget_unstarted(wt: Worktree, journal: RestoreJournal) -> bool:
    """A restore that failed before changing any file: remove what it wrote under its temp
    names and its journal. False (the journal kept, the restore pending) if that fails."""
    try:
        remove_temp_files(wt.root, journal.write_folders(), journal.token)
        if temp_files_left(wt.root, journal.write_folders(), journal.token):
            return False   # one would not go away: recovery keeps trying
        remove_journal(wt.store)
    except OSError:
        return False
    return True


def _remember_written(wt: Worktree, cache_path: str, cache: StatCache, plan: RestorePlan,
                      outcome: CheckoutResult, trees: FolderTrees | None) -> None:
    """Record written files in the stat cache, so the next snapshot trusts them instead of
    reading them (cachechoice.record_written). One written too recently to be trusted, or
    touched by someone else after it was written, keeps only its mode (on Windows, where the
    disk has no exec bit, the snapshot takes the mode from here). Like git's checkout, a
    same-size rewrite by someone else within the same timestamp tick as the restore's own
    write cannot be told apart. The safety snapshot's watchman clock is kept (it predates every
    write), unless the restore wrote an ignore file."""
    records, count = record_written(cache, plan, outcome.written, outcome.removed_dirs,
                                    time.time_ns(), outcome.made_dirs, trees,
                                    outcome.last_stamp())
    if drops_clock(plan):
        cache.fsmonitor = None
    # The records keep no root tree id now: say what the files' bits and owners are instead.
    before = None if IS_WINDOWS else moderecord.describing(
        wt.store.path, cache.root.hex() if cache.root else None, cache.modes)
    cache.modes = None if before is None else moderecord.left_by_restore(
        before, plan.delete, outcome.written_files()).encode()
    try:
        cache.save_records(cache_path, records, count)
    except OSError:
        pass  # only an optimisation: the next snapshot reads the files instead


def _result(plan: RestorePlan, *, dry_run: bool = False, operation: str = "restore"
            ) -> RestoreResult:
    return RestoreResult(target=plan.target, safety=plan.safety, created=list(plan.create),
                         modified=plan.modified, deleted=list(plan.delete), dry_run=dry_run,
                         operation=operation, plan=plan)

"""Capture the files under root as a git tree in the store; the tree id is the snapshot id.

Steps: walk (walk.py) -> for each file, reuse the stat cache's blob id or read and hash the file
(hashing.py, as the walk goes) -> new blobs and trees go into one pack (objects.py) -> the pack
is committed -> the stat cache is saved. Only then is the id returned: a snapshot that could not
read a file raises and returns no id, and leaves no pack that anyone trusts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from undostore import settings
from undostore.errors import (
    SnapshotError,
    TooManyFilesError,
    TreeMovedError,
    UnreadableFilesError,
)
from undostore.git.heldobjects import HeldWriter
from undostore.git.packwriter import PackWriter
from undostore.limits import DEFAULT_LIMITS, Limits
from undostore.progress import OnProgress, no_progress
from undostore.snapshot.capture import EMPTY_TREE as EMPTY_TREE  # noqa: F401 (public here)
from undostore.snapshot.capture import (
    build_trees,
    carried_work,
    count_files,
    known_for,
    match_folder,
    matcher_for,
)
from undostore.snapshot.changes import (
    WALK_FULL,
    WALK_HINTED,
    Scan,
    hinted,
    moved_while_taken,
    scan,
)
from undostore.snapshot.hashing import HashRun
from undostore.snapshot.lstatsplit import Fork, Split
from undostore.snapshot.resume import Checkpoints
from undostore.snapshot.resume import forget as forget_kept
from undostore.snapshot.walk import (
    LEFT_OUT,
    WalkOptions,
    ignore_warning,
    too_many_files,
    unsettled,
)
from undostore.store import overlimit
from undostore.store.durable import on_fuse
from undostore.store.moderecord import ModeRecorder
from undostore.store.moderecord import save as save_modes
from undostore.store.recent import remember
from undostore.store.statcache import Record, StatCache, unusual_modes
from undostore.store.store import Store, check_root

Warn = Callable[[str, str], None]


class SnapshotOptions(NamedTuple):
    """How to take a snapshot. `hash_threads=0` chooses from the amount of work."""

    walk_threads: int = 1
    hash_threads: int = 0
    max_files: int | None = None    # None: UNDOSTORE_MAX_FILES (undostore/settings.py)
    force: bool = False                 # allow `/` or the home folder as root
    durable: bool = True                # fsync the pack (off only for throwaway benchmarks)
    on_progress: OnProgress = no_progress   # Progress("hash", files hashed, files found)
    on_warning: Warn = ignore_warning
    limits: Limits | None = None        # batch and size limits (None: the Workspace's)
    fsmonitor: str | None = None        # auto, watchman or off (None: UNDOSTORE_FSMONITOR)
    # The files changed, if at all, only at these paths (a file tool's named files): read them
    # alone, take the rest from the stat cache as it stands, and save no stat cache (its picture
    # of the rest is not checked). None: find what changed (a walk, or watchman).
    only: tuple[str, ...] | None = None
    # A look for a read-only command: the id of the files now, its new objects held in memory
    # (`store.held`, git/heldobjects.py); nothing written: no pack, stat cache, mode record,
    # recent id or over-limit mark.
    read_only: bool = False
    # How to fork this process (os.fork), from a front end that may (the CLI): a walk of a tree
    # of `limits.split_lstat_min_files` or more then lstats in two processes (lstatsplit.py).
    # None: never (the library does not fork of its own accord).
    fork: Fork | None = None
    # The caller lists the id where gc keeps it (a journal, the activity record) before it lets
    # the store lock go: a tool call's snapshots. No recent-id write then (store/recent.py).
    listed: bool = False


class SnapshotResult(NamedTuple):
    """What a snapshot made: its id, the files it holds and hashed, what it added to the store."""

    id: str
    files: int
    hashed: int
    new_objects: int
    new_bytes: int
    seconds: float
    warnings: Sequence[tuple[str, str]] = ()   # (path, message)
    walk: str = WALK_FULL     # "full", or "watchman": only what watchman said changed was read
    walk_reason: str = ""     # why a full walk though watchman was asked ("" when it was not)
    recorded: bool = False  # an undo point was recorded (set by Workspace.snapshot)
    watched: bool = False   # watchman gave a clock, saved with it: the next one may ask watchman
    vouched: int = 0        # folders a second process found unchanged (lstatsplit.py)

    @property
    def left_out(self) -> list[str]:
        """The paths this snapshot could not read (no permission, a path too long): an undo
        cannot bring them back, so a front end says so."""
        return [path for path, message in self.warnings if message.startswith(LEFT_OUT)]


class FirstSnapshot(NamedTuple):
    """A tree's first snapshot (`Workspace.first_snapshot`), and whether watchman now watches
    the tree for the later ones."""

    result: SnapshotResult
    watchman: bool              # a daemon watches the tree: later snapshots ask it
    watchman_trouble: str | None = None   # why watchman was wanted and did not start


def store_exclusion(root: str, store: Store) -> frozenset[str]:
    """The store's path relative to root when it lies under root (it is never captured)."""
    real_store = os.path.realpath(store.path)
    rel = os.path.relpath(real_store, root)
    if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
        return frozenset()
    return frozenset({rel.replace(os.sep, "/")})


# How many times a snapshot is taken when the tree moves while it is read (every id printed is
# a state that existed: a tree that never holds still fails instead).
SETTLE_ATTEMPTS = 3


def take_snapshot(root: str, store: Store, options: SnapshotOptions | None = None
                  ) -> SnapshotResult:
    """Capture `root` into `store`; the store lock must be held by the caller.

    When something vanished or a folder read changed while the walk ran (`TreeMovedError`),
    what it saw may be a state that never existed (a folder moved from one place to another,
    seen in both or in neither): it is taken again, and after `SETTLE_ATTEMPTS` fails naming
    the folders, nothing recorded. Files this user cannot read (`UnreadableFilesError`) are
    left out of the next try, each named in a warning. Only the last try's warnings are
    reported, so none is said twice."""
    options = options or SnapshotOptions()
    unreadable: dict[str, dict[str, str]] = {}
    moved = 0
    while True:
        warnings: list[tuple[str, str]] = []
        try:
            result = _take_snapshot(root, store, options, unreadable, warnings)
        except TreeMovedError as err:
            moved += 1
            if moved == SETTLE_ATTEMPTS:
                _report(warnings, options)
                where = ", ".join(err.folders[:5]) + (", ..." if len(err.folders) > 5 else "")
                raise SnapshotError(
                    f"the tree kept changing while it was read ({moved} tries; the last: "
                    f"{err.message}{': ' + where if where else ''}); nothing was recorded, the "
                    "next snapshot tries again", err.path) from err
            for folder in _read_again(root, err):
                unreadable.setdefault(folder, {})   # (no file left out: its listing is read)
            continue
        except UnreadableFilesError as err:
            new = [path for path in err.unreadable
                   if path.rpartition("/")[2] not in unreadable.get(path.rpartition("/")[0], ())]
            if not new:   # left out already, yet read: never loop on it
                _report(warnings, options)
                path = next(iter(err.unreadable))
                raise SnapshotError(f"cannot read this file ({err.unreadable[path]})",
                                    os.path.join(root, path)) from err
            for path in new:
                folder, _, name = path.rpartition("/")
                unreadable.setdefault(folder, {})[name] = err.unreadable[path]
            continue
        except TooManyFilesError as err:
            _report(warnings, options)
            if not options.read_only:
                overlimit.mark(store.cache_dir, err.limit)   # status and doctor say so
            raise
        except BaseException:
            _report(warnings, options)
            raise
        _report(warnings, options)
        if not options.read_only:
            overlimit.clear(store.cache_dir)   # protected again (an unlink costs as a stat)
        return result


def _read_again(root: str, err: TreeMovedError) -> list[str]:
    """The folders whose listings the next try reads rather than reuses: the folder holding
    what vanished (its cached listing still named it: on a file system whose folder times
    never move, its stamp would vouch for that listing forever) and the folders that moved."""
    folders = [f if f != "." else "" for f in err.folders]
    if err.path:
        rel = os.path.relpath(err.path, os.path.realpath(root)).replace(os.sep, "/")
        if rel != "." and not rel.startswith("../"):
            folders.append(rel.rpartition("/")[0])
    return folders


def _report(warnings: list[tuple[str, str]], options: SnapshotOptions) -> None:
    for path, message in warnings:
        options.on_warning(path, message)


def _take_snapshot(root: str, store: Store, options: SnapshotOptions,
                   unreadable: dict[str, dict[str, str]], warnings: list[tuple[str, str]]
                   ) -> SnapshotResult:
    """One try of `take_snapshot`: `unreadable` names the files to leave out (by folder), and
    `warnings` collects what it finds to warn of."""
    started = time.perf_counter()
    start_ns = time.time_ns()

    def warn(path: str, message: str) -> None:
        warnings.append((path, message))

    limits = options.limits or DEFAULT_LIMITS
    real_root = check_root(root, options.force)
    cache_path = store.stat_cache_path
    cache = StatCache.load(cache_path, store.identity, on_warning=warn)
    if cache.root is not None and (not store.has(cache.root)
                                   or not cache.trusted_with(store.index.pack_names())):
        # The cache vouches for objects below its last root; if the store lost that root
        # (packs deleted, a store restored from an old backup), trust none of it.
        warn(cache_path, "store lacks the objects the stat cache relied on; hashing everything")
        cache = StatCache(identity=store.identity)
    max_files = (options.max_files if options.max_files is not None
                 else settings.value("UNDOSTORE_MAX_FILES"))
    walk_options = WalkOptions(threads=options.walk_threads, max_files=max_files,
                               skip_dirs=store_exclusion(real_root, store), on_warning=warn,
                               matcher_for=matcher_for(cache),
                               known=known_for(cache) if options.walk_threads <= 1 else None,
                               unreadable=unreadable,
                               trust_listings=not on_fuse(real_root))
    split = (Split(real_root, walk_options.known, options.fork, limits.split_chunk_files)
             if walk_options.known is not None and options.fork is not None
             and cache.count >= limits.split_lstat_min_files and options.only is None
             else None)
    if split is not None:
        walk_options = walk_options._replace(vouched=split.vouched,
                                             chunk_files=split.chunk_files)
    try:
        found = (hinted(real_root, cache, options.only, walk_options)
                 if options.only is not None else None)
        if found is None:
            found = scan(real_root, cache, walk_options, warn, limits.watchman_timeout_s,
                         options.fsmonitor)

        writer = (HeldWriter(store.held, limits.look_held_bytes) if options.read_only
                  else PackWriter(store.pack_dir, durable=options.durable))
        # No stat cache: every file is read. Keep what is hashed as it goes (and take what an
        # earlier try kept), so a first snapshot stopped half-way is not started over (resume.py).
        checkpoints = (Checkpoints(store, writer, start_ns, limits.checkpoint_s)
                       if cache.root is None and not options.read_only else None)
        modes = ModeRecorder(store.path, real_root, cache.root.hex() if cache.root else None,
                             unsaved=cache.modes)
        try:
            # Hashed as the walk goes, in batches (hashing.py): the walk's entries are not all
            # held until it ends.
            with HashRun(real_root, store, writer, cache, threads=options.hash_threads,
                         on_hashed=modes.file_read, on_progress=options.on_progress,
                         limits=limits, checkpoints=checkpoints) as run:
                works = []
                seen = []
                for folder in found.scanned:
                    works.append(match_folder(folder, cache, run.todo,
                                              found.deltas.get(folder.path),
                                              limits.splice_min_files))
                    seen.append((folder.path, folder.seen))
                    run.counted(folder.count)
                run.finish()
            moved = unsettled(real_root, seen) or moved_while_taken(
                real_root, found, walk_options, limits.watchman_timeout_s, options.fsmonitor)
            if moved:
                raise TreeMovedError("folders changed while the snapshot was taken",
                                     os.path.join(real_root, moved[0]) if moved[0] else real_root,
                                     tuple(p or "." for p in moved))
            # Modes read now; a folder whose stamp held kept its ctime, so no chmod or chown.
            read = [w for w in works if not w.reused]
            looked = [w.path for w in read] + [f"{w.path}/{d}" if w.path else d
                                               for w in read for d in w.subdirs]
            works += [carried_work(path, found.base[path], cache.records) for path in found.carried]
            base = {p: r for p, r in found.base.items() if p not in found.carried}
            total = sum(work.nfiles for work in works)
            root_tree, records = build_trees(works, base, cache, store, writer, start_ns,
                                             limits.splice_max_inserts)
            if found.base:  # files under folders taken from the cache were not counted
                total = count_files(records, cache.records, cache.count)
            if total > max_files:   # what watchman answered was no walk: the limit is checked here
                raise too_many_files(real_root, max_files)
            # Before the commit, so a Ctrl-C here still leaves no pack (a record of a snapshot
            # that never was is harmless).
            record = modes.build(looked, records, lambda usual: _cached_modes(records, usual)) \
                if modes.enabled else None
            unsaved = None
            try:
                if record is not None and not options.read_only:
                    save_modes(store.path, root_tree.hex(), record)
            except OSError as err:
                warn(store.path, f"could not record permission bits: {err.strerror or err}")
                unsaved = record.encode() if record is not None else None
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        if options.read_only:
            return SnapshotResult(id=root_tree.hex(), files=total, hashed=run.hashed,
                                  new_objects=writer.stats.objects, new_bytes=0,
                                  seconds=time.perf_counter() - started, warnings=warnings,
                                  walk=found.walk, walk_reason=found.reason)
        store.refresh()
        if not options.listed:
            remember(store.path, root_tree)  # so gc's grace period covers this id
        unchanged = (not run.hashed and records == cache.records and not _new_watch(cache, found)
                     and cache.modes is None and unsaved is None)
        # The records now have a root tree, whose mode record was just saved; where it could not
        # be, the cache carries it instead (the next snapshot's record starts from it).
        cache.modes = unsaved
        if found.monitor is not None:
            cache.fsmonitor = found.monitor
        if not unchanged and found.walk != WALK_HINTED:   # an identical one would only cost time
            cache.packs = tuple(sorted(store.index.pack_names()))
            try:
                cache.save_records(cache_path, records, total, limits.cache_part_folders)
            except OSError as err:
                # The snapshot itself is complete and durable; a missing cache only costs time.
                warn(cache_path, f"could not save the stat cache: {err.strerror or err}")
            else:
                if checkpoints is not None:
                    forget_kept(store)   # the stat cache vouches for every file now
        return SnapshotResult(id=root_tree.hex(), files=total, hashed=run.hashed,
                              new_objects=writer.stats.objects, new_bytes=writer.stats.pack_bytes,
                              seconds=time.perf_counter() - started, warnings=warnings,
                              walk=found.walk, walk_reason=found.reason,
                              watched=found.monitor is not None,
                              vouched=split.used if split is not None else 0)

    finally:
        if split is not None:
            split.close()

def _cached_modes(records: dict[str, Record], usual: frozenset[int]
                  ) -> Iterable[tuple[str, int]]:
    """(path, st_mode) of every file the stat cache holds (its fingerprint keeps st_mode)
    whose st_mode is not in `usual`."""
    for folder, record in records.items():
        prefix = folder + "/" if folder else ""
        for name, st_mode in unusual_modes(record, usual):
            yield prefix + name, st_mode


# Over this many paths reported by watchman, save the new clock even when nothing kept changed
# (the next query then starts from it instead of reporting the same paths again).
RESAVE_AFTER_PATHS = 256


def _new_watch(cache: StatCache, found: Scan) -> bool:
    """Whether the watchman state to save differs from the cache's in more than its clock."""
    new, old = found.monitor, cache.fsmonitor
    if new is None:
        return False
    if old is None or old[1] != new[1] or found.walk == WALK_FULL:
        return True
    (watch, relative, _, recrawls), (old_watch, old_relative, _, old_recrawls) = new[0], old[0]
    return ((watch, relative, recrawls) != (old_watch, old_relative, old_recrawls)
            or found.changed > RESAVE_AFTER_PATHS)

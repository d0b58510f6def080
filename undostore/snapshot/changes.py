"""Which folders a snapshot must read: every one (a full walk), or with watchman only those
holding a change since the last snapshot, the rest taken from the stat cache.

A folder is re-read when watchman names a path directly in it; a folder that was not walked
last time (new, or under an ignored folder) is read only when it is not ignored, and then
walked whole. The folders above a re-read one are rebuilt from the cache (their names and
cached blob ids), so their trees are re-encoded without a system call. Anything that could
make the cache's picture wrong means a full walk instead: no saved clock, a fresh watchman
instance or a recrawl, another watch root, a changed ignore source (a `.gitignore` in a walked
folder, info/exclude, the global excludes file or the git config naming it, `.undostoreignore`),
or watchman failing on the way.

A record need not be complete to be patched: racy files (kept with their mode only) are stat'ed
and hashed, and a folder whose tree id a restore dropped is rebuilt from its entries (the
restore keeps the safety snapshot's clock, taken before its first write, so watchman reports
every path it, or anyone, wrote; each is compared with the stat the restore recorded).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from undostore.fileio import TEMP_PREFIX
from undostore.limits import DEFAULT_LIMITS
from undostore.snapshot.capture import Delta, is_complete, known_for, split_record
from undostore.snapshot.ignore import UNDOSTORE_IGNORE, IgnoreRules, ignore_fingerprint
from undostore.snapshot.walk import (
    KIND_FILE,
    KIND_LINK,
    FileEntry,
    Folder,
    FolderRules,
    ToVisit,
    WalkOptions,
    disk_path,
    file_entry,
    iter_walk,
    read_folder,
    seen_now,
    walk_below,
)
from undostore.snapshot.watchman import Changes, Monitor, Token, fsmonitor_mode
from undostore.store.statcache import (
    ENTRY,
    FINGERPRINT,
    Record,
    StatCache,
    fingerprint,
    mode_only_indexes,
    split_names,
)

WALK_FULL = "full"
WALK_WATCHMAN = "watchman"
WALK_HINTED = "hinted"   # the caller named the only paths that may have changed
# More folders to read whole than this share of them: a full walk costs no more.
MAX_CHANGED_SHARE = 0.25
# More reported names to stat (in folders the cache holds) than this share of the cached files:
# a full walk costs no more (a name costs about what a walked file does; half leaves room for
# decoding each patched folder's record: the figures in docs/design.md, "Figures behind
# constants").
PATCH_SHARE = 0.5

Warn = Callable[[str, str], None]


_NONE: Mapping = MappingProxyType({})


class Scan(NamedTuple):
    """What a snapshot works from.

    `scanned`: folders read from disk now (every folder for a full walk, yielded as the walk
    goes); `carried`: folders above them taken from the cache as they are (their records are in
    `base`); `base`: cached records still valid (empty for a full walk); `monitor`: what to save
    with the cache for the next query (None: nothing)."""

    walk: str
    scanned: Iterable[Folder]
    carried: Sequence[str] = ()
    base: Mapping[str, Record] = _NONE
    monitor: tuple | None = None
    changed: int = 0              # paths watchman reported
    deltas: Mapping[str, Delta] = _NONE   # patched folders' name changes
    reason: str = ""              # why a full walk, when watchman was asked (for people)


def scan(root: str, cache: StatCache, options: WalkOptions, on_warning: Warn,
         watchman_timeout: float = DEFAULT_LIMITS.watchman_timeout_s,
         mode: str | None = None) -> Scan:
    """Walk all of `root`, or with watchman (answering within `watchman_timeout` seconds) only
    what changed (see the module docstring). A walk reuses the listings of folders that did not
    change (walk.py). `mode`: auto, watchman or off (None: UNDOSTORE_FSMONITOR)."""
    if options.known is None and options.threads <= 1:
        options = options._replace(known=known_for(cache))
    mode = mode or fsmonitor_mode()
    monitor = None if mode == "off" else Monitor.open(root, mode, options.skip_dirs, on_warning,
                                                      watchman_timeout)
    if monitor is None:
        reason = "" if mode == "off" else "no watchman daemon answered"
        return Scan(WALK_FULL, iter_walk(root, options), reason=reason)
    with monitor:
        fingerprint = ignore_fingerprint(root)
        saved = cache.fsmonitor
        token = Token.from_tuple(saved[0]) if isinstance(saved, tuple) and saved else None
        new_token: Token | None = None
        if token is None:
            reason = "no watchman clock saved with the stat cache"
        elif saved[1] != fingerprint:
            reason = "an ignore source outside the tree's .gitignore files changed"
        elif cache.records.get("") is None:
            reason = "the stat cache holds no record of the root"
        else:
            changes: Changes = monitor.since(token)
            new_token, reason = changes.token, changes.reason
            if changes.paths is not None and new_token is not None:
                partial = _partial(root, cache, changes.paths, options)
                if isinstance(partial, Scan):
                    return partial._replace(monitor=(new_token.to_tuple(), fingerprint))
                reason = partial
        if new_token is None and not monitor.failed:
            new_token = monitor.clock()  # before the walk: a write during it shows next time
        folders = iter_walk(root, options)
        state = (new_token.to_tuple(), fingerprint) if new_token is not None else None
        return Scan(WALK_FULL, folders, monitor=state, reason=reason)


def hinted(root: str, cache: StatCache, paths: Sequence[str], options: WalkOptions
           ) -> Scan | None:
    """The scan of a tree whose files changed, if at all, only at `paths` (a file tool's):
    those are read, the rest taken from the cache as watchman's answer would have it. None
    where the cache cannot serve (no record of the root, an ignore file among the paths, more
    paths than a walk costs): the caller walks."""
    if options.known is None and options.threads <= 1:
        options = options._replace(known=known_for(cache))
    if cache.records.get("") is None:
        return None
    partial = _partial(root, cache, list(paths), options)
    return partial._replace(walk=WALK_HINTED) if isinstance(partial, Scan) else None


def moved_while_taken(root: str, found: Scan, options: WalkOptions,
                      watchman_timeout: float = DEFAULT_LIMITS.watchman_timeout_s,
                      mode: str | None = None) -> list[str]:
    """The folders a watchman-driven scan took from the cache (`found.base`) that changed after
    watchman was asked, while the snapshot ran: a file moved out of one of them into a folder
    read later would be in the tree twice (or, the other way, in neither). The folders it read
    are checked by their own stamps (`walk.unsettled`); these, by one more watchman query since
    the scan's clock, asked only when a folder was read whole (a file moved into a folder that
    is patched, not read, is not seen there: its listing is the cache's). Empty when nothing of
    the kind changed, or watchman cannot say."""
    if found.walk != WALK_WATCHMAN or not found.base or not found.monitor:
        return []
    if all(folder.path in found.deltas for folder in found.scanned):
        return []   # nothing read whole: no snapshot or hook of an agent's edits pays for it
    token = Token.from_tuple(found.monitor[0])
    mode = mode or fsmonitor_mode()
    if token is None or mode == "off":
        return []
    monitor = Monitor.open(root, mode, options.skip_dirs, lambda _path, _message: None,
                           watchman_timeout)
    if monitor is None:
        return []
    with monitor:
        late = monitor.since(token).paths
    base = found.base
    return sorted({folder for path in late or () for folder in (path, _parent(path))
                   if folder in base})


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


class _Partial:
    """The bookkeeping of one watchman-driven scan."""

    def __init__(self, root: str, cache: StatCache, options: WalkOptions) -> None:
        self.root = root
        self.options = options
        self.records: dict[str, Record] = dict(cache.records)
        self._rules: dict[str, FolderRules] = {}
        self._outside = FolderRules.outside(root)
        self._real: dict[str, bool] = {"": True}
        self.deltas: dict[str, Delta] = {}

    def rules_inside(self, folder: str) -> IgnoreRules:
        """The rules for entries of `folder` (its own `.gitignore` included)."""
        return self._inside(folder).get()

    def _inside(self, folder: str) -> FolderRules:
        rules = self._rules.get(folder)
        if rules is None:
            rules = self._rules[folder] = self.inherited(folder).inside(folder)
        return rules

    def inherited(self, folder: str) -> FolderRules:
        """The rules a walk hands to `folder` (before its own `.gitignore`)."""
        return self._outside if folder == "" else self._inside(_parent(folder))

    def real_dir(self, folder: str) -> bool:
        """Whether every component of `folder` is a folder, not a symlink (never followed)."""
        known = self._real.get(folder)
        if known is None:
            known = self.real_dir(_parent(folder))
            if known:
                try:
                    known = stat.S_ISDIR(os.lstat(disk_path(self.root, folder)).st_mode)
                except OSError:
                    known = False
            self._real[folder] = known
        return known

    def subdirs(self, folder: str) -> list[str]:
        prefix = folder + "/" if folder else ""
        record = self.records.get(folder)
        if record is None:
            return []
        return [prefix + n for n in split_names(record.names) if prefix + n in self.records]

    def drop_subtree(self, folder: str) -> None:
        for sub in self.subdirs(folder):
            self.drop_subtree(sub)
        self.records.pop(folder, None)


def _partial(root: str, cache: StatCache, paths: list[str], options: WalkOptions
             ) -> Scan | str:
    """The scan for watchman's `paths`, or why only a full walk is sure."""
    work = _Partial(root, cache, options)
    records = cache.records
    rescan: set[str] = set()
    direct: dict[str, set[str]] = {}   # walked folder -> names reported directly in it
    for path in paths:
        parent, _, name = path.rpartition("/")
        if parent in records:
            if name == ".gitignore" or (not parent and name == UNDOSTORE_IGNORE):
                return f"{path} changed: what is kept may change anywhere below"
            direct.setdefault(parent, set()).add(name)
            continue
        parts = path.split("/")
        above = ""
        child = parts[0]
        for i in range(1, len(parts)):
            candidate = "/".join(parts[:i])
            if candidate not in records:
                child = candidate
                break
            above = candidate
        if child in options.skip_dirs:
            continue
        rules = work.rules_inside(above)
        if rules and rules.is_ignored(child, True):
            continue  # inside a folder git ignores: costs nothing
        # A folder the cache does not hold: its name is looked at in the folder above (gone:
        # nothing to read; there: read that folder whole, walk the new one).
        direct.setdefault(above, set()).add(child.rpartition("/")[2])
    # Patching costs a stat per reported name, which pays while they are fewer than a share of
    # the files (PATCH_SHARE); reading folders whole, while they are few (MAX_CHANGED_SHARE).
    files = cache.count if cache.count >= 0 else len(records)
    if sum(map(len, direct.values())) > PATCH_SHARE * files + 256:
        return f"watchman reported {len(paths)} paths: a walk costs no more"
    # A folder a restore left without a tree id is rebuilt even where watchman names nothing
    # in it (a file the restore found already in place).
    for folder, record in records.items():
        if record.tree_id is False and folder not in direct:
            direct[folder] = set()
    # A folder whose reported names are all files is patched from the cache (those names are
    # stat'ed, nothing else); any other change in it (a folder appearing, going or changing
    # type, a special file) has it read whole.
    patched: dict[str, Folder] = {}
    for folder, names in direct.items():
        patch = _patch(work, folder, names) if folder not in rescan else None
        if patch is None:
            rescan.add(folder)
        else:
            patched[folder] = patch
    # A folder gone or replaced (by a file, a symlink): read the nearest real folder above it.
    todo: set[str] = set()
    for folder in rescan:
        while folder and not work.real_dir(folder):
            folder = _parent(folder)
        todo.add(folder)
    for folder in todo:
        patched.pop(folder, None)
    # Folders above are taken from the cache; one the cache cannot vouch for whole is patched
    # (its racy files hashed), or read whole when even that is unsure.
    carried: set[str] = set()
    for folder in [*todo, *patched]:
        while folder:
            folder = _parent(folder)
            if folder in todo or folder in carried or folder in patched:
                continue
            if is_complete(folder, records):
                carried.add(folder)
                continue
            patch = _patch(work, folder, set())
            if patch is None:
                todo.add(folder)
            else:
                patched[folder] = patch
    if len(todo) > MAX_CHANGED_SHARE * len(records) + 16:
        return f"{len(todo)} of {len(records)} folders to read whole: a walk costs no more"
    return _read(work, todo, carried, len(paths), patched)


def _modes_only(record: Record, keys: list[str]) -> list[str]:
    """Names whose entry keeps only a mode (statcache.racy_kept): hashed again, as the walk
    would. Only a record listing its entries by name holds one."""
    return [keys[i] for i in mode_only_indexes(record.entries) if i < len(keys)]


def _patch(work: _Partial, folder: str, reported: set[str]) -> Folder | None:
    """`folder` as the walk would find it, from its cached record and a stat of each name that
    may differ: those watchman reported, files the record holds no entry for or only a mode
    (racy at save time: hashed, as the walk would) and entries for names it does not list (files
    a restore created: kept when not ignored, trusted when their stat matches). A record
    without a tree id is re-encoded from the result. None when only reading it whole is sure."""
    record = work.records.get(folder)
    if record is None or folder in work.options.unreadable or not work.real_dir(folder):
        return None   # (a file left out as unreadable: the folder is read whole, which warns)
    # Taken before any name is looked at: a rename in the folder meanwhile (a file seen under
    # both names) moves it, and the snapshot takes the tree again (walk.unsettled).
    seen = seen_now(work.root, folder)
    files, subdirs = split_record(folder, record, work.records)
    count = len(record.entries) // ENTRY.size
    old_files = len(files)
    keys = files[:count] if record.entry_names is None else split_names(record.entry_names)
    names = set(reported)
    if record.entry_names is not None:
        listed = set(files)
        if keys != files:   # equal where the names are listed only for a racy file's sake
            names.update(listed.difference(keys))                    # left out at save time
            names.update(name for name in keys if name not in listed)  # written by a restore
        names.update(_modes_only(record, keys))                  # racy at save time
    else:
        listed = None
        names.update(files[count:])
    if not names:
        work.deltas[folder] = Delta(old_files, frozenset())
        return _seen(Folder(folder, [], subdirs, files), seen)
    known = listed if listed is not None else set(files)
    folders = set(subdirs)
    at: dict[str, int] | _Index | None = None
    prefix = folder + "/" if folder else ""
    gone: set[str] = set()
    changed: list[FileEntry] = []
    for name in sorted(names):
        path = prefix + name
        try:
            st = os.lstat(disk_path(work.root, path))
        except FileNotFoundError:
            if name.startswith(TEMP_PREFIX):
                continue  # a temp file of undostore's (a restore's), already gone
            if name in folders:
                return None
            if name in known:
                gone.add(name)
            continue
        except OSError:
            return None
        if name.startswith(TEMP_PREFIX):
            return None   # undostore's own temp file, still there: the whole read warns of it
        if name in folders:
            if stat.S_ISDIR(st.st_mode):
                continue  # its own listing changed: reported below it, name by name
            return None
        if stat.S_ISREG(st.st_mode):
            kind = KIND_FILE
        elif stat.S_ISLNK(st.st_mode):
            kind = KIND_LINK
        else:
            return None  # a new folder, or a special file the walk warns about
        if name not in known:
            rules = work.rules_inside(folder)
            if rules and rules.is_ignored(path, False):
                continue
            files.append(name)
            known.add(name)
        if at is None:   # by name; for a few names, a scan in C costs less than the dict
            at = ({key: i for i, key in enumerate(keys)} if len(names) > _FEW
                  else _Index(keys))
        index = at.get(name)
        if (index is not None
                and FINGERPRINT.unpack_from(record.entries, index * ENTRY.size)
                == fingerprint(st)):
            continue
        changed.append(file_entry(name, prefix, kind, st))
    work.deltas[folder] = Delta(old_files, frozenset(gone))
    if gone:
        files = [name for name in files if name not in gone]
    if changed:   # the order `match_folder` reads
        position = {name: i for i, name in enumerate(files)} if len(changed) > _FEW else None
        changed.sort(key=lambda entry: position[entry.name] if position is not None
                     else files.index(entry.name))
    return _seen(Folder(folder, changed, subdirs, files), seen)


def _seen(folder: Folder, seen: bytes) -> Folder:
    folder.seen = seen
    return folder


_FEW = 32


class _Index:
    """`dict.get` over a list of names, by scanning it (for a few look-ups in a big folder)."""

    def __init__(self, keys: list[str] | tuple[str, ...]) -> None:
        self.keys = keys

    def get(self, name: str) -> int | None:
        try:
            return self.keys.index(name)
        except ValueError:
            return None


def _read(work: _Partial, todo: set[str], carried: set[str], changed: int,
          patched: dict[str, Folder]) -> Scan:
    scanned: list[Folder] = []
    removed: set[str] = set()
    # Top-down, so a folder removed above is never read below.
    for folder in sorted(todo, key=lambda p: (p.count("/") if p else -1, p)):
        if any(folder == r or folder.startswith(r + "/") for r in removed):
            continue
        before = set(work.subdirs(folder))
        found, subs = read_folder(work.root, ToVisit(folder, work.inherited(folder)),
                                  work.options)
        scanned.append(found)
        now = {sub.path for sub in subs}
        for gone in before - now:
            work.drop_subtree(gone)
            removed.add(gone)
        for sub in subs:
            if sub.path not in work.records:   # new since the last snapshot: walked whole
                scanned.extend(walk_below(work.root, sub, work.options))
    patched = {path: found for path, found in patched.items() if path in work.records}
    scanned += patched.values()
    deltas = {path: work.deltas[path] for path in patched if path in work.deltas}
    built = {f.path for f in scanned}
    for path in built:
        work.records.pop(path, None)
    kept = [path for path in carried if path in work.records and path not in built]
    return Scan(WALK_WATCHMAN, scanned, kept, work.records, changed=changed, deltas=deltas)

"""Which folders a snapshot must read: every one (a full walk), or with watchman only those
holding a change since the last snapshot, the rest taken from the stat cache.

A folder is re-read when watchman names a path directly in it; a folder that was not walked
last time (new, or under an ignored folder) is read only when it is not ignored, and then
walked whole. The folders above a re-read one are rebuilt from the cache (their names and
cached blob ids), so their trees are re-encoded without a system call. Anything that could
make the cache's picture wrong means a full walk instead: no saved clock, a fresh watchman
instance or a recrawl, another watch root, a changed ignore source (a `.gitignore` in a walked
folder, info/exclude, the global excludes file or the git config naming it, `.undostoreignore`),
a cache left incomplete by a restore, or watchman failing on the way.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from .fsmonitor import Changes, Monitor, Token, fsmonitor_mode
from .ignore import (
    IgnoreRules,
    git_common_dir,
    git_config_files,
    global_excludes_path,
    read_ignore_file,
    root_rules,
)
from .statcache import Entry, FolderState, StatCache
from .walk import (
    KIND_FILE,
    KIND_LINK,
    FileEntry,
    Folder,
    WalkOptions,
    _scan_folder,
    disk_path,
    walk,
)

WALK_FULL = "full"
WALK_WATCHMAN = "watchman"
UNDOSTORE_IGNORE = ".undostoreignore"
# More changed paths than this share of the cached files: a full walk costs no more.
MAX_CHANGED_SHARE = 0.25

Warn = Callable[[str, str], None]


@dataclass
class Scan:
    """What a snapshot works from.

    `scanned`: folders read from disk now (every folder for a full walk); `carried`: folders
    above them rebuilt from the cache (files with `st=None`, blob ids in `base_files`);
    `base_states`/`base_files`: cached folder states and entries still valid (empty for a full
    walk); `monitor`: what to save with the cache for the next query (None: nothing)."""

    walk: str
    scanned: list[Folder]
    carried: list[Folder] = field(default_factory=list)
    base_states: dict[str, FolderState] = field(default_factory=dict)
    base_files: dict[str, Entry] = field(default_factory=dict)
    monitor: tuple | None = None
    changed: int = 0              # paths watchman reported


def ignore_fingerprint(root: str) -> bytes:
    """A digest of every ignore source outside the walked `.gitignore` files: a change to any
    of them may change what is kept anywhere, so the cache's picture no longer holds."""
    sources = [os.path.join(root, UNDOSTORE_IGNORE), *git_config_files(root)]
    common = git_common_dir(root)
    if common is not None:
        sources.append(os.path.join(common, "info", "exclude"))
    excludes = global_excludes_path(root)
    if excludes:
        sources.append(excludes)
    digest = hashlib.sha1()
    for path in sources:
        digest.update(os.fsencode(path) + b"\0")
        try:
            with open(path, "rb") as f:
                digest.update(b"+" + hashlib.sha1(f.read()).digest())
        except OSError:
            digest.update(b"-")
    return digest.digest()


def scan(root: str, cache: StatCache, options: WalkOptions, on_warning: Warn) -> Scan:
    """Walk all of `root`, or with watchman only what changed (see the module docstring)."""
    mode = fsmonitor_mode(on_warning)
    monitor = None if mode == "off" else Monitor.open(root, mode, options.skip_dirs, on_warning)
    if monitor is None:
        return Scan(WALK_FULL, walk(root, options))
    with monitor:
        fingerprint = ignore_fingerprint(root)
        saved = cache.fsmonitor
        token = Token.from_tuple(saved[0]) if isinstance(saved, tuple) and saved else None
        new_token: Token | None = None
        if token is not None and saved[1] == fingerprint and "" in cache.folders:
            changes: Changes = monitor.since(token)
            new_token = changes.token
            if changes.paths is not None and new_token is not None:
                partial = _partial(root, cache, changes.paths, options)
                if partial is not None:
                    partial.monitor = (new_token.to_tuple(), fingerprint)
                    return partial
        if new_token is None and not monitor.failed:
            new_token = monitor.clock()  # before the walk: a write during it shows next time
        folders = walk(root, options)
        state = (new_token.to_tuple(), fingerprint) if new_token is not None else None
        return Scan(WALK_FULL, folders, monitor=state)


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


class _Partial:
    """The bookkeeping of one watchman-driven scan."""

    def __init__(self, root: str, cache: StatCache, options: WalkOptions) -> None:
        self.root = root
        self.options = options
        self.states: dict[str, FolderState] = dict(cache.folders)
        self.files: dict[str, Entry] = dict(cache.files)
        self._rules: dict[str, IgnoreRules] = {}
        self._real: dict[str, bool] = {"": True}

    def rules_inside(self, folder: str) -> IgnoreRules:
        """The rules for entries of `folder` (its own `.gitignore` included)."""
        rules = self._rules.get(folder)
        if rules is None:
            above = root_rules(self.root) if folder == "" else self.rules_inside(_parent(folder))
            own = read_ignore_file(os.path.join(disk_path(self.root, folder), ".gitignore"),
                                   base=folder, follow_symlinks=False)
            rules = self._rules[folder] = above.with_folder_file(own)
        return rules

    def inherited(self, folder: str) -> IgnoreRules:
        """The rules `walk` hands to `folder` (before its own `.gitignore`)."""
        return root_rules(self.root) if folder == "" else self.rules_inside(_parent(folder))

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
        state = self.states.get(folder)
        return [prefix + n for n in state[1] if prefix + n in self.states] if state else []

    def drop_files_of(self, folder: str) -> None:
        prefix = folder + "/" if folder else ""
        state = self.states.get(folder)
        for name in state[1] if state else ():
            self.files.pop(prefix + name, None)

    def drop_subtree(self, folder: str) -> None:
        for sub in self.subdirs(folder):
            self.drop_subtree(sub)
        self.drop_files_of(folder)
        self.states.pop(folder, None)

    def complete(self, folder: str) -> bool:
        """Whether every name the cache lists in `folder` is a cached file or folder (a file
        left out as racy, or a state dropped by a restore, means: read it from disk)."""
        state = self.states.get(folder)
        if state is None:
            return False
        prefix = folder + "/" if folder else ""
        return all(prefix + n in self.files or prefix + n in self.states for n in state[1])


def _partial(root: str, cache: StatCache, paths: list[str], options: WalkOptions
             ) -> Scan | None:
    """The scan for watchman's `paths`, or None when only a full walk is sure."""
    if len(paths) > MAX_CHANGED_SHARE * len(cache.files) + 64:
        return None
    work = _Partial(root, cache, options)
    states = cache.folders
    rescan: set[str] = set()
    for path in paths:
        parent, _, name = path.rpartition("/")
        if parent in states:
            if name == ".gitignore" or (not parent and name == UNDOSTORE_IGNORE):
                return None  # what is kept may change anywhere below
            rescan.add(parent)
            continue
        parts = path.split("/")
        above = ""
        child = parts[0]
        for i in range(1, len(parts)):
            candidate = "/".join(parts[:i])
            if candidate not in states:
                child = candidate
                break
            above = candidate
        if child in options.skip_dirs:
            continue
        rules = work.rules_inside(above)
        if rules and rules.is_ignored(child, True):
            continue  # inside a folder git ignores: costs nothing
        rescan.add(above)
    # A folder gone or replaced (by a file, a symlink): read the nearest real folder above it.
    todo: set[str] = set()
    for folder in rescan:
        while folder and not work.real_dir(folder):
            folder = _parent(folder)
        todo.add(folder)
    # Folders above are rebuilt from the cache; one with a name the cache lacks is read too.
    carried: set[str] = set()
    for folder in list(todo):
        while folder:
            folder = _parent(folder)
            if folder in todo or folder in carried:
                continue
            if work.complete(folder):
                carried.add(folder)
            else:
                todo.add(folder)
    return _read(work, todo, carried, len(paths))


def _read(work: _Partial, todo: set[str], carried: set[str], changed: int) -> Scan:
    scanned: list[Folder] = []
    removed: set[str] = set()
    # Top-down, so a folder removed above is never read below.
    for folder in sorted(todo, key=lambda p: (p.count("/") if p else -1, p)):
        if any(folder == r or folder.startswith(r + "/") for r in removed):
            continue
        before = set(work.subdirs(folder))
        found, subs = _scan_folder(work.root, folder, work.inherited(folder), work.options)
        work.drop_files_of(folder)
        scanned.append(found)
        now = {sub for sub, _ in subs}
        for gone in before - now:
            work.drop_subtree(gone)
            removed.add(gone)
        for sub, rules in subs:
            if sub not in work.states:
                scanned.extend(_walk_below(work, sub, rules))
    built = {f.path for f in scanned}
    carried_folders = [_from_cache(work, path) for path in carried if path not in built]
    for path in built:
        work.states.pop(path, None)
    for folder in carried_folders:
        work.states.pop(folder.path, None)
    return Scan(WALK_WATCHMAN, scanned, carried_folders, work.states, work.files,
                changed=changed)


def _walk_below(work: _Partial, top: str, rules: IgnoreRules) -> list[Folder]:
    """A folder new since the last snapshot, walked whole (as `walk` would)."""
    out: list[Folder] = []
    stack = [(top, rules)]
    while stack:
        path, inherited = stack.pop()
        folder, subs = _scan_folder(work.root, path, inherited, work.options)
        out.append(folder)
        stack.extend(subs)
    return out


def _from_cache(work: _Partial, path: str) -> Folder:
    """A folder rebuilt from the cache: its files' entries and its sub-folders' names."""
    prefix = path + "/" if path else ""
    folder = Folder(path)
    for name in work.states[path][1]:
        full = prefix + name
        if full in work.states:
            folder.subdirs.append(name)
        else:
            mode = work.files[full][5]
            kind = KIND_LINK if mode == 0o120000 else KIND_FILE
            folder.files.append(FileEntry(name, full, kind, None))  # type: ignore[arg-type]
    return folder

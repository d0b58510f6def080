"""Restore planning, pure: from the tree the files are at now and the tree they should be at, the
list of files to create, modify, delete and re-mode, and the folders that may become empty.

Only paths whose entry differs are planned, so unchanged files are never rewritten and keep their
mtimes. Planning reads trees through a callable and never touches the files; everything about the
disk (obstacles, conflicts, writing) lives in checkout.py.

    current = flatten(read_tree, safety_id)
    wanted = flatten(read_tree, target_id, check=True)   # refuses unsafe names and modes
    plan = make_plan(current, wanted)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from undostore.errors import UnknownSnapshotError, UnsafePathError
from undostore.git.objects import MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, decode_tree
from undostore.git.treedelta import is_canonical, names_fold_apart, tree_delta
from undostore.platform import IS_WINDOWS
from undostore.restore.paths import check_name


class Entry(NamedTuple):
    """A file or symlink of a snapshot."""

    mode: int                      # git mode: 100644, 100755 or 120000
    sha: bytes                     # raw blob id


ReadTree = Callable[[bytes], bytes]  # tree id -> tree body (hash-checked by the reader)

_LEGACY_FILE = 0o100664            # old git wrote this for plain files; it means 100644


@dataclass
class FlatTree:
    """A snapshot as a flat map: file entries, folders, and each folder's tree id. A `partial`
    one (from `flatten_difference`) holds only what differs from the other side."""

    id: str
    files: dict[str, Entry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)          # folders holding something ('' not)
    trees: dict[str, bytes] = field(default_factory=dict)  # folder ('' = root) -> tree id
    partial: bool = False
    case_clashes: list[tuple[str, str]] = field(default_factory=list)  # siblings, checked trees

    def drop_trees(self, folder: str) -> None:
        """Forget the tree ids of `folder` and the folders above it: the files a restore
        leaves there are not what those trees list (a file `.undostoreignore` keeps out)."""
        while True:
            self.trees.pop(folder, None)
            if not folder:
                return
            folder = folder.rpartition("/")[0]

    def keep_canonical_trees(self, bodies: dict[bytes, bytes]) -> None:
        """Forget the tree ids of folders whose body (read while planning) is not what a
        snapshot of the restored files encodes (git's legacy 100664, a zero-padded mode, an
        order not git's: only a store written by something else holds one), and above."""
        for folder, sha in list(self.trees.items()):
            body = bodies.get(sha)
            if body is None or not is_canonical(body):
                self.drop_trees(folder)


# Pairs of trees flattened where they differ, checked, by (current, target) ids: a merge whose
# result is one of its own sides (a turn undone with nothing changed since) hands the pair it
# read to the restore that follows (`flatten_difference(memo=)`), which would read it again.
Differences = dict[tuple[bytes, bytes], tuple[FlatTree, FlatTree]]


class TreeBodies:
    """Tree bodies by id, read once (identical sub-folders of several snapshots are shared);
    `bodies` may be a caller's, shared with a later read (a merge's with its restore)."""

    def __init__(self, read_tree: ReadTree, bodies: dict[bytes, bytes] | None) -> None:
        self.read_tree = read_tree
        self.bodies = bodies if bodies is not None else {}

    def body(self, sha: bytes) -> bytes:
        body = self.bodies.get(sha)
        if body is None:
            body = self.bodies[sha] = self.read_tree(sha)
        return body

    def entries(self, sha: bytes) -> list[tuple[int, bytes, bytes]]:
        return decode_tree(self.body(sha))


def flatten(read_tree: ReadTree, tree: bytes, *, check: bool = False,
            windows: bool = IS_WINDOWS, bodies: dict[bytes, bytes] | None = None) -> FlatTree:
    """Every entry below `tree`. With `check`, refuse (UnsafePathError) names that cannot be
    written safely, modes a restore cannot produce (submodules), and duplicate names.
    `bodies` caches tree bodies by id across calls."""
    flat = FlatTree(tree.hex())
    trees = TreeBodies(read_tree, bodies)
    checked: set[bytes] = set()
    stack: list[tuple[str, bytes]] = [("", tree)]
    while stack:
        folder, sha = stack.pop()
        entries = trees.entries(sha)
        flat.trees[folder] = sha
        if check and sha not in checked:
            _check_entries(entries, folder, windows)
            _case_clashes(entries, folder, flat.case_clashes)
            checked.add(sha)
        prefix = folder + "/" if folder else ""
        for mode, raw_name, child in entries:
            path = prefix + os.fsdecode(raw_name)
            if mode == MODE_TREE:
                flat.dirs.add(path)
                stack.append((path, child))
            else:
                flat.files[path] = Entry(_file_mode(mode), child)
    return flat


def flatten_difference(read_tree: ReadTree, current: bytes, target: bytes, *,
                       windows: bool = IS_WINDOWS, bodies: dict[bytes, bytes] | None = None,
                       check: bool = True, memo: Differences | None = None
                       ) -> tuple[FlatTree, FlatTree]:
    """Both snapshots flattened only where they differ: a sub-folder with the same tree id on
    both sides, and a file with the same entry, are skipped (they need no restore, and their
    objects are the ones the files now were captured with). Every target entry that differs,
    so every name on the way to a file the restore writes, is checked like
    `flatten(check=True)`, and every target folder read for duplicates and case clashes.
    Restoring a few files of a large tree reads only the folders on their way. `check` False:
    nothing is checked (a merge reading trees it will not write as they are; the restore of its
    result checks that). `memo`: a checked pair found there is taken out and returned (the
    taker may change it); one made here is put there."""
    if memo is not None and check and (current, target) in memo:
        return memo.pop((current, target))
    now = FlatTree(current.hex(), partial=True)
    wanted = FlatTree(target.hex(), partial=True)
    trees = TreeBodies(read_tree, bodies)
    stack: list[tuple[str, bytes | None, bytes | None]] = [("", current, target)]
    while stack:
        folder, old_sha, new_sha = stack.pop()
        if old_sha:
            now.trees[folder] = old_sha
        if new_sha:
            wanted.trees[folder] = new_sha
        old, new = _differing(trees, folder, old_sha, new_sha, windows,
                              wanted.case_clashes if check else None)
        prefix = folder + "/" if folder else ""
        for name in old.keys() | new.keys():
            before, after = old.get(name), new.get(name)
            if before == after:
                continue
            path = prefix + os.fsdecode(name)
            old_sub = _subtree(before, now, path)
            new_sub = _subtree(after, wanted, path)
            if old_sub or new_sub:
                stack.append((path, old_sub, new_sub))
    if memo is not None and check:
        memo[(current, target)] = (now, wanted)
    return now, wanted


def changed_files(read_tree: ReadTree, before: bytes, after: bytes
                  ) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Each file that differs between two trees, with its entry in each (None: none there),
    in path order; reading only the folders that differ, checking nothing."""
    old, new = flatten_difference(read_tree, before, after, check=False)
    return {path: (old.files.get(path), new.files.get(path))
            for path in sorted(old.files.keys() | new.files.keys())}


def _differing(trees: TreeBodies, folder: str, old_sha: bytes | None, new_sha: bytes | None,
               windows: bool, clashes: list[tuple[str, str]] | None
               ) -> tuple[dict[bytes, tuple[int, bytes]], dict[bytes, tuple[int, bytes]]]:
    """One folder's entries that differ between the two sides, by name, with the target's
    side checked. Names kept unchanged are files on this disk now and are never written: check
    what the restore writes, and the whole folder for duplicates and case clashes. Two bodies
    are compared as sets of raw entries (treedelta.py) when they can be; else entry by entry.
    `clashes` None: nothing is checked (`flatten_difference(check=False)`)."""
    check = clashes is not None
    delta = (tree_delta(trees.body(old_sha), trees.body(new_sha), names=check)
             if old_sha and new_sha else None)
    if delta is not None and not (check and delta.new_has_duplicates):
        if clashes is not None:
            _check_entries(delta.added, folder, windows)
            if not names_fold_apart(delta.new_names):
                _case_clashes([(0, name, b"") for name in delta.new_names], folder, clashes)
        return ({name: (mode, sha) for mode, name, sha in delta.removed},
                {name: (mode, sha) for mode, name, sha in delta.added})
    old_entries = trees.entries(old_sha) if old_sha else []
    new_entries = trees.entries(new_sha) if new_sha else []
    old = {name: (mode, sha) for mode, name, sha in old_entries}
    new = {name: (mode, sha) for mode, name, sha in new_entries}
    if new_sha and clashes is not None:
        written = [e for e in new_entries if old.get(e[1]) != (e[0], e[2])]
        if len(new) != len(new_entries):
            written = new_entries
        _check_entries(written, folder, windows)
        _case_clashes(new_entries, folder, clashes)
    return old, new


def _subtree(entry: tuple[int, bytes] | None, flat: FlatTree, path: str) -> bytes | None:
    """Record `entry` at `path` in `flat`; the sub-folder's tree id if it is a folder."""
    if entry is None:
        return None
    mode, sha = entry
    if mode == MODE_TREE:
        flat.dirs.add(path)
        return sha
    flat.files[path] = Entry(_file_mode(mode), sha)
    return None


def _file_mode(mode: int) -> int:
    return MODE_FILE if mode == _LEGACY_FILE else mode


def _case_clashes(entries: list[tuple[int, bytes, bytes]], folder: str,
                  clashes: list[tuple[str, str]]) -> None:
    """Record names of one folder that differ only in case (one file where case is folded)."""
    names = [raw for _, raw, _ in entries]
    if all(raw.isascii() for raw in names) and len({raw.lower() for raw in names}) == len(names):
        return
    folded: dict[str, str] = {}
    for raw in names:
        name = os.fsdecode(raw)
        path = f"{folder}/{name}" if folder else name
        other = folded.setdefault(name.casefold(), path)
        if other != path:
            clashes.append((other, path))


def _check_entries(entries: list[tuple[int, bytes, bytes]], folder: str, windows: bool,
                   ) -> None:
    seen: set[bytes] = set()
    for mode, raw_name, _ in entries:
        name = os.fsdecode(raw_name)
        path = check_name(name, folder, windows=windows)
        if raw_name in seen:
            raise UnsafePathError("unsafe snapshot: the same name appears twice in one folder",
                                  path)
        seen.add(raw_name)
        if mode not in (MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE, _LEGACY_FILE):
            what = "a submodule (gitlink)" if mode == 0o160000 else f"mode {mode:o}"
            raise UnsafePathError(f"the snapshot holds {what}, which a restore cannot write",
                                  path)


def root_tree(read_object: Callable[[bytes], tuple[int, bytes]], sha: bytes) -> bytes:
    """The body of the tree a snapshot id names (a blob id is not a snapshot)."""
    from undostore.git.objects import TREE

    type_num, body = read_object(sha)
    if type_num != TREE:
        raise UnknownSnapshotError(f"{sha.hex()} is not a snapshot (not a tree)")
    return body


@dataclass
class RestorePlan:
    """What a restore will do, in the order it does it (see checkout.py):
    delete, remove emptied folders, create and modify, fix modes."""

    target: str                    # hex id the files will be at
    safety: str                    # hex id of the files before (the safety snapshot)
    create: list[str] = field(default_factory=list)
    modify: list[str] = field(default_factory=list)   # content, or file <-> symlink
    delete: list[str] = field(default_factory=list)
    chmod: list[str] = field(default_factory=list)    # only the executable bit changes
    remove_dirs: list[str] = field(default_factory=list)  # removed if empty, deepest first
    before: dict[str, Entry] = field(default_factory=dict)  # entries now, of touched paths
    after: dict[str, Entry] = field(default_factory=dict)   # entries wanted, of touched paths

    @property
    def is_empty(self) -> bool:
        return not (self.create or self.modify or self.delete or self.chmod)

    @property
    def modified(self) -> list[str]:
        """Paths whose content or mode changes (what results report as modified)."""
        return sorted(self.modify + self.chmod)

    def touched(self) -> list[str]:
        return sorted({*self.create, *self.modify, *self.delete, *self.chmod})

    def summary(self) -> str:
        if self.is_empty:
            return f"the files are already at {self.target[:12]}: nothing to change"
        return (f"restore {self.target[:12]}: {len(self.create)} to create, "
                f"{len(self.modified)} to modify, {len(self.delete)} to delete "
                f"(safety snapshot {self.safety[:12]})")

    def lines(self, limit: int | None = None) -> list[str]:
        """`A path`, `M path`, `D path` lines like `git diff --name-status`, sorted by path."""
        marks = [("A", p) for p in self.create] + [("M", p) for p in self.modified] + \
            [("D", p) for p in self.delete]
        marks.sort(key=lambda item: item[1])
        out = [f"{mark}\t{path}" for mark, path in marks[:limit]]
        if limit is not None and len(marks) > limit:
            out.append(f"... and {len(marks) - limit} more")
        return out


def make_plan(current: FlatTree, target: FlatTree, *, only: set[str] | None = None,
              extra_dirs: Iterable[str] = ()) -> RestorePlan:
    """The plan taking the files from `current` to `target`; with `only`, just those paths
    (an abort rolls back only what the interrupted restore touched)."""
    plan = RestorePlan(target=target.id, safety=current.id)
    now, wanted = current.files, target.files
    paths = (now.keys() | wanted.keys()) if only is None else only
    for path in paths:
        old = now.get(path)
        new = wanted.get(path)
        if old == new:
            continue
        if old is None:
            plan.create.append(path)
        elif new is None:
            plan.delete.append(path)
        elif old[1] == new[1] and MODE_LINK not in (old[0], new[0]):
            plan.chmod.append(path)
        else:
            plan.modify.append(path)
        if old is not None:
            plan.before[path] = old
        if new is not None:
            plan.after[path] = new
    plan.create.sort()
    plan.modify.sort()
    plan.delete.sort()
    plan.chmod.sort()
    if only is None:
        candidates = current.dirs - target.dirs
    else:  # only folders that the planned deletes may empty
        candidates = {d for path in plan.delete for d in parent_dirs(path)} & current.dirs
    candidates = (candidates | set(extra_dirs)) - target.dirs
    plan.remove_dirs = sorted(candidates, key=lambda d: (-d.count("/"), d))
    return plan


def parent_dirs(path: str) -> list[str]:
    """The folders holding `path`, outermost first ('a/b/c' -> ['a', 'a/b'])."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def expected_conflicts(plan: RestorePlan, expected: dict[str, Entry]) -> list[str]:
    """Touched paths whose entry now differs from their entry in the expected snapshot (the
    caller's belief; `expected` needs only the touched paths, as `entries_at` gives them)."""
    return [path for path in plan.touched() if plan.before.get(path) != expected.get(path)]


def entries_at(read_tree: ReadTree, tree: bytes, paths: Iterable[str],
               bodies: dict[bytes, bytes] | None = None) -> dict[str, Entry]:
    """The file entries of `tree` at `paths` (a path with no file there is left out), reading
    only the folders on their way: a few paths of a large snapshot cost a few tree reads, not
    a flatten of every folder."""
    trees = TreeBodies(read_tree, bodies)
    folders: dict[str, dict[str, tuple[int, bytes]] | None] = {}

    def listing(folder: str) -> dict[str, tuple[int, bytes]] | None:
        if folder not in folders:
            if not folder:
                sha: bytes | None = tree
            else:
                parent, _, name = folder.rpartition("/")
                above = listing(parent)
                entry = above.get(name) if above is not None else None
                sha = entry[1] if entry is not None and entry[0] == MODE_TREE else None
            folders[folder] = None if sha is None else {
                os.fsdecode(raw): (mode, child) for mode, raw, child in trees.entries(sha)}
        return folders[folder]

    found: dict[str, Entry] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        names = listing(folder)
        entry = names.get(name) if names is not None else None
        if entry is not None and entry[0] != MODE_TREE:
            found[path] = Entry(_file_mode(entry[0]), entry[1])
    return found

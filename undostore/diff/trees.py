"""What changed between two snapshots: a pure comparison of two trees in the store.

`diff_trees` walks both trees together in git's order and descends only into folders whose ids
differ, so two 100,000-file snapshots that differ in a few files cost a few tree reads. It reads
only the store, never the files under root, and no blob: line counts are read on first use
(`Change.added`), so `--name-status` never inflates a blob.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from undostore.diff.change import Change
from undostore.errors import IncompleteSnapshotError, UnknownSnapshotError, UsageError
from undostore.git.objects import MODE_TREE, TREE, decode_tree

if TYPE_CHECKING:
    from undostore.git.reader import ObjectReader
    from undostore.store.store import Store

_TYPE_MASK = 0o170000
_GLOB_CHARS = "*?["
_MAX_NAMED = 20  # missing objects named in one message


@dataclass
class DiffResult:
    """The two snapshot ids compared (hex; `to_id` is the fresh snapshot when comparing with the
    files now) and the changes from the first to the second, in git's order."""

    from_id: str
    to_id: str
    changes: list[Change]
    to_is_now: bool = False


# --- path filters --------------------------------------------------------------------------


class PathFilter:
    """Which paths a list of path specs selects, like git's plain pathspecs: a spec names a file
    or a folder (everything under it), or is a glob where `*` also matches `/`."""

    def __init__(self, specs: list[str] | None) -> None:
        self.literal: list[str] = []
        self.globs: list[tuple[str, str]] = []
        self.everything = not specs
        self.specs = list(specs or [])   # as given: what a message names
        for raw in specs or []:
            spec = normalize_spec(raw)
            if spec == "":
                self.everything = True
            elif any(c in spec for c in _GLOB_CHARS):
                cut = min(spec.find(c) for c in _GLOB_CHARS if c in spec)
                self.globs.append((spec, spec[:cut]))
            else:
                self.literal.append(spec)

    def wants_file(self, path: str) -> bool:
        if self.everything:
            return True
        for spec in self.literal:
            if path == spec or path.startswith(spec + "/"):
                return True
        return any(fnmatch.fnmatchcase(path, glob) for glob, _ in self.globs)

    def wants_folder(self, path: str) -> bool:
        """Might anything under folder `path` be selected?"""
        if self.everything:
            return True
        below = path + "/"
        for spec in self.literal:
            if path == spec or path.startswith(spec + "/") or spec.startswith(below):
                return True
        return any(below.startswith(fixed) or fixed.startswith(below) for _, fixed in self.globs)


def normalize_spec(spec: str) -> str:
    """A root-relative '/'-separated spec: no `./`, no doubled or trailing slashes; "" is all."""
    parts = [p for p in spec.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UsageError(f"path {spec!r} leaves the root")
    return "/".join(parts)


# --- comparing trees -----------------------------------------------------------------------


class _Walk:
    def __init__(self, store: Store, reader: ObjectReader, paths: PathFilter) -> None:
        self.store = store
        self.reader = reader
        self.paths = paths
        self.changes: list[Change] = []
        self.missing: list[tuple[str, str]] = []   # (hex id, where)
        self.corrupt: list[tuple[str, str]] = []

    def entries(self, sha: bytes, prefix: str) -> list[tuple[int, bytes, bytes]] | None:
        where = prefix or "/"
        try:
            type_num, body = self.reader.read(sha)
        except IncompleteSnapshotError as err:
            (self.missing if err.missing else self.corrupt).append((sha.hex(), where))
            return None
        if type_num != TREE:
            self.corrupt.append((sha.hex(), where + " (not a tree)"))
            return None
        return decode_tree(body)

    def compare(self, old: bytes | None, new: bytes | None, prefix: str) -> None:
        old_entries = self.entries(old, prefix) if old is not None else []
        new_entries = self.entries(new, prefix) if new is not None else []
        if old_entries is not None and new_entries is not None:
            self.merge(old_entries, new_entries, prefix)

    def merge(self, old_entries: list[tuple[int, bytes, bytes]],
              new_entries: list[tuple[int, bytes, bytes]], prefix: str) -> None:
        """Walk two folders' entries together in git's order (a folder sorts as `name/`)."""
        i = j = 0
        n_old, n_new = len(old_entries), len(new_entries)
        while i < n_old or j < n_new:
            if i < n_old:
                o_mode, o_name, o_sha = old_entries[i]
                o_key = o_name + b"/" if o_mode == MODE_TREE else o_name
            if j < n_new:
                n_mode, n_name, n_sha = new_entries[j]
                n_key = n_name + b"/" if n_mode == MODE_TREE else n_name
            if j >= n_new or (i < n_old and o_key < n_key):
                self.one_side(o_mode, o_name, o_sha, prefix, deleted=True)
                i += 1
            elif i >= n_old or n_key < o_key:
                self.one_side(n_mode, n_name, n_sha, prefix, deleted=False)
                j += 1
            else:
                i += 1
                j += 1
                if o_sha == n_sha and o_mode == n_mode:
                    continue
                path = prefix + os.fsdecode(o_name)
                if o_mode == MODE_TREE:
                    if self.paths.wants_folder(path):
                        self.compare(o_sha, n_sha, path + "/")
                elif self.paths.wants_file(path):
                    status = "T" if (o_mode & _TYPE_MASK) != (n_mode & _TYPE_MASK) else "M"
                    self.add(Change(status, path, None, o_mode, n_mode, o_sha.hex(), n_sha.hex()))

    def one_side(self, mode: int, name: bytes, sha: bytes, prefix: str, deleted: bool) -> None:
        path = prefix + os.fsdecode(name)
        if mode == MODE_TREE:
            if self.paths.wants_folder(path):
                if deleted:
                    self.compare(sha, None, path + "/")
                else:
                    self.compare(None, sha, path + "/")
        elif self.paths.wants_file(path):
            if deleted:
                self.add(Change("D", path, None, mode, None, sha.hex(), None))
            else:
                self.add(Change("A", path, None, None, mode, None, sha.hex()))

    def add(self, change: Change) -> None:
        for hex_id in (change.old_id, change.new_id):
            if hex_id is not None and not self.store.readable(bytes.fromhex(hex_id)):
                self.missing.append((hex_id, change.path))
        change.source = self.store
        self.changes.append(change)

    def check_complete(self) -> None:
        if not self.missing and not self.corrupt:
            return
        problems = [f"{hex_id} ({where}) missing" for hex_id, where in self.missing]
        problems += [f"{hex_id} ({where}) damaged" for hex_id, where in self.corrupt]
        shown = "; ".join(problems[:_MAX_NAMED])
        more = f"; and {len(problems) - _MAX_NAMED} more" if len(problems) > _MAX_NAMED else ""
        raise IncompleteSnapshotError(
            f"the store lacks objects these snapshots need: {shown}{more}",
            missing=[h for h, _ in self.missing], corrupt=[h for h, _ in self.corrupt])


def diff_trees(store: Store, from_sha20: bytes, to_sha20: bytes, paths: list[str] | None = None,
               find_renames: bool = False) -> list[Change]:
    """Changes from tree `from_sha20` to tree `to_sha20` (raw ids), in git's order. `paths`
    limits them to those path specs. Raises IncompleteSnapshotError naming every missing or
    damaged object the comparison needs."""
    from undostore.git.reader import (
        ObjectReader,  # reads packs directly: no dulwich import on this path
    )

    filter_ = PathFilter(paths)
    with ObjectReader(store) as reader:
        walk = _Walk(store, reader, filter_)
        old_root = _root_entries(reader, from_sha20, "FROM")
        new_root = old_root if to_sha20 == from_sha20 else _root_entries(reader, to_sha20, "TO")
        if from_sha20 != to_sha20:
            walk.merge(old_root, new_root, "")
        walk.check_complete()
        changes = walk.changes
        if find_renames:
            from undostore.diff.renames import detect_renames

            changes = detect_renames(store, reader, changes)
    return changes


def _root_entries(reader: ObjectReader, sha: bytes, which: str) -> list[tuple[int, bytes, bytes]]:
    """A snapshot's root folder; an id of something other than a tree is a usage error."""
    try:
        type_num, body = reader.read(sha)
    except IncompleteSnapshotError as err:
        raise IncompleteSnapshotError(f"{which}: snapshot {sha.hex()}: {err.message}",
                                      missing=err.missing, corrupt=err.corrupt) from None
    if type_num != TREE:
        raise UnknownSnapshotError(f"{which}: {sha.hex()} is not a snapshot (not a tree)")
    return decode_tree(body)


def own_changes(store: Store, from_sha20: bytes, to_sha20: bytes,
                changes: list[Change]) -> list[Change]:
    """`changes` (from `from_sha20` to `to_sha20`) without the paths that only came into view
    because an ignore file changed (snapshot/treeignore.py): a turn that deleted
    `.gitignore` did not create the `.env` it had kept out, and undo leaves it alone."""
    from undostore.git.reader import ObjectReader
    from undostore.snapshot.treeignore import came_into_view, touches_ignore_files

    if not touches_ignore_files(c.path for c in changes):
        return changes
    with ObjectReader(store) as reader:
        seen = came_into_view(reader.read_tree_body, reader.read_blob, from_sha20,
                              [c.path for c in changes if c.status == "A"])
    return [c for c in changes if c.path not in seen]

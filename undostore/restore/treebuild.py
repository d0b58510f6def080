"""New trees made from an old tree and the entries that change at some paths: a folder's new
body is its old one with the changed entries spliced in (snapshot/treepatch.py), so a change of
one file in a 40,000-file folder does not decode and re-encode the other 39,999. Used by a
revert's merge (revert.py), the history of tool calls (history/attribution.py) and a restore
or revert of some paths (picked.py)."""

from __future__ import annotations

import os
from typing import Any

from undostore.git.objects import BLOB, MODE_TREE, TREE, decode_tree, encode_tree, hash_object
from undostore.git.packwriter import PackWriter
from undostore.git.reader import ObjectReader
from undostore.git.treedelta import sort_keys
from undostore.restore.plan import Entry, TreeBodies
from undostore.snapshot.treepatch import TreeEntry, entries_named, patch_tree
from undostore.store.store import Store

_KEEP = object()  # "no change at this path" in the change map


class TreeBuilder:
    """Rebuilds only the folders of `ours` that hold a change; new trees go to the writer. A
    folder's new body is its old one with the changed entries spliced in (treepatch.py), so a
    turn that touched one file of a 40,000-file folder does not decode and re-encode the
    other 39,999; a folder with many changes is decoded and encoded whole. `ours` is always a
    snapshot undostore just took of the files now, so its bodies are in git's order (what the
    splice relies on)."""

    # Up to this many changed names a folder is spliced; a new name costs a pass over the old
    # names (patch_tree), so up to this many new ones.
    SPLICE_NAMES = 64
    SPLICE_INSERTS = 16

    def __init__(self, reader: ObjectReader, store: Store, writer: PackWriter,
                 conflicts: list[str], bodies: dict[bytes, bytes]) -> None:
        self.store, self.writer, self.conflicts = store, writer, conflicts
        self.trees = TreeBodies(reader.read_tree_body, bodies)

    def build(self, tree: bytes | None, folder: str, changes: dict[str, Entry | None]
              ) -> bytes | None:
        """The id of `tree` (None: none) with `changes` (paths relative to `folder`) applied;
        None when the result is empty."""
        body = self.trees.body(tree) if tree is not None else b""
        direct: dict[bytes, Any] = {}
        nested: dict[bytes, dict[str, Entry | None]] = {}
        for path, entry in changes.items():
            head, sep, rest = path.partition("/")
            if sep:
                nested.setdefault(os.fsencode(head), {})[rest] = entry
            else:
                direct[os.fsencode(head)] = entry
        names = direct.keys() | nested.keys()
        old = self._old_entries(body, names)
        prefix = folder + "/" if folder else ""
        edits: list[tuple[tuple[bytes, bool] | None, TreeEntry | None]] = []
        for name in names:
            before = old.get(name)
            was_tree = before is not None and before[0] == MODE_TREE
            file_entry = direct.get(name, _KEEP)
            if file_entry is _KEEP:
                file_entry = before if before is not None and not was_tree else None
            old_tree = before[1] if before is not None and was_tree else None
            sub = (self.build(old_tree, prefix + os.fsdecode(name), nested[name])
                   if name in nested else old_tree)
            if file_entry is not None and sub is not None:
                # A file and a folder want the same name: keep what the files now have.
                self.conflicts.append(prefix + os.fsdecode(name))
                if was_tree:
                    file_entry = None
                else:
                    sub = None
            after = file_entry if file_entry is not None else (
                (MODE_TREE, sub) if sub is not None else None)
            if after == before:
                continue
            gone = (name, was_tree) if before is not None else None
            made = (after[0], name, after[1]) if after is not None else None
            if gone is not None and made is not None and was_tree != (made[0] == MODE_TREE):
                # A file that became a folder (or back) sorts elsewhere: out, then in.
                edits += [(gone, None), (None, made)]
            else:
                edits.append((gone, made))
        if not edits:
            return tree
        new_body = self._patched(body, edits)
        if not new_body:
            return None
        sha = hash_object(TREE, new_body)
        if not self.store.has(sha):
            self.writer.add(TREE, sha, new_body)
        self.trees.bodies[sha] = new_body   # the restore of the result reads it
        return sha

    def _old_entries(self, body: bytes, names: set[bytes]) -> dict[bytes, tuple[int, bytes]]:
        """The entries of `body` called one of `names`: found in place for a few names, else
        (or when a name is found twice) from the whole decoded body."""
        if len(names) <= self.SPLICE_NAMES:
            found: dict[bytes, tuple[int, bytes]] = {}
            for name in names:
                hits = entries_named(body, name)
                if len(hits) > 1:
                    break
                if hits:
                    found[name] = (hits[0][0], hits[0][2])
            else:
                return found
        return {name: (mode, sha) for mode, name, sha in decode_tree(body) if name in names}

    def _patched(self, body: bytes,
                 edits: list[tuple[tuple[bytes, bool] | None, TreeEntry | None]]) -> bytes:
        """`body` with `edits` applied: spliced where that is exact, else encoded whole."""
        if len(edits) <= self.SPLICE_NAMES:
            spliced = patch_tree(body, edits, lambda: sort_keys(body), self.SPLICE_INSERTS)
            if spliced is not None:
                return spliced
        entries = {name: (mode, sha) for mode, name, sha in decode_tree(body)}
        for gone, made in edits:
            if gone is not None:
                entries.pop(gone[0], None)
            if made is not None:
                entries[made[1]] = (made[0], made[2])
        return encode_tree((mode, name, sha) for name, (mode, sha) in entries.items())


def built_root(store: Store, writer: PackWriter, builder: TreeBuilder, tree: str,
               changes: dict[str, Entry | None]) -> str:
    """The id (hex) of root tree `tree` with `changes` made by `builder` into `writer`: the
    empty tree where nothing is left (written if the store lacks it)."""
    root = builder.build(bytes.fromhex(tree), "", changes) if changes else bytes.fromhex(tree)
    if root is None:
        root = hash_object(TREE, b"")
        if not store.has(root):
            writer.add(TREE, root, b"")
    return root.hex()


def with_entries_of(store: Store, base: str, source: str, paths: list[str]) -> str:
    """The tree `base` with `source`'s entries at `paths` (nothing where `source` has none), so
    that the change from `base` to it is `source`'s at those paths alone; written to the store
    (the store lock held), `base` itself where the two agree there. What a step of some paths
    builds: a turn's change less some paths (history/attribution.py `without`), a restore or a
    revert of some paths."""
    trees = TreeBodies(store.index.read_tree_body, {})
    wanted = sorted(paths)
    had = entries_at(trees, bytes.fromhex(source), wanted)
    return with_entries(store, base, had, trees=trees)


def with_entries(store: Store, base: str, entries: dict[str, Entry | None], *,
                 blobs: dict[bytes, bytes] | None = None, trees: TreeBodies | None = None
                 ) -> str:
    """The tree `base` with `entries` at their paths (None: no file there), written to the
    store (the store lock held) with the new `blobs` (id -> content) they name; `base` itself
    where it has them all already. What hunks picked of a change make (history/steps.py)."""
    reader = store.index
    trees = trees or TreeBodies(reader.read_tree_body, {})
    paths = sorted(entries)
    has = entries_at(trees, bytes.fromhex(base), paths)
    changes = {path: entries[path] for path in paths if entries[path] != has[path]}
    if not changes:
        return base
    writer = PackWriter(store.pack_dir)
    try:
        for sha, data in (blobs or {}).items():
            if not store.has(sha):
                writer.add(BLOB, sha, data)
        made = built_root(store, writer, TreeBuilder(reader, store, writer, [], trees.bodies),
                          base, changes)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    store.refresh()
    return made


def entries_at(trees: TreeBodies, root: bytes, paths: list[str]) -> dict[str, Entry | None]:
    """The entry (mode, id) of each of `paths` in the tree `root` (None: nothing there, or a
    folder), reading only the folders on their way."""
    out: dict[str, Entry | None] = {}
    for path in paths:
        sha: bytes | None = root
        parts = path.split("/")
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            found = [(mode, raw) for mode, raw in _named(trees.body(sha), os.fsencode(part))
                     if (mode != MODE_TREE) == last] if sha is not None else []
            sha = None if last or not found else found[0][1]
            if last:
                out[path] = found[0] if found else None
    return out


def _named(body: bytes, name: bytes) -> list[Entry]:
    hits = entries_named(body, name)
    if len(hits) > 1:   # a sibling that only looks like this name: read the body whole
        return [(mode, raw) for mode, entry_name, raw in decode_tree(body) if entry_name == name]
    return [(mode, raw) for mode, _, raw in hits]

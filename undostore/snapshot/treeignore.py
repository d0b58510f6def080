"""The ignore rules a snapshot's own `.gitignore` files give, read from the store.

A turn that deletes `.gitignore` (or one of its lines) makes files that were there all along,
ignored, show up in the snapshot after it: `.env`, `node_modules/`. They are not the turn's
creation, and taking the turn back must not delete them; a turn that adds a line hides files
the same way. `came_into_view` tells the first kind apart: a path a later snapshot has and an
earlier one lacks *because the earlier one's ignore files leave it out* differs only in being
seen. Undo, redo, `show` and restore all ask it (decided here, once).

    rules = TreeIgnores(reader.read_tree_body, reader.read_blob, tree_sha)
    rules.ignores("node_modules/x/index.js")   # True when a folder on the way, or it, is ignored
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from undostore.git.objects import MODE_EXEC, MODE_FILE, MODE_TREE, decode_tree
from undostore.snapshot.ignore import IgnoreFile, IgnoreRules

__all__ = ["GITIGNORE", "TreeIgnores", "came_into_view", "touches_ignore_files"]

GITIGNORE = ".gitignore"
_READ_AS_IGNORE_FILE = (MODE_FILE, MODE_EXEC, 0o100664)   # git reads regular files only

ReadBody = Callable[[bytes], bytes]


class TreeIgnores:
    """Which paths the `.gitignore` files inside snapshot `tree` leave out, over `base` (the rules
    from outside the tree: `.git/info/exclude`, the global excludes, `.undostoreignore`)."""

    def __init__(self, read_tree_body: ReadBody, read_blob: ReadBody, tree: bytes,
                 base: IgnoreRules | None = None) -> None:
        self._read_tree_body = read_tree_body
        self._read_blob = read_blob
        # folder -> (its tree id, None where the snapshot has no such folder; its rules)
        root_rules = base if base is not None else IgnoreRules(())
        self._folders: dict[str, tuple[bytes | None, IgnoreRules]] = {
            "": (tree, root_rules.with_folder_file(self._own_file(tree, "")))}

    def ignores(self, path: str) -> bool:
        """Whether `path` (a file, '/'-separated, relative to the root) or a folder above it is
        ignored by these rules, as git's walk would decide it."""
        parts = path.split("/")
        folder = ""
        for depth, name in enumerate(parts):
            rel = f"{folder}/{name}" if folder else name
            is_dir = depth < len(parts) - 1
            if self._rules(folder).is_ignored(rel, is_dir):
                return True
            folder = rel
        return False

    def _rules(self, folder: str) -> IgnoreRules:
        known = self._folders.get(folder)
        if known is not None:
            return known[1]
        parent, _, name = folder.rpartition("/")
        parent_tree = self._tree_of(parent)
        tree = None
        if parent_tree is not None:
            wanted = os.fsencode(name)
            tree = next((sha for mode, entry, sha in decode_tree(self._read_tree_body(parent_tree))
                         if entry == wanted and mode == MODE_TREE), None)
        rules = self._rules(parent).with_folder_file(self._own_file(tree, folder))
        self._folders[folder] = (tree, rules)
        return rules

    def _tree_of(self, folder: str) -> bytes | None:
        self._rules(folder)
        return self._folders[folder][0]

    def _own_file(self, tree: bytes | None, folder: str) -> IgnoreFile | None:
        if tree is None:
            return None
        wanted = GITIGNORE.encode()
        for mode, name, sha in decode_tree(self._read_tree_body(tree)):
            if name == wanted:
                if mode not in _READ_AS_IGNORE_FILE:
                    return None   # git does not follow a symlinked in-tree .gitignore
                return IgnoreFile.from_bytes(self._read_blob(sha), folder) or None
        return None


def touches_ignore_files(paths: Iterable[str]) -> bool:
    """Whether any of `paths` is a `.gitignore`: only then can two snapshots' rules differ."""
    return any(p == GITIGNORE or p.endswith("/" + GITIGNORE) for p in paths)


def came_into_view(read_tree_body: ReadBody, read_blob: ReadBody, old: bytes,
                   added: Iterable[str], base: IgnoreRules | None = None) -> set[str]:
    """Of the paths `added` (in a later snapshot, not in `old`), those `old`'s own ignore files
    leave out: they may have been there, ignored, all along, so the change that shows them
    (an ignore file edited) did not make them, and taking it back must not delete them. The
    other way, a path a change hid, is left to the restore: it brings the file back only where
    nothing is on disk (restore.py). The caller passes the paths of a difference that touches
    an ignore file (`touches_ignore_files`); otherwise both sides' rules are the same."""
    added = list(added)
    if not added:
        return set()
    old_rules = TreeIgnores(read_tree_body, read_blob, old, base)
    return {p for p in added if old_rules.ignores(p)}

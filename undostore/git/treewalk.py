"""The store's one tree walker: every entry below a tree, depth-first in git's order.

Iterative (folders may nest deeper than Python's recursion limit). The caller supplies how a tree
is read (hash-checked, and what to do when it is missing or damaged) and which sub-trees to
enter, so gc (each tree once), verify (only trees below a problem) and `Store.iter_tree_files`
(everything) share it. diff and restore keep their own walks: they prune by path and by equal
ids of two trees at once, which a one-tree walk cannot express.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from undostore.git.objects import MODE_TREE, Entry

ReadTree = Callable[[bytes], list[Entry]]


def _always(sha: bytes) -> bool:
    return True


def walk(read_tree: ReadTree, root: bytes, enter: Callable[[bytes], bool] = _always,
         prefix: str = "") -> Iterator[tuple[str, int, bytes]]:
    """(path, mode, id) of every entry below `root`; a sub-tree is yielded, then entered if
    `enter(id)` says so."""
    stack = [(prefix, iter(read_tree(root)))]
    while stack:
        path, entries = stack[-1]
        for mode, name, sha in entries:
            full = path + os.fsdecode(name)
            yield full, mode, sha
            if mode == MODE_TREE and enter(sha):
                stack.append((full + "/", iter(read_tree(sha))))
                break
        else:
            stack.pop()

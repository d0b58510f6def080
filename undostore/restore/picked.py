"""Some paths of a snapshot or of a change: the trees a restore or a revert of some paths
(`restore ID -- PATH`, `revert ID -- PATH`) goes to, so the rest of the files stays as it is.

A restore of some paths goes to the files now with the snapshot's entries at the paths that
differ; a revert of some paths takes back the change with its other paths left as they were.
Either way the one restore of restore.py does the writing, with everything it guarantees.
Pathspecs are git's plain ones (diff/trees.py `PathFilter`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from undostore.errors import UsageError
from undostore.restore.plan import changed_files
from undostore.restore.treebuild import with_entries_of
from undostore.store.recent import remember

if TYPE_CHECKING:
    from undostore.diff.trees import PathFilter
    from undostore.store.store import Store


def restore_target(store: Store, now: str, target: bytes, paths: PathFilter) -> bytes:
    """The tree the files now (`now`) become when only `paths` are restored to `target`: the
    files now where they agree, else `target`'s entries (none where it has none). UsageError
    when neither tree holds a file there (a path misspelt, or one never recorded)."""
    differ = [path for path in _differing(store, bytes.fromhex(now), target)
              if paths.wants_file(path)]
    if not differ:
        _must_name_a_file(store, (bytes.fromhex(now), target), paths,
                          f"{target.hex()[:12]} or the files now")
        return bytes.fromhex(now)
    made = bytes.fromhex(with_entries_of(store, now, target.hex(), differ))
    remember(store.path, made)   # handed out as the restore's target: gc's grace covers it
    return made


def revert_end(store: Store, start: bytes, end: bytes, paths: PathFilter) -> bytes:
    """The end of the change `start` -> `end` cut to `paths`: `end` with `start`'s entries at
    every other path it changed, so that a revert of `start` -> it takes back only those
    paths. UsageError when the change touched none of them."""
    changed = _differing(store, start, end)
    left = [path for path in changed if not paths.wants_file(path)]
    if len(left) == len(changed):
        raise UsageError(f"the change {start.hex()[:12]}..{end.hex()[:12]} changed none of "
                         f"{', '.join(paths.specs)} (`undostore diff {start.hex()[:12]} "
                         f"{end.hex()[:12]}` lists what it changed)")
    return bytes.fromhex(with_entries_of(store, end.hex(), start.hex(), left))


def _differing(store: Store, one: bytes, other: bytes) -> list[str]:
    """The files that differ between two trees (reading only the folders that differ)."""
    return list(changed_files(store.index.read_tree_body, one, other))


def _must_name_a_file(store: Store, trees: tuple[bytes, ...], paths: PathFilter,
                      where: str) -> None:
    """UsageError unless some file of `trees` is one `paths` selects."""
    for tree in trees:
        if any(paths.wants_file(path) for path, _mode, _sha in store.iter_tree_files(tree)):
            return
    raise UsageError(f"no file in {where} is at {', '.join(paths.specs)}")

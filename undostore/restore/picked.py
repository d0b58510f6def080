"""Some paths or hunks of a snapshot or of a change: the trees a restore or a revert of some
paths (`restore ID -- PATH`, `revert ID -- PATH`) or of the hunks a person picked (`-p`) goes
to, so the rest of the files stays as it is.

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
    from undostore.diff.pickfile import FileChange, FilePick, Side
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


def file_changes(store: Store, start: bytes, end: bytes, paths: PathFilter | None
                 ) -> list[FileChange]:
    """Each file's change from tree `start` to tree `end` (only those `paths` selects), with
    its hunks: what `restore -p` (the files now to the snapshot) and `revert -p` (the change)
    ask about."""
    from undostore.diff.pickfile import FileChange

    changed = [path for path in _differing(store, start, end)
               if paths is None or paths.wants_file(path)]
    one, two = _sides(store, start, changed), _sides(store, end, changed)
    return [FileChange.read(store, path, one[path], two[path]) for path in changed]


def picked_tree(store: Store, base: bytes, change: tuple[bytes, bytes], picks: list[FilePick]
                ) -> bytes:
    """The tree `base` with each pick's file at its path (the blobs written): the target of a
    restore of the hunks picked (`base` the files now), or where the change a revert of them
    takes back starts (`base` the change's end). UsageError when a pick's start and end are
    not the files of the trees `change` there (they moved since the person looked), or when
    nothing was picked."""
    from undostore.restore.treebuild import with_entries

    if not picks:
        raise UsageError("no hunk was picked")
    paths = [pick.path for pick in picks]
    one, two = _sides(store, change[0], paths), _sides(store, change[1], paths)
    entries: dict[str, tuple[int, bytes] | None] = {}
    blobs: dict[bytes, bytes] = {}
    for pick in picks:
        if (one[pick.path], two[pick.path]) != (pick.start, pick.end):
            raise UsageError(f"{pick.path} is not as it was when its hunks were picked: pick "
                             "again")
        entries[pick.path] = pick.entry(blobs)
    made = bytes.fromhex(with_entries(store, base.hex(), entries, blobs=blobs))
    remember(store.path, made)   # handed out as the restore's target: gc's grace covers it
    return made


def _sides(store: Store, tree: bytes, paths: list[str]) -> dict[str, Side | None]:
    """Each path's file in `tree` as a change's side (None: no file there)."""
    from undostore.diff.pickfile import Side
    from undostore.restore.plan import TreeBodies
    from undostore.restore.treebuild import entries_at

    found = entries_at(TreeBodies(store.index.read_tree_body, {}), tree, paths)
    return {path: Side.of(entry) for path, entry in found.items()}


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

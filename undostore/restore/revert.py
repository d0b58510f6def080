"""Revert: take back the change FROM -> TO on the files now, keeping every later change.

    tree = build_revert_tree(store, from_sha, to_sha, ours_sha)   # pure store work
    tree.target, tree.conflicts                                    # the tree to restore to

As `git revert` does for a commit, path by path: base = TO's entry, ours = the files now,
theirs = FROM's entry. Only paths where FROM and TO differ are looked at; every other path keeps
what the files now hold. Per path:

- ours unchanged since TO: FROM's entry (created, deleted, re-moded, or its content);
- ours already equal to FROM: kept;
- both changed, regular files on all three sides: the mode 3-way, the content merged line by
  line (diff/merge.py), git-style markers on overlapping edits; a binary file
  (NUL in the first 8000 bytes) is one whole value;
- symlinks and type changes: one whole value;
- modify/delete and add/add: conflicts (the modified side, or for text add/add a merge with
  markers, is what `merge=True` writes, as git leaves them).

`revert` then restores to that tree through `restore` with `expected` = the
snapshot the merge was made from, so revert has restore's guarantees: safety snapshot,
completeness check, no file overwritten that changed meanwhile, journal, crash safety.
"""

from __future__ import annotations

import time
from collections.abc import KeysView
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.diff.merge import BINARY_PROBE, has_markers, is_binary, merge_text, merge_value
from undostore.errors import ConflictError
from undostore.git.objects import (
    BLOB,
    MODE_LINK,
    TREE,
    hash_object,
)
from undostore.git.packwriter import PackWriter
from undostore.git.reader import ObjectReader
from undostore.progress import OnProgress
from undostore.restore.plan import Differences, Entry, flatten_difference
from undostore.restore.restore import (
    Confirm,
    RestoreResult,
    Worktree,
    begin,
    restore,
)
from undostore.restore.treebuild import TreeBuilder
from undostore.snapshot.treeignore import came_into_view, touches_ignore_files
from undostore.store.recent import remember
from undostore.store.store import Store

if TYPE_CHECKING:
    from undostore.diff.pickfile import FilePick
    from undostore.diff.trees import PathFilter

__all__ = ["RevertConflict", "RevertResult", "RevertTree", "build_revert_tree", "conflict_notes",
           "revert"]

# Why a conflict has no markers to resolve: what `--merge` left at the path instead.
NO_MARKERS_KEPT = "kept as the files now have it: changed since, and this would delete it"
NO_MARKERS_WRITTEN = "written back: deleted since, and this changes it"
NO_MARKERS_WHOLE = "kept as the files now have it: a binary file, a symlink or a mode, " \
                   "changed on both sides"


def conflict_notes(conflicts: list[str], unmarked: dict[str, str]) -> list[str]:
    """One line per conflict `--merge` left: the markers to resolve, or what stands there
    instead (a file deleted on one side, a binary file: git writes no markers either)."""
    return [f"{path} ({unmarked.get(path, 'conflict markers written: resolve them')})"
            for path in conflicts]


@dataclass
class RevertTree:
    """The merged tree: its id, the conflicting paths, and how it differs from ours."""

    target: str
    conflicts: list[str] = field(default_factory=list)
    unmarked: dict[str, str] = field(default_factory=dict)   # conflicts with no markers: why
    still_marked: list[str] = field(default_factory=list)   # hold an earlier merge's markers
    created: int = 0
    modified: int = 0
    deleted: int = 0


class UnresolvedMarkers(ConflictError):
    """A `--merge` would mark files that still hold the markers an earlier one left: markers
    inside markers. Nothing changed; the user resolves the old ones first."""

    def __init__(self, paths: list[str]) -> None:
        self.conflicts = sorted(paths)
        shown = ", ".join(self.conflicts[:5]) + (", ..." if len(paths) > 5 else "")
        super().__init__(
            f"{shown} still hold{'s' if len(paths) == 1 else ''} conflict markers an earlier "
            "--merge left, and would be marked again inside them; nothing was changed: resolve "
            "them (or put the file back with `undostore restore`) and run it again")


class RevertConflict(ConflictError):
    """The change to take back overlaps later changes; `conflicts` names every such path."""

    def __init__(self, from_hex: str, to_hex: str, conflicts: list[str]) -> None:
        self.conflicts = list(conflicts)
        shown = "\n  ".join(conflicts)
        super().__init__(
            f"revert of {from_hex[:12]}..{to_hex[:12]} conflicts with later changes in "
            f"{len(conflicts)} path(s); nothing was changed (--merge writes them with conflict "
            f"markers):\n  {shown}")


@dataclass
class RevertResult(RestoreResult):
    """A restore result plus the paths that conflicted (with markers where they are text)."""

    conflicts: list[str] = field(default_factory=list)
    unmarked: dict[str, str] = field(default_factory=dict)   # conflicts with no markers: why
    reverted: tuple[str, str] = ("", "")   # (FROM, TO) hex ids

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        doc["conflicts"] = self.conflicts
        doc["unmarked"] = self.unmarked
        doc["from"], doc["to"] = self.reverted
        return doc


def build_revert_tree(store: Store, from_sha: bytes, to_sha: bytes, ours_sha: bytes, *,
                      ours_label: str = "files now", theirs_label: str = "reverted",
                      bodies: dict[bytes, bytes] | None = None,
                      differences: Differences | None = None) -> RevertTree:
    """Merge the change TO -> FROM into the tree `ours_sha` and write the result (new blobs
    and trees) into the store; see the module docstring for the rules per path.
    `differences`: where nothing changed since TO, the pair TO -> FROM is put there, checked,
    for the restore that follows (its own plan when the merge is FROM itself)."""
    with ObjectReader(store) as reader:
        # Tree bodies by id, read or made here; the caller's, to hand on to the restore.
        bodies = bodies if bodies is not None else {}
        # Read, not checked (the restore of the merged tree checks what it writes), unless
        # nothing changed since TO: the merge is then likely FROM, whose restore plans exactly
        # this pair, checked.
        base_side, theirs_side = flatten_difference(
            reader.read_tree_body, to_sha, from_sha, bodies=bodies, check=ours_sha == to_sha,
            memo=differences)
        paths = _own_paths(reader, from_sha, base_side.files.keys(), theirs_side.files.keys())
        if ours_sha == to_sha and len(paths) == len(base_side.files.keys()
                                                     | theirs_side.files.keys()):
            # Nothing changed since TO, and the whole change is the change's own: the merge
            # takes FROM's entry at every path, so its tree is FROM itself (a checkout; no
            # tree to build, no pack to write).
            return _checkout(from_sha, base_side.files.keys(), theirs_side.files.keys())
        since_to, ours_side = flatten_difference(reader.read_tree_body, to_sha, ours_sha,
                                                 bodies=bodies, check=False)
        merger = _Merger(reader, ours_label, theirs_label)
        changes: dict[str, Entry | None] = {}
        tree = RevertTree(target="", conflicts=merger.conflicts, unmarked=merger.unmarked,
                          still_marked=merger.still_marked)
        for path in paths:
            base = base_side.files.get(path)
            if path in ours_side.files:
                ours = ours_side.files[path]
            elif path in since_to.files:
                ours = None        # deleted (or turned into a folder) since TO
            else:
                ours = base        # unchanged since TO
            result = merger.merge(path, base, ours, theirs_side.files.get(path))
            if result == ours:
                continue
            changes[path] = result
            if result is None:
                tree.deleted += 1
            elif ours is None:
                tree.created += 1
            else:
                tree.modified += 1
        writer = PackWriter(store.pack_dir)
        try:
            for sha, data in merger.new_blobs.items():
                if not store.has(sha):
                    writer.add(BLOB, sha, data)
            builder = TreeBuilder(reader, store, writer, tree.conflicts, bodies)
            root = builder.build(ours_sha, "", changes)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
    store.refresh()
    root = root if root is not None else _empty_tree(store)
    remember(store.path, root)  # gc's grace period covers the id until the restore lists it
    tree.target = root.hex()
    tree.conflicts = sorted(set(tree.conflicts))
    return tree


def _checkout(from_sha: bytes, in_to: KeysView[str], in_from: KeysView[str]) -> RevertTree:
    """The revert of TO -> FROM onto TO itself: FROM, as restored over TO."""
    return RevertTree(target=from_sha.hex(), created=len(in_from - in_to),
                      deleted=len(in_to - in_from), modified=len(in_to & in_from))


def _own_paths(reader: ObjectReader, from_sha: bytes, in_to: KeysView[str],
               in_from: KeysView[str]) -> list[str]:
    """The paths where FROM and TO differ, less those TO shows only because an ignore file
    changed (snapshot/treeignore.py): not the change's to take back."""
    paths = in_to | in_from
    if touches_ignore_files(paths):
        paths -= came_into_view(reader.read_tree_body, reader.read_blob, from_sha,
                                in_to - in_from)
    return sorted(paths)


def _empty_tree(store: Store) -> bytes:
    sha = hash_object(TREE, b"")
    if not store.has(sha):
        writer = PackWriter(store.pack_dir)
        try:
            writer.add(TREE, sha, b"")
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        store.refresh()
    return sha


class _Merger:
    """The per-path 3-way rules; collects conflicts and the merged blobs to write."""

    def __init__(self, reader: ObjectReader, ours_label: str, theirs_label: str) -> None:
        self.reader = reader
        self.labels = (ours_label, theirs_label)
        self.conflicts: list[str] = []
        self.unmarked: dict[str, str] = {}   # conflicts left with no markers, and why
        # conflicts in files that hold markers an earlier --merge left: never marked again
        self.still_marked: list[str] = []
        self.new_blobs: dict[bytes, bytes] = {}

    def merge(self, path: str, base: Entry | None, ours: Entry | None,
              theirs: Entry | None) -> Entry | None:
        """The merged entry of one path (None: absent), as git's tree merge decides it."""
        if ours in (base, theirs):
            return theirs
        if ours is None or theirs is None:
            # modify/delete: git leaves the modified side, with no markers to resolve
            self._unmarked(path, NO_MARKERS_KEPT if theirs is None else NO_MARKERS_WRITTEN)
            return ours if ours is not None else theirs
        if _is_link(ours[0]) or _is_link(theirs[0]):
            result, conflict = merge_value(base, ours, theirs)   # a link, or two types
            if conflict:
                self._unmarked(path, NO_MARKERS_WHOLE)
            return result
        # Two regular files (an add/add merges over an empty base, as git's does).
        base_mode, base_sha = base if base is not None else (None, None)
        mode, mode_conflict = merge_value(base_mode, ours[0], theirs[0])
        sha, content_conflict = merge_value(base_sha, ours[1], theirs[1])
        if content_conflict:
            sha, content_conflict = self._merge_content(path, base_sha, ours[1], theirs[1])
            # As git's merge-recursive does (merge_mode_and_contents, 2.39): once the contents
            # were merged line by line, that merge alone says whether the path is clean, and
            # the mode stays ours. Only an add/add can differ in mode both ways; git then
            # leaves it merged with our mode (both sides' contents differing), or unmerged when
            # the contents are the same.
            mode_conflict = False
        if mode_conflict or (content_conflict and sha == ours[1]):   # the mode, or binary
            self._unmarked(path, NO_MARKERS_WHOLE)
        elif content_conflict:
            self.conflicts.append(path)   # the line merge wrote markers
        assert mode is not None and sha is not None
        return (mode, sha)

    def _unmarked(self, path: str, why: str) -> None:
        self.conflicts.append(path)
        self.unmarked[path] = why

    def _merge_content(self, path: str, base: bytes | None, ours: bytes,
                       theirs: bytes) -> tuple[bytes, bool]:
        """(blob id, conflict) of the line merge; a binary side makes it a conflict on ours
        (told from each blob's first 8000 bytes, so large binaries are never read whole)."""
        shas = [sha for sha in (base, ours, theirs) if sha is not None]
        if any(is_binary(self.reader.blob_head(sha, BINARY_PROBE)) for sha in shas):
            return ours, True
        read = self.reader.read_blob
        base_data = read(base) if base is not None else b""
        ours_data = read(ours)
        merged = merge_text(base_data, ours_data, read(theirs), *self.labels, alnum=False)
        if not merged.clean and has_markers(ours_data):
            self.still_marked.append(path)
        sha = hash_object(BLOB, merged.data)
        self.new_blobs[sha] = merged.data
        return sha, not merged.clean


def _is_link(mode: int) -> bool:
    return mode == MODE_LINK


# --- the operation ------------------------------------------------------------------------------


def revert(wt: Worktree, from_id: str, to_id: str | None = None, *, merge: bool = False,
           dry_run: bool = False, confirm: Confirm | None = None,
           on_progress: OnProgress | None = None, context: dict | None = None,
           paths: PathFilter | None = None, picks: list[FilePick] | None = None
           ) -> RevertResult:
    """Take back FROM -> TO (TO None: the files now) on the files under `wt.root`; with
    `paths`, only the change's paths those select (picked.py); with `picks`, only the hunks
    picked of the change (`revert -p`).

    Conflicts without `merge`: ConflictError (exit 3) naming every conflicting path, nothing
    changed. With `merge`: conflicting text files get markers, the rest keep the side git
    would leave, and `conflicts` lists them all. `context` goes to the restore (restore's)."""
    started = time.perf_counter()
    with wt.store.lock:
        (from_sha, to_sha), ours = begin(wt, from_id, to_id)
        assert from_sha is not None
        ours_sha = bytes.fromhex(ours.id)
        to_sha = to_sha if to_sha is not None else ours_sha
        end = to_sha
        if paths is not None:
            from undostore.restore.picked import revert_end

            end = revert_end(wt.store, from_sha, to_sha, paths)
        start = from_sha
        if picks is not None:   # take back from TO with the picked hunks reverted to TO
            from undostore.restore.picked import picked_tree

            start, end = picked_tree(wt.store, to_sha, (from_sha, to_sha), picks), to_sha
        bodies: dict[bytes, bytes] = {}   # what the merge read and made, for the restore
        differences: Differences = {}
        tree = build_revert_tree(wt.store, start, end, ours_sha,
                                 theirs_label=f"before {from_sha.hex()[:12]}", bodies=bodies,
                                 differences=differences)
        if tree.conflicts and not merge:
            raise RevertConflict(from_sha.hex(), to_sha.hex(), tree.conflicts)
        if tree.still_marked:
            raise UnresolvedMarkers(tree.still_marked)
        restored = restore(wt, tree.target, expected=ours.id, dry_run=dry_run,
                           confirm=confirm, on_progress=on_progress, now=ours, context=context,
                           bodies=bodies, differences=differences)
    fields = {name: getattr(restored, name) for name in RestoreResult.__dataclass_fields__}
    fields["operation"] = "revert"
    fields["seconds"] = time.perf_counter() - started
    return RevertResult(**fields, conflicts=tree.conflicts, unmarked=tree.unmarked,
                        reverted=(from_sha.hex(), to_sha.hex()))

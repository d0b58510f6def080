"""Applying a restore plan to the files, so that a kill at any moment leaves each file old or new.

Order (why): deletes first, so a case-only rename (`readme.md` -> `README.md`) works on
case-insensitive file systems and a file can make way for a folder; then folders the deletes
emptied; then new folders, written whole (staging.py); then creates and modifies, a batch of
temp files made durable before each is renamed over its file (writes.py); then mode fixes, then
the modes of folders it created (modes.py). The pieces share one Context (context.py); every
durability call goes through syncing.py. All of it runs on the calling thread.

The conflict rule: just before a file is replaced or deleted, its current content is compared with
what the plan expects (`before`); a file that already holds what the plan wants (`after`) is left
alone, which is what lets the same code finish an interrupted restore. Anything else is a file
someone changed after the safety snapshot: the restore stops with ConflictError naming it.

Nothing is ever written through a symlink or a Windows junction: every change goes through the
folder descriptors of fsops.DirTree, a folder on the way that is (or becomes) a symlink or a file
stops the restore (exit 3), and the kept permission bits, owners and attributes come from
filemeta.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from undostore.platform import IS_WINDOWS
from undostore.restore.blobs import BlobSource, Checkpoints
from undostore.restore.context import CheckoutResult, Context, Target
from undostore.restore.deletes import delete, remove_dir
from undostore.restore.fsops import DIR, Dir, DirTree, NotAFolder, kind_of
from undostore.restore.modes import chmod, finish_folders
from undostore.restore.plan import Entry
from undostore.restore.progress import Reporter
from undostore.restore.restorelog import temp_prefix
from undostore.restore.staging import Staging
from undostore.restore.syncing import RestoreSync
from undostore.restore.writes import Writes

__all__ = ["Checkout", "CheckoutResult", "Target", "remove_temp_files", "temp_files_left"]

_BATCH_FILES = 8192
_BATCH_BYTES = 128 << 20


class Checkout:
    """One run of a plan over the files under `root` (a fresh restore, or finishing one).
    `current` and `touched` say, after a failure, where it stopped and whether any file of
    the plan had changed by then."""

    def __init__(self, root: str, target: Target, token: str, checkpoint: Checkpoints, *,
                 sync: RestoreSync | None = None, progress: Reporter | None = None,
                 windows: bool = IS_WINDOWS) -> None:
        self.root = root
        self.target = target
        self.prefix = temp_prefix(token)
        self.checkpoint = checkpoint
        self.sync = sync or RestoreSync(root)
        self.progress = progress or Reporter()
        self.windows = windows
        self._ctx: Context | None = None

    @property
    def current(self) -> str:
        return self._ctx.current if self._ctx is not None else ""

    @property
    def touched(self) -> bool:
        return self._ctx.touched if self._ctx is not None else False

    def run(self) -> CheckoutResult:
        tree = DirTree(self.root)
        ctx = self._ctx = Context(tree, self.target, self.prefix, self.checkpoint, self.sync,
                                  self.progress, self.windows)
        writes = Writes(ctx)
        staging = Staging(ctx, writes)
        try:
            self._apply(ctx, writes, staging)
        finally:
            staging.discard()
            tree.close()
        return ctx.result

    def _apply(self, ctx: Context, writes: Writes, staging: Staging) -> None:
        plan = ctx.plan
        written = sorted(plan.create + plan.modify)
        if self.progress.active:
            self.progress.step("write", len(plan.delete) + len(written) + len(plan.chmod),
                               sum(ctx.blobs.size(plan.after[p].sha) for p in written))
        for path in plan.delete:
            delete(ctx, path)
            self.progress.advance()
        for folder in plan.remove_dirs:
            remove_dir(ctx, folder)
        tops = staging.new_tops(sorted(plan.create))
        if tops:
            staged = {path for paths in tops.values() for path in paths}
            written = [path for path in written if path not in staged]
            staging.stage_all(tops)
        for batch in _batches(written, plan.after, ctx.blobs):
            writes.write_batch(batch)
        for path in plan.chmod:
            chmod(ctx, writes, path)
            self.progress.advance()
        finish_folders(ctx)
        self.progress.step("sync")
        ctx.current = ""
        ctx.tree.verify()
        self.sync.at_end()


def _batches(paths: list[str], after: dict[str, Entry], blobs: BlobSource
             ) -> Iterable[list[str]]:
    """Groups of writes whose temp files are made durable together (bounded in count and in
    disk space, since each batch exists twice on disk until it is renamed into place)."""
    batch: list[str] = []
    size = 0
    for path in paths:
        batch.append(path)
        size += blobs.size(after[path][1])
        if len(batch) >= _BATCH_FILES or size >= _BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def remove_temp_files(root: str, folders: Iterable[str], token: str) -> int:
    """Delete the temp files an interrupted restore (`token`) left in `folders`."""
    removed = 0
    tree = DirTree(root)
    try:
        for d, names in _temp_names(tree, folders, token):
            for name in names:
                try:
                    if kind_of(tree.lstat(d, name)) == DIR:
                        tree.remove_tree(d, name)   # a new folder staged whole
                    else:
                        tree.unlink(d, name)
                    removed += 1
                except (OSError, NotAFolder):
                    pass
    finally:
        tree.close()
    return removed


def temp_files_left(root: str, folders: Iterable[str], token: str) -> int:
    """How many temp files (or staged folders) of the restore `token` are in `folders`."""
    tree = DirTree(root)
    try:
        return sum(len(names) for _, names in _temp_names(tree, folders, token))
    finally:
        tree.close()


def _temp_names(tree: DirTree, folders: Iterable[str], token: str
                ) -> Iterator[tuple[Dir, list[str]]]:
    """(folder, the names of the restore `token`'s temps there) for each of `folders` that is
    still a real folder."""
    prefix = temp_prefix(token)
    for folder in folders:
        try:
            d = tree.folder(folder)
            names = [n for n in tree.listdir(d) if n.startswith(prefix)] if d else []
        except (OSError, NotAFolder):
            continue
        if d is not None:
            yield d, names

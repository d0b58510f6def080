"""Applying a restore plan to the files, so that a kill at any moment leaves each file old or new.

Order (why): deletes first, so a case-only rename (`readme.md` -> `README.md`) works on
case-insensitive file systems and a file can make way for a folder; then folders the deletes
emptied; then creates and modifies; then mode fixes. Each write goes to a temp file in the same
folder, is made durable (durable.py), and replaces the old file with one `os.replace`.

The conflict rule: just before a file is replaced or deleted, its current content is compared with
what the plan expects (`before`); a file that already holds what the plan wants (`after`) is left
alone, which is what lets the same code finish an interrupted restore. Anything else is a file
someone changed after the safety snapshot: the restore stops with ConflictError naming it.

Nothing is ever written through a symlink or a Windows junction: every folder on the way to a
file is checked with `lstat`, and new folders are created one level at a time.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from undostore.errors import ConflictError, UnsafePathError
from undostore.git.objects import MODE_EXEC, MODE_LINK
from undostore.git.reader import ObjectReader
from undostore.platform import IS_WINDOWS
from undostore.restore.diskstate import ABSENT, DIR, FILE, LINK, OTHER, DiskMatcher, Probe, probe
from undostore.restore.plan import Entry, RestorePlan
from undostore.restore.progress import Reporter
from undostore.restore.restorelog import temp_prefix
from undostore.snapshot.walk import disk_path
from undostore.store.atomic import replace_with_retry
from undostore.store.durable import Durability

_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BATCH_FILES = 8192
_BATCH_BYTES = 128 << 20
_KEEP_BLOB = 1 << 20               # blobs up to this size are kept in memory after verifying
_KEEP_BUDGET = 256 << 20           # ... up to this much in total; larger ones are streamed twice


class BlobSource:
    """The blobs a restore writes, verified before the first change: small ones kept in memory,
    large ones hash-checked by a streaming pass now and streamed again while written."""

    def __init__(self, reader: ObjectReader) -> None:
        self.reader = reader
        self.kept: dict[bytes, bytes] = {}

    @classmethod
    def verified(cls, reader: ObjectReader, shas: Iterable[bytes]) -> BlobSource:
        source = cls(reader)
        budget = _KEEP_BUDGET
        for sha in dict.fromkeys(shas):
            data = reader.small_blob(sha, min(_KEEP_BLOB, budget))
            if data is None:
                reader.verify_blob(sha)
            else:
                source.kept[sha] = data
                budget -= len(data)
        return source

    def chunks(self, sha: bytes) -> Iterable[bytes]:
        data = self.kept.get(sha)
        return (data,) if data is not None else self.reader.blob_chunks(sha)

    def size(self, sha: bytes) -> int:
        data = self.kept.get(sha)
        return len(data) if data is not None else self.reader.size_of(sha)

    def whole(self, sha: bytes) -> bytes:
        data = self.kept.get(sha)
        return data if data is not None else self.reader.read_blob(sha)


class Checkpoints:
    """Counts a restore's file operations. Only the crash tests use the hook: with
    UNDOSTORE_TEST_STALL_AT=k and UNDOSTORE_TEST_STALL_FILE=path, the k-th operation writes
    `path` and waits there to be killed, so a test can interrupt a restore at every step."""

    def __init__(self) -> None:
        self.count = 0
        raw = os.environ.get("UNDOSTORE_TEST_STALL_AT", "")
        self.stall_at = int(raw) if raw.isdigit() else 0
        self.marker = os.environ.get("UNDOSTORE_TEST_STALL_FILE", "")

    def __call__(self, what: str, path: str) -> None:
        self.count += 1
        if self.stall_at and self.count == self.stall_at and self.marker:
            import time

            with open(self.marker, "w", encoding="utf-8") as f:
                f.write(f"{self.count} {what} {path}\n")
            time.sleep(600)


@dataclass
class CheckoutResult:
    # Path -> its stat once it held the wanted entry, for the stat cache; None where the file
    # may have changed since it was written (its stat is then not evidence of its content).
    written: dict[str, os.stat_result | None] = field(default_factory=dict)
    removed_dirs: list[str] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)


class Checkout:
    """One run of a plan over the files under `root` (a fresh restore, or finishing one)."""

    def __init__(self, root: str, plan: RestorePlan, blobs: BlobSource, matcher: DiskMatcher,
                 token: str, *, target_dirs: set[str], case_insensitive: Callable[[], bool],
                 checkpoint: Checkpoints, durability: Durability, windows: bool = IS_WINDOWS,
                 progress: Reporter | None = None) -> None:
        self.root = root
        self.plan = plan
        self.blobs = blobs
        self.matcher = matcher
        self.prefix = temp_prefix(token)
        self.target_dirs = target_dirs
        self.case_insensitive = case_insensitive
        self.checkpoint = checkpoint
        self.durable = durability
        self.windows = windows
        self.progress = progress or Reporter()
        self.result = CheckoutResult()
        self._dirs: dict[str, int] = {"": os.lstat(root).st_dev}  # verified folder -> st_dev
        self._temps = 0
        self._symlinks = True
        self.current = ""            # the path being worked on, for error messages
        self._made: dict[str, tuple[int, int, int]] = {}  # temp -> (mtime, size, inode) written
        self._abs_dirs: dict[str, str] = {}

    def abs(self, rel: str) -> str:
        return disk_path(self.root, rel)

    def _abs_dir(self, folder: str) -> str:
        disk = self._abs_dirs.get(folder)
        if disk is None:
            disk = self._abs_dirs[folder] = self.abs(folder)
        return disk

    def run(self) -> CheckoutResult:
        writes = sorted(self.plan.create + self.plan.modify)
        if self.progress.active:
            self.progress.step("write", len(self.plan.delete) + len(writes) + len(
                self.plan.chmod), sum(self.blobs.size(self.plan.after[p][1]) for p in writes))
        for path in self.plan.delete:
            self._delete(path)
            self.progress.advance()
        for folder in self.plan.remove_dirs:
            self._remove_dir(folder)
        for batch in _batches(writes, self.plan.after, self.blobs):
            self._write_batch(batch)
        for path in self.plan.chmod:
            self._chmod(path)
            self.progress.advance()
        self.progress.step("sync")
        self.durable.flush_all()
        return self.result

    # --- folders -----

    def _folder(self, rel: str, create: bool) -> bool:
        """Check (and with `create`, make) the real folder `rel`; False if it is missing."""
        if rel in self._dirs:
            return True
        parent = rel.rpartition("/")[0]
        if not self._folder(parent, create):
            return False
        disk = self.abs(rel)
        found = probe(disk)
        if found.kind == ABSENT:
            if not create:
                return False
            os.mkdir(disk)
            self.durable.changed(self.abs(parent), self._dirs[parent])
            self._dirs[rel] = self._dirs[parent]
            return True
        if found.kind == DIR:
            assert found.st is not None
            self._dirs[rel] = found.st.st_dev
            return True
        if not create and (found.kind == FILE or (found.kind == LINK and rel in self.plan.after)):
            return False  # a file where a folder was (or the target's link): nothing below it
        if found.kind in (LINK, OTHER):
            raise UnsafePathError("is a symlink or junction where the snapshot has a folder; "
                                  "a restore never writes through it", rel)
        raise ConflictError("is a file that is not in the safety snapshot where the snapshot "
                            "has a folder; it was not overwritten", rel)

    def _changed(self, rel: str) -> None:
        parent = rel.rpartition("/")[0]
        self.durable.changed(self._abs_dir(parent), self._dirs.get(parent))

    # --- deletes -----

    def _delete(self, path: str) -> None:
        self.current = path
        if not self._folder(path.rpartition("/")[0], create=False):
            return  # its folder is gone or became a file: the path is already gone
        disk = self.abs(path)
        found = probe(disk)
        if found.kind == ABSENT:
            return
        if found.kind == DIR and path in self.target_dirs:
            return  # finishing: the file already made way for the folder
        if found.kind in (FILE, LINK) and self.matcher.holds(path, found, self.plan.before[path]):
            _make_writable(disk, found, self.windows)
            os.unlink(disk)
            self._changed(path)
            self.checkpoint("delete", path)
            return
        if self._other_case_only(path):
            return  # a case-insensitive file system shows the new name's file under the old name
        raise _conflict(path)

    def _other_case_only(self, path: str) -> bool:
        """On a case-insensitive file system: whether `path`'s exact name is absent from its
        folder (what lstat found is a differently cased name the plan creates)."""
        if not self.case_insensitive():
            return False
        folder, _, name = path.rpartition("/")
        try:
            return name not in os.listdir(self.abs(folder))
        except OSError:
            return False

    def _remove_dir(self, folder: str) -> None:
        self.current = folder
        if not self._folder(folder.rpartition("/")[0], create=False):
            return
        disk = self.abs(folder)
        if probe(disk).kind != DIR:
            return
        try:
            os.rmdir(disk)
        except FileNotFoundError:
            return
        except OSError as err:
            # Snapshots hold no folders, so a folder that stays changes no file: say why, go on.
            full = err.errno in (errno.ENOTEMPTY, errno.EEXIST) or \
                getattr(err, "winerror", 0) == 145
            why = ("it still holds files that are not in the snapshot (ignored files)" if full
                   else f"it cannot be removed ({err.strerror or err})")
            self.result.warnings.append((folder, f"folder kept: {why}"))
            return
        self._dirs.pop(folder, None)
        self._changed(folder)
        self.result.removed_dirs.append(folder)
        self.checkpoint("rmdir", folder)

    # --- writes -----

    def _write_batch(self, batch: list[str]) -> None:
        temps: list[tuple[str, str]] = []
        try:
            for path in batch:
                folder = path.rpartition("/")[0]
                self._folder(folder, create=True)
                temps.append((path, self._write_temp(path, folder, self.plan.after[path])))
                if self.progress.active:
                    self.progress.advance(1, self.blobs.size(self.plan.after[path][1]))
                self.checkpoint("temp", path)
            self.durable.flush_files()
            temps.reverse()  # replaced in path order, popped from the end
            while temps:
                self._replace(*temps[-1])
                temps.pop()
        finally:
            for _, temp in temps:
                _unlink_quietly(temp)

    def _write_temp(self, path: str, folder: str, entry: Entry) -> str:
        self.current = path
        mode, sha = entry
        folder_disk = self._abs_dir(folder)
        temp = os.path.join(folder_disk, f"{self.prefix}{self._temps}")
        self._temps += 1
        self.durable.changed(folder_disk, self._dirs[folder])
        if mode == MODE_LINK:
            target = self.blobs.whole(sha)
            if self._make_symlink(os.fsdecode(target), temp):
                self._made[temp] = _mark(os.lstat(temp))
                return temp
            self.result.warnings.append(
                (path, "symlinks cannot be created here: wrote the link target as a file"))
        perm = 0o777 if mode == MODE_EXEC else 0o666
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOFOLLOW, perm)
        try:
            for chunk in self.blobs.chunks(sha):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            if self.durable.fsync_each_file:
                os.fsync(fd)
            self._made[temp] = _mark(os.fstat(fd))
        except BaseException:
            os.close(fd)
            _unlink_quietly(temp)
            raise
        os.close(fd)
        return temp

    def _make_symlink(self, target: str, temp: str) -> bool:
        if not self._symlinks:
            return False
        try:
            os.symlink(target, temp)
        except (NotImplementedError, AttributeError):
            self._symlinks = False
            return False
        except OSError as err:
            # WinError 1314: no symlink privilege; EPERM/ENOTSUP: a file system without links.
            if getattr(err, "winerror", 0) != 1314 and err.errno not in (
                    errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            self._symlinks = False
            return False
        if not os.path.lexists(temp):  # Wine: os.symlink "succeeds" and creates nothing
            self._symlinks = False
            return False
        return True

    def _replace(self, path: str, temp: str) -> None:
        self.current = path
        disk = self.abs(path)
        found = probe(disk)
        if found.kind in (FILE, LINK) and self.matcher.holds(path, found, self.plan.after[path]):
            _unlink_quietly(temp)  # finishing: already done
            self.result.written[path] = found.st
            return
        before = self.plan.before.get(path)
        if before is None:
            if found.kind == DIR:
                _clear_empty_tree(disk, path)
            elif found.kind != ABSENT:
                raise _conflict(path)
        elif found.kind not in (FILE, LINK) or not self.matcher.holds(path, found, before):
            raise _conflict(path)
        else:
            _make_writable(disk, found, self.windows)
        replace_with_retry(temp, disk)
        self._changed(path)
        self.result.written[path] = _if_unchanged(os.lstat(disk), self._made.pop(temp, None))
        self.checkpoint("replace", path)

    # --- modes -----

    def _chmod(self, path: str) -> None:
        self.current = path
        disk = self.abs(path)
        if not self._folder(path.rpartition("/")[0], create=False):
            raise _conflict(path)
        found = probe(disk)
        after = self.plan.after[path]
        if found.kind != FILE:
            raise _conflict(path)
        assert found.st is not None
        if self.windows:
            # No exec bit on disk: only the content is checked; the stat cache keeps the mode.
            if self.matcher.content_id(path, found) != after[1]:
                raise _conflict(path)
            self.result.written[path] = found.st
            return
        if self.matcher.holds(path, found, after):
            self.result.written[path] = found.st  # finishing: already done
            return
        if not self.matcher.holds(path, found, self.plan.before[path]):
            raise _conflict(path)
        bits = stat.S_IMODE(found.st.st_mode)
        bits = bits | ((bits & 0o444) >> 2) if after[0] == MODE_EXEC else bits & ~0o111
        os.chmod(disk, bits)
        self.result.written[path] = _if_unchanged(os.lstat(disk), _mark(found.st))
        self.checkpoint("chmod", path)


def _mark(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _if_unchanged(st: os.stat_result, made: tuple[int, int, int] | None
                  ) -> os.stat_result | None:
    """`st` if the file still shows the mtime, size and inode it had when written (the rename
    or chmod changed only its ctime), else None: someone wrote to it in between."""
    return st if made == _mark(st) else None


def _conflict(path: str) -> ConflictError:
    return ConflictError(
        "changed after the safety snapshot; it was not overwritten and the restore stopped "
        "(the next command finishes it once the file is as before, or run "
        "`undostore restore --abort` to roll back to the safety snapshot)", path)


def _batches(paths: list[str], after: dict[str, Entry], blobs: BlobSource
             ) -> Iterable[list[str]]:
    """Groups of writes whose temp files are made durable together (bounded in count and in
    disk space, since each batch exists twice on disk until it is renamed into place)."""
    batch: list[str] = []
    size = 0
    for path in paths:
        batch.append(path)
        kept = blobs.kept.get(after[path][1])
        size += len(kept) if kept is not None else _BATCH_BYTES
        if len(batch) >= _BATCH_FILES or size >= _BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _make_writable(disk: str, found: Probe, windows: bool) -> None:
    """Windows cannot replace or delete a read-only file: clear the flag first."""
    if windows and found.st is not None and not found.st.st_mode & stat.S_IWRITE:
        os.chmod(disk, stat.S_IWRITE | stat.S_IREAD)


def _clear_empty_tree(disk: str, rel: str) -> None:
    """Remove a folder that holds only empty folders, so a file can take its place."""
    with os.scandir(disk) as entries:
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                raise ConflictError(
                    "is a folder that still holds files that are not in the snapshot "
                    f"({entry.name}); it cannot become a file", rel)
            _clear_empty_tree(entry.path, f"{rel}/{entry.name}")
    os.rmdir(disk)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_temp_files(root: str, folders: Iterable[str], token: str) -> int:
    """Delete the temp files an interrupted restore (`token`) left in `folders`."""
    prefix = temp_prefix(token)
    removed = 0
    for folder in folders:
        disk = disk_path(root, folder)
        if probe(disk).kind != DIR:
            continue
        try:
            with os.scandir(disk) as entries:
                names = [e.name for e in entries if e.name.startswith(prefix)]
        except OSError:
            continue
        for name in names:
            _unlink_quietly(os.path.join(disk, name))
            removed += 1
    return removed

"""Applying a restore plan to the files, so that a kill at any moment leaves each file old or new.

Order (why): deletes first, so a case-only rename (`readme.md` -> `README.md`) works on
case-insensitive file systems and a file can make way for a folder; then folders the deletes
emptied; then new folders; then creates and modifies; then mode fixes; then the modes of folders
it created. Each write goes to a temp file in the same folder, is made durable (durable.py), and
replaces the old file with one rename, so every changed file gets a new inode: a hard-linked
file's other names keep their content and mode. A folder the restore creates is written whole
under a temp name beside where it goes (its files with their own names, no temp file each),
made durable, and renamed into place: it appears complete or not at all. Where the kernel's
work per file is large, a batch's temp files are written on a few threads (writers.py), every
decision and checkpoint staying here. Old inodes are freed right away or, likewise, on a few
threads (reclaim.py): the new file and the old one swap names in one call where Linux can
(renameat2), else the old file gets a temp name of the restore too (a hard link) before the
rename; a deleted file is renamed to one; those names are unlinked, and the pool is drained
before emptied folders are removed and before the final sync.

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

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from undostore.errors import ConflictError
from undostore.git.objects import MODE_EXEC, MODE_LINK
from undostore.platform import IS_WINDOWS
from undostore.restore import writers
from undostore.restore.blobs import BlobSource, Checkpoints, write_sparse
from undostore.restore.diskstate import DiskMatcher, Probe
from undostore.restore.filemeta import (
    Modes,
    Warn,
    carry_over,
    changed_file_bits,
    is_root,
    set_bits,
    set_owner,
)
from undostore.restore.fsops import (
    ABSENT,
    DIR,
    FILE,
    LINK,
    READ_FLAGS,
    Dir,
    DirTree,
    NotAFolder,
    folder_error,
    ident,
    kind_of,
)
from undostore.restore.plan import Entry, RestorePlan, parent_dirs
from undostore.restore.progress import Reporter
from undostore.restore.reclaim import Reclaimer
from undostore.restore.restorelog import temp_prefix
from undostore.store.durable import Durability

__all__ = ["BlobSource", "Checkout", "CheckoutResult", "Checkpoints", "remove_temp_files",
           "temp_files_left"]

_BATCH_FILES = 8192
_BATCH_BYTES = 128 << 20
# Old files are freed on a few threads (reclaim.py) where folders are held by descriptor.
_RECLAIM = not IS_WINDOWS and os.link in os.supports_dir_fd and os.unlink in os.supports_dir_fd


@dataclass
class CheckoutResult:
    # Path -> its stat once it held the wanted entry, for the stat cache; None where the file
    # may have changed since it was written (its stat is then not evidence of its content).
    written: dict[str, os.stat_result | None] = field(default_factory=dict)
    removed_dirs: list[str] = field(default_factory=list)
    made_dirs: list[str] = field(default_factory=list)   # folders the restore created
    warnings: list[tuple[str, str]] = field(default_factory=list)


class Checkout:
    """One run of a plan over the files under `root` (a fresh restore, or finishing one)."""

    def __init__(self, root: str, plan: RestorePlan, blobs: BlobSource, matcher: DiskMatcher,
                 token: str, *, target_dirs: set[str], case_insensitive: Callable[[], bool],
                 checkpoint: Checkpoints, durability: Durability, windows: bool = IS_WINDOWS,
                 modes: Modes | None = None, progress: Reporter | None = None) -> None:
        self.root = root
        self.progress = progress or Reporter()
        self.plan = plan
        self.blobs = blobs
        self.matcher = matcher
        self.prefix = temp_prefix(token)
        self.target_dirs = target_dirs
        self.case_insensitive = case_insensitive
        self.checkpoint = checkpoint
        self.durable = durability
        self.windows = windows
        self.modes = modes or Modes(None)
        self.result = CheckoutResult()
        self.tree: DirTree | None = None
        self.reclaim: Reclaimer | None = None
        self._temps = 0
        self._asides = 0
        self._symlinks = True
        self.current = ""            # the path being worked on, for error messages
        self.touched = False         # whether anything but this restore's temp names changed
        self._made: dict[str, tuple[int, int, int]] = {}  # temp -> (mtime, size, inode) written
        self._carried: dict[str, tuple[int, ...] | None] = {}  # temp -> the old file it copied
        self._folder_modes: dict[str, int] = {}  # folders made here -> their final bits
        self._staged: dict[str, str] = {}   # new folder -> its staged copy, not yet in place

    def run(self) -> CheckoutResult:
        self.tree = DirTree(self.root)
        self.reclaim = Reclaimer() if _RECLAIM and self.tree.use_fds else None
        try:
            writes = sorted(self.plan.create + self.plan.modify)
            if self.progress.active:
                self.progress.step("write", len(self.plan.delete) + len(writes) + len(
                    self.plan.chmod), sum(self.blobs.size(self.plan.after[p][1]) for p in writes))
            for path in self.plan.delete:
                self._delete(path)
                self.progress.advance()
            self._drain()  # the folders the deletes emptied are removed next
            for folder in self.plan.remove_dirs:
                self._remove_dir(folder)
            tops = self._new_tops(sorted(self.plan.create))
            if tops:
                staged = {path for paths in tops.values() for path in paths}
                writes = [path for path in writes if path not in staged]
                self._stage_all(tops)
            for batch in _batches(writes, self.plan.after, self.blobs):
                self._write_batch(batch)
            for path in self.plan.chmod:
                self._chmod(path)
                self.progress.advance()
            self._finish_folders()
            self._drain()
            self.progress.step("sync")
            self.current = ""
            self.tree.verify()
            self.durable.flush_all()
        finally:
            self._discard_staged()
            if self.reclaim is not None:
                self.reclaim.close()
            self.tree.close()
        return self.result

    def _before(self, what: str, path: str) -> None:
        """Right before a change a user can see (a name of the plan's replaced, deleted or
        chmod'ed): from here on a failure leaves the restore half-way."""
        self.touched = True
        self.checkpoint.before(what, path)

    # --- freeing old files (reclaim.py) -----

    def _aside_name(self) -> str:
        self._asides += 1
        return f"{self.prefix}o{self._asides}"

    def _set_aside(self, d: Dir, name: str) -> tuple[int, str] | None:
        """Give the file about to be replaced a second name of this restore's, so the replace
        frees nothing; (folder descriptor, that name), or None where that cannot be done."""
        assert self.tree is not None
        fd = self.tree.descriptor(d) if self.reclaim is not None else None
        if fd is None or self.reclaim is None:
            return None
        for _ in range(100):
            aside = self._aside_name()
            try:
                return (fd, aside) if self.reclaim.set_aside(fd, name, aside) else None
            except FileExistsError:
                continue  # left by an earlier run of this restore: take the next name
        return None

    def _free(self, aside: tuple[int, str] | None) -> None:
        if aside is not None and self.reclaim is not None:
            self.reclaim.discard(*aside)

    def _remove_file(self, d: Dir, name: str) -> None:
        """Delete `name` from `d`: renamed to a name of this restore's and freed on the pool,
        or unlinked here where folders have no descriptors."""
        assert self.tree is not None
        fd = self.tree.descriptor(d) if self.reclaim is not None else None
        if fd is None:
            self.tree.unlink(d, name)
            return
        aside = self._aside_name()
        self.tree.replace(d, name, aside)
        self._free((fd, aside))

    def _drain(self) -> None:
        if self.reclaim is None:
            return
        self.reclaim.drain()
        for name, err in self.reclaim.failed:
            self.result.warnings.append((name, f"could not remove this temp file of the "
                                               f"restore: {err.strerror or err}"))
        self.reclaim.failed.clear()

    # --- folders -----

    def _folder(self, rel: str, create: bool = False,
                staged: tuple[str, str] | None = None) -> Dir | None:
        """The real folder `rel` (made, with `create`); None if it is missing, or is a file
        (or the target's link) where the plan only deletes below it. `staged`: (the staged
        copy, the new folder it becomes) when `rel` lies in a staged copy, for the modes of
        the folders made there."""
        assert self.tree is not None
        try:
            found = self.tree.folder(rel, create)
        except NotAFolder as err:
            if not create and (err.kind == FILE or (err.kind == LINK and err.rel in
                                                    self.plan.after)):
                return None  # a file where a folder was (or the target's link): nothing below
            raise folder_error(err.rel, err.kind) from None
        finally:
            if self.tree.made:
                made, self.tree.made = self.tree.made, []
                for new in made:
                    self._new_folder(new, staged[1] + new[len(staged[0]):] if staged else None)
        return found

    def _new_folder(self, rel: str, final: str | None = None) -> None:
        """A folder the restore made (at `rel`; it becomes `final` once its staged copy is in
        place): its owner and bits as recorded (else the umask default); until the end it
        stays writable by this process."""
        assert self.tree is not None
        self.touched = self.touched or final is None   # a real folder, not in a staged copy
        final = final or rel
        self.result.made_dirs.append(final)
        parent = self.tree.folder(rel.rpartition("/")[0])
        if parent is not None:
            self.durable.changed(parent.path, parent.st.st_dev)
        found = self.tree.folder(rel)
        if found is None or found.fd is None:
            return
        bits, uid, gid = self.modes.new_folder(final)
        root = is_root()
        if root:
            if uid < 0:  # nothing recorded: the folder it is in decides, not root
                uid, gid = (parent.st.st_uid, parent.st.st_gid) if parent else (-1, -1)
            set_owner(found.fd, uid, gid, found.st, rel, self.result.warnings)
        now = bits if root else bits | 0o700
        set_bits(found.fd, now & 0o7777)
        if now != bits:
            self._folder_modes[final] = bits

    def _finish_folders(self) -> None:
        assert self.tree is not None
        for rel, bits in sorted(self._folder_modes.items(), key=lambda i: -i[0].count("/")):
            found = self.tree.folder(rel)
            if found is not None and found.fd is not None:
                set_bits(found.fd, bits)

    def _changed(self, d: Dir) -> None:
        self.durable.changed(d.path, d.st.st_dev)

    def _at(self, rel: str, create: bool = False) -> tuple[Dir | None, str, Probe]:
        """(folder, name, what is there now) for the path `rel`."""
        assert self.tree is not None
        folder, _, name = rel.rpartition("/")
        d = self._folder(folder, create)
        if d is None:
            return None, name, Probe(ABSENT)
        st = self.tree.lstat(d, name)
        return d, name, Probe(kind_of(st), st)

    def _holds(self, d: Dir, name: str, path: str, found: Probe, want: Entry) -> bool:
        assert self.tree is not None
        return self.matcher.holds(path, found, want, (self.tree, d, name))

    # --- new folders, written whole under a temp name, then renamed into place -----

    def _new_tops(self, creates: list[str]) -> dict[str, list[str]]:
        """The highest folder missing on the way to each created file -> the files created
        below it, where the plan only creates there (a file it modifies below a missing folder
        is a conflict the normal path reports). Needs folder descriptors (POSIX)."""
        assert self.tree is not None
        if not self.tree.use_fds:
            return {}
        exists: dict[str, bool] = {"": True}
        tops: dict[str, list[str]] = {}
        for path in creates:
            top = self._missing_top(path.rpartition("/")[0], exists)
            if top is not None:
                tops.setdefault(top, []).append(path)
        for path in (*self.plan.modify, *self.plan.chmod):
            for folder in parent_dirs(path):
                tops.pop(folder, None)
        return tops

    def _missing_top(self, folder: str, exists: dict[str, bool]) -> str | None:
        assert self.tree is not None
        rel = ""
        for name in folder.split("/") if folder else ():
            rel = f"{rel}/{name}" if rel else name
            known = exists.get(rel)
            if known is None:
                try:
                    known = self.tree.folder(rel) is not None
                except NotAFolder:
                    return None  # a file or link on the way: the normal path says why
                exists[rel] = known
            if not known:
                return rel
        return None

    def _stage_all(self, tops: dict[str, list[str]]) -> None:
        """Write each new folder whole under a temp name, make it all durable, then rename
        each into place: a kill before its rename leaves only a temp folder of the restore."""
        for top, paths in tops.items():
            self._stage(top, paths)
        if self.durable.fsync_each_file:
            assert self.tree is not None
            for staged in self._staged.values():
                self._fsync_tree(staged)
        self.durable.flush_files()
        for top in list(self._staged):
            self._place(top)

    def _stage(self, top: str, paths: list[str]) -> None:
        assert self.tree is not None
        parent_rel = top.rpartition("/")[0]
        parent = self._folder(parent_rel)
        assert parent is not None
        self.current = top
        temp = f"{self.prefix}d{self._temps}"
        self._temps += 1
        self.tree.mkdir(parent, temp, 0o700)
        staged = parent.join(temp)
        self._staged[top] = staged
        self._changed(parent)
        self._new_folder(staged, top)
        for path in paths:
            self.current = path
            folder, _, name = (staged + path[len(top):]).rpartition("/")
            d = self._folder(folder, create=True, staged=(staged, top))
            assert d is not None
            st, _ = self._write_new(d, name, path, self.plan.after[path], Probe(ABSENT),
                                    self.result.warnings)
            self.result.written[path] = st
            self._wrote(path)

    def _fsync_tree(self, staged: str) -> None:
        """Where each file is made durable on its own, the staged folders' entries too."""
        assert self.tree is not None
        prefix = staged + "/"
        for rel in [r for r in self.tree.opened() if r == staged or r.startswith(prefix)]:
            found = self.tree.folder(rel)
            if found is not None and found.fd is not None:
                os.fsync(found.fd)

    def _place(self, top: str) -> None:
        """Rename the staged copy of `top` into place, never over anything."""
        assert self.tree is not None
        staged = self._staged[top]
        parent_rel, _, name = top.rpartition("/")
        parent = self._folder(parent_rel)
        copy = self.tree.folder(staged)
        assert parent is not None and copy is not None
        self.current = top
        if self.tree.lstat(parent, name) is not None:
            raise ConflictError("appeared while the restore ran, where it creates this folder; "
                                "it was not overwritten", top)
        self._before("replace", top)
        temp = staged.rpartition("/")[2]
        now = self.tree.lstat(parent, temp)
        if now is None or kind_of(now) != DIR or ident(now) != ident(copy.st):
            raise folder_error(top, kind_of(now), changed=True)  # never moves a stranger's
        self.tree.replace(parent, temp, name)
        del self._staged[top]
        st = self.tree.lstat(parent, name)
        if st is None or ident(st) != ident(copy.st):
            raise folder_error(top, kind_of(st), changed=True)
        self.tree.moved(staged, top)
        self._changed(parent)
        self.checkpoint("replace", top)

    def _discard_staged(self) -> None:
        """A restore that stopped before renaming them removes its staged folders."""
        if not self._staged or self.tree is None:
            return
        for top, staged in list(self._staged.items()):
            parent_rel, _, temp = staged.rpartition("/")
            try:
                parent = self.tree.folder(parent_rel)
                if parent is not None:
                    self.tree.remove_tree(parent, temp)
            except (OSError, NotAFolder):
                pass  # left to recovery: the journal names the folder it is in
            del self._staged[top]

    # --- deletes -----

    def _delete(self, path: str) -> None:
        self.current = path
        d, name, found = self._at(path)
        if d is None or found.kind == ABSENT:
            return  # its folder is gone or became a file, or it is gone: already done
        assert self.tree is not None
        if found.kind == DIR and path in self.target_dirs:
            return  # finishing: the file already made way for the folder
        if found.kind in (FILE, LINK) and self._holds(d, name, path, found, self.plan.before[path]):
            self._make_writable(d, name, found)
            self._before("delete", path)
            self._remove_file(d, name)
            self._changed(d)
            self.checkpoint("delete", path)
            return
        if self._other_case_only(d, name):
            return  # a case-insensitive file system shows the new name's file under the old name
        raise _conflict(path)

    def _other_case_only(self, d: Dir, name: str) -> bool:
        """On a case-insensitive file system: whether `name` itself is absent from its folder
        (what lstat found is a differently cased name the plan creates)."""
        if not self.case_insensitive():
            return False
        assert self.tree is not None
        try:
            return name not in self.tree.listdir(d)
        except OSError:
            return False

    def _remove_dir(self, folder: str) -> None:
        self.current = folder
        d, name, found = self._at(folder)
        if d is None or found.kind != DIR:
            return
        assert self.tree is not None
        self.touched = True
        try:
            self.tree.rmdir(d, name)
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
        self.tree.forget(folder)
        self._changed(d)
        self.result.removed_dirs.append(folder)
        self.checkpoint("rmdir", folder)

    # --- writes -----

    def _write_batch(self, batch: list[str]) -> None:
        temps: list[tuple[str, str]] = []
        try:
            self._write_temps(batch, temps)
            self.durable.flush_files()
            temps.reverse()  # replaced in path order, popped from the end
            while temps:
                self._replace(*temps[-1])
                temps.pop()
        finally:
            for path, temp in temps:
                self._unlink_temp(path, temp)

    def _wrote(self, path: str) -> None:
        """A file of the plan is written (to its temp file, or in a staged folder)."""
        if self.progress.active:
            self.progress.advance(1, self.blobs.size(self.plan.after[path][1]))
        self.checkpoint("temp", path)

    def _write_temp(self, path: str) -> str:
        """A new file (or symlink) beside `path` holding what the plan wants there, carrying
        what the file now at `path` carries (filemeta.py); its name."""
        d, temp, found = self._new_temp(path)
        job = _WriteJob(path, d, temp, found)
        self._temp_made(job, self._write_job(job))
        return temp

    def _new_temp(self, path: str) -> tuple[Dir, str, Probe]:
        """(the folder of `path`, made if missing; a fresh temp name there; what is at `path`)."""
        self.current = path
        d, _, found = self._at(path, create=True)
        assert d is not None
        temp = f"{self.prefix}{self._temps}"
        self._temps += 1
        self._changed(d)
        return d, temp, found

    def _temp_made(self, job: _WriteJob,
                   made: tuple[os.stat_result, tuple[int, ...] | None]) -> None:
        """Record the temp file a job wrote (`_write_job`'s result), and its warnings."""
        st, carried = made
        if not stat.S_ISLNK(st.st_mode):
            self._carried[job.name] = carried  # checked again just before the replace
        self._made[job.name] = _mark(st)
        self.result.warnings += job.warnings   # in path order, whichever thread wrote it

    # --- writes on a few threads (writers.py): POSIX, where folders are held by descriptor ---

    def _on_threads(self, count: int) -> bool:
        assert self.tree is not None
        return self.tree.use_fds and count >= writers.MIN_JOBS

    def _own(self, d: Dir) -> Dir:
        """`d` with a descriptor of its own, for a job on a writer thread (the tree may close
        its descriptors to stay under the limit while the job is out)."""
        assert self.tree is not None
        fd = self.tree.descriptor(d)
        assert fd is not None
        return Dir(d.rel, d.path, os.dup(fd), d.st)

    def _release(self, job: _WriteJob) -> None:
        assert job.d.fd is not None
        os.close(job.d.fd)

    def _blame(self, job: _WriteJob) -> None:
        self.current = job.path

    def _write_job(self, job: _WriteJob) -> tuple[os.stat_result, tuple[int, ...] | None]:
        """The file `job.name` in the job's folder (here or on a writer thread), removed again
        if its writing fails."""
        assert self.tree is not None
        try:
            return self._write_new(job.d, job.name, job.path, self.plan.after[job.path],
                                   job.found, job.warnings)
        except BaseException:
            try:
                self.tree.unlink(job.d, job.name)
            except (OSError, NotAFolder):
                pass
            raise

    def _write_temps(self, batch: list[str], temps: list[tuple[str, str]]) -> None:
        """`_write_temp` for each path of the batch, each temp put into `temps` (and
        checkpointed) here, in path order: on a few threads where that pays (POSIX, blobs in
        memory), the others on this thread."""
        here = batch
        if self._on_threads(len(batch)):
            threaded, here = self._split_streamed(batch)
            self._write_on_threads(threaded, temps)
        for path in here:
            temps.append((path, self._write_temp(path)))
            self._wrote(path)
        temps.sort()  # path order again, for the replaces

    def _write_on_threads(self, threaded: list[str], temps: list[tuple[str, str]]) -> None:
        """The temps of `threaded` (writers.py): jobs made and results taken here, in order."""
        def jobs() -> Iterator[_WriteJob]:
            for path in threaded:
                d, temp, found = self._new_temp(path)
                yield _WriteJob(path, self._own(d), temp, found)

        def done(job: _WriteJob, made: tuple[os.stat_result, tuple[int, ...] | None]) -> None:
            self.current = job.path   # the iterator may be many jobs ahead
            temps.append((job.path, job.name))
            self._temp_made(job, made)
            self._wrote(job.path)

        def undo(job: _WriteJob, made: object) -> None:
            self._unlink_temp(job.path, job.name)

        writers.Writers(self._write_job, done, undo, self._release, self._blame).run(jobs())

    def _split_streamed(self, paths: list[str]) -> tuple[list[str], list[str]]:
        """(paths whose blobs are in memory, paths whose blobs are streamed from the store):
        only the first go to threads, since the object reader is not shared between them."""
        threaded, streamed = [], []
        for path in paths:
            (threaded if self.blobs.in_memory(self.plan.after[path][1]) else streamed
             ).append(path)
        return threaded, streamed

    def _write_new(self, d: Dir, new: str, path: str, entry: Entry, found: Probe, warnings: Warn
                   ) -> tuple[os.stat_result, tuple[int, ...] | None]:
        """Create `new` in `d` holding `entry` for `path`, with what `found` (the file at `path`
        now) carries: (its stat once written, what identifies the old file it carried from).
        What could not be kept goes to `warnings` (the job's own, on a writer thread)."""
        assert self.tree is not None
        mode, sha = entry
        if mode == MODE_LINK:
            target = self.blobs.whole(sha)
            if self._make_symlink(d, os.fsdecode(target), new):
                self._link_owner(d, new, path, warnings)
                st = self.tree.lstat(d, new)
                assert st is not None
                return st, None
            warnings.append(
                (path, "symlinks cannot be created here: wrote the link target as a file"))
        executable = mode == MODE_EXEC
        # A file with no old one to carry from is created with its final bits where the umask
        # lets them through (no chmod then); any other starts private, until its bits are set.
        fresh = None if self.windows or found.kind == FILE else self.modes.new_file(
            path, executable)
        bits = fresh[0] if fresh is not None and not fresh[0] & self.modes.umask else 0o600
        fd = self.tree.open(d, new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, bits)
        try:
            write_sparse(fd, self.blobs.chunks(sha))
            if fresh is None:
                carried = self._give_metadata(fd, d, path.rpartition("/")[2], path, found,
                                              executable, warnings)
            else:
                carried = None
                self._give_new_metadata(fd, d, path, fresh, bits != fresh[0], warnings)
            if self.durable.fsync_each_file:
                os.fsync(fd)
            return os.fstat(fd), carried
        finally:
            os.close(fd)

    def _give_metadata(self, fd: int, d: Dir, name: str, path: str, found: Probe,
                       executable: bool, warnings: Warn) -> tuple[int, ...] | None:
        """Bits, owner and attributes for the new file `fd`: the old file's where there is one
        (returns what identifies the old file), else the recorded or default ones."""
        if self.windows:
            return None
        assert self.tree is not None
        if found.kind == FILE:
            try:
                old = self.tree.open(d, name, READ_FLAGS)
            except OSError:
                old = -1
            if old >= 0:
                try:
                    st = os.fstat(old)
                    if stat.S_ISREG(st.st_mode):
                        carry_over(old, st, fd, executable, path, warnings)
                        return _meta_key(st)
                finally:
                    os.close(old)
            elif found.st is not None:  # unreadable to this process: bits and owner only
                st = found.st
                set_owner(fd, st.st_uid, st.st_gid, os.fstat(fd), path, warnings)
                set_bits(fd, changed_file_bits(st.st_mode, executable))
                return _meta_key(st)
        self._give_new_metadata(fd, d, path, self.modes.new_file(path, executable), True,
                                warnings)
        return None

    def _give_new_metadata(self, fd: int, d: Dir, path: str, meta: tuple[int, int, int],
                           chmod: bool, warnings: Warn) -> None:
        """Owner (as root) and bits for a file with no old one: as recorded, else defaults.
        `chmod`: its bits are not yet the wanted ones."""
        bits, uid, gid = meta
        if is_root():
            if uid < 0:  # nothing recorded: the folder it is in decides, not root
                uid, gid = d.st.st_uid, d.st.st_gid
            # A new file belongs to this process's user and group (or the folder's group):
            # no call when those are the wanted ones whichever applies.
            if uid != os.geteuid() or not gid == os.getegid() == d.st.st_gid:
                set_owner(fd, uid, gid, os.fstat(fd), path, warnings)
                chmod = True
        if chmod:
            set_bits(fd, bits)

    def _link_owner(self, d: Dir, temp: str, path: str, warnings: Warn) -> None:
        if self.windows or d.fd is None or not is_root():
            return
        _, uid, gid = self.modes.new_file(path, False)
        if uid < 0:
            uid, gid = d.st.st_uid, d.st.st_gid
        assert self.tree is not None
        try:
            self.tree.lchown(d, temp, uid, gid)
        except OSError as err:
            warnings.append((path, f"owner not kept: {err.strerror or err}"))

    def _make_symlink(self, d: Dir, target: str, temp: str) -> bool:
        if not self._symlinks:
            return False
        assert self.tree is not None
        try:
            self.tree.symlink(d, target, temp)
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
        if self.tree.lstat(d, temp) is None:  # Wine: os.symlink "succeeds" and creates nothing
            self._symlinks = False
            return False
        return True

    def _replace(self, path: str, temp: str) -> None:
        self.current = path
        assert self.tree is not None
        d, name, found = self._at(path)
        if d is None:
            raise _conflict(path)
        if found.kind in (FILE, LINK) and self._holds(d, name, path, found, self.plan.after[path]):
            self._unlink_temp(path, temp)  # finishing: already done
            self.result.written[path] = found.st
            return
        before = self.plan.before.get(path)
        if before is None:
            if found.kind == DIR:
                self._clear_empty_tree(d, name, path)
            elif found.kind != ABSENT:
                raise _conflict(path)
        elif found.kind not in (FILE, LINK) or not self._holds(d, name, path, found, before):
            raise _conflict(path)
        else:
            self._make_writable(d, name, found)
            if (found.kind == FILE and found.st is not None and temp in self._carried
                    and self._carried[temp] != _meta_key(found.st)):
                self._carry_again(d, name, temp, path)  # changed since the temp was written
        self._before("replace", path)
        if found.kind in (FILE, LINK) and self.reclaim is not None and \
                self.tree.exchange(d, temp, name):
            # The new file took the name, the old one took the temp name: freed on the pool.
            self._free((self.tree.descriptor(d), temp))  # type: ignore[arg-type]
        else:
            aside = self._set_aside(d, name) if found.kind in (FILE, LINK) else None
            try:
                self.tree.replace(d, temp, name)
            except BaseException:
                if aside is not None:
                    self.tree.unlink(d, aside[1])
                raise
            self._free(aside)
        self._changed(d)
        st = self.tree.lstat(d, name)
        self.result.written[path] = _if_unchanged(st, self._made.pop(temp, None)) if st else None
        self.checkpoint("replace", path)

    def _carry_again(self, d: Dir, name: str, temp: str, path: str) -> None:
        """The old file's bits or owner changed after its temp was written: carry them again."""
        assert self.tree is not None
        fd = self.tree.open(d, temp, READ_FLAGS)
        try:
            st = os.fstat(fd)
            made = self._made.get(temp)
            if made is None or made[2] != st.st_ino:
                raise _conflict(path)
            self._give_metadata(fd, d, name, path, Probe(FILE, self.tree.lstat(d, name)),
                                self.plan.after[path].mode == MODE_EXEC, self.result.warnings)
        finally:
            os.close(fd)

    def _clear_empty_tree(self, d: Dir, name: str, rel: str) -> None:
        """Remove a folder that holds only empty folders, so a file can take its place."""
        assert self.tree is not None
        inner = self._folder(rel)
        if inner is None:
            return
        self.touched = True
        for entry in self.tree.listdir(inner):
            if kind_of(self.tree.lstat(inner, entry)) != DIR:
                raise ConflictError(
                    "is a folder that still holds files that are not in the snapshot "
                    f"({entry}); it cannot become a file", rel)
            self._clear_empty_tree(inner, entry, f"{rel}/{entry}")
        self.tree.rmdir(d, name)
        self.tree.forget(rel)

    # --- modes -----

    def _chmod(self, path: str) -> None:
        self.current = path
        assert self.tree is not None
        d, name, found = self._at(path)
        after = self.plan.after[path]
        if d is None or found.kind != FILE:
            raise _conflict(path)
        assert found.st is not None
        if self.windows:
            # No exec bit on disk: only the content is checked; the stat cache keeps the mode.
            if self.matcher.content_id(path, found, (self.tree, d, name)) != after[1]:
                raise _conflict(path)
            self.result.written[path] = found.st
            return
        if self._holds(d, name, path, found, after):
            self.result.written[path] = found.st  # finishing: already done
            return
        if not self._holds(d, name, path, found, self.plan.before[path]):
            raise _conflict(path)
        executable = after.mode == MODE_EXEC
        self._before("chmod", path)
        try:
            fd = self.tree.open(d, name, READ_FLAGS)
        except OSError:
            fd = -1  # unreadable here: a new file (the rename needs only the folder)
        if fd >= 0:
            try:
                st = os.fstat(fd)
                if ident(st) != ident(found.st) or not stat.S_ISREG(st.st_mode):
                    raise _conflict(path)  # another file than the one just checked
                if st.st_nlink == 1 and (is_root() or st.st_uid == os.geteuid()):
                    set_bits(fd, changed_file_bits(st.st_mode, executable))
                    self.durable.changed_in_place(fd)
                    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                        self.result.warnings.append(
                            (path, "setuid/setgid cleared: the file's exec bit changed"))
                    done = self.tree.lstat(d, name)
                    self.result.written[path] = _if_unchanged(done, _mark(st)) if done else None
                    self.checkpoint("chmod", path)
                    return
            finally:
                os.close(fd)
        # Other names share this inode (or it is not ours to chmod): a new inode instead.
        temp = self._write_temp(path)
        self.durable.flush_files()
        try:
            self._replace(path, temp)
        except BaseException:
            self._unlink_temp(path, temp)
            raise

    def _make_writable(self, d: Dir, name: str, found: Probe) -> None:
        """Windows cannot replace or delete a read-only file: clear the flag first."""
        if self.windows and found.st is not None and not found.st.st_mode & stat.S_IWRITE:
            self.touched = True
            os.chmod(os.path.join(d.path, name), stat.S_IWRITE | stat.S_IREAD)

    def _unlink_temp(self, path: str, temp: str) -> None:
        assert self.tree is not None
        try:
            d = self.tree.folder(path.rpartition("/")[0])
            if d is not None:
                self.tree.unlink(d, temp)
        except (OSError, NotAFolder):
            pass


@dataclass
class _WriteJob:
    """One file to write: for `path`, the file `name` in the folder `d`; `found` is what is at
    `path` now (what the new file carries from)."""
    path: str
    d: Dir
    name: str
    found: Probe
    warnings: Warn = field(default_factory=list)   # what could not be kept, in this job


def _mark(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _meta_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)


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

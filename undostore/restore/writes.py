"""The writing piece of a checkout: each new file goes to a temp file beside its path (its bits,
owner and attributes carried from the old file, filemeta.py), a batch of them is made durable,
then each is renamed over the old file, just after the old one is checked to still hold what
the plan expects. Every changed file so gets a new inode: another hard link keeps the old
content."""

from __future__ import annotations

import errno
import os
import stat

from undostore.errors import ConflictError
from undostore.git.objects import MODE_EXEC, MODE_LINK
from undostore.restore.blobs import write_sparse
from undostore.restore.context import Context, conflict, if_unchanged, mark
from undostore.restore.diskstate import Probe
from undostore.restore.filemeta import carry_over, changed_file_bits, is_root, set_bits, set_owner
from undostore.restore.fsops import ABSENT, DIR, FILE, LINK, READ_FLAGS, Dir, NotAFolder, kind_of
from undostore.restore.notices import Kind, RestoreWarning, Warn
from undostore.restore.plan import Entry


class Writes:
    """Writes and replaces files for one checkout; remembers what each temp file carried."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._symlinks = True   # until the file system refuses one
        self._made: dict[str, tuple[int, int, int]] = {}  # temp -> (mtime, size, inode) written
        self._carried: dict[str, tuple[int, ...] | None] = {}  # temp -> the old file it copied

    def write_batch(self, batch: list[str]) -> None:
        temps: list[tuple[str, str]] = []
        try:
            for path in batch:
                temps.append((path, self.write_temp(path)))
                self.ctx.wrote(path)
            self.ctx.sync.before_renames()
            temps.reverse()  # replaced in path order, popped from the end
            while temps:
                self.replace(*temps[-1])
                temps.pop()
        finally:
            for path, temp in temps:
                self.ctx.unlink_temp(path, temp)

    def write_temp(self, path: str) -> str:
        """A new file (or symlink) beside `path` holding what the plan wants there, carrying
        what the file now at `path` carries (filemeta.py); its name. Removed again if its
        writing fails."""
        self.ctx.current = path
        d, _, found = self.ctx.at(path, create=True)
        assert d is not None
        temp = self.ctx.temp_name()
        self.ctx.changed(d)
        try:
            st, carried = self.write_new(d, temp, path, self.ctx.plan.after[path], found,
                                         self.ctx.result.warnings)
        except BaseException:
            try:
                self.ctx.tree.unlink(d, temp)
            except (OSError, NotAFolder):
                pass
            raise
        if not stat.S_ISLNK(st.st_mode):
            self._carried[temp] = carried  # checked again just before the replace
        self._made[temp] = mark(st)
        return temp

    def write_new(self, d: Dir, new: str, path: str, entry: Entry, found: Probe, warnings: Warn
                   ) -> tuple[os.stat_result, tuple[int, ...] | None]:
        """Create `new` in `d` holding `entry` for `path`, with what `found` (the file at `path`
        now) carries: (its stat once written, what identifies the old file it carried from).
        Its mtime, size and inode stay as written; where it has no old file to carry from,
        the stat is taken again once its bits and owner are set (staging records it as is).
        What could not be kept goes to `warnings`."""
        mode, sha = entry
        if mode == MODE_LINK:
            target = self.ctx.blobs.whole(sha)
            if self._make_symlink(d, os.fsdecode(target), new):
                self._link_owner(d, new, path, warnings)
                st = self.ctx.tree.lstat(d, new)
                assert st is not None
                return st, None
            warnings.append(RestoreWarning(
                path, "symlinks cannot be created here: wrote the link target as a file",
                Kind.SYMLINK))
        executable = mode == MODE_EXEC
        # A file with no old one to carry from is created with its final bits where the umask
        # lets them through (no chmod then); so is one replacing a file of this process's user
        # and group (those of a new file here) with the bits it has now; any other starts
        # private, until its bits are set.
        fresh = None if self.ctx.windows or found.kind == FILE else self.ctx.modes.new_file(
            path, executable)
        if fresh is not None:
            bits = fresh[0] if not fresh[0] & self.ctx.modes.umask else 0o600
        else:
            bits = self._same_owner_bits(d, found, executable)
        fd = self.ctx.tree.open(d, new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, bits)
        try:
            write_sparse(fd, self.ctx.blobs.chunks(sha))
            st = os.fstat(fd)
            if fresh is None:
                carried = self._give_metadata(fd, st, d, path.rpartition("/")[2], path, found,
                                              executable, warnings)
                changed = False   # only its mark is used: mtime, size and inode are final
            else:
                carried = None
                changed = self._give_new_metadata(fd, st, d, path, fresh, bits != fresh[0],
                                                  warnings)
            if changed:  # its bits, owner and ctime as they are now, for the stat cache
                st = os.fstat(fd)
            self.ctx.sync.file_written(fd)
            return st, carried
        finally:
            os.close(fd)

    def _same_owner_bits(self, d: Dir, found: Probe, executable: bool) -> int:
        """The bits a temp file replacing `found` is created with: the ones it will carry
        where the umask lets them through and the old file has the user and group a new file
        in `d` gets (the temp then gives nobody an access the old file did not), else 0o600."""
        st = found.st
        if self.ctx.windows or found.kind != FILE or st is None:
            return 0o600
        bits = changed_file_bits(st.st_mode, executable)
        own = self.ctx.result.own
        if bits & self.ctx.modes.umask or not _new_file_owned_by(d, st.st_uid, st.st_gid, own):
            return 0o600
        return bits

    def _give_metadata(self, fd: int, fd_st: os.stat_result, d: Dir, name: str, path: str,
                       found: Probe, executable: bool, warnings: Warn) -> tuple[int, ...] | None:
        """Bits, owner and attributes for the new file `fd` (`fd_st` its stat): the old file's
        where there is one (returns what identifies the old file), else the recorded or
        default ones."""
        if self.ctx.windows:
            return None
        if found.kind == FILE:
            try:
                old = self.ctx.tree.open(d, name, READ_FLAGS)
            except OSError:
                old = -1
            if old >= 0:
                try:
                    st = os.fstat(old)
                    if stat.S_ISREG(st.st_mode):
                        carry_over(old, st, fd, fd_st, executable, path, warnings)
                        return _meta_key(st)
                finally:
                    os.close(old)
            elif found.st is not None:  # unreadable to this process: bits and owner only
                st = found.st
                set_owner(fd, st.st_uid, st.st_gid, fd_st, path, warnings)
                set_bits(fd, changed_file_bits(st.st_mode, executable))
                return _meta_key(st)
        self._give_new_metadata(fd, fd_st, d, path, self.ctx.modes.new_file(path, executable),
                                True, warnings)
        return None

    def _give_new_metadata(self, fd: int, fd_st: os.stat_result, d: Dir, path: str,
                           meta: tuple[int, int, int], chmod: bool, warnings: Warn) -> bool:
        """Owner (as root) and bits for a file with no old one: as recorded, else defaults;
        whether either was set. `chmod`: its bits are not yet the wanted ones."""
        bits, uid, gid = meta
        if is_root():
            if uid < 0:  # nothing recorded: the folder it is in decides, not root
                uid, gid = d.st.st_uid, d.st.st_gid
            if not _new_file_owned_by(d, uid, gid, self.ctx.result.own):
                set_owner(fd, uid, gid, fd_st, path, warnings)
                chmod = True
        if chmod:
            set_bits(fd, bits)
        return chmod

    def _link_owner(self, d: Dir, temp: str, path: str, warnings: Warn) -> None:
        if self.ctx.windows or d.fd is None or not is_root():
            return
        _, uid, gid = self.ctx.modes.new_file(path, False)
        if uid < 0:
            uid, gid = d.st.st_uid, d.st.st_gid
        try:
            self.ctx.tree.lchown(d, temp, uid, gid)
        except OSError as err:
            warnings.append(
                RestoreWarning(path, f"owner not kept: {err.strerror or err}", Kind.OWNER))

    def _make_symlink(self, d: Dir, target: str, temp: str) -> bool:
        if not self._symlinks:
            return False
        try:
            self.ctx.tree.symlink(d, target, temp)
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
        if self.ctx.tree.lstat(d, temp) is None:  # Wine: os.symlink "succeeds" and creates nothing
            self._symlinks = False
            return False
        return True

    def replace(self, path: str, temp: str) -> None:
        self.ctx.current = path
        d, name, found = self.ctx.at(path)
        if d is None:
            raise conflict(path)
        before = self.ctx.plan.before.get(path)
        present = found.kind in (FILE, LINK)
        expected = (before is not None and present
                    and self.ctx.holds(d, name, path, found, before))
        # The old content, as expected, is not the new one (checked first: the usual case);
        # only where exec bits are not kept can a file hold both (an exec-bit change).
        if ((not expected or self.ctx.windows) and present
                and self.ctx.holds(d, name, path, found, self.ctx.plan.after[path])):
            self.ctx.unlink_temp(path, temp)  # finishing: already done
            self.ctx.result.keep(path, found.st, changed=False)
            return
        if before is None:
            if found.kind == DIR:
                self._clear_empty_tree(d, name, path)
            elif found.kind != ABSENT:
                raise conflict(path)
        elif not expected:
            raise conflict(path)
        else:
            self.ctx.make_writable(d, name, found)
            if (found.kind == FILE and found.st is not None and temp in self._carried
                    and self._carried[temp] != _meta_key(found.st)):
                self._carry_again(d, name, temp, path)  # changed since the temp was written
        self.ctx.before("replace", path)
        self.ctx.tree.replace(d, temp, name)
        self.ctx.changed(d)
        st = self.ctx.tree.lstat(d, name)
        self.ctx.result.keep(path, if_unchanged(st, self._made.pop(temp, None)) if st else None)
        self.ctx.checkpoint("replace", path)

    def _carry_again(self, d: Dir, name: str, temp: str, path: str) -> None:
        """The old file's bits or owner changed after its temp was written: carry them again."""
        fd = self.ctx.tree.open(d, temp, READ_FLAGS)
        try:
            st = os.fstat(fd)
            made = self._made.get(temp)
            if made is None or made[2] != st.st_ino:
                raise conflict(path)
            self._give_metadata(fd, st, d, name, path, Probe(FILE, self.ctx.tree.lstat(d, name)),
                                self.ctx.plan.after[path].mode == MODE_EXEC,
                                self.ctx.result.warnings)
        finally:
            os.close(fd)

    def _clear_empty_tree(self, d: Dir, name: str, rel: str) -> None:
        """Remove a folder that holds only empty folders, so a file can take its place."""
        inner = self.ctx.folder(rel)
        if inner is None:
            return
        self.ctx.touched = True
        for entry in self.ctx.tree.listdir(inner):
            if kind_of(self.ctx.tree.lstat(inner, entry)) != DIR:
                raise ConflictError(
                    "is a folder that still holds files that are not in the snapshot "
                    f"({entry}); it cannot become a file", rel)
            self._clear_empty_tree(inner, entry, f"{rel}/{entry}")
        self.ctx.tree.rmdir(d, name)
        self.ctx.tree.forget(rel)



def _new_file_owned_by(d: Dir, uid: int, gid: int, own: tuple[int, int]) -> bool:
    """Whether a file this process (user and group `own`) creates in `d` gets user `uid` and
    group `gid` for sure: it belongs to this process's user and group, or the folder's group,
    and those are one."""
    return uid == own[0] and gid == own[1] == d.st.st_gid


def _meta_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)

"""What the pieces of a checkout share (checkout.py runs them): the plan and its blobs, the
folders open by descriptor, what the restore did so far, and the few steps every piece takes:
find a path's folder (making it, with the recorded owner and bits), check what a path holds,
announce a change, name a temp file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from undostore.errors import ConflictError
from undostore.platform import IS_WINDOWS
from undostore.restore.blobs import BlobSource, Checkpoints
from undostore.restore.diskstate import DiskMatcher, Probe
from undostore.restore.filemeta import Modes, is_root, process_owner, set_bits, set_owner
from undostore.restore.fsops import (
    ABSENT,
    FILE,
    LINK,
    Dir,
    DirTree,
    NotAFolder,
    folder_error,
    kind_of,
)
from undostore.restore.notices import Warn
from undostore.restore.plan import Entry, RestorePlan
from undostore.restore.progress import Reporter
from undostore.restore.syncing import RestoreSync
from undostore.store.moderecord import WrittenFile
from undostore.store.statcache import FINGERPRINT, fingerprint, packed_st_mode


@dataclass
class CheckoutResult:
    # Path -> the fingerprint of its stat once it held the wanted entry, for the stat cache,
    # packed (`FINGERPRINT`: 69 bytes a file, a stat_result's ints ~250); None where the file may
    # have changed since it was written (its stat is then not evidence of its content).
    written: dict[str, bytes | None] = field(default_factory=dict)
    removed_dirs: list[str] = field(default_factory=list)
    made_dirs: list[str] = field(default_factory=list)   # folders the restore created
    warnings: Warn = field(default_factory=list)
    # The user and group of each file of `written` with evidence, where they are not the
    # process's (`own`): an owner root set, a group carried from the old file, or the group of
    # a setgid folder.
    owners: dict[str, tuple[int, int]] = field(default_factory=dict)
    own: tuple[int, int] = field(default_factory=process_owner)
    # The newest ctime the restore's own changes were stamped with, and the devices of every
    # file kept: where that is one device, a file whose times are older than that stamp was
    # stamped in a tick of the file system's clock that is over (cachechoice._racy).
    newest_ctime_ns: int = 0
    devices: set[int] = field(default_factory=set)

    def keep(self, path: str, st: os.stat_result | None, *, changed: bool = True) -> None:
        """`path` holds what the plan wants, as `st` shows it (None: no evidence); `changed`:
        by this restore (not found so already)."""
        if st is None:
            self.written[path] = None
            return
        self.written[path] = FINGERPRINT.pack(*fingerprint(st))
        if (st.st_uid, st.st_gid) != self.own:
            self.owners[path] = (st.st_uid, st.st_gid)
        self.devices.add(st.st_dev)
        if changed and st.st_ctime_ns > self.newest_ctime_ns:
            self.newest_ctime_ns = st.st_ctime_ns

    def last_stamp(self) -> int | None:
        """`newest_ctime_ns` where it tells racy files apart: every file kept on one device, and
        a ctime the kernel set at the change (on Windows it is the creation time)."""
        return self.newest_ctime_ns if len(self.devices) == 1 and not IS_WINDOWS else None

    def written_files(self) -> Iterator[WrittenFile]:
        """Each written file with evidence, with its bits and owner as last seen."""
        for path, seen in self.written.items():
            if seen is not None:
                uid, gid = self.owners.get(path, self.own)
                yield WrittenFile(path, packed_st_mode(seen), uid, gid)


@dataclass(frozen=True)
class Target:
    """What a checkout applies and how it checks the disk against it."""

    plan: RestorePlan
    blobs: BlobSource
    matcher: DiskMatcher
    target_dirs: set[str]                 # the folders of the target tree
    case_insensitive: Callable[[], bool]
    modes: Modes


class Context:
    """One checkout's shared state; made with the open folder tree, closed by the caller."""

    def __init__(self, tree: DirTree, target: Target, prefix: str, checkpoint: Checkpoints,
                 sync: RestoreSync, progress: Reporter, windows: bool) -> None:
        self.tree = tree
        self.plan = target.plan
        self.blobs = target.blobs
        self.matcher = target.matcher
        self.target = target
        self.modes = target.modes
        self.prefix = prefix            # every temp name of this restore starts with it
        self.checkpoint = checkpoint
        self.sync = sync
        self.progress = progress
        self.windows = windows
        self.result = CheckoutResult()
        self.current = ""               # the path being worked on, for error messages
        self.touched = False            # whether anything but this restore's temp names changed
        self.folder_modes: dict[str, int] = {}   # folders made here -> their final bits
        self._temps = 0

    def temp_name(self, kind: str = "") -> str:
        """A fresh temp name of this restore (`kind` "d": a staged folder)."""
        name = f"{self.prefix}{kind}{self._temps}"
        self._temps += 1
        return name

    def before(self, what: str, path: str) -> None:
        """Right before a change a user can see (a name of the plan's replaced, deleted or
        chmod'ed): from here on a failure leaves the restore half-way."""
        self.touched = True
        self.checkpoint.before(what, path)

    def changed(self, d: Dir) -> None:
        self.sync.folder_changed(d)

    def wrote(self, path: str) -> None:
        """A file of the plan is written (to its temp file, or in a staged folder)."""
        if self.progress.active:
            self.progress.advance(1, self.blobs.size(self.plan.after[path].sha))
        self.checkpoint("temp", path)

    def folder(self, rel: str, create: bool = False,
               staged: tuple[str, str] | None = None) -> Dir | None:
        """The real folder `rel` (made, with `create`); None if it is missing, or is a file
        (or the target's link) where the plan only deletes below it. `staged`: (the staged
        copy, the new folder it becomes) when `rel` lies in a staged copy, for the modes of
        the folders made there."""
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
                    self.new_folder(new, staged[1] + new[len(staged[0]):] if staged else None)
        return found

    def new_folder(self, rel: str, final: str | None = None) -> None:
        """A folder the restore made (at `rel`; it becomes `final` once its staged copy is in
        place): its owner and bits as recorded (else the umask default); until the end it
        stays writable by this process (modes.finish_folders)."""
        self.touched = self.touched or final is None   # a real folder, not in a staged copy
        final = final or rel
        self.result.made_dirs.append(final)
        parent = self.tree.folder(rel.rpartition("/")[0])
        if parent is not None:
            self.changed(parent)
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
            self.folder_modes[final] = bits

    def at(self, rel: str, create: bool = False) -> tuple[Dir | None, str, Probe]:
        """(folder, name, what is there now) for the path `rel`."""
        folder, _, name = rel.rpartition("/")
        d = self.folder(folder, create)
        if d is None:
            return None, name, Probe(ABSENT)
        st = self.tree.lstat(d, name)
        return d, name, Probe(kind_of(st), st)

    def holds(self, d: Dir, name: str, path: str, found: Probe, want: Entry) -> bool:
        return self.matcher.holds(path, found, want, (self.tree, d, name))

    def make_writable(self, d: Dir, name: str, found: Probe) -> None:
        """Windows cannot replace or delete a read-only file: clear the flag first."""
        if self.windows and found.st is not None and not found.st.st_mode & stat.S_IWRITE:
            self.touched = True
            os.chmod(os.path.join(d.path, name), stat.S_IWRITE | stat.S_IREAD)

    def unlink_temp(self, path: str, temp: str) -> None:
        try:
            d = self.tree.folder(path.rpartition("/")[0])
            if d is not None:
                self.tree.unlink(d, temp)
        except (OSError, NotAFolder):
            pass


def conflict(path: str) -> ConflictError:
    return ConflictError(
        "changed after the safety snapshot; it was not overwritten and the restore stopped "
        "(the next command finishes it once the file is as before, or run "
        "`undostore restore --abort` to roll back to the safety snapshot)", path)


def mark(st: os.stat_result) -> tuple[int, int, int]:
    """What tells a file written by the restore from one someone wrote since."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def if_unchanged(st: os.stat_result, made: tuple[int, int, int] | None
                 ) -> os.stat_result | None:
    """`st` if the file still shows the mtime, size and inode it had when written (the rename
    or chmod changed only its ctime), else None: someone wrote to it in between."""
    return st if made == mark(st) else None

"""Permission bits, owners and extended attributes of the files a restore writes.

A restore writes a new inode for every file it changes (a temp file renamed into place), so what
the old file carried must be carried over by hand, on descriptors (never by path):

- a file whose content or exec bit changes keeps its other permission bits, its owner and group
  (where this process may set them: root, or a group it belongs to), and its extended attributes
  and ACLs (ACLs are the `system.posix_acl_*` attributes), best effort with a warning for what
  could not be kept;
- setuid and setgid are cleared whenever content or exec bit changes, and never added; the file
  capability attribute (`security.capability`, setuid's modern form) is not carried either;
- exec bits follow the snapshot only where read is allowed (x where r);
- a file or folder re-created gets the bits (and, as root, the owner) recorded when snapshotted
  (store/moderecord.py), else the umask default, never more open than that.
"""

from __future__ import annotations

import errno
import os
import stat

from undostore.platform import IS_WINDOWS
from undostore.restore.notices import Kind, RestoreWarning, Warn
from undostore.store.moderecord import Meta, ModeRecord, current_umask


def process_owner() -> tuple[int, int]:
    """The user and group this process gives the files it makes (where no setgid folder or
    chown says otherwise); (0, 0) on Windows, which keeps no POSIX owners."""
    return (0, 0) if IS_WINDOWS else (os.geteuid(), os.getegid())


def is_root() -> bool:
    """Whether this process may give files away (asked each time: a process may drop root)."""
    return not IS_WINDOWS and os.geteuid() == 0

_HAS_FCHMOD = hasattr(os, "fchmod") and not IS_WINDOWS
_HAS_XATTR = hasattr(os, "listxattr")
_NOT_CARRIED = frozenset({"security.capability"})
_SETID = stat.S_ISUID | stat.S_ISGID



def exec_bits(bits: int, executable: bool) -> int:
    """`bits` with x exactly where r (executable) or with no x at all."""
    bits &= ~0o111
    return bits | ((bits & 0o444) >> 2) if executable else bits


def changed_file_bits(old_mode: int, executable: bool) -> int:
    """Bits of a file whose content or exec bit changes: the old ones without setuid/setgid;
    exec bits per the snapshot (x where r) when the exec state changes, else as they were."""
    bits = stat.S_IMODE(old_mode) & ~_SETID
    if bool(old_mode & stat.S_IXUSR) == executable:
        return bits
    return exec_bits(bits, executable)


class Modes:
    """What a restore gives files and folders it creates: the target's record, else the
    umask default."""

    def __init__(self, record: ModeRecord | None) -> None:
        self.record = record
        self.umask = current_umask()

    def new_file(self, path: str, executable: bool) -> Meta:
        """(bits, uid, gid) for a re-created file; uid/gid -1 where the owner is not set."""
        if self.record is None:
            return (exec_bits(0o666 & ~self.umask, executable), -1, -1)
        bits, uid, gid = self.record.file(path, executable)
        return (exec_bits(stat.S_IMODE(bits) & ~_SETID, executable), uid, gid)

    def new_folder(self, path: str) -> Meta:
        if self.record is None:
            return (0o777 & ~self.umask, -1, -1)
        bits, uid, gid = self.record.folder(path)
        return (stat.S_IMODE(bits) & ~stat.S_ISUID, uid, gid)


def set_owner(fd: int, uid: int, gid: int, have: os.stat_result, path: str, warnings: Warn
              ) -> bool:
    """fchown where it changes something and this process may (root; else the group only);
    whether it was called."""
    if IS_WINDOWS or (uid < 0 and gid < 0):
        return False
    want_uid = uid if uid >= 0 and uid != have.st_uid else -1
    want_gid = gid if gid >= 0 and gid != have.st_gid else -1
    if want_uid < 0 and want_gid < 0:
        return False
    if not is_root() and want_uid >= 0:
        warnings.append(RestoreWarning(
            path, f"owner not kept (uid {uid}): only root can give a file away", Kind.OWNER))
        want_uid = -1
        if want_gid < 0:
            return False
    try:
        os.fchown(fd, want_uid, want_gid)
    except OSError as err:
        warnings.append(RestoreWarning(
            path, f"owner/group not kept ({uid}:{gid}): {err.strerror or err}", Kind.OWNER))
    return True


def set_bits(fd: int, bits: int) -> None:
    if _HAS_FCHMOD:
        os.fchmod(fd, bits)


def copy_xattrs(src: int, dst: int, path: str, warnings: Warn) -> bool:
    """Carry the extended attributes (ACLs included) from one open file to another; whether
    there were any to carry."""
    if not _HAS_XATTR:
        return False
    try:
        names = os.listxattr(src)
    except OSError:
        return False  # a file system without xattrs: nothing to carry
    for name in names:
        if name in _NOT_CARRIED:
            continue
        try:
            os.setxattr(dst, name, os.getxattr(src, name))
        except OSError as err:
            if err.errno == errno.ENODATA:
                continue
            warnings.append(RestoreWarning(
                path, f"extended attribute {name} not kept: {err.strerror or err}", Kind.XATTR))
    return bool(names)


def carry_over(src: int, src_st: os.stat_result, dst: int, dst_st: os.stat_result,
               executable: bool, path: str, warnings: Warn) -> None:
    """Give the new file `dst` (`dst_st` its stat) what the old file `src` carried (see the
    module docstring). Order matters: chown clears setuid, an ACL rewrites group bits; the
    mode goes last, and is set unless `dst` was created with it and nothing came after."""
    if IS_WINDOWS:
        return
    owner = set_owner(dst, src_st.st_uid, src_st.st_gid, dst_st, path, warnings)
    attributes = copy_xattrs(src, dst, path, warnings)
    bits = changed_file_bits(src_st.st_mode, executable)
    if owner or attributes or stat.S_IMODE(dst_st.st_mode) != bits:
        set_bits(dst, bits)
    if src_st.st_mode & _SETID:
        warnings.append(RestoreWarning(
            path, "setuid/setgid cleared: the file's content or exec bit changed", Kind.SETID))

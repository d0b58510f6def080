"""The modes piece of a checkout: exec-bit changes of files whose content stays, and the final
bits of the folders the restore made."""

from __future__ import annotations

import os
import stat

from undostore.git.objects import MODE_EXEC
from undostore.restore.context import Context, conflict, if_unchanged, mark
from undostore.restore.filemeta import changed_file_bits, is_root, set_bits
from undostore.restore.fsops import FILE, READ_FLAGS, ident
from undostore.restore.notices import Kind, RestoreWarning
from undostore.restore.writes import Writes


def chmod(ctx: Context, writes: Writes, path: str) -> None:
    """Give `path` the exec bit the plan wants: on the file itself where it is this process's
    and has one name, else as a new inode (other names keep theirs)."""
    ctx.current = path
    d, name, found = ctx.at(path)
    after = ctx.plan.after[path]
    if d is None or found.kind != FILE:
        raise conflict(path)
    assert found.st is not None
    if ctx.windows:
        # No exec bit on disk: only the content is checked; the stat cache keeps the mode.
        if ctx.matcher.content_id(path, found, (ctx.tree, d, name)) != after.sha:
            raise conflict(path)
        ctx.result.keep(path, found.st, changed=False)
        return
    if ctx.holds(d, name, path, found, after):
        ctx.result.keep(path, found.st, changed=False)  # finishing: already done
        return
    if not ctx.holds(d, name, path, found, ctx.plan.before[path]):
        raise conflict(path)
    executable = after.mode == MODE_EXEC
    ctx.before("chmod", path)
    try:
        fd = ctx.tree.open(d, name, READ_FLAGS)
    except OSError:
        fd = -1  # unreadable here: a new file (the rename needs only the folder)
    if fd >= 0:
        try:
            st = os.fstat(fd)
            if ident(st) != ident(found.st) or not stat.S_ISREG(st.st_mode):
                raise conflict(path)  # another file than the one just checked
            if st.st_nlink == 1 and (is_root() or st.st_uid == os.geteuid()):
                set_bits(fd, changed_file_bits(st.st_mode, executable))
                ctx.sync.changed_in_place(fd)
                if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    ctx.result.warnings.append(RestoreWarning(
                        path, "setuid/setgid cleared: the file's exec bit changed",
                        Kind.SETID))
                done = ctx.tree.lstat(d, name)
                ctx.result.keep(path, if_unchanged(done, mark(st)) if done else None)
                ctx.checkpoint("chmod", path)
                return
        finally:
            os.close(fd)
    # Other names share this inode (or it is not ours to chmod): a new inode instead.
    temp = writes.write_temp(path)
    ctx.sync.before_renames()
    try:
        writes.replace(path, temp)
    except BaseException:
        ctx.unlink_temp(path, temp)
        raise


def finish_folders(ctx: Context) -> None:
    """The folders the restore made get their final bits, deepest first (until now they stayed
    writable by this process, so their files could be written)."""
    for rel, bits in sorted(ctx.folder_modes.items(), key=lambda i: -i[0].count("/")):
        found = ctx.tree.folder(rel)
        if found is not None and found.fd is not None:
            set_bits(found.fd, bits)

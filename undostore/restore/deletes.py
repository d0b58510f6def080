"""The first piece of a checkout: delete the files the plan deletes (each only while it still
holds what the safety snapshot saw), then the folders those deletes emptied."""

from __future__ import annotations

import errno

from undostore.restore.context import Context, conflict
from undostore.restore.fsops import ABSENT, DIR, FILE, LINK, Dir
from undostore.restore.notices import Kind, RestoreWarning


def delete(ctx: Context, path: str) -> None:
    ctx.current = path
    d, name, found = ctx.at(path)
    if d is None or found.kind == ABSENT:
        return  # its folder is gone or became a file, or it is gone: already done
    if found.kind == DIR and path in ctx.target.target_dirs:
        return  # finishing: the file already made way for the folder
    if found.kind in (FILE, LINK) and ctx.holds(d, name, path, found, ctx.plan.before[path]):
        ctx.make_writable(d, name, found)
        ctx.before("delete", path)
        ctx.tree.unlink(d, name)
        ctx.changed(d)
        ctx.checkpoint("delete", path)
        return
    if _other_case_only(ctx, d, name):
        return  # a case-insensitive file system shows the new name's file under the old name
    raise conflict(path)


def _other_case_only(ctx: Context, d: Dir, name: str) -> bool:
    """On a case-insensitive file system: whether `name` itself is absent from its folder
    (what lstat found is a differently cased name the plan creates)."""
    if not ctx.target.case_insensitive():
        return False
    try:
        return name not in ctx.tree.listdir(d)
    except OSError:
        return False


def remove_dir(ctx: Context, folder: str) -> None:
    """Remove a folder the deletes emptied; one that still holds files stays, with a warning
    (snapshots hold no folders, so a folder that stays changes no file)."""
    ctx.current = folder
    d, name, found = ctx.at(folder)
    if d is None or found.kind != DIR:
        return
    ctx.touched = True
    try:
        ctx.tree.rmdir(d, name)
    except FileNotFoundError:
        return
    except OSError as err:
        full = err.errno in (errno.ENOTEMPTY, errno.EEXIST) or \
            getattr(err, "winerror", 0) == 145
        why = ("it still holds files that are not in the snapshot (ignored files)" if full
               else f"it cannot be removed ({err.strerror or err})")
        ctx.result.warnings.append(
            RestoreWarning(folder, f"folder kept: {why}", Kind.FOLDER_KEPT))
        return
    ctx.tree.forget(folder)
    ctx.changed(d)
    ctx.result.removed_dirs.append(folder)
    ctx.checkpoint("rmdir", folder)

"""The staging piece of a checkout: a folder the restore creates is written whole under a temp
name beside where it goes (its files with their own names, no temp file each), made durable,
and renamed into place after an identity check: it appears complete or not at all, and a
staged folder swapped for a symlink is never moved or written through. POSIX only (it needs
folder descriptors)."""

from __future__ import annotations

from undostore.errors import ConflictError
from undostore.restore.context import Context
from undostore.restore.diskstate import Probe
from undostore.restore.fsops import ABSENT, DIR, NotAFolder, folder_error, ident, kind_of
from undostore.restore.plan import parent_dirs
from undostore.restore.writes import Writes


class Staging:
    """The new folders of one checkout, from written to in place."""

    def __init__(self, ctx: Context, writes: Writes) -> None:
        self.ctx = ctx
        self.writes = writes
        self._staged: dict[str, str] = {}   # new folder -> its staged copy, not yet in place

    def new_tops(self, creates: list[str]) -> dict[str, list[str]]:
        """The highest folder missing on the way to each created file -> the files created
        below it, where the plan only creates there (a file it modifies below a missing folder
        is a conflict the normal path reports). Needs folder descriptors (POSIX)."""
        if not self.ctx.tree.use_fds:
            return {}
        exists: dict[str, bool] = {"": True}
        tops: dict[str, list[str]] = {}
        for path in creates:
            top = self._missing_top(path.rpartition("/")[0], exists)
            if top is not None:
                tops.setdefault(top, []).append(path)
        for path in (*self.ctx.plan.modify, *self.ctx.plan.chmod):
            for folder in parent_dirs(path):
                tops.pop(folder, None)
        return tops

    def _missing_top(self, folder: str, exists: dict[str, bool]) -> str | None:
        rel = ""
        for name in folder.split("/") if folder else ():
            rel = f"{rel}/{name}" if rel else name
            known = exists.get(rel)
            if known is None:
                try:
                    known = self.ctx.tree.folder(rel) is not None
                except NotAFolder:
                    return None  # a file or link on the way: the normal path says why
                exists[rel] = known
            if not known:
                return rel
        return None

    def stage_all(self, tops: dict[str, list[str]]) -> None:
        """Write each new folder whole under a temp name, make it all durable, then rename
        each into place: a kill before its rename leaves only a temp folder of the restore."""
        for top, paths in tops.items():
            self._stage(top, paths)
        for staged in self._staged.values():
            self.ctx.sync.staged_written(self.ctx.tree, staged)
        self.ctx.sync.before_renames()
        for top in list(self._staged):
            self._place(top)

    def _stage(self, top: str, paths: list[str]) -> None:
        parent_rel = top.rpartition("/")[0]
        parent = self.ctx.folder(parent_rel)
        assert parent is not None
        self.ctx.current = top
        temp = self.ctx.temp_name("d")
        self.ctx.tree.mkdir(parent, temp, 0o700)
        staged = parent.join(temp)
        self._staged[top] = staged
        self.ctx.changed(parent)
        self.ctx.new_folder(staged, top)
        for path in paths:
            self.ctx.current = path
            folder, _, name = (staged + path[len(top):]).rpartition("/")
            d = self.ctx.folder(folder, create=True, staged=(staged, top))
            assert d is not None
            st, _ = self.writes.write_new(d, name, path, self.ctx.plan.after[path],
                                          Probe(ABSENT), self.ctx.result.warnings)
            self.ctx.result.keep(path, st)
            self.ctx.wrote(path)

    def _place(self, top: str) -> None:
        """Rename the staged copy of `top` into place, never over anything."""
        staged = self._staged[top]
        parent_rel, _, name = top.rpartition("/")
        parent = self.ctx.folder(parent_rel)
        copy = self.ctx.tree.folder(staged)
        assert parent is not None and copy is not None
        self.ctx.current = top
        if self.ctx.tree.lstat(parent, name) is not None:
            raise ConflictError("appeared while the restore ran, where it creates this folder; "
                                "it was not overwritten", top)
        self.ctx.before("replace", top)
        temp = staged.rpartition("/")[2]
        now = self.ctx.tree.lstat(parent, temp)
        if now is None or kind_of(now) != DIR or ident(now) != ident(copy.st):
            raise folder_error(top, kind_of(now), changed=True)  # never moves a stranger's
        self.ctx.tree.replace(parent, temp, name)
        del self._staged[top]
        st = self.ctx.tree.lstat(parent, name)
        if st is None or ident(st) != ident(copy.st):
            raise folder_error(top, kind_of(st), changed=True)
        self.ctx.tree.moved(staged, top)
        self.ctx.changed(parent)
        self.ctx.checkpoint("replace", top)

    def discard(self) -> None:
        """A restore that stopped before renaming them removes its staged folders."""
        if not self._staged:
            return
        for top, staged in list(self._staged.items()):
            parent_rel, _, temp = staged.rpartition("/")
            try:
                parent = self.ctx.tree.folder(parent_rel)
                if parent is not None:
                    self.ctx.tree.remove_tree(parent, temp)
            except (OSError, NotAFolder):
                pass  # left to recovery: the journal names the folder it is in
            del self._staged[top]


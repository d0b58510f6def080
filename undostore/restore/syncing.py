"""Every durability call a restore's checkout makes, in one place: what must be on disk before a
temp file is renamed into place, and before the restore reports done (store/durable.py does
the syncing itself). A change to how a restore makes files durable belongs here alone."""

from __future__ import annotations

import os

from undostore.restore.fsops import Dir, DirTree
from undostore.store.durable import Durability, unwritten_bytes


class RestoreSync:
    """What the checkout tells about its changes, and the points where they must be durable."""

    # A checkout of up to this many files fsyncs each file and folder on its own when more
    # than UNWRITTEN_BYTES wait to be written back: one `syncfs` would wait for all of it (a
    # build's or a download's gigabyte). With less, one `syncfs` is the cheaper (docs/design.md,
    # "Durability").
    EACH_FILE_UP_TO = 32
    UNWRITTEN_BYTES = 8 << 20

    def __init__(self, root: str, durability: Durability | None = None) -> None:
        self.durable = durability or Durability(root)

    @classmethod
    def for_files(cls, root: str, files: int) -> RestoreSync:
        """The durability of a checkout that writes or deletes `files` files."""
        each_file = (files <= cls.EACH_FILE_UP_TO
                     and (unwritten_bytes() or 0) > cls.UNWRITTEN_BYTES)
        return cls(root, Durability(root, each_file=each_file))

    def folder_changed(self, d: Dir) -> None:
        """`d` gained, lost or renamed an entry."""
        self.durable.changed(d.path, d.st.st_dev)

    def file_written(self, fd: int) -> None:
        """A new file (a temp file, or one in a staged folder) is written, not yet closed."""
        if self.durable.fsync_each_file:
            os.fsync(fd)

    def changed_in_place(self, fd: int) -> None:
        """A file's bits or owner changed on its open descriptor `fd` (no rename follows)."""
        self.durable.changed_in_place(fd)

    def staged_written(self, tree: DirTree, staged: str) -> None:
        """A new folder staged whole under the temp name `staged` is written: where files are
        made durable one by one, its folders' entries are too."""
        if not self.durable.fsync_each_file:
            return
        prefix = staged + "/"
        for rel in [r for r in tree.opened() if r == staged or r.startswith(prefix)]:
            found = tree.folder(rel)
            if found is not None and found.fd is not None:
                os.fsync(found.fd)

    def before_renames(self) -> None:
        """Every temp file written so far must be durable before it takes its name."""
        self.durable.flush_files()

    def at_end(self) -> None:
        """Every change of the restore must be durable before its journal goes."""
        self.durable.flush_all()

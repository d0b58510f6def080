"""What a disk still holds after a power cut: the durable half of the power-cut file system.

Every file, folder and symlink gets an id of its own when it appears (never reused, unlike
inode numbers). The live namespace (folder id -> name -> id) follows every operation at once; the
durable one changes only when the program asks for durability, under one of two models:

- `ordered` (ext4 data=ordered, xfs): names, renames and unlinks go into one ordered log, and any
  fsync (of a file or a folder) commits the whole log so far. File bytes are durable only at
  their own file's fsync.
- `strict` (POSIX as written): a folder's entries are durable only once that folder is fsynced
  (a new folder's name only once its parent is); file bytes only at their file's fsync.

A file never fsynced comes back empty (delayed allocation). Permission bits and owner (an
inode's attributes) follow the same rules as names: `ordered` commits them with any fsync,
`strict` only with an fsync of that file or folder. mtimes come back as of the last commit of
the inode. Hard links keep one id under several names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROOT = 0
MODELS = ("ordered", "strict")


@dataclass
class Node:
    kind: str                     # "d" folder, "f" file, "l" symlink
    target: str = ""              # a symlink's target
    mode: int = 0o644
    uid: int = -1
    gid: int = -1
    mtime_ns: int = 0


@dataclass
class Disk:
    """The namespace (live and durable), the durable bytes, and the cut switch."""

    model: str
    nodes: dict[int, Node] = field(default_factory=dict)
    live: dict[int, dict[str, int]] = field(default_factory=dict)
    durable: dict[int, dict[str, int]] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)        # durable bytes of files
    log: list[tuple[int, str, int | None]] = field(default_factory=list)  # ordered: uncommitted
    attrs: dict[int, Node] = field(default_factory=dict)   # attributes changed, not committed
    events: int = 0               # fsyncs seen (of files and folders)
    freeze_after: int | None = None
    frozen: bool = False
    _next: int = 1

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}")
        self.nodes.setdefault(ROOT, Node("d", mode=0o755))
        self.live.setdefault(ROOT, {})
        self.durable.setdefault(ROOT, {})

    # --- the live namespace -----

    def lookup(self, path: str) -> int | None:
        """The id at `path` ("/a/b"), or None."""
        current = ROOT
        for name in path.strip("/").split("/") if path.strip("/") else ():
            entries = self.live.get(current)
            if entries is None or name not in entries:
                return None
            current = entries[name]
        return current

    def parent_and_name(self, path: str) -> tuple[int, str]:
        folder, _, name = path.rstrip("/").rpartition("/")
        parent = self.lookup(folder or "/")
        if parent is None:
            raise FileNotFoundError(path)
        return parent, name

    def new(self, node: Node) -> int:
        """A new id for `node` (a folder gets empty entry lists, live and durable)."""
        ident = self._next
        self._next += 1
        self.nodes[ident] = node
        if node.kind == "d":
            self.live[ident] = {}
            self.durable[ident] = {}   # its entries become durable as they are committed
        return ident

    def set_entry(self, parent: int, name: str, ident: int | None, at_mount: bool = False) -> None:
        """Point `parent`/`name` at `ident` (None: remove the name) in the live namespace."""
        if ident is None:
            self.live[parent].pop(name, None)
        else:
            self.live[parent][name] = ident
        if at_mount:
            self._apply(parent, name, ident)
        elif self.model == "ordered":
            self.log.append((parent, name, ident))

    def _apply(self, parent: int, name: str, ident: int | None) -> None:
        entries = self.durable.setdefault(parent, {})
        if ident is None:
            entries.pop(name, None)
        else:
            entries[name] = ident

    # --- durability -----

    def changed_attrs(self, ident: int, node: Node) -> None:
        """`ident`'s bits or owner changed (live): durable at its commit."""
        self.attrs[ident] = node

    def fsync_file(self, ident: int, content: bytes, node: Node) -> None:
        if not self.frozen:
            self.data[ident] = content
            self.attrs.pop(ident, None)
            self._keep_attrs(ident, node)
            if self.model == "ordered":
                self._commit_log()
        self._event()

    def fsync_folder(self, ident: int) -> None:
        if not self.frozen:
            if self.model == "ordered":
                self._commit_log()
            else:
                self.durable[ident] = dict(self.live.get(ident, {}))
                if ident in self.attrs:
                    self._keep_attrs(ident, self.attrs.pop(ident))
        self._event()

    def _commit_log(self) -> None:
        for parent, name, ident in self.log:
            self._apply(parent, name, ident)
        self.log.clear()
        for ident, node in self.attrs.items():
            self._keep_attrs(ident, node)
        self.attrs.clear()

    def _keep_attrs(self, ident: int, node: Node) -> None:
        known = self.nodes[ident]
        known.mode, known.uid, known.gid, known.mtime_ns = (node.mode, node.uid, node.gid,
                                                            node.mtime_ns)

    def _event(self) -> None:
        self.events += 1
        if self.freeze_after is not None and self.events >= self.freeze_after:
            self.frozen = True

    def arm(self, after: int) -> None:
        """Cut after the `after`-th fsync counted since mount (at once if already past it)."""
        self.freeze_after = after
        if self.events >= after:
            self.frozen = True

    # --- what comes back -----

    def surviving(self) -> list[tuple[str, int]]:
        """(path, id) of everything the durable namespace reaches, parents first."""
        found: list[tuple[str, int]] = []
        stack: list[tuple[str, int]] = [("", ROOT)]
        seen_dirs = {ROOT}
        while stack:
            prefix, folder = stack.pop()
            for name, ident in sorted(self.durable.get(folder, {}).items()):
                path = f"{prefix}/{name}"
                found.append((path, ident))
                if self.nodes[ident].kind == "d" and ident not in seen_dirs:
                    seen_dirs.add(ident)
                    stack.append((path, ident))
        found.sort(key=lambda item: item[0].count("/"))
        return found

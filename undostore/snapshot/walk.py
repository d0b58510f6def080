"""The directory walk: every file and symlink under root that git would not ignore.

The walk asks `ignore.IgnoreRules` about each entry once and never descends into an ignored
folder (a 50,000-file `node_modules/` costs one regex call), skips `.git` at every depth and the
store when it lies under root, records symlinks without following them, and reports special files
(fifos, sockets, devices) through `on_warning` instead of reading them.

Folders that did not change are not read again (git's untracked cache): with
`WalkOptions.known`, a folder whose stamp (its own stat data, its `.gitignore`'s, and for the
root the digest of the ignore sources outside the tree) equals the one recorded when its listing
was last read, with every `.gitignore` above it unchanged too, keeps that listing: no `scandir`,
no ignore matching, one `lstat` per file it holds. Creating, deleting or renaming an entry
changes a folder's mtime (POSIX, and NTFS on Windows); a stamp taken too close to the save that
recorded it, or on a file system with whole-second times, is not trusted (`trusted_stamp`). The
ignore files are read and compiled only for a folder whose listing is read (`FolderRules`).

`threads > 1` scans folders in a thread pool: it pays when directory reads wait on the disk (a
cold cache, a network file system) and costs time on a warm cache, where the GIL serialises the
work anyway. `benchmarks/bench_walk.py` measures both.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

from undostore.errors import (
    SnapshotError,
    TooManyFilesError,
    TreeMovedError,
    from_oserror,
    is_unreadable,
)
from undostore.fileio import TEMP_PREFIX
from undostore.limits import DEFAULT_LIMITS
from undostore.platform import IS_WINDOWS, is_junction
from undostore.snapshot.ignore import (
    IgnoreRules,
    ignore_fingerprint,
    read_ignore_file,
    root_rules,
)
from undostore.store.statcache import (
    ENTRY,
    FINGERPRINT,
    coarse_times,
    fingerprint,
    join_names,
    split_names,
)

S_ISREG = stat.S_ISREG
S_ISLNK = stat.S_ISLNK

KIND_FILE = "file"
KIND_LINK = "link"


class FileStat(NamedTuple):
    """What a snapshot uses of a file's lstat (the names `os.stat_result` gives them)."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_ctime_ns: int
    st_ino: int
    st_uid: int
    st_gid: int


_FILE_STAT = struct.Struct("<IqqqQqq")


class FileEntry(NamedTuple):
    """A file or symlink found by the walk, to be hashed: a tuple of strings and bytes (no
    object graph), its folder's prefix shared with the folder's other files and its lstat
    packed (~90 bytes, against ~640 for an `os.stat_result`): a first snapshot holds one per
    file until hashing. Made by `file_entry`."""

    name: str
    prefix: str               # the folder's path and '/', '' at the root
    kind: str                 # KIND_FILE or KIND_LINK
    packed: bytes             # `_FILE_STAT`

    @property
    def path(self) -> str:
        """Relative to root, '/'-separated."""
        return self.prefix + self.name

    @property
    def st(self) -> FileStat:
        return FileStat(*_FILE_STAT.unpack(self.packed))


def file_entry(name: str, prefix: str, kind: str, st: os.stat_result | FileStat) -> FileEntry:
    return FileEntry(name, prefix, kind, _FILE_STAT.pack(
        st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_uid, st.st_gid))


class Folder:
    """One folder's kept entries; `subdirs` are names of sub-folders that were walked.

    With a matcher (`WalkOptions.matcher_for`), `names` lists every kept file in walk order and
    `files` only those the matcher did not vouch for: a file the stat cache already knows
    leaves nothing behind (a 40,000-file folder then holds no stat result per file).

    A plain class, not a dataclass: the snapshot path's records are made without generated
    code (docs/design.md, "Start-up")."""

    __slots__ = ("path", "files", "subdirs", "names", "stamp", "joined", "relisted", "ignored",
                 "seen")

    def __init__(self, path: str, files: list[FileEntry] | None = None,
                 subdirs: list[str] | None = None, names: list[str] | None = None,
                 stamp: bytes | None = None, joined: str | None = None,
                 relisted: bool = False, ignored: str | None = None) -> None:
        self.path = path              # relative to root, '' for the root itself
        self.files: list[FileEntry] = [] if files is None else files
        self.subdirs: list[str] = [] if subdirs is None else subdirs
        self.names = names
        self.stamp = stamp            # see `folder_stamp`; None: the listing is not to be reused
        self.joined = joined          # a reused listing's names as recorded (files, then folders)
        self.relisted = relisted      # reused though its own stat moved (a chmod, say): _visit
        self.ignored = ignored        # with a stamp: the names found ignored (`Known.ignored`)
        self.seen = b""               # its stat before it was read (`unsettled`); b"": none

    def __repr__(self) -> str:
        return f"Folder({self.path!r}, {self.count} files, {len(self.subdirs)} folders)"

    @property
    def count(self) -> int:
        """Kept files in the folder."""
        return len(self.names) if self.names is not None else len(self.files)


Warn = Callable[[str, str], None]
# Whether what the stat cache knows of a file (by name, in one folder) still holds for `st`.
Matcher = Callable[[str, os.stat_result], bool]


class Known(NamedTuple):
    """A folder's listing as last read: its stamp then, its kept files and walked folders
    (`joined`: both, NUL-joined, as recorded), and when the cache holds an entry for each file
    in that order, those entries (statcache.ENTRY each, the stat fingerprint first); `ignored`:
    the names that listing found ignored, NUL-joined, a folder's ending in '/' (None: not
    recorded), taken as ignored again while the rules the stamp vouches for hold."""

    stamp: bytes
    files: Sequence[str]
    subdirs: list[str]
    joined: str
    entries: bytes | None = None
    ignored: str | None = None




# --- folder stamps --------------------------------------------------------------------------
# A stamp is the folder's stat data, then its `.gitignore`'s (absent, or unknown), then for the
# root the digest of the ignore sources outside the tree (ignore.ignore_fingerprint).
PART = FINGERPRINT.size           # mtime_ns, ctime_ns, size, inode, st_mode
UNTRUSTED = bytes(PART)           # a folder part that matches no folder
NO_FILE = bytes(PART)             # no `.gitignore` (in the second part)
UNKNOWN = b"\xff" * PART          # a `.gitignore` whose stat proved nothing (racy)


def stat_part(st: os.stat_result) -> bytes:
    return FINGERPRINT.pack(*fingerprint(st))   # folders keep to the files' rule


def folder_stamp(folder_part: bytes, gitignore_st: os.stat_result | None) -> bytes:
    """The stamp of a folder from its lstat's part (`stat_part`, taken before its listing is
    read) and its `.gitignore`'s lstat (None: absent)."""
    return folder_part + (NO_FILE if gitignore_st is None else stat_part(gitignore_st))


def trusted_stamp(stamp: bytes, is_racy: Callable[[int, int], bool]) -> bytes:
    """`stamp` as it may be saved: a folder part taken too close to the save (`is_racy(mtime,
    ctime)`: a change in the same clock tick would not show) or with whole-second times
    (`coarse_times`: FAT and others may not move a folder's time at all) cannot vouch for the
    listing; a racy `.gitignore` part is UNKNOWN (the folders below are read again)."""
    mtime, ctime = struct.unpack_from("<qq", stamp)
    if coarse_times(mtime, ctime) or is_racy(mtime, ctime):
        stamp = UNTRUSTED + stamp[PART:]
    ignore_part = stamp[PART:2 * PART]
    if ignore_part not in (NO_FILE, UNKNOWN):
        mtime, ctime = struct.unpack_from("<qq", ignore_part)
        if is_racy(mtime, ctime):
            stamp = stamp[:PART] + UNKNOWN + stamp[2 * PART:]
    return stamp


def untrusted_listing(stamp: bytes) -> bytes:
    """`stamp` with its folder part UNTRUSTED: the listing is read again, while the parts of
    its `.gitignore` (and the root's ignore digest) still tell whether the rules below held."""
    return UNTRUSTED + stamp[PART:]


class FolderRules:
    """The ignore rules in force inside one folder: those it inherits and its own `.gitignore`,
    read and compiled only when a listing needs them. The one rules object of every walk: a
    full one, one from cached listings, and watchman's partial scan (snapshot.changes)."""

    __slots__ = ("_root", "_parent", "_folder", "_gitignore", "_rules")

    def __init__(self, root: str, parent: FolderRules | None, folder: str,
                 gitignore: os.stat_result | None | bool) -> None:
        self._root, self._parent, self._folder = root, parent, folder
        self._gitignore = gitignore      # its lstat, None (absent) or True (not looked at yet)
        self._rules: IgnoreRules | None = None

    @classmethod
    def outside(cls, root: str) -> FolderRules:
        """The rules the root folder inherits: info/exclude, the global excludes file and
        `.undostoreignore` (ignore.root_rules), before any `.gitignore` of the tree."""
        return cls(root, None, "", None)

    def inside(self, folder: str, gitignore: os.stat_result | None | bool = True
               ) -> FolderRules:
        """The rules inside `folder` (one these rules apply to), its own `.gitignore` on top:
        `gitignore` is that file's lstat, None when it is absent, True to look when needed."""
        return FolderRules(self._root, self, folder, gitignore)

    def get(self) -> IgnoreRules:
        rules = self._rules
        if rules is None:
            inherited = self._parent.get() if self._parent is not None else root_rules(self._root)
            ignore_st = self._gitignore
            if ignore_st is not None:
                path = os.path.join(disk_path(self._root, self._folder), ".gitignore")
                if ignore_st is True:
                    ignore_st = _lstat_or_none(path)
                # git reads a regular file only, never through a link.
                if ignore_st is not None and S_ISREG(ignore_st.st_mode):  # type: ignore[union-attr]
                    own = read_ignore_file(path, base=self._folder, follow_symlinks=False)
                    inherited = inherited.with_folder_file(own)
            rules = self._rules = inherited
        return rules


class ToVisit(NamedTuple):
    """A folder the walk has yet to read: its path, the rules its parent passes down, and
    whether those are the rules its cached listing was read under (a walk from `known`)."""

    path: str
    rules: FolderRules
    same: bool = False


def _below(folder: Folder, rules: FolderRules, same: bool) -> list[ToVisit]:
    """The sub-folders of `folder` to walk, each handed `rules` (the folder's own)."""
    prefix = folder.path + "/" if folder.path else ""
    return [ToVisit(prefix + name, rules, same) for name in folder.subdirs]


def _lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def ignore_warning(path: str, message: str) -> None:
    pass


class WalkOptions(NamedTuple):
    threads: int = 1
    max_files: int = 1_000_000
    skip_dirs: frozenset[str] = frozenset()   # paths relative to root never entered (the store)
    on_warning: Warn = ignore_warning
    matcher_for: Callable[[str], Matcher | None] | None = None   # per folder path (see Folder)
    known: Callable[[str], Known | None] | None = None   # listings last read (module docstring)
    # Files left out because hashing could not read them: folder -> {name: the system's reason}
    # (snapshot.take_snapshot fills it in when it takes the tree again).
    unreadable: Mapping[str, Mapping[str, str]] = {}
    # False where folder times cannot vouch for a listing (FUSE: object-store mounts such as
    # s3fs and gcsfuse never move them): each listing is read again, by name at least.
    trust_listings: bool = True
    # (folder, chunk, its files) -> whether a second process found each file of that chunk of
    # the folder's files (`chunk_files` a chunk, in order) unchanged (lstatsplit.py): asked
    # only of a folder whose listing the walk found unchanged itself.
    vouched: Callable[[str, int, int], bool] | None = None
    chunk_files: int = DEFAULT_LIMITS.split_chunk_files


def disk_path(root: str, rel: str) -> str:
    """The path on disk of `rel` ('/'-separated, relative to root), in the system's spelling."""
    if not rel:
        return root
    if IS_WINDOWS:
        return os.path.join(root, rel.replace("/", os.sep))
    return root + "/" + rel if root and not root.endswith("/") else root + rel


def read_folder(root: str, item: ToVisit, options: WalkOptions
                ) -> tuple[Folder, list[ToVisit]]:
    """Read one folder from disk: its kept files, and the sub-folders to walk."""
    rel = item.path
    disk = disk_path(root, rel)
    try:
        seen = stat_part(os.lstat(disk))   # before the listing: `unsettled` looks again
    except OSError as err:
        if is_unreadable(err):
            return _left_out(rel, err, options), []
        raise _read_error(err, "read folder", disk) from err
    # Ask for .gitignore by name (one lstat) rather than listing the folder first: the listing
    # is then read as it comes, so a huge folder's entries (each holding its stat result once
    # asked) are never all held at once.
    own = item.rules.inside(rel, _lstat_or_none(os.path.join(disk, ".gitignore")))
    folder = Folder(rel)
    folder.seen = seen
    _read_listing(disk, rel, own.get(), folder, options)
    return folder, _below(folder, own, False)


def _read_listing(disk: str, rel: str, rules: IgnoreRules, folder: Folder,
                  options: WalkOptions, ignored: list[str] | None = None) -> None:
    """List `folder` from disk under `rules`; the names found ignored go to `ignored` (a
    folder's with a trailing '/'), when given."""
    match = options.matcher_for(rel) if options.matcher_for is not None else None
    if match is not None:
        folder.names = []
    try:
        listing = os.scandir(disk)
    except OSError as err:
        if is_unreadable(err):
            _left_out(rel, err, options, folder)
            return
        raise _read_error(err, "read folder", disk) from err
    with listing:
        _scan_entries(listing, disk, rel + "/" if rel else "",
                      rules.is_ignored if rules else None,  # most folders have no rules at all
                      folder, match, options, ignored)


def _visit(root: str, item: ToVisit, options: WalkOptions) -> tuple[Folder, list[ToVisit]]:
    """One folder of a walk with `options.known`: its cached listing when its stamp and the
    rules above it (`item.same`) are unchanged, else read from disk. Sub-folders come back
    with their rules (unread yet) and whether those are unchanged as well."""
    rel = item.path
    disk = disk_path(root, rel)
    try:
        folder_st = os.lstat(disk)   # before the listing: a change after it shows next time
    except OSError as err:
        if is_unreadable(err):
            return _left_out(rel, err, options), []
        raise _read_error(err, "read folder", disk) from err
    if not stat.S_ISDIR(folder_st.st_mode):
        raise TreeMovedError("a folder was replaced while being captured", disk, (rel,))
    known = options.known(rel) if options.known is not None else None   # type: ignore[misc]
    if known is not None and rel in options.unreadable:
        known = None   # listed again, so the files that could not be read are left out
    same, digest = item.same, b""
    if not rel:   # the root's stamp ends with the digest of the ignore sources outside
        digest = ignore_fingerprint(root)
        same = known is not None and known.stamp[2 * PART:] == digest
    seen = stat_part(folder_st)
    folder, below = _visit_listed(rel, item.rules, same, known, options, digest, disk, seen)
    folder.seen = seen
    return folder, below


def _visit_listed(rel: str, inherited: FolderRules, same: bool, known: Known | None,
                  options: WalkOptions, digest: bytes, disk: str, seen: bytes
                  ) -> tuple[Folder, list[ToVisit]]:
    """`_visit` once the folder's own lstat is taken (`seen`: its part of the stamp) and its
    cached listing looked up."""
    old_ignore = known.stamp[PART:2 * PART] if known is not None else UNKNOWN
    ignore_path = os.path.join(disk, ".gitignore")
    if (same and known is not None and old_ignore != UNKNOWN and options.trust_listings
            and known.stamp[:PART] != UNTRUSTED and known.stamp[:PART] == seen):
        # The folder unchanged means no `.gitignore` appeared in it: only one there is stat'ed.
        ignore_st = _lstat_or_none(ignore_path) if old_ignore != NO_FILE else None
        stamp = folder_stamp(seen, ignore_st) + digest
        if stamp == known.stamp:
            folder = _reuse(disk, rel, known, options, listing_held=True)
            if folder is not None:
                folder.stamp = stamp
                return folder, _below(folder, inherited.inside(rel, ignore_st), True)
    else:
        ignore_st = _lstat_or_none(ignore_path)
    stamp = folder_stamp(seen, ignore_st) + digest
    own = inherited.inside(rel, ignore_st)
    # The rules below are those of last time if the rules here are and `.gitignore` is too.
    below = same and stamp[PART:2 * PART] == old_ignore
    prefix = rel + "/" if rel else ""
    ignored = (_same_names(disk, prefix, known, own, options)
               if below and known is not None and _RELIST else None)
    if ignored is not None:
        # Its names read again; a second process's answers serve where its own stat has not
        # moved either (folder times that never move: a moved one may mean a file renamed over).
        held = known is not None and known.stamp[:PART] == seen
        folder = _reuse(disk, rel, known, options, listing_held=held)   # type: ignore[arg-type]
        if folder is not None:
            folder.stamp = stamp
            folder.relisted = True
            folder.ignored = ignored
            return folder, _below(folder, own, True)
    folder = Folder(rel, stamp=stamp)
    found: list[str] = []
    _read_listing(disk, rel, own.get(), folder, options, found)
    folder.ignored = join_names(found)
    return folder, _below(folder, own, below)


# How a warning for an entry left out as unreadable begins (the hook counts them by it).
LEFT_OUT = "skipped: cannot read this"


def _left_out(rel: str, err: OSError, options: WalkOptions, folder: Folder | None = None
              ) -> Folder:
    """A folder this user cannot read (no permission, a path too long for the system), left
    out with a warning naming it: the rest of the tree is still captured. Its listing is never
    reused, so the next walk tries it again (and warns again)."""
    options.on_warning(rel or ".", f"{LEFT_OUT} folder ({err.strerror or err})")
    folder = folder if folder is not None else Folder(rel)
    folder.files.clear()
    folder.subdirs.clear()
    if folder.names is not None:
        folder.names.clear()
    folder.stamp = None
    return folder


def _read_error(err: OSError, action: str, path: str) -> SnapshotError:
    """The error for a folder that could not be read: one that vanished (or became a file)
    while the walk ran is TreeMovedError, which the snapshot takes again."""
    if isinstance(err, (FileNotFoundError, NotADirectoryError)):
        return TreeMovedError(f"{'folder' if action == 'read folder' else 'entry'} vanished "
                              "while being captured", path)
    return from_oserror(err, action, path)  # type: ignore[return-value]


def seen_now(root: str, rel: str) -> bytes:
    """A folder's stat as `Folder.seen` keeps it, taken now (b"": it could not be taken)."""
    try:
        return stat_part(os.lstat(disk_path(root, rel)))
    except OSError:
        return b""


def unsettled(root: str, seen: list[tuple[str, bytes]]) -> list[str]:
    """The folders (relative paths) whose stat moved since the walk read them (`Folder.seen`):
    an entry added, removed or renamed meanwhile, so what the walk saw may be a state that
    never existed. One lstat each."""
    return [rel for rel, before in seen if before and seen_now(root, rel) != before]


_RELIST = not IS_WINDOWS   # there a junction may look like a folder in a bare listing


def _same_names(disk: str, prefix: str, known: Known, rules: FolderRules, options: WalkOptions
                ) -> str | None:
    """Whether a folder whose own stat moved (files renamed over, an ignored file written:
    a restore edits every folder it writes in, a build rewrites its outputs) still keeps what
    `known` kept, with the rules unchanged: listed again by name and type only (no stat, no
    file entries), each kept file still there (whether it is still a file, its own lstat
    after tells), each walked folder still a folder, every other name ignored: one `known`
    found ignored is so again (the rules are those it was matched under), any other is
    matched. Returns the names found ignored
    (NUL-joined, as `Known.ignored`): its known listing then serves, each file lstat-ed as in
    `_reuse`; None on any doubt (a temp name, an error): the folder is read the usual way,
    which says why."""
    files, subdirs = set(known.files), set(known.subdirs)
    memo = frozenset(split_names(known.ignored)) if known.ignored else frozenset()
    ignored: list[str] = []
    seen = 0
    try:
        with os.scandir(disk) as listing:
            for entry in listing:
                name = entry.name
                if name in files:
                    # Not asked its type: its own lstat after (here, or the second process's)
                    # tells a file from what took its name. Where the listing gives no types
                    # (FUSE without d_type), asking would lstat every file a second time.
                    seen += 1
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and name in subdirs:
                    seen += 1
                    continue
                if name == ".git" or (is_dir and prefix + name in options.skip_dirs):
                    continue
                key = name + "/" if is_dir else name
                if key not in memo:
                    if name.startswith(TEMP_PREFIX):
                        return None
                    compiled = rules.get()
                    if not (compiled and compiled.is_ignored(prefix + name, is_dir)):
                        return None
                ignored.append(key)
    except OSError:
        return None
    return join_names(ignored) if seen == len(files) + len(subdirs) else None


def _reuse(disk: str, rel: str, known: Known, options: WalkOptions, listing_held: bool = False
           ) -> Folder | None:
    """The folder from its cached listing, each file lstat-ed (None: a file is gone or changed
    type after the folder's stat was taken; the folder is then read), or, where the walk
    found the listing itself unchanged (`listing_held`: its stamp held, or its names were read
    again and its own stat is the recorded one), vouched for by a second process
    (`WalkOptions.vouched`)."""
    folder = Folder(rel, subdirs=list(known.subdirs), names=list(known.files), joined=known.joined,
                    ignored=known.ignored)
    entries = known.entries
    vouched = options.vouched if listing_held and entries is not None else None
    count = len(known.files)
    if vouched is not None and count <= options.chunk_files and vouched(rel, 0, count):
        return folder   # one chunk: not even opened
    match = (options.matcher_for(rel) if options.matcher_for is not None and entries is None
             else None)
    prefix = rel + "/" if rel else ""
    if not _STAT_AT:   # Windows: no `dir_fd`
        return _reused_files(folder, known, disk + os.sep, None, match, prefix)
    try:
        fd = os.open(disk, FOLDER_FLAGS)
    except OSError:
        return None   # changed since its stat (a symlink now, gone): read it the usual way
    try:   # each name looked up in the open folder: no path walk from the root per file
        if entries is not None:
            return _unchanged_files(folder, known, fd, prefix,
                                    vouched if count > options.chunk_files else None,
                                    options.chunk_files)
        return _reused_files(folder, known, "", fd, match, prefix)
    finally:
        os.close(fd)


_STAT_AT = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
FOLDER_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))


def pack_stats(now: bytearray, names: Sequence[str], fd: int, offset: int) -> None:
    """Each file of `names` lstat-ed in the open folder `fd`, its stat packed over its entry in
    `now` from `offset` on (the bytes of `stat_part`; an error raised as it comes). This loop
    runs once per file of an unchanged tree (the no-change snapshot's floor is its `lstat`), so
    it makes no object per file but the stat result."""
    pack_into = FINGERPRINT.pack_into
    lstat = os.lstat
    step = ENTRY.size
    for name in names:
        st = lstat(name, dir_fd=fd)
        pack_into(now, offset, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino,
                  st.st_mode)
        offset += step


def _unchanged_files(folder: Folder, known: Known, fd: int, prefix: str,
                     vouched: Callable[[str, int, int], bool] | None = None,
                     chunk_files: int = 0) -> Folder | None:
    """`_reused_files` where the cache holds each file's entry in order (`known.entries`) and
    the system has `dir_fd`: every file's stat now is packed over a copy of the entries, and
    the two compared once; with `vouched`, a chunk of files a second process found unchanged
    is left as its entries (`chunk_files` a chunk). The files whose part differs are stat-ed
    again and go to be hashed."""
    entries = known.entries
    now = bytearray(entries)   # type: ignore[arg-type]
    names = known.files
    lstat = os.lstat
    step = ENTRY.size
    try:
        if vouched is None:
            pack_stats(now, names, fd, 0)
        else:
            for chunk, start in enumerate(range(0, len(names), chunk_files)):
                part = names[start:start + chunk_files]
                if not vouched(folder.path, chunk, len(part)):
                    pack_stats(now, part, fd, start * step)
    except OSError:
        return None   # gone or changed type after the folder's stat: the folder is read
    if now == entries:
        return folder
    files = folder.files
    for index, name in enumerate(known.files):
        at = index * step
        if now[at:at + PART] == entries[at:at + PART]:   # type: ignore[index]
            continue
        try:
            changed = _to_hash(name, prefix, lstat(name, dir_fd=fd))
        except OSError:
            return None
        if changed is None:
            return None
        files.append(changed)
    return folder


def _reused_files(folder: Folder, known: Known, base: str, fd: int | None,
                  match: Matcher | None, prefix: str) -> Folder | None:
    """`_reuse`'s loop: each cached file lstat-ed (`base + name`, in the open folder `fd` where
    the system has `dir_fd`) and compared with its entry."""
    entries = known.entries
    files = folder.files
    pack = FINGERPRINT.pack
    lstat = os.lstat   # called directly, not through a partial (docs/design.md)
    windows = IS_WINDOWS
    offset = 0
    for name in known.files:
        try:
            st = lstat(base + name, dir_fd=fd)
        except OSError:
            return None
        mode = st.st_mode
        if entries is not None:
            # This loop runs once per file of an unchanged tree: the entry's fingerprint is
            # compared in place (the same bytes `stat_part` makes).
            same = entries[offset:offset + PART] == pack(
                st.st_mtime_ns, st.st_ctime_ns, st.st_size, 0 if windows else st.st_ino, mode)
            offset += ENTRY.size
            if same:
                continue
        elif match is not None and match(name, st):
            continue
        changed = _to_hash(name, prefix, st)
        if changed is None:
            return None
        files.append(changed)
    return folder


def _to_hash(name: str, prefix: str, st: os.stat_result) -> FileEntry | None:
    """A file of a reused listing whose stat no longer matches its entry, to be hashed; None
    when it is no longer a regular file or a symlink (the folder is then read)."""
    if S_ISREG(st.st_mode):
        return file_entry(name, prefix, KIND_FILE, st)
    if S_ISLNK(st.st_mode):
        return file_entry(name, prefix, KIND_LINK, st)
    return None


def _scan_entries(listing: Iterator[os.DirEntry[str]], disk: str, prefix: str,
                  is_ignored: Callable[[str, bool], bool] | None, folder: Folder,
                  match: Matcher | None, options: WalkOptions,
                  ignored: list[str] | None = None) -> None:
    """The loop of `read_folder` over one listing, read as it comes."""
    skip_dirs = options.skip_dirs
    files = folder.files
    names = folder.names
    unreadable = options.unreadable.get(folder.path) if options.unreadable else None
    entries = iter(listing)
    # This loop runs once per file of the tree: it is kept free of calls that are not needed.
    while True:
        try:
            entry = next(entries)
        except StopIteration:
            return
        except OSError as err:
            raise _read_error(err, "read folder", disk) from err
        name = entry.name
        if name == ".git":
            continue  # never capture any repository's own database
        path = prefix + name
        try:
            # d_type answers this without a system call; a symlink to a folder is not a folder.
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as err:
            raise _read_error(err, "inspect", os.path.join(disk, name)) from err
        if is_dir:
            if path in skip_dirs:
                continue
            if is_ignored and is_ignored(path, True):
                if ignored is not None:
                    ignored.append(name + "/")
                continue
            if name.startswith(TEMP_PREFIX):   # a new folder a restore stages whole
                options.on_warning(path, "skipped: an undostore temp folder")
                folder.stamp = None   # a listing that warns is read again (and warns again)
                continue
            if is_junction(entry):
                options.on_warning(path, "skipped: a junction (never followed)")
                folder.stamp = None
                continue
            folder.subdirs.append(name)
            continue
        if is_ignored and is_ignored(path, False):
            if ignored is not None:
                ignored.append(name)
            continue
        if name.startswith(TEMP_PREFIX):   # undostore's own: never part of a state
            options.on_warning(path, "skipped: an undostore temp file")
            folder.stamp = None
            continue
        if unreadable and name in unreadable:
            options.on_warning(path, f"{LEFT_OUT} file ({unreadable[name]})")
            folder.stamp = None
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # vanished between listing and stat: it is not part of this state
        except OSError as err:
            if is_unreadable(err):
                options.on_warning(path, f"{LEFT_OUT} file ({err.strerror})")
                folder.stamp = None
                continue
            raise from_oserror(err, "stat", os.path.join(disk, name)) from err
        if S_ISREG(st.st_mode):
            kind = KIND_FILE
        elif S_ISLNK(st.st_mode):
            kind = KIND_LINK
        else:
            options.on_warning(path, "skipped: not a regular file or symlink")
            folder.stamp = None
            continue
        if names is not None:
            names.append(name)
            if match(name, st):  # type: ignore[misc]
                continue
        files.append(file_entry(name, prefix, kind, st))


def walk(root: str, options: WalkOptions | None = None) -> list[Folder]:
    """All folders under `root` that git would look into, each with the files it keeps."""
    options = options or WalkOptions()
    if options.threads <= 1:
        return list(iter_walk(root, options))
    _check_root(root)
    return _walk_threaded(root, options)


def iter_walk(root: str, options: WalkOptions | None = None) -> Iterable[Folder]:
    """As `walk`, but one folder at a time when walking on one thread, so a caller that keeps
    little per folder never holds the whole tree's stat results at once. With
    `options.known`, a folder whose listing the file system proves unchanged is not read."""
    options = options or WalkOptions()
    if options.threads > 1:
        return walk(root, options)
    _check_root(root)
    first = ToVisit("", FolderRules.outside(root))
    return _folders(root, first, read_folder if options.known is None else _visit, options)


def walk_below(root: str, top: ToVisit, options: WalkOptions) -> Iterator[Folder]:
    """The folder `top` and every one below it, read from disk (a folder new since the
    listings `options.known` holds)."""
    return _folders(root, top, read_folder, options)


def _check_root(root: str) -> None:
    if not os.path.isdir(root):
        raise SnapshotError("not a folder", root)


Read = Callable[[str, ToVisit, WalkOptions], tuple[Folder, list[ToVisit]]]


def _folders(root: str, first: ToVisit, read: Read, options: WalkOptions) -> Iterator[Folder]:
    """The walk: folders taken from a stack, each `read` (from disk, or from its cached
    listing) and its sub-folders pushed, until the stack is empty or the files counted pass
    `options.max_files`."""
    stack = [first]
    total = 0
    while stack:
        folder, below = read(root, stack.pop(), options)
        total += folder.count
        if total > options.max_files:
            raise too_many_files(root, options.max_files)
        stack.extend(below)
        yield folder


def too_many_files(root: str, limit: int) -> TooManyFilesError:
    """The refusal of a tree with more than `limit` files (`UNDOSTORE_MAX_FILES`)."""
    return TooManyFilesError(
        f"more than {limit:,} files to capture, nothing recorded: raise "
        f"UNDOSTORE_MAX_FILES (or snapshot --max-files), or leave generated folders out "
        "with .gitignore or .undostoreignore",
        root, limit)  # the limit is on the whole root: name it, not a folder


def _walk_threaded(root: str, options: WalkOptions) -> list[Folder]:
    """`walk` with folders read in a thread pool (never from cached listings)."""
    # Imported here: concurrent.futures costs start-up time that a warm walk never needs.
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    folders: list[Folder] = []
    total = 0
    with ThreadPoolExecutor(max_workers=options.threads) as pool:
        pending: set[Future[tuple[Folder, list[ToVisit]]]] = {
            pool.submit(read_folder, root, ToVisit("", FolderRules.outside(root)), options)}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    folder, below = future.result()
                    folders.append(folder)
                    total += folder.count
                    if total > options.max_files:
                        raise too_many_files(root, options.max_files)
                    for item in below:
                        pending.add(pool.submit(read_folder, root, item, options))
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return folders


def list_paths(root: str, options: WalkOptions | None = None) -> list[str]:
    """Every captured path under root, sorted: what `git ls-files -o --exclude-standard` lists."""
    return sorted(f.path for folder in walk(root, options) for f in folder.files)

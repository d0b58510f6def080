"""The directory walk: every file and symlink under root that git would not ignore.

The walk asks `ignore.IgnoreRules` about each entry once and never descends into an ignored
folder (a 50,000-file `node_modules/` costs one regex call), skips `.git` at every depth and the
store when it lies under root, records symlinks without following them, and reports special files
(fifos, sockets, devices) through `on_warning` instead of reading them.

`threads > 1` scans folders in a thread pool: it pays when directory reads wait on the disk (a
cold cache, a network file system) and costs time on a warm cache, where the GIL serialises the
work anyway. `benchmarks/bench_walk.py` measures both.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from undostore.errors import SnapshotError, from_oserror
from undostore.fileio import TEMP_PREFIX
from undostore.platform import is_junction
from undostore.snapshot.ignore import IgnoreRules, read_ignore_file, root_rules

S_ISREG = stat.S_ISREG
S_ISLNK = stat.S_ISLNK

KIND_FILE = "file"
KIND_LINK = "link"


@dataclass(slots=True)
class FileEntry:
    """A file or symlink found by the walk."""

    name: str
    path: str                 # relative to root, '/'-separated
    kind: str                 # KIND_FILE or KIND_LINK
    st: os.stat_result


@dataclass(slots=True)
class Folder:
    """One folder's kept entries; `subdirs` are names of sub-folders that were walked.

    With a matcher (`WalkOptions.matcher_for`), `names` lists every kept file in walk order and
    `files` only those the matcher did not vouch for: a file the stat cache already knows
    leaves nothing behind (a 40,000-file folder then holds no stat result per file)."""

    path: str                 # relative to root, '' for the root itself
    files: list[FileEntry] = field(default_factory=list)
    subdirs: list[str] = field(default_factory=list)
    names: list[str] | None = None

    @property
    def count(self) -> int:
        """Kept files in the folder."""
        return len(self.names) if self.names is not None else len(self.files)


Warn = Callable[[str, str], None]
# Whether what the stat cache knows of a file (by name, in one folder) still holds for `st`.
Matcher = Callable[[str, os.stat_result], bool]


def ignore_warning(path: str, message: str) -> None:
    pass


@dataclass
class WalkOptions:
    threads: int = 1
    max_files: int = 1_000_000
    skip_dirs: frozenset[str] = frozenset()   # paths relative to root never entered (the store)
    on_warning: Warn = ignore_warning
    matcher_for: Callable[[str], Matcher | None] | None = None   # per folder path (see Folder)


def disk_path(root: str, rel: str) -> str:
    """The path on disk of `rel` ('/'-separated, relative to root), in the system's spelling."""
    if not rel:
        return root
    return os.path.join(root, rel if os.sep == "/" else rel.replace("/", os.sep))


def _scan_folder(root: str, rel: str, rules: IgnoreRules, options: WalkOptions
                 ) -> tuple[Folder, list[tuple[str, IgnoreRules]]]:
    """Read one folder: its kept files, and the sub-folders to walk with their rules."""
    disk = disk_path(root, rel)
    # Ask for .gitignore by name (one lstat) rather than listing the folder first: the listing
    # is then read as it comes, so a huge folder's entries (each holding its stat result once
    # asked) are never all held at once. git reads a regular file only, never through a link.
    try:
        ignore_st = os.lstat(os.path.join(disk, ".gitignore"))
    except OSError:
        ignore_st = None
    if ignore_st is not None and S_ISREG(ignore_st.st_mode):
        own = read_ignore_file(os.path.join(disk, ".gitignore"), base=rel, follow_symlinks=False)
        rules = rules.with_folder_file(own)
    folder = Folder(rel)
    todo: list[tuple[str, IgnoreRules]] = []
    match = options.matcher_for(rel) if options.matcher_for is not None else None
    if match is not None:
        folder.names = []
    try:
        listing = os.scandir(disk)
    except OSError as err:
        raise from_oserror(err, "read folder", disk) from err
    with listing:
        _scan_entries(listing, disk, rel + "/" if rel else "",
                      rules.is_ignored if rules else None,  # most folders have no rules at all
                      folder, todo, rules, match, options)
    return folder, todo


def _scan_entries(listing: Iterator[os.DirEntry[str]], disk: str, prefix: str,
                  is_ignored: Callable[[str, bool], bool] | None, folder: Folder,
                  todo: list[tuple[str, IgnoreRules]], rules: IgnoreRules,
                  match: Matcher | None, options: WalkOptions) -> None:
    """The loop of `_scan_folder` over one listing, read as it comes."""
    skip_dirs = options.skip_dirs
    files = folder.files
    names = folder.names
    entries = iter(listing)
    # This loop runs once per file of the tree: it is kept free of calls that are not needed.
    while True:
        try:
            entry = next(entries)
        except StopIteration:
            return
        except OSError as err:
            raise from_oserror(err, "read folder", disk) from err
        name = entry.name
        if name == ".git":
            continue  # never capture any repository's own database
        path = prefix + name
        try:
            # d_type answers this without a system call; a symlink to a folder is not a folder.
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as err:
            raise from_oserror(err, "inspect", os.path.join(disk, name)) from err
        if is_dir:
            if path in skip_dirs or (is_ignored and is_ignored(path, True)):
                continue
            if name.startswith(TEMP_PREFIX):   # a new folder a restore stages whole
                options.on_warning(path, "skipped: an undostore temp folder")
                continue
            if is_junction(entry):
                options.on_warning(path, "skipped: a junction (never followed)")
                continue
            folder.subdirs.append(name)
            todo.append((path, rules))
            continue
        if is_ignored and is_ignored(path, False):
            continue
        if name.startswith(TEMP_PREFIX):   # undostore's own: never part of a state
            options.on_warning(path, "skipped: an undostore temp file")
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # vanished between listing and stat: it is not part of this state
        except OSError as err:
            raise from_oserror(err, "stat", os.path.join(disk, name)) from err
        if S_ISREG(st.st_mode):
            kind = KIND_FILE
        elif S_ISLNK(st.st_mode):
            kind = KIND_LINK
        else:
            options.on_warning(path, "skipped: not a regular file or symlink")
            continue
        if names is not None:
            names.append(name)
            if match(name, st):  # type: ignore[misc]
                continue
        files.append(FileEntry(name, path, kind, st))


def walk(root: str, options: WalkOptions | None = None) -> list[Folder]:
    """All folders under `root` that git would look into, each with the files it keeps."""
    options = options or WalkOptions()
    if not os.path.isdir(root):
        raise SnapshotError("not a folder", root)
    start = root_rules(root)
    if options.threads <= 1:
        return _walk_serial(root, start, options)
    return _walk_threaded(root, start, options)


def iter_walk(root: str, options: WalkOptions | None = None) -> Iterable[Folder]:
    """As `walk`, but one folder at a time when walking on one thread, so a caller that keeps
    little per folder never holds the whole tree's stat results at once."""
    options = options or WalkOptions()
    if options.threads > 1:
        return walk(root, options)
    if not os.path.isdir(root):
        raise SnapshotError("not a folder", root)
    return _iter_serial(root, root_rules(root), options)


def _iter_serial(root: str, start: IgnoreRules, options: WalkOptions) -> Iterator[Folder]:
    stack: list[tuple[str, IgnoreRules]] = [("", start)]
    total = 0
    while stack:
        rel, rules = stack.pop()
        folder, todo = _scan_folder(root, rel, rules, options)
        total += folder.count
        if total > options.max_files:
            _count(root, [], folder, total, options)  # raises the error `walk` raises
        stack.extend(todo)
        yield folder


def _count(root: str, folders: list[Folder], folder: Folder, total: int,
           options: WalkOptions) -> int:
    folders.append(folder)
    total += folder.count
    if total > options.max_files:
        raise SnapshotError(
            f"more than {options.max_files:,} files to capture; raise the limit "
            "(max_files / --max-files) or ignore generated folders in .gitignore",
            root)  # the limit is on the whole root: name it, not the folder where it ran out
    return total


def _walk_serial(root: str, start: IgnoreRules, options: WalkOptions) -> list[Folder]:
    folders: list[Folder] = []
    stack: list[tuple[str, IgnoreRules]] = [("", start)]
    total = 0
    while stack:
        rel, rules = stack.pop()
        folder, todo = _scan_folder(root, rel, rules, options)
        total = _count(root, folders, folder, total, options)
        stack.extend(todo)
    return folders


def _walk_threaded(root: str, start: IgnoreRules, options: WalkOptions) -> list[Folder]:
    # Imported here: concurrent.futures costs 5 ms of start-up that a warm walk never needs.
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    folders: list[Folder] = []
    total = 0
    with ThreadPoolExecutor(max_workers=options.threads) as pool:
        pending: set[Future[tuple[Folder, list[tuple[str, IgnoreRules]]]]] = {
            pool.submit(_scan_folder, root, "", start, options)}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    folder, todo = future.result()
                    total = _count(root, folders, folder, total, options)
                    for rel, rules in todo:
                        pending.add(pool.submit(_scan_folder, root, rel, rules, options))
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return folders


def list_paths(root: str, options: WalkOptions | None = None) -> list[str]:
    """Every captured path under root, sorted: what `git ls-files -o --exclude-standard` lists."""
    return sorted(f.path for folder in walk(root, options) for f in folder.files)

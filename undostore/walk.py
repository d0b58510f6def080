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
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from .errors import SnapshotError, from_oserror
from .ignore import IgnoreRules, read_ignore_file, root_rules

_IS_WINDOWS = sys.platform == "win32"
_REPARSE_POINT = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)

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
    """One folder's kept entries; `subdirs` are names of sub-folders that were walked."""

    path: str                 # relative to root, '' for the root itself
    files: list[FileEntry] = field(default_factory=list)
    subdirs: list[str] = field(default_factory=list)


Warn = Callable[[str, str], None]


def _ignore_warning(path: str, message: str) -> None:
    pass


@dataclass
class WalkOptions:
    threads: int = 1
    max_files: int = 1_000_000
    skip_dirs: frozenset[str] = frozenset()   # paths relative to root never entered (the store)
    on_warning: Warn = _ignore_warning


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _scan_folder(root: str, rel: str, rules: IgnoreRules, options: WalkOptions
                 ) -> tuple[Folder, list[tuple[str, IgnoreRules]]]:
    """Read one folder: its kept files, and the sub-folders to walk with their rules."""
    disk = os.path.join(root, rel) if rel else root
    if rel:
        own = read_ignore_file(os.path.join(disk, ".gitignore"), base=rel, follow_symlinks=False)
    else:
        own = read_ignore_file(os.path.join(disk, ".gitignore"), follow_symlinks=False)
    rules = rules.with_folder_file(own)
    folder = Folder(rel)
    todo: list[tuple[str, IgnoreRules]] = []
    try:
        with os.scandir(disk) as it:
            entries = list(it)
    except OSError as err:
        raise from_oserror(err, "read folder", disk) from err
    for entry in entries:
        name = entry.name
        if name == ".git":
            continue  # never capture any repository's own database
        path = _join(rel, name)
        try:
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        except OSError as err:
            raise from_oserror(err, "inspect", os.path.join(disk, name)) from err
        if is_dir:
            if path in options.skip_dirs or rules.is_ignored(path, True):
                continue
            if _IS_WINDOWS and _is_junction(entry):
                options.on_warning(path, "skipped: a junction (never followed)")
                continue
            folder.subdirs.append(name)
            todo.append((path, rules))
            continue
        if rules.is_ignored(path, False):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # vanished between listing and stat: it is not part of this state
        except OSError as err:
            raise from_oserror(err, "stat", os.path.join(disk, name)) from err
        if is_link or stat.S_ISLNK(st.st_mode):
            folder.files.append(FileEntry(name, path, KIND_LINK, st))
        elif stat.S_ISREG(st.st_mode):
            folder.files.append(FileEntry(name, path, KIND_FILE, st))
        else:
            options.on_warning(path, "skipped: not a regular file or symlink")
    return folder, todo


def _is_junction(entry: os.DirEntry[str]) -> bool:
    try:
        attributes = entry.stat(follow_symlinks=False).st_file_attributes  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return False
    return bool(attributes & _REPARSE_POINT)


def walk(root: str, options: WalkOptions | None = None) -> list[Folder]:
    """All folders under `root` that git would look into, each with the files it keeps."""
    options = options or WalkOptions()
    if not os.path.isdir(root):
        raise SnapshotError("not a folder", root)
    start = root_rules(root)
    if options.threads <= 1:
        return _walk_serial(root, start, options)
    return _walk_threaded(root, start, options)


def _count(folders: list[Folder], folder: Folder, total: int, options: WalkOptions) -> int:
    folders.append(folder)
    total += len(folder.files)
    if total > options.max_files:
        raise SnapshotError(
            f"more than {options.max_files:,} files to capture; raise the limit "
            "(max_files / --max-files) or ignore generated folders in .gitignore",
            folder.path or ".")
    return total


def _walk_serial(root: str, start: IgnoreRules, options: WalkOptions) -> list[Folder]:
    folders: list[Folder] = []
    stack: list[tuple[str, IgnoreRules]] = [("", start)]
    total = 0
    while stack:
        rel, rules = stack.pop()
        folder, todo = _scan_folder(root, rel, rules, options)
        total = _count(folders, folder, total, options)
        stack.extend(todo)
    return folders


def _walk_threaded(root: str, start: IgnoreRules, options: WalkOptions) -> list[Folder]:
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
                    total = _count(folders, folder, total, options)
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

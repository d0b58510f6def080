"""Helpers shared by the restore tests (this module holds no tests of its own).

- `disk_state(root)`: everything under a root as {path: (kind, bytes, executable)}, the thing a
  restore must get exactly right, without `.git` and the store.
- `craft_snapshot(store, spec)`: a snapshot written straight into the store's packs (names and
  modes no real file system would produce, blobs left out on purpose), for refusal tests.
- `run_cli(...)`: the real `python -m undostore` process.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from undostore.git.objects import BLOB, MODE_BYTES, TREE, hash_object, tree_sort_key
from undostore.git.packwriter import PackWriter
from undostore.store.recent import remember
from undostore.store.store import Store

IS_WINDOWS = sys.platform == "win32"

State = dict[str, tuple[str, bytes, bool]]


def disk_state(root: Path | str, skip: tuple[str, ...] = (".git",)) -> State:
    """{relative path: (kind, content or link target, executable)} of every file and symlink;
    empty folders appear as ("dir", b"", False) so leftovers are noticed."""
    out: State = {}
    root = str(root)
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        rel_folder = "" if rel_folder == "." else rel_folder
        for name in list(dirs):
            path = f"{rel_folder}/{name}" if rel_folder else name
            full = os.path.join(folder, name)
            if name in skip or path in skip:
                dirs.remove(name)
            elif os.path.islink(full):
                dirs.remove(name)
                out[path] = ("link", os.fsencode(os.readlink(full)), False)
        if not dirs and not files and rel_folder:
            out[rel_folder + "/"] = ("dir", b"", False)
        for name in files:
            path = f"{rel_folder}/{name}" if rel_folder else name
            full = os.path.join(folder, name)
            if os.path.islink(full):
                out[path] = ("link", os.fsencode(os.readlink(full)), False)
            else:
                with open(full, "rb") as f:
                    data = f.read()
                executable = not IS_WINDOWS and bool(os.lstat(full).st_mode & stat.S_IXUSR)
                out[path] = ("file", data, executable)
    return out


def mtimes(root: Path | str) -> dict[str, int]:
    root = str(root)
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            out[os.path.relpath(full, root)] = os.lstat(full).st_mtime_ns
    return out


def temp_files(root: Path | str) -> list[str]:
    """Leftover temp files (and staged folders) of any undostore writer under root."""
    found = []
    for folder, dirs, files in os.walk(str(root)):
        found += [os.path.join(folder, n) for n in files + dirs
                  if n.startswith(".undostore-tmp-")]
    return found


# Crafted snapshots: {name (str or bytes): bytes (a file) | (mode, bytes) | dict (a folder)
# | ("missing", bytes) (a blob the tree names but the store lacks) | ("raw", mode, sha)}.
Spec = Mapping[object, object]


def craft_snapshot(store: Store, spec: Spec, *, sort: bool = True) -> str:
    """Write the trees and blobs of `spec` into one new pack; returns the root tree id.
    `sort=False` keeps each folder's entries in the spec's order (a tree git calls unsorted)."""
    writer = PackWriter(store.pack_dir)

    def build(node: Spec) -> bytes:
        entries: list[tuple[bytes, bytes, bytes]] = []   # (mode text, name, sha)
        for raw_name, value in node.items():
            name = raw_name if isinstance(raw_name, bytes) else os.fsencode(str(raw_name))
            if isinstance(value, Mapping):
                entries.append((b"40000", name, build(value)))
                continue
            if isinstance(value, tuple) and value[0] == "raw":
                _, mode_text, sha = value
                entries.append((mode_text, name, sha))
                continue
            if isinstance(value, tuple) and value[0] == "missing":
                entries.append((b"100644", name, hash_object(BLOB, value[1])))
                continue
            mode, data = value if isinstance(value, tuple) else (0o100644, value)
            sha = hash_object(BLOB, data)
            writer.add(BLOB, sha, data)
            entries.append((MODE_BYTES[mode], name, sha))
        # git's order; duplicates are kept (some tests need them).
        if sort:
            entries.sort(key=lambda e: tree_sort_key((0o040000 if e[0] == b"40000" else 0,
                                                       e[1], e[2])))
        body = b"".join(mode + b" " + name + b"\x00" + sha for mode, name, sha in entries)
        sha = hash_object(TREE, body)
        writer.add(TREE, sha, body)
        return sha

    root = build(spec)
    writer.commit()
    store.refresh()
    remember(store.path, root)   # a crafted snapshot stands for one the store handed out
    return root.hex()



"""The snapshot id is git's tree id: `git add -A && git write-tree` over the same files.

Every test builds a real tree, snapshots it with undostore, and asks git (in a private git dir
with raw bytes: no autocrlf, file modes and symlinks on) for the tree id of the same files.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore import Workspace
from undostore.snapshot.snapshot import EMPTY_TREE
from undostore.store.store import Store

from .conftest import IS_WINDOWS, Exe, Link

IS_LINUX = sys.platform.startswith("linux")
needs_symlinks = pytest.mark.skipif(IS_WINDOWS, reason="symlinks need a privilege on Windows")
posix_names = pytest.mark.skipif(IS_WINDOWS, reason="name not allowed on Windows")


def snapshot_id(root: Path, store: Path | None = None) -> str:
    with Workspace(root, store=store) as ws:
        return ws.snapshot().id


def captured_paths(store: Store, snapshot: str) -> list[str]:
    return sorted(path for path, _, _ in store.iter_tree_files(bytes.fromhex(snapshot)))


def test_nested_ignores_and_negations(tree_factory, git):
    root = tree_factory({
        ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only\ncache/**\n!cache/keep\n",
        "a.log": "x", "keep.log": "k", "top-only": "t",
        "build": {"out.o": "o"},
        "cache": {"keep": "1", "drop": "2", "sub": {"x": "3"}},
        "src": {
            ".gitignore": "!*.log\n*.tmp\n!important.tmp\n",
            "b.log": "b", "c.tmp": "c", "important.tmp": "i", "top-only": "nested, kept",
            "deep": {".gitignore": "*\n!*/\n!*.py\n", "m.py": "p", "n.txt": "n",
                     "more": {"o.py": "p", "p.txt": "q"}},
        },
    })
    assert snapshot_id(root) == git.write_tree(root)


@pytest.mark.skipif(IS_WINDOWS, reason="no exec bit on Windows")
def test_exec_bits(tree_factory, git):
    root = tree_factory({"run.sh": Exe("#!/bin/sh\n"), "plain": "x",
                         "sub": {"tool": Exe(b"\x7fELF"), "data": ""}})
    (root / "plain").chmod(0o744)       # owner exec only: still 100755 for git
    (root / "sub" / "data").chmod(0o654)  # group exec only: 100644 for git
    first = snapshot_id(root)
    assert first == git.write_tree(root)
    (root / "run.sh").chmod(0o644)
    second = snapshot_id(root)
    assert second != first
    assert second == git.write_tree(root)


@needs_symlinks
def test_symlinks_to_files_folders_dangling_and_absolute(tree_factory, git):
    root = tree_factory({
        "target.txt": "t", "folder": {"inside": "i"},
        "to_file": Link("target.txt"), "to_folder": Link("folder"),
        "dangling": Link("does/not/exist"), "absolute": Link("/etc/passwd"),
        "up": Link("../outside"), "sub": {"back": Link("../folder/inside")},
    })
    assert snapshot_id(root) == git.write_tree(root)


@pytest.mark.skipif(not IS_LINUX, reason="NFC and NFD spellings are one name on macOS")
def test_unicode_names_in_nfc_and_nfd(tree_factory, git):
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    root = tree_factory({nfc: "composed", nfd: "decomposed", "日本語": {"ファイル.txt": "x"},
                         "emoji-🙂": "", "Ωmega": {"ü": "u"}})
    assert snapshot_id(root) == git.write_tree(root)


@pytest.mark.skipif(not IS_LINUX, reason="names that are not UTF-8 exist on Linux file systems")
def test_non_utf8_byte_names(tmp_path: Path, git):
    root = tmp_path / "tree"
    root.mkdir()
    base = os.fsencode(root)
    os.mkdir(os.path.join(base, b"dir\xfe"))
    for name in (b"latin1-\xe9", b"dir\xfe/inner\xff", b"plain"):
        with open(os.path.join(base, name), "wb") as f:
            f.write(name)
    ours = snapshot_id(root)
    assert ours == git.write_tree(root)


@posix_names
def test_names_with_spaces_newlines_tabs_quotes_and_backslashes(tree_factory, git):
    names = ["with space", "new\nline", "tab\there", 'dq"uote', "sq'uote", "back\\slash",
             " leading", "trailing ", "-dash", "*star", "?q", "[br]"]
    root = tree_factory({**{n: n for n in names}, "sub dir": {n: "" for n in names}})
    assert snapshot_id(root) == git.write_tree(root)


def test_empty_files_and_empty_folders(tree_factory, git):
    root = tree_factory({"empty": "", "sub": {"also-empty": ""}, "nothing": {}})
    (root / "nested" / "empty" / "folders").mkdir(parents=True)
    ours = snapshot_id(root)
    assert ours == git.write_tree(root)


def test_folder_holding_only_ignored_files_is_omitted(tree_factory, git):
    root = tree_factory({".gitignore": "*.o\n", "obj": {"a.o": "", "deep": {"b.o": ""}},
                         "src": {"c.c": ""}})
    store = Path(tempfile.mkdtemp(dir=root.parent))
    ours = snapshot_id(root, store / "s")
    assert ours == git.write_tree(root)
    with Store(str(store / "s")) as opened:
        assert captured_paths(opened, ours) == [".gitignore", "src/c.c"]


def test_only_empty_folders_give_the_empty_tree(tree_factory, git):
    root = tree_factory({"a": {"b": {}}, "c": {}})
    ours = snapshot_id(root)
    assert ours == EMPTY_TREE.hex()
    assert git.run(git.private_dir(root), root, "write-tree").decode().strip() == ours


def test_fifty_levels_deep(tree_factory, git):
    root = tree_factory({})
    deep = root.joinpath(*[f"level{i}" for i in range(50)])
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("bottom")
    (root / "level0" / "level1" / "side.txt").write_text("side")
    assert snapshot_id(root) == git.write_tree(root)


def test_git_entries_at_depth_are_skipped(tree_factory, git):
    # Not repositories (no HEAD/objects/refs), so git too skips `.git` and keeps the rest.
    root = tree_factory({
        ".git": {"info": {"exclude": ""}, "junk": "j"},
        "a": {".git": {"config": "c", "more": {"x": "y"}}, "file": "f"},
        "b": {".git": "gitdir: ../nowhere\n", "file": "g"},
        "c": {"d": {".git": "plain file named .git"}, "e": ""},
    })
    assert snapshot_id(root) == git.write_tree(root)


def test_nested_repository_files_are_captured_as_content(tree_factory, git):
    root = tree_factory({
        "top.txt": "t",
        "vendor": {
            ".git": {"HEAD": "ref: refs/heads/main\n", "objects": {"pack": {}},
                     "refs": {"heads": {}}, "config": "[core]\n"},
            ".gitignore": "*.tmp\n",
            "lib.py": "code", "scratch.tmp": "ignored", "pkg": {"mod.py": "m"},
        },
    })
    (root / "vendor" / ".git" / "objects" / "pack" / "keep").write_text("")
    store_path = root.parent / "nested-store"
    ours = snapshot_id(root, store_path)
    with Store(str(store_path)) as store:
        assert captured_paths(store, ours) == [
            "top.txt", "vendor/.gitignore", "vendor/lib.py", "vendor/pkg/mod.py"]
    # git would record `vendor` as a gitlink; with the nested `.git` moved away, git's tree of
    # the same files must be exactly ours.
    shutil.move(str(root / "vendor" / ".git"), str(root.parent / "moved-git"))
    assert ours == git.write_tree(root)


def test_store_inside_root_is_never_captured(tree_factory, git):
    root = tree_factory({"a.txt": "a", "sub": {"b.txt": "b"}})
    store = root / "sub" / ".store"
    first = snapshot_id(root, store)
    assert (store / "FORMAT").is_file()
    second = snapshot_id(root, store)  # the store now holds packs and a cache: still not seen
    assert first == second
    git_dir = git.private_dir(root)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("/sub/.store/\n")
    assert second == git.write_tree(root)


def test_unchanged_subtrees_keep_their_ids_after_a_change(tree_factory, git):
    root = tree_factory({"a": {"x": "1"}, "b": {"y": "2"}})
    first = snapshot_id(root)
    (root / "a" / "x").write_text("changed")
    second = snapshot_id(root)
    assert first != second
    assert second == git.write_tree(root)


# --- property test: random small trees ---------------------------------------------------------

NAMES = ["a", "b", "B", "c.py", "d.log", ".hidden", "é", "ü.txt", "build", "keep", "x y",
         "tmp.o", "a.b.c", "_", "-"]
IGNORE_LINES = ["*.log", "!keep", "build/", "/a", "b/", "*", "!*/", "!*.py", "**/tmp.o", "a/**",
                "!a/keep", "[ab]", "?", "é", "!d.log", ".hidden", "x\\ y", "B", "*.txt",
                "!ü.txt", "# comment", "", "keep/", "!build/", "a/*/c.py"]
LINK_TARGETS = ["a", "../b", "missing", "/abs/target", "build", "."]

entry_strategy = st.tuples(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),      # path components
    st.sampled_from(["file", "exe", "link", "dir", "ignore"]),      # what to put there
    st.binary(max_size=12),                                        # file content
    st.lists(st.sampled_from(IGNORE_LINES), max_size=4),            # .gitignore lines
    st.sampled_from(LINK_TARGETS),
)


def build_random_tree(root: Path, entries: list) -> None:  # noqa: ANN001
    for parts, kind, content, lines, target in entries:
        path = root.joinpath(*parts)
        if kind == "ignore":
            path = path.parent / ".gitignore" if len(parts) > 1 else root / ".gitignore"
            content = "\n".join(lines).encode() + b"\n"
        elif kind == "link" and IS_WINDOWS:
            kind = "file"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path):
                continue
            if kind == "dir":
                path.mkdir()
            elif kind == "link":
                os.symlink(target, path)
            else:
                path.write_bytes(content)
                if kind == "exe":
                    path.chmod(0o755)
        except OSError as err:
            # A file (or a link, even one to itself) already sits where this entry needs a
            # folder: keep the first.
            if err.errno not in (errno.EEXIST, errno.ENOTDIR, errno.ELOOP):
                raise
            continue


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=st.lists(entry_strategy, max_size=14))
def test_random_trees_match_git_write_tree(entries, tmp_path: Path, git):
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    root = work / "tree"
    root.mkdir()
    build_random_tree(root, entries)
    with Workspace(root, store=work / "store") as ws:
        first = ws.snapshot()
        again = ws.snapshot()
    assert first.id == git.write_tree(root), sorted(
        str(p.relative_to(root)) + ("@" if p.is_symlink() else "")
        + ("*" if p.is_file() and os.stat(p, follow_symlinks=False).st_mode & stat.S_IXUSR
           else "")
        for p in root.rglob("*"))
    assert again.id == first.id

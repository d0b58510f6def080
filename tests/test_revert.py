"""`revert FROM TO` against `git revert` (the reference) on the same history.

The history is a start state, turns, and the user's edits, made both as undostore snapshots of
a root and as commits of a private git repository. The turn to take back is reverted by
`Workspace.revert` and by `git revert --no-commit --strategy=recursive -X no-renames` of that
turn's commit (undostore pairs files by path, never by rename). Clean:
every file, mode and symlink is byte for byte what git leaves. Conflicting: the same paths
conflict; without `merge` nothing changes, with `merge` every path git merged cleanly is
identical and text conflicts carry the same hunks (marker labels aside).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore import Workspace
from undostore.errors import ConflictError, UsageError
from undostore.restore.revert import RevertConflict

from .conftest import IS_WINDOWS, Exe, Link, edit_lines
from .restore_support import disk_state

posix_only = pytest.mark.skipif(IS_WINDOWS, reason="symlinks and exec bits in these histories")

Spec = dict[str, "bytes | Exe | Link"]


def write_state(root: Path, spec: Spec) -> None:
    """Make the files under `root` (no .git) exactly `spec` ({path: content})."""
    for path, value in disk_state(root).items():
        if path.endswith("/"):
            continue
        if path not in spec or spec[path] != _spec_of(value) or value[0] == "link":
            (root / path).unlink()
    for folder, dirs, _files in os.walk(root, topdown=False):
        for name in dirs:
            full = os.path.join(folder, name)
            if name != ".git" and not os.path.islink(full) and not os.listdir(full):
                os.rmdir(full)
    for path, value in spec.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, Link):
            if not full.is_symlink():
                os.symlink(value.target, full)
            continue
        data = value.content if isinstance(value, Exe) else value
        full.write_bytes(data)
        full.chmod(0o755 if isinstance(value, Exe) else 0o644)


def _spec_of(value: tuple[str, bytes, bool]) -> bytes | Exe | Link:
    kind, data, executable = value
    if kind == "link":
        return Link(os.fsdecode(data))
    return Exe(data) if executable else data


class History:
    """The same states as undostore snapshots (root `mine`) and git commits (root `theirs`)."""

    def __init__(self, git, tmp: Path) -> None:
        self.git = git
        self.mine, self.ref = tmp / "mine", tmp / "ref"
        self.mine.mkdir()
        self.ref.mkdir()
        self.git_dir = git.private_dir(self.ref)
        self.ids: list[str] = []
        self.commits: list[str] = []
        self.ws = Workspace(self.mine)

    def step(self, spec: Spec, session: str | None = "agent") -> None:
        write_state(self.mine, spec)
        write_state(self.ref, spec)
        self.ids.append(self.ws.snapshot(session=session).id)
        self.run("add", "-A")
        self.run("commit", "-q", "--allow-empty", "-m", f"state {len(self.commits)}")
        self.commits.append(self.run("rev-parse", "HEAD").decode().strip())

    def run(self, *args: str, check: bool = True) -> bytes:
        return self.git.run(self.git_dir, self.ref, *args, check=check)

    def git_revert(self, k: int) -> list[str]:
        """git reverts the change from state k-1 to state k; the conflicting paths."""
        # merge-ort in git 2.39 ignores -X no-renames; the recursive strategy honours it.
        self.run("revert", "--no-commit", "--strategy=recursive", "-X", "no-renames",
                 self.commits[k], check=False)
        out = self.run("ls-files", "-u", "-z")
        return sorted({e.split(b"\t", 1)[1].decode() for e in out.split(b"\0") if e})

    def close(self) -> None:
        self.ws.close()


def _unlabel(state: dict) -> dict:
    """Conflict marker lines without their labels (git's say HEAD and 'parent of ...')."""
    out = {}
    for path, (kind, data, executable) in state.items():
        lines = data.split(b"\n")
        lines = [line[:7] if line[:8] in (b"<<<<<<< ", b">>>>>>> ") else line for line in lines]
        out[path] = (kind, b"\n".join(lines), executable)
    return out


def check_against_git(git, tmp: Path, states: list[Spec], k: int) -> list[str]:
    """Record `states` (the last is the files now), revert state k-1 -> k both ways, compare.
    Returns the conflicting paths."""
    history = History(git, tmp)
    try:
        for spec in states:
            history.step(spec)
        git_conflicts = history.git_revert(k)
        now = disk_state(history.mine)
        ws = history.ws
        if git_conflicts:
            with pytest.raises(RevertConflict) as refused:
                ws.revert(history.ids[k - 1], history.ids[k])
            assert refused.value.conflicts == git_conflicts
            assert disk_state(history.mine) == now, "a refused revert changed files"
            result = ws.revert(history.ids[k - 1], history.ids[k], merge=True)
            assert result.conflicts == git_conflicts
            mine, ref = disk_state(history.mine), disk_state(history.ref)
            assert _unlabel(mine) == _unlabel(ref)
        else:
            result = ws.revert(history.ids[k - 1], history.ids[k])
            assert result.conflicts == []
            assert disk_state(history.mine) == disk_state(history.ref)
        return git_conflicts
    finally:
        history.close()


LINES = b"".join(b"line %d\n" % i for i in range(1, 31))


START: Spec = {"a.txt": LINES, "keep.txt": b"kept\n", "run.sh": Exe(b"#!/bin/sh\necho 1\n"),
               "bin.dat": b"\0\1\2" * 10, "link": Link("a.txt"), "d/e.txt": b"deep\n"}


def _with(spec: Spec, **changes: bytes | Exe | Link | None) -> Spec:
    out = dict(spec)
    for key, value in changes.items():
        path = key.replace("__", "/").replace("_dot_", ".")
        if value is None:
            out.pop(path, None)
        else:
            out[path] = value
    return out


CLEAN_CASES = {
    "text edits far apart": [
        START, _with(START, a_dot_txt=edit_lines(LINES, (3, b"turn\n"))),
        _with(START, a_dot_txt=edit_lines(LINES, (3, b"turn\n"), (25, b"user\n")))],
    "added and deleted files": [
        START, _with(START, new_dot_txt=b"added by the turn\n", keep_dot_txt=None,
                     d__e_dot_txt=None),
        _with(START, new_dot_txt=b"added by the turn\n", keep_dot_txt=None, d__e_dot_txt=None,
              later_dot_txt=b"added later\n")],
    "binary changed by the turn only": [
        START, _with(START, bin_dot_dat=b"\0turn"), _with(START, bin_dot_dat=b"\0turn",
                                                          a_dot_txt=b"user\n")],
    "exec bit": [
        START, _with(START, run_dot_sh=b"#!/bin/sh\necho 1\n"),
        _with(START, run_dot_sh=b"#!/bin/sh\necho 1\necho user\n")],
    "exec bit kept by a later content change": [
        START, _with(START, run_dot_sh=Exe(b"#!/bin/sh\necho turn\necho 1\n")),
        _with(START, run_dot_sh=b"#!/bin/sh\necho turn\necho 1\n")],
    "symlink retargeted": [
        START, _with(START, link=Link("keep.txt")), _with(START, link=Link("keep.txt"),
                                                          keep_dot_txt=b"user\n")],
    "a NUL past the first 8000 bytes is still text": [
        _with(START, a_dot_txt=b"x\n" * 5000 + b"\0\n"),
        _with(START, a_dot_txt=b"x\n" * 5000 + b"turn\n\0\n"),
        _with(START, a_dot_txt=b"user\n" + b"x\n" * 4999 + b"turn\n\0\n")],
    "later turn untouched": [
        START, _with(START, a_dot_txt=edit_lines(LINES, (10, None))),
        _with(START, a_dot_txt=edit_lines(LINES, (10, None)), d__e_dot_txt=b"turn 2\n")],
}

CONFLICT_CASES = {
    "same line edited again": [
        START, _with(START, a_dot_txt=edit_lines(LINES, (5, b"turn\n"))),
        _with(START, a_dot_txt=edit_lines(LINES, (5, b"user\n")))],
    "modified after the turn, deleted before it": [
        START, _with(START, extra=b"turn\n"), _with(START, extra=b"turn\nuser\n")],
    "deleted after the turn modified it": [
        START, _with(START, keep_dot_txt=b"turn\n"), _with(START, keep_dot_txt=None)],
    "binary changed again": [
        START, _with(START, bin_dot_dat=b"\0turn"), _with(START, bin_dot_dat=b"\0user")],
    "symlink retargeted again": [
        START, _with(START, link=Link("keep.txt")), _with(START, link=Link("run.sh"))],
    "add/add": [
        START, _with(START, keep_dot_txt=None), _with(START, keep_dot_txt=b"other\n")],
}


@pytest.mark.parametrize("name", sorted(CLEAN_CASES))
@posix_only
def test_clean_reverts_leave_the_files_git_revert_leaves(git, tmp_path, name):
    assert check_against_git(git, tmp_path, CLEAN_CASES[name], 1) == []


@pytest.mark.parametrize("name", sorted(CONFLICT_CASES))
@posix_only
def test_conflicting_reverts_name_the_paths_git_revert_names(git, tmp_path, name):
    assert check_against_git(git, tmp_path, CONFLICT_CASES[name], 1) != []


FOLDER = {"a.txt": b"a\n", "d/e.txt": b"e\n"}
FILE_FOLDER_CASES = {
    "the turn removed a folder, a file took its name since": [
        FOLDER, {"a.txt": b"a\n"}, {"a.txt": b"a\n", "d": b"file\n"}],
    "the turn made a file of a folder, edited since": [
        FOLDER, {"a.txt": b"a\n", "d": b"file\n"}, {"a.txt": b"a\n", "d": b"file\nuser\n"}],
    "the turn made a file of a folder, kept since": [
        FOLDER, {"a.txt": b"a\n", "d": b"file\n"}, {"a.txt": b"a\nuser\n", "d": b"file\n"}],
}


@pytest.mark.parametrize("name", sorted(FILE_FOLDER_CASES))
@posix_only
def test_file_folder_clashes_conflict_on_the_paths_git_names(git, tmp_path, name):
    """git also parks one side under `d~HEAD`; undostore keeps the files now instead."""
    history = History(git, tmp_path)
    try:
        for spec in FILE_FOLDER_CASES[name]:
            history.step(spec)
        expected = history.git_revert(1)
        now = disk_state(history.mine)
        if expected:
            with pytest.raises(RevertConflict) as refused:
                history.ws.revert(history.ids[0], history.ids[1])
            assert refused.value.conflicts == expected
            assert disk_state(history.mine) == now
            merged = history.ws.revert(history.ids[0], history.ids[1], merge=True)
            assert merged.conflicts == expected
            assert disk_state(history.mine)["d"] == now["d"]
        else:
            history.ws.revert(history.ids[0], history.ids[1])
            assert disk_state(history.mine) == disk_state(history.ref)
    finally:
        history.close()


def _snapshots(ws: Workspace, root: Path, *states: Spec, session: str | None = None
               ) -> list[str]:
    """Make the files each state in turn and snapshot them (in `session` if named): the ids."""
    ids = []
    for state in states:
        write_state(root, state)
        ids.append(ws.snapshot(session=session).id)
    return ids


def test_revert_of_an_undo_point_takes_back_that_turn_only(tree_factory):
    root = tree_factory({})
    with Workspace(root) as ws:
        first, _ = _snapshots(ws, root, {"a.txt": LINES},
                              {"a.txt": edit_lines(LINES, (2, b"turn 1\n"))}, session="s")
        write_state(root, {"a.txt": edit_lines(LINES, (2, b"turn 1\n"), (20, b"turn 2\n"))})
        result = ws.revert(first)
        assert result.modified == ["a.txt"] and not result.conflicts
        assert (root / "a.txt").read_bytes() == edit_lines(LINES, (20, b"turn 2\n"))


def test_revert_of_the_newest_point_takes_back_everything_since(tree_factory):
    root = tree_factory({})
    with Workspace(root) as ws:
        [newest] = _snapshots(ws, root, {"a.txt": LINES}, session="s")
        write_state(root, {"a.txt": LINES, "b.txt": b"since\n"})
        assert ws.revert(newest).deleted == ["b.txt"]
        assert disk_state(root) == {"a.txt": ("file", LINES, False)}


def test_one_id_that_is_no_undo_point_is_a_usage_error(tree_factory):
    root = tree_factory({})
    with Workspace(root) as ws:
        [plain] = _snapshots(ws, root, {"a.txt": LINES})
        with pytest.raises(UsageError, match="not an undo point"):
            ws.revert(plain)


def test_a_file_changed_while_the_revert_runs_is_never_overwritten(tree_factory):
    """The merge is made from a snapshot; the restore underneath re-checks every file it
    writes, so an edit landing after that snapshot stops the revert instead of being lost."""
    root = tree_factory({})
    with Workspace(root) as ws:
        before, after = _snapshots(
            ws, root, {"a.txt": LINES, "b.txt": b"b\n"},
            {"a.txt": edit_lines(LINES, (3, b"turn\n")), "b.txt": b"turn\n"})

        def type_meanwhile(plan) -> bool:
            (root / "a.txt").write_bytes(b"typed meanwhile\n")
            return True

        with pytest.raises(ConflictError, match="a.txt"):
            ws.revert(before, after, confirm=type_meanwhile)
        assert (root / "a.txt").read_bytes() == b"typed meanwhile\n"
        assert ws.abort_restore() is not None
        assert disk_state(root) == {"a.txt": ("file", b"typed meanwhile\n", False),
                                    "b.txt": ("file", b"turn\n", False)}


def test_dry_run_changes_nothing_and_says_what_would_change(tree_factory):
    root = tree_factory({})
    with Workspace(root) as ws:
        before, after = _snapshots(ws, root, {"a.txt": LINES},
                                   {"a.txt": LINES, "b.txt": b"turn\n"})
        result = ws.revert(before, after, dry_run=True)
        assert result.dry_run and result.deleted == ["b.txt"]
        assert (root / "b.txt").exists()


# --- generated histories: three turns and the user's edits -------------------------------------

PATHS = ["a.txt", "b.txt", "d/c.txt", "bin.dat", "run.sh", "link"]
WORDS = [b"a", b"b", b"c", b"{", b"}", b"", b"x = 1"]


@st.composite
def contents(draw, path: str, old: bytes | Exe | Link | None) -> bytes | Exe | Link | None:
    """The next value of `path`: kept, deleted, created or edited (line edits of the old)."""
    choice = draw(st.sampled_from(["keep", "keep", "edit", "edit", "delete"]))
    if choice == "keep":
        return old
    if choice == "delete":
        return None
    if path == "link":
        return Link(draw(st.sampled_from(["a.txt", "b.txt", "nowhere"])))
    if path == "bin.dat":
        return b"\0" + draw(st.sampled_from([b"x", b"y", b"z"]))
    old_data = old.content if isinstance(old, Exe) else old if isinstance(old, bytes) else b""
    lines = old_data.splitlines(keepends=True) or [b"%d\n" % i for i in range(8)]
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(lines)))
        cut = draw(st.integers(0, 2))
        lines[at:at + cut] = [w + b"\n" for w in draw(st.lists(st.sampled_from(WORDS),
                                                                max_size=2))]
    data = b"".join(lines)
    executable = isinstance(old, Exe) if path != "run.sh" or draw(st.booleans()) else \
        not isinstance(old, Exe)
    return Exe(data) if executable else data


@st.composite
def histories(draw) -> tuple[list[Spec], int]:
    start: Spec = {"a.txt": LINES[:60], "b.txt": b"1\n2\n3\n4\n5\n6\n", "d/c.txt": b"c\n",
                   "bin.dat": b"\0start", "run.sh": Exe(b"#!/bin/sh\n"), "link": Link("a.txt")}
    states = [start]
    for _ in range(4):    # three turns, then the user's edits
        spec: Spec = {}
        for path in PATHS:
            value = draw(contents(path, states[-1].get(path)))
            if value is not None:
                spec[path] = value
        states.append(spec)
    return states, draw(st.integers(1, 3))


@posix_only
@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(case=histories())
def test_generated_histories_revert_like_git(git, tmp_path_factory, case):
    states, k = case
    tmp = tmp_path_factory.mktemp("history")
    try:
        check_against_git(git, tmp, states, k)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_revert_walks_the_files_once(tmp_path):
    """The files revert merges with are the restore's safety snapshot: one walk, not two."""
    import dataclasses

    from undostore.restore.revert import revert

    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    with Workspace(root) as ws:
        before = ws.snapshot().id
        (root / "a.txt").write_text("two\n")
        after = ws.snapshot().id
        taken: list[str] = []
        wt = ws._worktree()

        def counted():
            result = wt.snapshot()
            taken.append(result.id)
            return result
        result = revert(dataclasses.replace(wt, snapshot=counted), before, after)
    assert taken == [after]
    assert result.safety == after and (root / "a.txt").read_text() == "one\n"


@posix_only
@pytest.mark.parametrize("theirs, ours", [
    (b"same\n", Exe(b"same\n")), (Exe(b"same\n"), b"same\n"),   # same content: a conflict
    (Exe(b""), b"ours\n"), (Exe(b"theirs\n"), b""), (b"theirs\n", Exe(b"")),  # merged: clean
], ids=["same-644-755", "same-755-644", "empty-theirs", "empty-ours-644", "empty-ours-755"])
def test_a_file_added_back_on_both_sides_with_other_modes_merges_as_git_does(
        git, tmp_path, theirs, ours):
    """Reverting a deletion while the file now exists again with another mode: git 2.39's
    merge-recursive lets a clean line merge decide (mode: ours), and conflicts only when the
    contents are the same."""
    states = [{"f": b"x\n"}, {"f": theirs}, {}, {"f": ours}]
    check_against_git(git, tmp_path, states, 2)


def test_taking_back_a_turn_nothing_changed_since_restores_its_start(tree_factory):
    """With no later change to merge, the revert's tree is the turn's start itself (taken as
    it is, with no merge: a big turn's undo costs what its restore does, bench_restore.py
    --cases big-undo), and the counts are those of that restore."""
    root = tree_factory({})
    with Workspace(root) as ws:
        before, _ = _snapshots(ws, root, {"a.txt": LINES, "b.txt": b"b\n", "d/c.txt": b"c"},
                               {"a.txt": edit_lines(LINES, (3, b"turn\n")), "n.txt": b"new\n",
                                "d/c.txt": b"c"}, session="s")
        result = ws.revert(before)
        assert (result.created, result.modified, result.deleted) == (["b.txt"], ["a.txt"],
                                                                     ["n.txt"])
        assert disk_state(root) == {"a.txt": ("file", LINES, False),
                                    "b.txt": ("file", b"b\n", False),
                                    "d/c.txt": ("file", b"c", False)}
        assert ws.snapshot().id == before

"""Undo and redo of some hunks (issue 59): `undo -p` takes back only the hunks picked of the
turns' change, 3-way as a whole undo; each file's other hunks stay on the undo stack, cut from
the part taken (history/steps.py `narrow_hunks`, journal.Cut), and `redo -p` applies hunks of
the part undone again. Any split of a turn into paths and hunks, undone and redone in any
order, ends as undoing it whole."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore import (
    Direction,
    EditFailed,
    Picked,
    UsageError,
    Workspace,
    hunk_text,
    parse_edited_hunk,
    split_hunk,
)

from .terminal_support import UNDOSTORE, Tmux, needs_tmux

LINES = [f"line {i}\n" for i in range(40)]
START = {"a.txt": "".join(LINES), "b.txt": "b0\n", "gone.txt": "bye\n",
         "src/c.py": "".join(LINES[:12])}
SPEC = {**{k: v for k, v in START.items() if "/" not in k}, "src": {"c.py": START["src/c.py"]}}


def _after() -> dict[str, str]:
    a = list(LINES)
    a[1] = "one\n"
    a[3:5] = ["three\n", "four\n", "four and a half\n"]
    a[20] = "twenty\n"
    del a[30]
    c = list(LINES[:12])
    c[0] = "c zero\n"
    c[11] = "c eleven"   # and no newline at the end
    return {"a.txt": "".join(a), "b.txt": "b1\n", "new.txt": "n1\n", "src/c.py": "".join(c)}


# Files are written as bytes: text mode would write CRLF on Windows, a change of every line.


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _turn(ws: Workspace, root: Path, label: str = "t1", session: str = "s") -> None:
    ws.snapshot(session=session, label=label)
    (root / "gone.txt").unlink()
    for path, text in _after().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text.encode())
    ws.end_turn(session)


def _pick(ws: Workspace, direction: Direction, choose) -> list:
    """The picks `choose(held_file) -> Picked | None` makes of each file the step would take."""
    out = []
    for held in ws.step_files(direction, "s"):
        picked = choose(held)
        if picked is not None and picked.anything:
            out.append(held.pick(ws.store, picked, direction))
    return out


def test_undo_of_some_hunks_takes_back_only_them_and_the_rest_later(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        after = files(root)
        held = {h.path: h for h in ws.step_files(Direction.UNDO, "s")}
        assert sorted(held) == ["a.txt", "b.txt", "gone.txt", "new.txt", "src/c.py"]
        assert len(held["a.txt"].change.hunks) == 3 and held["new.txt"].change.kind == "addition"
        a_hunks = held["a.txt"].change.hunks
        result = ws.undo("s", picks=[held["a.txt"].pick(ws.store, Picked(hunks=(a_hunks[1],)),
                                                        Direction.UNDO)])
        assert result.modified == ["a.txt"] and result.parts == [["a.txt"]]
        now = files(root)
        assert "twenty\n" not in now["a.txt"] and "line 20\n" in now["a.txt"]
        assert "one\n" in now["a.txt"] and "line 29\n" not in now["a.txt"]
        assert {k: v for k, v in now.items() if k != "a.txt"} == {
            k: v for k, v in after.items() if k != "a.txt"}
        log = ws.log("s")
        assert [p.cut.paths for p in log.undo] == [frozenset({"a.txt"})]
        assert [sorted(p.left_out) for p in log.redo] == [["b.txt", "gone.txt", "new.txt",
                                                           "src/c.py"]]
        # the part left: a.txt's two other hunks, and the other files
        left = {h.path: h for h in ws.step_files(Direction.UNDO, "s")}
        assert len(left["a.txt"].change.hunks) == 2
        # the user's own edit where the hunk taken back was: the rest of the turn leaves it
        (root / "a.txt").write_bytes(now["a.txt"].replace("line 20\n", "mine\n").encode())
        ws.undo("s")
        assert files(root) == {**START, "a.txt": START["a.txt"].replace("line 20\n", "mine\n")}
        (root / "a.txt").write_bytes(START["a.txt"].encode())
        assert [(p.left_out, p.cut) for p in ws.log("s").redo] == [(frozenset(), None)]
        ws.redo("s")
        assert files(root) == after


def test_redo_of_some_hunks_and_the_user_s_edit_beside_them_stays(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        ws.undo("s")
        (root / "b.txt").write_bytes(b"mine\n")   # the user's edit, after the undo
        held = {h.path: h for h in ws.step_files(Direction.REDO, "s")}
        c = held["src/c.py"]
        assert c.change.kind == "hunks" and len(c.change.hunks) == 2
        ws.redo("s", picks=[c.pick(ws.store, Picked(hunks=(c.change.hunks[1],)), Direction.REDO)])
        assert (root / "src/c.py").read_text() == "".join(LINES[:11]) + "c eleven"
        assert (root / "b.txt").read_text() == "mine\n"
        assert files(root)["a.txt"] == START["a.txt"]
        log = ws.log("s")
        assert [p.cut.paths for p in (*log.undo, *log.redo)] == [frozenset({"src/c.py"})] * 2
        # the user's own edit where the hunk applied again was: the rest leaves it
        (root / "src/c.py").write_bytes(("".join(LINES[:11]) + "mine eleven").encode())
        ws.redo("s", paths=["src"])
        assert (root / "src/c.py").read_text() == "c zero\n" + "".join(LINES[1:11]) + "mine eleven"
        assert [sorted(p.left_out) for p in ws.log("s").undo] == [["a.txt", "b.txt",
                                                                   "gone.txt", "new.txt"]]


def test_the_last_hunks_of_a_cut_file_picked_move_it_whole_and_end_its_cut(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        cut_a = frozenset({"a.txt"})
        for direction, first, cuts in ((Direction.UNDO, True, [cut_a, cut_a]),
                                       (Direction.UNDO, False, [None, None]),
                                       (Direction.REDO, True, [cut_a, cut_a]),
                                       (Direction.REDO, False, [None])):
            a = {h.path: h for h in ws.step_files(direction, "s")}["a.txt"]
            hunks = a.change.hunks[:1] if first else a.change.hunks
            ws.step(direction, "s", picks=[a.pick(ws.store, Picked(hunks=tuple(hunks)),
                                                  direction)])
            _chain_holds(ws, root)
            log = ws.log("s")
            cut = [p.cut.paths if p.cut else None for p in (*log.undo, *log.redo)]
            assert cut == cuts, direction
        assert files(root)["a.txt"] == _after()["a.txt"]


def test_a_pick_made_before_the_session_moved_on_is_refused(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        held = {h.path: h for h in ws.step_files(Direction.UNDO, "s")}
        a = held["a.txt"]
        stale = a.pick(ws.store, Picked(hunks=(a.change.hunks[0],)), Direction.UNDO)
        ws.undo("s", picks=[a.pick(ws.store, Picked(hunks=(a.change.hunks[2],)),
                                   Direction.UNDO)])
        before = files(root)
        with pytest.raises(UsageError, match="pick again"):
            ws.undo("s", picks=[stale])
        assert files(root) == before


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the reference (never needed)")
def test_the_hunks_are_git_s(tree_factory, tmp_path):
    """The hunks asked about, one after another, are `git diff`'s hunks of the change."""
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        held = {h.path: h for h in ws.step_files(Direction.UNDO, "s")}
    for path in ("a.txt", "src/c.py"):
        (tmp_path / "old").write_bytes(b"".join(held[path].change.lines.old))
        (tmp_path / "new").write_bytes(b"".join(held[path].change.lines.new))
        git = subprocess.run(["git", "diff", "--no-index", "--no-color", "old", "new"],
                             cwd=tmp_path, capture_output=True, timeout=60).stdout
        change = held[path].change
        ours = b"".join(hunk_text(change.lines, hunk) for hunk in change.hunks)
        assert git[git.index(b"\n@@") + 1:] == ours


def test_split_and_edited_hunks(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        a = {h.path: h for h in ws.step_files(Direction.UNDO, "s")}["a.txt"]
        first = a.change.hunks[0]
        parts = split_hunk(a.change.lines, first)
        assert len(parts) == 2
        assert hunk_text(a.change.lines, parts[1]).startswith(b"@@ -3,6 +3,7 @@")
        # keep "four and a half" (its '+' made context): the rest of the hunk is taken back
        shown = hunk_text(a.change.lines, parts[1]).decode()
        edited = shown.replace("+four and a half", " four and a half")
        with pytest.raises(EditFailed):
            parse_edited_hunk(a.change.lines, parts[1], b"-line 3\n+nonsense\n", reverse=True)
        hunk = parse_edited_hunk(a.change.lines, parts[1], edited.encode(), reverse=True)
        ws.undo("s", picks=[a.pick(ws.store, Picked(hunks=(hunk,)), Direction.UNDO)])
        text = (root / "a.txt").read_text()
        assert "line 3\nline 4\nfour and a half\n" in text and "one\n" in text


# --- any split, any order ------------------------------------------------------------------------


def _chain_holds(ws: Workspace, root: Path) -> None:
    """The turn's two entries meet: each file the undo stack's entry holds part of is now as
    that part ends, and where the redo stack's entry holds the rest, the rest starts there; a
    file only the redo stack's entry holds is as its part starts (nobody else edits here)."""
    log = ws.log("s")
    ends = {f.path: f.change.end for f in ws.step_files(Direction.UNDO, "s")} if log.undo else {}
    starts = ({f.path: f.change.start for f in ws.step_files(Direction.REDO, "s")}
              if log.redo else {})
    for path in ends.keys() & starts.keys():
        assert ends[path] == starts[path], path
    for path, side in {**starts, **ends}.items():
        target = root / path
        now = target.read_bytes() if target.exists() else None
        if side is None:
            assert now is None, path
        else:
            assert now is not None and hashlib.sha1(b"blob %d\0" % len(now) + now).hexdigest() \
                == side.sha, path


@st.composite
def _choices(draw: st.DrawFn, count: int) -> list[int]:
    """For each of `count` files: 0 skip, 1 the whole change, 2 some hunks, 3 some split hunks."""
    return draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_into_paths_and_hunks_in_any_order_ends_as_the_whole_turn(tree_factory,
                                                                            data):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
        after = files(root)
        for _ in range(data.draw(st.integers(1, 6), label="steps")):
            log = ws.log("s")
            ways = [d for d, stack in ((Direction.UNDO, log.undo), (Direction.REDO, log.redo))
                    if stack]
            direction = data.draw(st.sampled_from(ways), label="direction")
            held = ws.step_files(direction, "s")
            if data.draw(st.booleans(), label="some paths, not hunks"):
                paths = data.draw(st.lists(st.sampled_from(sorted({f.path for f in held})),
                                           min_size=1, unique=True), label="paths")
                ws.step(direction, "s", paths=paths)
                _chain_holds(ws, root)
                continue
            kinds = data.draw(_choices(len(held)), label="choices")

            def choose(file, kinds=kinds, held=held):
                kind = kinds[held.index(file)]
                change = file.change
                if kind == 0:
                    return None
                if kind == 1 or change.lines is None:
                    return Picked(whole=True) if change.lines is None else Picked(
                        hunks=tuple(change.hunks), mode=True)
                hunks = change.hunks
                if kind == 3:
                    hunks = [part for hunk in hunks for part in split_hunk(change.lines, hunk)]
                some = data.draw(st.lists(st.sampled_from(hunks), unique=True, max_size=4),
                                 label="hunks")
                return Picked(hunks=tuple(some))

            picks = _pick(ws, direction, choose)
            if not picks:
                continue
            ws.step(direction, "s", picks=picks)
            _chain_holds(ws, root)
        while ws.log("s").undo:
            ws.undo("s")
        assert files(root) == START
        log = ws.log("s")
        assert [(p.label, p.left_out, p.cut) for p in log.redo] == [("t1", frozenset(), None)]
        ws.redo("s")
        assert files(root) == after
        assert not ws.log("s").redo


def test_restore_and_revert_of_some_hunks(tree_factory):
    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        start = ws.snapshot().id
        _turn(ws, root)
        after = files(root)
        # restore -p: the change from the files now to the snapshot, one hunk of a.txt applied
        changes = {c.path: c for c in ws.restore_files(start, paths=["a.txt", "gone.txt"])}
        assert sorted(changes) == ["a.txt", "gone.txt"] and changes["gone.txt"].kind == "addition"
        a = changes["a.txt"]
        ws.restore(start, picks=[a.pick(ws.store, Picked(hunks=(a.hunks[1],)), back=False),
                                 changes["gone.txt"].pick(ws.store, Picked(whole=True),
                                                          back=False)])
        now = files(root)
        assert "line 20\n" in now["a.txt"] and "one\n" in now["a.txt"]
        assert now["gone.txt"] == "bye\n" and now["b.txt"] == after["b.txt"]
        ws.undo()   # the restore is one step back
        assert files(root) == after
        # revert -p: the turn's change, one hunk of a.txt taken back
        point = ws.log("s").undo[-1].id
        changes = {c.path: c for c in ws.revert_files(point, session="s")}
        a = changes["a.txt"]
        ws.revert(point, session="s",
                  picks=[a.pick(ws.store, Picked(hunks=(a.hunks[0],)), back=True)])
        now = files(root)
        assert "line 1\nline 2\nline 3\nline 4\nline 5\n" in now["a.txt"]
        assert "twenty\n" in now["a.txt"] and now["new.txt"] == "n1\n"
        stale = a.pick(ws.store, Picked(hunks=(a.hunks[2],)), back=True)
        with pytest.raises(UsageError, match="pick again"):
            ws.restore(start, picks=[stale])


# --- the -p question, through the real command line ----------------------------------------------


def _cli(root: Path, *args: str, answers: str = "", env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    return subprocess.run([*UNDOSTORE, *args], cwd=root, input=answers, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1",
                                                       **(env or {})})


def _cli_turn(root: Path) -> None:
    """A turn recorded through the command line: its point, its files, its end (the next
    command closes it)."""
    assert _cli(root, "snapshot", "--session", "s", "--label", "t1").returncode == 0
    (root / "gone.txt").unlink()
    for path, text in _after().items():
        (root / path).write_bytes(text.encode())


def test_undo_p_asks_hunk_by_hunk_as_git_and_takes_back_the_picked(tree_factory):
    root = tree_factory(SPEC)
    _cli_turn(root)
    # a.txt: split the first hunk, undo its second part, not the others; b.txt: q
    done = _cli(root, "undo", "-p", "-s", "s", answers="s\nn\ny\nn\nd\nq\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,8 +1,9 @@")
    assert "(1/3) Undo this hunk [y,n,q,a,d,s,e,?]? Split into 2 hunks." in out
    assert "(1/4) Undo this hunk [y,n,q,a,d,e,?]? " in out
    assert "diff --git a/b.txt b/b.txt" in out and "Undo this hunk [y,n,q,a,d,e,?]? " in out
    assert "gone.txt" not in out, "q asks nothing more"
    text = (root / "a.txt").read_text()
    assert "one\n" in text and "line 3\nline 4\nline 5" in text and "twenty\n" in text
    assert (root / "b.txt").read_text() == "b1\n" and not (root / "gone.txt").exists()
    assert 'undo: took back "t1" (1 turn; 1 file)' in out
    assert "part of a turn: a.txt" in out
    log = _cli(root, "log", "-s", "s").stdout
    assert "(part of the turn: some hunks of a.txt)" in log and "redo" in log
    # ? prints the help; an unknown answer too; the end of the input is q
    done = _cli(root, "redo", "-p", "-s", "s", answers="?\nx\n")
    assert done.returncode == 0 and "y - redo this hunk" in done.stdout
    assert "s - split" not in done.stdout and "e - manually edit the current hunk" in done.stdout
    assert "no hunk picked; nothing was changed" in done.stderr
    # redo -p of the hunk taken back, then undo of the whole turn
    assert _cli(root, "redo", "-p", "-s", "s", answers="y\n").returncode == 0
    assert (root / "a.txt").read_text() == _after()["a.txt"]
    assert _cli(root, "undo", "-s", "s", "--yes").returncode == 0
    assert files(root) == START


def test_restore_p_and_revert_p_through_the_command_line(tree_factory):
    root = tree_factory(SPEC)
    start = _cli(root, "snapshot").stdout.strip()
    _cli_turn(root)
    done = _cli(root, "restore", "-p", start, "--", "a.txt", answers="n\ny\nn\n")
    assert done.returncode == 0, done.stderr
    assert "(2/3) Restore this hunk [y,n,q,a,d,e,?]? " in done.stdout
    text = (root / "a.txt").read_text()
    assert "one\n" in text and "line 19\n" in text and "line 29\n" not in text
    point = _cli(root, "log", "-s", "s", "--json")
    turn = json.loads(point.stdout)["undo"][-1]["id"]
    done = _cli(root, "revert", "-p", turn, "-s", "s", answers="d\nn\ny\n")
    assert done.returncode == 0, done.stderr
    assert "Revert deletion [y,n,q,a,d,?]? " in done.stdout
    assert (root / "gone.txt").read_text() == "bye\n" and (root / "b.txt").read_text() == "b1\n"


@needs_tmux
def test_undo_p_on_a_terminal_with_a_hunk_edited(tree_factory, tmp_path):
    root = tree_factory(SPEC)
    _cli_turn(root)
    editor = tmp_path / "editor.sh"   # the person's edit: keep "four and a half"
    editor.write_text("#!/bin/sh\nsed -i 's/^+four and a half/ four and a half/' \"$1\"\n")
    editor.chmod(0o755)
    tmux = Tmux(tmp_path)
    try:
        tmux.start(["undo", "-p", "-s", "s", "--", "a.txt"], root,
                   {"NO_COLOR": None, "EDITOR": str(editor), "VISUAL": None})
        tmux.wait_for("(1/3) Undo this hunk [y,n,q,a,d,s,e,?]?")
        assert "\x1b[31m-line 1" in tmux.screen(colours=True), "git's colours on a terminal"
        tmux.send("e", "Enter")
        tmux.wait_for("(2/3) Undo this hunk")
        tmux.send("n", "Enter")
        tmux.wait_for("(3/3) Undo this hunk")
        tmux.send("n", "Enter")
        screen = tmux.wait_for("[exit 0]")
        assert 'undo: took back "t1"' in screen
    finally:
        tmux.close()
    text = (root / "a.txt").read_text()
    assert text.startswith("line 0\nline 1\nline 2\nline 3\nline 4\nfour and a half\nline 5\n")
    assert "twenty\n" in text


@pytest.mark.skipif(os.name == "nt", reason="kills a child mid-restore (POSIX timing)")
def test_an_undo_of_some_hunks_killed_half_way_is_finished_with_its_cut(tree_factory, tmp_path):
    from .crash_support import run_until_stall, spawn

    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
    after = files(root)
    marker = str(tmp_path / "m")
    assert run_until_stall(spawn("undo-hunks", str(root), stall_at=2, marker=marker), marker,
                           timeout=60)
    with Workspace(root) as ws:
        ws.snapshot()   # any command that takes the lock finishes the restore, and its step
        now = files(root)
        assert now["a.txt"].startswith("".join(LINES[:6])) and "twenty\n" in now["a.txt"]
        assert now["src/c.py"].startswith("line 0\n") and now["src/c.py"].endswith("c eleven")
        assert now["b.txt"] == "b0\n" and now["new.txt"] == after["new.txt"]
        log = ws.log("s")
        assert [sorted(p.left_out) for p in log.undo] == [["b.txt"]]
        assert [p.cut.paths for p in (*log.undo, *log.redo)] == [
            frozenset({"a.txt", "src/c.py"})] * 2
        ws.undo("s")
        assert files(root) == START
        assert [(p.left_out, p.cut) for p in ws.log("s").redo] == [(frozenset(), None)]


def test_the_hunks_asked_after_an_undo_killed_half_way_are_those_of_the_finished_step(
        tree_factory, tmp_path):
    """`undo -p` lists the files only once the restore a crash left half-done is finished
    (with its step and its cut): never a half-restored file's hunks."""
    from undostore.history.direction import Direction
    from undostore.restore.pending import pending_restore

    from .crash_support import run_until_stall, spawn

    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        _turn(ws, root)
    marker = str(tmp_path / "m")
    assert run_until_stall(spawn("undo-hunks", str(root), stall_at=2, marker=marker), marker,
                           timeout=60)
    with Workspace(root) as ws:
        assert pending_restore(ws.store) is not None
        held = ws.step_files(Direction.UNDO, "s")
        assert pending_restore(ws.store) is None
        assert [p.cut.paths for p in ws.log("s").undo] == [frozenset({"a.txt", "src/c.py"})]
        assert sorted(f.path for f in held) == ["a.txt", "gone.txt", "new.txt", "src/c.py"]


@pytest.mark.skipif(os.name == "nt", reason="exec bits")
def test_a_mode_change_is_its_own_question_first(tree_factory):
    from undostore_cli.commands.hunk_prompt import Prompt, Question

    root = tree_factory(SPEC)
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="t1")
        (root / "b.txt").write_bytes(b"b1\n")
        (root / "b.txt").chmod(0o755)
        ws.end_turn("s")
        held = [h for h in ws.step_files(Direction.UNDO, "s") if h.path == "b.txt"]
        assert held[0].change.mode_changed
        out = io.StringIO()
        answers = iter(["n\n", "y\n"])
        picked = Prompt("Undo", back=True, colored=False, read=lambda: next(answers),
                        out=out).ask(Question(held[0].change))
        assert "old mode 100644\nnew mode 100755\n" in out.getvalue()
        assert "Undo mode change [y,n,q,a,d,?]? " in out.getvalue()
        assert picked.hunks and not picked.mode
        ws.undo("s", picks=[held[0].pick(ws.store, picked, Direction.UNDO)])
        assert (root / "b.txt").read_text() == "b0\n" and os.access(root / "b.txt", os.X_OK)
        answers = iter(["a\n"])
        again = [h for h in ws.step_files(Direction.UNDO, "s") if h.path == "b.txt"][0]
        picked = Prompt("Undo", back=True, colored=False, read=lambda: next(answers),
                        out=io.StringIO()).ask(Question(again.change))
        assert picked.mode and not again.change.hunks
        ws.undo("s", picks=[again.pick(ws.store, picked, Direction.UNDO)])
        assert not os.access(root / "b.txt", os.X_OK)

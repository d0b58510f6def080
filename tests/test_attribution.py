"""Attribution by tool call (history/attribution.py): where the host reports its tool calls, a
turn is what its calls changed; the user's edits, made between or beside them, are kept by undo
and redo."""

from __future__ import annotations

import os
import time

from undostore import ToolCall, Workspace
from undostore.history.toolcall import FILE, SHELL

LINES = "".join(f"{i}\n" for i in range(1, 10))


def _edit(path, old: str, new: str) -> None:
    """One line changed, the rest byte for byte (text mode would turn every line's end into
    CRLF on Windows: a change of every line)."""
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode()))


def test_a_file_tools_change_is_the_turn_and_the_users_note_beside_it_is_kept(tree_factory):
    root = tree_factory({"a.py": "old\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="fix a")
        assert ws.call_started(ToolCall("c1", "Edit", FILE, ("a.py",)), "s")
        (root / "a.py").write_text("agent\n")
        (root / "notes.txt").write_text("mine\n")   # the user's editor, during the call
        assert ws.call_finished("c1", "s")
        ws.end_turn("s")
        assert [c.path for c in ws.show(session="s").changes] == ["a.py"]
        result = ws.undo("s", confirm=lambda plan: True)
        assert result.modified == ["a.py"] and not result.deleted
        assert (root / "a.py").read_text() == "old\n"
        assert (root / "notes.txt").read_text() == "mine\n"
        ws.redo("s", confirm=lambda plan: True)
        assert (root / "a.py").read_text() == "agent\n"
        assert (root / "notes.txt").read_text() == "mine\n"


def test_a_shell_owns_what_changed_during_it_and_not_what_changed_after(tree_factory):
    root = tree_factory({"b.txt": "b\n", "c.txt": "c\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="clean up")
        ws.call_started(ToolCall("c1", "Bash", SHELL), "s")
        (root / "b.txt").unlink()                   # `rm b.txt`: a shell names no file
        ws.call_finished("c1", "s")
        (root / "c.txt").write_text("users\n")      # after the call, before the turn ends
        ws.end_turn("s")
        assert [c.path for c in ws.show(session="s").changes] == ["b.txt"]
        ws.undo("s", confirm=lambda plan: True)
        assert (root / "b.txt").read_text() == "b\n"
        assert (root / "c.txt").read_text() == "users\n"


def test_a_users_edit_between_two_calls_on_one_file_survives_the_undo(tree_factory):
    """Call 1 changes line 1, the user line 9, call 2 line 5: undo takes back lines 1 and 5
    and keeps the user's line 9 (two segments, each taken back 3-way)."""
    root = tree_factory({"a.py": LINES})
    a = root / "a.py"
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="edit twice")
        ws.call_started(ToolCall("c1", "Edit", FILE, ("a.py",)), "s")
        _edit(a, "1\n", "one\n")
        ws.call_finished("c1", "s")
        _edit(a, "9\n", "nine\n")                   # the user, between the calls
        ws.call_started(ToolCall("c2", "Edit", FILE, ("a.py",)), "s")
        _edit(a, "5\n", "five\n")
        ws.call_finished("c2", "s")
        ws.end_turn("s")
        ws.undo("s", confirm=lambda plan: True)
        assert a.read_text() == LINES.replace("9\n", "nine\n")
        ws.redo("s", confirm=lambda plan: True)
        assert a.read_text() == LINES.replace("1\n", "one\n").replace("5\n", "five\n") \
            .replace("9\n", "nine\n")


def test_a_call_whose_after_event_never_came_ends_at_the_sessions_next_prompt(tree_factory):
    root = tree_factory({"a.py": "old\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="interrupted")
        ws.call_started(ToolCall("c1", "Bash", SHELL), "s")
        (root / "a.py").write_text("half\n")        # Esc: no after event
        ws.snapshot(session="s", label="next prompt")
        assert not ws.call_finished("c1", "s")      # a late one finds it ended
        (root / "b.txt").write_text("users\n")
        ws.undo("s", steps=1, confirm=lambda plan: True)   # the next prompt changed nothing
        assert (root / "a.py").read_text() == "old\n"
        assert (root / "b.txt").read_text() == "users\n"


def test_a_turn_whose_calls_changed_nothing_has_nothing_to_undo(tree_factory):
    root = tree_factory({"a.py": "old\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="look only")
        ws.call_started(ToolCall("c1", "Bash", SHELL), "s")
        ws.call_finished("c1", "s")
        (root / "a.py").write_text("users\n")
        ws.end_turn("s")
        assert ws.show(session="s", id=ws.log("s").undo[0].id).changes == []
        assert ws.log("s").turns == [None]


def test_a_shell_call_leaves_another_conversations_file_tool_its_file(tree_factory):
    root = tree_factory({"a.txt": "a\n", "x.txt": "x\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="A", label="build")
        ws.snapshot(session="B", label="edit x")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        ws.call_started(ToolCall("b1", "Edit", FILE, ("x.txt",)), "B")
        (root / "x.txt").write_text("B's\n")
        ws.call_finished("b1", "B")
        (root / "a.txt").write_text("A's\n")
        ws.call_finished("a1", "A")
        assert [c.path for c in ws.show(session="A").changes] == ["a.txt"]
        ws.undo("A", confirm=lambda plan: True)
        assert (root / "a.txt").read_text() == "a\n" and (root / "x.txt").read_text() == "B's\n"
        ws.undo("B", confirm=lambda plan: True)
        assert (root / "x.txt").read_text() == "x\n"


def test_a_file_a_shell_wrote_before_another_conversations_file_tool_is_in_doubt(
        tree_factory):
    """A's shell writes x.txt, then B's file tool edits it, all while A's shell runs: x.txt is
    not B's alone (its change before B's call is nobody's but maybe A's shell), so A's undo
    refuses naming it and B, and with `keep_doubtful` leaves it; B's undo takes back B's own
    edit only."""
    import pytest

    from undostore import DoubtfulChange

    root = tree_factory({"a.txt": "a\n", "x.txt": LINES})
    with Workspace(root) as ws:
        ws.snapshot(session="A", label="build")
        ws.snapshot(session="B", label="edit x")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        _edit(root / "x.txt", "1\n", "A's 1\n")          # A's shell, first
        ws.call_started(ToolCall("b1", "Edit", FILE, ("x.txt",)), "B")
        _edit(root / "x.txt", "9\n", "B's 9\n")
        ws.call_finished("b1", "B")
        (root / "a.txt").write_text("A's\n")
        ws.call_finished("a1", "A")
        with pytest.raises(DoubtfulChange) as refused:
            ws.undo("A", confirm=lambda plan: True)
        assert refused.value.conflicts == ["x.txt"] and "'B'" in str(refused.value)
        ws.undo("A", keep_doubtful=True, confirm=lambda plan: True)
        assert (root / "a.txt").read_text() == "a\n"
        assert (root / "x.txt").read_bytes() == LINES.replace("1\n", "A's 1\n", 1).replace(
            "9\n", "B's 9\n").encode()
        ws.undo("B", confirm=lambda plan: True)
        assert (root / "x.txt").read_bytes() == LINES.replace("1\n", "A's 1\n", 1).encode()


def test_a_file_two_conversations_shells_may_have_written_is_in_doubt(tree_factory):
    import pytest

    from undostore import DoubtfulChange

    root = tree_factory({"a.txt": "a\n", "y.txt": "y\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="A", label="a")
        ws.snapshot(session="B", label="b")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        ws.call_started(ToolCall("b1", "Bash", SHELL), "B")
        (root / "y.txt").write_text("whose?\n")
        ws.call_finished("b1", "B")
        (root / "a.txt").write_text("A's\n")       # once B's shell ended: A's alone
        ws.call_finished("a1", "A")
        before = {p.name: p.read_text() for p in root.iterdir() if p.is_file()}
        with pytest.raises(DoubtfulChange) as refused:
            ws.undo("A", confirm=lambda plan: True)
        assert refused.value.conflicts == ["y.txt"] and "'B'" in str(refused.value)
        assert refused.value.exit_code == 3
        assert {p.name: p.read_text() for p in root.iterdir() if p.is_file()} == before
        ws.undo("A", keep_doubtful=True, confirm=lambda plan: True)
        assert (root / "a.txt").read_text() == "a\n" and (root / "y.txt").read_text() == "whose?\n"


def test_an_undo_run_while_another_conversations_shell_runs_is_not_that_shells(tree_factory):
    root = tree_factory({"z.txt": "z\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="B", label="b")
        ws.call_started(ToolCall("b1", "Edit", FILE, ("z.txt",)), "B")
        (root / "z.txt").write_text("B's\n")
        ws.call_finished("b1", "B")
        ws.snapshot(session="A", label="a")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        ws.undo("B", confirm=lambda plan: True)      # typed in B while A's shell runs
        ws.call_finished("a1", "A")
        assert (root / "z.txt").read_text() == "z\n"
        assert ws.log("A").turns == [None]          # the undo's write is not A's
        ws.redo("B", confirm=lambda plan: True)
        assert (root / "z.txt").read_text() == "B's\n"


def test_a_file_tool_reads_only_its_files_and_leaves_the_next_walk_whole(tree_factory):
    """A file tool's call reads the files it names alone (no walk: `walk` "hinted"), and saves
    no stat cache, so a file the user adds beside it meanwhile is in the next snapshot."""
    from undostore import SnapshotOptions

    root = tree_factory({"src": {"a.py": "old\n", "b.py": "b\n"}, ".gitignore": ".env\n",
                         ".env": "secret\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="edit")
        hinted = ws._snapshot_locked(SnapshotOptions(only=("src/a.py",)))
        assert hinted.walk == "hinted"
        ws.call_started(ToolCall("c1", "Write", FILE, ("src/a.py", ".env")), "s")
        (root / "src" / "a.py").write_text("new\n")
        (root / ".env").write_text("the tool's\n")      # ignored: never the turn's
        (root / "src" / "c.py").write_text("the user's\n")
        past = time.time() - 100   # a folder time no snapshot takes for a racy one
        os.utime(root / "src", (past, past))
        ws.call_finished("c1", "s")
        assert [c.path for c in ws.show(session="s").changes] == ["src/a.py"]
        later = ws.snapshot()
        assert later.walk == "full"
        assert "src/c.py" in {c.path for c in ws.compare(hinted.id, later.id).changes}
        done = ws.undo("s", confirm=lambda plan: True)
        assert (done.created, done.modified, done.deleted) == ([], ["src/a.py"], []), done
    assert (root / "src" / "a.py").read_text() == "old\n"
    assert (root / ".env").read_text() == "the tool's\n"
    assert (root / "src" / "c.py").read_text() == "the user's\n"


def test_a_file_tool_that_edits_an_ignore_file_or_makes_a_folder_is_still_exact(tree_factory):
    root = tree_factory({"a.txt": "a\n", ".gitignore": "*.log\n", "x.log": "log\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="unignore logs")
        ws.call_started(ToolCall("c1", "Edit", FILE, (".gitignore",)), "s")
        (root / ".gitignore").write_text("")
        ws.call_finished("c1", "s")
        ws.call_started(ToolCall("c2", "Write", FILE, ("new/deep/f.txt",)), "s")
        (root / "new" / "deep").mkdir(parents=True)
        (root / "new" / "deep" / "f.txt").write_text("f\n")
        ws.call_finished("c2", "s")
        assert sorted(c.path for c in ws.show(session="s").changes) == [
            ".gitignore", "new/deep/f.txt"]
        ws.undo("s", confirm=lambda plan: True)
    assert (root / ".gitignore").read_text() == "*.log\n"
    assert not (root / "new" / "deep" / "f.txt").exists()
    assert (root / "x.log").read_text() == "log\n"


def test_the_activity_record_keeps_what_a_running_call_may_be_weighed_against(tmp_path):
    """Ended spans stay while a call they overlap still runs, else `KEEP_SECONDS`; a call
    open past `ABANDONED_SECONDS` is one whose end never came, dropped with what it kept."""
    from undostore.history import activity
    from undostore.history.activity import ABANDONED_SECONDS, KEEP_SECONDS, Span

    cache = str(tmp_path)
    now = time.time()

    def span(call: str, start: float, end: float | None, session: str = "A") -> Span:
        return Span(session, call, SHELL, (), now + start, None if end is None else now + end)

    long_ago = -(KEEP_SECONDS + 500)
    for old in (span("abandoned", -(ABANDONED_SECONDS + 10), None, "C"),
                span("before-it", long_ago - 100, long_ago - 50),
                span("overlaps-it", long_ago - 100, long_ago + 50, "B"),
                span("recent", -10, -5)):
        activity.begin(cache, old)
    activity.begin(cache, span("running", long_ago, None))
    activity.end(cache, "Z", "no such call", now)   # any event now keeps the record so
    assert {s.call for s in activity.load(cache)} == {"overlaps-it", "recent", "running"}
    activity.end(cache, "A", "running", now)
    assert {s.call for s in activity.load(cache)} == {"recent", "running"}


def test_a_file_tool_call_abandoned_long_ago_leaves_a_later_shell_its_file(
        tree_factory, monkeypatch):
    """B's host was killed mid-call (its after event never came) and B never went on: hours
    later, A's shell call that writes the file B's tool named owns that change (it would
    otherwise be nobody's: left out of A's turn, never in B's)."""
    root = tree_factory({"x.txt": "x\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="B", label="edit x")
        real = time.time
        with monkeypatch.context() as past:
            past.setattr(time, "time", lambda: real() - 2 * 3600)
            ws.call_started(ToolCall("b1", "Edit", FILE, ("x.txt",)), "B")
        ws.snapshot(session="A", label="build")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        _edit(root / "x.txt", "x", "A's")
        ws.call_finished("a1", "A")
        assert [c.path for c in ws.show(session="A").changes] == ["x.txt"]
        ws.undo("A", confirm=lambda plan: True)
        assert (root / "x.txt").read_bytes() == b"x\n"


def test_a_call_whose_end_never_came_leaves_the_users_later_edits_alone(
        tree_factory, monkeypatch):
    """The host was killed during a shell call (no after event) and the user edited a file an
    hour later, then went on: the next prompt ends the call, whose change is then what it can
    have written; the user's edit is nobody's turn, and `/undo` leaves it."""
    from undostore.history.attribution import LONGEST_CALL_SECONDS

    root = tree_factory({"x.txt": "x\n", "y.txt": "y\n"})
    began = time.time() - 2 * LONGEST_CALL_SECONDS - 3600
    with Workspace(root) as ws:
        ws.snapshot(session="A", label="build it")
        real = time.time
        with monkeypatch.context() as past:
            past.setattr(time, "time", lambda: began)
            ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        _edit(root / "y.txt", "y", "the agent's shell")
        os.utime(root / "y.txt", (began + 5, began + 5))   # as the killed call wrote it
        assert time.time is real
        _edit(root / "x.txt", "x", "the user's own edit")
        ws.snapshot(session="A", label="next prompt")
        (turn,) = [p for p in ws.log("A").undo if p.label == "build it"]
        assert [c.path for c in ws.show(id=turn.id, session="A").changes] == ["y.txt"]
        undone = ws.undo("A", confirm=lambda plan: True)
        assert undone.modified == ["y.txt"]
        assert (root / "y.txt").read_bytes() == b"y\n"
        assert (root / "x.txt").read_bytes() == b"the user's own edit\n"


def test_a_call_cut_short_and_ended_by_the_next_prompt_soon_after_keeps_its_change(
        tree_factory):
    """Esc during a shell call (no after event), the next prompt a moment later: all that
    changed since the call began is the call's, as before."""
    root = tree_factory({"y.txt": "y\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="A", label="build it")
        ws.call_started(ToolCall("a1", "Bash", SHELL), "A")
        _edit(root / "y.txt", "y", "the agent's shell")
        ws.snapshot(session="A", label="next prompt")
        ws.undo("A", confirm=lambda plan: True)   # the new prompt's turn changed nothing
        assert (root / "y.txt").read_bytes() == b"y\n"

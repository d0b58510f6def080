"""Undo and redo of some paths (issue 59): `undo [N] -- PATH...` takes back only those paths of
the turns' own change, 3-way as a whole undo; the rest of each turn stays on the undo stack and
the part taken goes to the redo stack, where `redo` applies it again; the two parts of a turn
are one entry again once no path is left out (history/steps.py `narrow`, `apply`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from undostore import ConflictError, ToolCall, UsageError, Workspace
from undostore.history.toolcall import FILE, SHELL

START = {"a.txt": "a0\n", "b.txt": "b0\n", "src": {"c.py": "c0\n", "d.py": "d0\n"}}


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _turn(ws: Workspace, root: Path, label: str, writes: dict[str, str | None],
          session: str = "s") -> None:
    """A prompt, its files written (None: deleted), the turn's end."""
    ws.snapshot(session=session, label=label)
    for path, text in writes.items():
        target = root / path
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    ws.end_turn(session)


def _stacks(ws: Workspace, session: str = "s") -> tuple[list, list]:
    log = ws.log(session)
    return ([(p.label, sorted(p.left_out)) for p in log.undo],
            [(p.label, sorted(p.left_out)) for p in log.redo])


def test_undo_of_some_paths_takes_back_only_those_and_the_rest_later(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n", "b.txt": "b1\n", "src/c.py": "c1\n",
                               "new.txt": "n1\n"})
        after = files(root)
        result = ws.undo("s", paths=["a.txt", "src"])
        assert result.modified == ["a.txt", "src/c.py"] and not result.deleted
        assert result.parts == [["a.txt", "src/c.py"]]
        assert files(root) == {**after, "a.txt": "a0\n", "src/c.py": "c0\n"}
        assert _stacks(ws) == ([("t1", ["a.txt", "src/c.py"])],
                               [("t1", ["b.txt", "new.txt"])])
        ws.undo("s")   # the rest of the turn
        assert files(root) == {"a.txt": "a0\n", "b.txt": "b0\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        assert _stacks(ws) == ([], [("t1", [])])   # one entry again
        ws.redo("s", paths=["new.txt"])
        assert files(root)["new.txt"] == "n1\n" and files(root)["a.txt"] == "a0\n"
        assert _stacks(ws) == ([("t1", ["a.txt", "b.txt", "src/c.py"])],
                               [("t1", ["new.txt"])])
        ws.redo("s")
        assert files(root) == after
        assert _stacks(ws) == ([("t1", [])], [])


def test_a_path_step_keeps_the_users_edit_and_other_turns(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n", "src/c.py": "c1\n"})
        _turn(ws, root, "t2", {"b.txt": "b2\n", "src/d.py": "d2\n"})
        (root / "src" / "c.py").write_text("c1\nthe user's line\n")   # the user, after
        ws.undo("s", steps=2, paths=["src/d.py", "a.txt"])
        assert files(root) == {"a.txt": "a0\n", "b.txt": "b2\n",
                               "src/c.py": "c1\nthe user's line\n", "src/d.py": "d0\n"}
        assert _stacks(ws) == ([("t2", ["src/d.py"]), ("t1", ["a.txt"])],
                               [("t1", ["src/c.py"]), ("t2", ["b.txt"])])
        assert [p.label for p in ws.log("s").redo] == ["t1", "t2"]   # t1's part: the next
        ws.redo("s", steps=2)
        assert files(root) == {"a.txt": "a1\n", "b.txt": "b2\n",
                               "src/c.py": "c1\nthe user's line\n", "src/d.py": "d2\n"}
        assert _stacks(ws) == ([("t2", []), ("t1", [])], [])


def test_a_path_no_turn_changed_is_refused_with_nothing_changed(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n"})
        before = files(root)
        with pytest.raises(UsageError, match="changed none of b.txt"):
            ws.undo("s", paths=["b.txt"])
        with pytest.raises(UsageError, match="leaves the root"):
            ws.undo("s", paths=["../a.txt"])
        with pytest.raises(UsageError, match="takes no paths"):
            ws.undo("s", whole=True, paths=["a.txt"])
        assert files(root) == before
        assert _stacks(ws) == ([("t1", [])], [])


def test_a_path_that_changed_since_conflicts_and_nothing_changes(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n", "b.txt": "b1\n"})
        (root / "a.txt").write_text("the user's\n")
        with pytest.raises(ConflictError, match="a.txt"):
            ws.undo("s", paths=["a.txt"])
        assert files(root)["a.txt"] == "the user's\n" and files(root)["b.txt"] == "b1\n"
        assert _stacks(ws) == ([("t1", [])], [])
        ws.undo("s", paths=["b.txt"])   # the other path has no conflict
        assert files(root)["b.txt"] == "b0\n"


def test_a_turn_of_tool_calls_is_split_by_its_calls_paths(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="calls")
        ws.call_started(ToolCall("e1", "Edit", FILE, ("a.txt",)), "s")
        (root / "a.txt").write_text("a1\n")
        ws.call_finished("e1", "s")
        (root / "b.txt").write_text("the user's b\n")   # outside every call: not the turn's
        ws.call_started(ToolCall("sh", "Bash", SHELL, ()), "s")
        (root / "src" / "c.py").write_text("c1\n")
        (root / "src" / "d.py").unlink()
        ws.call_finished("sh", "s")
        ws.end_turn("s")
        ws.undo("s", paths=["src/*.py"])
        assert files(root) == {"a.txt": "a1\n", "b.txt": "the user's b\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        with pytest.raises(UsageError, match="changed none of b.txt"):
            ws.undo("s", paths=["b.txt"])
        ws.undo("s")
        assert files(root) == {"a.txt": "a0\n", "b.txt": "the user's b\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        ws.redo("s")
        assert files(root) == {"a.txt": "a1\n", "b.txt": "the user's b\n", "src/c.py": "c1\n"}


def test_a_dry_run_of_some_paths_changes_nothing_and_says_what_it_would(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n", "b.txt": "b1\n"})
        before = files(root)
        result = ws.undo("s", paths=["b.txt"], dry_run=True)
        assert result.modified == ["b.txt"] and result.dry_run
        assert files(root) == before and _stacks(ws) == ([("t1", [])], [])


def test_the_command_line_takes_paths_after_two_dashes_from_the_folder_it_runs_in(
        tree_factory):
    import json

    from .conftest import Cli

    root = tree_factory(START)
    cli = Cli()

    def run(*args: str, cwd: Path = root) -> subprocess.CompletedProcess[str]:
        return cli.run(*args, cwd=cwd)

    assert run("snapshot", "-s", "s", "--label", "t1").returncode == 0
    (root / "a.txt").write_text("a1\n")
    (root / "b.txt").write_text("b1\n")
    (root / "src" / "c.py").write_text("c1\n")
    done = run("undo", "-s", "s", "--yes", "--json", "--", "c.py", "../a.txt",
               cwd=root / "src")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["modified"] == ["a.txt", "src/c.py"] and doc["parts"] == [["a.txt", "src/c.py"]]
    assert files(root) == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                           "src/d.py": "d0\n"}
    log = run("log", "-s", "s").stdout.splitlines()
    assert log[0].endswith("t1  (part of the turn: without a.txt, src/c.py)")
    assert log[1].endswith("(undone: t1)  (part of the turn: without b.txt)")
    assert json.loads(run("log", "-s", "s", "--json").stdout)["undo"][0]["left_out"] == [
        "a.txt", "src/c.py"]
    shown = run("show", "-s", "s").stdout
    assert shown.endswith(" b.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n")
    missed = run("undo", "-s", "s", "--yes", "--", "nothing.txt")
    assert missed.returncode == 2 and "changed none of nothing.txt" in missed.stderr
    (root / "b.txt").write_text("the user's\n")
    refused = run("undo", "-s", "s", "--yes", "--", "b.txt")
    assert refused.returncode == 3 and "b.txt" in refused.stderr
    (root / "b.txt").write_text("b1\n")
    plain = run("redo", "-s", "s", "--yes", "--", "src")
    assert plain.returncode == 0, plain.stderr
    assert "part of a turn: src/c.py; the rest stays undone" in plain.stdout
    assert files(root)["src/c.py"] == "c1\n" and files(root)["a.txt"] == "a0\n"
    assert "[-- PATH...]" in run("redo", "--help").stdout

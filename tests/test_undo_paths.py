"""Undo and redo of some paths (issue 59): `undo [N] -- PATH...` takes back only those paths of
the turns' own change, 3-way as a whole undo; the rest of each turn stays on the undo stack and
the part taken goes to the redo stack, where `redo` applies it again; the two parts of a turn
are one entry again once no path is left out (history/steps.py `narrow`, `apply`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undostore import ConflictError, Direction, ToolCall, UsageError, Workspace
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


PATHS = ("a.txt", "b.txt", "d/c.txt", "d/e.txt", "f.txt")
_CHANGE = st.sampled_from(["keep", "keep", "write", "delete"])


@st.composite
def _turn_and_splits(draw: st.DrawFn) -> tuple[dict, dict, list[list[str]], list[list[str]],
                                                str | None]:
    """Files before a turn, the turn's writes (None: deleted), two splits of the paths it
    changed into groups (the order to undo them in, then to redo them in), and a path the
    user edits after the turn (one it did not change)."""
    start = {p: f"{p} 0\n" for p in PATHS if draw(st.booleans())}
    writes: dict[str, str | None] = {}
    for path in PATHS:
        change = draw(_CHANGE)
        if change == "write":
            writes[path] = f"{path} 1\n"
        elif change == "delete" and path in start:
            writes[path] = None
    changed = sorted(writes)
    if not changed:
        writes[PATHS[0]] = "a.txt 1\n"
        changed = [PATHS[0]]

    def split() -> list[list[str]]:
        order = draw(st.permutations(changed))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(order) - 1)),
                                   max_size=len(order) - 1)))
        bounds = [0, *cuts, len(order)]
        return [list(order[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]

    untouched = [p for p in PATHS if p not in writes]
    user = draw(st.sampled_from(untouched)) if untouched and draw(st.booleans()) else None
    return start, writes, split(), split(), user


def _tree(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


@settings(max_examples=25, deadline=None)
@given(case=_turn_and_splits())
def test_a_turn_undone_and_redone_in_any_split_of_its_paths_ends_as_undone_whole(case):
    start, writes, undo_groups, redo_groups, user = case
    tmp = Path(tempfile.mkdtemp(prefix="undostore-split-"))
    try:
        root = tmp / "root"
        root.mkdir()
        _tree(root, start)
        with Workspace(root, store=str(tmp / "store")) as ws:
            ws.snapshot(session="s", label="turn")
            for path, text in writes.items():
                if text is None:
                    (root / path).unlink()
                else:
                    _tree(root, {path: text})
            ws.end_turn("s")
            after = files(root)
            if user is not None:
                _tree(root, {user: "the user's\n"})
            mine = {user: "the user's\n"} if user is not None else {}
            whole_undone = {**{p: t for p, t in start.items() if p != user}, **mine}
            whole_redone = {**{p: t for p, t in after.items() if p != user}, **mine}
            for group in undo_groups:
                ws.undo("s", paths=group)
            assert files(root) == whole_undone
            assert _stacks(ws) == ([], [("turn", [])])
            for group in redo_groups:
                ws.redo("s", paths=group)
            assert files(root) == whole_redone
            assert _stacks(ws) == ([("turn", [])], [])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_restore_of_some_paths_puts_back_only_those_and_undo_takes_it_back(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        point = ws.snapshot().id
        (root / "a.txt").write_text("a1\n")
        (root / "b.txt").write_text("b1\n")
        (root / "src" / "c.py").unlink()
        (root / "src" / "new.py").write_text("new\n")
        changed = files(root)
        result = ws.restore(point, paths=["a.txt", "src"])
        assert (result.created, result.modified, result.deleted) == (
            ["src/c.py"], ["a.txt"], ["src/new.py"])
        assert files(root) == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        assert ws.restore(point, paths=["a.txt"]).changed is False   # already so: nothing
        with pytest.raises(UsageError, match="no file in .* is at nothing.txt"):
            ws.restore(point, paths=["nothing.txt"])
        ws.undo()   # the restore was a turn of the default session: taken back exactly
        assert files(root) == changed


def test_a_revert_of_some_paths_takes_back_only_those_of_the_change(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        start = ws.snapshot().id
        (root / "a.txt").write_text("a1\n")
        (root / "src" / "c.py").write_text("c1\n")
        end = ws.snapshot().id
        (root / "b.txt").write_text("b2\n")   # later: stays
        result = ws.revert(start, end, paths=["src/c.py"])
        assert result.modified == ["src/c.py"] and not result.conflicts
        assert files(root) == {"a.txt": "a1\n", "b.txt": "b2\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        with pytest.raises(UsageError, match="changed none of b.txt"):
            ws.revert(start, end, paths=["b.txt"])


def test_restore_and_revert_take_paths_on_the_command_line(tree_factory):
    import json

    from .conftest import Cli

    root = tree_factory(START)
    cli = Cli()
    point = cli.run("snapshot", cwd=root).stdout.strip()
    (root / "a.txt").write_text("a1\n")
    (root / "src" / "c.py").write_text("c1\n")
    done = cli.run("restore", point, "--yes", "--json", "--", "c.py", cwd=root / "src")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["modified"] == ["src/c.py"]
    assert files(root)["a.txt"] == "a1\n" and files(root)["src/c.py"] == "c0\n"
    after = cli.run("snapshot", cwd=root).stdout.strip()
    (root / "b.txt").write_text("b1\n")
    done = cli.run("revert", point, after, "--yes", "--", "a.txt", cwd=root)
    assert done.returncode == 0, done.stderr
    assert files(root) == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                           "src/d.py": "d0\n"}
    wrong = cli.run("restore", point, "--yes", "--", "../outside.txt", cwd=root)
    assert wrong.returncode == 2 and "outside the root" in wrong.stderr


def test_slash_undo_and_redo_of_paths_in_a_host_take_only_those_from_its_folder(
        tree_factory):
    from .test_hook import hook
    from .test_undo_per_conversation import answer, prompt_event, turn

    root = tree_factory(START)
    turn(root, "c", "edit three", {"a.txt": "a1\n", "b.txt": "b1\n", "src/c.py": "c1\n"})
    sub = prompt_event(root, "/undo c.py ../a.txt", session="c")
    sub["cwd"] = str(root / "src")   # the host runs in a folder under the root
    told = answer(hook(sub))
    assert "(only a.txt, src/c.py: the rest of the turn stays)" in told, told
    assert files(root) == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                           "src/d.py": "d0\n"}
    told = answer(hook(prompt_event(root, "/redo 'src/c.py'", session="c")))
    assert "redid the last turn (only src/c.py" in told, told
    assert files(root)["src/c.py"] == "c1\n" and files(root)["a.txt"] == "a0\n"
    told = answer(hook(prompt_event(root, "/undo", session="c")))   # what the turn still holds
    assert files(root) == {"a.txt": "a0\n", "b.txt": "b0\n", "src/c.py": "c0\n",
                           "src/d.py": "d0\n"}, told
    told = answer(hook(prompt_event(root, "/undo ../outside", session="c")))
    assert "outside the root" in told and "nothing done" in told, told


def test_the_mcp_tools_take_paths(tree_factory):
    pytest.importorskip("mcp")
    from .mcp_support import payload, session

    root = tree_factory(START)

    async def script(client):  # noqa: ANN001, ANN202
        point = payload(await client.call_tool("snapshot", {"session": "s"}))["id"]
        (root / "a.txt").write_text("a1\n")
        (root / "b.txt").write_text("b1\n")
        (root / "src" / "c.py").write_text("c1\n")
        undone = payload(await client.call_tool("undo", {"session": "s", "paths": ["a.txt"]}))
        files_undone = files(root)
        redone = payload(await client.call_tool("redo", {"session": "s", "paths": ["a.txt"]}))
        restored = payload(await client.call_tool("restore", {"id": point, "paths": ["src"]}))
        files_restored = files(root)
        refused = await client.call_tool("undo", {"session": "s", "paths": ["nothing.txt"]})
        return undone, files_undone, redone, restored, files_restored, refused

    undone, files_undone, redone, restored, files_restored, refused = session(root, script)
    assert undone["modified"] == ["a.txt"] and undone["parts"] == [["a.txt"]]
    assert files_undone == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c1\n",
                            "src/d.py": "d0\n"}
    assert redone["modified"] == ["a.txt"]
    assert restored["modified"] == ["src/c.py"]
    assert files_restored == {"a.txt": "a1\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                              "src/d.py": "d0\n"}
    assert refused.is_error and "changed none of nothing.txt" in refused.content[0].text


def test_undo_of_a_middle_turn_keeps_the_later_ones(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n"})
        _turn(ws, root, "t2", {"b.txt": "b2\n"})
        _turn(ws, root, "t3", {"src/c.py": "c3\n"})
        result = ws.undo("s", turn=2)   # as log numbers them: t2
        assert [p.label for p in result.turns] == ["t2"] and result.modified == ["b.txt"]
        assert files(root) == {"a.txt": "a1\n", "b.txt": "b0\n", "src/c.py": "c3\n",
                               "src/d.py": "d0\n"}
        assert _stacks(ws) == ([("t3", []), ("t1", [])], [("t2", [])])
        ws.undo("s", turn=2, paths=["a.txt"])   # t1 now, only a.txt of it
        assert files(root)["a.txt"] == "a0\n" and files(root)["src/c.py"] == "c3\n"
        ws.redo("s")
        assert files(root)["a.txt"] == "a1\n"
        with pytest.raises(UsageError, match="no N, --to or --whole"):
            ws.undo("s", turn=1, steps=2)
        with pytest.raises(UsageError, match="--turn is for undo"):
            ws.step(Direction.REDO, "s", turn=1)   # what a front end asks with any flags
        # The redo put t1 back on top: t3 is turn 2 now, and its file changed since.
        assert [p.label for p in ws.log("s").undo] == ["t1", "t3"]
        (root / "src" / "c.py").write_text("the user's\n")
        with pytest.raises(ConflictError, match="src/c.py"):
            ws.undo("s", turn=2)
        assert files(root)["src/c.py"] == "the user's\n"


def test_a_middle_turn_from_a_host_from_the_command_line_and_over_mcp(tree_factory):
    import json

    from .conftest import Cli
    from .test_hook import hook
    from .test_undo_per_conversation import answer, prompt_event, turn

    root = tree_factory(START)
    turn(root, "c", "first", {"a.txt": "a1\n"})
    turn(root, "c", "second", {"b.txt": "b1\n"})
    turn(root, "c", "third", {"src/c.py": "c1\n"})
    told = answer(hook(prompt_event(root, "/undo turn 2", session="c")))
    assert told.startswith("undostore: undid turn 2 of session 'c' ('second'"), told
    assert files(root) == {"a.txt": "a1\n", "b.txt": "b0\n", "src/c.py": "c1\n",
                           "src/d.py": "d0\n"}
    done = Cli().run("undo", "--turn", "2", "-s", "c", "--yes", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    assert [t["label"] for t in json.loads(done.stdout)["turns"]] == ["first"]
    assert files(root)["a.txt"] == "a0\n" and files(root)["src/c.py"] == "c1\n"
    pytest.importorskip("mcp")
    from .mcp_support import payload, session

    async def script(client):  # noqa: ANN001, ANN202
        return (payload(await client.call_tool("undo", {"session": "c", "turn": 1,
                                                         "dry_run": True})),
                await client.call_tool("undo", {"session": "c", "turn": 0}))

    dry, bad = session(root, script)
    assert [t["label"] for t in dry["turns"]] == ["third"] and dry["modified"] == ["src/c.py"]
    assert bad.is_error


def test_undo_of_one_tool_call_takes_back_its_change_alone(tree_factory):
    root = tree_factory(START)
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="three calls")
        ws.call_started(ToolCall("e1", "Edit", FILE, ("a.txt",)), "s")
        (root / "a.txt").write_text("a1\n")
        ws.call_finished("e1", "s")
        ws.call_started(ToolCall("sh", "Bash", SHELL, (), "gen"), "s")
        (root / "src" / "c.py").write_text("c1\n")
        (root / "new.txt").write_text("new\n")
        ws.call_finished("sh", "s")
        ws.call_started(ToolCall("e2", "Edit", FILE, ("a.txt",)), "s")
        (root / "a.txt").write_text("a2\n")
        ws.call_finished("e2", "s")
        ws.end_turn("s")
        result = ws.undo("s", call=2)
        assert result.parts == [["new.txt", "src/c.py"]] and result.deleted == ["new.txt"]
        assert files(root) == {"a.txt": "a2\n", "b.txt": "b0\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        with pytest.raises(UsageError, match="another call of the turn changed too"):
            ws.undo("s", call=1)   # a.txt: calls 1 and 3 both
        with pytest.raises(UsageError, match="nothing left to take back"):
            ws.undo("s", call=2)
        with pytest.raises(UsageError, match="no call 4"):
            ws.undo("s", call=4)
        ws.redo("s")
        assert files(root)["new.txt"] == "new\n" and files(root)["src/c.py"] == "c1\n"
        assert _stacks(ws) == ([("three calls", [])], [])


def test_one_call_from_the_command_line_a_host_and_mcp(tree_factory):
    import json

    from .conftest import Cli
    from .test_hook import hook
    from .test_undo_per_conversation import answer, prompt_event

    root = tree_factory(START)

    def tool(event: str, call_id: str, name: str, tool_input: dict) -> None:
        done = hook({"session_id": "c", "cwd": str(root), "hook_event_name": event,
                     "tool_name": name, "tool_input": tool_input, "tool_use_id": call_id})
        assert done.returncode == 0, done.stderr

    assert hook(prompt_event(root, "two calls", session="c")).returncode == 0
    tool("PreToolUse", "t1", "Write", {"file_path": str(root / "a.txt")})
    (root / "a.txt").write_text("a1\n")
    tool("PostToolUse", "t1", "Write", {"file_path": str(root / "a.txt")})
    tool("PreToolUse", "t2", "Bash", {"command": "touch b"})
    (root / "b.txt").write_text("b1\n")
    tool("PostToolUse", "t2", "Bash", {"command": "touch b"})
    assert hook({"session_id": "c", "cwd": str(root), "hook_event_name": "Stop"}
                ).returncode == 0
    shown = Cli().run("show", "-s", "c", "--no-pager", cwd=root).stdout
    assert "    1. Write  (a.txt)" in shown and "    2. Bash: touch b  (b.txt)" in shown
    told = answer(hook(prompt_event(root, "/undo call 2", session="c")))
    assert "undid call 2 of the last turn (only b.txt" in told, told
    assert files(root)["b.txt"] == "b0\n" and files(root)["a.txt"] == "a1\n"
    done = Cli().run("undo", "--call", "1", "-s", "c", "--yes", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    # all the entry still held (call 2's part was on the redo stack): it moves whole
    assert json.loads(done.stdout)["parts"] == [None]
    assert files(root)["a.txt"] == "a0\n"
    pytest.importorskip("mcp")
    from .mcp_support import payload, session

    async def script(client):  # noqa: ANN001, ANN202
        redone = payload(await client.call_tool("redo", {"session": "c"}))
        return redone, payload(await client.call_tool("undo", {"session": "c", "call": 1,
                                                               "dry_run": True}))

    redone, dry = session(root, script)
    assert redone["modified"] == ["a.txt", "b.txt"], redone
    assert dry["parts"] == [["a.txt"]] and dry["modified"] == ["a.txt"]


@pytest.mark.skipif(os.name == "nt", reason="kills a child mid-restore (POSIX timing)")
def test_an_undo_of_some_paths_killed_half_way_is_finished_with_its_split(tree_factory,
                                                                         tmp_path):
    from .crash_support import run_until_stall, spawn

    root = tree_factory(START)
    with Workspace(root) as ws:
        _turn(ws, root, "t1", {"a.txt": "a1\n", "b.txt": "b1\n", "src/c.py": "c1\n"})
    marker = str(tmp_path / "m")
    assert run_until_stall(spawn("undo-paths", str(root), "a.txt", "src", stall_at=2,
                                 marker=marker), marker, timeout=60)
    with Workspace(root) as ws:
        ws.snapshot()   # any command that takes the lock finishes the restore, and its step
        assert files(root) == {"a.txt": "a0\n", "b.txt": "b1\n", "src/c.py": "c0\n",
                               "src/d.py": "d0\n"}
        assert _stacks(ws) == ([("t1", ["a.txt", "src/c.py"])], [("t1", ["b.txt"])])
        ws.undo("s")
        assert _stacks(ws) == ([], [("t1", [])])


def test_a_hosts_paths_split_as_a_shell_splits_words_and_windows_keeps_its_backslashes(
        monkeypatch):
    from undostore_cli.hosts.undo import parse_command

    assert parse_command('/undo 2 src "notes/a b.md"').paths == ("src", "notes/a b.md")
    assert parse_command("/undo turn 3 call 2 --merge").call == 2
    with monkeypatch.context() as patched:
        patched.setattr(os, "name", "nt")
        windows = parse_command(r'/undo src\lexer.py "docs\a b.md"')
    assert windows.paths == (r"src\lexer.py", r"docs\a b.md")
    assert parse_command('/undo "unclosed').unreadable == '"unclosed'

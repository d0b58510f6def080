"""One numbering of turns everywhere (issue 55, item 10): `log`, `show N`, `diff --turn N`,
`log --stat` and `undo N` count the turns that changed files, as undo does; a turn that changed
none shows as "-" and is never "turn 1". Through real CLI and hook processes."""

from __future__ import annotations

import json

from .conftest import Cli
from .test_hook import hook
from .test_undo_per_conversation import prompt_event, turn


def _numbers(cli: Cli, root, *extra: str) -> list:
    done = cli.run("log", "-s", "c", "--json", *extra, root=root)
    assert done.returncode == 0, done.stderr
    return [(p["label"], p["turn"]) for p in json.loads(done.stdout)["undo"]]


def test_a_turn_that_changed_nothing_is_never_turn_1(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "c", "first", {"a.txt": "1\n"})
    turn(root, "c", "second", {"b.txt": "b\n"})
    turn(root, "c", "just chat", {})                 # closed, changed nothing
    assert _numbers(cli, root) == [("just chat", None), ("second", 1), ("first", 2)]
    plain = cli.run("log", "-s", "c", root=root).stdout.splitlines()
    assert plain[0].startswith("undo   -  ") and plain[0].endswith("just chat  (changed no file)")
    assert plain[1].startswith("undo   1  ") and plain[1].endswith("second")
    _agree(cli, root)


def test_an_open_turn_that_changed_nothing_is_not_turn_1_once_looked_at(tree_factory,
                                                                          cli: Cli):
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "c", "first", {"a.txt": "1\n"})
    turn(root, "c", "second", {"b.txt": "b\n"})
    assert hook(prompt_event(root, "still thinking", session="c")).returncode == 0   # open
    # Without looking at the files (log, status) the open turn counts: it may have changed some
    assert _numbers(cli, root) == [("still thinking", 1), ("second", 2), ("first", 3)]
    # Looking, it changed none: turn 1 is the turn `undo` takes back, everywhere.
    assert _numbers(cli, root, "--stat") == [("still thinking", None), ("second", 1),
                                             ("first", 2)]
    _agree(cli, root)


def _agree(cli: Cli, root) -> None:  # noqa: ANN001
    """`show`, `diff --turn`, `undo --dry-run` and `undo N` name the same turns by number."""
    shown = json.loads(cli.run("show", "-s", "c", "--json", root=root).stdout)
    assert (shown["point"]["label"], shown["number"]) == ("second", 1)
    assert [c["path"] for c in shown["changes"]] == ["b.txt"]
    turn_2 = json.loads(cli.run("diff", "--turn", "2", "-s", "c", "--json", root=root).stdout)
    assert turn_2["point"]["label"] == "first"
    assert [c["path"] for c in turn_2["changes"]] == ["a.txt"]
    dry = json.loads(cli.run("undo", "2", "-s", "c", "--dry-run", "--json", root=root).stdout)
    assert [p["label"] for p in dry["turns"]] == ["second", "first"]
    assert cli.run("show", "3", "-s", "c", root=root).returncode == 2
    assert cli.run("undo", "3", "-s", "c", "--yes", root=root).returncode == 2


def test_an_open_turn_that_changed_files_is_turn_1(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "c", "first", {"a.txt": "1\n"})
    assert hook(prompt_event(root, "working", session="c")).returncode == 0
    (root / "a.txt").write_text("2\n")
    shown = json.loads(cli.run("show", "-s", "c", "--json", root=root).stdout)
    assert (shown["point"]["label"], shown["number"], shown["to"]) == ("working", 1, None)
    assert _numbers(cli, root, "--stat") == [("working", 1), ("first", 2)]


def test_plain_redo_acts_on_the_session_the_user_just_undid(tree_factory, cli: Cli):
    """Issue 55, item 11: after `undo -s A` (or `pick -s A`), plain `redo` offered the redo of
    B, whose undo point was newer."""
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "A", "a's turn", {"a.txt": "A\n"})
    turn(root, "B", "b's turn", {"b.txt": "B\n"})
    assert cli.run("undo", "-s", "A", "--yes", root=root).returncode == 0
    redone = cli.run("redo", "--yes", "--json", root=root)
    assert redone.returncode == 0, redone.stderr
    assert "session 'A'" in redone.stderr
    assert [p["label"] for p in json.loads(redone.stdout)["turns"]] == ["a's turn"]
    assert (root / "a.txt").read_text() == "A\n"

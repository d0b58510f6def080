"""`show [N|ID]`, `diff --turn N`, `log -n N` and `log --stat`, through the real CLI.

The changes of a turn print byte for byte as git prints the same two trees (`git diff-tree -r
--stat`, `--name-status`, `--numstat`, `-p`): every state is also written by git into a private
git dir, and the ids must agree. A turn runs from its point to the host's after-turn record,
else the next point, else the files now.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from undostore import Workspace

from .restore_support import disk_state


@pytest.fixture(autouse=True)
def _fixed_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)   # both sides size --stat at 80


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


class History:
    """Three turns in session 's'; the second one ended with an after-turn record (and the
    user edited a file before the third began). `ids[k]`: point k's id; `after`: the record."""

    def __init__(self, git, root: Path) -> None:  # noqa: ANN001
        self.git, self.root = git, root
        self.ws = Workspace(root)
        self.ids: list[str] = []

    def point(self, label: str) -> None:
        recorded = self.ws.snapshot(session="s", label=label).id
        assert recorded == self.git.write_tree(self.root)
        self.ids.append(recorded)

    def end_turn(self) -> None:
        self.after = self.ws.end_turn("s").id
        assert self.after == self.git.write_tree(self.root)

    def now(self) -> str:
        return self.git.write_tree(self.root)

    def git_diff(self, a: str, b: str, *flags: str) -> str:
        out = self.git.run(self.git.private_dir(self.root), self.root, "diff-tree", "-r",
                           "--no-renames", *flags, a, b)
        return out.decode()


@pytest.fixture
def history(git, tree_factory) -> History:
    root = tree_factory({"lexer.py": "".join(f"token {i}\n" for i in range(40)),
                         "README": "read me\n", "docs": {"guide.md": "# guide\n"}})
    h = History(git, root)
    h.point("fix the lexer")
    (root / "lexer.py").write_text("".join(f"token {i * 2}\n" for i in range(45)))
    (root / "tests.py").write_text("assert True\n")
    h.point("write the docs")
    (root / "docs" / "guide.md").write_text("# guide\n\nmore words\n")
    (root / "README").unlink()
    h.end_turn()
    (root / "notes.txt").write_text("the user's own edit between turns\n")
    h.point("rename things")
    (root / "docs" / "api.md").write_text("# api\n")
    return h


def test_show_prints_the_turn_as_git_prints_its_two_trees(history, cli):
    h = history
    out = _ok(cli.run("show", "-s", "s", root=h.root))
    head, _, stat = out.partition("\n\n    rename things\n\n")
    assert head.startswith(f"point {h.ids[2]} (turn 1 of session 's')")
    # The files now are looked at, not recorded: no id is handed out for them (issue 55.9).
    assert "To:    the files now (the turn is the last one; not recorded" in head
    assert stat == h.git_diff(h.ids[2], h.now(), "--stat")
    # Turn 2 ran to its after-turn record, not to the next point (the user's edit is not in it).
    second = _ok(cli.run("show", "2", "-s", "s", root=h.root))
    assert f"To:    {h.after} (the files after the turn)" in second
    assert second.endswith(h.git_diff(h.ids[1], h.after, "--stat"))
    assert "notes.txt" not in second
    # Turn 3 had no after-turn record: it ended at the next point.
    third = _ok(cli.run("show", "3", "-s", "s", "--patch", "--color=never", root=h.root))
    assert f"To:    {h.ids[1]} (the files after the turn)" in third
    assert third.endswith(h.git_diff(h.ids[0], h.ids[1], "-p"))
    by_id = _ok(cli.run("show", h.ids[0][:8], "-s", "s", root=h.root))
    assert by_id.splitlines()[0] == f"point {h.ids[0]} (turn 3 of session 's')"


@pytest.mark.parametrize("flag", ["--name-status", "--stat", "--numstat", "--patch"])
def test_diff_turn_is_the_turns_change_list_in_diffs_formats(history, flag, cli):
    h = history
    for n, (a, b) in enumerate([(h.ids[2], h.now()), (h.ids[1], h.after),
                                (h.ids[0], h.ids[1])], 1):
        out = _ok(cli.run("diff", "--turn", str(n), flag, "-s", "s", "--color=never", root=h.root))
        assert out == h.git_diff(a, b, flag), f"turn {n} {flag}"


def test_show_and_diff_turn_as_json(history, cli):
    h = history
    doc = json.loads(_ok(cli.run("show", "2", "-s", "s", "--json", root=h.root)))
    assert doc["point"]["id"] == h.ids[1] and doc["point"]["label"] == "write the docs"
    assert (doc["from"], doc["to"], doc["to_kind"]) == (h.ids[1], h.after, "after")
    by_path = {c["path"]: c for c in doc["changes"]}
    assert {p: c["status"] for p, c in by_path.items()} == {"README": "D", "docs/guide.md": "M"}
    assert (by_path["docs/guide.md"]["added"], by_path["docs/guide.md"]["removed"]) == (2, 0)
    diff = json.loads(_ok(cli.run("diff", "--turn", "2", "-s", "s", "--json", root=h.root)))
    assert diff["changes"] == doc["changes"] and diff["to"] == h.after
    paths = json.loads(_ok(cli.run("diff", "--turn", "2", "-s", "s", "--json", "--", "docs",
                                   root=h.root)))
    assert [c["path"] for c in paths["changes"]] == ["docs/guide.md"]


def test_log_n_and_log_stat(history, cli):
    h = history
    lines = _ok(cli.run("log", "-s", "s", "-n", "2", root=h.root)).splitlines()
    assert [line.split()[:3] for line in lines] == [["undo", "1", h.ids[2][:12]],
                                                    ["undo", "2", h.ids[1][:12]]]
    stat = _ok(cli.run("log", "-s", "s", "--stat", root=h.root))
    assert h.git_diff(h.ids[1], h.after, "--stat") in stat
    assert h.git_diff(h.ids[0], h.ids[1], "--stat") in stat
    doc = json.loads(_ok(cli.run("log", "-s", "s", "--stat", "-n", "1", "--json", root=h.root)))
    assert len(doc["undo"]) == 1 and [c["path"] for c in doc["undo"][0]["changes"]] == \
        ["docs/api.md"]


def test_show_is_the_library_call(history):
    h = history
    turn = h.ws.show(2, session="s")
    assert (turn.point.id, turn.to_id, turn.span.end_kind) == (h.ids[1], h.after, "after")
    assert turn.to_json()["point"]["label"] == "write the docs"
    assert h.ws.show(id=h.ids[0][:6], session="s").span.number == 3
    assert [t.span.number for t in h.ws.turns("s", n=2)] == [1, 2]


def test_a_turn_that_does_not_exist_is_exit_2(history, cli):
    h = history
    files = disk_state(h.root)
    for args, says in ((["show", "4"], "no turn 4 in session 's': it has 3"),
                       (["show", "deadbeef"], "unknown snapshot deadbeef"),
                       (["diff", "--turn", "9"], "no turn 9"),
                       (["diff", "--turn", "1", h.ids[0]], "--turn takes no FROM")):
        result = cli.run(*args, "-s", "s", root=h.root)
        assert result.returncode == 2 and says in result.stderr, (args, result.stderr)
    assert disk_state(h.root) == files

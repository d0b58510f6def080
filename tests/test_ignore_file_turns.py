"""A turn that edits an ignore file: files ignored before the turn and after the undo are never
the turn's (issue 55, item 1). Through real `undostore` processes, the hook as Claude Code runs
it and the CLI; and a real undo killed at every step."""

from __future__ import annotations

import json
import os
from pathlib import Path

from undostore import Workspace
from undostore.restore.restorelog import journal_path

from .conftest import Cli
from .crash_support import run_until_stall, spawn
from .restore_support import disk_state
from .test_hook import files, hook
from .test_undo_per_conversation import answer, prompt_event, turn

ENV = "API_KEY=the user's secret\n"


def _project(tree_factory) -> Path:
    return tree_factory({".gitignore": ".env\nnode_modules/\n", ".env": ENV, "app.py": "v1\n",
                         "node_modules": {"left": {"index.js": "module.exports = 1\n"}}})


def test_undo_of_a_turn_that_deleted_gitignore_keeps_the_ignored_files(tree_factory,
                                                                        cli: Cli):
    root = _project(tree_factory)
    turn(root, "c", "tidy up", {".gitignore": None, "app.py": "v2\n"})
    shown = cli.run("show", "--session", "c", "--json", root=root)
    assert shown.returncode == 0, shown.stderr
    assert [c["path"] for c in json.loads(shown.stdout)["changes"]] == [".gitignore", "app.py"]
    told = answer(hook(prompt_event(root, "/undo", session="c")))
    assert "1 turn; 2 files" in told
    assert files(root) == {".gitignore": ".env\nnode_modules/\n", ".env": ENV, "app.py": "v1\n",
                           "node_modules/left/index.js": "module.exports = 1\n"}
    answer(hook(prompt_event(root, "/redo", session="c")))
    assert files(root) == {".env": ENV, "app.py": "v2\n",
                           "node_modules/left/index.js": "module.exports = 1\n"}


def test_undo_whole_of_such_a_turn_keeps_them_too(tree_factory, cli: Cli):
    root = _project(tree_factory)
    turn(root, "c", "tidy up", {".gitignore": "node_modules/\n", "app.py": "v2\n"})
    undone = cli.run("undo", "--session", "c", "--whole", "--yes", "--json", root=root)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["deleted"] == []
    assert files(root)[".env"] == ENV and files(root)[".gitignore"] == ".env\nnode_modules/\n"


def test_a_turn_that_only_hid_files_is_undone_without_writing_them(tree_factory, cli: Cli):
    root = tree_factory({"build": {"out.txt": "the user's build\n"}, "app.py": "v1\n"})
    turn(root, "c", "ignore the build", {".gitignore": "build/\n", "app.py": "v2\n"})
    undone = cli.run("undo", "--session", "c", "--yes", "--json", root=root)
    assert undone.returncode == 0, undone.stderr
    doc = json.loads(undone.stdout)
    assert (doc["created"], doc["modified"], doc["deleted"]) == ([], ["app.py"], [".gitignore"])
    assert files(root) == {"build/out.txt": "the user's build\n", "app.py": "v1\n"}


def test_a_turn_that_hid_a_file_and_changed_it_is_refused_naming_it(tree_factory, cli: Cli):
    """The ignored file's new content was never captured: overwriting it would lose it."""
    root = tree_factory({"build": {"out.txt": "the user's build\n"}, "app.py": "v1\n"})
    turn(root, "c", "ignore the build", {".gitignore": "build/\n", "build/out.txt": "rebuilt\n"})
    before = disk_state(root)
    undone = cli.run("undo", "--session", "c", "--yes", root=root)
    assert undone.returncode == 3, undone.stderr
    assert "build/out.txt" in undone.stderr and "not overwritten" in undone.stderr
    assert disk_state(root) == before


def test_a_turn_that_hid_and_deleted_a_file_brings_it_back_on_undo(tree_factory, cli: Cli):
    root = tree_factory({"build": {"out.txt": "the user's build\n"}, "app.py": "v1\n"})
    turn(root, "c", "drop the build", {".gitignore": "build/\n", "build/out.txt": None})
    undone = cli.run("undo", "--session", "c", "--yes", "--json", root=root)
    assert undone.returncode == 0, undone.stderr
    assert files(root) == {"build/out.txt": "the user's build\n", "app.py": "v1\n"}


def test_an_undo_killed_at_every_step_leaves_the_ignored_files_in_place(tree_factory,
                                                                        tmp_path: Path):
    root = _project(tree_factory)
    for i in range(6):
        (root / f"f{i}.txt").write_text("before\n")
    with Workspace(root) as ws:
        ws.snapshot(session="s")
        (root / ".gitignore").unlink()
        for i in range(6):
            (root / f"f{i}.txt").write_text("the turn's\n")
        ws.snapshot(session="s", label="after")
        before_undo = disk_state(root)
    ignored = {".env": ENV, "node_modules/left/index.js": "module.exports = 1\n"}
    marker = str(tmp_path / "stalled")
    k = 0
    while True:
        k += 1
        proc = spawn("undo", str(root), stall_at=k, marker=marker)
        stalled = run_until_stall(proc, marker)
        assert {p: (root / p).read_text() for p in ignored} == ignored, f"step {k}"
        if not stalled:
            break
        with Workspace(root) as again:   # the next command finishes it, or it is rolled back
            if k % 2:
                again.snapshot()
            else:
                again.abort_restore()
        assert {p: (root / p).read_text() for p in ignored} == ignored, f"step {k}"
        with Workspace(root) as again:
            assert not os.path.exists(journal_path(again.store))
            if k % 2:
                again.redo("s")
            assert disk_state(root) == before_undo, f"step {k}"
    assert files(root)[".gitignore"] == ".env\nnode_modules/\n"
    assert k > 5, f"only {k - 1} stall points"


def test_a_snapshots_own_ignore_rules_read_from_the_store_agree_with_git(tree_factory, git):
    """TreeIgnores (what undo asks of a snapshot it took before) against `git ls-files -o
    --exclude-standard` over the same `.gitignore` files, nested, negated, anchored."""
    from undostore.git.reader import ObjectReader
    from undostore.snapshot.treeignore import TreeIgnores

    rules = {".gitignore": "*.log\n/build/\n!keep.log\nsecret*\n",
             "src": {".gitignore": "!secret.txt\ngen/\n*.tmp\n", "app.py": "x\n"},
             "docs": {"deep": {".gitignore": "/only-here.md\n", "page.md": "p\n"}}}
    root = tree_factory(rules)
    with Workspace(root) as ws:
        tree = bytes.fromhex(ws.snapshot().id)
        candidates = ["a.log", "keep.log", "build/x.c", "src/build/x.c", "secret.env",
                      "src/secret.txt", "src/secret.env", "src/gen/out.c", "gen/out.c",
                      "src/a.tmp", "a.tmp", "docs/deep/only-here.md", "docs/only-here.md",
                      "docs/deep/sub/only-here.md", "src/x/y.log", "plain.txt"]
        for path in candidates:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text("c\n")
        kept_by_git = set(git.ls_untracked(root))
        with ObjectReader(ws.store) as reader:
            asked = TreeIgnores(reader.read_tree_body, reader.read_blob, tree)
            ours = {p for p in candidates if not asked.ignores(p)}
    assert ours == kept_by_git & set(candidates)

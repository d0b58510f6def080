"""`--merge` says what it left at each conflict (issue 55, item 2): markers where it wrote them;
where git writes none either (a file one side deleted, a binary file) what stands there instead.
Through real `undostore` processes."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import Cli
from .test_hook import files, hook
from .test_undo_per_conversation import answer, prompt_event, turn


def test_undo_merge_of_a_created_file_edited_since_says_it_was_kept_not_marked(tree_factory,
                                                                              cli: Cli):
    root = tree_factory({"a.py": "a\n"})
    turn(root, "c", "make new", {"new.txt": "new\n", "a.py": "b\n"})
    with (root / "new.txt").open("a") as f:
        f.write("the user's line\n")
    undone = cli.run("undo", "--session", "c", "--yes", "--merge", root=root)
    assert undone.returncode == 3, undone.stderr
    assert "conflict markers written" not in undone.stdout + undone.stderr
    assert ("conflict: new.txt (kept as the files now have it: changed since, and this would "
            "delete it)") in undone.stdout
    assert files(root) == {"a.py": "a\n", "new.txt": "new\nthe user's line\n"}
    told = answer(hook(prompt_event(root, "/redo --merge", session="c")))
    assert "new.txt (conflict markers written: resolve them)" in told
    assert "<<<<<<<" in (root / "new.txt").read_text()


def test_a_text_conflict_still_says_markers_and_the_json_lists_none_unmarked(tree_factory,
                                                                             cli: Cli):
    root = tree_factory({"a.py": "1\n2\n3\n"})
    turn(root, "c", "edit", {"a.py": "1\nturn\n3\n"})
    (root / "a.py").write_text("1\nuser\n3\n")
    undone = cli.run("undo", "--session", "c", "--yes", "--merge", "--json", root=root)
    assert undone.returncode == 3, undone.stderr
    doc = json.loads(undone.stdout)
    assert doc["conflicts"] == ["a.py"] and doc["unmarked"] == {}
    assert "<<<<<<<" in (root / "a.py").read_text()


def test_undo_whole_says_what_redo_will_and_will_not_bring_back(tree_factory, cli: Cli):
    """Issue 55, item 3: `/redo` after `/undo --whole` applies the session's turns again; the
    other conversation's later work is only in the safety snapshot, and the answer says so."""
    root = tree_factory({"a.txt": "a\n"})
    turn(root, "A", "a's turn", {"a.txt": "A\n"})
    turn(root, "B", "b's turn", {"b.txt": "B\n"})
    told = answer(hook(prompt_event(root, "/undo --whole", session="A")))
    assert files(root) == {"a.txt": "a\n"}
    safety = told.split("safety snapshot ")[1][:12]
    assert ("/redo applies this session's turns again; every other change it took back is in "
            f"the safety snapshot (`undostore restore {safety}`)") in told
    answer(hook(prompt_event(root, "/redo", session="A")))
    assert files(root) == {"a.txt": "A\n"}
    assert cli.run("restore", safety, "--yes", root=root).returncode == 0
    assert files(root) == {"a.txt": "A\n", "b.txt": "B\n"}
    undone = cli.run("undo", "--session", "A", "--whole", "--yes", root=root)
    assert "`undostore redo` applies this session's turns again, not the other changes" \
        in undone.stdout


def test_merge_over_markers_an_earlier_merge_left_is_refused_naming_them(tree_factory,
                                                                         cli: Cli):
    """Issue 55, item 14: `redo --merge` over unresolved markers nested new ones inside them;
    and a refusal named "someone else" for the markers undostore itself wrote."""
    root = tree_factory({"a.py": "1\n2\n3\n"})
    turn(root, "c", "edit", {"a.py": "1\nturn\n3\n"})
    (root / "a.py").write_text("1\nuser\n3\n")
    refused = cli.run("undo", "-s", "c", "--yes", root=root)
    assert refused.returncode == 3
    assert "changed since by you or a program: no recorded turn changed it" in refused.stderr
    assert cli.run("undo", "-s", "c", "--yes", "--merge", root=root).returncode == 3
    marked = (root / "a.py").read_text()
    assert marked.count("<<<<<<<") == 1
    again = cli.run("redo", "-s", "c", "--yes", "--merge", root=root)
    assert again.returncode == 3
    assert "a.py still holds conflict markers an earlier --merge left" in again.stderr
    assert (root / "a.py").read_text() == marked
    plain = cli.run("redo", "-s", "c", "--yes", root=root)
    assert "changed since by an earlier --merge: it holds the conflict markers" in plain.stderr


def test_the_hooks_warning_is_one_line(tree_factory):
    """Issue 55, item 14: a store-size warning came out as Python's two lines (file:line and
    the source line); the contract says one stderr line."""
    import os

    root = tree_factory({"big.bin": os.urandom(300_000)})
    env = {**os.environ, "UNDOSTORE_MAX_STORE_MB": "0.01"}
    said = []
    for n in range(2):
        (root / "big.bin").write_bytes(os.urandom(300_000))
        done = subprocess.run([sys.executable, "-m", "undostore", "hook"], env=env,
                              input=json.dumps(prompt_event(root, f"p{n}", session="c")).encode(),
                              capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        said += done.stderr.decode().splitlines()
    assert len(said) == 1, said   # said once, when first found (retention.py), in one line
    assert said[0].startswith("undostore: warning: the store (0.3 MB) cannot fit"), said

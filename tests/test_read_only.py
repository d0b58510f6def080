"""Read-only commands create nothing: in a folder no store protects, `log`, `show`, `diff`,
`status`, `ops`, `sessions`, `stores` and `verify` make no store and no folder; they say so and
exit as the contract says (an empty listing; exit 2 where an id or a session was named)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import Cli

NOTHING = "nothing was recorded here (`undostore snapshot` makes one)"


@pytest.mark.parametrize(("args", "code", "payload"), [
    (("log",), 0, {"session": "default", "undo": [], "redo": []}),
    (("log", "-s", "x"), 2, None),
    (("ops",), 0, {"ops": []}),
    (("sessions",), 0, {"sessions": []}),
    (("verify",), 0, {"ok": True, "missing": [], "corrupt": []}),
    (("show",), 2, None),
    (("diff", "abcd"), 2, None),
    (("status",), 0, None),
    (("stores",), 0, {"stores": []}),
])
def test_a_read_only_command_makes_no_store(tmp_path: Path, args, code, payload):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    home = tmp_path / "home"
    env = {**os.environ, "UNDOSTORE_HOME": str(home), "UNDOSTORE_SESSION": ""}
    env.pop("UNDOSTORE_STORE", None)
    done = Cli().run(*args, "--json", cwd=root, env=env)
    assert done.returncode == code, done.stderr
    if payload is not None:
        assert json.loads(done.stdout) == payload
        assert args[0] == "stores" or NOTHING in done.stderr
    assert not home.exists(), "nothing made"
    assert sorted(os.listdir(root)) == ["a.txt"]


def test_a_huge_label_is_cut_and_marked(tree_factory, cli):
    """A 5 MB label is stored cut (a few KB, marked as cut) in the journal and the ops log."""
    from undostore import Workspace
    from undostore.store.oplog import MAX_LABEL_CHARS

    root = tree_factory({"a.txt": "a\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="x" * 5_000_000)
        (point,) = ws.log("s").undo
        assert len(point.label) < MAX_LABEL_CHARS + 100
        assert point.label.endswith("… (cut: 5,000,000 characters)")
        assert [op.label for op in ws.ops() if op.op == "snapshot"] == [point.label]
        assert os.path.getsize(os.path.join(ws.store.path, "oplog")) < 10_000

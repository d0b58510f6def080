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


READ_ONLY = [("log", "-s", "s"), ("log", "--stat", "-s", "s"), ("show", "-s", "s"),
             ("show", "2", "-s", "s"), ("diff", "--turn", "1", "-s", "s"), ("status", "-s", "s"),
             ("ops",), ("sessions",), ("stores",), ("verify",), ("doctor",)]


def _protected_with_an_open_turn(tree_factory) -> tuple[Path, str]:
    """A root with two recorded turns and changes since the last (the newest turn is open, so
    `show` and `diff FROM` compare with the files now); the first point's id."""
    from undostore import Workspace

    root = tree_factory({"a.txt": "1\n", "src": {"m.py": "x\n"}})
    with Workspace(root) as ws:
        first = ws.snapshot(session="s", label="one").id
        (root / "a.txt").write_text("2\n")
        ws.snapshot(session="s", label="two")
    (root / "a.txt").write_text("3\n")
    (root / "src" / "new.py").write_text("new\n")
    (root / "src" / "m.py").write_text("y\n")
    return root, first


def _everything_under(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size,
                                         p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("args", [*READ_ONLY, ("diff", "FIRST"), ("diff", "FIRST", "--stat")])
def test_a_read_only_command_writes_nothing_into_the_store(tree_factory, cli, args):
    """Issue 55, item 9: `show` of the open turn and `diff FROM` wrote packs, `modes/` and
    stat-cache files; `sessions` and `verify` rewrote `lock`."""
    root, first = _protected_with_an_open_turn(tree_factory)
    home = Path(os.environ["UNDOSTORE_HOME"])
    before = _everything_under(home)
    done = cli.run(*(first if a == "FIRST" else a for a in args), root=root)
    assert done.returncode in (0, 1), done.stderr   # doctor: 1 where no host is wired here
    assert _everything_under(home) == before


def _read_only_bind(source: Path, target: Path) -> bool:
    import subprocess

    target.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(target)],
                      capture_output=True).returncode != 0:
        return False
    if subprocess.run(["mount", "-o", "remount,bind,ro", str(target)],
                      capture_output=True).returncode != 0:
        subprocess.run(["umount", str(target)], check=True)
        return False
    return True


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0,
                    reason="a read-only bind mount needs root")
def test_read_only_commands_work_on_a_store_they_cannot_write(tree_factory, cli, tmp_path):
    """Issue 55, item 9: on a read-only store `sessions`, `verify` and `show` failed "could not
    be written". The home is bind-mounted read-only, as a backup or a shared volume is."""
    import subprocess

    root, first = _protected_with_an_open_turn(tree_factory)
    home = Path(os.environ["UNDOSTORE_HOME"])
    frozen = tmp_path / "frozen-home"
    if not _read_only_bind(home, frozen):
        pytest.skip("no bind mounts here")
    try:
        env = {**os.environ, "UNDOSTORE_HOME": str(frozen)}
        for args in [*READ_ONLY, ("diff", first), ("show", "-s", "s", "--patch")]:
            done = cli.run(*args, root=root, env=env)
            assert done.returncode in (0, 1) and "could not be written" not in done.stderr, \
                (args, done.stderr)
            assert done.returncode == 0 or args == ("doctor",), (args, done.stderr)
        shown = json.loads(cli.run("show", "-s", "s", "--json", root=root, env=env).stdout)
        assert sorted(c["path"] for c in shown["changes"]) == ["a.txt", "src/m.py", "src/new.py"]
        assert shown["to"] is None
    finally:
        subprocess.run(["umount", str(frozen)], check=True)


def test_a_snapshot_after_a_look_in_the_same_process_stores_what_the_look_held(tree_factory):
    """A look holds its new objects in memory; the snapshot that records next (an MCP server's
    `diff` then `snapshot`, `pick` then its undo) must still write them to the store."""
    from undostore import Workspace

    root, first = _protected_with_an_open_turn(tree_factory)
    with Workspace(root) as ws:
        looked = ws.compare(first)
        assert ws.store.held and not any(ws.store.has(sha) for sha in ws.store.held)
        taken = ws.snapshot()
        assert taken.id == looked.to_id and ws.store.held == {}
    with Workspace(root) as fresh:
        assert fresh.verify(taken.id).ok
        assert [c.path for c in fresh.diff(first, taken.id)] == ["a.txt", "src/m.py",
                                                                  "src/new.py"]


def test_a_look_holds_no_more_than_its_budget_in_memory(tree_factory):
    """A read-only look at files that changed wholesale since the last recorded snapshot (or a
    store with no stat cache) would hold all their content in memory: past the budget it says
    so, names the command that records them, and leaves the store as it was."""
    from undostore import Workspace
    from undostore.errors import SnapshotError
    from undostore.limits import Limits

    root, first = _protected_with_an_open_turn(tree_factory)
    (root / "big.bin").write_bytes(os.urandom(50_000))
    home = Path(os.environ["UNDOSTORE_HOME"])
    before = _everything_under(home)
    with Workspace(root, limits=Limits(look_held_bytes=20_000)) as ws:
        with pytest.raises(SnapshotError, match="undostore snapshot` records it"):
            ws.diff(first)
        assert ws.store.held == {}
    assert _everything_under(home) == before
    with Workspace(root) as ws:
        assert "big.bin" in [c.path for c in ws.diff(first)]

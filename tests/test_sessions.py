"""Sessions through the library and the CLI: recording, the log, anchors following the journal,
automatic gc, drop, and undo/redo sequences checked against a reference model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.errors import ConfirmationNeeded, ConflictError, IncompleteSnapshotError, UsageError
from undostore.history.anchors import anchored_sessions, held, session_dir


def _write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_snapshot_with_session_records_label_and_meta_newest_first(tree_factory):
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    ids = []
    for turn in range(3):
        _write(root, "a.txt", str(turn))
        ids.append(ws.snapshot(session="agent", label=f"turn {turn}",
                               meta={"messages": turn * 2}).id)
    log = ws.log("agent")
    assert [p.id for p in log.undo] == ids[::-1]
    assert [p.label for p in log.undo] == ["turn 2", "turn 1", "turn 0"]
    assert [p.meta["messages"] for p in log.undo] == [4, 2, 0]
    assert log.redo == []
    assert held(ws.store, "agent") == set(ids)


def test_the_cap_drops_the_oldest_point_and_its_anchor(tree_factory, monkeypatch):
    monkeypatch.setenv("UNDOSTORE_UNDO_LIMIT", "3")
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    ids = []
    for turn in range(5):
        _write(root, "a.txt", f"v{turn}")
        ids.append(ws.snapshot(session="s").id)
    assert [p.id for p in ws.log("s").undo] == ids[:1:-1]
    assert held(ws.store, "s") == set(ids[2:])


def test_a_turn_after_one_that_changed_nothing_takes_its_point_over(tree_factory):
    """A prompt whose turn ended with the files unchanged, then one that edits: the second's
    files before are the point's, so it records no new point but takes that one over; `log`,
    `show` and `undo` name the turn that changed the files. A turn whose edits were taken
    back by hand keeps its point as it was."""
    root = tree_factory({"f": "0"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="explain the code")
        ws.end_turn("s")                                   # no edits
        assert not ws.snapshot(session="s", label="rewrite f", meta={"n": 2}).recorded
        _write(root, "f", "1")
        after = ws.end_turn("s").id
        [point] = ws.log("s").undo
        assert (point.label, point.meta, point.after) == ("rewrite f", {"n": 2}, after)
        shown = ws.show(1, session="s")
        assert (shown.point.label, shown.to_id, [c.path for c in shown.changes]) == (
            "rewrite f", after, ["f"])
        assert [t.label for t in ws.undo("s").turns] == ["rewrite f"]
        assert _files(root) == {"f": "0"}
        ws.snapshot(session="s", label="edit f, then the user puts it back")
        _write(root, "f", "2")
        ws.end_turn("s")
        _write(root, "f", "0")
        ws.snapshot(session="s", label="look")
        assert [p.label for p in ws.log("s").undo] == ["edit f, then the user puts it back"]


def test_sessions_are_separate_and_listed(tree_factory):
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    ws.snapshot(session="one")
    ws.snapshot(session="two")
    _write(root, "a.txt", "1")
    ws.snapshot(session="two")
    assert [(s.name, s.undo, s.redo) for s in ws.sessions()] == [("one", 1, 0), ("two", 2, 0)]


def test_session_from_environment_and_default(tree_factory, monkeypatch):
    ws = Workspace(tree_factory({"a.txt": "0"}))
    ws.snapshot(session="")   # an empty name means "not given": env, then "default"
    monkeypatch.setenv("UNDOSTORE_SESSION", "from-env")
    ws.snapshot(session="")
    assert [s.name for s in ws.sessions()] == ["default", "from-env"]


def test_drop_forgets_the_journal_and_the_anchors(tree_factory):
    ws = Workspace(tree_factory({"a.txt": "0"}))
    ws.snapshot(session="s")
    assert ws.drop("s") is True
    assert ws.sessions() == []
    assert not os.path.exists(session_dir(ws.store, "s"))
    assert ws.drop("s") is False


def test_a_dropped_id_gc_removed_is_named_let_go_and_a_held_one_missing_is_damage(
        tree_factory):
    """Both are exit 3, but only the id something still holds sends the user to verify."""
    root = tree_factory({"a.txt": "0"})
    with Workspace(root) as ws:
        (root / "big").write_bytes(os.urandom(50_000))
        dropped = ws.snapshot(session="tmp").id
        (root / "big").unlink()
        kept = ws.snapshot(session="other").id
        ws.drop("tmp")
        ws.gc(grace_seconds=0)
        with pytest.raises(IncompleteSnapshotError, match="was let go .* no longer in the store"):
            ws.restore(dropped)
        packs = ws.store.pack_dir
    for name in os.listdir(packs):   # closed first: Windows deletes no mapped file
        os.unlink(os.path.join(packs, name))
    with Workspace(root) as ws, pytest.raises(IncompleteSnapshotError,
                                              match="listed but missing .* verify"):
        ws.restore(kept)


def test_bad_session_name_or_empty_history_is_a_usage_error(tree_factory):
    ws = Workspace(tree_factory({"a.txt": "0"}))
    with pytest.raises(UsageError, match="control character"):
        ws.log("bad\nname")
    with pytest.raises(UsageError, match="nothing to undo"):
        ws.undo("empty")
    with pytest.raises(UsageError, match="nothing to redo"):
        ws.redo("empty")


def test_automatic_gc_runs_every_n_points_and_sweeps(tree_factory, monkeypatch):
    monkeypatch.setenv("UNDOSTORE_GC_EVERY", "3")
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    stray = Path(session_dir(ws.store, "ghost"))
    stray.mkdir(parents=True)
    (stray / ("e" * 40)).write_text("e" * 40 + "\n")
    for turn in range(2):
        _write(root, "a.txt", str(turn))
        ws.snapshot(session="s")
    assert "ghost" in anchored_sessions(ws.store)
    _write(root, "a.txt", "third")
    ws.snapshot(session="s")
    assert anchored_sessions(ws.store) == {"s"}


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["log", "undo", "redo", "sessions", "drop", "gc", "verify"])
def test_every_session_command_has_help(tmp_path, command, cli):
    out = cli.run(command, "--help", root=tmp_path)
    assert out.returncode == 0
    assert "--json" in out.stdout
    assert len(out.stdout.split("\n\n")[1].strip()) > 20   # a sentence, not just the usage


def test_cli_log_sessions_drop_as_json(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    first = cli.run("snapshot", "--session", "s", "--label", "turn 1", "--json", root=root)
    assert first.returncode == 0, first.stderr
    snapshot = json.loads(first.stdout)["id"]
    log = json.loads(cli.run("log", "--session", "s", "--json", root=root).stdout)
    assert [(e["id"], e["label"]) for e in log["undo"]] == [(snapshot, "turn 1")]
    assert set(log["undo"][0]) >= {"id", "time", "label"} and log["redo"] == []
    listed = json.loads(cli.run("sessions", "--json", root=root).stdout)
    assert [{k: s[k] for k in ("name", "undo", "redo")} for s in listed["sessions"]] == [
        {"name": "s", "undo": 1, "redo": 0}]
    assert listed["pending"] is None
    plain = cli.run("log", "--session", "s", root=root)
    assert plain.stdout.split()[:3] == ["undo", "1", snapshot[:12]]
    assert cli.run("drop", root=root).returncode == 2
    dropped = cli.run("drop", "--session", "s", "--json", root=root)
    assert json.loads(dropped.stdout) == {"dropped": True, "session": "s"}
    assert json.loads(cli.run("sessions", "--json", root=root).stdout)["sessions"] == []


def test_cli_gc_and_verify_report_as_json_with_exit_codes(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    assert cli.run("snapshot", "--session", "s", root=root).returncode == 0
    gc = cli.run("gc", "--grace", "0", "--json", root=root)
    assert gc.returncode == 0, gc.stderr
    assert set(json.loads(gc.stdout)) >= {"freed_bytes", "objects_before", "objects_after"}
    good = cli.run("verify", "--json", root=root)
    assert good.returncode == 0 and json.loads(good.stdout)["ok"] is True
    ws = Workspace(root)
    ws.store.close()
    for name in os.listdir(ws.store.pack_dir):
        os.unlink(os.path.join(ws.store.pack_dir, name))
    bad = cli.run("verify", "--json", root=root)
    assert bad.returncode == 3
    report = json.loads(bad.stdout)
    assert report["ok"] is False and len(report["missing"]) == 1 and report["corrupt"] == []
    assert cli.run("verify", root=root).stdout.startswith("missing ")


# --- undo and redo ---------------------------------------------------------------------------


def test_undo_restores_the_newest_point_and_redo_takes_it_back(tree_factory):
    root = tree_factory({"a.txt": "before turn 1"})
    ws = Workspace(root)
    ws.snapshot(session="s", label="turn 1")
    _write(root, "a.txt", "after turn 1")
    (root / "new.txt").write_text("made by the agent")

    undone = ws.undo("s")

    assert _files(root) == {"a.txt": "before turn 1"}
    assert sorted(undone.modified + undone.deleted) == ["a.txt", "new.txt"]
    log = ws.log("s")
    assert log.undo == [] and [p.label for p in log.redo] == ["turn 1"]
    (turn,) = log.redo
    assert (turn.after, undone.target) == (undone.safety, turn.id)   # the turn, before -> after
    assert held(ws.store, "s") == {turn.id, undone.safety}

    redone = ws.redo("s")

    assert _files(root) == {"a.txt": "after turn 1", "new.txt": "made by the agent"}
    assert redone.target == undone.safety
    log = ws.log("s")
    assert log.undo == [turn] and log.redo == []   # the same turn, back on the undo stack


def test_an_undo_with_nothing_changed_since_reads_the_turns_difference_once(
        tree_factory, monkeypatch):
    """The merge of a turn nothing changed since is the turn's start: its restore plans the
    pair the merge flattened (plan.Differences), and the step's note of the files it wrote
    takes the restore's list, not a third diff of the same two trees."""
    from undostore.restore import plan

    root = tree_factory({f"d{i}": {f"f{j}.txt": f"{i} {j}" for j in range(4)}
                         for i in range(3)})
    ws = Workspace(root)
    ws.snapshot(session="s", label="turn 1")
    for i in range(3):
        _write(root, f"d{i}/f1.txt", "changed by the turn")
    flattened: list[tuple[bytes, bytes]] = []
    real = plan._differing

    def counted(trees, folder, old_sha, new_sha, *rest):
        if folder == "":
            flattened.append((old_sha, new_sha))
        return real(trees, folder, old_sha, new_sha, *rest)

    monkeypatch.setattr(plan, "_differing", counted)

    undone = ws.undo("s")

    assert sorted(undone.modified) == [f"d{i}/f1.txt" for i in range(3)]
    assert all(_files(root)[f"d{i}/f1.txt"] == f"{i} 1" for i in range(3))
    assert flattened == [(bytes.fromhex(undone.safety), bytes.fromhex(undone.target))]


def test_dry_run_and_declined_confirmation_change_nothing(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    ws.snapshot(session="s")
    _write(root, "a.txt", "2")
    before = ws.log("s")
    plan = ws.undo("s", dry_run=True)
    assert plan.dry_run and plan.modified == ["a.txt"]
    with pytest.raises(ConfirmationNeeded):
        ws.undo("s", confirm=lambda plan: False)
    assert ws.log("s") == before
    assert _files(root) == {"a.txt": "2"}


def test_redo_keeps_a_later_edit_elsewhere_and_refuses_one_that_overlaps(tree_factory):
    root = tree_factory({"a.txt": "1", "b.txt": "b"})
    ws = Workspace(root)
    ws.snapshot(session="s", label="p")
    _write(root, "a.txt", "2")
    ws.undo("s")
    _write(root, "b.txt", "the user's edit after the undo")
    ws.redo("s")
    assert _files(root) == {"a.txt": "2", "b.txt": "the user's edit after the undo"}
    ws.undo("s")
    _write(root, "a.txt", "edited after the undo")
    before = (ws.log("s"), _files(root))
    with pytest.raises(ConflictError, match=r"a\.txt \(turn 'p'; changed since by you or a "
                                            r"program"):
        ws.redo("s")
    assert (ws.log("s"), _files(root)) == before
    merged = ws.redo("s", merge=True)
    assert merged.conflicts == ["a.txt"] and "<<<<<<<" in (root / "a.txt").read_text()


def test_gc_keeps_what_redo_needs(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    ws.snapshot(session="s")
    _write(root, "a.txt", "only the redo entry holds this")
    ws.undo("s")
    ws.gc(grace_seconds=0)
    ws.redo("s")
    assert _files(root) == {"a.txt": "only the redo entry holds this"}


def test_cli_undo_and_redo_need_yes_without_a_terminal(tree_factory, cli):
    root = tree_factory({"a.txt": "1"})
    assert cli.run("snapshot", "--session", "s", root=root).returncode == 0
    _write(root, "a.txt", "2")
    refused = cli.run("undo", "--session", "s", root=root, input="")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert _files(root) == {"a.txt": "2"}
    dry = cli.run("undo", "--session", "s", "--dry-run", "--json", root=root)
    assert dry.returncode == 0 and json.loads(dry.stdout)["dry_run"] is True
    undone = cli.run("undo", "--session", "s", "--yes", "--json", root=root)
    assert undone.returncode == 0, undone.stderr
    assert set(json.loads(undone.stdout)) >= {"target", "safety", "created", "modified",
                                               "deleted"}
    assert _files(root) == {"a.txt": "1"}
    redone = cli.run("redo", "--session", "s", "--yes", root=root)
    assert redone.returncode == 0 and redone.stdout.startswith("redo: applied again ")
    assert _files(root) == {"a.txt": "2"}
    assert cli.run("redo", "--session", "s", "--yes", root=root).returncode == 2



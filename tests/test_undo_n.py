"""`undo N`, `undo --to ID` and `redo N`: one restore each, and a redo stack that steps forward
one turn at a time, through each undone turn's state, back to the files before the undo.

The reference for the redo stack is the same history undone one step at a time: N single undos
must leave the very entries one `undo N` leaves. Crash recovery: an `undo 3` killed at each file
operation is finished by the next command (or rolled back) with its step applied once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.errors import UsageError
from undostore.history import journal as journals
from undostore.history.direction import Direction
from undostore.history.sessions import finish_step
from undostore.history.steps import plan

from .crash_support import run_until_stall, spawn
from .restore_support import disk_state

TURNS = 4


def _history(root: Path, ws: Workspace) -> list[dict]:
    """TURNS turns in session 's', each with its undo point; returns the files at each point,
    then the files now (the end of the last turn)."""
    states = []
    for i in range(TURNS):
        ws.snapshot(session="s", label=f"turn {i}")
        states.append(disk_state(root))
        (root / "a.txt").write_text(f"a after turn {i}\n")
        (root / f"new{i}.txt").write_text(f"made by turn {i}\n")
        if i == 2:
            (root / "new0.txt").unlink()
    states.append(disk_state(root))
    return states


def _root(tree_factory) -> Path:
    return tree_factory({"a.txt": "a\n", "keep.txt": "kept\n"})


def test_undo_n_goes_back_in_one_restore_and_redo_walks_forward_turn_by_turn(tree_factory):
    root = _root(tree_factory)
    with Workspace(root) as ws:
        states = _history(root, ws)
        now = ws.snapshot().id
        result = ws.undo("s", steps=3)
        assert disk_state(root) == states[1]
        assert [p.label for p in result.turns] == ["turn 3", "turn 2", "turn 1"]
        assert result.safety == now, "one safety snapshot: the files before the undo"
        assert [op.op for op in ws.ops(session="s")].count("undo") == 1
        log = ws.log("s")
        assert [p.label for p in log.undo] == ["turn 0"]
        assert [p.label for p in log.redo] == ["turn 1", "turn 2", "turn 3"]
        for k in (2, 3, 4):
            redone = ws.redo("s")
            assert disk_state(root) == states[k], f"redo {k - 1} lands on turn {k - 1}'s end"
            assert [p.label for p in redone.turns] == [f"turn {k - 1}"]
        with pytest.raises(UsageError, match="nothing to redo"):
            ws.redo("s")
        assert [p.label for p in ws.log("s").undo] == [f"turn {i}" for i in (3, 2, 1, 0)]


def test_undo_to_an_id_and_redo_n(tree_factory):
    root = _root(tree_factory)
    with Workspace(root) as ws:
        states = _history(root, ws)
        target = ws.log("s").undo[2]            # turn 1's point
        result = ws.undo("s", to=target.id[:8])
        assert disk_state(root) == states[1] and len(result.turns) == 3
        redone = ws.redo("s", steps=2)
        assert disk_state(root) == states[3]
        assert [p.label for p in redone.turns] == ["turn 1", "turn 2"]
        assert [p.label for p in ws.log("s").redo] == ["turn 3"]
        ws.redo("s")
        assert disk_state(root) == states[4]


def test_undo_n_leaves_the_redo_stack_of_n_single_undos(tree_factory):
    """The reference: the same history in a twin root, undone one turn at a time."""
    one, twin = _root(tree_factory), _root(tree_factory)
    with Workspace(one) as ws, Workspace(twin) as reference:
        _history(one, ws)
        _history(twin, reference)
        ws.undo("s", steps=3)
        for _ in range(3):
            reference.undo("s")
        assert disk_state(one) == disk_state(twin)
        ours, theirs = ws.log("s"), reference.log("s")
        assert [(p.id, p.label) for p in ours.redo] == [(p.id, p.label) for p in theirs.redo]
        assert [(p.id, p.label) for p in ours.undo] == [(p.id, p.label) for p in theirs.undo]
        ws.redo("s", steps=3)
        for _ in range(3):
            reference.redo("s")
        assert [(p.id, p.label) for p in ws.log("s").undo] == \
            [(p.id, p.label) for p in reference.log("s").undo]


def test_too_many_steps_or_a_stranger_id_change_nothing(tree_factory):
    root = _root(tree_factory)
    with Workspace(root) as ws:
        _history(root, ws)
        before, files = ws.log("s"), disk_state(root)
        with pytest.raises(UsageError, match="cannot undo 5 turns.*4 turns that changed files"):
            ws.undo("s", steps=5)
        with pytest.raises(UsageError, match="not one of its undo points"):
            ws.undo("s", to=ws.snapshot().id)     # the files now: no undo point
        (root / "keep.txt").write_bytes(b"elsewhere\n")
        stranger = ws.snapshot().id               # a snapshot, but no undo point
        (root / "keep.txt").write_bytes(b"kept\n")
        with pytest.raises(UsageError, match="not one of its undo points"):
            ws.undo("s", to=stranger)
        assert disk_state(root) == files and ws.log("s") == before
        ws.undo("s")
        with pytest.raises(UsageError, match="cannot redo 2 turns.*1 undone turn"):
            ws.redo("s", steps=2)
        ws.redo("s")
        assert disk_state(root) == files
        assert [(p.id, p.label) for p in ws.log("s").undo] == \
            [(p.id, p.label) for p in before.undo]   # the newest turn now ended at the undo


def test_a_step_finished_twice_moves_its_points_once(tree_factory):
    """The step token: a restore finished by recovery after its step was applied (a crash right
    after the journal write) must not move a second set of points."""
    root = _root(tree_factory)
    with Workspace(root) as ws:
        _history(root, ws)
        now = ws.snapshot().id
        request = plan(journals.load(ws.store, "s"), Direction.UNDO, now, steps=2)
        context = request.context("token-1")
        finish_step(ws.store, context, request.turns[-1].id, now)
        finish_step(ws.store, context, request.turns[-1].id, now)
        journal = journals.load(ws.store, "s")
        assert [p.label for p in journal.redo] == ["turn 3", "turn 2"]   # next redo last
        assert len(journal.undo) == 2 and journal.last_step == "token-1"


def _undo_killed_at(root: Path, k: int, marker: Path) -> bool:
    """Run `undo 3` in a child, kill it at its k-th file operation; False if it finished."""
    return run_until_stall(spawn("undo", str(root), "3", stall_at=k, marker=str(marker)),
                           str(marker), timeout=60)


@pytest.mark.skipif(os.name == "nt", reason="kills a child mid-restore (POSIX timing)")
def test_an_undo_n_killed_at_each_step_is_finished_once_by_the_next_command(tree_factory,
                                                                             tmp_path):
    """Kill at the 1st, 2nd, ... file operation: the next command finishes the files and moves
    all three points (the redo stack as an uninterrupted undo 3 leaves it), exactly once."""
    root = _root(tree_factory)
    with Workspace(root) as ws:
        states = _history(root, ws)
        now = ws.snapshot().id
        ws.undo("s", steps=3)
        want = [(p.id, p.label) for p in ws.log("s").redo]
        ws.redo("s", steps=3)
    assert disk_state(root) == states[4]
    k = 0
    while _undo_killed_at(root, k := k + 1, tmp_path / "stalled"):
        with Workspace(root) as ws:
            ws.snapshot()            # any command that takes the lock finishes the restore
            assert disk_state(root) == states[1], f"killed at {k}: the undo was finished"
            assert [(p.id, p.label) for p in ws.log("s").redo] == want, f"killed at {k}"
            ws.redo("s", steps=3)
            assert ws.snapshot().id == now
    assert k > 3, "no kill landed inside the restore"


def test_cli_undo_n_and_redo_name_the_turns(tree_factory, cli):
    root = _root(tree_factory)
    with Workspace(root) as ws:
        _history(root, ws)
    undone = cli.run("undo", "2", "--session", "s", "--yes", root=root)
    assert undone.returncode == 0, undone.stderr
    lines = undone.stdout.splitlines()
    assert lines[0] == 'undo: took back "turn 3"; "turn 2" (2 turns; 4 files)'
    assert lines[1].startswith("safety snapshot ") and "`undostore redo`" in lines[1]
    redone = cli.run("redo", "--session", "s", "--yes", "--json", root=root)
    doc = json.loads(redone.stdout)
    assert {"target", "safety", "created", "modified", "deleted"} <= set(doc)
    assert doc["step"] == "redo" and [t["label"] for t in doc["turns"]] == ["turn 2"]
    again = cli.run("redo", "1", "--session", "s", "--yes", root=root)
    assert again.stdout.splitlines()[0] == 'redo: applied again "turn 3" (1 turn; 2 files)'
    turn_2 = json.loads(cli.run("log", "-s", "s", "--json", root=root).stdout)["undo"][1]
    assert turn_2["label"] == "turn 2"
    dry = cli.run("undo", "--to", turn_2["id"][:10], "-s", "s", "--dry-run", root=root)
    assert dry.returncode == 0 and dry.stdout.splitlines()[-1] == \
        'dry run: undo would take back "turn 3"; "turn 2" (2 turns; 4 files); nothing was changed'
    both = cli.run("undo", "2", "--to", turn_2["id"], "-s", "s", "--yes", root=root)
    assert both.returncode == 2 and "give one of N, --to ID and --turn K" in both.stderr


@pytest.mark.parametrize("command", ["undo", "redo", "log", "show", "drop"])
def test_a_session_that_does_not_exist_is_exit_2_listing_the_sessions(tree_factory, command, cli):
    root = _root(tree_factory)
    with Workspace(root) as ws:
        ws.snapshot(session="agent", label="one")
        ws.snapshot(session="other", label="two")
    yes = ["--yes"] if "do" in command else []
    result = cli.run(command, "--session", "typo", *yes, root=root)
    assert (result.returncode, result.stdout) == (2, "")
    assert "no session named 'typo' (sessions: 'agent', 'other')" in result.stderr
    if command == "undo":   # the status line of that session reads zero
        status = cli.run("status", "--session", "typo", root=root)
        assert (status.returncode, status.stdout) == (0, "undo:0 redo:0\n")


def test_a_step_context_reads_back_what_it_wrote_and_nothing_else():
    from undostore.history.stepcontext import StepContext

    context = StepContext("s", "undo", "t", "now", ("a",), ("b", "c"))
    assert StepContext.of_json(context.to_json()) == context
    assert StepContext.of_json(StepContext("s", "revert", "t", label="x").to_json()).label == "x"
    for bad in (None, [], {"session": "s", "step": "undo"},
                {"session": "s", "step": "undo", "token": "t", "moved": "b"},
                {"session": 1, "step": "undo", "token": "t"}):
        assert StepContext.of_json(bad) is None

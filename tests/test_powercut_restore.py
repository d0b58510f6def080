"""Power cuts during and right after restore, undo, redo and revert, on the power-cut file
system (tests/powercut/), both models, the root and the store on it.

After each cut and remount: every file is at its old or its new content (never empty, never
torn); the next command finishes the restore or finds nothing to finish, leaving exactly one of
the two trees; `verify` passes; and every id handed out before the cut still restores. A command
that reported done before the cut keeps its result whole.

Cut points: after the last fsync of the command (it returned), after a fixed random sample of
its fsyncs (the only moments the durable state changes, so the sample draws from every crash
state the model allows), and at the first and last of each checkpoint the kill -9 crash tests
name (journal, temp, replace, rmdir).
"""

from __future__ import annotations

import random

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from tests.powercut.rig import TEMP, Rig

from .conftest import Exe, Link, make_tree

MODELS = ["ordered", "strict"]
SEED = 27


def _states() -> tuple[dict, dict]:
    """(A, B): every kind of change a restore from B back to A makes, over ~80 files."""
    a: dict = {f"d{i % 6}": {} for i in range(6)}
    b: dict = {f"d{i % 6}": {} for i in range(6)}
    for i in range(48):
        a[f"d{i % 6}"][f"f{i}"] = f"A{i}\n" * (1 + i % 7)
        b[f"d{i % 6}"][f"f{i}"] = f"B{i}\n" if i % 3 else f"A{i}\n" * (1 + i % 7)
    a["gone_in_b"] = "only in A"
    a["deep"] = {"x": {"y": {f"n{i}": f"new {i}" for i in range(6)}}}
    a["f2d"], b["f2d"] = "a file in A", {"inner": "a folder in B"}
    a["d2f"], b["d2f"] = {"i1": "1", "i2": "2"}, "a file in B"
    b["only_b"] = {"x": "only in B", "y": {"z": "deep only in B"}}
    a["run.sh"], b["run.sh"] = Exe("#!/bin/sh\n"), "#!/bin/sh\n"
    a["link"], b["link"] = Link("gone_in_b"), Link("d2f")
    return a, b


class Restores:
    """A rig holding snapshots A and B, the files at B, everything settled."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        spec_a, spec_b = _states()
        make_tree(rig.root, spec_a)
        self.a = rig.json("snapshot")["id"]
        self.state_a = rig.files()
        self.put(spec_b)
        self.b = rig.json("snapshot")["id"]
        self.state_b = rig.files()
        rig.settle()

    def put(self, spec: dict) -> None:
        import shutil

        for name in list(self.rig.files()):
            top = name.split("/")[0]
            full = f"{self.rig.root}/{top}"
            shutil.rmtree(full, ignore_errors=True)
            try:
                import os

                os.unlink(full)
            except OSError:
                pass
        make_tree(self.rig.root, spec)

    def check_after_cut(self, old: dict, new: dict) -> str:
        """The cut's aftermath: old-or-new files, then the next command leaves exactly one of
        the trees with no temp file, `verify` passes, both ids restore. Which tree it was."""
        rig = self.rig
        rig.checked_cut(old, new)
        rig.cli("snapshot")   # the next command: finishes a pending restore, or finds none
        now = rig.files()
        assert not [p for p in now if TEMP in p], "a temp file outlived the next command"
        assert now in (old, new), "the next command left a tree that is neither old nor new"
        assert rig.json("verify")["ok"]
        which = "new" if now == new else "old"
        for snap, state in ((self.a, self.state_a), (self.b, self.state_b)):
            rig.cli("restore", snap, "--yes")
            assert rig.files() == state
        rig.cli("restore", self.b, "--yes")
        rig.settle()
        return which


@pytest.fixture(params=MODELS)
def restores(request, powercut, tmp_path):  # noqa: F811
    return Restores(Rig(powercut(request.param), tmp_path))


def test_a_restore_that_returned_keeps_its_files_through_a_cut(restores):
    """Gap 1 and 2 of issue 27: on FUSE, syncfs made nothing durable (files came back empty),
    and a restore's renames must be committed (folder fsyncs) before it reports done."""
    rig = restores.rig
    rig.cli("restore", restores.a, "--yes")
    rig.cut()
    assert rig.files() == restores.state_a
    assert rig.json("status").get("pending") in (None, False)
    assert rig.json("verify")["ok"]


def test_random_cuts_during_a_restore(restores):
    rig = restores.rig
    start = rig.fs.events()
    rig.cli("restore", restores.a, "--yes")
    total = rig.fs.events() - start
    restores.check_after_cut(restores.state_b, restores.state_a)
    seen = set()
    for k in sorted(random.Random(SEED).sample(range(1, total), min(3, total - 1))):
        rig.fs.arm(rig.fs.events() + k)
        rig.cli("restore", restores.a, "--yes")
        seen.add(restores.check_after_cut(restores.state_b, restores.state_a))
    assert seen, "no cut was tried"


@pytest.mark.parametrize("what", ["journal", "temp", "replace", "rmdir"])
def test_cuts_at_the_checkpoints_the_crash_tests_name(powercut, tmp_path, what):  # noqa: F811
    restores = Restores(Rig(powercut("strict"), tmp_path))
    rig = restores.rig
    done = rig.child("restore", what, 1, restores.a)
    assert done.returncode == 0 and "cut at" in done.stdout, done.stderr
    restores.check_after_cut(restores.state_b, restores.state_a)


@pytest.fixture(params=MODELS)
def session(request, powercut, tmp_path):  # noqa: F811
    """A rig whose session `s` holds points at states 1, 2 and 3 (files at 3)."""
    rig = Rig(powercut(request.param), tmp_path)
    states = []
    for n in range(1, 4):
        make_tree(rig.root, {"notes": f"version {n}\n" * n, f"only{n}": {"f": f"{n}"},
                             "d": {f"g{i}": f"{n}.{i}" for i in range(10)}})
        if n > 1:
            import os
            import shutil

            shutil.rmtree(f"{rig.root}/only{n - 1}")
            os.sync()
        rig.cli("snapshot", "--session", "s")
        states.append(rig.files())
    rig.settle()
    return rig, states


def test_undo_and_redo_that_returned_survive_a_cut(session):
    rig, states = session
    rig.cli("undo", "--session", "s", "--yes")
    rig.cut()
    assert rig.files() == states[1]
    rig.cli("undo", "--session", "s", "--yes")
    assert rig.files() == states[0]
    rig.cli("redo", "--session", "s", "--yes")
    rig.cut()
    assert rig.files() == states[1]
    rig.cli("redo", "--session", "s", "--yes")
    assert rig.files() == states[2]
    assert rig.json("verify")["ok"]


def test_random_cuts_during_undo_and_redo(session):
    rig, states = session
    start = rig.fs.events()
    rig.cli("undo", "--session", "s", "--yes")
    total = rig.fs.events() - start
    rig.cli("redo", "--session", "s", "--yes")
    rig.settle()
    for k in sorted(random.Random(SEED).sample(range(1, total), min(3, total - 1))):
        rig.fs.arm(rig.fs.events() + k)
        rig.cli("undo", "--session", "s", "--yes")
        rig.checked_cut(states[2], states[1])
        rig.cli("snapshot")   # finishes an undo left half-done, session history included
        now = rig.files()
        assert now in (states[1], states[2])
        assert len(rig.json("log", "--session", "s")["redo"]) == (1 if now == states[1] else 0)
        assert rig.json("verify")["ok"]
        # whichever it is, undo and redo walk the same points again
        if now == states[1]:
            rig.cli("redo", "--session", "s", "--yes")
        assert rig.files() == states[2]
        rig.cli("undo", "--session", "s", "--yes")
        assert rig.files() == states[1]
        rig.cli("redo", "--session", "s", "--yes")
        rig.settle()


def test_revert_that_returned_survives_a_cut_and_random_cuts_during_one(powercut, tmp_path):  # noqa: F811
    rig = Rig(powercut("strict"), tmp_path)
    make_tree(rig.root, {"a": "1\n2\n3\n", "b": "b1\n", "c": {"x": "x"}})
    one = rig.json("snapshot")["id"]
    make_tree(rig.root, {"a": "1\n2 changed\n3\n", "b": "b2\n", "new": "n"})
    two = rig.json("snapshot")["id"]
    after = rig.files()
    rig.settle()
    start = rig.fs.events()
    rig.cli("revert", one, two, "--yes")
    total = rig.fs.events() - start
    reverted = rig.files()
    rig.cut()
    assert rig.files() == reverted
    rig.cli("restore", two, "--yes")
    rig.settle()
    for k in sorted(random.Random(SEED).sample(range(1, total), min(3, total - 1))):
        rig.fs.arm(rig.fs.events() + k)
        rig.cli("revert", one, two, "--yes")
        rig.checked_cut(after, reverted)
        rig.cli("snapshot")
        assert rig.files() in (after, reverted)
        assert rig.json("verify")["ok"]
        rig.cli("restore", two, "--yes")
        rig.settle()

"""Undo per conversation against the reference model (tests/history_reference.py), through the
library: a user and three sessions in one folder, each session owning a file and all sharing
one, with random prompts, agent edits inside turns, after-turn events, user edits, `undo N`,
`undo --to`, `undo --whole` and `redo N`. After every step the files are the model's, each
session's journal is the model's turn by turn (label, the files before and after), and a
refused step (nothing to move: exit 2; an overlap: exit 3 naming the model's paths) changed
nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from undostore import Workspace
from undostore.errors import ConflictError, UsageError

from .history_reference import Files, History, Refused

SESSIONS = ("X", "Y", "Z")
PATHS = ("shared.txt", "x.txt", "y.txt", "z.txt", "user/notes.txt")
OWN = {"X": ("x.txt", "shared.txt"), "Y": ("y.txt", "shared.txt"), "Z": ("z.txt",),
       "user": ("user/notes.txt", "shared.txt", "x.txt")}
CONTENTS = ("a", "b", "c", None)


def disk_files(root: Path) -> Files:
    return {p.relative_to(root).as_posix(): p.read_text()
            for p in root.rglob("*") if p.is_file()}


class TurnsModel(RuleBasedStateMachine):
    LIMIT = 6

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="undostore-turns-"))
        self.root = self.tmp / "root"
        self.root.mkdir()
        self.saved = {k: os.environ.get(k) for k in ("UNDOSTORE_UNDO_LIMIT",
                                                     "UNDOSTORE_GC_EVERY")}
        os.environ["UNDOSTORE_UNDO_LIMIT"] = str(self.LIMIT)
        os.environ["UNDOSTORE_GC_EVERY"] = "0"
        self.ws = Workspace(self.root, self.tmp / "store")
        self.model = History(self.LIMIT)
        self.prompts = 0
        self.running: set[str] = set()    # sessions in a turn (prompt sent, no Stop yet)
        self.ids: dict[str, Files] = {}

    def teardown(self) -> None:
        self.ws.close()
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, path: str, content: str | None) -> None:
        disk = self.root / path
        if content is None:
            disk.unlink(missing_ok=True)
            self.model.disk.pop(path, None)
        else:
            disk.parent.mkdir(parents=True, exist_ok=True)
            disk.write_text(content)
            self.model.disk[path] = content

    # --- what people and agents do -----

    @rule(index=st.integers(0, 2), content=st.sampled_from(CONTENTS))
    def user_edits(self, index: int, content: str | None) -> None:
        self.write(OWN["user"][index], content)

    @rule(name=st.sampled_from(SESSIONS))
    def prompt(self, name: str) -> None:
        self.prompts += 1
        label = f"{name} task {self.prompts}"
        result = self.ws.snapshot(session=name, label=label)
        assert result.recorded == self.model.point(name, label)
        self.running.add(name)

    @rule(name=st.sampled_from(SESSIONS), which=st.integers(0, 1),
          content=st.sampled_from(CONTENTS))
    def agent_edits(self, name: str, which: int, content: str | None) -> None:
        if name in self.running:
            own = OWN[name]
            self.write(own[which % len(own)], content)

    @rule(name=st.sampled_from(SESSIONS), edits=st.lists(
        st.tuples(st.integers(0, 1), st.sampled_from(CONTENTS)), min_size=1, max_size=2),
        ends=st.booleans())
    def a_whole_turn(self, name: str, edits: list[tuple[int, str | None]], ends: bool) -> None:
        """A prompt, the agent's edits, and (mostly) the host's after-turn event."""
        self.prompt(name)
        for which, content in edits:
            self.agent_edits(name, which, content)
        if ends:
            self.turn_ends(name)

    @rule(name=st.sampled_from(SESSIONS))
    def turn_ends(self, name: str) -> None:
        if name in self.running:
            self.ws.end_turn(name)
            self.model.end_turn(name)
            self.running.discard(name)

    @rule(name=st.sampled_from(SESSIONS), count=st.sampled_from([1, 1, 1, 2, 3]),
          undo=st.booleans(), whole=st.sampled_from([False, False, False, True]))
    def step(self, name: str, count: int, undo: bool, whole: bool) -> None:
        whole = whole and undo
        self.running.discard(name)       # the user's `/undo` ends the session's turn
        before = (disk_files(self.root), self._journals())
        try:
            turns, _ = self.model.step(name, undo, count, whole=whole)
        except Refused as refused:
            event(f"{'undo' if undo else 'redo'} refused with exit {refused.code}")
            error = UsageError if refused.code == 2 else ConflictError
            with pytest.raises(error) as raised:
                self._do(name, undo, count, whole)
            if refused.code == 3:
                assert raised.value.conflicts == refused.paths
            assert (disk_files(self.root), self._journals()) == before
            return
        event(f"{'undo' if undo else 'redo'} of {len(turns)} turn(s) done"
              + (" (whole)" if whole else ""))
        result = self._do(name, undo, count, whole)
        assert [t.label for t in result.turns] == [t.label for t in turns]

    def _do(self, name: str, undo: bool, count: int, whole: bool):  # noqa: ANN202
        if undo:
            return self.ws.undo(name, steps=count, whole=whole)
        return self.ws.redo(name, steps=count)

    @rule(name=st.sampled_from(SESSIONS), data=st.data())
    def undo_to(self, name: str, data: st.DataObject) -> None:
        points = self.model.session(name).undo
        if not points:
            return
        self.running.discard(name)
        turn = data.draw(st.sampled_from(points))
        sha = self._id(turn.before)
        before = disk_files(self.root)
        try:
            self.model.step(name, True, to=turn.before)
        except Refused as refused:
            with pytest.raises(UsageError if refused.code == 2 else ConflictError):
                self.ws.undo(name, to=sha)
            assert disk_files(self.root) == before
            return
        self.ws.undo(name, to=sha)

    # --- invariants -----

    def _id(self, files: Files) -> str:
        for sha, known in self.ids.items():
            if known == files:
                return sha
        raise AssertionError(f"no id seen for {files}")

    def _journals(self) -> dict[str, list]:
        out = {}
        for info in self.ws.sessions():
            log = self.ws.log(info.name)
            out[info.name] = [(p.label, p.id, p.after) for p in log.undo + log.redo]
        return out

    def _files_of(self, sha: str) -> Files:
        return {path: self.ws.store.read_blob(blob).decode()
                for path, _mode, blob in self.ws.store.iter_tree_files(bytes.fromhex(sha))}

    @invariant()
    def files_are_the_models(self) -> None:
        assert disk_files(self.root) == self.model.disk

    @invariant()
    def journals_are_the_models(self) -> None:
        for name, session in self.model.sessions.items():
            if not session.undo and not session.redo:
                continue
            log = self.ws.log(name)
            for points, turns in ((log.undo, list(reversed(session.undo))),
                                  (log.redo, list(reversed(session.redo)))):
                assert [p.label for p in points] == [t.label for t in turns]
                for point, turn in zip(points, turns, strict=True):
                    assert self.ids.setdefault(point.id, self._files_of(point.id)) == \
                        turn.before
                    assert (point.after is None) == (turn.after is None)
                    if point.after is not None:
                        assert self.ids.setdefault(point.after, self._files_of(point.after)) \
                            == turn.after


TestTurnsModel = TurnsModel.TestCase
TestTurnsModel.settings = settings(max_examples=60 if os.name != "nt" else 4,
                                   stateful_step_count=40, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow])

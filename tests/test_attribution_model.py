"""Attribution by tool call against a model (hypothesis stateful testing): two conversations'
tool calls, file tools and shells, and a user who writes between and during them; undo takes
back a turn's calls, each 3-way, newest first. Its invariant: an undo changes only what its own
tool calls changed, or refuses with nothing changed; nothing the user or the other conversation
wrote is lost.

The model is the specification, call by call: each call's change per path (what it found, what
it left), and an undo that reverts them newest first with git's 3-way rule on whole values
(ours unchanged: theirs; theirs unchanged or equal: ours; else a conflict, which refuses). The
contents are single tokens, so any two changes of one file conflict. Calls run one at a time
here, across the two conversations (calls that overlap, and the files in doubt between two
shells: test_attribution.py), and the user writes while no shell runs (what changes during a
shell is the shell's; during a file tool, the files it names are its).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from undostore import ConflictError, ToolCall, UsageError, Workspace
from undostore.history.toolcall import FILE, SHELL

PATHS = ("a.txt", "d/b.txt", "c.txt")
VALUES = ("x", "y", "zz", None)
SESSIONS = ("one", "two")
Files = dict[str, str | None]


class Call:
    """A call in the model: its kind, the paths a file tool names, each path's change."""

    def __init__(self, ident: str, kind: str, paths: tuple[str, ...]) -> None:
        self.ident, self.kind, self.paths = ident, kind, paths
        self.changes: dict[str, list[str | None]] = {}   # path -> [found, left]

    def wrote(self, path: str, before: str | None, after: str | None) -> None:
        self.changes.setdefault(path, [before, after])[1] = after


def _changed(turn: list[Call]) -> bool:
    """Whether a turn changed files: a path's calls, run after run (a run ends where something
    outside the calls changed the path before the next call found it), left it other than
    the run's first call found it. Calls that change a file and change it back changed
    nothing."""
    runs: dict[str, list[str | None]] = {}   # path -> [the run's first found, its last left]
    changed = False
    for call in turn:
        for path, (found, left) in call.changes.items():
            run = runs.get(path)
            if run is not None and run[1] != found:   # changed outside the calls meanwhile
                changed = changed or run[0] != run[1]
                run = None
            runs[path] = [found if run is None else run[0], left]
    return changed or any(first != last for first, last in runs.values())


def merge(base: str | None, ours: str | None, theirs: str | None) -> tuple[str | None, bool]:
    """git's 3-way rule on whole values: (the result, whether it is a conflict)."""
    if ours == base:
        return theirs, False
    if theirs in (base, ours):
        return ours, False
    return ours, True


class AttributionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="undostore-attribution-"))
        self.root = self.tmp / "root"
        (self.root / "d").mkdir(parents=True)
        self.home = self.tmp / "home"
        self.files: Files = dict.fromkeys(PATHS)
        self.turns: dict[str, list[list[Call]]] = {s: [] for s in SESSIONS}
        self.open: dict[str, Call | None] = dict.fromkeys(SESSIONS)
        self.calls = 0
        self.ws = Workspace(self.root, str(self.tmp / "store"))

    def teardown(self) -> None:
        self.ws.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def disk(self) -> Files:
        return {p: (self.root / p).read_text() if (self.root / p).exists() else None
                for p in PATHS}

    def _put(self, path: str, value: str | None) -> None:
        target = self.root / path
        if value is None:
            target.unlink(missing_ok=True)
        else:   # (an undo that deletes a folder's last file removes the folder, as git does)
            target.parent.mkdir(exist_ok=True)
            target.write_text(value)
        self.files[path] = value

    def _shell_open(self) -> bool:
        return any(c is not None and c.kind == SHELL for c in self.open.values())

    # --- the actors ---------------------------------------------------------------------

    @rule(name=st.sampled_from(SESSIONS))
    def prompt(self, name: str) -> None:
        """A new turn: the session's open call ends with it (its after event never came)."""
        self.open[name] = None
        first = not self.turns[name]
        self.ws.snapshot(session=name, label=f"turn {len(self.turns[name]) + 1}")
        self.turns[name].append([])
        if first:   # the host reports its calls: every turn of the session is its calls
            self.ws.call_started(None, name)

    @precondition(lambda self: not self._shell_open())
    @rule(path=st.sampled_from(PATHS), value=st.sampled_from(VALUES))
    def the_user_writes(self, path: str, value: str | None) -> None:
        named = [c for c in self.open.values() if c is not None and path in c.paths]
        before = self.files[path]
        self._put(path, value)
        for call in named:   # a file tool owns the files it names over its call
            call.wrote(path, before, value)

    @rule(name=st.sampled_from(SESSIONS), shell=st.booleans(),
          paths=st.sets(st.sampled_from(PATHS), min_size=1, max_size=2),
          writes=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(VALUES)), max_size=3),
          ends=st.booleans())
    def a_call(self, name: str, shell: bool, paths: set[str],
               writes: list[tuple[int, str | None]], ends: bool) -> None:
        """A call starts and writes (a file tool only the files it names); it ends now, or
        stays open while the others act (`the_call_ends`, or the session's next prompt)."""
        if not self.turns[name] or any(c is not None for c in self.open.values()):
            return   # calls that overlap (one's file tool in another's shell): test_attribution.py
        self.calls += 1
        call = Call(f"c{self.calls}", SHELL if shell else FILE,
                    () if shell else tuple(sorted(paths)))
        self.ws.call_started(ToolCall(call.ident, "Bash" if shell else "Edit", call.kind,
                                      call.paths), name)
        self.open[name] = call
        self.turns[name][-1].append(call)
        for at, value in writes:
            path = (call.paths or PATHS)[at % len(call.paths or PATHS)]
            before = self.files[path]
            self._put(path, value)
            call.wrote(path, before, value)
        if ends:
            self.the_call_ends(name)

    @rule(name=st.sampled_from(SESSIONS))
    def the_call_ends(self, name: str) -> None:
        call = self.open[name]
        if call is None:
            return
        self.ws.call_finished(call.ident, name)
        self.open[name] = None

    # --- the undo ------------------------------------------------------------------------

    @precondition(lambda self: all(c is None for c in self.open.values()))
    @rule(name=st.sampled_from(SESSIONS))
    def undo(self, name: str) -> None:
        at = self._newest_changed(name)
        if at is None:
            try:
                self.ws.undo(name, confirm=lambda plan: True)
            except UsageError:
                event("undo: no turn changed files")
                return
            raise AssertionError("an undo with no turn that changed files")
        expected, conflict = self._undone(self.turns[name][at])
        before = self.disk()
        try:
            self.ws.undo(name, confirm=lambda plan: True)
        except ConflictError:
            assert conflict, "refused, though the model merges cleanly"
            assert self.disk() == before, "a refused undo changed files"
            event("undo refused")
            return
        assert not conflict, "undone, though the model refuses"
        event("undo done" + (" (files changed)" if expected != before else ""))
        self.files = expected
        del self.turns[name][at]   # on the redo stack now: out of the model's reach

    def _newest_changed(self, name: str) -> int | None:
        for at in range(len(self.turns[name]) - 1, -1, -1):
            if _changed(self.turns[name][at]):
                return at
        return None

    def _undone(self, turn: list[Call]) -> tuple[Files, bool]:
        files = dict(self.files)
        for call in reversed(turn):
            for path, (found, left) in call.changes.items():
                if found == left:
                    continue
                files[path], conflict = merge(left, files[path], found)
                if conflict:
                    return self.files, True
        return files, False

    @invariant()
    def files_are_the_models(self) -> None:
        assert self.disk() == self.files


# A fixed seed: the same runs every time, so the suite is deterministic (hunting with more and
# other runs: `run_state_machine_as_test(AttributionModel, settings=settings(max_examples=N))`;
# 1,500 of 30 steps passed as this landed).
AttributionModel.TestCase.settings = settings(max_examples=60, stateful_step_count=25,
                                              deadline=None, derandomize=True, database=None)
TestAttributionModel = AttributionModel.TestCase

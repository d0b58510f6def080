"""`undostore pick`: choose an undo point on a terminal, with a diff preview, and go back to it.

The screen (pick_screen.py, extra `undostore[tui]`: prompt_toolkit) lists the session's undo
points newest first, each with its label, age and the number of files its turn changed, over a
coloured diff of what going back to the selected point does to the files now: the dry run of
`undo --to ID` itself (each turn's own change taken back 3-way, so the user's and other
sessions' later edits stay and are not shown; a conflict is said instead). The preview is the
plan: Enter shows the same change as a list and asks; `y` goes back to that point as `undo --to
ID` does (a safety snapshot first; the turns taken back go to the redo stack, so `redo` brings
them back one at a time). Right opens the files and hunks going back takes, all ticked (the
preview shows the one under the cursor): what is unticked stays, and Enter asks with the dry
run of `undo --to ID` of the ticked part (the picks `undo -p` makes). The restore runs after the
screen closes, and is refused (nothing changed) if the files changed so that the plan would
differ from the one shown.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from ..common import Context, emit, note, pass_context, session_option
from ..plain import stdin_is_terminal

if TYPE_CHECKING:
    from .pick_screen import Plan, Tick, Ticked

PREVIEW_LINES = 2000        # the preview of one point stops after this many lines of diff
PLAN_LINES = 200


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _row(number: int | None, label: str | None, age: float, files: int, width: int = 78) -> str:
    right = f"{_age(age):>11}  {_plural(files, 'file'):>9}"
    room = max(10, width - 6 - len(right))
    text = (label or "(no label)").replace("\n", " ")
    text = text if len(text) <= room else text[:room - 1] + "\u2026"
    return f"{number if number is not None else '-':>3}  {text:<{room}} {right}"


def _require_terminal() -> None:
    from undostore import UsageError

    try:
        on_terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):
        on_terminal = False
    if not (on_terminal and stdin_is_terminal()):
        raise UsageError("pick needs a terminal (stdin and stdout): `undostore log` lists the "
                         "undo points, `undostore undo --to ID` goes back to one")


def _require_extra() -> None:
    try:
        import prompt_toolkit  # noqa: F401
    except ImportError:
        from ..install_hint import pip_install

        raise click.ClickException("pick needs the terminal-UI extra (prompt_toolkit): "
                                   f"{pip_install('tui')}") from None


class _Picker:
    """The data behind the screen: one session's turns, the files now, previews and plans."""

    def __init__(self, workspace: Any, session: str) -> None:
        self.ws, self.session = workspace, session
        self.turns = workspace.turns(session)
        self.shown: dict[tuple[int, Ticked | None], list[str]] = {}
        # (row, what is ticked) -> its undo's dry run, or the error it raised
        self.dry: dict[tuple[int, Ticked | None], Any] = {}
        self.held: dict[int, list[Any]] = {}   # row -> the files going back takes (ticks)

    def rows(self) -> list[str]:
        now = time.time()
        return [_row(t.span.number, t.point.label, now - t.point.time, len(t.changes))
                for t in self.turns]

    def _dry_run(self, i: int, ticked: Ticked | None = None) -> Any:
        """What going back to row i's point would do (taking only what is `ticked`; None: the
        turns whole): `undo --to` run dry (a StepResult), or the UsageError or ConflictError
        that undo would answer (kept: a row asked again, by its preview and its plan, is one
        dry run)."""
        from undostore import ConflictError, UsageError

        key = (i, ticked)
        if key not in self.dry:
            try:
                self.dry[key] = self.ws.undo(self.session, to=self.turns[i].point.id,
                                             picks=self._picks(i, ticked), dry_run=True)
            except (UsageError, ConflictError) as err:
                self.dry[key] = err
        return self.dry[key]

    def _picks(self, i: int, ticked: Ticked | None) -> list[Any] | None:
        """The picks of what is ticked of row i's files (None: all of it)."""
        from undostore import Direction, Picked

        if ticked is None:
            return None
        picks = []
        for at, file in enumerate(self.held[i]):
            hunks = tuple(hunk for h, hunk in enumerate(file.change.hunks) if (at, h) in ticked)
            picked = Picked(hunks=hunks, mode=len(hunks) == len(file.change.hunks),
                            whole=(at, None) in ticked)
            if picked.anything:
                picks.append(file.pick(self.ws.store, picked, Direction.UNDO))
        return picks

    def ticks(self, i: int) -> list[Tick]:
        """What going back to row i's point takes: each file and each hunk of a text file,
        with its preview (git's colours), as the screen lists them to tick."""
        from undostore import GIT_COLORS, Direction

        from .hunk_prompt import file_header, hunk_lines
        from .pick_screen import Tick

        if i not in self.held:
            try:
                self.held[i] = self.ws.step_files(Direction.UNDO, self.session,
                                                  to=self.turns[i].point.id)
            except Exception as err:   # noqa: BLE001 (said in the list instead)
                self.held[i] = []
                return [Tick(0, None, f"(nothing to tick: {err})", str(err))]
        turns = {file.turn.id for file in self.held[i]}
        out = []
        for at, file in enumerate(self.held[i]):
            change = file.change
            head = "\n".join(file_header(change, GIT_COLORS)) + "\n"
            parts = [hunk_lines(change, hunk, GIT_COLORS) for hunk in change.hunks]
            what = (f"{len(parts)} hunk{'s' if len(parts) != 1 else ''}" if parts
                    else change.kind)
            whose = (f", turn {file.turn.label or file.turn.id[:12]!r}" if len(turns) > 1
                     else "")
            out.append(Tick(at, None, f"{change.path}  ({what}{whose})", head + "".join(parts)))
            out += [Tick(at, h, hunk_lines(change, hunk).splitlines()[0], head + part)
                    for h, (hunk, part) in enumerate(zip(change.hunks, parts, strict=True))]
        return out

    def preview(self, i: int) -> tuple[str, str]:
        from undostore import GIT_COLORS, render

        point = self.turns[i].point
        result = self._dry_run(i)
        if isinstance(result, Exception):
            return f"going back to before {point.id[:12]}: nothing would change", str(result)
        changes = self.ws.diff(result.safety, result.target)
        heading = (f"going back to before {point.id[:12]} changes {_plural(len(changes), 'file')}"
                   " (each turn's own change, 3-way: later edits stay)")
        if not changes:
            return heading, "(nothing to change)"
        out, lines = [], 0
        for chunk in render("patch", self.ws.store, changes, GIT_COLORS):
            out.append(chunk)
            lines += chunk.count(b"\n")
            if lines >= PREVIEW_LINES:
                out.append(b"... (more: `undostore undo --to %s --dry-run`)\n"
                           % point.id[:12].encode())
                break
        return heading, b"".join(out).decode("utf-8", "replace").expandtabs(8)

    def plan(self, i: int, ticked: Ticked | None = None) -> Plan:
        import textwrap

        from .pick_screen import Plan

        point = self.turns[i].point
        if ticked is not None and not ticked:
            return Plan(["nothing is ticked: Space ticks a file or a hunk"], None)
        result = self._dry_run(i, ticked)
        if isinstance(result, Exception):
            return Plan(textwrap.wrap(" ".join(str(result).split()), 78), None)
        assert result.plan is not None
        self.shown[i, ticked] = result.plan.lines()
        label = f'"{point.label}"' if point.label else point.id[:12]
        what = ("Take back what is ticked," if ticked is not None
                else f"Go back {_plural(len(result.turns), 'turn')}")
        question = (f"{what} to before {label}? "
                    f"({_plural(len(self.shown[i, ticked]), 'file')} change)")
        plan = result.plan
        counts = (f"{len(plan.create)} to create, {len(plan.modified)} to modify, "
                  f"{len(plan.delete)} to delete; a safety snapshot is taken first")
        lines = [line.replace("\t", "  ") for line in plan.lines(limit=PLAN_LINES)]
        return Plan([*lines, "", counts], question)

    def go(self, i: int, ticked: Ticked | None = None) -> Any:
        """Go back to row i's point (only what is `ticked` of it), if the plan is still the
        one shown."""
        from undostore import ConfirmationNeeded

        from .restore import run_restore

        picks = self._picks(i, ticked)

        def same_plan(plan: Any) -> bool:
            if plan.lines() != self.shown.get((i, ticked)):
                raise ConfirmationNeeded("the files changed since the plan was shown; nothing "
                                         "was changed (run `undostore pick` again)")
            return True

        point_id = self.turns[i].point.id
        return run_restore(lambda **kw: self.ws.undo(self.session, to=point_id, picks=picks,
                                                     **{**kw, "confirm": same_plan}),
                           yes=True, dry_run=False, action="undo")


@click.command("pick")
@session_option
@pass_context
def pick_command(ctx: Context, session: str | None) -> None:
    """Choose an undo point on a terminal, with a diff preview, and go back to it.

    The session's undo points, newest first (label, age, files its turn changed), over a
    coloured diff of what going back to the selected one changes (as `undo --to ID` does it:
    each turn's own change, 3-way, so later edits stay). Up/Down choose, PgUp/PgDn scroll
    the diff, Enter shows the plan and asks (y goes back, as `undo --to ID` does: a safety
    snapshot first, and `redo` takes it back), q quits changing nothing. Right (or t) lists
    the files and hunks going back takes, all ticked: Space unticks one, Enter takes back only
    what is ticked (as `undo -p`; the rest stays on the undo stack). Needs a terminal and
    the extra: pip install 'undostore[tui]'.
    """
    from ..common import history_session
    from .restore import note_warnings
    from .sessions import step_summary

    _require_terminal()
    _require_extra()
    from .pick_screen import PickScreen

    name = history_session(ctx, session)
    picker = _Picker(ctx.workspace(), name)
    if not picker.turns:
        note(f"undostore: session {name!r} has no undo points to pick from")
        return
    count = _plural(len(picker.turns), "undo point")
    title = f" undostore pick \u00b7 session {name!r} \u00b7 {count}"
    choice = PickScreen(title, picker.rows(), picker.preview, picker.plan, picker.ticks).run()
    if choice is None:
        note("undostore: nothing changed")
        return
    result = picker.go(*choice)
    note_warnings(result.warnings)
    emit(False, result.to_json(), lambda: step_summary(result))


COMMANDS = [pick_command]

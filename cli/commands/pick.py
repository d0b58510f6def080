"""`undostore pick`: choose an undo point on a terminal, with a diff preview, and go back to it.

The screen (pick_screen.py, extra `undostore[tui]`: prompt_toolkit) lists the session's undo
points newest first, each with its label, age and the number of files its turn changed, over a
coloured diff of what going back to the selected point does to the files now: the dry run of
`undo --to ID` itself (each turn's own change taken back 3-way, so the user's and other
sessions' later edits stay and are not shown; a conflict is said instead). The preview is the
plan: Enter shows the same change as a list and asks; `y` goes back to that point as `undo --to
ID` does (a safety snapshot first; the turns taken back go to the redo stack, so `redo` brings
them back one at a time). The restore runs after the screen closes, and is refused (nothing
changed) if the files changed so that the plan would differ from the one shown.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from ..common import Context, emit, note, pass_context, session_option
from ..plain import stdin_is_terminal

if TYPE_CHECKING:
    from .pick_screen import Plan

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
        self.shown: dict[int, list[str]] = {}
        self.dry: dict[int, Any] = {}   # row -> its undo's dry run, or the error it raised

    def rows(self) -> list[str]:
        now = time.time()
        return [_row(t.span.number, t.point.label, now - t.point.time, len(t.changes))
                for t in self.turns]

    def _dry_run(self, i: int) -> Any:
        """What going back to row i's point would do: `undo --to` run dry (a StepResult), or
        the UsageError or ConflictError that undo would answer (kept: a row asked again, by its
        preview and its plan, is one dry run)."""
        from undostore import ConflictError, UsageError

        if i not in self.dry:
            try:
                self.dry[i] = self.ws.undo(self.session, to=self.turns[i].point.id,
                                           dry_run=True)
            except (UsageError, ConflictError) as err:
                self.dry[i] = err
        return self.dry[i]

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

    def plan(self, i: int) -> Plan:
        import textwrap

        from .pick_screen import Plan

        point = self.turns[i].point
        result = self._dry_run(i)
        if isinstance(result, Exception):
            return Plan(textwrap.wrap(" ".join(str(result).split()), 78), None)
        assert result.plan is not None
        self.shown[i] = result.plan.lines()
        label = f'"{point.label}"' if point.label else point.id[:12]
        question = (f"Go back {_plural(len(result.turns), 'turn')} to before {label}? "
                    f"({_plural(len(self.shown[i]), 'file')} change)")
        plan = result.plan
        counts = (f"{len(plan.create)} to create, {len(plan.modified)} to modify, "
                  f"{len(plan.delete)} to delete; a safety snapshot is taken first")
        lines = [line.replace("\t", "  ") for line in plan.lines(limit=PLAN_LINES)]
        return Plan([*lines, "", counts], question)

    def go(self, i: int) -> Any:
        """Go back to row i's point, if the plan is still the one shown."""
        from undostore import ConfirmationNeeded

        from .restore import run_restore

        def same_plan(plan: Any) -> bool:
            if plan.lines() != self.shown.get(i):
                raise ConfirmationNeeded("the files changed since the plan was shown; nothing "
                                         "was changed (run `undostore pick` again)")
            return True

        point_id = self.turns[i].point.id
        return run_restore(lambda **kw: self.ws.undo(self.session, to=point_id,
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
    snapshot first, and `redo` takes it back), q quits changing nothing. Needs a terminal and
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
    choice = PickScreen(title, picker.rows(), picker.preview, picker.plan).run()
    if choice is None:
        note("undostore: nothing changed")
        return
    result = picker.go(choice)
    note_warnings(result.warnings)
    emit(False, result.to_json(), lambda: step_summary(result))


COMMANDS = [pick_command]

"""How changes are written for people, shared by `diff`, `show` and `log -p`: git's text forms
on stdout, whether to colour them, the width of `--stat`, and a turn's tool calls."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from undostore.diff.change import Change
    from undostore.history.journal import Point
    from undostore.store.store import Store


def call_lines(point: Point) -> list[str]:
    """The tool calls that made a turn's change, one line each, numbered as `undo --call N`
    takes them (`2. Bash: npm test  (a, b)`), where the host reports them; none elsewhere."""
    lines = []
    for number, note in enumerate(point.notes, 1):   # as `undo --call N` counts them
        what = f"{note.tool}: {note.label}" if note.label else note.tool
        files = ", ".join(note.files) + (f" and {note.more} more" if note.more else "")
        lines.append(f"    {number}. {what}  ({files})")
    return lines


def part_note(point: Point) -> str:
    """`(part of the turn: without a.txt, b.txt; some hunks of c.py)` for an entry that an
    undo or redo of some paths or hunks split from its turn (`log`, `show`); "" for a whole
    one."""
    if not point.partial:
        return ""
    said = []
    if point.left_out:
        said.append(f"without {_some(sorted(point.left_out))}")
    if point.cut is not None:
        said.append(f"some hunks of {_some(sorted(point.cut.paths))}")
    return f"(part of the turn: {'; '.join(said)})"


def _some(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def write_changes(form: str, store: Store, changes: list[Change], colored: bool,
                  width: int, context: int = 3) -> None:
    """`changes` in one of git's forms on stdout (`width`: the --stat width; `context`: the
    patch's lines around each change)."""
    from undostore import GIT_COLORS, PLAIN, render

    sys.stdout.flush()
    out = sys.stdout.buffer
    for chunk in render(form, store, changes, GIT_COLORS if colored else PLAIN, width,
                        context):
        out.write(chunk)
    out.flush()


def want_color(choice: str) -> bool:
    """Colour for `--color auto|always|never`: auto is on for a terminal (not `TERM=dumb`),
    unless NO_COLOR is set."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):  # https://no-color.org: off unless asked for by a flag
        return False
    try:
        on_terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    term = os.environ.get("TERM")
    return on_terminal and bool(term) and term != "dumb"


def columns() -> int:
    """git's width for --stat: $COLUMNS, else the terminal's width, else 80."""
    import re

    match = re.match(r"\s*\+?(\d+)", os.environ.get("COLUMNS", ""))
    if match and int(match.group(1)) > 0:
        return int(match.group(1))
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        pass
    return 80

"""The `-p` question of `undo`, `redo`, `restore` and `revert`: each file's change shown hunk by
hunk and asked about as `git checkout -p` asks (y, n, q, a, d, s to split, e to edit, ?), the
answers read a line at a time from standard input (a terminal, or a script's pipe).

What is asked is the change as the step holds it (`--- a/` its start, `+++ b/` its end); an
undo or a revert takes the picked hunks back (`back`), a redo or a restore applies them. A file
that is not text (added, deleted, binary, a symlink) is one question about it whole, as git asks
"Discard deletion". The answers become `Picked` records; nothing is changed here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from undostore import (
    GIT_COLORS,
    PLAIN,
    EditFailed,
    Picked,
    hunk_text,
    parse_edited_hunk,
    split_hunk,
)

if TYPE_CHECKING:
    from undostore import FileChange, FilePick
    from undostore.diff.hunkpick import PickHunk
    from undostore.diff.patch import Colors

_ASKED_WHOLE = {"addition": "addition", "deletion": "deletion", "change": "this change"}


class Question(NamedTuple):
    """A file's change to ask about, and a line said before it (a turn's name; "" none)."""

    change: FileChange
    heading: str = ""


class Prompt:
    """Asks about each question's hunks (`verb`: Undo, Redo, Restore, Revert) on `out`,
    reading answers with `read` (None: the input ended, which is `q`)."""

    def __init__(self, verb: str, *, back: bool, colored: bool,
                 read: Callable[[], str | None] | None = None, out: TextIO | None = None,
                 edit: Callable[[str], str | None] | None = None) -> None:
        self.verb, self.back = verb, back
        self.colors: Colors = GIT_COLORS if colored else PLAIN
        self.read = read or _read_line
        self.out = out or sys.stdout
        self.edit = edit or _edit
        self.quit = False

    def ask_all(self, questions: list[Question]) -> list[Picked]:
        """The answers for each question, in order (`q` leaves the rest unpicked)."""
        return [self.ask(q) if not self.quit else Picked() for q in questions]

    def ask(self, question: Question) -> Picked:
        change = question.change
        if question.heading:
            self._say(question.heading)
        self._header(change)
        if change.lines is None:
            answer = self._choose(f"{self.verb} {_ASKED_WHOLE[change.kind]}", "ynqad")
            return Picked(whole=answer in ("y", "a"))
        mode = False
        if change.mode_changed:
            answer = self._choose(f"{self.verb} mode change", "ynqad")
            if answer in ("q", "d"):
                return Picked()
            if answer == "a":   # it and every later hunk of the file
                return Picked(hunks=tuple(change.hunks), mode=True)
            mode = answer == "y"
        hunks = list(change.hunks)
        picked: list[PickHunk] = []
        at = 0
        while at < len(hunks):
            hunk = hunks[at]
            self._hunk(change, hunk)
            keys = "ynqad" + ("s" if hunk.splittable else "") + "e"
            answer = self._choose(f"({at + 1}/{len(hunks)}) {self.verb} this hunk", keys)
            if answer == "y":
                picked.append(hunk)
            elif answer == "a":
                picked += hunks[at:]
                break
            elif answer in ("q", "d"):
                break
            elif answer == "s":
                parts = split_hunk(change.lines, hunk)
                self._say(f"Split into {len(parts)} hunks.")
                hunks[at:at + 1] = parts
                continue
            elif answer == "e":
                edited = self._edited(change, hunk)
                if edited is None:
                    continue   # the edit was given up: ask again
                picked.append(edited)
            at += 1
        return Picked(hunks=tuple(picked), mode=mode)

    # --- asking --------------------------------------------------------------------------------

    def _choose(self, question: str, keys: str) -> str:
        """The answer (one of `keys`) to `question [y,n,...,?]?`, asked again until it is one;
        `q` also stops every later question."""
        while True:
            self.out.write(f"{self._blue(question)} [{','.join(keys)},?]? ")
            self.out.flush()
            line = self.read()
            if line is None:
                self.out.write("\n")
                answer = "q"
            else:
                answer = line.strip()[:1].lower()
            if answer and answer in keys:
                if answer == "q":
                    self.quit = True
                return answer
            self._say(self._help(keys))

    def _help(self, keys: str) -> str:
        verb = self.verb.lower()
        lines = {"y": f"y - {verb} this hunk",
                 "n": f"n - do not {verb} this hunk",
                 "q": f"q - quit; do not {verb} this hunk or any of the remaining ones",
                 "a": f"a - {verb} this hunk and all later hunks in the file",
                 "d": f"d - do not {verb} this hunk or any of the later hunks in the file",
                 "s": "s - split the current hunk into smaller hunks",
                 "e": "e - manually edit the current hunk"}
        return "\n".join([*(lines[k] for k in keys), "? - print help"])

    def _edited(self, change: FileChange, hunk: PickHunk) -> PickHunk | None:
        """The hunk as the person edits it (git's manual hunk edit); None: given up."""
        assert change.lines is not None
        text = hunk_text(change.lines, hunk).decode("utf-8", "surrogateescape")
        while True:
            got = self.edit(_edit_guide(text, self.verb.lower(), self.back))
            if got is None or not any(line and not line.startswith("#")
                                      for line in got.splitlines()):
                return None   # nothing left of it: the hunk stays as it was
            try:
                return parse_edited_hunk(change.lines, hunk,
                                         got.encode("utf-8", "surrogateescape"),
                                         reverse=self.back)
            except EditFailed as err:
                self._say(f"Your edited hunk does not apply ({err}).")
                if self._choose('Edit again (saying "no" discards!)', "yn") != "y":
                    return None
                text = got

    # --- showing -------------------------------------------------------------------------------

    def _say(self, line: str) -> None:
        self.out.write(line + "\n")

    def _blue(self, text: str) -> str:
        return f"\033[1;34m{text}\033[m" if self.colors.enabled else text

    def _header(self, change: FileChange) -> None:
        for line in file_header(change, self.colors):
            self._say(line)

    def _hunk(self, change: FileChange, hunk: PickHunk) -> None:
        self.out.write(hunk_lines(change, hunk, self.colors))


def file_header(change: FileChange, colors: Colors = PLAIN) -> list[str]:
    """The lines git prints before a file's hunks (`diff --git`, its mode, `---`, `+++`)."""
    meta, reset = colors.meta.decode(), colors.reset.decode()
    start, end = change.start, change.end
    lines = [f"diff --git a/{change.path} b/{change.path}"]
    if start is None and end is not None:
        lines.append(f"new file mode {end.mode:06o}")
    elif end is None and start is not None:
        lines.append(f"deleted file mode {start.mode:06o}")
    elif start is not None and end is not None and start.mode != end.mode:
        lines += [f"old mode {start.mode:06o}", f"new mode {end.mode:06o}"]
    if change.lines is None and start is not None and end is not None:
        lines.append(f"Binary files a/{change.path} and b/{change.path} differ")
    elif change.lines is not None:
        lines += [f"--- a/{change.path}", f"+++ b/{change.path}"]
    return [f"{meta}{line}{reset}" for line in lines]


def hunk_lines(change: FileChange, hunk: PickHunk, colors: Colors = PLAIN) -> str:
    """The hunk as git prints it, in git's colours where `colors` has them."""
    assert change.lines is not None
    text = hunk_text(change.lines, hunk).decode("utf-8", "replace")
    if not colors.enabled:
        return text
    c = {key: value.decode() for key, value in colors._asdict().items()}
    out = []
    for line in text.splitlines():
        color = {"@": c["frag"], "-": c["old"], "+": c["new"]}.get(line[:1], "")
        out.append(f"{color}{line}{c['reset']}" if color else line)
    return "\n".join(out) + "\n"


def ask(questions: list[Question], verb: str, *, back: bool) -> list[Picked]:
    """`-p` of every command: each question asked on standard input (coloured on a terminal);
    the answers, as the questions go."""
    from ..textout import want_color

    return Prompt(verb, back=back, colored=want_color("auto")).ask_all(questions)


def ask_changes(changes: list[FileChange], verb: str, *, back: bool, blobs: Any
                ) -> list[FilePick]:
    """`-p` of `restore` and `revert`: what the answers pick of `changes` (none: nothing was
    picked)."""
    answers = ask([Question(change) for change in changes], verb, back=back)
    return [change.pick(blobs, answer, back=back)
            for change, answer in zip(changes, answers, strict=True) if answer.anything]


def _edit_guide(text: str, verb: str, back: bool) -> str:
    """The file git's manual hunk edit gives the editor (`back`: the hunk is taken back)."""
    gone, kept = ("+", "-") if back else ("-", "+")
    return (f"# Manual hunk edit mode -- see bottom for a quick guide.\n{text}"
            "# ---\n"
            f"# To remove '{gone}' lines, make them ' ' lines (context).\n"
            f"# To remove '{kept}' lines, delete them.\n"
            "# Lines starting with # will be removed.\n"
            "#\n"
            f"# If the patch applies cleanly, the edited hunk will immediately be marked for "
            f"{verb}.\n"
            "# If it does not apply cleanly, you will be given an opportunity to\n"
            "# edit again.  If all lines of the hunk are removed, then the edit is\n"
            "# aborted and the hunk is left unchanged.\n")


def _read_line() -> str | None:
    line = sys.stdin.readline()
    return line if line else None


def _edit(text: str) -> str | None:
    """`text` as the person's editor ($VISUAL, $EDITOR) leaves it; None: not saved."""
    import click

    return click.edit(text, extension=".diff", require_save=True)

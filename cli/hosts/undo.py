"""`/undo`, `/undo N`, `/redo`, `/redo N` typed in an agent host: the user's command, not a turn
(`--merge` or, for undo, `--whole` after it: the ways out of a conflict), and after them the
paths to take back or apply again alone (`/undo src/a.py`, `/undo 2 src`: relative to the
host's folder, quoted as a shell quotes them).

The hook performs it in the event's session (no question: the user asked), records no point, and
answers with one line saying what came back, or why nothing did. A plugin command arrives with its
namespace (`/undostore:undo`, Claude Code's plugin form), so that is accepted too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from undostore import Direction

if TYPE_CHECKING:
    from undostore import Workspace
    from undostore.history.journal import Point
    from undostore.history.steps import StepResult

_COMMAND = re.compile(r"\s*/(?:undostore:)?(undo|redo)(?:\s+(?:(\d{1,4})|turn\s+(\d{1,4})))?"
                      r"(?:\s+call\s+(\d{1,4}))?"
                      r"(?:\s+--(merge|whole|keep))?(?:[ \t]+(?!-)(\S.*?))?\s*",
                      re.IGNORECASE)
# `/undo` or `/redo` and then anything: the user's command still, one it cannot read
_COMMAND_WORD = re.compile(r"\s*/(?:undostore:)?(undo|redo)(?:\s|$)", re.IGNORECASE)
USAGE = ("/undo [N | turn K] [call N] [--merge | --whole | --keep] [PATH...] or /redo [N] "
         "[--merge | --keep] [PATH...]")


class HostCommand(NamedTuple):
    direction: Direction
    count: int            # how many steps (1 for a bare `/undo`)
    merge: bool = False   # on a conflict: markers instead of refusing
    whole: bool = False   # undo only: the whole folder back to the point
    keep: bool = False    # files in doubt (another conversation's shell ran too) left as they are
    unreadable: str | None = None   # the rest of a `/undo ...` it cannot read: nothing is done
    paths: tuple[str, ...] = ()     # only these paths of the turns (relative to the host's folder)
    turn: int | None = None         # `/undo turn K`: turn K alone, the later turns kept
    call: int | None = None         # `/undo call N`: that tool call of the turn alone


def parse_command(prompt: object) -> HostCommand | None:
    """The command a prompt is, or None for an ordinary prompt. A prompt that starts with
    the word `/undo` or `/redo` is always the user's command, never the model's to read: one
    it cannot read (`/undo foo`) is answered with the usage line."""
    if not isinstance(prompt, str):
        return None
    match = _COMMAND.fullmatch(prompt)
    if match is None:
        word = _COMMAND_WORD.match(prompt)
        if word is None:
            return None
        rest = " ".join(prompt[word.end():].split())
        return HostCommand(Direction(word.group(1).lower()), 1, unreadable=rest)
    count = int(match.group(2)) if match.group(2) else 1
    turn = max(int(match.group(3)), 1) if match.group(3) else None
    call = max(int(match.group(4)), 1) if match.group(4) else None
    how = (match.group(5) or "").lower()
    direction = Direction(match.group(1).lower())
    paths: tuple[str, ...] = ()
    if match.group(6):
        try:
            paths = _words(match.group(6))
        except ValueError:   # an unclosed quote
            return HostCommand(direction, 1, unreadable=" ".join(match.group(6).split()))
    return HostCommand(direction, max(count, 1), how == "merge", how == "whole", how == "keep",
                       paths=paths, turn=turn, call=call)


def _words(text: str) -> tuple[str, ...]:
    """The paths after a command, split as a shell splits words: quotes group, and on Windows a
    backslash is a path's separator, not an escape. ValueError for an unclosed quote."""
    import os
    import shlex

    if os.name != "nt":
        return tuple(shlex.split(text))
    return tuple(word[1:-1] if len(word) > 1 and word[0] == word[-1] and word[0] in "'\""
                 else word for word in shlex.split(text, posix=False))


class CommandDone(NamedTuple):
    """What a host command did: the one line for the host to show, and the turns it took back
    or applied again whole from the newest, in the order it did, which a plugin host moves its
    conversation over (none when nothing changed, or when the step took part of a turn or a
    middle one: the conversation stays, and the model is told)."""

    line: str
    turns: list[Point]


def perform(workspace: Workspace, session: str | None, command: HostCommand,
            cwd: str | None = None) -> CommandDone:
    """Do `command` in `session` (its paths relative to the host's folder `cwd`)."""
    from undostore import ConflictError, DoubtfulChange, UndostoreError

    from ..plain import root_relative

    verb = command.direction.value
    if command.unreadable is not None:
        shown = command.unreadable if len(command.unreadable) <= 40 else \
            command.unreadable[:39] + "\u2026"
        return CommandDone(f"undostore: nothing done: {USAGE} ({shown!r} is not a count or one "
                         "of those options)", [])
    name = workspace.history_session(session or None)[0]
    try:
        paths = root_relative(workspace.root, list(command.paths), cwd)
        result = workspace.step(command.direction, name, steps=command.count,
                                merge=command.merge, whole=command.whole,
                                keep_doubtful=command.keep, paths=paths or None,
                                turn=command.turn, call=command.call,
                                confirm=lambda plan: True)   # the user typed it: the yes
    except DoubtfulChange as err:
        shown = ", ".join(err.conflicts[:3]) + (", ..." if len(err.conflicts) > 3 else "")
        return CommandDone(f"undostore: {verb}: nothing changed: {shown} changed while another "
                           f"conversation's call ran too, so whose change it was is in "
                           f"doubt; `/{verb} --keep` {verb}s the rest and leaves "
                           f"{'them' if len(err.conflicts) > 1 else 'it'} as it is now", [])
    except ConflictError as err:
        paths = getattr(err, "conflicts", None) or []
        shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
        return CommandDone(f"undostore: {verb}: nothing changed: the turn overlaps later changes "
                         f"in {shown}; `/{verb} --merge` writes conflict markers"
                         + (", `/undo --whole` puts the whole folder back"
                            if command.direction is Direction.UNDO else ""), [])
    except UndostoreError as err:
        usage = f"; nothing done ({USAGE})" if command.paths else ""
        return CommandDone(f"undostore: {verb}: {' '.join(str(err).split())}{usage}", [])
    newest_whole = (not command.paths and command.call is None and command.turn in (None, 1)
                    and all(part is None for part in result.parts))
    return CommandDone(summary(command, name, result),
                       list(result.turns) if newest_whole else [])


def summary(command: HostCommand, session: str, result: StepResult) -> str:
    """The one line: which turns came back or went, how many files, what stays to resolve."""
    from undostore import conflict_notes

    labels = [p.label or p.id[:12] for p in result.turns]
    count = len(result.turns)
    turns = (f"turn {command.turn}" if command.turn is not None
             else f"{count} turns" if count > 1 else "the last turn")
    if command.call is not None:
        turns = f"call {command.call} of {turns}"
    what = "; ".join(repr(label) for label in labels[:3]) + ("; ..." if len(labels) > 3 else "")
    undo = command.direction is Direction.UNDO
    verb = ("undid" if undo else "redid") + (" (whole folder)" if result.whole else "")
    back = (f"/redo applies this session's turns again; every other change it took back is "
            f"in the safety snapshot (`undostore restore {result.safety[:12]}`)"
            if result.whole else f"/{command.direction.back.value} takes it back")
    first = (f"undostore: finished {result.recovered} first; "
             if result.recovered else "undostore: ")
    conflicts = (f"; {len(result.conflicts)} conflict(s) left: "
                 + "; ".join(conflict_notes(result.conflicts[:3], result.unmarked))
                 + ("; ..." if len(result.conflicts) > 3 else "") if result.conflicts else "")
    warnings = result.warnings
    kept = (f"; {len(warnings)} warning(s), the first: {warnings[0].path!r}: "
            f"{' '.join(warnings[0].message.split())}" if warnings else "")  # one line
    git = f"; {result.git_moved.advice()}" if result.git_moved else ""
    took = result.taken_paths()
    part = (f" (only {', '.join(took[:5])}{', ...' if len(took) > 5 else ''}: the rest of "
            f"the turn stays)" if took else "")
    return (f"{first}{verb} {turns}{part} of session {session!r} ({what}; {result.counts()}), "
            f"safety snapshot {result.safety[:12]}; {back}{conflicts}{kept}{git}")

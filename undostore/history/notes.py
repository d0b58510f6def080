"""What a session's model is to be told at its next prompt: that turns were taken back or applied
again, and which files that changed.

An undo or redo (`sessions.step`) leaves a line here for its session; the hook gives the lines
to the model with the session's next prompt, where its host takes context from a hook, and
they are gone once given (`take`). Without them the model goes on from files that are no longer
there. One file per session beside its journal (`sessions/<name>.note`, JSON lines of text,
the newest `KEEP`), this user's and never followed through a link.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from undostore.fileio import read_small, remove_quietly, write_small
from undostore.history.journal import encode_name, validate_name

if TYPE_CHECKING:
    from undostore.store.store import Store

SUFFIX = ".note"
KEEP = 8
MAX_FILES_NAMED = 12


def _path(store: Store, session: str) -> str:
    return os.path.join(store.sessions_dir, encode_name(validate_name(session)) + SUFFIX)


def _read(path: str) -> list[str]:
    raw = read_small(path)
    try:
        lines = [json.loads(line) for line in (raw or b"").splitlines() if line.strip()]
    except ValueError:
        return []
    return [line for line in lines if isinstance(line, str)]


def add(store: Store, session: str, text: str) -> None:
    """Keep `text` for the session's model (store lock held); best effort."""
    path = _path(store, session)
    lines = [*_read(path), text][-KEEP:]
    write_small(path, "".join(json.dumps(line) + "\n" for line in lines).encode())


def take(store: Store, session: str) -> list[str]:
    """The lines kept for the session's model, oldest first; they are gone once taken."""
    path = _path(store, session)
    lines = _read(path)
    if lines:
        remove_quietly(path)
    return lines


def step_note(direction: str, labels: list[str], created: list[str], modified: list[str],
              deleted: list[str]) -> str:
    """The line for an undo (`direction` "undo") or redo of the turns `labels`, newest first."""
    turns = ", ".join(repr(label) for label in labels[:3]) + (", ..." if len(labels) > 3 else "")
    what = "turn" if len(labels) == 1 else f"{len(labels)} turns"
    files = sorted({*created, *modified, *deleted})
    named = ", ".join(files[:MAX_FILES_NAMED]) + (
        f" and {len(files) - MAX_FILES_NAMED} more" if len(files) > MAX_FILES_NAMED else "")
    if direction == "undo":
        done = (f"the user took back the {what} {turns} (undostore /undo): these files are "
                f"as they were before it: {named or 'none'}")
    else:
        done = (f"the user applied the {what} {turns} again (undostore /redo): these files "
                f"are as it left them: {named or 'none'}")
    return f"{done}. Read them again before relying on what you remember of them."

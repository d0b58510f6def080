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
from typing import TYPE_CHECKING, Any

from undostore.fileio import read_small, remove_quietly, write_small
from undostore.history.journal import encode_name, validate_name

if TYPE_CHECKING:
    from undostore.store.store import Store

SUFFIX = ".note"
MAX_FILES_NAMED = 12


def _path(store: Store, session: str) -> str:
    return os.path.join(store.sessions_dir, encode_name(validate_name(session)) + SUFFIX)


def _read(path: str) -> list[object]:
    raw = read_small(path)
    try:
        return [json.loads(line) for line in (raw or b"").splitlines() if line.strip()]
    except ValueError:
        return []


def add(store: Store, session: str, direction: str, turns: list[tuple[str, str]],
        files: list[str]) -> None:
    """Keep for the session's model that its undo (`direction` "undo") or redo moved `turns`
    ((point id, label), in the order it moved them) and changed `files` (store lock held);
    best effort. The file holds the net result so far, a record per turn: a turn moved back
    where the model last saw it leaves it, so it never grows past the turns there are."""
    path = _path(store, session)
    records = net_records([*_read(path), {"step": direction, "turns": [list(t) for t in turns],
                                          "files": sorted(files)}])
    write_small(path, "".join(json.dumps(line) + "\n" for line in records).encode())


def take(store: Store, session: str) -> list[str]:
    """What the session's model is to be told: the net result of the steps since its last
    prompt, oldest first (a turn undone and then redone is not said: the files are as the
    model left them); gone once taken."""
    path = _path(store, session)
    records = _read(path)
    if records:
        remove_quietly(path)
    lines = [r for r in records if isinstance(r, str)]   # lines an older undostore wrote
    moved = [r for r in net_records(records) if isinstance(r, dict)]
    for step in ("undo", "redo"):
        mine = [r for r in moved if r["step"] == step]
        if mine:
            files = sorted({f for r in mine for f in r["files"]})
            lines.append(step_note(step, [r["turns"][0][1] for r in mine], files))
    return lines


def net_records(records: list[object]) -> list[object]:
    """`records` (steps, each moving turns) as one record per turn that ended away from where
    the model last saw it: its step, label and the files its steps changed. A turn undone and
    then redone (or the other way) cancels out. Lines an older undostore wrote stay."""
    moved: dict[str, dict[str, Any]] = {}   # point id -> its net record
    kept: list[object] = []
    for record in records:
        if isinstance(record, str):
            kept.append(record)
            continue
        if not isinstance(record, dict) or record.get("step") not in ("undo", "redo"):
            continue
        files = [f for f in record.get("files", ()) if isinstance(f, str)]
        for turn in record.get("turns", ()):
            if not (isinstance(turn, list) and len(turn) == 2):
                continue
            ident, label = str(turn[0]), str(turn[1])
            before = moved.pop(ident, None)
            if before is not None and before["step"] != record["step"]:
                continue   # back where the model left it
            earlier = before["files"] if before is not None else []
            moved[ident] = {"step": record["step"], "turns": [[ident, label]],
                            "files": sorted({*earlier, *files})}
    return [*kept, *moved.values()]


def step_note(direction: str, labels: list[str], files: list[str]) -> str:
    """The line for an undo (`direction` "undo") or redo of the turns `labels`, in the order
    the steps moved them."""
    turns = ", ".join(repr(label) for label in labels[:3]) + (", ..." if len(labels) > 3 else "")
    what = "turn" if len(labels) == 1 else f"{len(labels)} turns"
    named = ", ".join(files[:MAX_FILES_NAMED]) + (
        f" and {len(files) - MAX_FILES_NAMED} more" if len(files) > MAX_FILES_NAMED else "")
    if direction == "undo":
        done = (f"the user took back the {what} {turns} (undostore /undo): these files are "
                f"as they were before it: {named or 'none'}")
    else:
        done = (f"the user applied the {what} {turns} again (undostore /redo): these files "
                f"are as it left them: {named or 'none'}")
    return f"{done}. Read them again before relying on what you remember of them."

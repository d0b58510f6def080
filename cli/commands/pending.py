"""Saying that a restore a crash left half-done is pending, in the commands that do not finish
it (`log`, `sessions`, `verify`): a note on stderr for people, and `pending` in the JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common import note
from ..results import with_pending

if TYPE_CHECKING:
    from undostore import Workspace


def mention_pending(workspace: Workspace, payload: dict[str, Any], as_json: bool) -> dict[str, Any]:
    """`payload` with `pending` (null or the pending restore); the note for people on stderr."""
    pending = workspace.pending_restore()
    if pending is not None and not as_json:
        note(f"undostore: {pending.describe()}")
    return with_pending(payload, pending)

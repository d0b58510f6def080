"""A host's tool call as undostore records it: what the host said of it (`ToolCall`) and, while
it runs, the files as it began (`OpenCall`). Plain records, kept in a turn's undo point
(journal.Point); what a finished call adds to its turn is history/attribution.py's."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

FILE = "file"     # a tool that names the files it writes (Edit, Write, apply_patch, ...)
SHELL = "shell"   # any other tool that may write: a shell, an MCP tool, one not known
KINDS = (FILE, SHELL)


class ToolCall(NamedTuple):
    """One tool call as its host reported it: the host's id for it, the tool's name, its kind,
    and for a file tool the files it names (relative to the root, `/`-separated)."""

    call_id: str
    tool: str
    kind: str
    paths: tuple[str, ...] = ()


class OpenCall(NamedTuple):
    """A call whose after event has not come yet: the snapshot of the files as it began."""

    call: ToolCall
    before: str
    started: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.call.call_id, "tool": self.call.tool, "kind": self.call.kind,
                "paths": list(self.call.paths), "before": self.before, "started": self.started}

    @classmethod
    def from_json(cls, doc: object) -> OpenCall:
        """ValueError when `doc` is not an open call undostore wrote."""
        if not isinstance(doc, dict):
            raise ValueError("open call is not an object")
        call_id, tool, kind = doc.get("id"), doc.get("tool"), doc.get("kind")
        paths, before, started = doc.get("paths"), doc.get("before"), doc.get("started")
        if not (isinstance(call_id, str) and isinstance(tool, str) and kind in KINDS
                and isinstance(paths, list) and all(isinstance(p, str) for p in paths)
                and isinstance(before, str) and len(before) == 40
                and isinstance(started, (int, float)) and math.isfinite(started)):
            raise ValueError("bad open call")
        return cls(ToolCall(call_id, tool, kind, tuple(paths)), before, float(started))

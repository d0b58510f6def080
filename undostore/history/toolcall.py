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
    label: str = ""   # what the call did, in the host's words (a shell's command)


class OpenCall(NamedTuple):
    """A call whose after event has not come yet: the snapshot of the files as it began."""

    call: ToolCall
    before: str
    started: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.call.call_id, "tool": self.call.tool, "kind": self.call.kind,
                "paths": list(self.call.paths), "label": self.call.label,
                "before": self.before, "started": self.started}

    @classmethod
    def from_json(cls, doc: object) -> OpenCall:
        """ValueError when `doc` is not an open call undostore wrote."""
        if not isinstance(doc, dict):
            raise ValueError("open call is not an object")
        call_id, tool, kind = doc.get("id"), doc.get("tool"), doc.get("kind")
        paths, before, started = doc.get("paths"), doc.get("before"), doc.get("started")
        label = doc.get("label", "")
        if not (isinstance(call_id, str) and isinstance(tool, str) and kind in KINDS
                and isinstance(label, str)
                and isinstance(paths, list) and all(isinstance(p, str) for p in paths)
                and isinstance(before, str) and len(before) == 40
                and isinstance(started, (int, float)) and math.isfinite(started)):
            raise ValueError("bad open call")
        return cls(ToolCall(call_id, tool, kind, tuple(paths), label), before, float(started))


# A call's files as a turn lists them: at most this many (a shell's `npm install` may write
# tens of thousands; the count says how many more).
SHOWN_FILES = 20


class CallNote(NamedTuple):
    """A finished call as `show` and `log --stat` list it: the tool, what it did, and the
    files it changed (the first `SHOWN_FILES`, and how many more); and the files as it began
    and as it left them (`before`, `after`: snapshot ids; None in a note written before they
    were kept), from which `undo --call N` takes back that call's change alone."""

    tool: str
    label: str
    files: tuple[str, ...]
    more: int = 0
    before: str | None = None
    after: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "label": self.label, "files": list(self.files),
                "more": self.more, "before": self.before, "after": self.after}

    @classmethod
    def of(cls, call: OpenCall, files: list[str], after: str) -> CallNote:
        return cls(call.call.tool, call.call.label, tuple(files[:SHOWN_FILES]),
                   max(0, len(files) - SHOWN_FILES), call.before, after)

    @classmethod
    def from_json(cls, doc: object) -> CallNote:
        if not isinstance(doc, dict):
            raise ValueError("call note is not an object")
        tool, label, files, more = (doc.get("tool"), doc.get("label"), doc.get("files"),
                                    doc.get("more", 0))
        before, after = doc.get("before"), doc.get("after")
        if not (isinstance(tool, str) and isinstance(label, str) and isinstance(files, list)
                and all(isinstance(f, str) for f in files) and isinstance(more, int)
                and all(sha is None or (isinstance(sha, str) and len(sha) == 40)
                        for sha in (before, after))):
            raise ValueError("bad call note")
        return cls(tool, label, tuple(files), more, before, after)

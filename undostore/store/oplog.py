"""The operation log: every snapshot, restore, undo, redo, drop and gc, with the ids that lead back.

One line per operation in `<store>/oplog`: 16 hex digits of xxh3-64 over the rest of the line, a
space, and the record as compact JSON (no raw newline). Appended with one `write` under the store
lock, so nothing is rewritten; a line whose checksum fails (a torn tail after a crash, a stray
edit) is skipped when read, and the next append starts on a fresh line. The log is the reflog
(history/reflog.py): past `MAX_BYTES` it becomes `oplog.1` (older parts move up one number) and a
new one starts; a part past the first is deleted only once its last op is older than
`KEEP_SECONDS`, so every op of the last day stays (at most `MAX_PARTS` parts).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import xxhash

from undostore.errors import UsageError
from undostore.fileio import fsync_dir

MAX_BYTES = 1 << 20
KEEP_SECONDS = 86400.0     # the contract's window: ids named within it stay restorable
MAX_PARTS = 32             # a bound on disk whatever the rate of ops (32 MiB)
_NAME = "oplog"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


class Op(NamedTuple):
    """One operation: when, what, in which session, the id it produced or restored, its label,
    and the safety snapshot taken before it changed files (the way back)."""

    time: float
    op: str
    session: str | None = None
    id: str | None = None
    label: str | None = None
    safety: str | None = None
    reason: str | None = None          # why, for an op that let ids go (evict: its setting)
    ids: tuple[str, ...] = ()          # further ids it names (drop: what the session listed)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"time": self.time, "op": self.op, "session": self.session,
                               "id": self.id, "label": self.label, "safety": self.safety}
        if self.reason is not None:
            doc["reason"] = self.reason
        if self.ids:
            doc["ids"] = list(self.ids)
        return doc

    def named_ids(self) -> list[str]:
        """Every snapshot id this op names."""
        return [i for i in (self.id, self.safety, *self.ids) if i]


MAX_LABEL_CHARS = 2000


def cut_label(label: str | None) -> str | None:
    """`label`, cut to `MAX_LABEL_CHARS` and marked so where it was longer: a label names a
    turn for people, and a 50 MB one would be stored whole in the journal and the ops log. Half
    a character (a lone surrogate: JavaScript's `slice` cuts emoji in two, a command line's
    undecodable bytes) becomes U+FFFD, so every place that shows the label can print it."""
    if label is None:
        return None
    label = whole_text(label)
    if len(label) <= MAX_LABEL_CHARS:
        return label
    mark = f"… (cut: {len(label):,} characters)"
    return label[:MAX_LABEL_CHARS - len(mark)] + mark   # within the limit: cut once


def whole_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (the text unchanged where it has none)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def log_path(store_path: str) -> str:
    return os.path.join(store_path, _NAME)


def _line(op: Op) -> bytes:
    body = json.dumps(op.to_json(), ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return b"%016x " % xxhash.xxh3_64_intdigest(body) + body + b"\n"


def append(store_path: str, op: Op, max_bytes: int = MAX_BYTES) -> None:
    """Add `op` at the end (the caller holds the store lock). Never raises for a log that cannot
    be written: the operation itself is done, and the log is a record of it, not a part of it."""
    path = log_path(store_path)
    try:
        _rotate_if_full(path, max_bytes)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0),
                     0o600)
        try:
            data = _line(op)
            size = os.fstat(fd).st_size
            if size and not _ends_with_newline(path, size):
                data = b"\n" + data  # a torn last line stays alone and is skipped when read
            os.write(fd, data)
            os.fsync(fd)   # the log is gc's reflog: an id it lists must outlive a power cut
            if not size:
                fsync_dir(os.path.dirname(path))   # a new log's name
        finally:
            os.close(fd)
    except OSError:
        pass


def _ends_with_newline(path: str, size: int) -> bool:
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"


def _rotate_if_full(path: str, max_bytes: int) -> None:
    try:
        if os.stat(path).st_size < max_bytes:
            return
    except FileNotFoundError:
        return
    parts = _parts(path)
    cutoff = time.time() - KEEP_SECONDS
    for number in range(len(parts), 0, -1):
        older = f"{path}.{number}"
        if number >= MAX_PARTS or (number > 1 and os.path.getmtime(older) < cutoff):
            os.unlink(older)     # its last op (its mtime) is past the window
        else:
            os.replace(older, f"{path}.{number + 1}")
    os.replace(path, path + ".1")


def _parts(path: str) -> list[str]:
    """The log's older parts, `oplog.1` (newest) upward, while they are numbered without a gap."""
    parts = []
    while os.path.exists(f"{path}.{len(parts) + 1}"):
        parts.append(f"{path}.{len(parts) + 1}")
    return parts


def _records(path: str) -> Iterator[Op]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return
    for line in data.split(b"\n"):
        op = _parse(line)
        if op is not None:
            yield op


def _parse(line: bytes) -> Op | None:
    if len(line) < 18 or line[16:17] != b" ":
        return None
    body = line[17:]
    try:
        if int(line[:16], 16) != xxhash.xxh3_64_intdigest(body):
            return None
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("op"), str):
        return None
    when = doc.get("time")
    if not isinstance(when, (int, float)) or isinstance(when, bool):
        return None
    text = {k: doc.get(k) if isinstance(doc.get(k), str) else None
            for k in ("session", "id", "label", "safety", "reason")}
    ids = doc.get("ids")
    named = tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else ()
    return Op(float(when), doc["op"], **text, ids=named)


def read(store_path: str, session: str | None = None, since: float | None = None) -> list[Op]:
    """The operations, newest first; only `session`'s, only those at or after `since`."""
    path = log_path(store_path)
    ops = [op for part in (*reversed(_parts(path)), path) for op in _records(part)]
    ops = [op for op in ops if (session is None or op.session == session)
           and (since is None or op.time >= since)]
    ops.sort(key=lambda op: op.time, reverse=True)
    return ops


def parse_duration(text: str) -> float:
    """Seconds in '90', '30s', '15m', '2h', '1d', '1w' (UsageError otherwise)."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(f"not a duration: {text!r} (examples: 30m, 2h, 1d)")
    return float(match.group(1)) * _UNIT_SECONDS[(match.group(2) or "s").lower()]


def since_cutoff(text: str | None, now: float | None = None) -> float | None:
    """The time `text` ago (None for no limit)."""
    if text is None or text == "":
        return None
    return (time.time() if now is None else now) - parse_duration(text)

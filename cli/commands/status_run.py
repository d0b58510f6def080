"""`undostore status`'s work, without click: the footer line a host redraws on every prompt.

`entry.main` sends a plain `status` call here (`--session`/`-s NAME`, `--json`, the global
options) without importing click or any command module; `status.py` is the click command
`--help` and completion see, running the same `run`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import NamedTuple

from ..plain import Options, json_text, stdin_is_terminal

STDIN_WAIT_SECONDS = 0.5   # a host writes its JSON at once; a silent open pipe is no host


class HostStatusLine(NamedTuple):
    """What a host's statusLine JSON on stdin says: its conversation and its folder."""

    session: str | None
    cwd: str | None


def read_host_status_line(wait: float = STDIN_WAIT_SECONDS) -> HostStatusLine:
    """The session and folder a host's statusLine JSON names (Claude Code sends `session_id`,
    `cwd`, `workspace.current_dir`), when stdin is not a terminal and holds one object. An
    empty, closed or silent stdin means none: it is read on a helper thread for at most `wait`
    seconds, so status never waits for input that does not come."""
    if sys.stdin is None or stdin_is_terminal():
        return HostStatusLine(None, None)
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(_read_all_stdin()), daemon=True)
    reader.start()
    reader.join(wait)
    try:
        doc = json.loads(box[0].decode("utf-8-sig")) if box and box[0].strip() else None
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return HostStatusLine(None, None)
    workspace = doc.get("workspace")
    folder = workspace.get("current_dir") if isinstance(workspace, dict) else None
    cwd = folder if isinstance(folder, str) and folder else doc.get("cwd")
    session = doc.get("session_id")
    if isinstance(session, str) and session:
        from undostore import session_name_for

        session = session_name_for(session)   # as the hook names the conversation's session
    return HostStatusLine(session if isinstance(session, str) and session else None,
                          cwd if isinstance(cwd, str) and cwd else None)


def _read_all_stdin(limit: int = 1 << 20) -> bytes:
    """stdin's bytes up to its end; the descriptor itself, not Python's buffered reader, whose
    lock a thread still blocked in it would hold at interpreter exit."""
    chunks: list[bytes] = []
    try:
        fd = sys.stdin.fileno()
        while sum(map(len, chunks)) < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except (OSError, ValueError, AttributeError):
        pass
    return b"".join(chunks)


def run(options: Options, session: str | None, as_json: bool) -> None:
    """Print the status line (or its JSON) for the root the options, or the host's statusLine
    JSON on stdin, name; its notes on stderr."""
    from undostore import status_at

    from ..door import root_for

    host = read_host_status_line()
    cwd = host.cwd if host.cwd is not None and os.path.isdir(host.cwd) else None
    status = status_at(root_for(options, cwd), options.named_store, session or host.session,
                       force=options.force,
                       host_session=session is None and host.session is not None)
    if status.chosen:
        print(f"undostore: session {status.session!r} (the one last acted on)", file=sys.stderr)
    for line in status.damage:
        print(f"undostore: warning: {line}", file=sys.stderr)
    if as_json:
        sys.stdout.write(json_text(status.to_json()) + "\n")
    else:
        sys.stdout.write(status.line() + "\n")

"""Who was writing when, across the sessions of one store: each tool call that may write (its
session, its kind, the files a file tool names, when it began and ended) and each of
undostore's own steps (undo, redo, restore, revert: the files it wrote), so that a shell call
of one conversation is not given what another conversation's file tool or a step wrote while
it ran, and a file that changed while shell calls of two conversations ran is known to be in
doubt (history/attribution.py).

Kept in the store's `cache/activity` (JSON, read and written under the store lock, by every
tool call's two events): the calls still running, and those that ended after the oldest
running call began (the only ones a running call can be weighed against) or within the last
`KEEP_SECONDS`. A call still open after `ABANDONED_SECONDS` is one whose end never came (its
host was killed mid-call and the conversation never went on): it is dropped, so that it
neither keeps every later span (the file would grow with each call, and each event read it
all) nor stands as a writer of its files for ever. A lost file forgets only that: each call is
then taken to have run alone.
"""

from __future__ import annotations

import json
import os
import time
from typing import NamedTuple

from undostore.fileio import read_small, write_small

FILE_NAME = "activity"
KEEP_SECONDS = 300.0
# No host runs one tool call this long (their time-outs: minutes); the session's journal still
# lists the call's start, so gc keeps those files all the same.
ABANDONED_SECONDS = 3600.0
STEP = "step"   # undostore's own step: its kind beside the tool kinds (history/toolcall.py)


class Span(NamedTuple):
    """One writer: a session's call (`session`, `call`), or a step (`session` None)."""

    session: str | None
    call: str
    kind: str
    paths: tuple[str, ...]
    start: float
    end: float | None = None   # None: still running
    before: str | None = None  # a call: the files as it began (a file tool: its own read)
    after: str | None = None   # ... and as it ended

    def overlaps(self, start: float, end: float) -> bool:
        return self.start <= end and (self.end is None or self.end >= start)


def _path(store_cache: str) -> str:
    return os.path.join(store_cache, FILE_NAME)


def load(cache_dir: str) -> list[Span]:
    raw = read_small(_path(cache_dir), 8 << 20)
    try:
        docs = json.loads(raw) if raw is not None else []
    except ValueError:
        return []
    spans = []
    for doc in docs if isinstance(docs, list) else []:
        try:
            spans.append(Span(doc["session"], doc["call"], doc["kind"], tuple(doc["paths"]),
                              float(doc["start"]), None if doc["end"] is None
                              else float(doc["end"]), doc.get("before"), doc.get("after")))
        except (KeyError, TypeError, ValueError):
            continue
    return spans


def _running(span: Span, now: float) -> bool:
    """Still open, and for no longer than a call runs (else its end never came)."""
    return span.end is None and now - span.start <= ABANDONED_SECONDS


def _save(cache_dir: str, spans: list[Span], now: float) -> None:
    keep_from = min([now - KEEP_SECONDS, *(s.start for s in spans if _running(s, now))])
    kept = [s for s in spans
            if _running(s, now) or (s.end is not None and s.end >= keep_from)]
    write_small(_path(cache_dir), json.dumps([s._asdict() for s in kept]).encode("utf-8"))


def begin(cache_dir: str, span: Span) -> None:
    """`span` began (a call, or a step whose paths are known at its start)."""
    spans = [s for s in load(cache_dir) if (s.session, s.call) != (span.session, span.call)]
    _save(cache_dir, [*spans, span], span.start)


def end(cache_dir: str, session: str | None, call: str, now: float | None = None,
        after: str | None = None) -> Span | None:
    """The span of `session`'s `call` ended, the files then at `after`; the span as it
    began, None when none was recorded."""
    now = time.time() if now is None else now
    spans = load(cache_dir)
    found = None
    for at, span in enumerate(spans):
        if (span.session, span.call) == (session, call) and span.end is None:
            found = span
            spans[at] = span._replace(end=now, after=after)
    _save(cache_dir, spans, now)
    return found


def others(cache_dir: str, session: str, call: str, start: float, end_: float) -> list[Span]:
    """The writers other than `session`'s call `call` that ran at some moment of
    [start, end_]."""
    return [s for s in load(cache_dir)
            if (s.session, s.call) != (session, call) and s.overlaps(start, end_)]

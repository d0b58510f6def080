"""Which hook events are one event delivered twice (Codex runs a project's and the user-wide hooks
at once; a host may retry): the key an event is known by, and how long a duplicate may arrive.

An event is known by the id its host gives it where there is one (Codex's `turn_id`, Claude
Code's `prompt_id`, Cursor's `generation_id`, ...: `Host.event_id`) with its prompt; a
duplicate of it is one whenever it comes. A host that sends no id (the OpenCode and Pi plugins)
has its prompt events known by session, event and prompt, and a duplicate must arrive (its
hook start) before the first's answer or within `SAME_EVENT_SECONDS` after it: a user who
types `/undo` again does so once the first answer showed, and means it again. The answers
themselves are kept in the store (undostore/store/once.py).
"""

from __future__ import annotations

import hashlib
import json

from undostore import OnceKey

from .records import PROMPT, HostEvent

SAME_EVENT_SECONDS = 0.25   # no id: the same prompt arriving this soon after the first's answer
#                             (or before it) is it; one typed again comes after the answer shows
ID_SECONDS = 3600.0         # an id: a retry within the hour is the same event


def event_key(event: HostEvent) -> OnceKey | None:
    """What `event` is known by; None: an after-turn event with no id, which is never taken
    for a duplicate (ending a turn twice records nothing more, and the next turn's end looks
    the same)."""
    prompt = json.dumps(event.prompt, sort_keys=True, default=str)
    digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()
    host, name, session = event.host.name, event.name, event.session
    if event.event_id is not None:
        return OnceKey(_join(host, name, session, "id", event.event_id, digest), ID_SECONDS)
    if event.kind != PROMPT:
        return None
    return OnceKey(_join(host, name, session, "prompt", digest), SAME_EVENT_SECONDS)


def _join(*parts: object) -> str:
    return json.dumps([str(p) for p in parts])

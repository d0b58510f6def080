"""How `undostore init HOST` writes each host's config files (setup.py lists them per host):
where each lives (the project's, or the user's with `--global`), and how undostore's hooks are
merged into it.

A config is changed by a pure function from the file's text (None: no file) to the new text, so
`--dry-run` and the real run compute the same thing and a second run changes nothing. Every other
key and every other hook is kept; undostore's own entries (a command that runs `undostore hook`)
are replaced, not doubled. A file that cannot be parsed is refused, naming it (ConfigError).
Sources of the file formats: see records.py; OpenCode's plugin folder and its `chat.message`
and `session.idle` hooks: opencode.ai/docs/plugins; Pi's `.pi/extensions/*.ts` and its `input`,
`before_agent_start` and `agent_end` events: badlogic/pi-mono
packages/coding-agent/docs/extensions.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .records import HOSTS

MARK = "undostore hook"  # what makes a hook entry undostore's own


class ConfigError(Exception):
    """A config file undostore will not change (the message names it and why)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = f"{message}; nothing was written"
        super().__init__(f"{path}: {self.message}")


@dataclass(frozen=True)
class ConfigFile:
    """One file `init` writes: where (relative to the project root, or to the home folder with
    --global) and how its new text is made from the old."""

    project: str | None          # path under the root (None: user-wide only)
    user: str                    # path under the home folder (with --global)
    update: Callable[[str | None, str], str]   # (old text or None, path) -> new text
    # What of the user's own the new text keeps in undostore's place, for `init` to say
    # (None: nothing): new text -> one line, or None.
    kept: Callable[[str], str | None] | None = None


def read_config(path: str) -> str | None:
    """A host's config file as text (None: there is none); ConfigError when it is not UTF-8."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise ConfigError(path, f"it is not UTF-8 text ({err})") from None


def command(host: str, *extra: str) -> str:
    return " ".join(["undostore", "hook", "--host", host, *extra])


# --- JSON configs whose "hooks" object maps event names to lists of entries -------------------


def _load_json(text: str | None, path: str) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ConfigError(path, f"cannot parse it as JSON ({err}); fix or move it") from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "it is not a JSON object")
    return doc


def _is_ours(entry: Any) -> bool:
    return MARK in json.dumps(entry)


def merge_hooks(doc: dict[str, Any], path: str, entries: dict[str, Any]) -> dict[str, Any]:
    """`doc` with each event's list holding undostore's entry once (replacing an older one)."""
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(path, '"hooks" is not an object')
    for event, entry in entries.items():
        current = hooks.get(event, [])
        if not isinstance(current, list):
            raise ConfigError(path, f'"hooks.{event}" is not a list')
        ours = [i for i, e in enumerate(current) if _is_ours(e)]
        if ours:  # the first of undostore's entries is replaced in place, any others dropped
            current = [e for i, e in enumerate(current) if i not in ours[1:]]
            current[ours[0]] = entry
        else:
            current = [*current, entry]
        hooks[event] = current
    return doc


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def hooks_json(entries: Callable[[], dict[str, Any]], top: dict[str, Any] | None = None
               ) -> Callable[[str | None, str], str]:
    def update(text: str | None, path: str) -> str:
        doc = _load_json(text, path)
        for key, value in (top or {}).items():
            doc.setdefault(key, value)
        return _dump(merge_hooks(doc, path, entries()))
    return update


def grouped(host: str, *events: str, **fields: Any) -> dict[str, Any]:
    """Claude-Code-style entries: {"hooks": [{"type": "command", "command": ...}]} per event."""
    return {e: {"hooks": [{"type": "command", "command": command(host), **fields}]}
            for e in events}


STATUS_REFRESH_SECONDS = 5
"""How often Claude Code runs the footer's `undostore status` besides on each assistant message:
a prompt the hook blocks (`/undo`, `/redo`) adds no assistant message, nor does a step taken
in a terminal or another conversation, and the footer would go on showing the counts from
before until the next reply."""


def claude_settings(text: str | None, path: str) -> str:
    """Claude Code's settings with undostore's hooks and its footer (unless the user has a
    footer of their own; a refresh interval the user set on ours is kept)."""
    doc = _load_json(text, path)
    merge_hooks(doc, path, grouped("claude-code", *HOSTS["claude-code"].hook_events))
    line = doc.get("statusLine")
    if line is None or (isinstance(line, dict) and "undostore status" in str(line.get("command"))):
        ours = line or {}
        doc["statusLine"] = {"type": "command", "command": "undostore status",
                             "refreshInterval": ours.get("refreshInterval",
                                                         STATUS_REFRESH_SECONDS)}
    return _dump(doc)


def own_footer(text: str) -> str | None:
    """What `init` says when Claude Code's settings keep a footer of the user's own (so the
    undo counts do not show in it); None when the footer is undostore's."""
    try:
        line = json.loads(text).get("statusLine")
    except (ValueError, AttributeError):
        return None
    if not isinstance(line, dict) or "undostore status" in str(line.get("command")):
        return None
    return (f"kept your statusLine ({line.get('command')!r}): Claude Code's footer shows no "
            "undo:N redo:M; `undostore status` prints that line from the same JSON on stdin, "
            "for your script to add")


def copilot_entries() -> dict[str, Any]:
    def entry(event: str) -> dict[str, Any]:
        run = command("copilot", event)
        return {"type": "command", "bash": run, "powershell": run, "timeoutSec": 30}
    return {e: entry(e) for e in HOSTS["copilot"].hook_events}


# --- Codex's notify: one top-level TOML key -----------------------------------------------------

NOTIFY = ["undostore", "hook", "--host", "codex-notify"]
_NOTIFY_LINE = re.compile(r"^notify\s*=.*$", re.MULTILINE)


def codex_notify(text: str | None, path: str) -> str:
    """`notify = [...]` set to undostore's, before the first table; another program's notify is
    refused (Codex runs only one)."""
    text = text or ""
    current = _toml_notify(text, path)
    if current == NOTIFY:
        return text
    if current is not None:
        raise ConfigError(path, f"notify already runs {current!r} (Codex runs one notify "
                                "program); remove it, or wire undostore with `init codex`")
    line = "notify = " + json.dumps(NOTIFY)
    table = re.search(r"^\s*\[", text, re.MULTILINE)
    at = table.start() if table else len(text)
    head = text[:at]
    if head and not head.endswith("\n"):
        head += "\n"
    return head + line + "\n" + ("\n" if table else "") + text[at:]


def _toml_notify(text: str, path: str) -> Any:
    """The file's top-level `notify` (None: none); tomllib parses it where Python has it (3.11+),
    else the key's line is read as JSON (a TOML array of strings is one)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        head = re.split(r"^\s*\[", text, maxsplit=1, flags=re.MULTILINE)[0]
        match = _NOTIFY_LINE.search(head)
        if match is None:
            return None
        try:
            return json.loads(match.group(0).split("=", 1)[1])
        except ValueError:
            return match.group(0)
    try:
        return tomllib.loads(text).get("notify")
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, f"cannot parse it as TOML ({err}); fix or move it") from None


# --- whole files undostore owns -------------------------------------------------------------------


def owned(body: str) -> Callable[[str | None, str], str]:
    """A file that is all undostore's (a plugin, a command file): always `body`."""
    def update(text: str | None, path: str) -> str:
        return body
    return update


# A host's own folder under the home folder, and the variable that moves it elsewhere.
_HOME_VARIABLES = ((".codex/", "CODEX_HOME"), (".copilot/", "COPILOT_HOME"))


def target(spec: ConfigFile, root: str, user_wide: bool) -> str:
    """The file's full path: under the home folder with --global (or for a user-wide file)."""
    if user_wide or spec.project is None:
        base = next((os.environ.get(variable) for folder, variable in _HOME_VARIABLES
                     if spec.user.startswith(folder)), None)
        if base:
            return os.path.join(base, spec.user.split("/", 1)[1])
        return os.path.join(os.path.expanduser("~"), *spec.user.split("/"))
    return os.path.join(root, *spec.project.split("/"))

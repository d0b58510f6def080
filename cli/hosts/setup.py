"""What each host needs set up, one `HostSetup` record per host: the config files `undostore
init HOST` writes (init.py knows how each is merged) and the host's own gate on hooks that
`undostore doctor` reads (doctor.py). Adding a host is adding its event record (records.py) and
its record here."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import doctor
from .files import (
    CLAUDE_REDO,
    CLAUDE_UNDO,
    GEMINI_REDO,
    GEMINI_UNDO,
    OPENCODE_PLUGIN,
    PI_EXTENSION,
)
from .init import (
    ConfigFile,
    claude_settings,
    codex_notify,
    command,
    copilot_entries,
    grouped,
    hooks_json,
    own_footer,
    owned,
)
from .records import HOSTS

# The events whose output Windsurf shows the user (the `/undo` line): not its tool events.
WINDSURF_SHOWN = HOSTS["windsurf"].prompt_events | HOSTS["windsurf"].after_events


class HostSetup(NamedTuple):
    """A host's config files, in the order `init` writes them, and its trust gate: where the
    host runs no hook until the user trusts the folder (None: it has none undostore can read),
    the check of it for a root."""

    files: list[ConfigFile]
    trust: Callable[[str], doctor.Check] | None = None


SETUP: dict[str, HostSetup] = {
    "claude-code": HostSetup([
        ConfigFile(".claude/settings.json", ".claude/settings.json", claude_settings,
                   kept=own_footer),
        ConfigFile(".claude/commands/undo.md", ".claude/commands/undo.md", owned(CLAUDE_UNDO)),
        ConfigFile(".claude/commands/redo.md", ".claude/commands/redo.md", owned(CLAUDE_REDO)),
    ]),
    "codex": HostSetup([ConfigFile(".codex/hooks.json", ".codex/hooks.json", hooks_json(
        lambda: grouped("codex", *HOSTS["codex"].hook_events)))],
        trust=doctor.codex_trust),
    "codex-notify": HostSetup([ConfigFile(None, ".codex/config.toml", codex_notify)]),
    "cursor": HostSetup([ConfigFile(".cursor/hooks.json", ".cursor/hooks.json", hooks_json(
        lambda: {e: {"command": command("cursor")} for e in HOSTS["cursor"].hook_events},
        top={"version": 1}))]),
    "gemini": HostSetup([
        ConfigFile(".gemini/settings.json", ".gemini/settings.json", hooks_json(
            lambda: grouped("gemini", *HOSTS["gemini"].hook_events, name="undostore"))),
        ConfigFile(".gemini/commands/undo.toml", ".gemini/commands/undo.toml",
                   owned(GEMINI_UNDO)),
        ConfigFile(".gemini/commands/redo.toml", ".gemini/commands/redo.toml",
                   owned(GEMINI_REDO)),
    ], trust=doctor.gemini_trust),
    "copilot": HostSetup([ConfigFile(".github/hooks/undostore.json",
                                     ".copilot/hooks/undostore.json",
                                     hooks_json(copilot_entries, top={"version": 1}))],
                         trust=doctor.copilot_trust),
    "windsurf": HostSetup([ConfigFile(
        ".windsurf/hooks.json", ".codeium/windsurf/hooks.json", hooks_json(
            lambda: {e: {"command": command("windsurf"), "show_output": e in WINDSURF_SHOWN}
                     for e in HOSTS["windsurf"].hook_events}))]),
    "opencode": HostSetup([ConfigFile(".opencode/plugin/undostore.js",
                                      ".config/opencode/plugin/undostore.js",
                                      owned(OPENCODE_PLUGIN))]),
    "pi": HostSetup([ConfigFile(".pi/extensions/undostore.ts",
                                ".pi/agent/extensions/undostore.ts", owned(PI_EXTENSION))]),
}

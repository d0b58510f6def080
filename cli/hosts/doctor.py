"""What `undostore doctor` checks for a host in a folder, each a `Check` with the step still
needed: undostore on the PATH, the host's config in place (as `init` writes it), the host's own
trust state where it can be read (Codex: the project's trust level; Gemini: trusted folders),
and when the host's hooks last fired here. Nothing here writes anything.

Sources: Codex `[projects."<path>"] trust_level = "trusted"` in `$CODEX_HOME/config.toml`
(developers.openai.com/codex/config-reference), and each hook's review in its `/hooks` screen,
kept in the same file as `[hooks.state."<hooks.json>:<event>:<i>:<j>"] trusted_hash` (seen in
Codex 0.171: its app-server's `hooks/list` names each hook's key, hash and trust status; the
hash itself is Codex's, so a hooks.json edited since is not caught here); Gemini CLI's
`~/.gemini/trustedFolders.json` (path -> TRUST_FOLDER, TRUST_PARENT or DO_NOT_TRUST) and
`GEMINI_CLI_TRUST_WORKSPACE` (google-gemini/gemini-cli docs/cli/trusted-folders.md).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import NamedTuple

from undostore.home import run_folder

from .. import resident_client as resident
from .init import ConfigError, ConfigFile, read_config, target


class Check(NamedTuple):
    name: str        # "HOST: what"
    ok: bool
    detail: str      # what was found, and when not ok, the step still needed

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def _read(path: str) -> str | None:
    """A host file's text; None when missing or unreadable (a check then says what is missing)."""
    try:
        return read_config(path)
    except (OSError, ConfigError):
        return None


def wired(files: list[ConfigFile], root: str) -> str | None:
    """Where a host is wired for `root`: the project's config, else the user-wide one (each of
    the host's `files` as `init` would write it); None: neither."""
    for user_wide in (False, True):
        paths = []
        for spec in files:
            path = target(spec, root, user_wide)
            text = _read(path)
            try:
                if text is None or spec.update(text, path) != text:
                    break
            except ConfigError:   # a file init would refuse: not wired as init writes it
                break
            paths.append(path)
        else:
            return ", ".join(paths)
    return None


def on_path() -> Check:
    found = shutil.which("undostore")
    if found is None:
        from ..install_hint import tool_install

        return Check("path", False, "`undostore` is not on the PATH hosts run it from: install "
                     f"it with `{tool_install()}` (or `uv tool install`), then open a new "
                     "terminal")
    return Check("path", True, f"undostore is {found}" + _old_launcher(found))


def _old_launcher(script: str) -> str:
    """A note when the `undostore` script is one an older pip wrote (before 24.1): it imports
    `re` to tidy its own name, ~5 ms more on every hook call (a tenth of one); "" otherwise."""
    try:
        with open(script, "rb") as f:
            head = f.read(512)
    except OSError:
        return ""
    if not head.startswith(b"#!") or b"\nimport re\n" not in head:
        return ""
    return ("; its launcher, written by a pip older than 24.1, imports `re` on every hook call "
            "(~5 ms): reinstalling it with a newer pip (`pipx reinstall undostore`, `uv tool "
            "install --reinstall`, or `pip install -U pip` first) writes one that does not")


def config(host: str, files: list[ConfigFile], root: str) -> Check:
    where = wired(files, root)
    if where is None:
        return Check(f"{host}: config", False, f"not wired here as this version's init "
                     f"writes it: run `undostore init {host}`")
    return Check(f"{host}: config", True, f"wired in {where}")


# What a turn is where undostore hears of no tool call (history/attribution.py).
_WINDOW = ("a turn is everything that changed from its prompt to its end: an `/undo` takes back "
           "your own edits and other conversations' work made meanwhile too")


def tool_calls(host: str, files: list[ConfigFile], root: str) -> Check:
    """Whether the host tells undostore of each tool call (a turn is then its calls' changes),
    and what it means for the user where it does not: the host sends none, or the config an
    older `init` wrote does not ask for them."""
    from .records import HOSTS

    name = f"{host}: tool calls"
    events = HOSTS[host].tools
    if events is None:
        return Check(name, True, f"{host} tells a hook of no tool call, so {_WINDOW}; leave "
                     "your edits for after the turn, or check `undostore show` before `/undo`")
    texts = [_read(target(spec, root, user_wide)) or "" for user_wide in (False, True)
             for spec in files]
    if any(event in text for text in texts for event in events.before):
        return Check(name, True, "each tool call is reported: a turn is what its calls changed, "
                     "and `/undo` keeps your edits and other conversations' work")
    return Check(name, False, f"the config here asks {host} for no tool call (an older `init` "
                 f"wrote it), so {_WINDOW}: run `undostore init {host}` again")


def codex_trust(root: str) -> Check:
    """Codex runs a project's hooks once the project is trusted and each hook reviewed."""
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    settings = _toml(os.path.join(home, "config.toml"))
    level = None
    projects = settings.get("projects", {})
    for path in _self_and_parents(root):
        entry = projects.get(path) if isinstance(projects, dict) else None
        if isinstance(entry, dict) and "trust_level" in entry:
            level = entry["trust_level"]
            break
    unreviewed = _codex_unreviewed(root, home, settings)
    review = (f"review undostore's hooks once in Codex's /hooks screen here (not reviewed: "
              f"{', '.join(unreviewed)})" if unreviewed else "")
    if level != "trusted":
        return Check("codex: trust", False, f"Codex runs no project hook here until the project "
                     f"is trusted (found: {level or 'no entry'}): trust it when Codex asks"
                     + (f", and {review}" if review else ""))
    if unreviewed:
        return Check("codex: trust", False, f"the project is trusted, but Codex runs no hook "
                     f"until it was reviewed: {review}")
    return Check("codex: trust", True, "the project is trusted and undostore's hooks were "
                 "reviewed (Codex asks again once its hooks.json changes)")


def _toml(path: str) -> dict:
    """A TOML file's tables ({} when missing or unreadable)."""
    text = _read(path)
    if text is None:
        return {}
    try:
        import tomllib

        return tomllib.loads(text)
    except (ImportError, ValueError):
        return {}


def _codex_unreviewed(root: str, home: str, settings: dict) -> list[str]:
    """undostore's Codex hooks (the project's `.codex/hooks.json`, else the user's) that have
    no review recorded: Codex keeps one as `[hooks.state."<file>:<event>:<i>:<j>"]
    trusted_hash` in the user's config.toml (its `/hooks` screen writes it)."""
    hooks = settings.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    path = os.path.join(root, ".codex", "hooks.json")
    if not os.path.exists(path):
        path = os.path.join(home, "hooks.json")
    reviewed = set()
    for key, value in (state.items() if isinstance(state, dict) else ()):
        parts = key.rsplit(":", 3)   # <file>:<event>:<group>:<handler>
        if (len(parts) == 4 and parts[0] in (path, os.path.realpath(path))
                and isinstance(value, dict) and value.get("trusted_hash")):
            reviewed.add(parts[1])
    return [f"{path} {event}" for event in ("user_prompt_submit", "stop", "pre_tool_use",
                                            "post_tool_use")
            if event not in reviewed]


def gemini_trust(root: str) -> Check:
    """Gemini CLI registers hooks only in a folder it trusts."""
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true":
        return Check("gemini: trust", True, "GEMINI_CLI_TRUST_WORKSPACE=true trusts it")
    path = os.path.join(os.path.expanduser("~"), ".gemini", "trustedFolders.json")
    try:
        rules = json.loads(_read(path) or "{}")
    except ValueError:
        rules = {}
    verdict = _gemini_verdict(rules, os.path.normpath(root)) if isinstance(rules, dict) else None
    if verdict:
        return Check("gemini: trust", True, f"the folder is trusted ({path})")
    return Check("gemini: trust", False, "Gemini CLI registers no hook in a folder it does not "
                 f"trust: trust it when Gemini asks, or add \"{root}\": \"TRUST_FOLDER\" to "
                 f"{path}")


def copilot_trust(root: str) -> Check:
    """Copilot CLI loads a folder's hooks (`.github/hooks/`) only once the user trusted the
    folder (its trust prompt saves it in `trustedFolders`; a trusted folder covers those below
    it); a user-wide hook (`init copilot --global`) runs anywhere."""
    home = os.environ.get("COPILOT_HOME") or os.path.join(os.path.expanduser("~"), ".copilot")
    path = os.path.join(home, "config.json")
    text = "\n".join(line for line in (_read(path) or "").splitlines()
                      if not line.lstrip().startswith("//"))   # its header says it is managed
    try:
        folders = json.loads(text or "{}").get("trustedFolders")
    except (ValueError, AttributeError):
        folders = None
    trusted = {os.path.normpath(f) for f in folders if isinstance(f, str)} if isinstance(
        folders, list) else set()
    if trusted.intersection(_self_and_parents(root)):
        return Check("copilot: trust", True, f"the folder is trusted ({path})")
    user_wide = os.path.join(home, "hooks", "undostore.json")
    if os.path.isfile(user_wide):
        return Check("copilot: trust", True, f"undostore's hooks are user-wide ({user_wide}): "
                     "Copilot runs them in every folder")
    return Check("copilot: trust", False, "Copilot CLI loads no hook of a folder it does not "
                 f"trust: trust it when Copilot asks (it saves it in {path}), or wire undostore "
                 "user-wide with `undostore init copilot --global`")


def _gemini_verdict(rules: dict[str, object], root: str) -> bool | None:
    """The most specific rule covering `root`: TRUST_FOLDER and DO_NOT_TRUST cover their folder
    and what is below, TRUST_PARENT its folder's parent and what is below."""
    best: tuple[int, bool] | None = None
    for folder, rule in rules.items():
        folder = os.path.normpath(folder)
        if rule == "TRUST_PARENT":
            folder = os.path.dirname(folder)
        elif rule not in ("TRUST_FOLDER", "DO_NOT_TRUST"):
            continue
        covers = root == folder or root.startswith(folder.rstrip(os.sep) + os.sep)
        if covers and (best is None or len(folder) > best[0]):
            best = (len(folder), rule != "DO_NOT_TRUST")
    return None if best is None else best[1]


def _self_and_parents(root: str) -> list[str]:
    out, path = [], os.path.normpath(root)
    while True:
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            return out
        path = parent


def files(over_limit: int | None) -> Check:
    """Whether the last snapshot here was refused for holding too many files."""
    if over_limit is None:
        return Check("files", True, "within UNDOSTORE_MAX_FILES")
    return Check("files", False, f"the last snapshot found more than {over_limit:,} files and "
                 "recorded nothing: raise UNDOSTORE_MAX_FILES, or leave generated folders out "
                 "with .gitignore or .undostoreignore")


def resident_process() -> Check:
    """Whether hook calls go through the resident process (cli/resident_client.py), and
    whether one serves now."""
    name = "resident process"
    if not resident.wanted():
        return Check(name, True, "off (UNDOSTORE_RESIDENT=off): each hook call starts Python "
                                 "and imports what a snapshot needs")
    if not resident.available():
        return Check(name, True, "not on this system (it needs Linux or macOS): each hook call "
                                 "runs in its own process")
    why = resident.blocked()
    if why is not None:
        return Check(name, False, f"not used: {why}; each hook call runs in its own process "
                                  "and says so on stderr")
    try:
        with open(os.path.join(run_folder(), resident.STATE_NAME),
                  encoding="utf-8") as f:
            state = json.load(f)
        pid, served, ended = int(state["pid"]), int(state["served"]), bool(state["ended"])
    except (OSError, ValueError, KeyError, TypeError):
        return Check(name, True, "none runs now: the next hook call starts one")
    if ended or not _resident_at(pid):
        return Check(name, True, f"none runs now (the last one ran {served} call(s)): the next "
                                 "hook call starts one")
    return Check(name, True, f"serving hook and status calls (pid {pid}, {served} so far)")


def _resident_at(pid: int) -> bool:
    """Whether process `pid` is a resident process: on Linux its command line, read from
    /proc, so that one killed without a word, its pid taken since by another program, does not
    read as serving; elsewhere (macOS) whether the pid is alive (its state file says when it
    left)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{resident.SERVE_MODULE}\0".encode() in f.read()
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return False
    except OSError:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return False   # another user's process by now
    except OSError:
        return False
    return True


def fired(host: str, seen: dict[str, float], now: float | None = None) -> Check:
    """When `host`'s hooks last ran for this folder's store (`seen`: host -> time)."""
    when = seen.get(host)
    if when is None:
        return Check(f"{host}: hooks fired", False, f"{host} has not run undostore's hook here "
                     f"yet: send a prompt in {host} in this folder; if it still says so, the "
                     f"host is not calling it: `undostore init {host}` writes its hooks again, "
                     "and the host must trust this folder and its hooks")
    age = max(0.0, (time.time() if now is None else now) - when)
    return Check(f"{host}: hooks fired", True, f"last {_ago(age)} ago")


def _ago(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"

"""A command line read once, without click: the global options before the command's name, the
command, and its arguments. The lean entry (entry.py) reads it to send a plain `hook` or
`status` call past click (and to the resident process); click's `main` reads it for what it
must know before click parses (the command, `--json`, whether it runs unattended). A slotted
class, not a NamedTuple: a call sent to the resident process imports neither typing nor more.
"""

from __future__ import annotations

# The global options that take a value: `--root DIR`, `--store DIR` (also `--root=DIR`).
GLOBAL_WITH_VALUE = ("--root", "--store")

# What hosts and clients run unattended: a bad setting is said and the default used (never a
# hook that records nothing); any command a person types refuses it first (exit 2).
UNATTENDED = ("hook", "mcp", "status")

# Each command that can skip click and its own options that take a value (to the value's name).
_LEAN = {"hook": {"--host": "host"},
         "status": {"--session": "session", "-s": "session"}}


class Invocation:
    """`args` (the command line after the program's name) as read once."""

    __slots__ = ("args", "root", "store", "force", "as_json", "command", "at", "plain_globals")

    def __init__(self, args: list[str]) -> None:
        self.args = list(args)
        self.root: str | None = None
        self.store: str | None = None
        self.force = False
        self.plain_globals = True   # only the global options above before the command
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            name, eq, value = args[i].partition("=")
            if name in GLOBAL_WITH_VALUE:
                if not eq:
                    if i + 1 >= len(args):
                        self.plain_globals = False   # click says the value is missing
                        break
                    i += 1
                    value = args[i]
                if name == "--root":
                    self.root = value or None
                else:
                    self.store = value or None
            elif args[i] == "--force":
                self.force = True
            elif args[i] != "--json":
                self.plain_globals = False   # --help, --version, an unknown option
            i += 1
        self.at = i   # the command's index (len(args): none)
        self.command = args[i] if i < len(args) and not args[i].startswith("-") else None
        before_dashes = args[: args.index("--")] if "--" in args else args
        self.as_json = "--json" in before_dashes

    @property
    def unattended(self) -> bool:
        """Run by a host or client, not typed by a person (UNATTENDED)."""
        return self.command in UNATTENDED

    def for_click(self) -> list[str]:
        """The arguments as click must get them: a `--json` given before the command's name
        moves after it (the contract: before or after)."""
        out = [a for a in self.args[: self.at] if a != "--json"]
        rest = self.args[self.at:]
        if len(out) == self.at:
            return self.args
        if self.command is not None:
            return [*out, rest[0], "--json", *rest[1:]]
        return [*out, *rest, "--json"]   # no command: let click say so

    def lean(self) -> LeanCall | None:
        """This command line as a plain `hook` or `status` call, or None for anything else
        (another command, `--help`, an option only click knows): click then parses it."""
        if not self.plain_globals or self.command not in _LEAN:
            return None
        own = _LEAN[self.command]
        values: dict[str, str] = {}
        rest: list[str] = []
        tail = self.args[self.at + 1:]
        as_json = self.as_json
        j = 0
        while j < len(tail):
            arg = tail[j]
            name, eq, value = arg.partition("=")
            if name in own and not (eq and not name.startswith("--")):   # click: no `-s=NAME`
                if not eq:
                    if j + 1 >= len(tail):
                        return None
                    value = tail[j + 1]
                    j += 1
                values[own[name]] = value
            elif arg == "--json":
                as_json = True
            elif arg in ("-h", "--help", "--") or self.command != "hook":
                return None
            else:
                rest.append(arg)   # the event name or JSON (hosts/hook.py refuses other options)
            j += 1
        return LeanCall(self, as_json, values, rest)


class LeanCall:
    """A plain `hook` or `status` call: its invocation, and the command's own options."""

    __slots__ = ("invocation", "command", "as_json", "values", "args")

    def __init__(self, invocation: Invocation, as_json: bool, values: dict[str, str],
                 args: list[str]) -> None:
        self.invocation = invocation
        self.command = invocation.command
        self.as_json = as_json
        self.values = values   # the command's own options: host, session
        self.args = args       # hook: the event name or JSON

"""The `undostore` command's entry point. The two commands a host runs on every prompt go
straight to their click-free modules, without importing click or any other command: `hook`
(hook_run.py) and `status`, the footer (status_run.py). Everything else (and their `--help`, or
any option only click knows) goes to `main`, the click command line."""

from __future__ import annotations

import sys

from .options import GLOBAL_WITH_VALUE

# Each lean command and its own options that take a value (to the name of that value).
_LEAN = {"hook": {"--host": "host"},
         "status": {"--session": "session", "-s": "session"}}


class PlainCall:
    """A command line that is a plain `hook` or `status` call. A slotted class, not a
    NamedTuple: a call sent to the resident process imports neither typing nor plain.py."""

    __slots__ = ("command", "root", "store", "force", "as_json", "values", "args")

    def __init__(self, command: str, root: str | None, store: str | None, force: bool,
                 as_json: bool, values: dict[str, str], args: list[str]) -> None:
        self.command = command
        self.root, self.store, self.force = root, store, force   # the global options
        self.as_json = as_json
        self.values = values   # the command's own options: host, session
        self.args = args       # hook: the event name or JSON


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    call = plain_call(args)
    if call is None:
        from .main import main as with_click

        with_click(args)
        return
    from . import resident

    if resident.wanted():
        # Only the hook starts a resident process: `status` reads, and makes nothing (a footer
        # in a folder nothing protects would otherwise start one, and its run/ folder).
        code = resident.run_through(args, may_start=call.command == "hook")
        if code is not None:
            sys.exit(code)
    _run(call)


def plain_call(args: list[str]) -> PlainCall | None:
    """`args` as a plain `hook` or `status` call, or None for anything else (another command,
    `--help`, an option only click knows): click then parses it, as it always did."""
    found: dict[str, str] = {}
    force = as_json = False
    i = 0
    while i < len(args) and args[i] not in _LEAN:
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in GLOBAL_WITH_VALUE:
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            found[name] = value
        elif arg == "--force":
            force = True
        elif arg == "--json":
            as_json = True
        else:
            return None
        i += 1
    if i >= len(args):
        return None
    command = args[i]
    own = _LEAN[command]
    values: dict[str, str] = {}
    rest: list[str] = []
    tail = args[i + 1:]
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
        elif arg in ("-h", "--help", "--") or command != "hook":
            return None
        else:
            rest.append(arg)   # the event name or JSON (hook_run refuses other options)
        j += 1
    return PlainCall(command, found.get("--root") or None, found.get("--store") or None, force,
                     as_json, values, rest)


def _run(call: PlainCall) -> None:
    """As `main` runs a command: signals as a cancel request, bad settings said once and their
    defaults used (both run unattended), the library's errors mapped to their exit codes, no
    final collection."""
    import gc
    import warnings

    from . import signals
    from .plain import Options, fail, fail_with, one_line_warning, unattended_settings

    warnings.showwarning = one_line_warning
    try:
        with signals.cancel_on_signals(), unattended_settings():
            options = Options(call.root, call.store, call.force)
            from undostore import settings

            settings.value("UNDOSTORE_RESIDENT")   # a bad value is said (`main` read "on")
            if call.command == "hook":
                from .hook_run import run

                run(options, call.values.get("host"), call.args)   # exits
            from .status_run import run as status

            try:
                status(options, call.values.get("session"), call.as_json)
            except Exception as err:  # noqa: BLE001 (fail_with re-raises what it does not map)
                fail_with(call.as_json, err)
            except KeyboardInterrupt:
                print("undostore: interrupted; nothing was left half-done", file=sys.stderr)
                fail(call.as_json, 130, "Interrupted", "interrupted; nothing was left half-done")
        sys.exit(0)
    finally:
        gc.freeze()

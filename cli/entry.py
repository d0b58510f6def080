"""The `undostore` command's entry point. `undostore hook ...`, which agent hosts run on every
prompt, goes straight to `hook_run` without importing click or any other command; everything
else (and `hook --help`) goes to `main`, the click command line."""

from __future__ import annotations

import sys
from typing import NamedTuple

from .plain import Options


class HookCall(NamedTuple):
    """A command line that is a plain `hook` call: the global options, `--host`, the rest."""

    options: Options
    host: str | None
    args: list[str]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    call = hook_call(args)
    if call is None:
        from .main import main as with_click

        with_click(args)
        return
    _run_hook(call)


def hook_call(args: list[str]) -> HookCall | None:
    """`args` as a `hook` call, or None for anything else (another command, `--help`, an
    option only click knows): click then parses it, as it always did."""
    root = store = None
    force = False
    i = 0
    while i < len(args) and args[i] != "hook":
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ("--root", "--store"):
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            root, store = (value, store) if name == "--root" else (root, value)
        elif arg == "--force":
            force = True
        elif arg != "--json":
            return None
        i += 1
    if i >= len(args):
        return None
    host = None
    rest: list[str] = []
    tail = args[i + 1:]
    j = 0
    while j < len(tail):
        arg = tail[j]
        name, eq, value = arg.partition("=")
        if name == "--host":
            if not eq:
                if j + 1 >= len(tail):
                    return None
                value = tail[j + 1]
                j += 1
            host = value
        elif arg in ("-h", "--help", "--"):
            return None
        elif arg != "--json":
            rest.append(arg)   # the event name or JSON (hook_run refuses other options)
        j += 1
    return HookCall(Options(root or None, store or None, force), host, rest)


def _run_hook(call: HookCall) -> None:
    """As `main` runs a command: signals as a cancel request, bad settings said once and their
    defaults used (a hook runs unattended), no final collection; `run` exits."""
    import gc

    from undostore import settings

    from . import signals
    from .hook_run import run

    def warn(line: str) -> None:
        print(f"undostore: warning: {line}", file=sys.stderr)

    try:
        with signals.cancel_on_signals(), settings.defaults_for_bad_values(warn):
            settings.check_all()
            run(call.options, call.host, call.args)
    finally:
        gc.freeze()

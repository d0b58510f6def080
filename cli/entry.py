"""The `undostore` command's entry point. The two commands a host runs on every prompt go
straight to their click-free modules, without importing click or any other command: `hook`
(hosts/hook.py) and `status`, the footer (commands/status_run.py). Everything else (and their
`--help`, or any option only click knows) goes to `main`, the click command line."""

from __future__ import annotations

import sys

from .invocation import Invocation, LeanCall


def main(argv: list[str] | None = None) -> None:
    invocation = Invocation(sys.argv[1:] if argv is None else argv)
    call = invocation.lean()
    if call is None:
        from .main import main as with_click

        with_click(invocation)
        return
    from . import resident_client as resident

    if resident.wanted():
        # Only the hook starts a resident process: `status` reads, and makes nothing (a footer
        # in a folder nothing protects would otherwise start one, and its run/ folder).
        code = resident.run_through(invocation.args, may_start=call.command == "hook")
        if code is not None:
            sys.exit(code)
    _run(call)


def _run(call: LeanCall) -> None:
    """As `main` runs a command: signals as a cancel request, bad settings said once and their
    defaults used (both run unattended), the library's errors mapped to their exit codes, no
    final collection."""
    import gc
    import warnings

    from . import signals
    from .plain import Options, fail_with, interrupted, one_line_warning, unattended_settings

    warnings.showwarning = one_line_warning
    try:
        with signals.cancel_on_signals(), unattended_settings():
            given = call.invocation
            options = Options(given.root, given.store, given.force)
            from undostore import settings

            settings.value("UNDOSTORE_RESIDENT")   # a bad value is said (`main` read "on")
            if call.command == "hook":
                from .hosts.hook import run

                run(options, call.values.get("host"), call.args)   # exits
            from .commands.status_run import run as status

            try:
                status(options, call.values.get("session"), call.as_json)
            except Exception as err:  # noqa: BLE001 (fail_with re-raises what it does not map)
                fail_with(call.as_json, err)
            except KeyboardInterrupt as err:
                interrupted(call.as_json, err)
        sys.exit(0)
    finally:
        gc.freeze()

"""`undostore doctor [HOST]`: is undostore protecting this folder in HOST (every host wired here
when none is named)? One line per check with the step still needed (cli/hosts/doctor.py);
exit 1 when one fails. Reads only: it makes no store and writes nothing."""

from __future__ import annotations

from typing import Any

import click

from ..common import Context, emit, json_option, pass_context, project_root
from ..hosts.doctor import (
    Check,
    config,
    files,
    fired,
    on_path,
    resident_process,
    tool_calls,
    wired,
)
from ..hosts.setup import SETUP


def run_checks(ctx: Context, hosts: list[str]) -> list[Check]:
    """The checks for `hosts` in the folder the context names (all wired hosts when empty)."""
    root = project_root(ctx)
    hosts = hosts or [h for h in sorted(SETUP) if wired(SETUP[h].files, root) is not None]
    seen, over_limit = _store_state(ctx)
    checks = [on_path(), files(over_limit), resident_process()]
    if not hosts:
        checks.append(Check("hosts", False, "no agent host is wired here: run "
                                            "`undostore init HOST` (HOST: "
                                            f"{', '.join(sorted(SETUP))})"))
        return checks
    for host in hosts:
        setup = SETUP[host]
        checks.append(config(host, setup.files, root))
        checks.append(tool_calls(host, setup.files, root))
        if setup.trust is not None:
            checks.append(setup.trust(root))
        checks.append(fired(host, seen))
    return checks


def _store_state(ctx: Context) -> tuple[dict[str, float], int | None]:
    """(host -> when its hook last ran for this folder's store, the file limit the last
    snapshot passed or None); nothing of either when there is no store."""
    from undostore import NoStoreError

    ctx.read_only = True
    try:
        workspace = ctx.workspace()
    except NoStoreError:
        return {}, None
    return workspace.hosts_seen(), workspace.file_limit_passed()


def print_checks(checks: list[Check], as_json: bool) -> None:
    emit(as_json, {"checks": [c.to_json() for c in checks],
                   "ok": all(c.ok for c in checks)},
         lambda: "\n".join(f"{'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}"
                           for c in checks))


@click.command("doctor")
@click.argument("host", type=click.Choice(sorted(SETUP)), metavar="[HOST]", required=False)
@json_option
@pass_context
def doctor_command(ctx: Context, host: str | None, as_json: bool) -> None:
    """Check that undostore protects this folder in HOST (every host wired here by default):
    `undostore` on the PATH, the host's config in place, whether it reports each tool call,
    the host's trust state where it can be read (Codex: project trust; Gemini, Copilot: trusted
    folders), and when its hooks last fired here. One line per check with the step still
    needed; exit 1 if any fails."""
    checks = run_checks(ctx, [host] if host else [])
    print_checks(checks, as_json)
    if not all(c.ok for c in checks):
        raise SystemExit(1)


COMMANDS: list[Any] = [doctor_command]

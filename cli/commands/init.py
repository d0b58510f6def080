"""`undostore init HOST`: wire undostore into an agent host's config (cli/hosts/init.py knows
each host's files); merged into what is there, idempotent, `--dry-run` to see it first. Then it
takes the folder's first snapshot (so the host's first prompt does not wait for it) and runs
`doctor HOST`, printing what the host still needs (its exit code stays init's own)."""

from __future__ import annotations

import os
from typing import Any

import click

from ..common import Context, dry_run_option, emit, json_option, note, pass_context, project_root
from ..hosts.init import ConfigError, read_config, target
from ..hosts.setup import SETUP


def _write(path: str, text: str) -> None:
    from undostore import atomic_write

    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    atomic_write(path, text.encode("utf-8"), mode=mode)
    os.chmod(path, mode)


@click.command("init")
@click.argument("host", type=click.Choice(sorted(SETUP)), metavar="HOST")
@click.option("--global", "user_wide", is_flag=True,
              help="Write the user-wide config (under the home folder), not the project's.")
@dry_run_option
@json_option
@pass_context
def init_command(ctx: Context, host: str, user_wide: bool, dry_run: bool, as_json: bool) -> None:
    """Wire undostore into agent host HOST: each prompt records an undo point, each finished
    turn the files after it, and /undo, /undo N, /redo typed in the host are done by undostore.

    HOST: claude-code, codex, codex-notify, copilot, cursor, gemini, opencode, pi, windsurf.
    The project's config is found from the root (see `undostore --help`); --global writes the
    user's. Every other setting and hook in the file is kept, and running it again changes
    nothing. A file it cannot parse is left untouched (exit 1). Hosts run `undostore` from
    their PATH: install it with `pipx install .` or `uv tool install .`. Then it takes the
    folder's first snapshot and prints `undostore doctor HOST`'s checks: the steps the host
    still needs (trusting the folder, reviewing hooks).
    """
    root = project_root(ctx) if not user_wide else ""
    changes: list[dict[str, Any]] = []
    try:
        for spec in SETUP[host].files:
            path = target(spec, root, user_wide)
            old = read_config(path)
            new = spec.update(old, path)
            kept = spec.kept(new) if spec.kept is not None else None
            changes.append({"path": path, "old": old, "new": new, "kept": kept})
    except ConfigError as err:
        from undostore import UndostoreError

        raise UndostoreError(err.message, err.path) from None
    written = [c["path"] for c in changes if c["new"] != c["old"]]
    if not dry_run:
        for change in changes:
            if change["new"] != change["old"]:
                _write(change["path"], change["new"])
    payload: dict[str, Any] = {
        "host": host, "dry_run": dry_run, "written": [] if dry_run else written,
        "unchanged": [c["path"] for c in changes if c["new"] == c["old"]],
        "kept": [c["kept"] for c in changes if c["kept"]]}
    if dry_run:
        payload["would_write"] = [{"path": c["path"], "content": c["new"]} for c in changes
                                  if c["new"] != c["old"]]
        emit(as_json, payload, lambda: _plain(changes, dry_run))
        return
    if user_wide:   # no folder to snapshot or check: `doctor` does it in each project
        emit(as_json, payload, lambda: _plain(changes, dry_run) + "\n"
             f"run `undostore doctor {host}` in a project to check it there")
        return
    payload["first_snapshot"] = _first_snapshot(ctx, as_json)
    from .doctor import print_checks, run_checks

    checks = run_checks(ctx, [host])
    payload["checks"] = [c.to_json() for c in checks]
    emit(as_json, payload, lambda: _plain(changes, dry_run))
    if not as_json:
        print_checks(checks, False)


def _first_snapshot(ctx: Context, as_json: bool) -> dict[str, Any] | None:
    """The folder's first snapshot (`Workspace.first_snapshot`; None: it has one), with
    progress on a terminal, and whether watchman now watches the folder (said on stderr
    where it was wanted)."""
    from undostore import SnapshotOptions, no_progress

    from ..progress import TerminalProgress

    with TerminalProgress.for_stderr() if not as_json else TerminalProgress(None) as progress:
        first = ctx.workspace().first_snapshot(SnapshotOptions(
            force=ctx.force, on_progress=progress.listener or no_progress))
    if first is None:
        return None
    result = first.result
    if not as_json and (first.watchman or first.watchman_trouble):
        note(f"undostore: {result.files:,} files: watchman now watches this folder, so a "
             "prompt asks it what changed instead of walking the tree" if first.watchman
             else f"undostore: {result.files:,} files, and watchman did not start: "
                  f"{first.watchman_trouble}")
    return {"id": result.id, "files": result.files, "seconds": round(result.seconds, 3),
            "watchman": first.watchman}


def _plain(changes: list[dict[str, Any]], dry_run: bool) -> str:
    lines = []
    for change in changes:
        if change["new"] == change["old"]:
            lines.append(f"unchanged {change['path']}")
        elif dry_run:
            lines += [f"would write {change['path']}:", change["new"].rstrip("\n"), ""]
        else:
            lines.append(f"wrote {change['path']}")
        if change["kept"]:
            lines.append(f"  {change['kept']}")
    return "\n".join(lines)


COMMANDS = [init_command]

"""What the command line's entry points share without importing click: the global options as
parsed, and the lines every entry says the same way (`hook` runs with none of click)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any, NamedTuple, NoReturn

# The global options that take a value (`--root DIR`, `--store DIR`).
GLOBAL_WITH_VALUE = ("--root", "--store")


class Options(NamedTuple):
    """The global options: `--root`, `--store` (None: `UNDOSTORE_STORE`, else the default) and
    `--force`."""

    root: str | None = None
    store: str | None = None
    force: bool = False

    @property
    def named_store(self) -> str | None:
        """The store `--store`, else `UNDOSTORE_STORE`, names (None: the root's default)."""
        return self.store or os.environ.get("UNDOSTORE_STORE") or None


def adoption_line(adopted: Any) -> str:
    """The one stderr line for a moved project: the store taken along, or the candidates."""
    rebound = adopted.rebound
    if rebound is not None:
        return (f"undostore: this project moved here: took its store along from "
                f"{rebound.moved_from or rebound.store} (its history keeps every session)")
    listing = "; ".join(adopted.candidates)
    return (f"undostore: several stores of moved projects match the files here ({listing}); "
            "none was taken: `undostore --store PATH rebind` takes one along")


def unattended_settings() -> contextlib.AbstractContextManager[None]:
    """For what hosts and clients run unattended (`hook`, `mcp`, `status`): each bad setting
    said once on stderr now, and its default used for the command's length (never a hook that
    records nothing); a command a person types refuses one instead (exit 2)."""
    from undostore import settings

    def warn(line: str) -> None:
        print(f"undostore: warning: {line}", file=sys.stderr)

    with contextlib.ExitStack() as stack:
        stack.enter_context(settings.defaults_for_bad_values(warn))
        settings.check_all()   # each bad one said now, whether or not the command reads it
        return stack.pop_all()


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def fail(as_json: bool, code: int, kind: str, message: str, path: str | None = None,
         conflicts: list[str] | None = None) -> NoReturn:
    """End with `code`; with --json, stdout still gets exactly one JSON object (the error, and
    the conflicting paths of a refused revert)."""
    if as_json:
        error = {"type": kind, "message": message, "path": path}
        doc: dict[str, Any] = {"error": error, "exit_code": code}
        if conflicts is not None:
            doc["conflicts"] = conflicts
        sys.stdout.write(json.dumps(doc) + "\n")
    sys.exit(code)


def fail_with(as_json: bool, err: Exception) -> NoReturn:
    """The one line and exit code of a library error (its own code) or of an OSError the
    library did not expect (exit 1, with the path and the cause, never a traceback)."""
    from undostore.errors import UndostoreError

    if isinstance(err, UndostoreError):
        print(f"undostore: error: {err}", file=sys.stderr)
        fail(as_json, err.exit_code, type(err).__name__, err.message, err.path,
             getattr(err, "conflicts", None))
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename else ""
        print(f"undostore: error: {where}{err.strerror or err}", file=sys.stderr)
        fail(as_json, 1, type(err).__name__, str(err.strerror or err),
             os.fsdecode(err.filename) if err.filename else None)
    raise err

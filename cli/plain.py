"""What the command line's entry points share without importing click: the global options as
parsed, and the lines every entry says the same way (`hook` runs with none of click)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

if TYPE_CHECKING:
    from undostore.history.stores import Adoption


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


def adoption_line(adopted: Adoption) -> str:
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


def json_text(payload: Any) -> str:
    """`payload` as JSON text: UTF-8 as it is, unless it holds half a character (a lone
    surrogate a host sent in an id), which is then written escaped, as JSON allows."""
    text = json.dumps(payload, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, default=str)
    return text


def one_line_warning(message: Warning | str, *args: object, **kwargs: object) -> None:
    """`warnings.showwarning` for every entry: a library warning is one line for people (the
    contract's one stderr line), not Python's file:line and source line."""
    print(f"undostore: warning: {' '.join(str(message).split())}", file=sys.stderr)


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


class Failure(NamedTuple):
    """A failure as every front end reports it: the exit code, the one line for people
    ("undostore: error: ..."), and the JSON object (`error`, `exit_code`, and `conflicts` for a
    refused undo or revert) that `--json` prints and an MCP tool returns."""

    code: int
    line: str
    doc: dict[str, Any]


def failure_doc(code: int, kind: str, message: str, path: str | None = None,
                conflicts: list[str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"error": {"type": kind, "message": message, "path": path},
                           "exit_code": code}
    if conflicts is not None:
        doc["conflicts"] = conflicts
    return doc


def failure_of(err: Exception) -> Failure | None:
    """The failure a library error (its own code) or an OSError the library did not expect
    (exit 1, with the path and the cause, never a traceback) is; None for anything else."""
    from undostore import UndostoreError

    if isinstance(err, UndostoreError):
        return Failure(err.exit_code, f"undostore: error: {err}",
                       failure_doc(err.exit_code, type(err).__name__, err.message, err.path,
                                   getattr(err, "conflicts", None)))
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename else ""
        return Failure(1, f"undostore: error: {where}{err.strerror or err}",
                       failure_doc(1, type(err).__name__, str(err.strerror or err),
                                   os.fsdecode(err.filename) if err.filename else None))
    return None


def fail(as_json: bool, code: int, kind: str, message: str, path: str | None = None,
         conflicts: list[str] | None = None) -> NoReturn:
    """End with `code`; with --json, stdout still gets exactly one JSON object (the error, and
    the conflicting paths of a refused revert)."""
    if as_json:
        sys.stdout.write(json.dumps(failure_doc(code, kind, message, path, conflicts)) + "\n")
    sys.exit(code)


def interrupted(as_json: bool, err: BaseException) -> NoReturn:
    """Ctrl-C or SIGTERM (KeyboardInterrupt, or the library's Interrupted, or either carried
    past click in `original`): one line on stderr saying what became of the half-done work,
    exit 130; the one way every front end of the command line says it."""
    original = getattr(err, "original", err)
    message = getattr(original, "message", None) or "interrupted; nothing was left half-done"
    try:
        if sys.stderr.isatty():
            sys.stderr.write("\n")   # past the terminal's ^C
    except (AttributeError, ValueError):
        pass
    print(f"undostore: {message}", file=sys.stderr)
    fail(as_json, 130, "Interrupted", message)


def fail_with(as_json: bool, err: Exception) -> NoReturn:
    """End with the failure `err` is (failure_of): its line on stderr, its JSON with --json;
    any other exception propagates."""
    failed = failure_of(err)
    if failed is None:
        raise err
    print(failed.line, file=sys.stderr)
    if as_json:
        sys.stdout.write(json.dumps(failed.doc) + "\n")
    sys.exit(failed.code)


def root_relative(root: str, specs: list[str], here: str | None = None) -> list[str]:
    """Path specs as '/'-separated paths under root. A relative spec is taken from the current
    folder (`here`: a host's folder for its `/undo PATH`) when that folder is inside root (as
    git does), else from root."""
    if not specs:
        return []   # nothing to read: the path rules' module stays unloaded (a hook's /undo)
    from undostore import UsageError, normalize_spec

    here = os.path.realpath(here if here is not None else os.getcwd())
    inside = here == root or here.startswith(root.rstrip(os.sep) + os.sep)
    out = []
    for spec in specs:
        if not os.path.isabs(spec) and not inside:
            out.append(normalize_spec(spec))
            continue
        full = os.path.normpath(os.path.join(here, spec))
        try:
            rel = os.path.relpath(full, root) if full != root else "."
        except ValueError:       # Windows: another drive
            rel = full
        if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            raise UsageError(f"path {spec!r} is outside the root {root}")
        out.append(normalize_spec(rel))
    return out

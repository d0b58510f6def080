"""The pager of `diff`, `show` and `log`, as git's: long output on a terminal goes through one.

The command is `$UNDOSTORE_PAGER`, else `$PAGER`, else `less -FRX` (with `LESS=FRX` and `LV=-c`
set when unset, as git sets them: quit at once if it fits, keep colours, leave the screen as it
was). An empty value or `cat` means no pager; so does a missing `less`. Never when stdout is
not a terminal, with `--no-pager`, or for `--json`. The pager is started through the shell, as
git does, so `UNDOSTORE_PAGER='less -S'` works. Stdout (and stderr, when it is the same
terminal) go into the pager until the command ends; then undostore waits for it, ignoring
Ctrl-C meanwhile (the pager owns the terminal), so the prompt never comes back under it.
Quitting the pager before the end is a normal end (exit 0).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator

import click

DEFAULT = "less -FRX"


def no_pager_option(f):  # noqa: ANN001, ANN201 (a click decorator)
    return click.option("--no-pager", "no_pager", is_flag=True,
                        help="Write straight to the terminal, not through a pager.")(f)


def pager_command() -> str | None:
    """The pager to run, or None for none (module docstring)."""
    for name in ("UNDOSTORE_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            value = value.strip()
            return None if value in ("", "cat") else value
    return DEFAULT if shutil.which("less") else None


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def paged(enabled: bool = True) -> Iterator[bool]:
    """Send what is written to stdout inside the block through the pager (yields whether one
    runs). Decide colours and widths before entering: stdout is a pipe inside."""
    command = pager_command() if enabled and _is_terminal(sys.stdout) else None
    if command is None:
        yield False
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    try:
        pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        yield False
        return
    assert pager.stdin is not None
    fds = [1, 2] if _is_terminal(sys.stderr) else [1]
    saved = {fd: os.dup(fd) for fd in fds}
    sys.stderr.flush()
    for fd in fds:
        os.dup2(pager.stdin.fileno(), fd)
    pager.stdin.close()
    broken = False
    try:
        yield True
        _flush()
    except BrokenPipeError:
        broken = True       # the pager was quit before the end: the reader has seen enough
    finally:
        _end(pager, saved, broken)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def _end(pager: subprocess.Popen, saved: dict[int, int], broken: bool) -> None:
    """Give the pager its end of input and wait for it to quit. Stdout goes back to the
    terminal, or, after a broken pipe, to the null device (what was not read is dropped)."""
    if not broken:
        with contextlib.suppress(BrokenPipeError):
            _flush()
    for fd, copy in saved.items():
        if broken and fd == 1:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        else:
            os.dup2(copy, fd)
        os.close(copy)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pager.wait()
    finally:
        signal.signal(signal.SIGINT, previous)

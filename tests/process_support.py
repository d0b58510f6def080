"""Processes as /proc shows them (Linux): whether one still runs, and a fork that lets its
child finish first (the lstats split's tests: every answer written before the walk goes on)."""

from __future__ import annotations

import os
import time

WAIT_SECONDS = 30.0


def alive(pid: int) -> bool:
    """Whether process `pid` runs (exited but not yet reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def until_exited(pid: int) -> None:
    """Wait (at most WAIT_SECONDS) for our child `pid` to exit; it is left to be reaped."""
    deadline = time.monotonic() + WAIT_SECONDS
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.002)


def fork_finished_first() -> int:
    """os.fork whose parent returns once the child has exited (a walk's second process then
    has written every answer before the walk starts)."""
    pid = os.fork()
    if pid:
        until_exited(pid)
    return pid

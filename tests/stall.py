"""A restore that waits at its k-th file operation, for tests that signal or kill it there.

    python tests/stall.py K MARKER [undostore CLI arguments...]

runs the undostore CLI in this process with `Workspace.checkpoint` set to `stall_at(K, MARKER)`:
the K-th counted checkpoint of a restore writes MARKER and sleeps until the test sends SIGINT or
SIGKILL. In-process scripts call `stall_at` themselves (load this file with runpy)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def stall_at(k: int, marker: str) -> Callable[[str, str], None]:
    count = 0

    def checkpoint(what: str, path: str) -> None:
        nonlocal count
        if what.startswith("before "):
            return  # the uncounted call right before a change
        count += 1
        if count == k:
            with open(marker, "w", encoding="utf-8") as f:
                f.write(f"{count} {what} {path}\n")
            time.sleep(600)

    return checkpoint


def _run_cli(k: int, marker: str, args: list[str]) -> None:
    from undostore_cli.main import main

    from undostore import workspace

    init = workspace.Workspace.__init__

    def init_with_stall(self: workspace.Workspace, *a: object, **kw: object) -> None:
        init(self, *a, **kw)  # type: ignore[arg-type]
        self.checkpoint = stall_at(k, marker)

    workspace.Workspace.__init__ = init_with_stall  # type: ignore[method-assign]
    main(args)


if __name__ == "__main__":
    _run_cli(int(sys.argv[1]), sys.argv[2], sys.argv[3:])

"""A restore that waits at its k-th file operation, for tests that signal or kill it there.

    python tests/stall.py K MARKER [undostore CLI arguments...]

runs the undostore CLI in this process with `Workspace.checkpoint` set to `stall_at(K, MARKER)`:
the K-th counted checkpoint of a restore writes MARKER and waits until the test's SIGINT or
SIGTERM becomes the workspace's cancel request (or it sends SIGKILL). In-process scripts call
`stall_at` themselves (load this file with runpy)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def stall_at(k: int, marker: str, stop: Callable[[], bool] | None = None
             ) -> Callable[[str, str], None]:
    """The checkpoint: at the K-th, MARKER is written and it waits, until `stop()` is true (a
    cancel request: the restore then stops at its next check) or a signal raises."""
    count = 0

    def checkpoint(what: str, path: str) -> None:
        nonlocal count
        if what.startswith("before "):
            return  # the uncounted call right before a change
        count += 1
        if count == k:
            with open(marker, "w", encoding="utf-8") as f:
                f.write(f"{count} {what} {path}\n")
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not (stop is not None and stop()):
                time.sleep(0.005)

    return checkpoint


def _run_cli(k: int, marker: str, args: list[str]) -> None:
    from undostore_cli.entry import main  # as the console script: `hook` without click

    from undostore import workspace

    init = workspace.Workspace.__init__

    def init_with_stall(self: workspace.Workspace, *a: object, **kw: object) -> None:
        init(self, *a, **kw)  # type: ignore[arg-type]
        self.checkpoint = stall_at(k, marker, lambda: self.cancel.is_set())

    workspace.Workspace.__init__ = init_with_stall  # type: ignore[method-assign]
    main(args)


if __name__ == "__main__":
    _run_cli(int(sys.argv[1]), sys.argv[2], sys.argv[3:])

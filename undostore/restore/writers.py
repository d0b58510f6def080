"""Writing a restore's new files on a few threads where that pays, while every decision, every
record and every step a crash test can stop at stays on the calling thread, in job order.

Where it pays: creating a file costs the kernel little on most file systems, and there threads
only add hand-offs of Python's lock (2,000 temp files on a journaled ext4: 0.59 s in all on one
thread, 0.66-0.79 s with the pools). Where the kernel's own work per file is large, it spreads
over the cores: on an ext4 without a journal, after many files were freed, each create scans
the inodes freed in the last minutes (perf: recently_deleted, find_inode_bit), and 2,000 temp
files in 887 folders took 1.04-1.14 s on one thread, 0.41-0.48 s on four. So jobs run here,
timed `PROBE` at a time, and the rest go to threads once `PROBE` of them took `SLOW` or more
each (measured per job: 49-62 us on the journaled ext4, 150-220 us on the other, where the
first folders were cheaper than the later ones). What a thread does is invisible to a user
until the caller renames it into place.

The caller hands each job a descriptor of its own (a `dup` of its folder's): the tree may close
its folders' descriptors to stay under the limit while a job is still out. At most `ahead`
chunks are out at once, which bounds those descriptors too.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

THREADS = 4
MIN_JOBS = 64     # fewer writes than this are not worth timing or starting threads for
PROBE = 64        # jobs timed together on the caller's thread
SLOW = 130e-6     # seconds per job (over PROBE jobs) from which the rest go to threads

J = TypeVar("J")
R = TypeVar("R")


class Writers(Generic[J, R]):
    """`work(job)` here, timed `probe` jobs at a time, until `probe` of them took `slow`
    seconds or more each, then on a pool; `done(job, result)` always on the caller's thread,
    in job order.

    If anything fails (a job, `done`, or the caller's job iterator), every job already handed
    out is waited for, `undo(job, result)` is called for each that succeeded and was not yet
    done, and the first error is raised (`failed(job)` first, for a job whose work raised).
    `release(job)` is called once for every job taken from the iterator, after its work has
    finished or was never started."""

    def __init__(self, work: Callable[[J], R], done: Callable[[J, R], None],
                 undo: Callable[[J, R], None], release: Callable[[J], None],
                 failed: Callable[[J], None], *,
                 threads: int = THREADS, chunk: int = 8, ahead: int = 16,
                 probe: int | None = None, slow: float | None = None) -> None:
        self.work, self.done, self.undo, self.release = work, done, undo, release
        self.failed = failed
        self.threads, self.chunk, self.ahead = threads, chunk, ahead
        self.probe = PROBE if probe is None else probe
        self.slow = SLOW if slow is None else slow

    def run(self, jobs: Iterable[J]) -> None:
        rest = iter(jobs)
        spent, count = 0.0, 0
        for job in rest:
            spent += self._here(job)
            count += 1
            if count == self.probe:
                if spent >= self.slow * count:
                    self._on_threads(rest)
                    return
                spent, count = 0.0, 0   # timed again: later folders may cost more

    def _here(self, job: J) -> float:
        """Run one job on this thread: the seconds its work took."""
        started = time.perf_counter()
        try:
            result = self.work(job)
        except BaseException:
            self.release(job)
            self.failed(job)
            raise
        spent = time.perf_counter() - started
        self.release(job)
        self.done(job, result)
        return spent

    def _on_threads(self, jobs: Iterator[J]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        out: deque[tuple[list[J], Future[tuple[list[R], BaseException | None]]]] = deque()
        chunk: list[J] = []
        with ThreadPoolExecutor(self.threads, thread_name_prefix="undostore-write") as pool:
            try:
                for job in jobs:
                    chunk.append(job)
                    if len(chunk) >= self.chunk:
                        out.append((chunk, pool.submit(self._run_chunk, chunk)))
                        chunk = []
                        while len(out) > self.ahead:
                            self._take(*out.popleft())
                if chunk:
                    out.append((chunk, pool.submit(self._run_chunk, chunk)))
                    chunk = []
                while out:
                    self._take(*out.popleft())
            except BaseException:
                for job in chunk:
                    self.release(job)
                while out:
                    self._abandon(*out.popleft())
                raise

    def _run_chunk(self, chunk: list[J]) -> tuple[list[R], BaseException | None]:
        results: list[R] = []
        for job in chunk:
            try:
                results.append(self.work(job))
            except BaseException as err:  # handed to the caller's thread, raised there
                return results, err
        return results, None

    def _take(self, chunk: list[J], future: Future[tuple[list[R], BaseException | None]]
              ) -> None:
        results, error, interrupted = self._finished(chunk, future)
        if interrupted is not None:
            for job, result in zip(chunk, results, strict=False):
                self._undo(job, result)
            raise interrupted
        for i, (job, result) in enumerate(zip(chunk, results, strict=False)):
            try:
                self.done(job, result)
            except BaseException:
                for later, its in zip(chunk[i + 1:], results[i + 1:], strict=False):
                    self._undo(later, its)
                raise
        if error is not None:
            self.failed(chunk[len(results)])
            raise error

    def _abandon(self, chunk: list[J], future: Future[tuple[list[R], BaseException | None]]
                 ) -> None:
        results, _, _ = self._finished(chunk, future)
        for job, result in zip(chunk, results, strict=False):
            self._undo(job, result)

    def _finished(self, chunk: list[J], future: Future[tuple[list[R], BaseException | None]]
                  ) -> tuple[list[R], BaseException | None, KeyboardInterrupt | None]:
        """(results, the job's error, a Ctrl-C met while waiting) once the chunk's work is
        over: waited for even through a Ctrl-C, since a job still writing must not outlive
        the caller's clean-up."""
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                results, error = future.result()
                break
            except KeyboardInterrupt as err:
                interrupted = err
        for job in chunk:
            self.release(job)
        return results, error, interrupted

    def _undo(self, job: J, result: R) -> None:
        try:
            self.undo(job, result)
        except Exception:  # noqa: BLE001 - a temp left behind is removed by recovery
            pass

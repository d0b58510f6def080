"""Writing a restore's new files on a few threads where that pays, while every decision, every
record and every step a crash test can stop at stays on the calling thread, in job order.

Where it pays: creating a file costs the kernel little on most file systems, and there threads
only add hand-offs of Python's lock (2,000 temp files on a journaled ext4: 0.59 s in all on one
thread, 0.66-0.79 s with the pools). Where the kernel's own work per file is large, it spreads
over the cores: on an ext4 without a journal, after many files were freed, each create scans
the inodes freed in the last minutes (perf: recently_deleted, find_inode_bit), and 2,000 temp
files in 887 folders took 1.04-1.14 s on one thread, 0.41-0.48 s on four. So jobs run here,
timed `PROBE` at a time, and the rest go to threads once `PROBE` of them took `SLOW` or more
each (measured per job: 49-80 us on the journaled ext4, 100-220 us on the other, where the
first folders were cheaper than the later ones). What a thread does is invisible to a user
until the caller renames it into place.

The caller hands each job a descriptor of its own (a `dup` of its folder's): the tree may close
its folders' descriptors to stay under the limit while a job is still out. At most `ahead`
chunks are out at once, which bounds those descriptors too.

A Ctrl-C raises KeyboardInterrupt on the calling thread between any two steps, so the pool is
this module's own, not concurrent.futures: a chunk is listed as out before a thread can see
it, a thread claims it under its lock (or finds it dropped), a chunk leaves the list only once
all it wrote was handed over or undone, and a job's descriptor is released once (counted
per chunk: a job may be gone, its id() reused by a later one, once its chunk was taken).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from queue import SimpleQueue
from typing import Generic, TypeVar

from undostore.restore.rounds import SlowRounds

THREADS = 4
MIN_JOBS = 64     # fewer writes than this are not worth timing or starting threads for
PROBE = 64        # jobs timed together on the caller's thread
SLOW = 130e-6     # seconds per job (over PROBE jobs) from which the rest go to threads

J = TypeVar("J")
R = TypeVar("R")

_QUEUED, _RUNNING, _FINISHED, _DROPPED = range(4)


class _Chunk(Generic[J, R]):
    """A few jobs a thread runs in one go, and what became of them."""

    def __init__(self, jobs: list[J]) -> None:
        self.jobs = jobs
        self.results: list[R] = []
        self.error: BaseException | None = None
        self.state = _QUEUED
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.settled = 0    # results handed to the caller (`done`) or undone, in order
        self.released = 0   # jobs whose `release` was called, in order


class Writers(Generic[J, R]):
    """`work(job)` here, timed `probe` jobs at a time, until `probe` of them took `slow`
    seconds or more each, then on a pool; `done(job, result)` always on the caller's thread,
    in job order.

    If anything fails (a job, `done`, or the caller's job iterator), every job already handed
    out is waited for (or dropped before it starts), `undo(job, result)` is called for each
    that succeeded and was not yet done (a job whose `done` raised counts as not done), and the
    first error is raised (`failed(job)` first, for a job whose work raised). `release(job)` is
    called once for every job taken from the iterator (never twice; only a Ctrl-C at the wrong
    moment can skip one), after its work has finished or was never started."""

    def __init__(self, work: Callable[[J], R], done: Callable[[J, R], None],
                 undo: Callable[[J, R], None], release: Callable[[J], None],
                 failed: Callable[[J], None], *,
                 threads: int = THREADS, chunk: int = 8, ahead: int = 16,
                 probe: int | None = None, slow: float | None = None) -> None:
        self.work, self.done, self.undo, self._release = work, done, undo, release
        self.failed = failed
        self.threads, self.chunk, self.ahead = threads, chunk, ahead
        self.probe = PROBE if probe is None else probe
        self.slow = SLOW if slow is None else slow

    def run(self, jobs: Iterable[J]) -> None:
        rest = iter(jobs)
        rounds = SlowRounds(self.probe, self.slow)
        for job in rest:
            if rounds.add(self._here(job)):
                self._on_threads(rest)
                return

    def _release_chunk(self, chunk: _Chunk[J, R]) -> None:
        """`release` each job of `chunk` not yet released: counted first, so an interrupt in
        between leaks a descriptor rather than closing a number someone else may hold by then."""
        while chunk.released < len(chunk.jobs):
            at = chunk.released
            chunk.released = at + 1
            self._release(chunk.jobs[at])

    def _here(self, job: J) -> float:
        """Run one job on this thread: the seconds its work took."""
        started = time.perf_counter()
        try:
            result = self.work(job)
        except BaseException:
            self._release(job)
            self.failed(job)
            raise
        spent = time.perf_counter() - started
        self._release(job)
        self.done(job, result)
        return spent

    # --- the pool -----

    def _on_threads(self, jobs: Iterator[J]) -> None:
        queue: SimpleQueue[_Chunk[J, R] | None] = SimpleQueue()
        workers: list[threading.Thread] = []
        out: deque[_Chunk[J, R]] = deque()
        pending: list[J] = []
        try:
            for job in jobs:
                pending.append(job)
                if len(pending) < self.chunk:
                    continue
                self._hand_out(pending, out, queue, workers)
                pending = []   # (an interrupt before this: released with the chunk, below)
                while len(out) > self.ahead:
                    self._take(out)
            if pending:
                self._hand_out(pending, out, queue, workers)
                pending = []
            while out:
                self._take(out)
        except BaseException:
            if not (out and out[-1].jobs is pending):   # else handed out: the chunk has them
                for job in pending:
                    self._release(job)
            while out:
                self._abandon(out[0])
                out.popleft()
            raise
        finally:
            for _ in workers:
                queue.put(None)
            for worker in workers:
                if worker.ident is not None:   # (one that could not start is listed too)
                    worker.join()

    def _hand_out(self, jobs: list[J], out: deque[_Chunk[J, R]],
                  queue: SimpleQueue[_Chunk[J, R] | None], workers: list[threading.Thread]
                  ) -> None:
        """`jobs` as a chunk for the threads, listed in `out` before any thread can see it."""
        out.append(_Chunk(jobs))
        if len(workers) < self.threads:
            self._start(queue, workers)
        queue.put(out[-1])

    def _start(self, queue: SimpleQueue[_Chunk[J, R] | None],
               workers: list[threading.Thread]) -> None:
        """One more thread, listed before it starts: one a Ctrl-C left unlisted would take a
        listed one's stop signal, and the join at the end would wait for ever."""
        worker = threading.Thread(target=self._serve, args=(queue,), name="undostore-write",
                                  daemon=True)
        workers.append(worker)
        worker.start()

    def _serve(self, queue: SimpleQueue[_Chunk[J, R] | None]) -> None:
        while True:
            chunk = queue.get()
            if chunk is None:
                return
            with chunk.lock:
                if chunk.state == _DROPPED:
                    continue
                chunk.state = _RUNNING
            try:
                for job in chunk.jobs:
                    chunk.results.append(self.work(job))
            except BaseException as err:  # handed to the caller's thread, raised there
                chunk.error = err
            finally:
                chunk.state = _FINISHED
                chunk.finished.set()

    def _take(self, out: deque[_Chunk[J, R]]) -> None:
        """Hand the oldest chunk's results to `done`; it leaves `out` only once all are."""
        chunk = out[0]
        chunk.finished.wait()
        self._release_chunk(chunk)
        while chunk.settled < len(chunk.results):
            at = chunk.settled
            self.done(chunk.jobs[at], chunk.results[at])
            chunk.settled = at + 1
        if chunk.error is not None:
            self.failed(chunk.jobs[len(chunk.results)])
            raise chunk.error
        out.popleft()

    def _abandon(self, chunk: _Chunk[J, R]) -> None:
        """Drop a chunk no thread has started, else wait for it; undo what it wrote that the
        caller was not given."""
        with chunk.lock:
            if chunk.state == _QUEUED:
                chunk.state = _DROPPED
        if chunk.state != _DROPPED:
            while True:
                try:
                    chunk.finished.wait()
                    break
                except KeyboardInterrupt:   # a second Ctrl-C: the writes still end first
                    continue
        while chunk.released < len(chunk.jobs):
            try:
                self._release_chunk(chunk)
            except OSError:
                pass   # counted: the next job's turn
        while chunk.settled < len(chunk.results):
            at = chunk.settled
            chunk.settled = at + 1
            try:
                self.undo(chunk.jobs[at], chunk.results[at])
            except Exception:  # noqa: BLE001 - a temp left behind is removed by recovery
                pass

"""restore/writers.py: jobs run on threads, but what the caller sees happens on its own thread,
in job order; a failure anywhere leaves no job running and every written file undone."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from undostore.restore.writers import Writers


class Recorder:
    """Writes real files (job i -> `dir/f<i>`) with random pauses, and records every call."""

    def __init__(self, base: str, fail_at: int | None = None) -> None:
        self.folder = os.path.join(base, "out")
        os.mkdir(self.folder)
        self.fail_at = fail_at
        self.done: list[int] = []
        self.undone: list[int] = []
        self.released: list[int] = []
        self.failed: list[int] = []
        self.running = 0
        self.most = 0
        self.threads: set[int] = set()
        self.active: set[int] = set()
        self.callers: set[int] = set()
        self._lock = threading.Lock()
        self._rng = random.Random(7)

    def work(self, job: int) -> str:
        with self._lock:
            self.active.add(job)
            self.running += 1
            self.most = max(self.most, self.running)
            pause = self._rng.uniform(0, 0.002)
        self.threads.add(threading.get_ident())
        try:
            time.sleep(pause)
            if job == self.fail_at:
                raise OSError(28, "No space left on device")
            path = os.path.join(self.folder, f"f{job}")
            with open(path, "x") as f:
                f.write(str(job))
            return path
        finally:
            with self._lock:
                self.running -= 1
                self.active.discard(job)

    def on_done(self, job: int, path: str) -> None:
        self.callers.add(threading.get_ident())
        assert self.running >= 0
        self.done.append(job)

    def undo(self, job: int, path: str) -> None:
        self.callers.add(threading.get_ident())
        os.unlink(path)
        self.undone.append(job)

    def release(self, job: int) -> None:
        assert job not in self.released, f"job {job} released twice"
        assert job not in self.active, f"job {job} released while its work runs"
        self.released.append(job)

    def on_failed(self, job: int) -> None:
        self.failed.append(job)

    def writers(self, **kw: float) -> Writers[int, str]:
        """Writers that go to threads after 2 jobs, whatever they cost (unless `kw` says)."""
        return Writers(self.work, self.on_done, self.undo, self.release, self.on_failed,
                       **{"probe": 2, "slow": 0.0, **kw})  # type: ignore[arg-type]

    def files(self) -> set[int]:
        return {int(name[1:]) for name in os.listdir(self.folder)}


def test_results_reach_the_caller_in_job_order_on_its_own_thread(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    rec.writers(chunk=3, ahead=4).run(range(200))
    assert rec.done == list(range(200))
    assert sorted(rec.released) == list(range(200))
    assert rec.callers == {threading.get_ident()}
    assert len(rec.threads - {threading.get_ident()}) > 1  # after the probe
    assert rec.files() == set(range(200))
    assert rec.undone == [] and rec.failed == []


def test_a_failed_job_stops_the_run_and_undoes_every_later_file(tmp_path) -> None:
    rec = Recorder(str(tmp_path), fail_at=77)
    with pytest.raises(OSError, match="No space"):
        rec.writers(chunk=4, ahead=5).run(range(300))
    assert rec.running == 0                       # nothing still writing after run() raised
    assert rec.done == list(range(77))            # the caller took every file before it
    assert rec.failed == [77]
    assert rec.files() == set(range(77))          # every later file written was removed again
    assert sorted(rec.released) == sorted(set(rec.released))
    assert set(range(80)) <= set(rec.released)    # its chunk and the ones out were released
    assert not set(rec.undone) & set(rec.done)


def test_an_error_in_the_callers_step_undoes_what_it_did_not_take(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    original = rec.on_done

    def stop_at_50(job: int, path: str) -> None:
        original(job, path)
        if job == 50:
            raise KeyboardInterrupt

    rec.on_done = stop_at_50  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        rec.writers(chunk=8, ahead=3).run(range(400))
    assert rec.running == 0
    assert rec.done == list(range(51))
    assert rec.files() == set(range(50))         # job 50's step failed: its file is undone too
    assert sorted(rec.released) == sorted(set(rec.released))


def test_an_error_from_the_job_iterator_waits_for_the_jobs_out(tmp_path) -> None:
    rec = Recorder(str(tmp_path))

    def jobs():
        yield from range(100)
        raise ValueError("a folder on the way is a symlink")

    with pytest.raises(ValueError, match="symlink"):
        rec.writers(chunk=8, ahead=16).run(jobs())
    assert rec.running == 0
    assert rec.files() == set(rec.done)
    assert sorted(rec.released) == list(range(100))


def test_jobs_out_at_once_are_bounded(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    taken: list[int] = []

    def jobs():
        for i in range(500):
            taken.append(i)
            # never more than (ahead + 1) chunks taken beyond what the caller was given
            assert i - len(rec.done) <= (2 + 1) * 4 + 4
            yield i

    rec.writers(chunk=4, ahead=2).run(jobs())
    assert rec.done == list(range(500))


def test_jobs_that_cost_little_stay_on_the_callers_thread(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    rec.writers(probe=32, slow=float("inf")).run(range(300))
    assert rec.threads == {threading.get_ident()}
    assert rec.done == list(range(300)) and rec.files() == set(range(300))


def test_jobs_slower_than_the_bound_go_to_threads_after_the_probe(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    original = rec.work

    def at_least_a_millisecond(job: int) -> str:
        time.sleep(0.001)
        return original(job)

    rec.work = at_least_a_millisecond  # type: ignore[method-assign]
    rec.writers(probe=32, slow=150e-6).run(range(300))
    assert threading.get_ident() in rec.threads and len(rec.threads) > 1
    assert rec.done == list(range(300))


def test_a_job_failing_during_the_probe_is_raised_with_nothing_out(tmp_path) -> None:
    rec = Recorder(str(tmp_path), fail_at=5)
    with pytest.raises(OSError, match="No space"):
        rec.writers(probe=32).run(range(300))
    assert rec.done == list(range(5)) and rec.failed == [5]
    assert sorted(rec.released) == list(range(6))
    assert rec.files() == set(range(5))


def test_jobs_that_grow_slow_later_go_to_threads_from_then_on(tmp_path) -> None:
    """The first folders may be cheap and later ones not: timing goes on, window by window."""
    rec = Recorder(str(tmp_path))
    original = rec.work
    where: dict[int, str] = {}

    def cheap_then_slow(job: int) -> str:
        where[job] = threading.get_ident()
        if job >= 40:
            time.sleep(0.01)
        return original(job)

    rec.work = cheap_then_slow  # type: ignore[method-assign]
    rec.writers(probe=8, slow=0.005).run(range(200))
    here = threading.get_ident()
    assert all(where[job] == here for job in range(40))
    assert any(where[job] != here for job in range(48, 200))
    assert rec.done == list(range(200))


def test_a_thread_that_cannot_start_leaves_every_job_released_once_and_undone(tmp_path) -> None:
    rec = Recorder(str(tmp_path))
    writers = rec.writers(chunk=4, ahead=8)
    original = writers._start
    started: list[object] = []

    def second_fails(queue, workers):
        if started:
            workers.append(threading.Thread(target=lambda: None))   # listed, never started
            raise RuntimeError("can't start new thread")
        original(queue, workers)
        started.append(workers[-1])

    writers._start = second_fails  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="start new thread"):
        writers.run(range(100))
    assert rec.running == 0
    assert rec.files() == set(rec.done)
    assert len(rec.released) == len(set(rec.released))
    assert set(rec.released) >= set(range(len(rec.done) + 4))


class _Job:
    """A job the caller keeps no reference to: once its chunk is taken it is freed, and a later
    job may be given its id()."""

    def __init__(self, index: int) -> None:
        self.index = index


def test_every_job_is_released_once_though_the_caller_keeps_no_job() -> None:
    released: list[int] = []
    writers: Writers[_Job, int] = Writers(
        lambda job: job.index, lambda job, result: None, lambda job, result: None,
        lambda job: released.append(job.index), lambda job: None,
        probe=2, slow=0.0, chunk=4, ahead=2)
    writers.run(_Job(i) for i in range(2000))
    assert sorted(released) == list(range(2000))


def test_a_ctrl_c_right_after_a_thread_started_still_stops_every_thread(tmp_path,
                                                                      monkeypatch) -> None:
    """The interrupt lands as the second thread's start returns: the run still ends (no join
    waits for ever on a thread that took another's stop signal), every job released once."""
    import types

    from undostore.restore import writers as writers_module

    class InterruptedAfterStart(threading.Thread):
        started = 0

        def start(self) -> None:
            super().start()
            InterruptedAfterStart.started += 1
            if InterruptedAfterStart.started == 2:
                raise KeyboardInterrupt

    monkeypatch.setattr(writers_module, "threading",
                        types.SimpleNamespace(**{**vars(threading),
                                                 "Thread": InterruptedAfterStart}))
    rec = Recorder(str(tmp_path))
    writers = rec.writers(chunk=4, ahead=8)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            writers.run(range(100))
        except BaseException as err:  # noqa: BLE001 - checked below, on the test's thread
            raised.append(err)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "the run waits for ever for its threads"
    assert len(raised) == 1 and isinstance(raised[0], KeyboardInterrupt)
    assert rec.running == 0
    assert len(rec.released) == len(set(rec.released))
    assert not any(t.name == "undostore-write" and t.is_alive() for t in threading.enumerate())

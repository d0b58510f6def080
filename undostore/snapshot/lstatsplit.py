"""Half the `lstat`s of a big no-change walk, done in a second process.

A walk through the stat cache (walk.py) costs one `lstat` per file of every unchanged folder;
on a big tree that loop is most of a no-change snapshot. CPython's threads cannot share it
(each call drops and retakes the GIL: two threads are slower than one), but a second process
can: a forked child, holding the cache the parent loaded, checks the folders the walk visits
last (the walk pops its stack from the end of each folder's list of sub-folders; the child goes
from its start) and answers, per chunk of a folder's files (`Limits.split_chunk_files`, taken
from the last, as the walk lstats from the first: where the two meet in a huge folder, each
does its part), the chunks whose files all still match their entries; the parent takes an
answer only for a folder whose listing it has also found unchanged (its stamp held, or its
names were read again where folder times never move), and lstats every other file itself.

Where it is used: only where a front end hands a way to fork (`fork`: the CLI, which runs no
other thread; the library never forks of its own accord, an embedding host may run threads)
and the stat cache holds at least `Limits.split_lstat_min_files` files. Started by the walk's first
use (a walk that watchman spared never starts it).

Safe by construction: the child only reads (lstat, open a folder) and writes its answers to a
pipe, NUL-terminated; an answer cut short by its death is never read as one, and a child that
answers nothing (killed, stopped, slow) only leaves the parent to do the work. The parent ends
and reaps it on every exit path (`close`). Figures: docs/design.md, "A second process for the
lstats".
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from undostore.snapshot.walk import (
    FOLDER_FLAGS,
    PART,
    UNTRUSTED,
    Known,
    disk_path,
    pack_stats,
    stat_part,
)
from undostore.store.statcache import ENTRY

# A function that forks this process (os.fork: the child gets 0) or says no (None: it is not
# safe now, another thread runs).
Fork = Callable[[], int | None]

# Files the child checks between two writes of its answers, and files the parent's own checks
# cover between two looks at the pipe (a read that finds nothing costs a system call; at most a
# chunk's worth, so that a walk of small folders looks too).
_ANSWER_EVERY_FILES = 512
_LOOK_EVERY_FILES = 256


class Split:
    """The second process of one walk, started at its first use (`vouched`); `close` ends it.
    `vouched(rel, chunk, files)`: whether the child found every file of that chunk of folder
    `rel`'s files unchanged."""

    def __init__(self, root: str, known: Callable[[str], Known | None], fork: Fork,
                 chunk_files: int) -> None:
        self._root, self._known, self._fork = root, known, fork
        self.chunk_files = chunk_files
        self._look_every = min(_LOOK_EVERY_FILES, chunk_files)
        self._pid: int | None = None
        self._fd: int | None = None
        self._tried = False
        self._answers: set[tuple[str, int]] = set()
        self._tail = b""
        self._missed = 0
        self.used = 0   # folders whose answer the walk took

    def vouched(self, rel: str, chunk: int, files: int) -> bool:
        if not self._tried:
            self._start()
        key = (rel, chunk)
        if key not in self._answers:
            if self._fd is None:
                return False
            self._missed += files
            if self._missed < self._look_every:
                return False
            self._missed = 0
            self._read_answers()
            if key not in self._answers:
                return False
        self.used += 1
        return True

    def _start(self) -> None:
        self._tried = True
        read_end, write_end = os.pipe()
        try:
            pid = self._fork()
        except OSError:
            pid = None
        if pid == 0:   # the child: never returns
            try:
                os.close(read_end)
                _answer(self._root, self._known, write_end, self.chunk_files)
            finally:
                os._exit(0)
        os.close(write_end)
        if pid is None:
            os.close(read_end)
            return
        os.set_blocking(read_end, False)
        self._pid, self._fd = pid, read_end

    def _read_answers(self) -> None:
        """Take what the child has written so far (never waiting for more)."""
        assert self._fd is not None
        chunks = [self._tail]
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:   # the child is done (or dead): a last answer cut short is dropped
                os.close(self._fd)
                self._fd = None
                break
            chunks.append(data)
        *whole, self._tail = b"".join(chunks).split(b"\0")
        for answer in whole:
            chunk, _, rel = answer.partition(b"\1")
            self._answers.add((os.fsdecode(rel), int(chunk)))

    def close(self) -> None:
        """End and reap the child (whatever it is doing), close the pipe."""
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(self._pid, 0)
            except OSError:
                pass
            self._pid = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Split:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _answer(root: str, known: Callable[[str], Known | None], out: int, chunk_files: int
            ) -> None:
    """The child: each folder in order of names (the parent's last first), from the cache, and
    each chunk of its files from the last; a chunk is written to `out` (its number, 0x01, the
    folder, NUL) when the folder's stat is the recorded one and each file's stat packs to its
    entry. Stops at the end, or when the parent is gone."""
    stack = [""]
    found: list[bytes] = []
    pending = 0
    step = ENTRY.size
    while stack:
        rel = stack.pop()
        entry = known(rel)
        if entry is None:
            continue
        prefix = rel + "/" if rel else ""
        stack.extend(prefix + name for name in reversed(entry.subdirs))
        entries, names = entry.entries, entry.files
        if entries is None or not names:
            continue
        disk = disk_path(root, rel)
        try:
            # A folder whose stat moved is read again by the walk: not worth checking. (Where
            # folder times never move, or were taken too close to the save, the walk reads
            # the names again and may take the answers all the same.)
            if entry.stamp[:PART] != UNTRUSTED and stat_part(os.lstat(disk)) != entry.stamp[:PART]:
                continue
            fd = os.open(disk, FOLDER_FLAGS)
        except OSError:
            continue
        encoded = os.fsencode(rel)
        try:
            for start in reversed(range(0, len(names), chunk_files)):
                part = names[start:start + chunk_files]
                was = entries[start * step:(start + len(part)) * step]
                now = bytearray(was)
                try:
                    pack_stats(now, part, fd, 0)
                except OSError:
                    break
                if now != was:
                    continue
                found.append(b"%d\1%s\0" % (start // chunk_files, encoded))
                pending += len(part)
                if pending >= _ANSWER_EVERY_FILES:
                    _write(out, found)
                    found, pending = [], 0
        finally:
            os.close(fd)
    _write(out, found)


def _write(out: int, found: list[bytes]) -> None:
    data = b"".join(found)
    while data:
        written = os.write(out, data)   # the parent gone: BrokenPipeError ends the child
        data = data[written:]

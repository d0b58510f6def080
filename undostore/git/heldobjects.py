"""Objects held in memory instead of written: what a read-only command's look at the files
makes (snapshot/snapshot.py with `read_only`). `HeldWriter` takes objects as a `PackWriter` does
and keeps them in a `Held` map the store's readers consult first (git/reader.py), so `show` and
`diff` compare with the files now on a store they may not write, and write nothing to one
they may. Only what changed since the last recorded snapshot is hashed and held: the stat
cache vouches for the rest."""

from __future__ import annotations

from collections.abc import Iterable

from undostore.git.packwriter import PackStats

Held = dict[bytes, tuple[int, bytes]]   # raw id -> (type number, body)


class HeldTooMuch(Exception):
    """The look would hold more new content in memory than its budget allows."""


class HeldWriter:
    """A `PackWriter` that writes nothing: each object goes into `held`, up to `budget` bytes
    (HeldTooMuch past it: a look at a tree whose files changed wholesale since the last
    recorded snapshot, or that has none, must not hold them all in memory)."""

    def __init__(self, held: Held, budget: int) -> None:
        self.held = held
        self.budget = budget
        self.stats = PackStats()

    def __contains__(self, sha: bytes) -> bool:
        return sha in self.held

    def __len__(self) -> int:
        return len(self.held)

    def add(self, type_num: int, sha: bytes, data: bytes) -> None:
        if sha not in self.held:
            if self.stats.raw_bytes + len(data) > self.budget:
                raise HeldTooMuch(self.budget)
            self.held[sha] = (type_num, bytes(data))
            self.stats.objects += 1
            self.stats.raw_bytes += len(data)

    def add_stream(self, type_num: int, sha: bytes, size: int, chunks: Iterable[bytes]) -> None:
        if self.stats.raw_bytes + size > self.budget:
            raise HeldTooMuch(self.budget)
        self.add(type_num, sha, b"".join(chunks))

    def checkpoint(self) -> str | None:
        return None

    def commit(self) -> str | None:
        return None

    def abort(self) -> None:
        pass

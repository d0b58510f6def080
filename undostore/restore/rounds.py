"""When a restore's file work moves to threads (writers.py, reclaim.py): the operations are
timed a round of a few at a time, and a round whose operations took a set time or more each
says the kernel's work per file is large here. Rounds, not one probe at the start: the first
folders of a restore can be cheaper than the later ones."""

from __future__ import annotations


class SlowRounds:
    """Counts operations in rounds of `size`; `add` says when a whole round took `bound`
    seconds or more per operation."""

    def __init__(self, size: int, bound: float) -> None:
        self.size, self.bound = size, bound
        self._spent = 0.0
        self._count = 0

    def add(self, seconds: float) -> bool:
        """One more operation, which took `seconds`: True if it ends a slow round."""
        self._spent += seconds
        self._count += 1
        if self._count < self.size:
            return False
        slow = self._spent >= self.bound * self._count
        self._spent, self._count = 0.0, 0   # timed again over the next round
        return slow

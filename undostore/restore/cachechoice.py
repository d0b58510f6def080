"""Whether a restore loads the stat cache, or checks the few files it touches by hashing them.

The checkout asks, before replacing or deleting a file, whether it still holds what the safety
snapshot saw; the stat cache answers without reading the file, and afterwards the restore records
what it wrote there. Both cost the whole cache: loading the ~75,000 entries of an npm tree takes
~0.1 s and saving it again ~0.1 s, while hashing a small file takes ~50 us. For a restore that
touches a few files (an undo of one turn) the cache does not pay: the files it writes are racy
anyway (written moments before the save, so recorded without their stat and hashed by the next
snapshot all the same). So up to `HASH_AT_MOST` touched paths the restore neither loads nor saves
the cache; the entries it leaves are those of the safety snapshot, whose stats the restore's
writes no longer match (new inodes), so the next snapshot hashes those files and rebuilds their
folders' trees, exactly as it would have.

Windows always loads it: the disk has no exec bit there, so the next snapshot takes a restored
file's mode from the entry the restore records.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from undostore.platform import IS_WINDOWS
from undostore.store.statcache import StatCache

if TYPE_CHECKING:
    from undostore.restore.plan import RestorePlan

HASH_AT_MOST = 256


def uses_cache(plan: RestorePlan, windows: bool = IS_WINDOWS) -> bool:
    """Whether the restore of `plan` should load (and later save) the stat cache."""
    touched = len(plan.create) + len(plan.modify) + len(plan.delete) + len(plan.chmod)
    return windows or touched > HASH_AT_MOST


def cache_for(plan: RestorePlan, cache_path: str, identity: str,
              windows: bool = IS_WINDOWS) -> tuple[StatCache, bool]:
    """(the cache to check files with, whether to record the written files in it afterwards):
    the loaded cache, or an empty one that makes every check hash the file."""
    if uses_cache(plan, windows):
        return StatCache.load(cache_path, identity), True
    return StatCache(identity=identity), False


def cache_path(cache_dir: str) -> str:
    return os.path.join(cache_dir, "statcache")

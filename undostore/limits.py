"""The batch and size limits snapshots and restores work in, as one record a caller passes in.

The defaults are the measured ones (docs/design.md, "Limits"). Tests pass small ones to take,
with a few files, the paths a big tree takes: many hashing batches, a stat cache in many parts,
big folders spliced from their old trees, a restore that reloads the stat cache, a watchman
that stops answering.
"""

from __future__ import annotations

from typing import NamedTuple


class Limits(NamedTuple):
    hash_batch_files: int = 4096       # files the walk hands over to the hashing at a time
    pool_task_files: int = 64          # files per task of a hashing thread
    cache_part_folders: int = 64       # folders per part of the saved stat cache
    splice_min_files: int = 1024       # a changed folder this big is spliced from its old tree
    splice_max_inserts: int = 16       # past this many new names, a spliced tree is re-encoded
    restore_hash_at_most: int = 256    # a restore touching more paths uses the stat cache
    watchman_timeout_s: float = 5.0    # a watchman reply slower than this means a full walk
    checkpoint_s: float = 5.0          # a first snapshot keeps what it hashed this often
    look_held_bytes: int = 512 << 20   # new content a read-only look may hold in memory
    split_lstat_min_files: int = 10_000   # a walk this big lstats in two processes, if allowed
    split_chunk_files: int = 1024      # ... and shares out a folder's files in runs this long


DEFAULT_LIMITS = Limits()

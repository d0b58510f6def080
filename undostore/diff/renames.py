"""Rename detection for `diff --find-renames`, following git's `diff -M` (50% similarity).

A deleted path and an added path become one rename when their blobs are identical (score 100),
or, for regular files, when enough of the new file's bytes come from the old one. Similarity is
measured the way git does: both files are cut into spans (at each newline, or every 64 bytes),
each span is hashed, and the bytes of spans common to both count as copied; score = copied bytes
/ size of the larger file. Candidates are taken in git's order: identical blobs first (same file
name preferred), then pairs whose file names are unique and equal (at 75%), then the best of the
rest, most similar first. Comparing every deleted file with every added one is skipped when there
are more than 1,000 x 1,000 pairs, as git does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from undostore.diff.change import Change
from undostore.diff.content import BIG_FILE

if TYPE_CHECKING:
    from undostore.git.reader import ObjectReader
    from undostore.store.store import Store

MAX_SCORE = 60000
MIN_SCORE = 30000                                      # 50%
BASENAME_MIN_SCORE = MIN_SCORE + (MAX_SCORE - MIN_SCORE) // 2
RENAME_LIMIT = 1000
CANDIDATES_PER_ADDED = 4
_HASHBASE = 107927
_U32 = 0xFFFFFFFF
_REGULAR = 0o100000
_TYPE_MASK = 0o170000


def _is_regular(mode: int | None) -> bool:
    return mode is not None and (mode & _TYPE_MASK) == _REGULAR


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class _Similarity:
    """Span counts of blobs, read and computed once per blob."""

    def __init__(self, reader: ObjectReader) -> None:
        self.reader = reader
        self.spans: dict[str, tuple[int, dict[int, int]]] = {}

    def of(self, hex_id: str) -> tuple[int, dict[int, int]]:
        got = self.spans.get(hex_id)
        if got is None:
            sha = bytes.fromhex(hex_id)
            size = self.reader.size_of(sha)
            if size > BIG_FILE:       # not worth reading: counts as sharing nothing
                got = (size, {})
            else:
                data = self.reader.read_blob(sha)
                got = (len(data), span_counts(data))
            self.spans[hex_id] = got
        return got

    def score(self, old: Change, new: Change) -> int:
        """git's similarity score (0..MAX_SCORE) of old's blob to new's; 0 unless both regular."""
        if not (_is_regular(old.old_mode) and _is_regular(new.new_mode)):
            return 0
        assert old.old_id is not None and new.new_id is not None
        old_size, old_spans = self.of(old.old_id)
        new_size, new_spans = self.of(new.new_id)
        max_size, base_size = max(old_size, new_size), min(old_size, new_size)
        if max_size * (MAX_SCORE - MIN_SCORE) < (max_size - base_size) * MAX_SCORE:
            return 0
        if not new_size:
            return 0
        copied = sum(min(count, new_spans.get(h, 0)) for h, count in old_spans.items())
        return copied * MAX_SCORE // max_size


def span_counts(data: bytes) -> dict[int, int]:
    """Bytes per span hash (spans end at a newline or after 64 bytes; CR of CRLF is skipped in
    text)."""
    is_text = b"\0" not in data[:8000]
    counts: dict[int, int] = {}
    a1 = a2 = n = 0
    last = len(data) - 1
    for at, c in enumerate(data):
        if c == 13 and is_text and at < last and data[at + 1] == 10:
            continue
        old1 = a1
        a1 = (((a1 << 7) ^ (a2 >> 25)) + c) & _U32
        a2 = ((a2 << 7) ^ (old1 >> 25)) & _U32
        n += 1
        if n < 64 and c != 10:
            continue
        h = ((a1 + a2 * 0x61) & _U32) % _HASHBASE
        counts[h] = counts.get(h, 0) + n
        a1 = a2 = n = 0
    if n:
        h = ((a1 + a2 * 0x61) & _U32) % _HASHBASE
        counts[h] = counts.get(h, 0) + n
    return counts


def detect_renames(store: Store, reader: ObjectReader, changes: list[Change]) -> list[Change]:
    """`changes` with deleted+added pairs that are renames merged into `R<score>` entries, each
    at the added path's place."""
    deleted = [c for c in changes if c.status == "D"]
    added = [c for c in changes if c.status == "A"]
    if not deleted or not added:
        return changes
    pairs: dict[int, tuple[Change, int]] = {}     # id(added change) -> (deleted change, score)
    used: set[int] = set()

    def record(new: Change, old: Change, score: int) -> None:
        pairs[id(new)] = (old, score)
        used.add(id(old))

    _exact(deleted, added, record, used)
    similarity = _Similarity(reader)
    _same_basename(deleted, added, pairs, used, similarity, record)
    _best_of_rest(deleted, added, pairs, used, similarity, record)
    if not pairs:
        return changes
    out: list[Change] = []
    for change in changes:
        if change.status == "D" and id(change) in used:
            continue
        if change.status == "A" and id(change) in pairs:
            old, score = pairs[id(change)]
            change = _renamed(store, old, change, score)
        out.append(change)
    return out


def _exact(deleted: list[Change], added: list[Change], record, used: set[int]) -> None:  # noqa: ANN001
    by_blob: dict[str | None, list[Change]] = {}
    for old in deleted:
        by_blob.setdefault(old.old_id, []).append(old)
    for new in added:
        best, best_score = None, -1
        for old in by_blob.get(new.new_id, ()):
            if id(old) in used:
                continue
            both_regular = _is_regular(old.old_mode) and _is_regular(new.new_mode)
            if not both_regular and old.old_mode != new.new_mode:
                continue
            score = 1 + (_basename(old.path) == _basename(new.path))
            if score > best_score:
                best, best_score = old, score
                if score == 2:
                    break
        if best is not None:
            record(new, best, MAX_SCORE)


def _same_basename(deleted: list[Change], added: list[Change], pairs: dict, used: set[int],  # noqa: ANN001
                   similarity: _Similarity, record) -> None:
    """Pairs whose file name is unique on both sides and equal, when at least 75% similar."""
    def unique(changes: list[Change]) -> dict[str, Change | None]:
        names: dict[str, Change | None] = {}
        for change in changes:
            base = _basename(change.path)
            names[base] = None if base in names else change
        return names

    olds = unique([c for c in deleted if id(c) not in used])
    news = unique([c for c in added if id(c) not in pairs])
    for base, old in olds.items():
        new = news.get(base)
        if old is None or new is None or id(new) in pairs:
            continue
        score = similarity.score(old, new)
        if score >= BASENAME_MIN_SCORE:
            record(new, old, score)


def _best_of_rest(deleted: list[Change], added: list[Change], pairs: dict, used: set[int],  # noqa: ANN001
                  similarity: _Similarity, record) -> None:
    olds = [c for c in deleted if id(c) not in used]
    news = [c for c in added if id(c) not in pairs]
    if not olds or not news:
        return
    if len(olds) * len(news) > RENAME_LIMIT * RENAME_LIMIT:
        return
    candidates: list[tuple[int, int, int, Change, Change]] = []
    order = 0
    for new in news:
        best: list[tuple[int, int, int, Change, Change]] = []
        for old in olds:
            score = similarity.score(old, new)
            entry = (score, int(_basename(old.path) == _basename(new.path)), order, old, new)
            order += 1
            best.append(entry)
            best.sort(key=lambda e: (-e[0], -e[1], e[2]))
            del best[CANDIDATES_PER_ADDED:]
        candidates.extend(best)
    candidates.sort(key=lambda e: (-e[0], -e[1]))
    for score, _, _, old, new in candidates:
        if score < MIN_SCORE:
            break
        if id(new) in pairs or id(old) in used:
            continue
        record(new, old, score)


def _renamed(store: Store, old: Change, new: Change, score: int) -> Change:
    change = Change(f"R{score * 100 // MAX_SCORE:03d}", new.path, old.path, old.old_mode,
                    new.new_mode, old.old_id, new.new_id)
    change.source = store
    return change

"""Reading objects from a pack folder: membership, whole reads and streams, every one hash-checked.

`ObjectReader` opens every complete pack (packfile.Pack: a pack that fails its open checks is
left out and listed in `damaged_packs`) and looks objects up in their indexes. Whole records are
inflated straight from the mmapped pack, in chunks for large blobs; delta records (never written
by undostore, possible in a foreign pack) are resolved by dulwich, here and nowhere else.
A copy that fails its checks is reported to `on_damage` and the next pack holding the object is
tried; copies listed in `skip` are never used. A stream checks its hash after its last chunk:
callers must not expose streamed bytes before the stream has ended.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple, Protocol

from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import BLOB, CHUNK, TREE, decode_tree, object_header
from undostore.git.packfile import (
    DELTAS,
    RELEASE_AFTER,
    Pack,
    PackDamaged,
    Record,
    RecordDamaged,
    complete_packs,
)
from undostore.git.packindex import PackIndexFile

OnDamage = Callable[[bytes, str, str], None]     # (id, pack name, why)


class BlobAt(NamedTuple):
    """Where a checked blob's stream lies (`verify_blobs`), so reading it looks nothing up
    again; `pack` None: it is read the careful way (a delta, or a copy found by trying)."""

    pack: Pack | None
    start: int
    size: int


class PackSource(Protocol):
    """What a reader asks of a store (`store.Store`): its pack folder, the copies already found
    damaged (never used again) and where to report a copy that fails its checks."""

    pack_dir: str

    def damaged_copies(self) -> set[tuple[bytes, str]]: ...

    def note_damage(self, sha: bytes, pack: str, why: str) -> None: ...


class ObjectReader:
    """Objects of one pack folder; open it after the last write you need to see, close it when
    done. `source`: a store (its damage record is used and kept up to date) or a bare pack
    folder (damage goes only to `on_damage`)."""

    def __init__(self, source: str | PackSource, on_damage: OnDamage | None = None,
                 skip: set[tuple[bytes, str]] | None = None,
                 release_after: int = RELEASE_AFTER) -> None:
        # Objects a read-only look at the files holds in memory (heldobjects.py), read first
        # (never counted as stored: `__contains__`); the store's own map, so what is held
        # after this reader opened is seen too.
        self.held: dict[bytes, tuple[int, bytes]] = {}
        if isinstance(source, str):
            self.pack_dir = source
        else:
            self.pack_dir = source.pack_dir
            self.held = getattr(source, "held", self.held)
            on_damage = on_damage or source.note_damage
            skip = source.damaged_copies() if skip is None else skip
        self.on_damage = on_damage
        self.release_after = release_after   # bytes read from a pack between page releases
        self.skip: set[tuple[bytes, str]] = skip or set()
        self.packs: dict[str, Pack] = {}
        self.damaged_packs: dict[str, str] = {}     # base path -> why
        # The packs in the order lookups try them: the one that last held an object first (as
        # git does), since a snapshot's objects mostly lie in one pack and a store holds a pack
        # per snapshot between gcs (docs/design.md, "Figures behind constants").
        # A snapshot's hashing threads look up through one reader: the list is never changed in
        # place, only replaced (under `_order_lock`), so a lookup walks a whole list.
        self._order: list[Pack] = []
        self._order_lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        """See the packs as they are now (another process may have written or repacked)."""
        wanted = set(complete_packs(self.pack_dir))
        for gone in set(self.packs) - wanted:
            self.packs.pop(gone).close()
        self.damaged_packs = {b: why for b, why in self.damaged_packs.items() if b in wanted}
        for base in sorted(wanted - set(self.packs) - set(self.damaged_packs)):
            try:
                self.packs[base] = Pack(base, release_after=self.release_after)
            except FileNotFoundError:
                continue   # removed since the listing (a concurrent gc)
            except (PackDamaged, OSError, ValueError) as err:
                self.damaged_packs[base] = str(err)
        self._reorder()

    def _reorder(self) -> None:
        """`_order` for the packs open now, keeping the order of those it already had."""
        with self._order_lock:
            kept = [pack for pack in self._order if self.packs.get(pack.base) is pack]
            known = {id(pack) for pack in kept}
            self._order = kept + [p for p in self.packs.values() if id(p) not in known]

    def set_aside(self, base: str, why: str) -> None:
        """Stop using a pack found damaged after it was opened (closed, listed as damaged)."""
        pack = self.packs.pop(base, None)
        if pack is not None:
            pack.close()
        self.damaged_packs[base] = why
        self._reorder()

    # --- membership -----

    def _lookup(self, sha: bytes) -> tuple[Pack, int] | None:
        """(the first pack listing `sha`, its position there), that pack moved to the front;
        copies set aside are not looked at (callers take `_copies` when there are any)."""
        for at, pack in enumerate(self._order):
            position = pack.index.position(sha)
            if position is not None:
                if at:
                    self._to_front(pack)
                return pack, position
        return None

    def _to_front(self, pack: Pack) -> None:
        with self._order_lock:
            now = self._order
            if now and now[0] is not pack and any(p is pack for p in now):
                self._order = [pack, *(p for p in now if p is not pack)]

    def _copies(self, sha: bytes, skipped: list[str] | None = None
                ) -> Iterator[tuple[Pack, int]]:
        """The usable copies of `sha`; the packs of skipped ones go to `skipped`."""
        for pack in self._order:   # (replaced, never changed in place: no copy needed)
            position = pack.index.position(sha)
            if position is None:
                continue
            if self.skip and (sha, pack.name) in self.skip:
                if skipped is not None:
                    skipped.append(pack.name)
                continue
            yield pack, position

    def __contains__(self, sha: bytes) -> bool:
        """Whether the packs hold `sha`. Objects held in memory do not count: a snapshot that
        records must write them (they are read, never vouched for)."""
        if not self.skip:
            return self._lookup(sha) is not None
        return next(self._copies(sha), None) is not None

    has = __contains__

    def indexes(self) -> list[PackIndexFile]:
        return [pack.index for pack in self.packs.values()]

    def pack_names(self) -> set[str]:
        """Base names (`pack-<sha>`) of the packs that passed their checks."""
        return {pack.name for pack in self.packs.values()}

    def object_ids(self) -> Iterator[bytes]:
        for pack in self.packs.values():
            yield from pack.index.names()

    def record_of(self, sha: bytes) -> tuple[Pack, Record] | None:
        """Where the first usable copy of `sha` lies."""
        for pack, _ in self._copies(sha):
            return pack, pack.record_of(sha)
        return None

    # --- reading -----

    def _damage(self, sha: bytes, pack: Pack, why: str) -> None:
        self.skip.add((sha, pack.name))
        if self.on_damage is not None:
            self.on_damage(sha, pack.name, why)

    def _open(self, sha: bytes) -> tuple[Pack, int, int, int] | None:
        """(pack, stream start, type, size) of the first copy whose header reads; None if
        absent. Raises if every copy is damaged."""
        if not self.skip:   # the common case: the first pack listing it
            found = self._lookup(sha)
            if found is None:
                return None
            pack, position = found
            offset = pack.index.offset_at(position)
            try:
                type_num, size, header_len = pack.header(offset)
                return pack, offset + header_len, type_num, size
            except RecordDamaged:
                pass   # the careful way below reports it and tries other copies
        why = ""
        skipped: list[str] = []
        for pack, position in list(self._copies(sha, skipped)):
            offset = pack.index.offset_at(position)
            try:
                type_num, size, header_len = pack.header(offset)
            except RecordDamaged as err:
                why = str(err)
                self._damage(sha, pack, why)
                continue
            return pack, offset + header_len, type_num, size
        if why or skipped:
            raise _damaged(sha, why or f"its copy in {skipped[0]} failed a check before")
        return None

    def _whole(self, sha: bytes, want: int | None = None,
               first: tuple[Pack, int, int, int] | None = None) -> tuple[int, bytes]:
        """(type, body), hash-checked, trying each copy in turn (`first`: the `_open` of the
        first one, when the caller has it); an intact object of another type than `want` is
        refused without counting as damage."""
        held = self.held.get(sha)
        if held is not None:
            if want is not None and held[0] != want:
                raise _damaged(sha, f"expected a {'tree' if want == TREE else 'blob'}")
            return held
        while True:
            found, first = first or self._open(sha), None
            if found is None:
                raise _missing(sha)
            pack, start, type_num, size = found
            try:
                if type_num in DELTAS:
                    type_num, body = _delta(pack, sha)
                elif size <= CHUNK:
                    body = pack.inflate_whole(start, size)
                else:
                    body = b"".join(pack.inflate(start, size))
                _check(sha, type_num, body)
            except (RecordDamaged, PackDamaged) as err:
                self._damage(sha, pack, str(err))
                continue
            if want is not None and type_num != want:
                raise _damaged(sha, f"expected a {'tree' if want == TREE else 'blob'}")
            return type_num, body

    def type_of(self, sha: bytes) -> int | None:
        """The object's type from its record header (nothing inflated); None if absent."""
        if sha in self.held:
            return self.held[sha][0]
        found = self._open(sha)
        if found is None:
            return None
        return self._whole(sha)[0] if found[2] in DELTAS else found[2]

    def size_of(self, sha: bytes) -> int:
        if sha in self.held:
            return len(self.held[sha][1])
        found = self._open(sha)
        if found is None:
            raise _missing(sha)
        return len(self._whole(sha)[1]) if found[2] in DELTAS else found[3]

    def read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body), hash-checked; IncompleteSnapshotError if missing or damaged."""
        return self._whole(sha)

    def read_tree_body(self, sha: bytes) -> bytes:
        return self._whole(sha, TREE)[1]

    def read_tree(self, sha: bytes) -> list[tuple[int, bytes, bytes]]:
        body = self.read_tree_body(sha)
        try:
            return decode_tree(body)
        except ValueError as err:
            raise _damaged(sha, str(err)) from None

    def read_blob(self, sha: bytes) -> bytes:
        return self._whole(sha, BLOB)[1]

    def blob_head(self, sha: bytes, count: int) -> bytes:
        """A blob's first `count` bytes (all of a shorter one), the rest not inflated; its hash
        is not checked (that takes the whole blob): for a look at its kind, never for a
        restore."""
        head = b""
        chunks = self.blob_chunks(sha)
        try:
            for chunk in chunks:
                head += chunk
                if len(head) >= count:
                    break
        finally:
            chunks.close()
        return head[:count]

    def blob_chunks(self, sha: bytes, at: BlobAt | None = None) -> Iterator[bytes]:
        """A blob's bytes in chunks, in constant memory; the hash is checked after the last
        chunk (IncompleteSnapshotError there if it does not match). `at`: where
        `verify_blobs` found it."""
        if sha in self.held:
            yield self._whole(sha, BLOB)[1]
            return
        found = self._open(sha) if at is None or not self._usable(at) else (
            at.pack, at.start, BLOB, at.size)
        if found is None:
            raise _missing(sha)
        pack, start, type_num, size = found
        if type_num != BLOB:   # a delta, or not a blob at all (refused after its hash check)
            yield self._whole(sha, BLOB)[1]
            return
        check = hashlib.sha1(object_header(BLOB, size))
        try:
            for chunk in pack.inflate(start, size):
                check.update(chunk)
                yield chunk
        except RecordDamaged as err:
            self._damage(sha, pack, str(err))
            raise _damaged(sha, str(err)) from None
        if check.digest() != sha:
            self._damage(sha, pack, "its content does not hash to its id")
            raise _damaged(sha, "its content does not hash to its id")

    def small_blob(self, sha: bytes, at: BlobAt) -> bytes | None:
        """The blob `verify_blobs` found at `at`, inflated in one call and hash-checked, when
        it is small (at most CHUNK bytes) and its pack still in use; else None (stream it)."""
        if at.size > CHUNK or not self._usable(at):
            return None
        pack = at.pack
        assert pack is not None
        try:
            body = pack.inflate_whole(at.start, at.size)
            _check(sha, BLOB, body)
        except RecordDamaged as err:
            self._damage(sha, pack, str(err))
            raise _damaged(sha, str(err)) from None
        return body

    def _usable(self, at: BlobAt) -> bool:
        """Whether a location found earlier may still be read: no copy has been set aside
        since (then every read takes the careful way) and its pack is still open."""
        return (at.pack is not None and not self.skip
                and self.packs.get(at.pack.base) is at.pack)

    def verify_blobs(self, shas: Iterable[bytes]) -> dict[bytes, BlobAt]:
        """Check before a restore changes anything that each blob is present and its record
        intact: its header names a blob and its bytes have the CRC-32 its index lists (no
        inflate, nothing kept). A record failing that is checked in full (`verify_blob`: the
        damage reported, other copies tried, IncompleteSnapshotError when none is good). The
        hash of a blob that passed is checked as it is read (`blob_chunks`), so a pack
        written with a wrong id still fails, only later. Returns where each present blob
        lies; an absent one is left out (the caller names the paths that need it)."""
        located: dict[bytes, BlobAt] = {}
        for sha in shas:
            if sha in located:
                continue
            found = self._lookup(sha) if not self.skip else None
            if found is not None:
                pack, position = found
                offset = pack.index.offset_at(position)
                try:
                    type_num, size, header_len = pack.header(offset)
                except RecordDamaged:
                    type_num = -1
                if type_num == BLOB and pack.record_intact(position, offset):
                    located[sha] = BlobAt(pack, offset + header_len, size)
                    continue
            elif not self.skip or self._absent(sha):
                continue   # in no pack at all: left out, for the caller to name its paths
            located[sha] = BlobAt(None, -1, self.verify_blob(sha))
        return located

    def _absent(self, sha: bytes) -> bool:
        """No pack lists `sha`, set-aside copies included (those are damage, not absence)."""
        skipped: list[str] = []
        return next(self._copies(sha, skipped), None) is None and not skipped

    def verify_blob(self, sha: bytes) -> int:
        """Inflate and hash a blob without keeping it; returns its size."""
        return sum(len(chunk) for chunk in self.blob_chunks(sha))

    def close(self) -> None:
        for pack in self.packs.values():
            pack.close()
        self.packs.clear()
        with self._order_lock:
            self._order = []

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check(sha: bytes, type_num: int, body: bytes) -> None:
    """The one hash check of a whole object."""
    digest = hashlib.sha1(object_header(type_num, len(body)))
    digest.update(body)
    if digest.digest() != sha:
        raise RecordDamaged("its content does not hash to its id")


def _delta(pack: Pack, sha: bytes) -> tuple[int, bytes]:
    """A delta record's object, resolved by dulwich within its pack (the only delta path)."""
    from dulwich.object_format import SHA1
    from dulwich.pack import Pack as DulwichPack

    try:
        with DulwichPack(pack.base, object_format=SHA1) as whole:
            type_num, body = whole.get_raw(sha)
    except Exception as err:   # dulwich's own errors, zlib's, KeyError for a missing base
        raise RecordDamaged(f"delta does not resolve: {err}") from None
    return type_num, b"".join(body) if isinstance(body, list) else body


def _damaged(sha: bytes, why: str) -> IncompleteSnapshotError:
    return IncompleteSnapshotError(f"object {sha.hex()} is damaged in the store: {why}",
                                   corrupt=[sha.hex()])


def _missing(sha: bytes) -> IncompleteSnapshotError:
    return IncompleteSnapshotError(f"object {sha.hex()} is missing from the store",
                                   missing=[sha.hex()])

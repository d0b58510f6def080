"""One session's undo history: undo points (oldest first), a redo stack (next redo last), a cap.

Stored at `<store>/sessions/<encoded name>.journal`, rewritten whole and atomically with an xxhash
frame. A damaged journal never stops a snapshot: it is moved to `<name>.journal.damaged` and
salvaged (points that still parse, plus every snapshot the session's anchors hold); gc keeps all
the session's anchors until `verify --repair` accepts the salvage (`forget_damaged`) or `drop`
drops the session; `damage_notes` says so in one line. Session names are free text; file and ref
names percent-encode every byte outside `[a-z0-9_-]` (capitals too: case-insensitive file
systems) and the first letter of names Windows reserves (CON, NUL...).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from undostore import settings
from undostore.errors import StoreError, UsageError, from_oserror
from undostore.store import oplog
from undostore.store.framing import CorruptFrame, quarantine, read_framed, write_framed
from undostore.store.store import Store

if TYPE_CHECKING:
    from undostore.history.toolcall import CallNote, OpenCall

_KIND = b"JRNL"
_LEGACY_FORMAT = 1   # redo entries were the states undos left (read, then migrated: `load`)
_FORMAT = 2
SUFFIX = ".journal"
MAX_NAME_CHARS = 100
MAX_ENCODED_BYTES = 180
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                       *(f"lpt{i}" for i in range(10))})
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SessionWarning(UserWarning):
    """Something in a session was damaged and has been set aside (see the message)."""


# --- session names -------------------------------------------------------------------------------


def validate_name(name: str) -> str:
    """`name` if it can name a session; else UsageError saying why."""
    if not isinstance(name, str) or not name:
        raise UsageError("session name must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise UsageError(f"session name is longer than {MAX_NAME_CHARS} characters: {name[:20]!r}…")
    if _CONTROL.search(name):
        raise UsageError(f"session name contains a control character: {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"session name is not valid text: {name!r}") from None
    if len(encode_name(name)) > MAX_ENCODED_BYTES:
        raise UsageError(f"session name is too long once encoded for a file name: {name!r}")
    return name


def session_name_for(host_id: str) -> str:
    """The session a host's conversation id names: the id itself where it can name a session,
    else (over `MAX_NAME_CHARS`, half a character, a control character) a name made from it,
    the same on every event of the conversation: its readable start and a digest of the whole
    id, so two ids never share one. A host's id is taken as it comes; a person's `--session`
    is checked (`validate_name`)."""
    try:
        return validate_name(host_id)
    except UsageError:
        pass
    import hashlib

    digest = hashlib.sha256(host_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = _CONTROL.sub("\ufffd", oplog.whole_text(host_id))[:40] or "session"
    for cut in range(len(readable), -1, -1):   # the encoded file name has a limit in bytes
        name = f"{readable[:cut]}~{digest}"
        if len(encode_name(name)) <= MAX_ENCODED_BYTES:
            return name
    return digest


def encode_name(name: str) -> str:
    """A file-name- and ref-safe spelling of a session name (see the module docstring)."""
    raw = name.encode("utf-8")
    out = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)
    if out in _RESERVED:
        out = f"%{ord(out[0]):02X}{out[1:]}"
    return out


def decode_name(encoded: str) -> str | None:
    """The session name `encode_name` made `encoded` from, or None for a foreign name."""
    try:
        raw = bytearray()
        i = 0
        while i < len(encoded):
            ch = encoded[i]
            if ch == "%":
                raw.append(int(encoded[i + 1:i + 3], 16))
                i += 3
            else:
                raw.append(ord(ch))
                i += 1
        name = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    # Only the canonical spelling counts: anything else was not written by undostore.
    return name if name and encode_name(name) == encoded else None


# --- entries and the journal ---------------------------------------------------------------------


NO_META: Mapping[str, Any] = MappingProxyType({})   # a point's meta when the host gave none


class Cut(NamedTuple):
    """Where hunks picked of a turn's change (`undo -p`, `redo -p`) split its change of some
    files between the turn's entry on the undo stack and the one on the redo stack: `paths`,
    those files, and `trees`, per pair of trees of the turn's change (`own`, else its point to
    its end), a tree holding each of them as it is at the cut. The undo stack's entry holds
    each pair's change of them up to the cut, the redo stack's from the cut on."""

    paths: frozenset[str]
    trees: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"paths": sorted(self.paths), "trees": list(self.trees)}

    @classmethod
    def from_json(cls, doc: Any) -> Cut:
        """The cut `to_json` wrote; ValueError for anything else."""
        if not (isinstance(doc, dict) and isinstance(doc.get("paths"), list) and doc["paths"]
                and all(isinstance(path, str) for path in doc["paths"])
                and isinstance(doc.get("trees"), list)
                and all(isinstance(x, str) and _HEX40.match(x) for x in doc["trees"])):
            raise ValueError("bad cut")
        return cls(frozenset(doc["paths"]), tuple(doc["trees"]))


class Point(NamedTuple):
    """A turn of a session: its undo point (the files as the turn began) and what the host said
    about it. On the undo stack it is a turn that `undo` may take back; on the redo stack the
    same record, a turn `redo` may apply again (undo and redo move it, never change it)."""

    id: str
    time: float
    label: str | None = None
    meta: Mapping[str, Any] = NO_META
    # The files after the turn (`show`, `diff --turn`, `revert`, `undo` compare with it): set
    # by the host's after-turn event (`Stop`), else by the next snapshot any session of the
    # store records or any restore takes (`Journal.close_turn`); None while the turn is open.
    after: str | None = None
    # Whether `after` is final: the host's after-turn event said so, or the session moved on
    # (a point of its own, an undo or redo). A provisional `after` (another session's point)
    # gives way to the host's after-turn event.
    ended: bool = False
    # The turn's own change where its host reports tool calls (history/attribution.py): pairs
    # of trees (before, after), oldest first, that differ only where its calls changed files;
    # None: the host reported none, and the turn is what changed from `id` to `after`.
    own: tuple[tuple[str, str], ...] | None = None
    open_calls: tuple[OpenCall, ...] = ()   # its calls whose after event has not come yet
    calls: int = 0                          # its calls that finished and were counted
    # Files its shell calls changed while another session's call ran too, each with
    # those sessions: whose change it was is in doubt (history/attribution.py).
    doubt: tuple[tuple[str, tuple[str, ...]], ...] = ()
    notes: tuple[CallNote, ...] = ()   # its calls that changed files, oldest first
    # The paths of the turn's change this entry does not hold: an undo or redo of some paths
    # (`undo -- PATH`) took them to the other stack, where an entry of the same turn holds
    # them; empty: the whole change. Never every path it changed.
    left_out: frozenset[str] = frozenset()
    # Files the turn's two entries both hold part of (hunks picked): where their change is cut.
    cut: Cut | None = None

    @property
    def changed(self) -> bool:
        """Whether the turn changed files (an open turn may have: it counts; a call still
        running may have)."""
        if self.own is not None:
            return any(before != after for before, after in self.own) or bool(self.open_calls)
        return self.after != self.id

    @property
    def by_calls(self) -> bool:
        """Whether the turn is its tool calls' changes (`own`), not a window of time."""
        return self.own is not None

    @property
    def partial(self) -> bool:
        """Whether this entry holds only part of its turn's change (`left_out`, `cut`)."""
        return bool(self.left_out) or self.cut is not None

    def same_turn(self, other: Point) -> bool:
        """Whether `other` is an entry of this one's turn (the two parts of a turn that an
        undo or redo of some paths split: equal but for what each leaves out)."""
        return (self._replace(left_out=frozenset(), cut=None)
                == other._replace(left_out=frozenset(), cut=None))

    def ids(self) -> set[str]:
        """The snapshot and tree ids this point lists (what its anchors must keep)."""
        found = {self.id} | ({self.after} if self.after else set())
        found.update(sha for pair in self.own or () for sha in pair)
        found.update(call.before for call in self.open_calls)
        found.update(sha for note in self.notes for sha in (note.before, note.after) if sha)
        found.update(self.cut.trees if self.cut else ())
        return found

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "time": self.time, "label": self.label, "meta": dict(self.meta),
                "after": self.after, "left_out": sorted(self.left_out),
                "cut": self.cut.to_json() if self.cut else None}


class Dropped(NamedTuple):
    """What left a journal: redo entries a turn that changed files cleared, the oldest undo
    points past the cap. Both stay restorable for a day through the operation log."""

    cleared: list[Point]
    expired: list[Point]


class Journal:
    """A session's undo points (oldest first) and redo stack (bottom first; last = the next
    redo), as its journal file holds them. A plain slotted class: the per-prompt hook loads
    one, and dataclasses would cost it their import (docs/design.md, "Start-up")."""

    __slots__ = ("name", "undo", "redo", "recorded", "last_step", "legacy_redo", "stepped")

    def __init__(self, name: str, undo: list[Point] | None = None,
                 redo: list[Point] | None = None, recorded: int = 0, last_step: str = "",
                 legacy_redo: list[Point] | None = None, stepped: float = 0.0) -> None:
        self.name = name
        self.undo: list[Point] = undo if undo is not None else []
        self.redo: list[Point] = redo if redo is not None else []
        self.recorded = recorded            # points ever recorded (drives auto gc)
        # The token of the last undo/redo applied: a restore that finishes after a crash
        # applies its step through sessions.finish_step, and this keeps that from happening
        # twice.
        self.last_step = last_step
        # Redo entries of a journal written before turns were kept whole (format 1): they name
        # states, not turns, and leave through the operation log on the next write (`load`).
        self.legacy_redo: list[Point] = legacy_redo if legacy_redo is not None else []
        # When the last undo or redo of the session was applied (0: never): with its points'
        # times, the session's last activity, which picks the session plain `redo` acts on.
        self.stepped = stepped

    def __repr__(self) -> str:
        return (f"Journal({self.name!r}, undo={self.undo!r}, redo={self.redo!r}, "
                f"recorded={self.recorded}, last_step={self.last_step!r})")

    def copy(self) -> Journal:
        """An independent copy (its points are immutable records: the lists are copied)."""
        return Journal(self.name, list(self.undo), list(self.redo), self.recorded,
                       self.last_step, list(self.legacy_redo), self.stepped)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Journal):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in Journal.__slots__)

    __hash__ = None  # type: ignore[assignment]   # mutable

    def ids(self) -> set[str]:
        """Every snapshot id this journal lists (what its anchors must keep)."""
        return {sha for p in (*self.undo, *self.redo, *self.legacy_redo) for sha in p.ids()}

    def record(self, point: Point, limit: int) -> Dropped:
        """Add an undo point (the newest turn must be closed first: `close_turn`); the oldest
        points beyond `limit` go. The redo stack stays: only a turn that changes files ends it,
        once its files are known. Returns what left the journal."""
        self.undo.append(point)
        expired = self.undo[:max(0, len(self.undo) - limit)]
        del self.undo[:len(expired)]
        self.recorded += 1
        return Dropped([], expired)

    def close_turn(self, after_id: str, *, final: bool) -> list[Point]:
        """Record the files after the newest turn. `final`: the host's after-turn event, or
        the session moving on; it replaces a provisional end (another session's point) and
        nothing replaces it. Not final: only an open turn takes it. A turn found to have
        changed files ends the redo chain: the cleared entries are returned (for `ops`)."""
        if not self.undo or self.undo[-1].ended:
            return []
        newest = self.undo[-1]
        if not final and newest.after is not None:
            return []
        self.undo[-1] = newest = newest._replace(after=after_id, ended=final)
        if not newest.changed or not self.redo:
            return []
        cleared, self.redo = self.redo, []
        return cleared

    @property
    def undoable(self) -> int:
        """How many turns `undo N` may take back: the turns that changed files."""
        return sum(p.changed for p in self.undo)

    # --- serialisation -----

    def to_bytes(self) -> bytes:
        doc = {"format": _FORMAT, "session": self.name, "recorded": self.recorded,
               "last_step": self.last_step, "stepped": self.stepped,
               "undo": [_point_doc(p) for p in self.undo],
               "redo": [_point_doc(p) for p in self.redo]}
        # ASCII: a host's event id in `meta` may hold half a character, kept exactly as \uXXXX
        return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("ascii")

    @classmethod
    def from_bytes(cls, name: str, payload: bytes) -> Journal:
        """Parse a journal; ValueError when it is not a well-formed journal of `name`."""
        doc = json.loads(payload.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("format") not in (_LEGACY_FORMAT, _FORMAT):
            raise ValueError("unknown journal format")
        if doc.get("session") != name:
            raise ValueError("journal belongs to another session")
        recorded = doc.get("recorded")
        if not isinstance(recorded, int) or recorded < 0:
            raise ValueError("bad counter")
        undo, redo = doc.get("undo"), doc.get("redo")
        if not isinstance(undo, list) or not isinstance(redo, list):
            raise ValueError("bad lists")
        last_step = doc.get("last_step", "")
        if not isinstance(last_step, str):
            raise ValueError("bad step token")
        stepped = doc.get("stepped", 0.0)   # absent in journals written before it
        stepped = float(stepped) if isinstance(stepped, (int, float)) and stepped >= 0 else 0.0
        if doc["format"] == _LEGACY_FORMAT:   # its redo entries name states, not turns
            return cls(name, [_point_from(d) for d in undo], [], recorded, last_step,
                       [_point_from(d) for d in redo], stepped)
        return cls(name, [_point_from(d) for d in undo], [_point_from(d) for d in redo], recorded,
                   last_step, stepped=stepped)


def _point_doc(p: Point) -> dict[str, Any]:
    doc = p.to_json()
    if p.after is None:
        del doc["after"]
    if p.ended:
        doc["ended"] = True
    if p.own is not None:
        doc["own"] = [list(pair) for pair in p.own]
        doc["calls"] = p.calls
    if p.open_calls:
        doc["open_calls"] = [c.to_json() for c in p.open_calls]
    if p.doubt:
        doc["doubt"] = [[path, list(others)] for path, others in p.doubt]
    if p.notes:
        doc["notes"] = [note.to_json() for note in p.notes]
    if not p.left_out:
        del doc["left_out"]
    if p.cut is None:
        del doc["cut"]
    return doc


def _point_from(doc: Any) -> Point:
    if not isinstance(doc, dict):
        raise ValueError("entry is not an object")
    sha, when, label, meta = doc.get("id"), doc.get("time"), doc.get("label"), doc.get("meta", {})
    after, ended = doc.get("after"), doc.get("ended", False)
    if not isinstance(sha, str) or not _HEX40.match(sha):
        raise ValueError("bad id")
    if after is not None and not (isinstance(after, str) and _HEX40.match(after)):
        raise ValueError("bad after-turn id")
    if not _is_time(when):
        raise ValueError("bad time")
    if not isinstance(ended, bool):
        raise ValueError("bad turn end")
    if label is not None and not isinstance(label, str):
        raise ValueError("bad label")
    if not isinstance(meta, dict):
        raise ValueError("bad meta")
    own, calls = doc.get("own"), doc.get("calls", 0)
    if own is not None and not (isinstance(own, list) and all(
            isinstance(pair, list) and len(pair) == 2
            and all(isinstance(x, str) and _HEX40.match(x) for x in pair) for pair in own)):
        raise ValueError("bad own change")
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ValueError("bad call count")
    open_calls = doc.get("open_calls", [])
    if not isinstance(open_calls, list):
        raise ValueError("bad open calls")
    notes = doc.get("notes", [])
    if not isinstance(notes, list):
        raise ValueError("bad call notes")
    running: tuple[OpenCall, ...] = ()
    noted: tuple[CallNote, ...] = ()
    if open_calls or notes:   # its calls' records' module only then (every prompt reads points)
        from undostore.history.toolcall import CallNote, OpenCall

        running = tuple(OpenCall.from_json(c) for c in open_calls)
        noted = tuple(CallNote.from_json(n) for n in notes)
    doubt = doc.get("doubt", [])
    if not (isinstance(doubt, list) and all(
            isinstance(d, list) and len(d) == 2 and isinstance(d[0], str)
            and isinstance(d[1], list) and all(isinstance(s, str) for s in d[1]) for d in doubt)):
        raise ValueError("bad doubt")
    left_out = doc.get("left_out", [])
    if not (isinstance(left_out, list) and all(isinstance(path, str) for path in left_out)):
        raise ValueError("bad left-out paths")
    return Point(sha, float(when), label, meta, after, ended,
                 tuple((a, b) for a, b in own) if own is not None else None, running, calls,
                 tuple((path, tuple(others)) for path, others in doubt), noted,
                 frozenset(left_out),
                 Cut.from_json(doc["cut"]) if doc.get("cut") is not None else None)



def _is_time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def make_point(snapshot_id: str, label: str | None, meta: Mapping[str, Any] | None,
               now: float | None = None) -> Point:
    """A new undo point; UsageError if the label or the metadata cannot be stored."""
    if not _HEX40.match(snapshot_id):
        raise UsageError(f"not a full snapshot id: {snapshot_id!r}")
    if label is not None and not isinstance(label, str):
        raise UsageError("label must be text")
    meta = dict(meta or {})
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise UsageError(f"undo point metadata must be plain JSON data: {err}") from None
    return Point(snapshot_id, time.time() if now is None else now, oplog.cut_label(label), meta)


# --- files ---------------------------------------------------------------------------------------


def journal_path(store: Store, name: str) -> str:
    return os.path.join(store.sessions_dir, encode_name(validate_name(name)) + SUFFIX)


def load(store: Store, name: str) -> Journal:
    """The journal of session `name` (empty if it has none). A damaged journal is set aside and
    its records salvaged (module docstring)."""
    known = _already_read(store, name)
    if known is not None:
        return known
    path = journal_path(store, name)
    journal = _read(path, name)
    if journal is not None:
        _remember_read(store, journal)
        return journal
    # Damaged. Move it aside only under the store lock, and only if it is still damaged then:
    # a writer may have replaced it with a good journal since we read it.
    with store.lock:
        journal = _read(path, name)
        if journal is not None:
            return journal
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise from_oserror(err, "read the journal", path, StoreError) from err
        aside = path + DAMAGED
        if os.path.exists(aside):   # damaged before and not yet repaired: keep the first copy
            aside = f"{aside}-{int(time.time())}"
        try:
            os.replace(path, aside)
        except OSError:
            quarantine(path)
        journal = salvage(store, name, data)
        save(store, journal)
    return journal


def _already_read(store: Store, name: str) -> Journal | None:
    """A copy of the journal as this process last read or wrote it while holding the store lock
    it still holds (no other writer can have changed it since), else None: one step, whatever
    its layers ask, reads each journal once."""
    if not store.lock.held:
        return None
    known = store.journals_read.get(name)
    if known is None or known[0] != store.lock.holding:
        return None
    return known[1].copy()


def _remember_read(store: Store, journal: Journal) -> None:
    if store.lock.held:
        store.journals_read[journal.name] = (store.lock.holding, journal.copy())


def _read(path: str, name: str) -> Journal | None:
    """The journal at `path`, an empty one if absent, None if damaged."""
    try:
        payload = read_framed(path, _KIND)
    except CorruptFrame:
        return None
    except OSError as err:
        raise from_oserror(err, "read the journal", path, StoreError) from err
    if payload is None:
        return Journal(name)
    try:
        return Journal.from_bytes(name, payload)
    except (ValueError, UnicodeDecodeError):
        return None


def save(store: Store, journal: Journal) -> None:
    """Write the journal atomically (the caller holds the store lock). Redo entries of a
    format-1 journal are named in the operation log first (`clear-redo`: restorable for a day)
    and leave it: they name states, and redo now applies turns."""
    path = journal_path(store, journal.name)
    if journal.legacy_redo:
        now = time.time()
        for point in journal.legacy_redo:
            oplog.append(store.path, oplog.Op(now, "clear-redo", session=journal.name,
                                              id=point.id, label=point.label))
        journal.legacy_redo = []
    try:
        os.makedirs(store.sessions_dir, exist_ok=True)
        write_framed(path, _KIND, journal.to_bytes())
    except OSError as err:
        store.journals_read.pop(journal.name, None)
        raise from_oserror(err, "write the journal", path, StoreError) from err
    _remember_read(store, journal)


def delete(store: Store, name: str) -> bool:
    """Remove the journal of `name` and any damaged copy of it; False if there was none."""
    path = journal_path(store, name)
    store.journals_read.pop(name, None)
    existed = bool(forget_damaged(store, name))
    try:
        os.unlink(path)
    except FileNotFoundError:
        return existed
    except OSError as err:
        raise from_oserror(err, "remove the journal", path, StoreError) from err
    return True


# --- damaged journals ----------------------------------------------------------------------------

DAMAGED = ".damaged"
_FRAME_HEADER = 28     # atomic.frame's header: magic, kind, length, checksum
_POINT = re.compile(r'"id":"([0-9a-f]{40})","time":(-?[0-9][0-9.eE+-]*)'
                    r'(?:,"label":("(?:[^"\\]|\\.)*"|null))?')


def salvage(store: Store, name: str, data: bytes) -> Journal:
    """A journal rebuilt from a damaged one's bytes: the points that still parse and name an
    object the store holds, then every snapshot the session's anchors hold that is not among
    them (as an undo point dated by its anchor), oldest first."""
    text = data[_FRAME_HEADER:].decode("utf-8", "replace")
    redo_at = text.find('"redo":')
    journal = Journal(name)
    for match in _POINT.finditer(text):
        sha, when, label = match.group(1), match.group(2), match.group(3)
        try:
            point = Point(sha, float(when), json.loads(label) if label else None)
        except ValueError:
            continue
        if store.has(bytes.fromhex(sha)) and sha not in journal.ids():
            (journal.redo if 0 <= redo_at < match.start() else journal.undo).append(point)
    folder = os.path.join(store.path, "refs", "undostore", encode_name(name))  # anchors.py's
    try:
        anchored = {a: os.path.getmtime(os.path.join(folder, a)) for a in os.listdir(folder)
                    if _HEX40.match(a)}
    except OSError:
        anchored = {}
    for sha in sorted(set(anchored) - journal.ids()):
        journal.undo.append(Point(sha, anchored[sha], "(recovered from its anchor)"))
    # Anchors are written as points are recorded: their times order the points even when a
    # damaged digit changed the time in the journal.
    journal.undo.sort(key=lambda p: anchored.get(p.id, p.time))
    journal.recorded = len(journal.undo)
    return journal


def damaged_sessions(store: Store) -> dict[str, str]:
    """Sessions whose journal was damaged and is not yet repaired or dropped: name -> the
    damaged copy."""
    try:
        files = os.listdir(store.sessions_dir)
    except OSError:
        return {}
    out = {}
    for f in files:
        if f.endswith(SUFFIX + DAMAGED):
            name = decode_name(f[:-len(SUFFIX + DAMAGED)])
            if name is not None:
                out[name] = os.path.join(store.sessions_dir, f)
    return out


def forget_damaged(store: Store, name: str) -> int:
    """Remove the damaged copies of a session's journal (its salvage is accepted); returns how
    many were removed. gc then keeps only what the journal lists."""
    prefix = encode_name(validate_name(name)) + SUFFIX + DAMAGED
    removed = 0
    try:
        files = os.listdir(store.sessions_dir)
    except OSError:
        return 0
    for f in files:
        if f == prefix or f.startswith(prefix + "-"):
            os.unlink(os.path.join(store.sessions_dir, f))
            removed += 1
    return removed


def damage_notes(store: Store) -> list[str]:
    """One line for each session whose journal was damaged, with the ways out."""
    notes = []
    for name, path in sorted(damaged_sessions(store).items()):
        journal = _read(journal_path(store, name), name) or Journal(name)
        notes.append(
            f"session {name!r}: its journal was damaged ({path}); {len(journal.undo)} undo points "
            f"salvaged and its snapshots kept. `undostore verify --repair` keeps the salvage, "
            f"`undostore drop --session {name}` drops the session")
    return notes


def session_names(store: Store) -> list[str]:
    """Names of the sessions that have a journal, sorted."""
    try:
        files = os.listdir(store.sessions_dir)
    except FileNotFoundError:
        return []
    except OSError as err:
        raise from_oserror(err, "list sessions", store.sessions_dir, StoreError) from err
    names = (decode_name(f[:-len(SUFFIX)]) for f in files if f.endswith(SUFFIX))
    return sorted(n for n in names if n is not None)


def undo_limit() -> int:
    """The cap on undo points: `UNDOSTORE_UNDO_LIMIT`, else 50."""
    return int(settings.value("UNDOSTORE_UNDO_LIMIT"))

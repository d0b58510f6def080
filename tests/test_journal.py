"""The per-session journal: names safe as file names everywhere, the cap, turn ends, redo
clearing, and damaged journals set aside (salvaged, never a raw warning) instead of a crash."""

from __future__ import annotations

import os
import re
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undostore import Workspace
from undostore.errors import UsageError
from undostore.history.journal import (
    Journal,
    Point,
    damaged_sessions,
    decode_name,
    encode_name,
    journal_path,
    load,
    make_point,
    save,
    session_names,
    validate_name,
)
from undostore.store.framing import read_framed, write_framed
from undostore.store.store import Store

SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_C = "c" * 40
WINDOWS_FORBIDDEN = set('<>:"/\\|?*')

names = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40)


@given(names)
def test_encoded_name_round_trips_and_is_a_portable_file_name(name):
    encoded = encode_name(name)
    assert decode_name(encoded) == name
    assert not WINDOWS_FORBIDDEN & set(encoded)
    # Lower-case letters, digits, '_', '-' and %XX escapes only: no dots, spaces or capitals.
    assert re.fullmatch(r"(?:[a-z0-9_-]|%[0-9A-F]{2})+", encoded)


@given(names, names)
def test_names_differing_only_in_case_get_different_files(a, b):
    if a != b:
        assert encode_name(a).lower() != encode_name(b).lower()


@pytest.mark.parametrize("name", ["con", "NUL", "aux", "com1", "lpt9", "prn"])
def test_windows_device_names_are_escaped(name):
    encoded = encode_name(name)
    assert encoded.lower() not in {"con", "nul", "aux", "com1", "lpt9", "prn"}
    assert decode_name(encoded) == name


@pytest.mark.parametrize("bad", ["", "a\nb", "tab\there", "x" * 101, "\x7f"])
def test_bad_session_names_are_refused_with_a_usage_error(bad):
    with pytest.raises(UsageError, match="session name"):
        validate_name(bad)


def test_foreign_file_names_are_not_sessions():
    for foreign in ("A", "a.b", "%zz", "%61", ".undostore-tmp-1-2-x", ""):
        assert decode_name(foreign) is None


def test_a_turn_that_changed_files_clears_redo_once_its_end_is_known_and_cap_drops_oldest():
    journal = Journal("s")
    for i, sha in enumerate((SHA_A, SHA_B, SHA_C)):
        journal.close_turn(sha, final=True)
        journal.record(Point(sha, float(i), f"p{i}"), limit=2)
    assert [p.id for p in journal.undo] == [SHA_B, SHA_C]
    assert journal.undo[0].after == SHA_C and journal.undo[0].ended
    journal.redo.append(journal.undo.pop())
    journal.record(Point(SHA_A, 11.0), limit=2)           # a prompt: the chain stays
    assert [p.id for p in journal.redo] == [SHA_C]
    assert journal.close_turn(SHA_A, final=False) == []   # a turn that changed nothing
    assert journal.redo and journal.undo[-1].after == SHA_A and not journal.undo[-1].ended
    journal.undo[-1] = Point(SHA_A, 11.0)                 # open again
    journal.close_turn(SHA_B, final=False)                # another session's point ends it
    assert journal.redo == []
    assert journal.close_turn(SHA_C, final=True) == []    # the host's own end replaces it
    assert (journal.undo[-1].after, journal.undo[-1].ended) == (SHA_C, True)
    journal.close_turn(SHA_A, final=True)                 # nothing replaces a final end
    assert journal.undo[-1].after == SHA_C
    assert journal.recorded == 4


def test_a_turn_keeps_label_meta_time_and_ends_on_the_redo_stack_and_back():
    journal = Journal("s")
    journal.record(Point(SHA_A, 5.0, "turn", {"messages": 7}), limit=50)
    journal.close_turn(SHA_B, final=True)
    journal.redo.append(journal.undo.pop())
    journal.undo.append(journal.redo.pop())
    point = journal.undo[-1]
    assert (point.id, point.after, point.time, point.label, dict(point.meta)) == (
        SHA_A, SHA_B, 5.0, "turn", {"messages": 7})


def test_journal_survives_a_save_and_load(tmp_path):
    store = Store(str(tmp_path / "store"))
    journal = Journal("agent")
    journal.record(Point(SHA_A, 1.5, "first", {"n": 1, "nested": {"x": [1, 2]}}), limit=50)
    journal.close_turn(SHA_C, final=False)
    journal.record(Point(SHA_B, 2.5, None), limit=50)
    journal.close_turn(SHA_C, final=True)
    journal.redo.append(journal.undo.pop())
    save(store, journal)
    again = load(store, "agent")
    assert again == journal
    assert session_names(store) == ["agent"]


def test_a_journal_of_format_1_keeps_its_turns_and_names_its_redo_states_in_ops(tmp_path):
    """Before turns were kept whole, a redo entry was the state an undo left: such entries go
    to the operation log (restorable for a day) the first time the journal is written."""
    import json

    from undostore.store import oplog

    store = Store(str(tmp_path / "store"))
    old = {"format": 1, "session": "s", "recorded": 1, "last_step": "", "landed": "",
           "undo": [{"id": SHA_A, "time": 1.0, "label": "one", "meta": {}, "after": SHA_B}],
           "redo": [{"id": SHA_C, "time": 2.0, "label": "two", "meta": {}, "recorded": 1.5}]}
    write_framed(journal_path(store, "s"), b"JRNL", json.dumps(old).encode())
    journal = load(store, "s")
    assert [(p.id, p.after) for p in journal.undo] == [(SHA_A, SHA_B)] and journal.redo == []
    assert SHA_C in journal.ids()
    save(store, journal)
    assert [(o.op, o.id) for o in oplog.read(store.path)] == [("clear-redo", SHA_C)]
    assert SHA_C not in load(store, "s").ids()


def test_metadata_that_is_not_json_is_refused():
    with pytest.raises(UsageError, match="metadata"):
        make_point(SHA_A, "x", {"f": object()})
    with pytest.raises(UsageError, match="snapshot id"):
        make_point("abc", None, None)


def _damage(path: str) -> None:
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[-3] ^= 0xFF
    with open(path, "wb") as f:
        f.write(data)


def test_damaged_journal_is_set_aside_without_a_warning_and_unknown_ids_are_not_salvaged(
        tmp_path):
    store = Store(str(tmp_path / "store"))
    journal = Journal("s")
    journal.record(Point(SHA_A, 1.0), limit=50)
    save(store, journal)
    path = journal_path(store, "s")
    _damage(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load(store, "s")
    assert loaded.undo == [] and loaded.redo == []   # SHA_A names nothing in this store
    assert damaged_sessions(store) == {"s": path + ".damaged"}
    assert os.path.exists(path + ".damaged")


def test_truncated_or_foreign_journal_counts_as_damaged(tmp_path):
    store = Store(str(tmp_path / "store"))
    path = journal_path(store, "s")
    with open(path, "wb") as f:
        f.write(b"UNDOSTOR")
    assert load(store, "s").undo == []
    assert "s" in damaged_sessions(store)
    # A well-framed journal of another session (a renamed file) is not trusted either.
    other = Journal("other")
    other.record(Point(SHA_A, 1.0), limit=50)
    write_framed(path, b"JRNL", other.to_bytes())
    assert load(store, "s").undo == []


def test_snapshot_with_a_damaged_journal_keeps_the_salvaged_points(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    ws.snapshot(session="s", label="one")
    _damage(journal_path(ws.store, "s"))
    (root / "a.txt").write_text("2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ws.snapshot(session="s", label="two")
    log = ws.log("s")
    assert [p.label for p in log.undo] == ["two", "one"]
    assert log.undo[0].id == result.id
    assert read_framed(journal_path(ws.store, "s"), b"JRNL") is not None


def test_missing_journal_is_an_empty_session_without_warning(tmp_path):
    store = Store(str(tmp_path / "store"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(store, "never").undo == []
    assert session_names(store) == []

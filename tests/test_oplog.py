"""The operation log: what the facade records, the file's framing (torn tail, damage, rotation),
`ops --since`, and ids handed out outside sessions staying restorable for a day."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undostore import Workspace
from undostore.errors import UsageError
from undostore.store import oplog
from undostore.store.oplog import Op


def test_every_operation_is_recorded_with_the_ids_that_lead_back(tree_factory):
    root = tree_factory({"a.txt": "1"})
    with Workspace(root) as ws:
        p1 = ws.snapshot(session="s", label="first").id
        (root / "a.txt").write_text("2")
        p2 = ws.snapshot(session="s", label="second").id
        (root / "a.txt").write_text("3")
        plain = ws.snapshot().id
        undone = ws.undo("s")
        redone = ws.redo("s")
        restored = ws.restore(p1)
        ws.snapshot(session="gone")
        ws.drop("gone")
        ws.gc()
        ops = ws.ops()
    got = [(o.op, o.session, o.id, o.label, o.safety) for o in reversed(ops)]
    assert got[:6] == [
        ("snapshot", "s", p1, "first", None),
        ("snapshot", "s", p2, "second", None),
        ("snapshot", None, plain, None, None),
        ("undo", "s", p2, "second", plain),
        ("redo", "s", redone.target, "second", undone.target),
        ("restore", "s", p1, None, restored.safety),   # the newest session's
    ]
    assert redone.target == plain
    assert [o.op for o in reversed(ops)][6:] == ["snapshot", "drop", "gc"]
    assert all(a.time >= b.time for a, b in zip(ops[:-1], ops[1:], strict=True))


def test_dry_runs_and_failures_are_not_recorded(tree_factory):
    root = tree_factory({"a.txt": "1"})
    with Workspace(root) as ws:
        first = ws.snapshot().id
        (root / "a.txt").write_text("2")
        ws.restore(first, dry_run=True)
        with pytest.raises(UsageError):
            ws.undo("nothing-here")
        assert [o.op for o in ws.ops()] == ["snapshot"]


def test_a_torn_tail_is_ignored_and_the_next_record_starts_on_its_own_line(tmp_path):
    oplog.append(str(tmp_path), Op(1.0, "snapshot", id="a" * 40))
    with open(oplog.log_path(str(tmp_path)), "ab") as f:
        f.write(b'0123456789abcdef {"time": 2.0, "op": "resto')  # a crash mid-write
    oplog.append(str(tmp_path), Op(3.0, "undo", session="s"))
    assert [(o.time, o.op) for o in oplog.read(str(tmp_path))] == [(3.0, "undo"),
                                                                   (1.0, "snapshot")]


def test_a_damaged_record_is_skipped_not_trusted(tmp_path):
    for i in range(3):
        oplog.append(str(tmp_path), Op(float(i), "snapshot", label=f"n{i}"))
    path = oplog.log_path(str(tmp_path))
    data = Path(path).read_bytes().replace(b'"n1"', b'"X1"')
    Path(path).write_bytes(data)
    assert [o.label for o in oplog.read(str(tmp_path))] == ["n2", "n0"]


def test_the_log_rotates_past_its_size_and_keeps_every_part_of_the_last_day(tmp_path):
    store = str(tmp_path)
    for i in range(200):
        oplog.append(store, Op(float(i), "snapshot", label="x" * 50), max_bytes=4096)
    path = oplog.log_path(store)
    parts = sorted(p for p in os.listdir(store) if p.startswith("oplog"))
    assert len(parts) > 3 and all(os.path.getsize(os.path.join(store, p)) <= 4096 + 200
                                  for p in parts)
    times = [o.time for o in oplog.read(store)]
    assert times == [float(i) for i in range(199, -1, -1)]   # nothing of the day is lost
    two_days_ago = time.time() - 2 * 86400
    for part in parts:
        if part != "oplog":
            os.utime(os.path.join(store, part), (two_days_ago, two_days_ago))
    for i in range(200, 260):
        oplog.append(store, Op(float(i), "snapshot", label="x" * 50), max_bytes=4096)
    left = sorted(p for p in os.listdir(store) if p.startswith("oplog"))
    assert len(left) < len(parts)   # parts whose last op is past the day went
    assert os.path.exists(path + ".1")
    assert [o.time for o in oplog.read(store)][:60] == [float(i) for i in range(259, 199, -1)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["snapshot", "undo", "gc"]),
                          st.one_of(st.none(), st.text(max_size=20)),
                          st.one_of(st.none(), st.text(max_size=30))), max_size=8))
def test_records_round_trip_any_text(tmp_path_factory, records):
    store = str(tmp_path_factory.mktemp("log"))
    for i, (op, session, label) in enumerate(records):
        oplog.append(store, Op(float(i), op, session=session, label=label))
    back = list(reversed(oplog.read(store)))
    assert [(o.op, o.session, o.label) for o in back] == records


@pytest.mark.parametrize("text, seconds", [("90", 90), ("30s", 30), ("15m", 900), ("2h", 7200),
                                           ("1d", 86400), ("1w", 604800), ("1.5h", 5400)])
def test_durations(text, seconds):
    assert oplog.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "2x", "-1h", "two hours"])
def test_bad_durations_are_usage_errors(text):
    with pytest.raises(UsageError, match="not a duration"):
        oplog.parse_duration(text)


def test_ops_command_filters_by_session_and_since(tree_factory, cli):
    root = tree_factory({"a.txt": "1"})
    with Workspace(root) as ws:
        ws.snapshot(session="one", label="old")
        old = time.time() - 3 * 3600
        path = oplog.log_path(ws.store.path)
        data = Path(path).read_bytes()
    # Rewrite the only record as three hours old (a valid record: checksum recomputed).
    Path(path).unlink()
    doc = json.loads(data.split(b" ", 1)[1])
    oplog.append(os.path.dirname(path), Op(old, doc["op"], doc["session"], doc["id"],
                                           doc["label"]))
    (root / "a.txt").write_text("2")
    assert cli.run("snapshot", "--session", "two", "--label", "new", cwd=root).returncode == 0
    everything = json.loads(cli.run("ops", "--json", cwd=root).stdout)["ops"]
    assert [o["label"] for o in everything] == ["new", "old"]
    assert set(everything[0]) == {"time", "op", "session", "id", "label", "safety"}
    recent = json.loads(cli.run("ops", "--since", "2h", "--json", cwd=root).stdout)["ops"]
    assert [o["label"] for o in recent] == ["new"]
    one = json.loads(cli.run("ops", "--session", "one", "--json", cwd=root).stdout)["ops"]
    assert [o["label"] for o in one] == ["old"]
    plain = cli.run("ops", cwd=root)
    assert plain.returncode == 0 and len(plain.stdout.splitlines()) == 2
    assert "snapshot" in plain.stdout.splitlines()[0]
    bad = cli.run("ops", "--since", "soon", cwd=root)
    assert bad.returncode == 2 and "not a duration" in bad.stderr


def _age_everything(ws: Workspace, seconds: float) -> None:
    """Packs and the list of handed-out ids, as if written `seconds` ago."""
    import marshal

    from undostore.store import recent
    from undostore.store.framing import write_framed

    old = time.time() - seconds
    for name in os.listdir(ws.store.pack_dir):
        os.utime(os.path.join(ws.store.pack_dir, name), (old, old))
    entries = [(when - seconds, sha) for when, sha in recent._load(ws.store.path)]
    write_framed(recent._path(ws.store.path), recent._KIND, marshal.dumps(entries))
    ops = list(reversed(oplog.read(ws.store.path)))
    os.unlink(oplog.log_path(ws.store.path))
    for op in ops:
        oplog.append(ws.store.path, op._replace(time=op.time - seconds))


def test_an_id_handed_out_outside_sessions_survives_automatic_gc_for_a_day(tree_factory):
    root = tree_factory({"a.txt": "state A\n"})
    with Workspace(root) as ws:
        plain = ws.snapshot().id
        (root / "a.txt").write_text("state B\n")
        ws.snapshot()
        _age_everything(ws, 2 * 3600)   # older than gc's 1-hour grace for packs
        ws.gc()                          # the default, as automatic gc runs it
        assert ws.verify(plain).ok
        assert ws.restore(plain).target == plain
        assert plain in {o.id for o in ws.ops()}


def test_an_explicit_grace_still_lets_gc_collect_an_unlisted_id(tree_factory):
    root = tree_factory({"a.txt": "state A\n"})
    with Workspace(root) as ws:
        plain = ws.snapshot().id
        (root / "a.txt").write_text("state B\n")
        ws.snapshot()
        _age_everything(ws, 2 * 3600)
        ws.gc(grace_seconds=3600)
        ws.store.refresh()
        assert not ws.store.has(bytes.fromhex(plain))

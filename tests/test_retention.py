"""Retention: what gc keeps and why, `drop` + `gc` freeing at once, `UNDOSTORE_KEEP_DAYS` and
`UNDOSTORE_MAX_STORE_MB` (real stores, real CLI processes where the contract speaks of the CLI)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from undostore import Workspace
from undostore.history.retention import enforce

MB = 1_000_000


def _store_bytes(ws: Workspace) -> int:
    return sum(p.stat().st_size for p in Path(ws.store.path).rglob("*") if p.is_file())


def test_drop_then_gc_frees_what_only_the_dropped_session_held_at_once(tree_factory):
    root = tree_factory({"shared.txt": "kept by both sessions\n"})
    ws = Workspace(root)
    for i in range(3):
        (root / f"only_s{i}.bin").write_bytes(os.urandom(1 << 20))
        ws.snapshot(session="s")
    ws.undo("s")                                  # a redo entry too, the safety snapshot
    for i in range(3):
        (root / f"only_s{i}.bin").unlink(missing_ok=True)
    kept = ws.snapshot(session="t").id
    before = _store_bytes(ws)
    assert before > 2 << 20
    ws.drop("s")
    result = ws.gc()                               # default grace: no hour to wait
    assert result.freed_bytes > 2 << 20
    assert _store_bytes(ws) < 200_000
    ws.store.refresh()
    assert ws.store.has(bytes.fromhex(kept))
    assert ws.verify().ok


def test_an_id_handed_out_outside_sessions_survives_the_default_gc(tree_factory):
    root = tree_factory({"a.bin": os.urandom(50_000)})
    ws = Workspace(root)
    handed_out = ws.snapshot().id                  # no session: only the recent list knows it
    (root / "a.bin").write_bytes(b"other")
    ws.snapshot(session="s")
    ws.gc()
    ws.store.refresh()
    assert {p for p, _, _ in ws.store.iter_tree_files(bytes.fromhex(handed_out))} == {"a.bin"}
    ws.gc(grace_seconds=0)                         # past its grace, nothing keeps it
    ws.store.refresh()
    assert not ws.store.has(bytes.fromhex(handed_out))


# --- UNDOSTORE_MAX_STORE_MB and UNDOSTORE_KEEP_DAYS ----------------------------------------------

CLI = [sys.executable, "-m", "undostore"]


def test_twelve_points_of_8_mb_fit_under_max_store_mb_40(tree_factory, cli):
    """The acceptance case, through the CLI: each point writes 8 MB of new random data."""
    root = tree_factory({"notes.txt": "kept throughout\n"})
    env = {"UNDOSTORE_MAX_STORE_MB": "40"}
    dropped = []
    for i in range(12):
        (root / "data.bin").write_bytes(os.urandom(8 << 20))
        done = cli.run("snapshot", "--session", "s", "--label", f"p{i}", root=root,
                       env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        dropped += [line for line in done.stderr.splitlines() if "dropped undo point" in line]
    newest = (root / "data.bin").read_bytes()
    ws = Workspace(root)
    assert _store_bytes(ws) <= 40 * MB
    log = ws.log("s")
    assert log.undo[0].label == "p11" and len(log.undo) + len(dropped) == 12
    assert len(dropped) >= 6 and all("UNDOSTORE_MAX_STORE_MB" in line for line in dropped)
    ops = json.loads(cli.run("ops", "--json", root=root).stdout)["ops"]
    assert sum(op["op"] == "snapshot" for op in ops) == 12
    evicted = [op for op in ops if op["op"] == "evict"]
    assert len(evicted) == len(dropped) and {op["session"] for op in evicted} == {"s"}
    assert {op["id"][:12] for op in evicted} == {line.split()[4] for line in dropped}
    (root / "data.bin").write_bytes(b"edited after the last point")
    undone = cli.run("undo", "--session", "s", "--yes", root=root)
    assert undone.returncode == 0, undone.stderr
    assert (root / "data.bin").read_bytes() == newest
    assert ws.verify().ok


def test_the_oldest_points_go_first_across_sessions_and_each_keeps_its_newest(tree_factory,
                                                                             monkeypatch):
    root = tree_factory({})
    ws = Workspace(root)
    order = []
    for i in range(8):
        session = "a" if i % 2 else "b"
        (root / f"{session}.bin").write_bytes(os.urandom(600_000))
        order.append((session, ws.snapshot(session=session, label=f"p{i}").id))
    evicted = []
    monkeypatch.setenv("UNDOSTORE_MAX_STORE_MB", "2.5")
    report = enforce(ws.store, on_evict=evicted.append)
    assert report.fits and _store_bytes(ws) <= 2.5 * MB
    assert [e.id for e in evicted] == [point for _, point in order[:len(evicted)]]
    assert {e.reason for e in evicted} == {"max_store_mb"} and len(evicted) >= 2
    assert ws.log("a").undo[0].id == order[-1][1] and ws.log("b").undo[0].id == order[-2][1]


def test_a_limit_the_files_alone_exceed_drops_no_history_that_frees_nothing(tree_factory,
                                                                            monkeypatch):
    root = tree_factory({})
    ws = Workspace(root)
    for i in range(5):
        (root / f"f{i}.bin").write_bytes(os.urandom(400_000))   # every file stays
        ws.snapshot(session="s")
    monkeypatch.setenv("UNDOSTORE_MAX_STORE_MB", "1")
    report = enforce(ws.store)
    assert not report.fits and report.evicted == [] and report.gc_runs == 0
    assert len(ws.log("s").undo) == 5


def test_keep_days_drops_older_points_but_never_a_sessions_newest(tree_factory, monkeypatch):
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    for i in range(4):
        (root / "a.txt").write_text(f"version {i}")
        ws.snapshot(session="s", label=f"p{i}")
    ws.snapshot(session="t", label="only")
    monkeypatch.setenv("UNDOSTORE_KEEP_DAYS", "2")
    assert enforce(ws.store).evicted == []                       # all are young
    report = enforce(ws.store, now=time.time() + 3 * 86400)     # three days later
    assert sorted(e.label for e in report.evicted) == ["p0", "p1", "p2"]
    assert [p.label for p in ws.log("s").undo] == ["p3"]
    assert [p.label for p in ws.log("t").undo] == ["only"]


def test_a_bad_retention_setting_is_a_usage_error_and_records_nothing(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    done = cli.run("snapshot", "--session", "s", root=root,
                   env={**os.environ, "UNDOSTORE_MAX_STORE_MB": "lots"})
    assert done.returncode == 2 and "UNDOSTORE_MAX_STORE_MB" in done.stderr
    assert Workspace(root).log("s").undo == []


def test_sessions_json_bytes_is_what_dropping_the_session_frees(tree_factory, cli):
    root = tree_factory({"shared.bin": os.urandom(300_000)})
    ws = Workspace(root)
    for _ in range(3):
        (root / "mine.bin").write_bytes(os.urandom(500_000))
        ws.snapshot(session="s")
    (root / "mine.bin").unlink()
    ws.snapshot(session="t")
    listed = json.loads(cli.run("sessions", "--json", root=root).stdout)["sessions"]
    held = {s["name"]: s["bytes"] for s in listed}
    assert 1_400_000 < held["s"] < 1_600_000 and held["t"] < 10_000
    before = _store_bytes(ws)
    ws.drop("s")
    freed = before - (ws.gc(), _store_bytes(ws))[1]
    assert abs(freed - held["s"]) < 20_000


def test_gc_says_what_holds_what_it_kept(tree_factory, cli):
    root = tree_factory({"a.bin": os.urandom(200_000)})
    assert cli.run("snapshot", "--session", "agent", root=root).returncode == 0
    (root / "x.bin").write_bytes(os.urandom(100_000))
    assert cli.run("snapshot", root=root).returncode == 0               # outside sessions
    (root / "x.bin").unlink()
    (root / "b.bin").write_bytes(os.urandom(300_000))
    assert cli.run("snapshot", "--session", "agent", root=root).returncode == 0
    (root / "b.bin").unlink()
    assert cli.run("snapshot", "--session", "other", root=root).returncode == 0
    done = cli.run("gc", root=root)
    assert done.returncode == 0
    kept = done.stdout.splitlines()[1]
    assert "session 'agent' alone (`drop` frees it) 0.3 MB" in kept
    assert "outside sessions in the last 24 h (`gc --grace 0` frees them) 0.1 MB" in kept
    as_json = json.loads(cli.run("gc", "--json", root=root).stdout)
    whats = {k["what"]: k["bytes"] for k in as_json["kept"]}
    assert whats["shared"] > 190_000 and 90_000 < whats["outside_sessions"] < 110_000


def test_a_limit_below_one_snapshot_is_said_once_and_not_tried_on_every_point(tree_factory,
                                                                              cli):
    """UNDOSTORE_MAX_STORE_MB below what one snapshot holds: the first point says so (one
    stderr line, one `over-cap` op), later points neither say it again nor try again (each try
    reads every tree), until the store grew by a tenth; a new limit is said anew."""
    root = tree_factory({"big.bin": os.urandom(3 * MB), "a.txt": "0"})
    env = {**os.environ, "UNDOSTORE_MAX_STORE_MB": "1"}

    def point(i: int, **extra: str) -> str:
        (root / "a.txt").write_text(f"edit {i}")
        done = cli.run("snapshot", "--session", "s", root=root, env={**env, **extra})
        assert done.returncode == 0, done.stderr
        return done.stderr

    said = [point(i) for i in range(4)]
    assert said[0].count("cannot fit UNDOSTORE_MAX_STORE_MB=1") == 1, said[0]
    assert "raise the limit" in said[0] and said[1:] == ["", "", ""], said
    ws = Workspace(root)
    before = ws.store.cache_dir
    state = json.loads((Path(before) / "cap").read_text())
    assert state["limit"] == MB and state["size"] > 3 * MB
    ops = json.loads(cli.run("ops", "--json", root=root).stdout)["ops"]
    assert [op["reason"] for op in ops if op["op"] == "over-cap"] == ["max_store_mb"]
    plain = cli.run("ops", root=root)
    assert plain.returncode == 0 and "over-cap" in plain.stdout, plain.stderr
    assert point(5, UNDOSTORE_MAX_STORE_MB="2").count("UNDOSTORE_MAX_STORE_MB=2") == 1
    assert point(6, UNDOSTORE_MAX_STORE_MB="2") == ""
    (root / "more.bin").write_bytes(os.urandom(MB))     # the store grows by a tenth: tried again
    assert point(7, UNDOSTORE_MAX_STORE_MB="2") == ""   # (said once per limit all the same)
    assert json.loads((Path(before) / "cap").read_text())["size"] > state["size"] + MB // 2
    assert len(ws.log("s").undo) == 7                   # nothing that frees a share was dropped

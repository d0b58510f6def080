"""`undostore diff` without git: the tree walk, lazy counts, the line diff's guarantees, the CLI's
contract (exit codes, JSON, paths after `--`, colour) and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undostore import IncompleteSnapshotError, UnknownSnapshotError, UsageError, Workspace
from undostore.diff.linediff import diff_lines, hunks, split_lines
from undostore.diff.patch import GIT_COLORS, PLAIN, Abbrev, quote_path, rename_label, render
from undostore.diff.trees import diff_trees
from undostore.git.objects import (
    BLOB,
    MODE_FILE,
    MODE_TREE,
    TREE,
    encode_tree,
    hash_object,
)
from undostore.git.reader import ObjectReader

from .conftest import IS_WINDOWS, Link, write_objects

_opened: list[Workspace] = []


@pytest.fixture(autouse=True)
def _close_workspaces():
    yield
    while _opened:
        _opened.pop().close()


def opened(root: Path) -> Workspace:
    ws = Workspace(root)
    _opened.append(ws)
    return ws


def put(path: Path, text: str) -> None:
    """Write text with LF line ends on every system (write_text would write CRLF on Windows)."""
    path.write_bytes(text.encode())


def snapshots(tree_factory, before: dict, change) -> tuple[Workspace, str, str, Path]:  # noqa: ANN001
    root = tree_factory(before)
    ws = opened(root)
    a = ws.snapshot().id
    change(root)
    b = ws.snapshot().id
    return ws, a, b, root


def apply_edits(old: list[bytes], new: list[bytes], edits) -> list[bytes]:  # noqa: ANN001
    out, at = [], 0
    for e in edits:
        out += old[at:e.i1]
        out += new[e.i2:e.i2 + e.n2]
        at = e.i1 + e.n1
    return out + old[at:]


# --- the tree walk ---------------------------------------------------------------------------


def test_statuses_modes_and_ids_of_each_change(tree_factory):
    def change(root: Path) -> None:
        put(root / "mod.txt", "two\n")
        (root / "gone.txt").unlink()
        put(root / "sub" / "new.txt", "new\n")
        (root / "mode.sh").chmod(0o755)

    ws, a, b, _ = snapshots(tree_factory, {"mod.txt": "one\n", "gone.txt": "x\n",
                                           "sub": {"keep": "k\n"}, "mode.sh": "s\n"}, change)
    got = {c.path: c for c in ws.diff(a, b)}
    assert {p: c.status for p, c in got.items()} == {
        "gone.txt": "D", "mod.txt": "M", "sub/new.txt": "A",
        **({} if IS_WINDOWS else {"mode.sh": "M"})}
    assert got["gone.txt"].new_id is None and got["gone.txt"].new_mode is None
    assert got["sub/new.txt"].old_id is None and got["sub/new.txt"].new_mode == MODE_FILE
    assert got["mod.txt"].old_id == hash_object(BLOB, b"one\n").hex()
    assert (got["mod.txt"].added, got["mod.txt"].removed) == (1, 1)
    if not IS_WINDOWS:
        assert (got["mode.sh"].old_mode, got["mode.sh"].new_mode) == (0o100644, 0o100755)
        assert (got["mode.sh"].added, got["mode.sh"].removed) == (0, 0)


@pytest.mark.skipif(IS_WINDOWS, reason="symlink privilege")
def test_file_to_symlink_is_a_type_change(tree_factory):
    def change(root: Path) -> None:
        (root / "f").unlink()
        os.symlink("t", root / "f")

    ws, a, b, _ = snapshots(tree_factory, {"f": "file\n", "t": "t\n"}, change)
    [only] = ws.diff(a, b)
    assert (only.status, only.old_mode, only.new_mode) == ("T", 0o100644, 0o120000)


def test_only_folders_whose_ids_differ_are_read(tree_factory, monkeypatch):
    spec = {f"dir{i}": {f"sub{j}": {"f.txt": f"{i}{j}\n"} for j in range(5)} for i in range(5)}
    ws, a, b, _ = snapshots(tree_factory, spec,
                            lambda root: put(root / "dir3" / "sub1" / "f.txt", "x\n"))
    reads: list[str] = []
    real = ObjectReader.read

    def counting(reader: ObjectReader, sha: bytes):  # noqa: ANN202
        reads.append(sha.hex())
        return real(reader, sha)

    monkeypatch.setattr(ObjectReader, "read", counting)
    assert [c.path for c in diff_trees(ws.store, bytes.fromhex(a), bytes.fromhex(b))] == [
        "dir3/sub1/f.txt"]
    assert len(reads) == 6   # two roots, two dir3, two dir3/sub1; nothing else


def test_name_status_reads_no_blob_and_counts_are_computed_on_first_use(tree_factory):
    ws, a, b, _ = snapshots(tree_factory, {"a": "1\n2\n"},
                            lambda root: put(root / "a", "1\n3\n4\n"))
    reads: list[bytes] = []
    real = ws.store.read_blob
    ws.store.read_blob = lambda sha: reads.append(sha) or real(sha)
    changes = ws.diff(a, b)
    assert b"".join(render("name-status", ws.store, changes)) == b"M\ta\n"
    assert reads == []
    assert (changes[0].added, changes[0].removed) == (2, 1)
    assert len(reads) == 2
    assert changes[0].to_dict()["added"] == 2 and len(reads) == 2   # cached


def test_binary_files_have_no_line_counts(tree_factory):
    ws, a, b, _ = snapshots(tree_factory, {"b": b"\x00\x01"},
                            lambda root: (root / "b").write_bytes(b"\x00\x02"))
    [change] = ws.diff(a, b)
    assert change.binary and change.added is None and change.removed is None
    assert change.to_dict()["added"] is None


def test_files_over_the_big_file_threshold_are_binary_and_never_read(tree_factory,
                                                                    monkeypatch):
    import undostore.diff.content as patch_module

    ws, a, b, _ = snapshots(tree_factory, {"big.txt": "x\n" * 20, "small.txt": "a\n"},
                            lambda root: (put(root / "big.txt", "y\n" * 20),
                                          put(root / "small.txt", "b\n")))
    monkeypatch.setattr(patch_module, "BIG_FILE", 30)
    read: list[bytes] = []
    real = ObjectReader.read_blob
    monkeypatch.setattr(ObjectReader, "read_blob",
                        lambda reader, sha: read.append(sha) or real(reader, sha))
    changes = ws.diff(a, b)
    assert b"".join(render("numstat", ws.store, changes)) == b"-\t-\tbig.txt\n1\t1\tsmall.txt\n"
    out = b"".join(render("patch", ws.store, changes))
    assert b"Binary files a/big.txt and b/big.txt differ\n" in out
    assert b"".join(render("stat", ws.store, changes)).startswith(
        b" big.txt   | Bin 40 -> 40 bytes\n")
    assert {sha.hex() for sha in read} == {c.old_id for c in changes[1:]} | {
        c.new_id for c in changes[1:]}


def test_big_binary_files_are_told_binary_from_their_first_bytes(tree_factory):
    """Two 8 MiB binaries (a NUL up front): every form of the diff reads a few KB of each,
    never the whole (it held both blobs and a copy: 3x their size)."""
    first, second = b"\0" + os.urandom(8 << 20), b"\0" + os.urandom(8 << 20)
    ws, a, b, _ = snapshots(tree_factory, {"big.bin": first, "t.txt": "a\n"},
                            lambda root: ((root / "big.bin").write_bytes(second),
                                          put(root / "t.txt", "b\n")))
    changes = ws.diff(a, b)
    tracemalloc.start()
    try:
        outputs = {form: b"".join(render(form, ws.store, changes))
                   for form in ("numstat", "stat", "patch")}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outputs["numstat"] == b"-\t-\tbig.bin\n1\t1\tt.txt\n"
    assert outputs["stat"].startswith(b" big.bin | Bin 8388609 -> 8388609 bytes\n")
    assert b"Binary files a/big.bin and b/big.bin differ\n" in outputs["patch"]
    assert peak < 4 << 20, f"peak {peak} bytes while diffing two 8 MiB files"

def test_identical_snapshots_have_no_changes(tree_factory):
    ws, a, b, _ = snapshots(tree_factory, {"a": "1\n"}, lambda root: None)
    assert a == b
    assert ws.diff(a, b) == []
    for form in ("name-status", "numstat", "stat", "patch"):
        assert b"".join(render(form, ws.store, [])) == b""


def test_diff_against_now_takes_a_snapshot_no_journal_records(tree_factory):
    root = tree_factory({"a": "1\n"})
    ws = opened(root)
    a = ws.snapshot().id
    put(root / "a", "2\n")
    put(root / "b", "new\n")
    changes = ws.diff(a[:8])
    assert [(c.status, c.path) for c in changes] == [("M", "a"), ("A", "b")]
    assert os.listdir(ws.store.sessions_dir) == []


def test_path_filters_select_files_folders_and_globs(tree_factory):
    def change(root: Path) -> None:
        for rel in ("src/a.py", "src/sub/b.py", "doc/c.md", "top.py"):
            put(root / rel, "changed\n")

    ws, a, b, _ = snapshots(tree_factory, {"src": {"a.py": "1", "sub": {"b.py": "2"}},
                                           "doc": {"c.md": "3"}, "top.py": "4"}, change)

    def paths(*specs: str) -> list[str]:
        return [c.path for c in ws.diff(a, b, paths=list(specs))]

    assert paths("src") == ["src/a.py", "src/sub/b.py"]
    assert paths("./src/sub/", "top.py") == ["src/sub/b.py", "top.py"]
    assert paths("*.py") == ["src/a.py", "src/sub/b.py", "top.py"]
    assert paths("src/s*") == ["src/sub/b.py"]
    assert paths("sr") == []
    assert paths(".") == paths()
    with pytest.raises(UsageError, match="leaves the root"):
        paths("../elsewhere")


def test_find_renames_pairs_moved_files(tree_factory):
    body = "".join(f"line {i}\n" for i in range(30))

    def change(root: Path) -> None:
        os.rename(root / "a.txt", root / "b.txt")
        (root / "c.txt").unlink()
        (root / "d").mkdir()
        put(root / "d" / "c.txt", body.replace("line 3\n", "line three\n"))

    ws, a, b, _ = snapshots(tree_factory, {"a.txt": "same\n", "c.txt": body}, change)
    got = [(c.status, c.old_path, c.path) for c in ws.diff(a, b, find_renames=True)]
    assert got == [("R100", "a.txt", "b.txt"), ("R095", "c.txt", "d/c.txt")]
    assert [c.status for c in ws.diff(a, b)] == ["D", "A", "D", "A"]


# --- the line diff ---------------------------------------------------------------------------


lines_strategy = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"\n", b"  x\n", b"d"]),
                          max_size=40)


@settings(max_examples=300, deadline=None)
@given(old=lines_strategy, new=lines_strategy)
def test_applying_the_edits_gives_the_new_lines(old, new):
    edits = diff_lines(old, new)
    assert apply_edits(old, new, edits) == new
    for first, second in zip(edits, edits[1:], strict=False):
        assert first.i1 + first.n1 < second.i1 or first.i2 + first.n2 < second.i2


def test_split_lines_keeps_newlines_and_a_last_line_without_one():
    assert split_lines(b"") == []
    assert split_lines(b"a\nb") == [b"a\n", b"b"]
    assert split_lines(b"a\r\n\n") == [b"a\r\n", b"\n"]
    assert diff_lines(split_lines(b"x\ny"), split_lines(b"x\ny\n"))[0].n1 == 1


def test_huge_repetitive_rewrite_stays_fast_and_correct():
    # Quadratic search or difflib-style junk heuristics would take minutes or give absurd hunks
    # here; the budgeted search must finish quickly with a correct, compact diff.
    old = [b"same line\n", b"{\n", b"}\n"] * 10_000
    new = list(old)
    for at in range(0, len(new), 97):
        new[at] = b"changed %d\n" % at
    started = time.perf_counter()
    edits = diff_lines(old, new)
    assert time.perf_counter() - started < 20
    assert apply_edits(old, new, edits) == new
    assert sum(e.n1 for e in edits) == len(range(0, len(new), 97))
    shuffled = [b"%d\n" % ((i * 7919) % 20_000) for i in range(20_000)]
    started = time.perf_counter()
    edits = diff_lines(shuffled, sorted(shuffled))
    assert time.perf_counter() - started < 20
    assert apply_edits(shuffled, sorted(shuffled), edits) == sorted(shuffled)


def test_hunks_merge_edits_within_six_lines():
    old = [b"%d\n" % i for i in range(40)]
    new = list(old)
    new[5], new[12], new[30] = b"x\n", b"y\n", b"z\n"
    got = [(h.s1, h.e1, len(h.edits)) for h in hunks(diff_lines(old, new), 40, 40)]
    assert got == [(2, 16, 2), (27, 34, 1)]


# --- quoting and labels ----------------------------------------------------------------------


def test_quote_path_follows_git_quote_path():
    assert quote_path(b"plain name.txt") == b"plain name.txt"
    assert quote_path(b'a"b\\c') == b'"a\\"b\\\\c"'
    assert quote_path(b"t\tn\nx\x01\x7f") == b'"t\\tn\\nx\\001\\177"'
    assert quote_path("é".encode()) == b'"\\303\\251"'
    assert quote_path(b"\xff") == b'"\\377"'


def test_rename_label_braces_common_folders():
    assert rename_label(b"a/b/c.txt", b"a/d/c.txt") == b"a/{b => d}/c.txt"
    assert rename_label(b"old.txt", b"new.txt") == b"old.txt => new.txt"
    assert rename_label(b"x/f", b"f") == b"x/f => f"
    assert rename_label(b"d/x/f", b"d/f") == b"d/{x => }/f"
    assert rename_label(b"caf\xc3\xa9", b"cafe") == b'"caf\\303\\251" => cafe'


# --- bad input -------------------------------------------------------------------------------


def test_missing_objects_are_all_named(tree_factory, cli):
    root = tree_factory({"a": "1\n"})
    ws = opened(root)
    good = ws.snapshot().id
    lost_blob = hash_object(BLOB, b"never stored\n")
    lost_tree = hash_object(TREE, b"")[:19] + b"\x01"
    present = hash_object(BLOB, b"1\n")
    body = encode_tree([(MODE_FILE, b"a", present), (MODE_FILE, b"b", lost_blob),
                        (MODE_TREE, b"sub", lost_tree)])
    [bad] = write_objects(ws.store, [(TREE, body)])
    with pytest.raises(IncompleteSnapshotError) as caught:
        ws.diff(good, bad)
    assert set(caught.value.missing) == {lost_blob.hex(), lost_tree.hex()}
    assert "b" in str(caught.value) and "sub" in str(caught.value)
    result = cli.run("diff", good, bad, root=root, cwd=root, text=False)
    assert result.returncode == 3
    assert lost_blob.hex().encode() in result.stderr and lost_tree.hex().encode() in result.stderr
    assert result.stdout == b""


def test_unknown_and_ambiguous_ids_exit_2_naming_them(tree_factory, cli):
    root = tree_factory({"a": "1\n"})
    ws = Workspace(root)
    good = ws.snapshot().id
    # Store trees until two share a 4-hex prefix (a few hundred, by the birthday bound).
    seen: dict[str, bytes] = {}
    objects = []
    for i in range(5000):
        body = encode_tree([(MODE_FILE, b"f%d" % i, hash_object(BLOB, b"1\n"))])
        prefix = hash_object(TREE, body).hex()[:4]
        objects.append((TREE, body))
        if prefix in seen:
            break
        seen[prefix] = body
    write_objects(ws.store, objects)
    # Prefixes resolve among ids the store handed out: hand out the two that collide.
    from undostore.store.recent import remember

    for body in (seen[prefix], objects[-1][1]):
        remember(ws.store.path, hash_object(TREE, body))
    ws.close()
    result = cli.run("diff", prefix, root=root, cwd=root, text=False)
    assert result.returncode == 2 and b"ambiguous" in result.stderr
    assert prefix.encode() in result.stderr
    result = cli.run("diff", good, "beefbeef", root=root, cwd=root, text=False)
    assert result.returncode == 2 and b"TO: unknown snapshot beefbeef" in result.stderr
    result = cli.run("diff", "not-hex", root=root, cwd=root, text=False)
    assert result.returncode == 2 and b"not-hex" in result.stderr
    blob = hash_object(BLOB, b"1\n").hex()
    result = cli.run("diff", blob, good, root=root, cwd=root, text=False)
    assert result.returncode == 2 and b"not a snapshot" in result.stderr
    with pytest.raises(UnknownSnapshotError):
        opened(root).diff("ffff0000")


# --- the command line ------------------------------------------------------------------------


def test_cli_json_has_ids_counts_and_null_for_binary(tree_factory, cli):
    root = tree_factory({"t.txt": "a\n", "b.bin": b"\x00"})
    ws = Workspace(root)
    a = ws.snapshot().id
    ws.close()
    put(root / "t.txt", "a\nb\n")
    (root / "b.bin").write_bytes(b"\x00\x01")
    result = cli.run("diff", a, "--json", root=root, cwd=root, text=False)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["from"] == a and payload["to_is_now"] is True and payload["to"] is None
    assert [(c["status"], c["path"], c["added"], c["removed"]) for c in payload["changes"]] == [
        ("M", "b.bin", None, None), ("M", "t.txt", 1, 0)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names that are not UTF-8")
def test_cli_shows_names_that_are_not_utf8(tree_factory, cli):
    root = tree_factory({"x": "1\n"})
    ws = Workspace(root)
    a = ws.snapshot().id
    ws.close()
    raw = b"caf\xe9.txt"
    with open(os.path.join(os.fsencode(root), raw), "wb") as f:
        f.write(b"x\n")
    result = cli.run("diff", a, root=root, cwd=root, text=False)
    assert result.returncode == 0 and result.stdout == b'A\t"caf\\351.txt"\n'
    result = cli.run("diff", a, "--json", root=root, cwd=root, text=False)
    assert result.returncode == 0, result.stderr
    [change] = json.loads(result.stdout)["changes"]
    assert os.fsencode(change["path"]) == raw
    result = cli.run("diff", a, "--patch", root=root, cwd=root, text=False)
    assert result.returncode == 0 and b'+++ "b/caf\\351.txt"' in result.stdout


def test_cli_paths_after_double_dash_are_not_taken_for_to(tree_factory, cli):
    root = tree_factory({"src": {"a": "1\n"}, "b": "2\n"})
    ws = Workspace(root)
    a = ws.snapshot().id
    ws.close()
    put(root / "src" / "a", "changed\n")
    put(root / "b", "changed\n")
    assert cli.run("diff", a, "--", "src", root=root, cwd=root, text=False).stdout == b"M\tsrc/a\n"
    # Relative to the current folder when it is inside the root, as in git.
    inside = cli.run("diff", a, "--", "a", root=root, cwd=root / "src", text=False)
    assert inside.stdout == b"M\tsrc/a\n"
    outside = cli.run("diff", a, "--", str(root.parent), root=root, cwd=root, text=False)
    assert outside.returncode == 2 and b"outside the root" in outside.stderr


def test_cli_colour_only_when_asked_or_on_a_terminal(tree_factory, cli):
    root = tree_factory({"a": "1\n"})
    ws = Workspace(root)
    a = ws.snapshot().id
    ws.close()
    put(root / "a", "2\n")
    piped = cli.run("diff", a, "--patch", root=root, cwd=root, text=False)
    assert b"\033[" not in piped.stdout and b"-1\n+2\n" in piped.stdout
    forced = cli.run("diff", a, "--patch", "--color=always", root=root, cwd=root, text=False)
    assert b"\033[31m-1\033[m\n" in forced.stdout
    never = cli.run("diff", a, "--patch", "--color", "never", root=root, cwd=root, text=False)
    assert never.stdout == piped.stdout


@pytest.mark.skipif(IS_WINDOWS, reason="needs a POSIX pseudo-terminal")
def test_cli_colours_on_a_terminal_by_default(tree_factory):
    import pty

    root = tree_factory({"a": "1\n"})
    ws = opened(root)
    a = ws.snapshot().id
    put(root / "a", "2\n")

    def on_terminal(term: str) -> bytes:
        leader, follower = pty.openpty()
        env = {**os.environ, "TERM": term}
        with subprocess.Popen([sys.executable, "-m", "undostore", "--root", str(root), "diff",
                               a, "--patch"], stdout=follower, stderr=subprocess.PIPE,
                              env=env) as proc:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:      # EIO once the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            proc.wait()
        os.close(leader)
        return b"".join(chunks)

    assert b"\033[31m-1\033[m" in on_terminal("xterm")
    assert b"\033[" not in on_terminal("dumb")


def test_cli_stops_quietly_when_the_reader_goes_away(tree_factory):
    root = tree_factory({f"f{i}.txt": "x\n" * 50 for i in range(200)})
    ws = Workspace(root)
    a = ws.snapshot().id
    ws.close()
    for i in range(200):
        put(root / f"f{i}.txt", "y\n" * 50)
    proc = subprocess.Popen([sys.executable, "-m", "undostore", "--root", str(root), "diff", a,
                             "--patch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"diff --git")
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait()
    assert b"Traceback" not in stderr


def test_stat_width_follows_columns_variable(tree_factory, monkeypatch, cli):
    name = "a_long_name_" * 8
    ws, a, b, root = snapshots(tree_factory, {name: "x\n"},
                               lambda root: put(root / name, "y\n" * 100))
    wide = b"".join(render("stat", ws.store, ws.diff(a, b), PLAIN, width=200))
    narrow = b"".join(render("stat", ws.store, ws.diff(a, b), PLAIN, width=40))
    assert name.encode() in wide and b"..." in narrow
    assert max(len(line) for line in narrow.splitlines()[:-1]) <= 40   # the summary may not
    ws.close()
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.run("diff", a, b, "--stat", root=root, cwd=root, text=False).stdout == wide


def test_colored_stat_paints_the_graph(tree_factory):
    ws, a, b, _ = snapshots(tree_factory, {"a": "1\n2\n"},
                            lambda root: put(root / "a", "1\n3\n4\n"))
    out = b"".join(render("stat", ws.store, ws.diff(a, b), GIT_COLORS))
    assert out.startswith(b" a | 3 \033[32m++\033[m\033[31m-\033[m\n")


@pytest.mark.skipif(IS_WINDOWS, reason="symlink privilege")
def test_patch_of_symlink_target_has_no_newline_marker(tree_factory):
    ws, a, b, _ = snapshots(tree_factory, {"l": Link("one")},
                            lambda root: (os.unlink(root / "l"), os.symlink("two", root / "l")))
    out = b"".join(render("patch", ws.store, ws.diff(a, b)))
    assert out.endswith(b"-one\n\\ No newline at end of file\n+two\n"
                        b"\\ No newline at end of file\n")


def test_diff_help_describes_the_command(tree_factory, cli):
    root = tree_factory({})
    result = cli.run("diff", "--help", root=root, cwd=root, text=False)
    assert result.returncode == 0
    for word in (b"--name-status", b"--numstat", b"--stat", b"--patch", b"--find-renames",
                 b"--color", b"--json", b"PATH"):
        assert word in result.stdout


def test_abbreviated_ids_grow_until_unique_in_the_store(tree_factory):
    ws = opened(tree_factory({"a": "1\n"}))
    ws.snapshot()
    # Blobs until two share their first 7 hex digits (~20,000 by the birthday bound).
    seen: dict[str, bytes] = {}
    objects = []
    for i in range(200_000):
        body = b"%d\n" % i
        sha = hash_object(BLOB, body)
        objects.append((BLOB, body))
        if sha.hex()[:7] in seen:
            pair = (seen[sha.hex()[:7]].hex(), sha.hex())
            break
        seen[sha.hex()[:7]] = sha
    write_objects(ws.store, objects)
    common = next(i for i in range(40) if pair[0][i] != pair[1][i])
    lonely = hash_object(BLOB, b"0\n").hex()
    for expected_ids in (0, 10**6):      # per-pack lookups, and one merged list
        abbrev = Abbrev(ws.store, expected_ids=expected_ids)
        assert abbrev(pair[0]) == pair[0][:common + 1].encode()
        assert abbrev(pair[1]) == pair[1][:common + 1].encode()
        assert len(abbrev(lonely)) == abbrev.min_len
        assert abbrev("0" * 40) == b"0" * abbrev.min_len
    count = sum(1 for _ in ws.store.object_ids())
    assert abbrev.min_len == max(7, (count.bit_length() + 1) // 2)   # git's rule for big stores

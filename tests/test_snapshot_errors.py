"""Every bad input to a snapshot, through the library and through the `undostore` command.

A failed snapshot must name the path and the cause, exit 1 (2 for a bad argument), print no id,
and leave the store as it was: no new pack, no temp file. Special files are skipped with a
warning and the snapshot succeeds. All faults are real: real permissions (a child process drops
root's privileges), real files deleted or grown by another thread or process while the snapshot
runs, real fifos, sockets and devices.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from undostore import SnapshotError, SnapshotOptions, UsageError, Workspace
from undostore.fileio import TEMP_PREFIX
from undostore.progress import Progress
from undostore.snapshot.snapshot import EMPTY_TREE

from .conftest import IS_WINDOWS

posix_only = pytest.mark.skipif(IS_WINDOWS, reason="POSIX file types and permissions")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534
CHILD_TIMEOUT = 60


def store_files(store: Path) -> tuple[set[str], list[str]]:
    """(pack and index names, temp files anywhere in the store)."""
    pack_dir = store / "objects" / "pack"
    packs = {p.name for p in pack_dir.iterdir()} if pack_dir.is_dir() else set()
    temps = [str(p) for p in store.rglob("*") if TEMP_PREFIX in p.name]
    return packs, temps


def assert_failed_cleanly(result: subprocess.CompletedProcess[str], store: Path,
                          packs_before: set[str], path: str | Path, cause: str,
                          code: int = 1) -> None:
    assert result.returncode == code, result.stderr
    assert result.stdout == "", "a failed snapshot prints no id"
    assert str(path) in result.stderr, result.stderr
    assert cause in result.stderr, result.stderr
    packs, temps = store_files(store)
    assert packs == packs_before, "a failed snapshot adds no pack"
    assert temps == []


def snapshot_cli(cli, root: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    return cli.run("--root", str(root), "--store", str(store), "snapshot", *args)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A small tree and its store, with one good snapshot already taken."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    store = tmp_path / "store"
    with Workspace(root, store=store) as ws:
        ws.snapshot()
    return root, store


# --- unreadable file ---------------------------------------------------------------------------

# Runs the snapshot in a process that cannot read a chmod-000 file. As root (who reads anyway),
# it first takes a throwaway snapshot so every module the snapshot imports lazily is loaded,
# then drops to `nobody` (the interpreter's own files may be unreadable to nobody).
_UNPRIVILEGED_CHILD = textwrap.dedent("""
    import os, sys
    import undostore_cli.main
    from undostore import UndostoreError, Workspace
    mode, warm_root, warm_store, root, store, uid = sys.argv[1:7]
    with Workspace(warm_root, store=warm_store) as ws:
        ws.snapshot()
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    if mode == "cli":
        undostore_cli.main.main(["--root", root, "--store", store, "snapshot"])
    try:
        with Workspace(root, store=store) as ws:
            print(ws.snapshot().id)
    except UndostoreError as err:
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
""")


def _tree_id(root: Path, store: Path) -> str:
    with Workspace(root, store=store) as ws:
        return ws.snapshot().id


@posix_only
@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.parametrize("mode", ["library", "cli"])
def test_unreadable_file_or_folder_is_left_out_with_a_warning(mode: str, what: str,
                                                              tmp_path: Path):
    """A file or folder this user cannot read skips itself, not the tree: the snapshot records
    everything else (the id is that of the tree without it), the command's warning names it and
    the cause, and the next snapshot warns again (its listing is never reused)."""
    # A folder outside pytest's 0700 temp root, so `nobody` can reach it.
    work = Path(tempfile.mkdtemp(prefix="undostore-unreadable-"))
    try:
        os.chmod(work, 0o755)
        root = work / "tree"
        (root / "sub").mkdir(parents=True)
        (root / "ok.txt").write_text("fine")
        (root / "sub" / "other.txt").write_text("readable")
        secret = root / "sub" / "secret.txt"
        secret.write_text("no one may read this")
        store = work / "store"
        _tree_id(root, store)
        secret.write_text("changed, so the stat cache cannot answer for it")
        locked = secret if what == "file" else secret.parent
        without = tmp_path / "without"
        shutil.copytree(root, without)
        if what == "folder":
            shutil.rmtree(without / "sub")
        else:
            (without / "sub" / "secret.txt").unlink()
        expected = _tree_id(without, tmp_path / "other-store")
        warm = tmp_path / "warm"
        warm.mkdir()
        (warm / "f").write_text("warm-up")
        if IS_ROOT:
            for path in [work, *work.rglob("*")]:
                os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        locked.chmod(0)
        for _ in range(2):   # the second run warns again: nothing about it was cached
            result = subprocess.run(
                [sys.executable, "-c", _UNPRIVILEGED_CHILD, mode, str(warm), str(tmp_path / "ws"),
                 str(root), str(store), str(NOBODY)],
                capture_output=True, text=True, timeout=CHILD_TIMEOUT)
            assert result.returncode == 0, result.stderr
            assert result.stdout.split()[-1] == expected
            if mode == "cli":
                assert ("sub/secret.txt" if what == "file" else "sub") in result.stderr
                assert "skipped: cannot read this" in result.stderr, result.stderr
                assert "Permission denied" in result.stderr, result.stderr
        assert store_files(store)[1] == []
    finally:
        for path in (secret, secret.parent):
            if path.exists():
                path.chmod(0o755)
        shutil.rmtree(work, ignore_errors=True)


DROP_READ_RIGHTS = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


@pytest.mark.skipif(IS_WINDOWS or not IS_ROOT or shutil.which("setpriv") is None,
                    reason="root, dropping its right to read every file (setpriv)")
def test_an_undo_never_overwrites_a_file_it_could_not_read(tmp_path: Path, cli):
    """A file left out as unreadable is never written over: an undo that would bring back the
    content it had refuses (exit 3, naming it) with nothing changed, --whole too. The commands
    run as root without the rights to read every file (as any user is)."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    secret = root / "secret.txt"
    secret.write_text("first\n")
    env = {**os.environ, "UNDOSTORE_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*DROP_READ_RIGHTS, *cli.argv(*args)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT)

    assert run("snapshot", "-s", "s", "--label", "one").returncode == 0
    secret.write_text("second, unreadable\n")
    secret.chmod(0)
    (root / "a.txt").write_text("b\n")
    second = run("snapshot", "-s", "s", "--label", "two")
    assert second.returncode == 0, second.stderr
    assert "secret.txt: skipped: cannot read this file (Permission denied)" in second.stderr
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "go on"}
    hooked = subprocess.run([*DROP_READ_RIGHTS, *cli.argv("hook")], cwd=root, env=env,
                            input=json.dumps(event), capture_output=True, text=True,
                            timeout=CHILD_TIMEOUT)
    assert hooked.returncode == 0 and hooked.stdout == "", hooked.stderr
    assert hooked.stderr == ("undostore: warning: left out of the undo point (cannot be read): "
                             "secret.txt\n")
    for how in ([], ["--whole"]):
        undo = run("undo", "-s", "s", "--yes", *how)
        assert undo.returncode == 3, undo.stderr
        assert "secret.txt: exists but is not in the safety snapshot" in undo.stderr
        assert "unreadable" in undo.stderr
        assert secret.read_text() == "second, unreadable\n"
        assert stat.S_IMODE(secret.stat().st_mode) == 0
        assert (root / "a.txt").read_text() == "b\n"


@posix_only
def test_a_path_longer_than_the_system_takes_is_left_out(tmp_path: Path, cli):
    """Folders nested past PATH_MAX (4,096 bytes on Linux): the part that cannot be reached by
    its path is left out with a warning naming where it starts; the rest is recorded."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "kept.txt").write_text("kept")
    name = "d" * 200
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(30):   # 30 x 201 bytes: past 4,096 from any root
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        made = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(made, b"deep")
        os.close(made)
    finally:
        os.close(fd)
    store = tmp_path / "store"
    try:
        result = snapshot_cli(cli, root, store)
        assert result.returncode == 0, result.stderr
        assert "skipped: cannot read this folder (File name too long)" in result.stderr
        alone = tmp_path / "alone"
        alone.mkdir()
        (alone / "kept.txt").write_text("kept")
        assert result.stdout.strip() == _tree_id(alone, tmp_path / "other-store")
        again = snapshot_cli(cli, root, store)
        assert again.returncode == 0 and again.stdout == result.stdout, again.stderr
        assert "File name too long" in again.stderr
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)


# --- a file that vanishes between the walk and the read ----------------------------------------


def _many_files(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"f{i:05d}").write_text(f"file {i}")


def test_files_vanishing_after_the_walk_are_read_again_never_half_recorded(tmp_path: Path):
    """Every file deleted while the first attempt hashes: that attempt leaves no pack, and the
    snapshot is taken again: its id is the state the tree is in (empty), never a mix."""
    root = tmp_path / "tree"
    _many_files(root, 1500)
    store = tmp_path / "store"
    with Workspace(tmp_path / "tree", store=store):
        pass
    packs_before, _ = store_files(store)
    deleted: list[str] = []

    def delete_everything_on_first_progress(progress: Progress) -> None:
        # Called after 1,000 files were hashed: the walk has listed all 1,500.
        if progress.files_done < progress.files_total and not deleted:
            for name in os.listdir(root):
                os.unlink(root / name)
                deleted.append(name)

    with Workspace(root, store=store) as ws:
        result = ws.snapshot(options=SnapshotOptions(
            on_progress=delete_everything_on_first_progress, hash_threads=1))
    assert deleted, "the progress callback ran while files were still to be read"
    assert result.id == EMPTY_TREE.hex() and result.files == 0
    packs, temps = store_files(store)
    assert temps == [] and len(packs) <= len(packs_before) + 2


@posix_only
def test_file_vanishing_under_the_command_fails_it_cleanly(tmp_path: Path, cli):
    """Another process deletes and recreates files without pause while `undostore snapshot` runs:
    the tree never holds still, so each run, after its retries, fails cleanly (exit 1 naming the
    folder), never half-records."""
    root = tmp_path / "tree"
    churn = root / "churn"
    _many_files(churn, 300)
    store = tmp_path / "store"
    assert snapshot_cli(cli, root, store).returncode == 0
    churner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os
        folder = {str(churn)!r}
        names = sorted(os.listdir(folder))
        while True:
            for name in names:
                path = os.path.join(folder, name)
                os.unlink(path)
                with open(path, "w") as f:
                    f.write(name)
    """)])
    vanished = 0
    deadline = time.monotonic() + 90
    try:
        # A run catches a file between the walk and its read now and then (1 in 10 to 1 in
        # 60, with the machine's load): run until two have, not a fixed number of times.
        while time.monotonic() < deadline:
            packs_before, _ = store_files(store)
            result = snapshot_cli(cli, root, store)
            if result.returncode == 0:
                assert len(result.stdout.strip()) == 40
                continue
            assert_failed_cleanly(result, store, packs_before, churn,
                                  "the tree kept changing while it was read (3 tries")
            vanished += 1
            if vanished >= 2:
                break
    finally:
        churner.kill()
        churner.wait()
    assert vanished >= 1, "no run met the churn in 90 s"


# --- a file that changes while it is being read ------------------------------------------------

BIG = 12 << 20  # above the streaming threshold: each read takes long enough to see writes


def _appender(path: Path, stop: threading.Event) -> None:
    with open(path, "ab", buffering=0) as f:
        while not stop.is_set():
            f.write(b"more bytes\n")


def test_file_growing_during_the_snapshot_fails_it(tmp_path: Path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "steady.txt").write_text("steady")
    growing = root / "growing.log"
    growing.write_bytes(os.urandom(BIG))
    store = tmp_path / "store"
    with Workspace(root, store=store):
        pass
    packs_before, _ = store_files(store)
    stop = threading.Event()
    writer = threading.Thread(target=_appender, args=(growing, stop), daemon=True)
    writer.start()
    try:
        with Workspace(root, store=store) as ws, pytest.raises(SnapshotError) as caught:
            ws.snapshot()
    finally:
        stop.set()
        writer.join()
    assert caught.value.path == str(growing)
    assert "changed while being read" in caught.value.message
    assert store_files(store) == (packs_before, [])


def test_file_growing_under_the_command_fails_it(tree: tuple[Path, Path], cli):
    root, store = tree
    growing = root / "sub" / "growing.log"
    growing.write_bytes(os.urandom(BIG))
    appender = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        with open({str(growing)!r}, "ab", buffering=0) as f:
            while True:
                f.write(b"more bytes\\n")
    """)])
    try:
        deadline = time.monotonic() + 20
        while growing.stat().st_size == BIG:  # wait until the other process really writes
            assert time.monotonic() < deadline, "the appending process never started"
            time.sleep(0.01)
        packs_before, _ = store_files(store)
        result = snapshot_cli(cli, root, store)
    finally:
        appender.kill()
        appender.wait()
    assert_failed_cleanly(result, store, packs_before, growing, "changed while being read")


# --- special files -----------------------------------------------------------------------------


def _make_special_files(root: Path) -> list[str]:
    """A fifo, a socket and (where allowed) a device; returns their relative paths."""
    made = []
    os.mkfifo(root / "fifo")
    made.append("fifo")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "sub" / "sock"))
    finally:
        sock.close()
    made.append("sub/sock")
    try:
        os.mknod(root / "sub" / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        made.append("sub/null")
    except PermissionError:
        pass  # creating devices needs privileges; the fifo and socket still test the rule
    return made


@posix_only
def test_special_files_are_skipped_with_a_warning(tree: tuple[Path, Path], git):
    root, store = tree
    special = _make_special_files(root)
    with Workspace(root, store=store) as ws:
        result = ws.snapshot()
    assert sorted(path for path, _ in result.warnings) == sorted(special)
    assert all("not a regular file" in message for _, message in result.warnings)
    assert result.files == 2
    assert result.id == git.write_tree(root)  # git skips them too


@posix_only
def test_special_files_are_skipped_with_a_warning_by_the_command(tree: tuple[Path, Path], cli):
    root, store = tree
    special = _make_special_files(root)
    result = snapshot_cli(cli, root, store)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip()) == 40
    for path in special:
        assert f"warning: {path}: skipped" in result.stderr


def test_file_replaced_by_a_fifo_after_the_walk_fails_without_hanging(tmp_path: Path):
    """Opening a fifo for reading waits for a writer: the snapshot must not wait forever."""
    if IS_WINDOWS:
        pytest.skip("no fifos on Windows")
    root = tmp_path / "tree"
    _many_files(root, 1200)
    script = textwrap.dedent(f"""
        import os, sys
        from undostore import SnapshotOptions, UndostoreError, Workspace
        root = {str(root)!r}
        def swap_files_for_fifos(progress):
            if progress.files_done < progress.files_total:
                for name in os.listdir(root):
                    os.unlink(os.path.join(root, name))
                    os.mkfifo(os.path.join(root, name))
        try:
            with Workspace(root, store={str(tmp_path / "store")!r}) as ws:
                ws.snapshot(options=SnapshotOptions(on_progress=swap_files_for_fifos,
                                                    hash_threads=1))
        except UndostoreError as err:
            print(err, file=sys.stderr)
            sys.exit(err.exit_code)
    """)
    try:
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the snapshot blocked opening a fifo that replaced a file after the walk")
    assert result.returncode == 1, result.stderr
    assert str(root) in result.stderr and "regular file" in result.stderr


# --- refused roots -----------------------------------------------------------------------------


@posix_only
def test_file_system_root_is_refused(tmp_path: Path, cli):
    with pytest.raises(SnapshotError) as caught:
        Workspace("/")
    assert caught.value.path == "/" and "--force" in caught.value.message
    result = cli.run("--root", "/", "snapshot")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "/: refusing" in result.stderr and "--force" in result.stderr
    assert not (Path(os.environ["UNDOSTORE_HOME"]) / "stores").exists(), "no store is created"


def test_home_folder_is_refused_unless_forced(tmp_path: Path, cli):
    home = Path(os.environ["HOME"]).resolve()
    (home / "notes.txt").write_text("mine")
    with pytest.raises(SnapshotError) as caught:
        Workspace(home)
    assert caught.value.path == str(home) and "home folder" in caught.value.message
    result = cli.run("--root", str(home), "snapshot")
    assert (result.returncode, result.stdout) == (1, "")
    assert f"{home}: refusing" in result.stderr and "--force" in result.stderr
    assert not (home / ".undostore" / "stores").exists(), "no store is created"

    forced = cli.run("--root", str(home), "--force", "snapshot", "--json")
    assert forced.returncode == 0, forced.stderr
    with Workspace(home, force=True) as ws:
        result_forced = ws.snapshot()
    # The store lies under the home folder here and is never captured.
    assert result_forced.files == 1
    assert f'"id": "{result_forced.id}"' in forced.stdout


@posix_only
def test_symlink_to_the_home_folder_is_refused(tmp_path: Path, cli):
    home = Path(os.environ["HOME"]).resolve()
    link = tmp_path / "looks-harmless"
    link.symlink_to(home)
    result = cli.run("--root", str(link), "snapshot")
    assert result.returncode == 1 and str(home) in result.stderr


# --- too many files ----------------------------------------------------------------------------


def test_more_files_than_the_limit_fail_with_a_clear_message(tree: tuple[Path, Path], cli):
    root, store = tree
    for i in range(5):
        (root / f"extra{i}").write_text(str(i))
    packs_before, _ = store_files(store)
    with Workspace(root, store=store) as ws, pytest.raises(SnapshotError) as caught:
        ws.snapshot(options=SnapshotOptions(max_files=3))
    assert "more than 3 files" in caught.value.message
    assert caught.value.path == os.path.realpath(root)
    result = snapshot_cli(cli, root, store, "--max-files", "3")
    assert_failed_cleanly(result, store, packs_before, f"{os.path.realpath(root)}: more than 3",
                          "more than 3 files")
    assert "--max-files" in result.stderr
    assert snapshot_cli(cli, root, store, "--max-files", "7").returncode == 0


def test_max_files_must_be_a_positive_number(tree: tuple[Path, Path], cli):
    root, store = tree
    result = snapshot_cli(cli, root, store, "--max-files", "0")
    assert (result.returncode, result.stdout) == (2, "")
    assert "--max-files" in result.stderr


# --- roots that are not folders ----------------------------------------------------------------


def test_missing_root_is_a_usage_error(tmp_path: Path, cli):
    missing = tmp_path / "does-not-exist"
    with pytest.raises(UsageError) as caught:
        Workspace(missing)
    assert caught.value.path == str(missing)
    result = cli.run("--root", str(missing), "snapshot")
    assert (result.returncode, result.stdout) == (2, "")
    assert str(missing) in result.stderr and "not a folder" in result.stderr
    assert not missing.exists()


def test_root_that_is_a_file_is_a_usage_error(tmp_path: Path, cli):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    result = cli.run("--root", str(a_file), "snapshot")
    assert (result.returncode, result.stdout) == (2, "")
    assert str(a_file) in result.stderr


def test_undostore_max_files_is_read_by_every_entry_and_said_by_status_and_doctor(
        tree: tuple[Path, Path], cli):
    """UNDOSTORE_MAX_FILES is the limit of the hook, `snapshot` and a restore's safety snapshot
    alike; a tree over it records nothing, the hook's line names the setting, and `status` (a
    footer) and `doctor` say so until a snapshot succeeds again."""
    root, _ = tree
    env = {**os.environ, "UNDOSTORE_MAX_FILES": "3"}
    for i in range(5):
        (root / f"extra{i}").write_text(str(i))
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "go", "prompt_id": "p1"}
    hooked = cli.run("hook", cwd=root, env=env, input=json.dumps(event))
    assert hooked.returncode == 1 and hooked.stderr.count("\n") == 1, hooked.stderr
    assert "more than 3 files" in hooked.stderr and "UNDOSTORE_MAX_FILES" in hooked.stderr
    status = cli.run("status", cwd=root, env=env)
    assert status.stdout == "undo:0 redo:0 over-max-files(3: UNDOSTORE_MAX_FILES)\n"
    doctor = json.loads(cli.run("doctor", "--json", cwd=root, env=env).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "files"]
    assert not check["ok"] and "UNDOSTORE_MAX_FILES" in check["detail"]
    assert cli.run("snapshot", cwd=root, env=env).returncode == 1
    bad = cli.run("snapshot", cwd=root, env={**env, "UNDOSTORE_MAX_FILES": "many"})
    assert bad.returncode == 2 and "UNDOSTORE_MAX_FILES='many'" in bad.stderr
    raised = {**env, "UNDOSTORE_MAX_FILES": "100"}
    assert cli.run("hook", cwd=root, env=raised, input=json.dumps(
        {**event, "prompt_id": "p2"})).returncode == 0
    assert cli.run("status", "--json", cwd=root, env=raised).stdout.count(
        '"over_max_files": null') == 1

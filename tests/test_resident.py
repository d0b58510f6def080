"""The hook through the resident per-user process (on by default; cli/resident_client.py,
cli/resident/serve.py): real hook processes, a real resident process started by the first of
them, real kills, a real change of its code on disk."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from undostore_cli import resident_client as resident

from undostore import Workspace

from .process_support import alive

pytestmark = pytest.mark.skipif(not resident.available(),
                                reason="descriptor passing and peer credentials (Linux)")

WAIT_SECONDS = 30.0


def hook(event: dict, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    raw = json.dumps(event).encode() if stdin is None else stdin
    return subprocess.run([sys.executable, "-m", "undostore", "hook"], input=raw,
                          capture_output=True, cwd=cwd, timeout=120)


def prompt(root: Path, text: str, prompt_id: str) -> dict:
    return {"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
            "prompt": text, "prompt_id": prompt_id}


def run_folder() -> Path:
    return Path(os.environ["UNDOSTORE_HOME"]) / "run"


def state() -> dict:
    try:
        return json.loads((run_folder() / resident.STATE_NAME).read_text())
    except (OSError, ValueError):
        return {}


def until(check, what: str):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def serving() -> bool:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(run_folder() / resident.SOCKET_NAME))
        return True
    except OSError:
        return False
    finally:
        conn.close()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def lock_is_free() -> bool:
    import fcntl

    path = run_folder() / resident.LOCK_NAME
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@pytest.fixture
def on(monkeypatch):  # noqa: ANN001, ANN201
    """The setting on for every process the test starts; the resident process stopped after."""
    monkeypatch.setenv("UNDOSTORE_RESIDENT", "on")
    yield
    pid = state().get("pid")
    if pid and alive(pid):
        os.kill(pid, signal.SIGTERM)
    until(lock_is_free, "the resident process to leave")


def started(root: Path) -> int:
    """A first hook call (run in its own process) starts the resident process: its pid."""
    done = hook(prompt(root, "first", "p0"), root)
    assert done.returncode == 0, done.stderr
    until(serving, "the resident process to listen")
    return until(lambda: state().get("pid"), "its state")


def served() -> int:
    return state().get("served", 0)


def test_hook_calls_run_in_the_resident_process_and_record_what_they_would_alone(
        tree_factory, on):
    root = tree_factory({"a.txt": "1", "src": {"m.py": "x"}})
    pid = started(root)
    (root / "a.txt").write_text("2")
    done = hook(prompt(root, "second", "p1"), root)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    until(lambda: served() >= 1, "the call to be counted")
    done = hook({"session_id": "s", "cwd": str(root), "hook_event_name": "Stop"}, root)
    assert (done.returncode, done.stdout) == (0, b"")
    until(lambda: served() >= 2, "the after-turn call to be counted")
    assert state()["pid"] == pid
    with Workspace(root) as ws:
        log = ws.log("s")
        assert [p.label for p in log.undo] == ["second", "first"]
        assert log.undo[0].after == ws.snapshot().id
    # Each later call's child starts from the stat cache the one before left (preloaded by the
    # resident process while its files are unchanged): each records the files as they are.
    for n in range(3):
        (root / "src" / "m.py").write_text(f"version {n}")
        (root / f"new{n}.txt").write_text("new")
        done = hook(prompt(root, f"turn {n}", f"t{n}"), root)
        assert (done.returncode, done.stderr) == (0, b"")
        until(lambda n=n: served() >= 3 + n, "the call to be counted")
        with Workspace(root) as ws:
            assert ws.log("s").undo[0].label == f"turn {n}"
            assert ws.log("s").undo[0].id == ws.snapshot().id


def test_an_undo_through_the_resident_process_answers_the_host_and_restores(tree_factory, on):
    root = tree_factory({"a.txt": "1"})
    started(root)
    done = hook(prompt(root, "change a", "p1"), root)
    assert done.returncode == 0
    (root / "a.txt").write_text("changed by the agent")
    assert hook({"session_id": "s", "cwd": str(root), "hook_event_name": "Stop"},
                root).returncode == 0
    done = hook(prompt(root, "/undo", "p2"), root)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block" and "undid" in answer["reason"]
    assert (root / "a.txt").read_text() == "1"
    until(lambda: served() >= 3, "the three calls to be counted")


def test_the_footers_status_runs_in_the_resident_process_and_says_what_it_would_alone(
        tree_factory, on, monkeypatch):
    """`status` as a host's footer runs it (its statusLine JSON on stdin) is served too, and
    prints what it prints in its own process, before and after an undo."""
    root = tree_factory({"a.txt": "1"})
    started(root)
    assert hook(prompt(root, "change a", "p1"), root).returncode == 0
    (root / "a.txt").write_text("2")
    assert hook({"session_id": "s", "cwd": str(root), "hook_event_name": "Stop"},
                root).returncode == 0
    footer = json.dumps({"session_id": "s", "cwd": str(root)}).encode()

    def status(*args: str) -> tuple[int, object, bytes]:
        done = subprocess.run([sys.executable, "-m", "undostore", "status", *args],
                              input=footer, capture_output=True, cwd=root, timeout=60)
        said: object = done.stdout
        if args:
            said = json.loads(done.stdout)
            said.pop("last_point_age_seconds")   # moves between the two runs
        return done.returncode, said, done.stderr

    for undo in (False, True):
        if undo:
            assert hook(prompt(root, "/undo", "p2"), root).returncode == 0
        count = served()
        through = [status(), status("--json")]
        until(lambda count=count: served() >= count + 2, "the two status calls to be counted")
        monkeypatch.setenv("UNDOSTORE_RESIDENT", "off")
        alone = [status(), status("--json")]
        monkeypatch.setenv("UNDOSTORE_RESIDENT", "on")
        assert through == alone
        assert through[0][1] == (b"undo:0 redo:1\n" if undo else b"undo:1 redo:0\n")


def test_a_resident_process_running_other_code_refuses_and_leaves(tree_factory, on):
    root = tree_factory({"a.txt": "1"})
    pid = started(root)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(run_folder() / resident.SOCKET_NAME))
    request = resident.encode_request({"argv": ["hook"], "env": {}, "umask": 0o22,
                                       "stamp": "other code", "streams": [{}, {}, {}]})
    cwd = os.open(root, os.O_RDONLY)
    try:
        socket.send_fds(conn, [request], [0, 1, 2, cwd])
    finally:
        os.close(cwd)
    assert conn.recv(1) == resident.REFUSED
    conn.close()
    until(lambda: not alive(pid), "the refusing resident process to leave")
    assert not (run_folder() / resident.SOCKET_NAME).exists()
    # The next call runs in its own process, as before.
    (root / "a.txt").write_text("2")
    done = hook(prompt(root, "after", "p1"), root)
    assert done.returncode == 0, done.stderr
    with Workspace(root) as ws:
        assert ws.log("s").undo[0].label == "after"


def test_a_caller_killed_while_waiting_has_its_child_ended(tree_factory, on):
    root = tree_factory({"a.txt": "1"})
    pid = started(root)
    # A hook whose event never comes: its child waits on the caller's stdin.
    waiting = subprocess.Popen([sys.executable, "-m", "undostore", "hook"], cwd=root,
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        (child,) = until(lambda: children_of(pid), "the call's child")
        waiting.kill()   # as a host's time-out would
        waiting.wait(timeout=30)
        until(lambda: not alive(child), "the child to be ended")
    finally:
        waiting.stdin.close()   # type: ignore[union-attr]
        if waiting.poll() is None:
            waiting.kill()
    assert alive(pid)   # the resident process itself goes on serving
    assert hook(prompt(root, "next", "p1"), root).returncode == 0


def test_a_run_folder_others_may_enter_is_never_used(tree_factory, on):
    root = tree_factory({"a.txt": "1"})
    folder = run_folder()
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "undostore_cli.resident.serve"], timeout=60)
    assert done.returncode == 1
    for n in range(2):
        (root / "a.txt").write_text(f"edit {n}")
        done = hook(prompt(root, f"p{n}", f"p{n}"), root)
        assert done.returncode == 0, done.stderr
        # Said, one line each call, and the prompt recorded all the same.
        (line,) = [x for x in done.stderr.decode().splitlines() if "resident" in x]
        assert f"the resident process is not used ({folder} is not yours alone" in line, line
    assert sorted(p.name for p in folder.iterdir()) == []
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").undo] == ["p1", "p0"]


def test_something_not_a_socket_in_its_place_is_said_and_replaced(tree_factory, on):
    root = tree_factory({"a.txt": "1"})
    folder = run_folder()
    folder.mkdir(parents=True, mode=0o700)
    (folder / resident.SOCKET_NAME).write_text("planted")
    done = hook(prompt(root, "p0", "p0"), root)
    assert done.returncode == 0, done.stderr
    assert "is not a socket of yours in a folder of yours alone" in done.stderr.decode()
    until(serving, "a resident process to take its place")
    (root / "a.txt").write_text("2")
    done = hook(prompt(root, "p1", "p1"), root)
    assert done.returncode == 0 and b"resident" not in done.stderr, done.stderr
    until(lambda: served() >= 1, "the call to be served")


def test_an_idle_resident_process_leaves_and_takes_its_socket(tmp_path, on):
    done = subprocess.run([sys.executable, "-c", "from undostore_cli.resident import serve; "
                           "raise SystemExit(serve.serve(idle_seconds=0.5))"], timeout=60)
    assert done.returncode == 0
    assert not (run_folder() / resident.SOCKET_NAME).exists()
    assert state()["ended"] is True


def test_on_by_default_and_off_starts_nothing(tree_factory, monkeypatch):
    monkeypatch.setenv("UNDOSTORE_RESIDENT", "off")
    root = tree_factory({"a.txt": "1"})
    assert hook(prompt(root, "p", "p0"), root).returncode == 0
    assert not run_folder().exists()
    monkeypatch.delenv("UNDOSTORE_RESIDENT")
    (root / "a.txt").write_text("2")
    done = hook(prompt(root, "p", "p1"), root)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    until(serving, "the resident process the default starts")
    (root / "a.txt").write_text("3")
    assert hook(prompt(root, "p", "p2"), root).returncode == 0
    until(lambda: served() >= 1, "the call to be served")
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").undo] == ["p", "p", "p"]


def test_a_resident_process_leaves_once_its_code_changes_on_disk(tmp_path, on):
    """Never outliving an upgrade: a resident process running from a copy of the code leaves
    by itself (no call needed) once a module of that copy changes."""
    import shutil

    import undostore_cli

    import undostore

    copy = tmp_path / "code"
    shutil.copytree(Path(undostore.__file__).parent, copy / "undostore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(undostore_cli.__file__).parent, copy / "undostore_cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy)}
    server = subprocess.Popen([sys.executable, "-m", resident.SERVE_MODULE], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        until(serving, "the resident process to listen")
        time.sleep(1.0)
        assert server.poll() is None   # nothing changed: it stays
        module = copy / "undostore" / "settings.py"
        module.write_text(module.read_text() + "\n# upgraded\n")
        assert server.wait(timeout=30) == 0, server.stderr.read()   # type: ignore[union-attr]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert not serving()
    assert state()["ended"] is True


def test_the_home_is_where_the_setting_says_and_under_the_users_folder_without_it(monkeypatch,
                                                                               tmp_path):
    from undostore import home

    monkeypatch.setenv("UNDOSTORE_HOME", str(tmp_path / "h"))
    assert home.home() == str(tmp_path / "h")
    assert home.run_folder() == str(tmp_path / "h" / "run") == resident.run_folder()
    monkeypatch.setenv("UNDOSTORE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert home.home() == str(tmp_path / "home" / ".undostore")


def test_a_hook_call_reaches_the_resident_process_importing_no_typing_nor_more_than_the_home(
        tree_factory, on):
    """The caller's whole cost is its start: what it imports is pinned here (of the library,
    the home's module alone: one place says where the home is and what is private)."""
    root = tree_factory({"a.txt": "1"})
    started(root)
    code = ("import sys\nfrom undostore_cli.entry import main\ntry:\n    main(['hook'])\n"
            "except SystemExit as done:\n    print(sorted(sys.modules), file=sys.stderr)\n"
            "    raise\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          input=json.dumps(prompt(root, "lean", "p1")).encode(), timeout=60)
    assert done.returncode == 0, done.stderr
    modules = eval(done.stderr.decode().strip().splitlines()[-1])   # noqa: S307 (our own list)
    assert [m for m in modules if m == "typing" or m.startswith("undostore")] == [
        "undostore", "undostore.home", "undostore_cli", "undostore_cli.entry",
        "undostore_cli.invocation", "undostore_cli.resident_client"]
    until(lambda: served() >= 1, "the call to be counted")


def doctor_check(root: Path) -> dict | None:
    done = subprocess.run([sys.executable, "-m", "undostore", "doctor", "--json"], cwd=root,
                          capture_output=True, timeout=120)
    checks = json.loads(done.stdout)["checks"]
    return next((c for c in checks if c["name"] == "resident process"), None)


def test_doctor_says_whether_the_resident_process_can_serve(tree_factory, on, monkeypatch):
    root = tree_factory({"a.txt": "1"})
    check = doctor_check(root)
    assert check["ok"] and "the next hook call starts one" in check["detail"]
    pid = started(root)
    check = doctor_check(root)
    assert check["ok"] and f"pid {pid}" in check["detail"], check
    os.kill(pid, signal.SIGTERM)
    until(lock_is_free, "the resident process to leave")
    # One killed without a word, its pid since another program's: not taken for serving.
    state_file = run_folder() / resident.STATE_NAME
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state_file.write_text(json.dumps({"pid": other.pid, "served": 4, "ended": False}))
        check = doctor_check(root)
        assert check["ok"] and "none runs now (the last one ran 4 call(s))" in check["detail"], \
            check
    finally:
        state_file.unlink()
        other.kill()
        other.wait()
    run_folder().chmod(0o755)
    check = doctor_check(root)
    assert not check["ok"] and "not yours alone" in check["detail"], check
    monkeypatch.setenv("UNDOSTORE_RESIDENT", "off")
    check = doctor_check(root)
    assert check["ok"] and check["detail"].startswith("off (UNDOSTORE_RESIDENT=off)"), check


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="a listener of another user is made by root dropping its user")
def test_a_listener_of_another_user_is_sent_nothing(tree_factory, on):
    """Were `run/` swapped between the caller's look and its connect, the socket's peer
    credentials still tell: a process of another user gets neither the call nor its
    descriptors, and the hook runs in its own process."""
    root = tree_factory({"a.txt": "1"})
    folder = run_folder()
    folder.mkdir(parents=True, mode=0o700)
    listener = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "s.bind(sys.argv[1])\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s.listen(1)\n"
        "print('listening', flush=True)\n"
        "c, _ = s.accept()\n"
        "c.settimeout(10)\n"
        "print('got', len(c.recv(65536)), flush=True)\n")
    other = subprocess.Popen([sys.executable, "-c", listener,
                              str(folder / resident.SOCKET_NAME)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "listening"   # type: ignore[union-attr]
        done = hook(prompt(root, "mine", "p0"), root)
        assert done.returncode == 0, done.stderr
        out, _ = other.communicate(timeout=30)
        assert out.strip() == "got 0"   # the caller connected, looked, and left
    finally:
        if other.poll() is None:
            other.kill()
    with Workspace(root) as ws:
        assert ws.log("s").undo[0].label == "mine"


def test_under_umask_002_the_home_it_makes_is_private_and_hooks_go_on_recording(
        tree_factory, on, monkeypatch, tmp_path):
    """Issue 55, item 4: Debian's and Ubuntu's default umask for user groups. The resident
    process made a missing home 0775, and every hook then failed ("writable by others")."""
    root = tree_factory({"a.txt": "1"})
    home = tmp_path / "fresh" / "home"
    monkeypatch.setenv("UNDOSTORE_HOME", str(home))
    umask_002 = ("import os, sys; os.umask(0o002); "
                 "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")
    serve = subprocess.run([sys.executable, "-c", umask_002, "-c",
                            "from undostore_cli.resident import serve as resident_serve; "
                            "raise SystemExit(resident_serve.serve(idle_seconds=0.5))"],
                           timeout=60)
    assert serve.returncode == 0
    for folder in (home.parent, home, home / "run"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    for n in range(2):
        (root / "a.txt").write_text(f"before turn {n}")
        done = subprocess.run([sys.executable, "-c", umask_002, "-m", "undostore", "hook"],
                              input=json.dumps(prompt(root, f"turn {n}", f"p{n}")).encode(),
                              capture_output=True, cwd=root, timeout=120)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").undo] == ["turn 1", "turn 0"]


def test_a_call_finished_after_the_resident_process_was_killed_is_reported_done(
        tree_factory, on):
    """Issue 55, item 5: the resident process killed (an upgrade, the OOM killer) while a
    child runs; the child finishes, and its caller hears its exit code, not a failure."""
    root = tree_factory({"a.txt": "1"})
    pid = started(root)
    (root / "a.txt").write_text("2")
    waiting = subprocess.Popen([sys.executable, "-m", "undostore", "hook"], cwd=root,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        until(lambda: children_of(pid), "the call's child")
        os.kill(pid, signal.SIGKILL)
        until(lambda: not alive(pid), "the resident process to be gone")
        out, err = waiting.communicate(json.dumps(prompt(root, "after the kill", "p1")).encode(),
                                       timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert (waiting.returncode, out, err) == (0, b"", b"")
    with Workspace(root) as ws:
        assert ws.log("s").undo[0].label == "after the kill"


def test_the_footers_status_starts_no_resident_process_and_makes_nothing(tree_factory, on,
                                                                         monkeypatch, tmp_path):
    """Issue 55, item 9: `status` is read-only; in a folder nothing protects it made run/ and
    started a resident process. Only the hook starts one."""
    root = tree_factory({"a.txt": "1"})
    home = tmp_path / "untouched-home"
    monkeypatch.setenv("UNDOSTORE_HOME", str(home))
    line = json.dumps({"session_id": "s", "cwd": str(root)}).encode()
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "undostore", "status"], input=line,
                              capture_output=True, cwd=root, timeout=120)
        assert (done.returncode, done.stdout.split()[:2]) == (0, [b"undo:0", b"redo:0"]), \
            done.stderr
    time.sleep(0.5)   # a resident process started in the background would have made run/
    assert not home.exists()


def test_a_run_folder_swapped_for_a_link_after_start_is_never_written_through(tmp_path, on):
    """Issue 55, item 15: the resident process wrote run/resident.json by path after it had
    started, so one who could write the home swapped run/ for a link and the process (root's,
    say) wrote through it. It now writes only in the folder it opened."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    serving_process = subprocess.Popen(
        [sys.executable, "-c", "from undostore_cli.resident import serve as resident_serve; "
                               "raise SystemExit(resident_serve.serve(idle_seconds=2))"])
    try:
        until(serving, "the resident process to listen")
        folder = run_folder()
        folder.rename(folder.with_name("run.moved"))
        folder.symlink_to(elsewhere)
        assert serving_process.wait(timeout=60) == 0
    finally:
        if serving_process.poll() is None:
            serving_process.kill()
    assert list(elsewhere.iterdir()) == []
    moved = json.loads((folder.with_name("run.moved") / resident.STATE_NAME).read_text())
    assert moved["ended"] is True


def test_a_home_others_may_write_is_refused_as_the_store_refuses_it(tmp_path, on, monkeypatch):
    home = tmp_path / "shared-home"
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("UNDOSTORE_HOME", str(home))
    done = subprocess.run([sys.executable, "-c", "from undostore_cli.resident import serve; "
                           "raise SystemExit(serve.serve(idle_seconds=0.5))"],
                          timeout=60)
    assert done.returncode == 1
    assert list(home.iterdir()) == []


WARM_CHECK = """
import io, json, sys
from undostore_cli.resident import serve as resident_serve
resident_serve._warm()
before = set(sys.modules)
from undostore_cli.entry import main
for argv, stdin in json.loads(sys.argv[1]):
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        main(argv)
    except SystemExit:
        pass
new = sorted(m for m in set(sys.modules) - before if m.startswith("undostore"))
print(json.dumps(new), file=sys.__stdout__)
"""


def test_the_warm_up_list_holds_what_a_hook_and_a_status_call_import(tree_factory, monkeypatch):
    """Issue 56: the resident process imports `WARM_MODULES` once; a module missing from the
    list is imported again by every call's child. A prompt, the turn's end, an `/undo` and a
    footer's status, run after the warm-up, import no module of undostore's more."""
    monkeypatch.setenv("UNDOSTORE_RESIDENT", "off")
    root = tree_factory({"a.txt": "1"})
    assert hook(prompt(root, "first", "p0"), root).returncode == 0   # not a first snapshot
    (root / "a.txt").write_text("2")
    calls = [(["hook"], json.dumps(prompt(root, "edit", "p1"))),
             (["hook"], json.dumps({"session_id": "s", "cwd": str(root),
                                    "hook_event_name": "Stop"})),
             (["hook"], json.dumps(prompt(root, "/undo", "p2"))),
             (["status"], json.dumps({"session_id": "s", "cwd": str(root)}))]
    done = subprocess.run([sys.executable, "-c", WARM_CHECK, json.dumps(calls)], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [], done.stdout
    assert (root / "a.txt").read_text() == "1"

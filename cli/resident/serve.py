"""The resident per-user process that runs hook and status calls warm
(on by default; `UNDOSTORE_RESIDENT=off` opts out): the server side of resident_client.py,
whose docstring says what it does and why. Started detached by a hook call (`start`) as
`python -m undostore_cli.resident.serve`; one per `UNDOSTORE_HOME` (the lock file), gone after
`IDLE_SECONDS` without a call, or within `STAMP_EVERY_SECONDS` of its code changing on disk.

Each call is read with the caller's descriptors, checked (this user, the same code), and run in
a forked child that becomes the caller's hook process (`entry.main`); this process only waits:
it starts no thread, so the fork copies nothing half-done.
"""

from __future__ import annotations

import codecs
import gc
import importlib
import io
import json
import marshal
import os
import selectors
import signal
import socket
import stat
import sys
import time
import traceback

from undostore import (
    adopt_index_facts,
    atomic_write,
    index_facts,
    last_loaded_stat_cache,
    make_private_dirs,
    preload_stat_cache,
)
from undostore.home import RUN_FOLDER, owned_folder
from undostore.home import home as home_folder

from ..resident_client import (
    ACCEPTED,
    EXIT_CODE,
    EXITED,
    IDLE_SECONDS,
    KILLED,
    LENGTH,
    LOCK_NAME,
    MAX_REQUEST_BYTES,
    REFUSED,
    REQUEST_TIMEOUT_SECONDS,
    SOCKET_NAME,
    STATE_NAME,
    available,
    code_stamp,
    peer_uid,
    running_here,
)


class _Served:
    """One call being run: its child, the caller's connection, and the pipe on which the child
    names the stat cache it loaded (preloaded here for the next call)."""

    __slots__ = ("pid", "conn", "told")

    def __init__(self, pid: int, conn: socket.socket, told: int) -> None:
        self.pid, self.conn, self.told = pid, conn, told


def serve(idle_seconds: float = IDLE_SECONDS) -> int:
    """Run as the resident process until idle for `idle_seconds`, refused by a caller running
    other code, or replaced; 0, or 1 where it cannot run here (another one runs, the folder is
    not this user's alone)."""
    import fcntl

    if not available() or not _enter_run_folder():
        return 1
    # From here on every name is relative to run/, the folder opened and checked: were it (or
    # the home) swapped for a link since, nothing is written through it.
    try:
        lock = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return 1
    path = SOCKET_NAME
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound: os.stat_result | None = None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)   # one per home
        _warm()
        stamp = code_stamp()
        try:
            os.unlink(path)   # a killed one's, or a file planted there: ours now
        except FileNotFoundError:
            pass
        previous = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(previous)
        listener.listen(64)
        bound = os.lstat(path)
        _write_state(served=0)
        gc.freeze()   # what the imports made is shared with every child, untouched
        served = _loop(listener, path, bound, stamp, idle_seconds)
        _write_state(served=served, ended=True)
    except OSError:
        return 1   # another resident process serves this home, or the socket cannot be made
    finally:
        listener.close()
        if bound is not None:
            _remove_socket(path, bound)
        os.close(lock)
    return 0


def _enter_run_folder() -> bool:
    """Make this process's folder `run/` in the home, as the store would have the home: this
    user's, writable by no one else, never through a symbolic link (store/trust.py); run/ this
    user's alone (made 0700 where missing). Opened once and checked on what was opened (not by
    path again): False where any of that fails."""
    from undostore import UntrustedStoreError, check_trusted

    home = home_folder()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        check_trusted(home, folder=True)
        make_private_dirs(os.path.join(home, RUN_FOLDER))
        home_fd = os.open(home, flags)
    except (OSError, UntrustedStoreError):
        return False
    try:
        if not owned_folder(os.fstat(home_fd), shut=stat.S_IWGRP | stat.S_IWOTH):
            return False
        run_fd = os.open(RUN_FOLDER, flags, dir_fd=home_fd)
    except OSError:
        return False
    finally:
        os.close(home_fd)
    try:
        if not owned_folder(os.fstat(run_fd), shut=stat.S_IRWXG | stat.S_IRWXO):
            return False
        os.fchdir(run_fd)
        return True
    except OSError:
        return False
    finally:
        os.close(run_fd)


def _remove_socket(path: str, bound: os.stat_result) -> None:
    """Remove the socket this process bound, never one another resident process made since."""
    try:
        if os.path.samestat(os.lstat(path), bound):
            os.unlink(path)
    except OSError:
        pass


def _loop(listener: socket.socket, path: str, bound: os.stat_result, stamp: str,
          idle_seconds: float) -> int:
    """Accept calls until idle, refused, replaced or upgraded; returns how many calls it ran."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running: dict[int, _Served] = {}
    served = 0
    last = checked = time.monotonic()
    leaving = False
    while True:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is listener:
                if leaving:
                    continue
                conn, _ = listener.accept()
                outcome = _take(conn, stamp, listener, running)
                if outcome == REFUSED_OTHER_CODE:
                    # This one runs other code: callers from now on run their calls themselves
                    # and start a new one (the calls of its own still running are finished).
                    leaving = True
                    selector.unregister(listener)
                    listener.close()
                    _remove_socket(path, bound)
                elif isinstance(outcome, _Served):
                    running[outcome.pid] = outcome
                    selector.register(outcome.conn, selectors.EVENT_READ, outcome)
                    served += 1
                last = time.monotonic()
            else:   # the caller went away (killed by its host) while its child runs
                call = key.data
                selector.unregister(call.conn)
                _signal(call.pid)
        for pid, status in _reaped():
            call = running.pop(pid, None)
            if call is None:
                continue
            if os.WIFSIGNALED(status):
                try:
                    call.conn.sendall(KILLED + bytes([os.WTERMSIG(status) & 0xFF]))
                except OSError:
                    pass
            try:
                selector.unregister(call.conn)
            except (KeyError, ValueError):
                pass
            call.conn.close()
            _preload(call.told)
            last = time.monotonic()
            _write_state(served=served)
        if running:
            continue
        now = time.monotonic()
        if leaving or now - last > idle_seconds:
            return served
        if now - checked > STAMP_EVERY_SECONDS:
            checked = now
            if code_stamp() != stamp:
                return served   # upgraded or edited on disk: the next call starts a new one
        try:
            if not os.path.samestat(os.lstat(path), bound):
                return served   # the socket was replaced: another resident process serves
        except OSError:
            return served


# How often an idle resident process looks at its code on disk (`code_stamp`: a few hundred
# stats), so that it never outlives an upgrade or an uninstall by more than this.
STAMP_EVERY_SECONDS = 2.0


class _NotACall(ValueError):
    """What came on the socket is no call this process takes: it is dropped."""


class _OtherCode(_NotACall):
    """The caller runs other code than this process (an upgrade): refused, and this process
    leaves so that the caller's next call starts one running the new code."""


REFUSED_OTHER_CODE = "refused"   # `_take`'s outcome for `_OtherCode`


def _take(conn: socket.socket, stamp: str, listener: socket.socket,
          running: dict[int, _Served]) -> _Served | str | None:
    """Read one call and start its child: the call, `REFUSED_OTHER_CODE`, or None (not a call
    of ours)."""
    fds: list[int] = []
    try:
        conn.settimeout(REQUEST_TIMEOUT_SECONDS)
        if peer_uid(conn) != os.geteuid():
            conn.close()
            return None
        data, fds, _, _ = socket.recv_fds(conn, 65536, 4)
        if len(data) < LENGTH.size or len(fds) != 4:
            raise _NotACall("not a call")
        (size,) = LENGTH.unpack_from(data)
        if size > MAX_REQUEST_BYTES:
            raise _NotACall("too large")
        body = data[LENGTH.size:]
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise _NotACall("cut short")
            body += chunk
        request = marshal.loads(body)   # a caller of this user's (checked above)
        if not isinstance(request, dict):
            raise _NotACall("not a call")
        if request.get("stamp") != stamp:
            conn.sendall(REFUSED)
            raise _OtherCode("other code")
        if not _well_formed(request):
            raise _NotACall("not a call")
    except (OSError, ValueError, EOFError, TypeError) as err:
        for fd in fds:
            os.close(fd)
        conn.close()
        return REFUSED_OTHER_CODE if isinstance(err, _OtherCode) else None
    conn.settimeout(None)
    told, tell = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        os.close(told)
        _child(conn, fds, request, listener, running, tell)
    os.close(tell)
    for fd in fds:
        os.close(fd)
    return _Served(pid, conn, told)


def _well_formed(request: dict) -> bool:
    streams = request.get("streams")
    return (isinstance(request.get("argv"), list)
            and all(isinstance(a, str) for a in request["argv"])
            and isinstance(request.get("env"), dict)
            and all(isinstance(k, str) and isinstance(v, str)
                    for k, v in request["env"].items())
            and isinstance(request.get("umask"), int)
            and isinstance(streams, list) and len(streams) == 3
            and all(isinstance(x, dict) for x in streams))


def _child(conn: socket.socket, fds: list[int], request: dict, listener: socket.socket,
           running: dict[int, _Served], tell: int) -> None:
    """Become the caller's hook process and run its call (see the module docstring)."""
    code = 1
    try:
        listener.close()
        for other in running.values():
            other.conn.close()
            os.close(other.told)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        os.fchdir(fds[3])
        for fd in fds:
            os.close(fd)
        os.umask(int(request["umask"]))
        os.environ.clear()
        os.environ.update(request["env"])
        streams = request["streams"]
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                     **streams[0])
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                      **streams[1])
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                      line_buffering=True, **streams[2])
        sys.argv = ["undostore", *request["argv"]]
        running_here()
        conn.sendall(ACCEPTED)
        from ..entry import main

        try:
            main(list(request["argv"]))
            code = 0
        except SystemExit as done:
            code = _exit_code(done.code)
        except BaseException:   # noqa: BLE001 (as the interpreter would: the trace, exit 1)
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        # The cache first, then the answer: once answered, the caller leaves, and this child
        # may be sent SIGTERM for it before it exits.
        _tell_loaded(tell)
        conn.sendall(EXITED + EXIT_CODE.pack(code))
    except BaseException:   # noqa: BLE001 (the child must never return into the server)
        pass
    finally:
        os._exit(code)


def _tell_loaded(tell: int) -> None:
    """Tell the resident process, if it is still there, what this child learned that the next
    one can use: the stat cache it loaded, and what it found of the store's pack indexes (their
    checksums held, where each's last record starts: a call otherwise checks every pack of the
    store again). One killed meanwhile (an upgrade, the OOM killer) has closed the pipe, and
    the call's answer must reach its caller all the same. At most `TOLD_BYTES`, which a pipe
    holds without its reader (the parent reads once this child has exited)."""
    try:
        os.write(tell, told(last_loaded_stat_cache(), index_facts()))
    except OSError:
        pass
    finally:
        os.close(tell)


def told(stat_cache: object, facts: list) -> bytes:
    """What `_tell_loaded` writes: the stat cache, and the newest index facts that fit in
    `TOLD_BYTES` with it."""
    facts = facts[-TOLD_INDEXES:]
    while True:
        data = json.dumps({"stat_cache": stat_cache, "indexes": facts}).encode(
            "utf-8", "surrogateescape")
        if len(data) <= TOLD_BYTES or not facts:
            return data if len(data) <= TOLD_BYTES else b""
        facts = facts[len(facts) // 2 + 1:]


# What a child tells its parent fits a pipe's buffer on every system it runs on (macOS's holds
# 16 KiB before it grows): a child that wrote more would wait for a reader that waits for it.
TOLD_BYTES = 16000
TOLD_INDEXES = 100   # a store merges its small packs beyond 24 (store/packmerge.py)


def _preload(pipe: int) -> None:
    """Take what the finished child told (`_tell_loaded`), so the next call's child has it:
    the stat cache it loaded (the cache's `preload`: taken only while its files are
    unchanged), and the pack index facts (taken only for files still there unchanged)."""
    data = b""
    try:
        while len(data) <= TOLD_BYTES:
            chunk = os.read(pipe, TOLD_BYTES + 1)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        os.close(pipe)
    try:
        told_here = json.loads(data)
        adopt_index_facts(told_here.get("indexes"))
        path, identity = told_here["stat_cache"]
        preload_stat_cache(path, identity)
    except (ValueError, TypeError, KeyError, AttributeError, OSError):
        return
    gc.freeze()   # as the imports: shared with the children, never walked by their collections


def _exit_code(value: object) -> int:
    """The exit code `sys.exit(value)` gives a process (a message: printed, then 1)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _signal(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass


def _reaped() -> list[tuple[int, int]]:
    done = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, status))


# What a hook or status call imports (with what they import), done once here so that each
# child starts with it; tests/test_resident.py keeps the list whole: a prompt's hook and a
# footer's status, run after these imports, import no module of undostore's more.
WARM_MODULES = ("undostore_cli.hosts.hook", "undostore_cli.hosts.records",
                "undostore_cli.hosts.undo", "undostore_cli.hosts.once", "undostore_cli.door",
                "undostore_cli.signals",
                "undostore.workspace", "undostore.snapshot.snapshot",
                "undostore.history.sessions", "undostore.history.retention",
                "undostore.history.notes", "undostore.history.anchors",
                "undostore.store.damage", "undostore.restore.cancel",
                "undostore_cli.commands.status_run", "undostore.history.status",
                "undostore.store.discover", "undostore_cli.entry", "undostore.store.once",
                "undostore.snapshot.treeignore", "undostore.usergit", "undostore.store.packmerge",
                # a `/undo` or `/redo` typed in a host: the restore and the merge
                "undostore.history.steps", "undostore.history.blame",
                "undostore.restore.revert", "undostore.restore.restore",
                # a tool call's events, and what a step notes for them
                "undostore.history.toolcall", "undostore.history.attribution",
                "undostore.history.activity",
                "pywatchman")
OPTIONAL_MODULES = frozenset({"pywatchman"})   # an extra: absent where it is not installed


def _warm() -> None:
    """Import `WARM_MODULES`, so that each child starts with them done."""
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            if name not in OPTIONAL_MODULES:
                raise
    codecs.lookup("utf-8-sig")   # the hook's event is read in it (a lookup imports its module)


def _write_state(*, served: int, ended: bool = False) -> None:
    """`run/resident.json` (this process's folder: `_enter_run_folder`): this process, the
    calls it ran, whether it left (for `doctor`)."""
    text = json.dumps({"pid": os.getpid(), "served": served, "ended": ended})
    try:
        atomic_write(STATE_NAME, text.encode(), durable=False)
    except OSError:
        pass


if __name__ == "__main__":   # `python -m undostore_cli.resident.serve`, as `start` runs it
    sys.exit(serve())

"""The hook and the footer through a resident per-user process (on by default on Linux and
macOS; `UNDOSTORE_RESIDENT=off` opts out): a host's hook calls (before and after every tool
call, and each prompt) and its footer's `status` then pay a small client's start instead of the
imports of everything a snapshot needs.

The resident process imports that code once, then waits on a socket in `$UNDOSTORE_HOME/run/`.
For each call (`hook`, `status`) it forks a child, which takes the caller's standard input,
output and error, folder, umask and environment (the descriptors passed over the socket) and
runs the same `entry.main` the `undostore` process would: a fresh process per call, with
nothing of one call left for the next, only the imports done ahead. The caller waits for the
child's exit code and exits with it. A caller killed while waiting (a host's time-out) has its
child sent SIGTERM, as the host's own signal would have reached an in-process hook.

Never required: where the setting is off, on systems without descriptor passing and peer
credentials (Windows), when no resident process answers yet (the caller starts one for the
next call and runs this one itself), when the resident process runs other code than the caller
(an upgrade: it refuses and exits; it also leaves by itself once its code changes on disk), or
when anything about its folder, socket or peer is not this user's alone (then one stderr line
says so), the call runs in its own process as before. The resident process leaves after
`IDLE_SECONDS` without a call; one per `UNDOSTORE_HOME` (a lock file).

Trust: the folder `run/` must be this user's and closed to everyone else, the socket this
user's; each side checks the other's user by the socket's peer credentials (`peer_uid`:
`SO_PEERCRED` on Linux, `LOCAL_PEERCRED` as `getpeereid` reads it on macOS), and the resident
process makes its socket readable by no one else.
"""

from __future__ import annotations

import marshal
import os
import stat
import struct
import sys

from undostore.home import folder_is_private, run_folder

SERVE_MODULE = "undostore_cli.resident.serve"   # run with `python -m`
SOCKET_NAME = "resident.sock"
LOCK_NAME = "resident.lock"
STATE_NAME = "resident.json"
IDLE_SECONDS = 600.0
CONNECT_TIMEOUT_SECONDS = 1.0
REQUEST_TIMEOUT_SECONDS = 5.0
MAX_REQUEST_BYTES = 4 << 20
MAX_SOCKET_PATH = 104        # sun_path holds 104 to 108 bytes, the terminating NUL included
START_EVERY_SECONDS = 30.0   # a resident process that cannot start is not tried on every call
LENGTH = struct.Struct(">I")
_CREDENTIALS = struct.Struct("3i")   # Linux's struct ucred: pid, uid, gid
_XUCRED = struct.Struct("=II")         # macOS's struct xucred begins: version, uid
_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE = 0, 1, 76   # <sys/un.h>, <sys/ucred.h>
EXIT_CODE = struct.Struct(">i")
# Replies: the child took the call; then its exit code, or the signal that ended it. Refused:
# the resident process runs other code (it leaves); the caller runs the call itself.
ACCEPTED, EXITED, KILLED, REFUSED = b"A", b"E", b"K", b"R"

_inside = False   # in a resident process's child (`running_here`): its call runs here


def running_here() -> None:
    """Said in a resident process's child: its own call runs in it, never sent on."""
    global _inside
    _inside = True


def wanted() -> bool:
    """`UNDOSTORE_RESIDENT` is not `off` (its default is `on`; read here as settings.py parses
    it, without importing the library: the caller of a resident process imports only the
    standard library's smallest parts; a bad value is said by the call's own run, which uses
    the default as every unattended entry does)."""
    return os.environ.get("UNDOSTORE_RESIDENT", "").strip().lower() != "off"


def available() -> bool:
    """Whether this system can pass descriptors and tell a caller's user (Linux, macOS)."""
    import _socket

    return (os.name == "posix" and sys.platform in ("linux", "darwin")
            and hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SCM_RIGHTS")
            and hasattr(_socket.socket, "sendmsg") and hasattr(os, "fork"))


def blocked() -> str | None:
    """Why no resident process can serve this user here, with the fix (None: one can, or will
    once started): a socket path too long for the system, or a `run/` folder that is not this
    user's alone. Asked by each caller and by `doctor`."""
    folder = run_folder()
    path = os.path.join(folder, SOCKET_NAME)
    if len(os.fsencode(path)) >= MAX_SOCKET_PATH:
        return (f"its socket's path is too long for the system ({path}): a shorter "
                "UNDOSTORE_HOME fixes it")
    if os.path.lexists(folder) and not folder_is_private(folder):
        return f"{folder} is not yours alone: `chmod 700 {folder}` (if it is yours) fixes it"
    return None


def _doubt(why: str) -> None:
    """The one stderr line of a call that could not trust the resident process's folder,
    socket or peer, and so runs in its own process (never a failed call)."""
    print(f"undostore: the resident process is not used ({why}); this call runs in its own "
          "process (UNDOSTORE_RESIDENT=off stops trying)", file=sys.stderr)


def peer_uid(conn: object) -> int | None:
    """The user of the process at the other end of a Unix socket (its peer credentials), None
    when the system will not say. Works on `socket` and `_socket` sockets."""
    import _socket

    try:
        if sys.platform == "darwin":   # getpeereid(3) is this option's uid
            creds = conn.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED,   # type: ignore[attr-defined]
                                    _XUCRED_SIZE)
            return int(_XUCRED.unpack_from(creds)[1])
        creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED,   # type: ignore[attr-defined]
                                _CREDENTIALS.size)
    except (OSError, AttributeError, struct.error):
        return None
    return int(_CREDENTIALS.unpack(creds)[1])


def _socket_is_ours(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()


def code_stamp() -> str:
    """What the resident process must share with a caller to run its call: the interpreter and
    every module file of both packages (path, size, time), found beside this one without
    importing them (they lie side by side, installed or editable). An upgrade or an edit
    changes it."""
    cli = os.path.dirname(os.path.abspath(__file__))
    parts = [os.path.realpath(sys.executable), sys.version]   # `python` and `python3` alike
    for top in (cli, os.path.join(os.path.dirname(cli), "undostore")):
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}")
    return "\n".join(parts)


def encode_request(request: dict) -> bytes:
    """A call as sent: its length, then the marshalled dict (marshal is built in: no import)."""
    body = marshal.dumps(request, 4)
    return LENGTH.pack(len(body)) + body


# --- the caller ------------------------------------------------------------------------------
# It speaks through `_socket`, the C module under `socket`: importing `socket` (enum, selectors)
# costs more than this whole caller, on every prompt (docs/design.md).


def run_through(args: list[str], may_start: bool = True) -> int | None:
    """Run the `hook` or `status` call `args` (the command line after the program name) in
    the resident process: its exit code, or None when this process must run it itself (the
    module docstring says when). With `may_start`, starts a resident process for the next call
    when none answers."""
    if _inside or not available():
        return None
    import _socket

    why = blocked()
    if why is not None:
        _doubt(why)   # `doctor` says it too
        return None
    folder = run_folder()
    path = os.path.join(folder, SOCKET_NAME)
    if not os.path.lexists(path):
        if may_start:
            start()   # none yet (the one started makes the folder and its socket)
        return None
    if not folder_is_private(folder) or not _socket_is_ours(path):
        _doubt(f"{path} is not a socket of yours in a folder of yours alone")
        if may_start:
            start()   # a resident process of this user's replaces what lies there
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_SECONDS)
        try:
            conn.connect(path)
        except OSError:
            if may_start:
                start()   # gone (a stale socket left by a killed one): the next finds a new one
            return None
        if peer_uid(conn) != os.geteuid():
            # The folder was swapped since it was checked: nothing is sent.
            _doubt(f"the process listening on {path} is not yours")
            return None
        return _exchange(conn, args)
    finally:
        conn.close()


def _exchange(conn: object, args: list[str]) -> int | None:
    """Send the call with this process's descriptors; read the child's answer."""
    import _socket

    request = _request(args)
    try:
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fds = struct.pack("4i", 0, 1, 2, cwd)
        sent = conn.sendmsg([request],   # type: ignore[attr-defined]
                           [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        if sent < len(request):
            conn.sendall(request[sent:])   # type: ignore[attr-defined]
    except OSError:
        return None
    finally:
        os.close(cwd)
    conn.settimeout(None)   # type: ignore[attr-defined]   # the host's own time-out applies
    try:
        return _answer(conn)
    except KeyboardInterrupt:   # SIGINT here: closing the socket ends the child
        print("undostore: interrupted", file=sys.stderr)
        return 130


def _answer(conn: object) -> int | None:
    """The child's exit code, read from the resident process (None: refused, run it here)."""
    first = _read(conn, 1)
    if first != ACCEPTED:
        if first == REFUSED:
            start()   # it runs other code and is leaving: a new one for the next call
        return None
    kind = _read(conn, 1)
    if kind == EXITED:
        body = _read(conn, EXIT_CODE.size)
        if len(body) == EXIT_CODE.size:
            return int(EXIT_CODE.unpack(body)[0])
    elif kind == KILLED:
        body = _read(conn, 1)
        print(f"undostore: the hook was ended by signal {body[0] if body else '?'} in the "
              "resident process", file=sys.stderr)
        return 1
    print("undostore: the resident process ended before the hook finished: this prompt may "
          "not be recorded (UNDOSTORE_RESIDENT=off runs the hook in its own process)",
          file=sys.stderr)
    return 1


def _request(args: list[str]) -> bytes:
    umask = os.umask(0o077)
    os.umask(umask)
    streams = [{"encoding": getattr(f, "encoding", None) or "utf-8",
                "errors": getattr(f, "errors", None) or "strict"}
               for f in (sys.stdin, sys.stdout, sys.stderr)]
    return encode_request({"argv": list(args), "env": dict(os.environ), "umask": umask,
                           "stamp": code_stamp(), "streams": streams})


def _read(conn: object, size: int) -> bytes:
    data = b""
    while len(data) < size:
        try:
            chunk = conn.recv(size - len(data))   # type: ignore[attr-defined]
        except OSError:
            return data
        if not chunk:
            return data
        data += chunk
    return data


def start() -> None:
    """Start a resident process for this user, detached (it leaves by itself when idle or
    when another one already runs); at most once in `START_EVERY_SECONDS` (the time of
    `run/resident.lock`, which each start touches)."""
    import subprocess
    import time

    folder = run_folder()
    lock = os.path.join(folder, LOCK_NAME)
    try:
        if time.time() - os.lstat(lock).st_mtime < START_EVERY_SECONDS:
            return
        os.utime(lock, follow_symlinks=False)
    except OSError:
        pass   # none yet: the resident process makes the folder and its lock
    try:
        subprocess.Popen([sys.executable, "-m", SERVE_MODULE],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                         cwd="/")
    except OSError:
        pass   # the hook runs here all the same

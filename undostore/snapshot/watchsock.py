"""Where this user's watchman daemon listens: asked of the `watchman` program, then remembered.

Asking (`watchman get-sockname`) starts a process on every snapshot (~5 ms, and importing
subprocess). The answer is kept in `$UNDOSTORE_HOME/watchman-sock` with a key naming what
decides it (the program PATH finds, the variables watchman reads, this user), and used again
only while the key matches and the path is a socket owned by this user, in a folder owned by
this user that no other user may write to (checked without following symlinks): a path another
user could have created or swapped is never connected to, wherever the memory came from. A
remembered socket that does not answer is forgotten and the program asked again (the caller
does that). `WATCHMAN_SOCK` is used as given and never remembered. Windows (named pipes, no
socket files): always asked.
"""

from __future__ import annotations

import os
import stat

from undostore.platform import IS_WINDOWS

ASK_TIMEOUT_SECONDS = 5.0
# What the watchman program reads to choose its socket (its state folder, user, config).
_KEY_VARIABLES = ("TMPDIR", "USER", "LOGNAME", "HOME", "WATCHMAN_CONFIG_FILE",
                  "XDG_STATE_HOME", "XDG_RUNTIME_DIR")


def find_program() -> str | None:
    """The `watchman` program PATH names (without importing shutil on POSIX)."""
    if IS_WINDOWS:
        import shutil

        return shutil.which("watchman")
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "watchman")
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and os.access(candidate, os.X_OK):
            return candidate
    return None


def ask(program: str, spawn: bool) -> str | None:
    """The socket as the program computes it; without `spawn`, only when a daemon answers
    (`--no-spawn --no-local`: ask the server, never start it)."""
    import json  # only here: a remembered socket never pays for these
    import subprocess

    args = [program, "--output-encoding=json"]
    if not spawn:
        args += ["--no-spawn", "--no-local"]
    kwargs: dict = {}
    if IS_WINDOWS:
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    try:
        done = subprocess.run([*args, "get-sockname"], capture_output=True,
                              timeout=ASK_TIMEOUT_SECONDS * (6 if spawn else 1), check=False,
                              stdin=subprocess.DEVNULL, **kwargs)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        return None
    sock = reply.get("sockname") if isinstance(reply, dict) else None
    return sock if isinstance(sock, str) and sock else None


def trusted(path: str) -> bool:
    """A socket owned by this user in a folder owned by this user that others cannot write."""
    if IS_WINDOWS or not os.path.isabs(path) or "\n" in path:
        return False
    from undostore.home import owned_folder

    try:
        sock = os.lstat(path)
        folder = os.lstat(os.path.dirname(path))
    except (OSError, ValueError):
        return False
    return (stat.S_ISSOCK(sock.st_mode) and sock.st_uid == os.geteuid()
            and owned_folder(folder, shut=stat.S_IWGRP | stat.S_IWOTH))


def memory_path() -> str:
    """`$UNDOSTORE_HOME/watchman-sock`: the key line, then the socket's path."""
    from undostore.home import watchman_memory

    return watchman_memory()


def memory_key(program: str) -> str:
    """What the program's answer depends on: this user, the program, watchman's variables."""
    try:
        st = os.stat(program)
        binary = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        binary = "-"
    values = [os.environ.get(name, "\0") for name in _KEY_VARIABLES]
    return repr((os.geteuid(), program, binary, values))


def recall(program: str) -> str | None:
    """The remembered socket, when its key still holds and the path is `trusted`."""
    if IS_WINDOWS:
        return None
    try:
        with open(memory_path(), encoding="utf-8", errors="surrogateescape") as f:
            key, _, sock = f.read().rstrip("\n").partition("\n")
    except (OSError, ValueError):
        return None
    if key != memory_key(program) or not trusted(sock):
        return None
    return sock


def remember(program: str, sock: str) -> None:
    """Keep `sock` for the next process (only a `trusted` one; failures are ignored)."""
    if IS_WINDOWS or not trusted(sock):
        return
    from undostore.fileio import atomic_write, make_private_dirs

    path = memory_path()
    text = f"{memory_key(program)}\n{sock}\n".encode("utf-8", "surrogateescape")
    try:
        make_private_dirs(os.path.dirname(path))
        atomic_write(path, text, durable=False)
    except (OSError, UnicodeError):
        pass


def forget() -> None:
    try:
        os.unlink(memory_path())
    except OSError:
        pass

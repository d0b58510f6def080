"""Ask a watchman daemon what changed under root since a clock, so a snapshot need not walk.

`UNDOSTORE_FSMONITOR` (the contract's "Change detection"): `auto` (default) uses a daemon only
when one already answers, `watchman` may start one, `off` never asks. Every failure, timeout or
doubt (no daemon, a fresh daemon instance, a recrawl, a clock from another watch) comes back as a
`Changes` whose `paths` is None ("cannot be sure: walk"), with at most one warning: a walk is
always correct, watchman only makes it unnecessary.

`pywatchman` (the optional extra `undostore[watchman]`) is imported only when a daemon is asked.
Paths below any `.git` and below the store (when it lies under root) are never reported.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from undostore.limits import DEFAULT_LIMITS
from undostore.snapshot import watchsock

MODES = ("auto", "watchman", "off")
# A tree this big is worth starting a watchman daemon for, at its first snapshot: a walk with
# nothing changed costs every prompt far more than a watchman query (docs/design.md).
WATCH_FROM_FILES = 50_000
SYNC_TIMEOUT_MS = 3000         # the cookie sync that makes a just-made write visible
_RECRAWLED = re.compile(r"Recrawled this watch (\d+) time")

Warn = Callable[[str, str], None]


def fsmonitor_mode() -> str:
    """The mode from `UNDOSTORE_FSMONITOR` (undostore/settings.py: a bad value is refused, or
    where nobody types it, `auto` with a line saying so)."""
    from undostore import settings

    return str(settings.value("UNDOSTORE_FSMONITOR"))


def worth_starting(files: int) -> bool:
    """Whether a first snapshot of `files` files should start watchman: the tree is that big
    (`WATCH_FROM_FILES`), `UNDOSTORE_FSMONITOR` leaves the choice to undostore (`auto`), and
    the `watchman` program and its client library (`undostore[watchman]`) are installed."""
    import shutil

    return (files >= WATCH_FROM_FILES and fsmonitor_mode() == "auto"
            and shutil.which("watchman") is not None
            and importlib.util.find_spec("pywatchman") is not None)


class Token(NamedTuple):
    """Where a clock is valid: the watched folder, root's path inside it, and how many times
    watchman had recrawled it (a recrawl may lose events: a new count means walk)."""

    watch: str
    relative: str
    clock: str
    recrawls: int = 0

    def to_tuple(self) -> tuple[str, str, str, int]:
        return tuple(self)

    @classmethod
    def from_tuple(cls, value: object) -> Token | None:
        if (isinstance(value, tuple) and len(value) == 4
                and all(isinstance(v, str) for v in value[:3]) and isinstance(value[3], int)):
            return cls(*value)
        return None


class Changes(NamedTuple):
    """Paths changed since a token ('/'-separated, relative to root), or None: walk."""

    paths: list[str] | None
    token: Token | None        # to save with the stat cache (None: watchman is not usable)
    reason: str = ""           # why a walk is needed, for people


def _recrawls(response: dict) -> int:
    m = _RECRAWLED.search(str(response.get("warning", "")))
    return int(m.group(1)) if m else 0


def _excluded(relative: str, skip: Iterable[str]) -> list:
    """The query expression leaving out `.git` at any depth and the `skip` folders."""
    terms: list = [["name", ".git", "basename"],
                   ["match", ".git/**", "wholename", {"includedotfiles": True}],
                   ["match", "**/.git/**", "wholename", {"includedotfiles": True}]]
    for path in sorted(skip):
        terms += [["name", path, "wholename"], ["dirname", path]]
    return ["not", ["anyof", *terms]]


class Monitor:
    """One connection to a watchman daemon watching `root`; `None` from `open` when not usable.

    `skip` are folders relative to root never reported (the store when it lies under root)."""

    def __init__(self, client: object, root: str, watch: str, relative: str,
                 skip: frozenset[str], on_warning: Warn) -> None:
        self._client = client
        self.root = root
        self.watch = watch
        self.relative = relative
        self._skip = skip
        self._warn = on_warning
        self.failed = False
        self._rewatched = False

    @classmethod
    def open(cls, root: str, mode: str, skip: frozenset[str] = frozenset(),
             on_warning: Warn | None = None,
             timeout: float = DEFAULT_LIMITS.watchman_timeout_s) -> Monitor | None:
        """Connect and watch `root`; None (and one warning unless `auto` found no daemon). A
        socket read slower than `timeout` seconds fails (the snapshot then walks)."""
        warn = on_warning or (lambda path, message: None)
        if mode == "off":
            return None
        if importlib.util.find_spec("pywatchman") is None:
            # `auto` without the extra: a plain walk, as without watchman (no nagging).
            if mode == "watchman":
                warn(root, "pywatchman is not installed (pip install 'undostore[watchman]'); "
                     "walking the whole tree")
            return None
        given = os.environ.get("WATCHMAN_SOCK") or None
        if given is not None and mode == "auto" and not os.path.exists(given):
            return None
        program = None if given is not None else watchsock.find_program()
        if given is None and program is None:
            if mode == "watchman":
                warn(root, "watchman is not available (no `watchman` program or daemon); "
                     "walking the whole tree")
            return None
        # A remembered socket first (no process to start); one that fails is forgotten and the
        # program asked where the daemon is now (it stopped, or moved).
        sock = given or watchsock.recall(program)  # type: ignore[arg-type]
        remembered = given is None and sock is not None
        while True:
            if sock is None:
                sock = watchsock.ask(program, spawn=mode == "watchman")  # type: ignore[arg-type]
                if sock is None:
                    if mode == "watchman":
                        warn(root, "watchman is not available (no `watchman` program or "
                             "daemon); walking the whole tree")
                    return None
            try:
                import pywatchman  # the optional extra undostore[watchman]
            except ImportError as err:  # found above, yet broken (a failed C extension build)
                warn(root, f"pywatchman cannot be imported ({err}); walking the whole tree")
                return None
            try:
                client, reply = _connect(pywatchman, sock, root, timeout)
                break
            except Exception as err:  # pywatchman raises its own errors, OSError, and more
                if remembered:
                    watchsock.forget()
                    # Nothing there, or not watchman: ask. A daemon too slow to answer would
                    # be named again: one timeout is enough.
                    if not isinstance(err, pywatchman.SocketTimeout):
                        sock, remembered = None, False
                        continue
                if mode == "watchman" or not isinstance(err, pywatchman.SocketConnectError):
                    warn(root, f"watchman failed ({_short(err)}); walking the whole tree")
                return None
        if program is not None and not remembered:
            watchsock.remember(program, sock)
        watch = reply.get("watch")
        if not isinstance(watch, str):
            warn(root, "watchman gave no watch root; walking the whole tree")
            client.close()
            return None
        relative = reply.get("relative_path") or ""
        return cls(client, root, watch, relative.replace(os.sep, "/"), skip, warn)

    def close(self) -> None:
        try:
            self._client.close()  # type: ignore[attr-defined]
        except Exception:
            pass

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, *args: object) -> dict | None:
        if self.failed:
            return None
        try:
            reply = self._client.query(*args)  # type: ignore[attr-defined]
        except Exception as err:
            if not (_lost_cookie_folder(err) and self._watch_again()):
                self.failed = True
                self._warn(self.root, f"watchman failed ({_short(err)}); walking the whole tree")
                return None
            return self._query(args[0], self.watch, *args[2:])
        return reply if isinstance(reply, dict) else None

    def _watch_again(self) -> bool:
        """Heal a watch whose sync cookies cannot be written: watchman puts them in the VCS
        folder (`.git`, `.hg`, `.svn`) it found when the watch began, and once that folder is
        removed every sync fails, for good. The watch is dropped and made again (once per
        snapshot, said in one warning); its clock starts anew, so this snapshot walks and
        the next ones use watchman again."""
        if self._rewatched:
            return False
        self._rewatched = True
        try:
            self._client.query("watch-del", self.watch)  # type: ignore[attr-defined]
            reply = self._client.query("watch-project", self.root)  # type: ignore[attr-defined]
        except Exception:
            return False
        if not isinstance(reply, dict) or not isinstance(reply.get("watch"), str):
            return False
        self.watch = reply["watch"]
        self.relative = (reply.get("relative_path") or "").replace(os.sep, "/")
        self._warn(self.root, "watchman's watch had lost its cookie folder (a VCS folder "
                   "removed after the watch began); watched again, walking this once")
        return True

    def _params(self) -> dict:
        params: dict = {"sync_timeout": SYNC_TIMEOUT_MS}
        if self.relative:
            params["relative_root"] = self.relative
        return params

    def clock(self) -> Token | None:
        """The clock now (synced: every write made before the call is behind it)."""
        reply = self._query("clock", self.watch, {"sync_timeout": SYNC_TIMEOUT_MS})
        if reply is None or not isinstance(reply.get("clock"), str):
            return None
        clock = reply["clock"]
        # `clock` says nothing of recrawls; an empty query since that clock does.
        reply = self._query("query", self.watch, {"since": clock, "expression": ["false"],
                                                   "fields": ["name"]})
        if reply is None:
            return None
        return Token(self.watch, self.relative, clock, _recrawls(reply))

    def since(self, token: Token | None) -> Changes:
        """What changed since `token`: paths relative to root, and the token to keep."""
        if token is None:
            return Changes(None, self.clock(), "no clock saved")
        if (token.watch, token.relative) != (self.watch, self.relative):
            return Changes(None, self.clock(), "clock from another watch root")
        reply = self._query("query", self.watch, {
            **self._params(), "since": token.clock, "fields": ["name"],
            "empty_on_fresh_instance": True,
            "expression": _excluded(self.relative, self._skip)})
        if reply is None or not isinstance(reply.get("clock"), str):
            return Changes(None, None, "watchman failed")
        new = Token(self.watch, self.relative, reply["clock"], _recrawls(reply))
        if reply.get("is_fresh_instance"):
            return Changes(None, new, "watchman restarted or lost the clock")
        if new.recrawls != token.recrawls:
            return Changes(None, new, "watchman recrawled the tree")
        files = reply.get("files")
        if not isinstance(files, list):
            return Changes(None, new, "watchman reply without files")
        paths = []
        for name in files:
            if not isinstance(name, str):
                return Changes(None, new, "watchman reply with a bad name")
            name = name.replace(os.sep, "/") if os.sep != "/" else name
            parts = name.split("/")
            if ".git" in parts or any(name == s or name.startswith(s + "/") for s in self._skip):
                continue
            paths.append(name)
        return Changes(paths, new)


def _connect(pywatchman: object, sock: str, root: str, timeout: float) -> tuple[object, dict]:
    """A client connected to `sock`, and its reply to `watch-project root`."""
    client = pywatchman.client(sockpath=sock, timeout=timeout)  # type: ignore[attr-defined]
    try:
        return client, client.query("watch-project", root)
    except BaseException:
        client.close()
        raise


def _lost_cookie_folder(err: BaseException) -> bool:
    """Whether watchman refused a sync because its cookie file could not be created."""
    text = str(err)
    return "cookie" in text and ("No such file" in text or "ENOENT" in text)


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__

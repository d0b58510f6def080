"""What the real-host tests share (tests/test_host_*.py): the pinned hosts' folder, an
environment a host runs undostore's hook in, `undostore init`, and the project's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

from undostore import Workspace

from .model_server import ModelServer, Tool, received_texts
from .terminal_support import Tmux

NODE_MODULES = Path(__file__).parent / "hosts" / "node_modules"


def pinned(program: Path, name: str) -> pytest.MarkDecorator:
    """A host's tests run where its pinned program is installed (Linux, after `npm ci` in
    tests/hosts, as `.ci/run` does: never skipped in CI)."""
    return pytest.mark.skipif(sys.platform != "linux" or not program.exists(),
                              reason=f"the pinned {name} (run `npm ci` in tests/hosts; "
                                     ".ci/run does)")


def host_env(home: Path, model: ModelServer, **extra: str) -> dict[str, str]:
    """A host's environment: its own home, `undostore` on its PATH (the tests' interpreter's
    folder), the test's undostore home and watchman socket, and `extra` (the model's URL)."""
    home.mkdir(parents=True, exist_ok=True)
    bin_dir = os.path.dirname(sys.executable)
    return {"HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "TERM": "dumb",
            "UNDOSTORE_HOME": os.environ["UNDOSTORE_HOME"],
            "WATCHMAN_SOCK": os.environ["WATCHMAN_SOCK"], **extra}


def init(root: Path, env: dict[str, str], host: str, *options: str
         ) -> subprocess.CompletedProcess[str]:
    """`undostore init HOST [OPTIONS]` in `root`: the only wiring a test does."""
    done = subprocess.run([sys.executable, "-m", "undostore", "init", host, *options], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


class PrintMode:
    """A host's print mode in one folder: a conversation's first prompt starts it under its
    id (`start`, e.g. `--session-id`), the next ones resume it (`resume`)."""

    def __init__(self, command: list[str], start: str, resume: str, root: Path,
                 env: dict[str, str]) -> None:
        self.command, self.start, self.resume = command, start, resume
        self.root, self.env = root, env
        self.started: set[str] = set()

    def __call__(self, conversation: str, text: str, *extra: str
                 ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self._args(conversation, text, extra), cwd=self.root,
                              env=self.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, (text, done.stdout, done.stderr)
        return done

    def begin(self, conversation: str, text: str) -> subprocess.Popen[str]:
        """The prompt run in the background (`finish` waits for it)."""
        return subprocess.Popen(self._args(conversation, text, ()), cwd=self.root, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def finish(running: subprocess.Popen[str]) -> None:
        out, err = running.communicate(timeout=180)
        assert running.returncode == 0, (out, err)

    def _args(self, conversation: str, text: str, extra: tuple[str, ...]) -> list[str]:
        flag = self.resume if conversation in self.started else self.start
        self.started.add(conversation)
        return [*self.command, "-p", text, *extra, flag, conversation]

    def session(self, conversation: str) -> str:
        """The session id the host gives undostore's hook for `conversation`."""
        return conversation


class Round(NamedTuple):
    second_redo: subprocess.CompletedProcess[str]   # what the host showed for it
    told: str                                       # the last request's body, as JSON text


def the_two_turns(prompt: PrintMode, conversation: str, root: Path) -> None:
    """The turns every host runs first: 'add b' (the agent's write tool makes b.txt) and 'edit
    a' (a shell command rewrites a.txt: undo takes it back too), each recorded as an undo point
    whose files after the turn the host's after-turn event gave."""
    prompt(conversation, "add b")
    prompt(conversation, "edit a")
    assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
    with Workspace(root) as ws:
        turns = ws.log(prompt.session(conversation)).undo
        assert [p.label for p in turns] == ["edit a", "add b"]
        assert turns[0].after == ws.snapshot().id        # the after-turn event recorded it


def the_users_edit_is_not_the_turns(tmp_path: Path, make_host: Callable[..., object],
                                    write: Callable[[Path, str], Tool],
                                    shell: Callable[[Path, str], Tool], undo: str = "/undo",
                                    conversation: str = "c") -> None:
    """Attribution by tool call inside a real host: one turn whose model calls the host's
    write tool (`write(path, text)`: b.txt) and its shell (`shell(path, text)`: a.txt); the
    user saves notes.txt while the model holds its reply (after the calls, before the turn
    ends). The turn is its two calls, each listed with its file; `undo` (as typed in the host)
    takes them back and keeps the user's edit. `conversation` as the host's prompts name one."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "notes.txt").write_text("n\n")
    script = {"both": [write(root / "b.txt", "b\n"), shell(root / "a.txt", "A")]}

    def users_edit(prompts: tuple[str, ...]) -> None:
        if (root / "b.txt").exists() and (root / "notes.txt").read_text() == "n\n":
            (root / "notes.txt").write_text("the user's\n")

    with ModelServer(script, before_text=users_edit) as model:
        host = make_host(root, tmp_path / "home", model)
        prompt = host.prompt   # type: ignore[attr-defined]
        prompt(conversation, "both")
        assert files(root) == {"a.txt": "A\n", "b.txt": "b\n", "notes.txt": "the user's\n"}
        with Workspace(root) as ws:
            (point,) = ws.log(prompt.session(conversation)).undo
            assert point.by_calls and point.calls == 2, point
            # each call with its own file (Pi and OpenCode run the two side by side)
            assert sorted(note.files for note in point.notes) == [("a.txt",), ("b.txt",)], point
        prompt(conversation, undo)
    assert files(root) == {"a.txt": "a\n", "notes.txt": "the user's\n"}


def after_the_first_undo(prompt: PrintMode, conversation: str, root: Path,
                         model: ModelServer, answered_in_transcript: bool = False) -> Round:
    """The scenario every host runs once its first `/undo` took back the turn 'edit a' (a.txt
    "A\n" back to "a\n") and left 'add b' (b.txt): `/undo`, `/redo`, `/redo`, `/undo 2`, each
    checked against the files, then a prompt; the model never received a command. Where the
    host keeps a command the hook answered in its transcript (`answered_in_transcript`:
    Copilot), the model is never asked during the steps and later reads each command with
    undostore's line as its reply, as the user saw them."""
    asked = len(model.requests)
    prompt(conversation, "/undo")
    assert files(root) == {"a.txt": "a\n"}
    prompt(conversation, "/redo")
    second_redo = prompt(conversation, "/redo")
    assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
    prompt(conversation, "/undo 2")
    assert files(root) == {"a.txt": "a\n"}
    if answered_in_transcript:
        assert len(model.requests) == asked, model.requests[asked:]
    prompt(conversation, "what now?")
    if answered_in_transcript:
        _commands_answered(model.requests[-1]["body"])
    else:
        received = [t for r in model.requests for t in received_texts(r["body"])]
        assert not any(t.strip().startswith(("/undo", "/redo")) for t in received), received
    with Workspace(root) as ws:   # the turns' ends survived the steps: a redo has its files
        redo = ws.log(prompt.session(conversation)).redo
        assert [(p.label, p.changed) for p in redo] == [("add b", True), ("edit a", True)]
        assert all(p.after is not None for p in redo), redo
    return Round(second_redo, json.dumps(model.requests[-1]["body"]))


def _commands_answered(body: dict) -> None:
    """Each `/undo` or `/redo` in a Chat Completions transcript is followed by undostore's
    line as the assistant's reply."""
    messages = [m for m in body["messages"] if m.get("role") in ("user", "assistant")]
    commands = 0
    for i, message in enumerate(messages):
        texts = received_texts({"messages": [message]})
        if message["role"] == "user" and texts and texts[0].strip().startswith(
                ("/undo", "/redo")):
            commands += 1
            reply = messages[i + 1]
            assert reply["role"] == "assistant" and str(reply["content"]).startswith(
                "undostore: "), (message, reply)
    assert commands == 5, messages


def files(root: Path) -> dict[str, str]:
    """The project's top-level files (not the hosts' config folders)."""
    return {p.name: p.read_text() for p in root.iterdir() if p.is_file()}


def told_after_a_terminal_step(prompt: PrintMode, conversation: str, step: str,
                               model: ModelServer) -> str:
    """`undostore STEP --yes` in a terminal for the conversation, then a prompt in the host:
    the last request's body (as JSON text), which must carry the note of what came back."""
    done = subprocess.run([sys.executable, "-m", "undostore", step, "--yes", "--session",
                           prompt.session(conversation)], cwd=prompt.root, env=prompt.env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    prompt(conversation, "next?")
    return json.dumps(model.requests[-1]["body"])


TURN_END_EVENTS = ("Stop", "AfterAgent", "agent_end", "session.idle")  # each host's turn end


def slow_turn_ends(env: dict[str, str], folder: Path, seconds: float = 1.5) -> None:
    """Put first on the host's PATH an `undostore` that takes `seconds` longer over a turn's
    end (as a big tree's snapshot would): a host that exits before its turn-end hook is done
    leaves the turn open, and the files recorded for it later are whatever is there then."""
    bin_dir = folder / "slow-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / "undostore"
    ends = "|".join(f"*'\"{name}\"'*" for name in TURN_END_EVENTS)
    program.write_text("#!/bin/sh\nevent=$(cat)\n"
                       f"case \"$event\" in {ends}) sleep {seconds};; esac\n"
                       f"printf '%s' \"$event\" | \"{sys.executable}\" -m undostore \"$@\"\n")
    program.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"


def two_conversations_undo_their_own(tmp_path: Path, make_host: Callable[..., object],
                                     write: Callable[[Path, str], Tool], first: str,
                                     second: str) -> None:
    """Two conversations in one folder, each writing a file with the host's write tool
    (`write(path, text)`), then the user's own edit: each `/undo` takes back its
    conversation's turn only, and the user's edit stays. The turn-end hook is slowed
    (`slow_turn_ends`), and each turn's end is recorded by the time the host exits."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "shared.txt").write_text("s\n")
    script = {"write x": [write(root / "x.txt", "x\n")], "write y": [write(root / "y.txt", "y\n")]}
    with ModelServer(script) as model:
        host = make_host(root, tmp_path / "home", model)
        slow_turn_ends(host.env, tmp_path)
        prompt = host.prompt
        prompt(first, "write x")
        prompt(second, "write y")
        with Workspace(root) as ws:
            assert ws.log(prompt.session(second)).undo[0].after is not None
        (root / "shared.txt").write_text("the user's own edit\n")
        prompt(first, "/undo")
        assert files(root) == {"shared.txt": "the user's own edit\n", "y.txt": "y\n"}
        prompt(second, "/undo")
        assert files(root) == {"shared.txt": "the user's own edit\n"}
        prompt(first, "/redo")
        assert files(root) == {"shared.txt": "the user's own edit\n", "x.txt": "x\n"}


def _calls_over(root: Path, session: Callable[[], str], calls: int) -> bool:
    """Whether the session's newest turn has `calls` tool calls, all of them ended (False
    while the host has not yet made what names the session: Pi's file)."""
    from undostore import NoStoreError

    try:
        with Workspace(root) as ws:
            turns = ws.log(session()).undo
    except (NoStoreError, OSError, ValueError):
        return False
    return bool(turns) and turns[0].calls == calls and not turns[0].open_calls


def two_conversations_at_once(tmp_path: Path, make_host: Callable[..., object],
                              write: Callable[[Path, str], Tool],
                              shell: Callable[[Path, str], Tool], first: str, second: str,
                              undo: str = "/undo") -> None:
    """Two conversations' turns at once in one folder, each a file tool and a shell call, and
    the user's edit while both models hold their replies: A's calls run, then B's while A's
    turn is still open (the model holds A's reply until B's turn is over: deterministic, no
    two calls at once), then the user saves notes.txt and A's turn ends. A turn taken as a
    window of time would hold B's calls and the user's edit too; by tool call, `undo` in A
    takes back A's two files only, in B B's, and the user's edit stays."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("a.txt", "b.txt", "notes.txt"):
        (root / name).write_text(name[0] + "\n")
    script = {"work A": [write(root / "x.txt", "x\n"), shell(root / "a.txt", "A")],
              "work B": [write(root / "y.txt", "y\n"), shell(root / "b.txt", "B")]}

    b_over = threading.Event()

    def hold_replies(prompts: tuple[str, ...]) -> None:   # A's text, until B's turn is over
        if any(p.strip().strip('"') == "work A" for p in prompts):
            b_over.wait(120)

    with ModelServer(script, before_text=hold_replies) as model:
        host = make_host(root, tmp_path / "home", model)
        prompt = host.prompt   # type: ignore[attr-defined]
        running_a = prompt.begin(first, "work A")
        deadline = time.monotonic() + 120
        while (not _calls_over(root, lambda: prompt.session(first), 2)
               and time.monotonic() < deadline):
            time.sleep(0.1)
        prompt(second, "work B")
        assert running_a.poll() is None, "A's turn ended before B's was over"
        (root / "notes.txt").write_text("the user's\n")   # A's model still holds its reply
        b_over.set()
        prompt.finish(running_a)
        assert files(root) == {"a.txt": "A\n", "b.txt": "B\n", "notes.txt": "the user's\n",
                               "x.txt": "x\n", "y.txt": "y\n"}
        with Workspace(root) as ws:
            for conversation, own in ((first, ["a.txt", "x.txt"]), (second, ["b.txt", "y.txt"])):
                (point,) = ws.log(prompt.session(conversation)).undo
                assert point.by_calls and point.calls == 2, point
                assert sorted(f for note in point.notes for f in note.files) == own, point
        prompt(first, undo)
        assert files(root) == {"a.txt": "a\n", "b.txt": "B\n", "notes.txt": "the user's\n",
                               "y.txt": "y\n"}
        prompt(second, undo)
    assert files(root) == {"a.txt": "a\n", "b.txt": "b\n", "notes.txt": "the user's\n"}


@contextmanager
def in_tui(folder: Path, program: list[str], args: list[str], root: Path, env: dict[str, str],
           ready: str, columns: int = 110, rows: int = 34, timeout: float = 90
           ) -> Iterator[Tmux]:
    """A host's TUI in a tmux pane (`program args` in `root`, with `env` alone, as print mode
    runs it: none of the test process's variables, such as a CI's CI=true), once `ready`
    shows (within `timeout` seconds); closed after."""
    tmux = Tmux(folder, columns=columns, rows=rows)
    tmux.start(args, root, {**env, "TERM": "xterm-256color", "LANG": "C.UTF-8"}, program=program,
               inherit=False)
    try:
        tmux.wait_for(ready, timeout=timeout)
        yield tmux
    finally:
        tmux.close()


def typed(tmux: Tmux, text: str, then: str, timeout: float = 90, busy: str | None = None) -> str:
    """Type `text` into a host's TUI and submit it once it shows (a half second later: TUIs
    take keys arriving right after typed text for a paste, and Enter then for a new line);
    the screen once `then` shows. With `busy` (what the host shows while a turn or its hooks
    run), nothing is typed until it has gone: Gemini shows "Done." before its turn-end hook
    has run and refuses a slash command until then ("Slash commands cannot be queued"). An
    Enter that changed nothing on the screen within a few seconds (a busy TUI dropped it) is
    sent again; one that did anything is never repeated."""
    if busy is not None:
        tmux.wait_gone(busy, timeout)
    tmux.send("-l", text)
    tmux.wait_for(text, timeout=30)
    time.sleep(0.5)
    before = tmux.screen()
    tmux.send("Enter")
    deadline = time.monotonic() + timeout
    while True:
        try:
            return tmux.wait_for(then, timeout=min(ENTER_TAKEN_SECONDS,
                                                   max(0.1, deadline - time.monotonic())))
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
            if tmux.screen() == before:
                tmux.send("Enter")


ENTER_TAKEN_SECONDS = 5   # a TUI that took an Enter has redrawn by then

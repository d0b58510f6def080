"""Inside the real Gemini CLI (issue 46): the pinned `@google/gemini-cli` from tests/hosts
(`npm ci`; `.ci/run` installs it), driven in print mode by the scripted model on 127.0.0.1
speaking Gemini's API (tests/model_server.py), wired by `undostore init gemini` only, in a
folder the user trusted as Gemini asks (its trustedFolders.json; an untrusted folder registers
no hook at all, and `doctor` says so). Turns record points with their after-turn files;
`/undo`, `/undo`, `/redo`, `/redo`, `/undo 2` put the files right, show as "Agent execution
blocked: ..." and never reach the model, then or merged into a later prompt; the next prompt
carries undostore's note. `/undo` and `/redo` are in the TUI's slash menu (init's command
files)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from .host_support import (
    NODE_MODULES,
    PrintMode,
    after_the_first_undo,
    files,
    host_env,
    in_tui,
    init,
    pinned,
    received_texts,
    slow_turn_ends,
    the_two_turns,
    the_users_edit_is_not_the_turns,
    two_conversations_at_once,
    two_conversations_undo_their_own,
    typed,
)
from .model_server import ModelServer, Tool
from .terminal_support import needs_tmux

GEMINI = NODE_MODULES / "@google" / "gemini-cli" / "bundle" / "gemini.js"
NODE = "node"
GEMINI_BUSY = "esc to cancel"   # the TUI's line while a turn or its hooks run

pytestmark = pinned(GEMINI, "Gemini CLI")


class Host:
    """Gemini CLI in one project folder, against one scripted model."""

    def __init__(self, root: Path, home: Path, model: ModelServer, trusted: bool = True,
                 wired: bool = True, session_cleanup: bool = True) -> None:
        self.root = root
        self.env = host_env(home, model, GOOGLE_GEMINI_BASE_URL=model.url,
                            GEMINI_API_KEY="scripted", NO_COLOR="1")
        settings = home / ".gemini"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "settings.json").write_text(json.dumps(
            {"security": {"auth": {"selectedType": "gemini-api-key"}},
             "general": {"sessionRetention": {"enabled": session_cleanup}}}))
        if trusted:
            (settings / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
        self.wired = init(root, self.env, "gemini") if wired else None
        self.prompt = PrintMode([NODE, str(GEMINI), "--approval-mode", "yolo"],
                                "--session-id", "--resume", root, self.env)


def test_turns_undo_and_redo_inside_gemini_cli(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"add b": [Tool("write_file", {"file_path": str(root / "b.txt"),
                                            "content": "b\n"})],
              "edit a": [Tool("run_shell_command", {"command": f"printf 'A\\n' > {root}/a.txt",
                                                    "description": "edit a"})]}
    conversation = str(uuid.uuid4())
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        assert "ok    gemini: trust" in host.wired.stdout, host.wired.stdout
        the_two_turns(host.prompt, conversation, root)

        undone = host.prompt(conversation, "/undo")
        shown = undone.stdout + undone.stderr
        # A blocking decision: Gemini keeps the prompt out of the conversation (issue 55.17)
        assert "Agent execution blocked: undostore: undid the last turn" in shown, shown
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        told = after_the_first_undo(host.prompt, conversation, root, model).told
        # The net result of the five steps, said once: both turns undone.
        assert "<hook_context>undostore: the user took back the 2 turns 'edit a', 'add b'" \
            in told


def test_an_untrusted_folder_runs_no_hook_and_doctor_says_so(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with ModelServer({}) as model:
        host = Host(root, tmp_path / "home", model, trusted=False)
        assert "FAIL  gemini: trust" in host.wired.stdout, host.wired.stdout
        # Headless Gemini refuses an untrusted folder (exit 55) unless told to skip trust;
        # then it runs the turn with no hook registered at all.
        host.prompt(str(uuid.uuid4()), "hello", "--skip-trust")
        assert model.requests, "the turn reached the model"
        doctor = subprocess.run([sys.executable, "-m", "undostore", "doctor", "gemini"],
                                cwd=root, env=host.env, capture_output=True, text=True,
                                timeout=60)
    assert doctor.returncode == 1
    assert "FAIL  gemini: hooks fired: gemini has not run undostore's hook here" in doctor.stdout


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    """Gemini's own session clean-up is off here: it deletes a conversation resumed in a later
    minute than it began (see the test below), which this test's turns may straddle."""
    two_conversations_undo_their_own(
        tmp_path, functools.partial(Host, session_cleanup=False),
        lambda path, text: Tool("write_file", {"file_path": str(path), "content": text}),
        str(uuid.uuid4()), str(uuid.uuid4()))


def test_geminis_clean_up_deletes_a_conversation_resumed_in_a_later_minute(tmp_path):
    """Gemini CLI 0.61's own defect, with no undostore hook wired; while it holds, its
    two-conversation test runs with Gemini's session clean-up off, and the README says so.
    Resuming conversation A in a later minute than A began makes Gemini open a second file for
    A named by the new minute (its client starts a fresh recording before it resumes) that
    keeps only A's metadata; the next run of any other conversation B then finds that file
    not resumable and, matching files by A's 8-character id, deletes A's real one with it
    (sessionCleanup.ts, `cleanupExpiredSessions`). The minute is made to turn by renaming A's
    file to an earlier one, as Gemini would have named it then."""
    root = tmp_path / "project"
    root.mkdir()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    with ModelServer({}) as model:
        host = Host(root, tmp_path / "home", model, wired=False)
        host.prompt(first, "hello")
        host.prompt(second, "hello")
        chats = next((tmp_path / "home" / ".gemini" / "tmp").glob("*/chats"))
        (began,) = chats.glob(f"session-*-{first[:8]}.jsonl")
        began.rename(chats / f"session-2026-01-01T00-00-{first[:8]}.jsonl")
        host.prompt(first, "hello again")
        assert len(list(chats.glob(f"session-*-{first[:8]}.jsonl"))) == 2
        host.prompt(second, "hello again")
        assert list(chats.glob(f"session-*-{first[:8]}.jsonl")) == []
        lost = subprocess.run([*host.prompt.command, "-p", "hello", "--resume", first], cwd=root,
                              env=host.env, capture_output=True, text=True, timeout=180)
    assert "Invalid session identifier" in lost.stderr, lost.stderr


@needs_tmux
def test_undo_in_geminis_tui(tmp_path):
    """Typed in Gemini's TUI (tmux): `/undo` is in the slash menu (init's command file), reaches
    the hook, the files come back, and the line shows ("Agent execution blocked: undostore:
    undid ..."). The blocked `/undo` and `/redo` stay out of the conversation: the next prompt
    reaches the model alone (issue 55.17: with `continue: false` Gemini kept them in its
    history and sent "/undo\n/redo\nPROMPT"). Gemini adds its own "This request failed" note
    after a blocked prompt at its default error verbosity (useGeminiStream's
    maybeAddLowVerbosityFailureNote): no hook field avoids it. The turn's end is slowed:
    `/undo` is typed once Gemini's turn-end hook is done, as a user must (Gemini refuses a
    slash command until then)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"edit a": [Tool("run_shell_command", {"command": f"printf 'A\\n' > {root}/a.txt",
                                                    "description": "edit a"})]}
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        slow_turn_ends(host.env, tmp_path, seconds=3)   # as a loaded CI: "Done." long before
        with in_tui(tmp_path, [NODE, str(GEMINI)], ["--approval-mode", "yolo"], root, host.env,
                    "Type your message") as tmux:
            typed(tmux, "edit a", "Done.")
            assert files(root) == {"a.txt": "A\n"}
            tmux.wait_gone(GEMINI_BUSY, 90)
            tmux.send("-l", "/und")
            menu = tmux.wait_for("(undostore)", timeout=30)
            assert "undo" in menu, menu
            for _ in "/und":
                tmux.send("BSpace")
            screen = typed(tmux, "/undo", "Agent execution blocked: undostore: undid the last turn",
                           busy=GEMINI_BUSY)
            assert files(root) == {"a.txt": "a\n"}
            assert "'edit a'" in screen, screen
            typed(tmux, "/redo", "Agent execution blocked: undostore: redid the last turn",
                  busy=GEMINI_BUSY)
            assert files(root) == {"a.txt": "A\n"}
            asked = len(model.requests)
            typed(tmux, "go on now", "go on now", busy=GEMINI_BUSY)
            deadline = time.monotonic() + 90
            while len(model.requests) == asked and time.monotonic() < deadline:
                time.sleep(0.2)
            tmux.wait_gone(GEMINI_BUSY, 90)
        sent = [t for r in model.requests[asked:] for t in received_texts(r["body"])]
        assert sent and not any(line.strip().startswith(("/undo", "/redo"))
                                for t in sent for line in t.splitlines()), sent


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Attribution by tool call inside the real Gemini CLI (BeforeTool/AfterTool, which carry
    no call id)."""
    the_users_edit_is_not_the_turns(tmp_path, Host, _write, _shell)


def test_two_conversations_at_once_each_undo_keeps_the_others_and_the_users_work(tmp_path):
    two_conversations_at_once(tmp_path, functools.partial(Host, session_cleanup=False), _write,
                              _shell, str(uuid.uuid4()), str(uuid.uuid4()))


def _write(path: Path, text: str) -> Tool:
    return Tool("write_file", {"file_path": str(path), "content": text})


def _shell(path: Path, text: str) -> Tool:
    return Tool("run_shell_command", {"command": f"printf '{text}\\n' > {path}",
                                      "description": "edit"})

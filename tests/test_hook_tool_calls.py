"""Claude Code's tool events through the real hook process: each call's change is its turn's;
the user's edits beside and between the calls are kept by `/undo`; tools that change nothing
record nothing; a failed call ends too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from undostore import Workspace

from .test_hook import assert_done, hook, prompt_event

SESSION = "3f2a-sess"


def tool_event(root: Path, name: str, tool: str, call_id: str, **tool_input: object) -> dict:
    return {"session_id": SESSION, "cwd": str(root), "hook_event_name": name,
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": call_id}


def call(root: Path, tool: str, call_id: str, act, after: str = "PostToolUse",
         **tool_input: object) -> None:
    assert_done(hook(tool_event(root, "PreToolUse", tool, call_id, **tool_input)))
    act()
    assert_done(hook(tool_event(root, after, tool, call_id, **tool_input)))


def test_undo_takes_back_the_calls_and_keeps_what_the_user_wrote_beside_them(tree_factory):
    root = tree_factory({"a.py": "old\n", "b.txt": "b\n", "notes.txt": "n\n"})
    assert_done(hook(prompt_event(root, "tidy up", SESSION)))
    call(root, "Read", "t0", lambda: None, file_path=str(root / "a.py"))
    call(root, "Edit", "t1", lambda: (root / "a.py").write_text("new\n"),
         file_path=str(root / "a.py"), old_string="old", new_string="new")
    (root / "notes.txt").write_text("the user's\n")          # their editor, between calls
    call(root, "Bash", "t2", lambda: (root / "b.txt").unlink(), command="rm b.txt")
    call(root, "Write", "t3", lambda: (root / "c.txt").write_text("half\n"),
         after="PostToolUseFailure", file_path="c.txt", content="half")
    assert_done(hook({"session_id": SESSION, "cwd": str(root), "hook_event_name": "Stop"}))
    with Workspace(root) as ws:
        assert sorted(c.path for c in ws.show(session=SESSION).changes) == [
            "a.py", "b.txt", "c.txt"]
        (point,) = ws.log(SESSION).undo
        assert point.calls == 3   # Read recorded nothing
    from .test_hook import run

    shown = json.loads(run("show", "--session", SESSION, "--json", cwd=root).stdout)
    assert [{k: v for k, v in call.items() if k not in ("before", "after")}
            for call in shown["calls"]] == [
        {"tool": "Edit", "label": "", "files": ["a.py"], "more": 0},
        {"tool": "Bash", "label": "rm b.txt", "files": ["b.txt"], "more": 0},
        {"tool": "Write", "label": "", "files": ["c.txt"], "more": 0}]
    assert all(len(call["before"]) == len(call["after"]) == 40 for call in shown["calls"])
    text = run("show", "--session", SESSION, "--no-pager", cwd=root).stdout.decode()
    assert "    2. Bash: rm b.txt  (b.txt)" in text and "    1. Edit  (a.py)" in text, text
    logged = run("log", "--stat", "--session", SESSION, "--no-pager", cwd=root).stdout.decode()
    assert "    2. Bash: rm b.txt  (b.txt)" in logged and "    1. Edit  (a.py)" in logged, logged
    done = hook(prompt_event(root, "/undo", SESSION))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "block"
    assert (root / "a.py").read_text() == "old\n"
    assert (root / "b.txt").read_text() == "b\n"
    assert not (root / "c.txt").exists()
    assert (root / "notes.txt").read_text() == "the user's\n"


def test_a_file_tool_naming_a_file_outside_the_root_records_nothing(tree_factory, tmp_path):
    root = tree_factory({"a.py": "old\n"})
    outside = tmp_path / "elsewhere.txt"
    assert_done(hook(prompt_event(root, "write elsewhere", SESSION)))
    call(root, "Write", "t1", lambda: outside.write_text("x\n"), file_path=str(outside))
    (root / "a.py").write_text("the user's\n")
    with Workspace(root) as ws:
        (point,) = ws.log(SESSION).undo
        assert point.calls == 0 and point.by_calls   # the host reports its calls
        assert not point.changed and ws.log(SESSION).turns == [None]


def _in(session: str, event: dict) -> dict:
    return {**event, "session_id": session}


def test_a_file_both_conversations_shells_may_have_written_is_refused_then_kept(tree_factory):
    """Two conversations' shell calls overlap and a file changes meanwhile: `/undo` in either
    changes nothing and says so; `/undo --keep` takes back the rest and leaves it; the
    command line refuses with exit 3 too."""
    from .test_hook import run

    root = tree_factory({"a.txt": "a\n", "y.txt": "y\n"})
    for session in ("A", "B"):
        assert_done(hook(prompt_event(root, f"work in {session}", session)))
    assert_done(hook(_in("A", tool_event(root, "PreToolUse", "Bash", "a1", command="make"))))
    assert_done(hook(_in("B", tool_event(root, "PreToolUse", "Bash", "b1", command="make"))))
    (root / "y.txt").write_text("whose?\n")
    assert_done(hook(_in("B", tool_event(root, "PostToolUse", "Bash", "b1", command="make"))))
    (root / "a.txt").write_text("A's\n")
    assert_done(hook(_in("A", tool_event(root, "PostToolUse", "Bash", "a1", command="make"))))
    refused = run("undo", "--session", "A", "--yes", "--json", cwd=root)
    assert refused.returncode == 3, refused.stderr
    assert json.loads(refused.stdout)["conflicts"] == ["y.txt"]
    assert b"'B'" in refused.stderr and b"--keep-doubtful" in refused.stderr
    answer = hook(prompt_event(root, "/undo", "A"))
    line = json.loads(answer.stdout)["reason"]
    assert "y.txt" in line and "in doubt" in line and "/undo --keep" in line, line
    assert (root / "a.txt").read_text() == "A's\n"      # nothing changed
    answer = hook(prompt_event(root, "/undo --keep", "A"))
    assert "undid the last turn" in json.loads(answer.stdout)["reason"]
    assert (root / "a.txt").read_text() == "a\n" and (root / "y.txt").read_text() == "whose?\n"


def test_gemini_tool_events_without_a_call_id_pair_by_tool_and_input(tree_factory):
    """Gemini CLI gives its tool events no call id: before and after pair by the tool and its
    input; one shell command run twice is two calls (each event's own timestamp)."""
    root = tree_factory({"a.txt": "a\n"})

    def gemini(name: str, stamp: str, **fields: object) -> dict:
        return {"session_id": "g", "cwd": str(root), "hook_event_name": name,
                "timestamp": stamp, **fields}

    prompt = gemini("BeforeAgent", "t0", prompt="append twice")
    assert hook(prompt).returncode == 0
    for round_, stamp in enumerate(("t1", "t3")):
        shell = {"tool_name": "run_shell_command", "tool_input": {"command": "echo x >> a.txt"}}
        assert hook(gemini("BeforeTool", stamp, **shell)).returncode == 0
        with open(root / "a.txt", "a") as f:
            f.write(f"x{round_}\n")
        assert hook(gemini("AfterTool", stamp + "'", **shell,
                           tool_response={"llmContent": ""})).returncode == 0
    (root / "b.txt").write_text("the user's\n")
    with Workspace(root) as ws:
        (point,) = ws.log("g").undo
        assert point.calls == 2
        ws.undo("g", confirm=lambda plan: True)
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").exists()


class HostTools(NamedTuple):
    """How one host sends a turn with a shell call and a file tool's call: its events made by
    `event(root, kind, tool, tool_input, stamp)` (kind: prompt, before, after, stop), sent with
    `args` first (Copilot names each event on the command line)."""

    host: str
    event: Callable[..., tuple[tuple[str, ...], dict]]
    shell: tuple[str, dict]
    file_tool: Callable[[Path], tuple[str, dict]]


def _cursor(root: Path, kind: str, tool: str = "", tool_input: object = None, stamp: int = 0
            ) -> tuple[tuple[str, ...], dict]:
    name = {"prompt": "beforeSubmitPrompt", "before": "preToolUse", "after": "postToolUse",
            "stop": "stop"}[kind]
    body = {"conversation_id": "cur", "generation_id": "g1", "hook_event_name": name,
            "workspace_roots": [str(root)]}
    extra = ({"prompt": "tidy"} if kind == "prompt" else {"status": "completed"}
             if kind == "stop" else {"tool_name": tool, "tool_input": tool_input,
                                     "tool_use_id": f"call-{tool}", "cwd": str(root)})
    return (), {**body, **extra}


def _windsurf(root: Path, kind: str, tool: str = "", tool_input: object = None, stamp: int = 0
              ) -> tuple[tuple[str, ...], dict]:
    name = ("pre_user_prompt" if kind == "prompt" else "post_cascade_response" if kind == "stop"
            else ("pre_" if kind == "before" else "post_") + tool)
    info = ({"user_prompt": "tidy"} if kind == "prompt" else {"response": "done"}
            if kind == "stop" else dict(tool_input or {}))
    if kind == "after" and tool == "mcp_tool_use":
        info["mcp_result"] = "ok"
    return (), {"agent_action_name": name, "trajectory_id": "wind", "execution_id": "e1",
                "timestamp": f"2026-12-07T10:00:{stamp:02d}Z", "tool_info": info}


def _copilot(root: Path, kind: str, tool: str = "", tool_input: object = None, stamp: int = 0
             ) -> tuple[tuple[str, ...], dict]:
    name = {"prompt": "userPromptSubmitted", "before": "preToolUse", "after": "postToolUse",
            "stop": "agentStop"}[kind]
    body = {"sessionId": "cop", "timestamp": 1796649945000 + stamp, "cwd": str(root)}
    extra = ({"prompt": "tidy"} if kind == "prompt" else {"stopReason": "end_turn"}
             if kind == "stop" else {"toolName": tool, "toolArgs": json.dumps(tool_input)})
    return (name,), {**body, **extra}   # toolArgs as JSON text, as Copilot's docs show it


HOST_TOOLS = [
    HostTools("cursor", _cursor, ("Shell", {"command": "make"}),
              lambda path: ("Write", {"file_path": str(path), "contents": "c\n"})),
    HostTools("windsurf", _windsurf, ("run_command", {"command_line": "make", "cwd": "."}),
              lambda path: ("write_code", {"file_path": str(path), "edits": []})),
    HostTools("copilot", _copilot, ("bash", {"command": "make", "description": "build"}),
              lambda path: ("create", {"path": str(path), "file_text": "c\n"})),
]


@pytest.mark.parametrize("tools", HOST_TOOLS, ids=[t.host for t in HOST_TOOLS])
def test_each_hosts_tool_events_make_the_turn_its_calls(tree_factory, tools):
    """A shell call and a file tool's call, in the host's own events; the user's edit between
    them and after them is no part of the turn: `/undo` keeps it."""
    from .test_hook import run

    root = tree_factory({"b.txt": "b\n", "notes.txt": "n\n"})
    stamp = iter(range(1, 60))

    def send(kind: str, tool: str = "", tool_input: object = None) -> None:
        args, event = tools.event(root, kind, tool, tool_input, next(stamp))
        done = run("hook", "--host", tools.host, *args, stdin=json.dumps(event).encode(),
                   cwd=root)
        assert done.returncode == 0, done.stderr

    send("prompt")
    send("before", *tools.shell)
    (root / "b.txt").write_text("made by make\n")
    send("after", *tools.shell)
    (root / "notes.txt").write_text("the user's\n")
    send("before", *tools.file_tool(root / "c.txt"))
    (root / "c.txt").write_text("c\n")
    send("after", *tools.file_tool(root / "c.txt"))
    (root / "notes.txt").write_text("the user's, again\n")
    send("stop")
    session = {"cursor": "cur", "windsurf": "wind", "copilot": "cop"}[tools.host]
    with Workspace(root) as ws:
        (point,) = ws.log(session).undo
        assert point.by_calls and point.calls == 2, point
        ws.undo(session, confirm=lambda plan: True)
    assert (root / "b.txt").read_text() == "b\n" and not (root / "c.txt").exists()
    assert (root / "notes.txt").read_text() == "the user's, again\n"


def test_windsurf_pairs_an_mcp_call_whose_after_event_adds_its_result(tree_factory):
    """Windsurf's post_mcp_tool_use adds `mcp_result` to what its pre event sent: the call is
    still one (known by its server, tool and arguments), ended by its after event."""
    from .test_hook import run

    root = tree_factory({"a.txt": "a\n"})
    call = {"mcp_server_name": "fs", "mcp_tool_name": "write", "mcp_tool_arguments": {"p": 1}}
    for stamp, kind in enumerate(("prompt", "before", "after"), 1):
        if kind == "after":
            (root / "a.txt").write_text("by the tool\n")
        _, event = _windsurf(root, kind, "mcp_tool_use", call, stamp)
        assert run("hook", "--host", "windsurf", stdin=json.dumps(event).encode(),
                   cwd=root).returncode == 0
    (root / "later.txt").write_text("the user's\n")   # after the call: not the turn's
    _, event = _windsurf(root, "stop", stamp=9)
    assert run("hook", "--host", "windsurf", stdin=json.dumps(event).encode(),
               cwd=root).returncode == 0
    with Workspace(root) as ws:
        ws.undo("wind", confirm=lambda plan: True)
    assert (root / "a.txt").read_text() == "a\n" and (root / "later.txt").exists()

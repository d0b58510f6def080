"""A setting with a bad value never switches protection off (undostore/settings.py): a command
a person types refuses it (exit 2 naming the variable, the value and what is accepted) and
changes nothing; the hook and `status`, which run unattended, use the default and say so in one
stderr line, so the hook still records its undo point. Every bad value of every setting."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from undostore import Workspace

from .conftest import Cli

BAD = [("UNDOSTORE_UNDO_LIMIT", "abc", "a whole number of 1 or more"),
       ("UNDOSTORE_UNDO_LIMIT", "-1", "a whole number of 1 or more"),
       ("UNDOSTORE_UNDO_LIMIT", "0", "a whole number of 1 or more"),
       ("UNDOSTORE_UNDO_LIMIT", "2.5", "a whole number of 1 or more"),
       ("UNDOSTORE_GC_EVERY", "-1", "a whole number of 0 or more"),
       ("UNDOSTORE_GC_EVERY", "often", "a whole number of 0 or more"),
       ("UNDOSTORE_KEEP_DAYS", "0", "a number of days more than 0"),
       ("UNDOSTORE_KEEP_DAYS", "nan", "a number of days more than 0"),
       ("UNDOSTORE_KEEP_DAYS", "inf", "a number of days more than 0"),
       ("UNDOSTORE_MAX_STORE_MB", "-5", "a number of megabytes more than 0"),
       ("UNDOSTORE_MAX_STORE_MB", "lots", "a number of megabytes more than 0"),
       ("UNDOSTORE_FSMONITOR", "fsevents", "auto, watchman or off"),
       ("UNDOSTORE_MAX_FILES", "0", "a whole number of 1 or more"),
       ("UNDOSTORE_MAX_FILES", "many", "a whole number of 1 or more"),
       # Other scripts' digits, which int() and float() read (issue 55, item 7); Wine hands a
       # Windows process the environment's non-ASCII values re-encoded (the lane's messages
       # show them as mojibake), so these are Linux's and macOS's
       *(pytest.param(*case, marks=pytest.mark.skipif(sys.platform == "win32",
                                                      reason="non-ASCII environment under Wine"))
         for case in (("UNDOSTORE_MAX_FILES", "\u0663", "a whole number of 1 or more"),
                      ("UNDOSTORE_KEEP_DAYS", "\u0661.\u0665", "a number of days more than 0")))]


def env_with(variable: str, value: str) -> dict[str, str]:
    return {**os.environ, "UNDOSTORE_FSMONITOR": "off", variable: value}


@pytest.mark.parametrize(("variable", "value", "accepted"), BAD)
def test_a_typed_command_refuses_a_bad_value_and_changes_nothing(tree_factory, variable, value,
                                                                 accepted):
    root = tree_factory({"a.txt": "1"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="first")
    (root / "a.txt").write_text("2")
    for args in (("snapshot", "-s", "s"), ("log", "-s", "s"), ("undo", "-s", "s", "--yes")):
        done = Cli().run(*args, cwd=root, env=env_with(variable, value))
        assert done.returncode == 2, (args, done.stderr)
        assert f"{variable}={value!r} is not {accepted}" in done.stderr, args
    assert (root / "a.txt").read_text() == "2"
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").undo] == ["first"]


@pytest.mark.parametrize(("variable", "value", "accepted"), BAD)
def test_the_hook_and_status_use_the_default_and_say_so_once(tree_factory, variable, value,
                                                             accepted):
    root = tree_factory({"a.txt": "1"})
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "go"}
    done = Cli().run("hook", cwd=root, env=env_with(variable, value), input=json.dumps(event))
    assert done.returncode == 0 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines == [f"undostore: warning: {variable}={value!r} is not {accepted}; using the "
                     f"default ({_default(variable)})"]
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").undo] == ["go"]   # protection stays on
    status = Cli().run("status", "-s", "s", cwd=root, env=env_with(variable, value))
    assert status.returncode == 0 and status.stdout == "undo:1 redo:0\n"
    assert f"{variable}={value!r}" in status.stderr


def _default(variable: str) -> str:
    from undostore.settings import SETTINGS

    default = SETTINGS[variable].default
    return "none" if default is None else str(default)


def test_good_values_are_taken(tree_factory, tmp_path: Path):
    root = tree_factory({"a.txt": "0"})
    env = {**os.environ, "UNDOSTORE_UNDO_LIMIT": " 2 ", "UNDOSTORE_FSMONITOR": "OFF"}
    for i in range(4):
        (root / "a.txt").write_text(str(i + 1))
        assert Cli().run("snapshot", "-s", "s", cwd=root, env=env).returncode == 0
    with Workspace(root) as ws:
        assert len(ws.log("s").undo) == 2

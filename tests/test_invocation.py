"""The command line read once (cli/invocation.py): what the lean entry, click's main and the
resident process's caller all take from it."""

from __future__ import annotations

import pytest
from undostore_cli.invocation import Invocation


def test_the_global_options_and_the_command_are_read_once():
    given = Invocation(["--json", "--root", "r", "--store=s", "--force", "undo", "2"])
    assert (given.root, given.store, given.force, given.as_json) == ("r", "s", True, True)
    assert given.command == "undo" and not given.unattended and given.lean() is None
    assert given.for_click() == ["--root", "r", "--store=s", "--force", "undo", "--json", "2"]


@pytest.mark.parametrize("args", [["hook", "--help"], ["--version", "hook"], ["status", "-s=x"],
                                  ["--root"], ["hook", "--host"], ["--", "hook"], ["log"]])
def test_what_only_click_can_read_goes_to_click(args):
    assert Invocation(args).lean() is None


def test_a_plain_hook_and_status_call_skip_click():
    hook = Invocation(["--root=", "hook", "--host", "pi", "{}"]).lean()
    assert hook is not None and hook.command == "hook" and hook.invocation.root is None
    assert (hook.values, hook.args, hook.as_json) == ({"host": "pi"}, ["{}"], False)
    status = Invocation(["status", "--session=a", "--json"]).lean()
    assert status is not None and status.values == {"session": "a"} and status.as_json
    assert status.invocation.unattended


def test_json_after_a_double_dash_is_an_argument():
    given = Invocation(["diff", "--", "--json"])
    assert not given.as_json and given.for_click() == ["diff", "--", "--json"]

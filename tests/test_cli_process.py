"""What one `undostore` process loads: each command imports its own module and what its library
call needs, nothing for the other commands (start-up time is paid on every agent turn)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from undostore import Workspace

CLI_FOLDER = Path(__file__).resolve().parents[1] / "cli"


def test_the_command_table_names_every_command_of_every_module():
    import importlib

    from undostore_cli.main import COMMAND_MODULES

    modules = sorted(f"commands.{p.stem}" for p in (CLI_FOLDER / "commands").glob("*.py")
                     if "\nCOMMANDS" in p.read_text(encoding="utf-8"))
    assert sorted(set(COMMAND_MODULES.values())) == modules
    for module_name in modules:
        module = importlib.import_module(f"undostore_cli.{module_name}")
        defined = sorted(command.name for command in module.COMMANDS)
        listed = sorted(name for name, m in COMMAND_MODULES.items() if m == module_name)
        assert defined == listed, module_name


_LOADED = """
import json, sys
from undostore_cli.entry import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _run_loaded(args: list[str], cwd: Path, stdin: str = "") -> tuple[int, str, list[str]]:
    done = subprocess.run([sys.executable, "-c", _LOADED, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, input=stdin)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], done.stdout, report["modules"]


def test_undo_loads_no_other_commands_module_nor_what_recording_a_point_needs(tree_factory):
    root = tree_factory({"a.txt": "A"})
    with Workspace(root) as ws:
        ws.snapshot(session="s")
        (root / "a.txt").write_text("B")
    code, out, modules = _run_loaded(["undo", "--session", "s", "--yes", "--json"], root)
    assert code == 0 and json.loads(out)["modified"] == ["a.txt"]
    assert (root / "a.txt").read_text() == "A"
    from undostore_cli.main import COMMAND_MODULES

    command_modules = {f"undostore_cli.{m}" for m in COMMAND_MODULES.values()}
    cli_modules = {m for m in modules if m in command_modules}
    # undo and redo live with the session commands; they show plans as restore does.
    assert cli_modules == {"undostore_cli.commands.sessions", "undostore_cli.commands.restore"}
    # An undo merges its turn's files 3-way (diff.merge, and dulwich's tree parser where a
    # folder changes), but makes no whole-tree diff, and reads packs itself.
    unneeded = [m for m in modules if m.startswith((
        "dulwich.pack", "dulwich.repo", "mcp", "undostore.diff.trees", "undostore.diff.patch",
        "undostore.diff.renames", "undostore.history.retention", "undostore.history.gc",
        "undostore.history.usage", "undostore_cli.mcpserver.server"))]
    assert unneeded == []


def test_help_and_an_unknown_command_still_see_every_command(tmp_path):
    code, out, modules = _run_loaded(["--help"], tmp_path)
    assert code == 0
    for name in ("diff", "hook", "mcp", "ops", "rebind", "snapshot", "status", "undo"):
        assert f"\n  {name} " in out
    code, out, _ = _run_loaded(["--json", "bogus"], tmp_path)
    assert code == 2
    assert json.loads(out)["error"]["message"] == "No such command 'bogus'."


def test_the_hook_records_a_point_without_loading_the_restore_machinery(tree_factory):
    root = tree_factory({"a.txt": "A"})
    event = {"session_id": "s1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "make it faster"}
    code, out, modules = _run_loaded(["hook"], root, json.dumps(event))
    assert (code, out) == (0, "")
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s1").undo] == ["make it faster"]
    restore_machinery = {"undostore.restore.restore", "undostore.restore.checkout",
                         "undostore.restore.plan", "undostore.restore.diskstate"}
    assert restore_machinery & set(modules) == set()
    assert [m for m in modules if m.startswith("undostore.diff")] == []
    # No retention limit is set: enforcing none needs neither gc nor the usage accounting.
    assert {"undostore.history.gc", "undostore.history.usage"} & set(modules) == set()


def test_the_per_prompt_hook_path_imports_no_click_nor_any_command(tree_factory):
    """The hook a host runs on every prompt, and its after-turn event, go from the entry point
    to hosts/hook.py without click (0.014 s of imports) or any command module: what they import
    is pinned here (docs/design.md, "Start-up")."""
    root = tree_factory({"a.txt": "A"})
    for event in ({"session_id": "s1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
                   "prompt": "make it faster"},
                  {"session_id": "s1", "cwd": str(root), "hook_event_name": "Stop"}):
        for args in (["hook"], ["--root", str(root), "hook", "--host", "claude-code"]):
            code, out, modules = _run_loaded(args, root, json.dumps(event))
            assert (code, out) == (0, ""), args
            cli_modules = sorted(m for m in modules if m.startswith("undostore_cli."))
            assert cli_modules == ["undostore_cli.door", "undostore_cli.entry",
                                   "undostore_cli.hosts", "undostore_cli.hosts.hook",
                                   "undostore_cli.hosts.once", "undostore_cli.hosts.records",
                                   "undostore_cli.hosts.undo", "undostore_cli.invocation",
                                   "undostore_cli.plain", "undostore_cli.resident_client",
                                   "undostore_cli.signals"], (event, args)
            assert [m for m in modules if m == "click" or m.startswith("click.")] == []
            # Records on this path are NamedTuples and slotted classes: dataclasses would add
            # its import (inspect, ast, dis, tokenize) to every prompt.
            assert {"dataclasses", "inspect"} & set(modules) == set(), (event, args)
    with Workspace(root) as ws:
        (point,) = ws.log("s1").undo
        assert point.label == "make it faster" and point.after is not None
    # `hook --help`, and anything click must parse, still reach the click command.
    code, out, modules = _run_loaded(["hook", "--help"], root)
    assert code == 0 and "Handle one agent-host hook event" in out and "click" in modules


def test_the_footer_status_imports_no_click_nor_any_command(tree_factory):
    """`status`, which a host's footer runs on every redraw, goes to commands/status_run.py the
    same way; its errors keep their exit codes and JSON."""
    root = tree_factory({"a.txt": "A"})
    with Workspace(root) as ws:
        ws.snapshot(session="s1")
    line = json.dumps({"session_id": "s1", "cwd": str(root)})
    for args in (["status"], ["--json", "status"], ["status", "-s", "s1", "--json"],
                 ["--root", str(root), "status", "--session=s1"]):
        code, out, modules = _run_loaded(args, root, line)
        assert code == 0, args
        assert out.startswith("undo:1 redo:0") or json.loads(out)["undo"] == 1, (args, out)
        cli_modules = sorted(m for m in modules if m.startswith("undostore_cli."))
        assert cli_modules == ["undostore_cli.commands", "undostore_cli.commands.status_run",
                               "undostore_cli.door", "undostore_cli.entry",
                               "undostore_cli.invocation",
                               "undostore_cli.plain", "undostore_cli.resident_client",
                               "undostore_cli.signals"], args
        assert [m for m in modules if m == "click" or m.startswith("click.")] == []
        assert {"dataclasses", "inspect"} & set(modules) == set(), args
    code, out, _ = _run_loaded(["--json", "--root", str(root / "a.txt"), "status"], root)
    assert code != 0 and json.loads(out)["exit_code"] == code


def test_a_snapshot_builds_no_dataclass(tree_factory):
    """The snapshot path's records are NamedTuples and slotted classes: `@dataclass` compiles
    its methods at import, ~0.55 ms a class (docs/design.md, "Start-up")."""
    root = tree_factory({"a.txt": "A", "d": {"b.txt": "B"}})
    assert _run_loaded(["snapshot"], root)[0] == 0   # the store's first run looks for orphans
    for change in ("", "B2"):   # no change, then one file changed
        if change:
            (root / "d" / "b.txt").write_text(change)
        code, out, modules = _run_loaded(["snapshot", "--json"], root)
        assert code == 0 and json.loads(out)["hashed"] == (1 if change else 0)
        assert "dataclasses" not in modules


def test_progress_is_handed_to_the_library_only_when_it_is_drawn():
    import io

    from undostore_cli.progress import TerminalProgress

    assert TerminalProgress(None).listener is None
    shown = TerminalProgress(io.StringIO())
    assert shown.listener is shown


def test_no_module_of_the_command_line_imports_itself_through_another():
    """The modules of cli/ import one another in one direction only (a command module never
    reaches into another's names: what two share lives in common.py, textout.py, plain.py)."""
    import ast

    imports: dict[str, set[str]] = {}
    for path in CLI_FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports[path.stem] = {node.module for node in ast.walk(tree)
                              if isinstance(node, ast.ImportFrom) and node.level == 1
                              and node.module}

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(imports.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo += imports.get(name, ())
        return seen

    assert [name for name in sorted(imports) if name in reaches(name)] == []

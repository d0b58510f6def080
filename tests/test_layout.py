"""The code's layout, held: the front end reaches the library through its public surface only
(the `undostore` package's names, `undostore.settings`, `undostore.home`), `cli/` keeps its
rooms, and every public name resolves."""

from __future__ import annotations

import ast
from pathlib import Path

import undostore

CLI = Path(__file__).resolve().parents[1] / "cli"
SURFACE = {"undostore", "undostore.settings", "undostore.home"}


def _run_time_imports(path: Path) -> set[str]:
    """The library modules `path` imports outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for node in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(n for n in names if n == "undostore" or n.startswith("undostore."))
    return found


def test_the_front_end_imports_the_library_through_its_public_surface_only():
    used = {path.relative_to(CLI).as_posix(): _run_time_imports(path)
            for path in CLI.rglob("*.py")}
    outside = {name: sorted(mods - SURFACE) for name, mods in used.items() if mods - SURFACE}
    assert outside == {}
    assert set().union(*used.values()) == SURFACE


def test_cli_keeps_its_rooms():
    top = sorted(p.name for p in CLI.glob("*.py"))
    rooms = sorted(p.name for p in CLI.iterdir() if (p / "__init__.py").exists())
    assert len(top) <= 15, top
    assert rooms == ["commands", "hosts", "mcpserver", "resident"]


def test_every_public_name_resolves_and_is_listed():
    assert sorted(undostore.__all__) == sorted(undostore._LAZY)
    for name in undostore.__all__:
        assert getattr(undostore, name) is not None, name

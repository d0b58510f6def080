"""The library's and the command line's modules meet through public names only: no module
imports another's private (`_name`) names, so each module's insides can change alone."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCES = [Path(__file__).parent.parent / "undostore", Path(__file__).parent.parent / "cli"]


def test_no_module_imports_a_private_name_of_another():
    crossing = []
    for folder in SOURCES:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(folder.parent)
            crossing += [f"{where}:{node.lineno} {node.module}.{alias.name}"
                         for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                         for alias in node.names
                         if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert crossing == []

"""The ignore matcher's fast paths (literal names and paths, `*.ext` suffixes, `text*` prefixes)
and its regexes, mixed in random order with negations and folder patterns, against
`git ls-files -o --exclude-standard` on one fixed tree: git's last match wins in each file, the
deepest file that matches decides.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from undostore.snapshot.walk import list_paths

from .conftest import IS_WINDOWS, Git, make_tree

NAMES = ("a.o", "b.a", "x.mod.c", "y.c", ".hidden", ".gitignore", "vmlinux", "vmlinux.o",
         "Makefile", "keep.o", "core", "g.tmp", "A.O")
FORMS = ("*.o", "*.a", "*.[oa]", "*.mod.c", ".*", "!.gitignore", "/vmlinux*", "vmlinux",
         "!keep.o", "core", "!core/", "sub/", "/sub/deep/", "deep", "*.c", "!*.c", "Makefile",
         "*.tmp", "g.*", "**/deep/*.o", "sub/*.o", "/a.o", "?.o", "*", "!*/", "[ab].*", "A.O",
         "*.O", "x*", "!x.mod.c", "*~", "#comment", "sub/deep/core")
ORACLE = shutil.which("git")


def _tree() -> dict:
    files = {name: name for name in NAMES if name != ".gitignore"}
    return {**files, "sub": {**files, "deep": dict(files), "core": dict(files)},
            "core": dict(files), "deep": dict(files)}


@pytest.fixture(scope="module")
def oracle_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("oracle") / "t", _tree())


@pytest.mark.skipif(ORACLE is None, reason="git is not installed (the reference oracle)")
@pytest.mark.skipif(IS_WINDOWS, reason="case and names: the Linux lane checks the matcher")
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root_lines=st.lists(st.sampled_from(FORMS), max_size=8),
       sub_lines=st.lists(st.sampled_from(FORMS), max_size=4),
       deep_lines=st.lists(st.sampled_from(FORMS), max_size=3))
@example(["!*.c", "*.mod.c"], [], [])      # two suffixes of one name: the later pattern wins
@example(["*.mod.c", "!*.c"], ["*.mod.c"], [])
@example(["*.o", "!keep.o", "*.[oa]"], ["!*.o"], ["keep.o"])
@example([".*", "!.gitignore", "/vmlinux*", "!vmlinux"], [".*"], [])
@example(["*", "!*/", "!*.c"], ["core", "!core/"], ["/core"])
@example(["A.O", "*.O"], ["x*", "!x.mod.c"], ["g.*", "!*.tmp"])
def test_random_pattern_mixes_match_git(oracle_root: Path, root_lines: list[str],
                                        sub_lines: list[str], deep_lines: list[str]):
    for folder, lines in (("", root_lines), ("sub", sub_lines), ("sub/deep", deep_lines)):
        (oracle_root / folder / ".gitignore").write_text("\n".join(lines) + "\n")
    assert list_paths(str(oracle_root)) == Git(ORACLE).ls_untracked(oracle_root)

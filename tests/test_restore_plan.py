"""Restore planning and path rules, without touching any files (plan.py, paths.py)."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore.errors import UnsafePathError
from undostore.git.objects import MODE_EXEC, MODE_FILE, MODE_LINK
from undostore.git.reader import ObjectReader
from undostore.restore.paths import check_path, is_git_name, name_problem, windows_name_problem
from undostore.restore.plan import (
    FlatTree,
    entries_at,
    expected_conflicts,
    flatten,
    flatten_difference,
    make_plan,
    parent_dirs,
)
from undostore.store.store import Store

from .restore_support import craft_snapshot

# --- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".git", ".GIT", ".Git", ".git.", ".git..", ".git ", ".git . ",
                                  "GIT~1", "git~1", "git~12", ".git::$INDEX_ALLOCATION",
                                  ".git:stream", ".g\u200cit", "\ufeff.git"])
def test_every_spelling_of_git_is_caught(name):
    assert is_git_name(name)
    assert name_problem(name, windows=False) is not None
    assert name_problem(name, windows=True) is not None


@pytest.mark.parametrize("name", [".gitignore", ".github", ".gitmodules", "git", ".gitx",
                                  "git~", "my.git", "agit~1"])
def test_names_that_only_look_like_git_are_fine(name):
    assert not is_git_name(name)
    assert name_problem(name, windows=False) is None


@pytest.mark.parametrize("name", ["a:b", "CON", "con", "PRN.txt", "aux.tar.gz", "NUL", "nul.",
                                  "COM1", "com9.log", "LPT1", "lpt5.x", "COM\u00b9", "CON .txt",
                                  "trail.", "trail ", "a<b", "a>b", 'a"b', "a|b", "a?b", "a*b",
                                  "a\\b", "ctl\x01", "tab\t", "\udcff"])
def test_names_windows_cannot_hold(name):
    assert windows_name_problem(name) is not None
    assert name_problem(name, windows=True) is not None


@pytest.mark.parametrize("name", ["COM10", "LPT0", "console", "aux_", "prn-x", "nul_.txt",
                                  "normal.txt", ".hidden", "spa ce", "\u00e9t\u00e9"])
def test_names_windows_can_hold(name):
    assert windows_name_problem(name) is None


@pytest.mark.parametrize("name", ["a:b", "CON", "trail.", "a\\b", "a<b"])
def test_windows_only_rules_do_not_apply_elsewhere(name):
    assert name_problem(name, windows=False) is None


@pytest.mark.parametrize("path", ["/etc/passwd", "C:/x", "a/../b", "a//b", "..", "a/./b", "x/"])
def test_bad_whole_paths(path):
    with pytest.raises(UnsafePathError):
        check_path(path, windows=False)


def test_good_whole_path():
    check_path("src/pkg/mod.py", windows=False)


def test_windows_names_are_refused_while_flattening_for_windows(tmp_path):
    store = Store(str(tmp_path / "store"))
    snap = craft_snapshot(store, {"ok": b"1", "d": {"nul.txt": b"device"}})
    empty = bytes.fromhex(craft_snapshot(store, {}))
    with ObjectReader(store) as reader:
        flatten(reader.read_tree_body, bytes.fromhex(snap), check=True, windows=False)
        with pytest.raises(UnsafePathError) as info:
            flatten(reader.read_tree_body, bytes.fromhex(snap), check=True, windows=True)
        assert info.value.path == "d/nul.txt"
        with pytest.raises(UnsafePathError):
            flatten_difference(reader.read_tree_body, empty, bytes.fromhex(snap), windows=True)
        # Folders identical on both sides are files already on this disk: not read at all.
        flatten_difference(reader.read_tree_body, bytes.fromhex(snap), bytes.fromhex(snap),
                           windows=True)
    store.close()


# --- planning ------------------------------------------------------------------------------------

A, B, C = b"\x0a" * 20, b"\x0b" * 20, b"\x0c" * 20


def _flat(files: dict[str, tuple[int, bytes]], tree_id: str = "0" * 40) -> FlatTree:
    dirs = {d for path in files for d in parent_dirs(path)}
    return FlatTree(tree_id, dict(files), dirs)


def test_plan_sorts_paths_into_create_modify_delete_and_chmod():
    now = _flat({"same": (MODE_FILE, A), "edit": (MODE_FILE, A), "gone": (MODE_FILE, B),
                 "x": (MODE_FILE, C), "link": (MODE_LINK, A), "d/e/f": (MODE_FILE, A)}, "1" * 40)
    wanted = _flat({"same": (MODE_FILE, A), "edit": (MODE_FILE, B), "new": (MODE_FILE, C),
                    "x": (MODE_EXEC, C), "link": (MODE_FILE, A)}, "2" * 40)
    plan = make_plan(now, wanted)
    assert plan.create == ["new"]
    assert plan.modify == ["edit", "link"]     # a file <-> symlink change is a rewrite
    assert plan.chmod == ["x"]
    assert plan.delete == ["d/e/f", "gone"]
    assert plan.remove_dirs == ["d/e", "d"]    # deepest first
    assert plan.modified == ["edit", "link", "x"]
    assert plan.before["edit"] == (MODE_FILE, A) and plan.after["edit"] == (MODE_FILE, B)
    assert (plan.target, plan.safety) == ("2" * 40, "1" * 40)
    assert "1 to create, 3 to modify, 2 to delete" in plan.summary()
    assert plan.lines(limit=2) == ["D\td/e/f", "M\tedit", "... and 4 more"]


def test_plan_of_equal_trees_is_empty():
    tree = _flat({"a": (MODE_FILE, A), "d/b": (MODE_EXEC, B)})
    plan = make_plan(tree, tree)
    assert plan.is_empty and plan.remove_dirs == []
    assert "nothing to change" in plan.summary()


def test_plan_limited_to_some_paths_leaves_the_rest():
    now = _flat({"a": (MODE_FILE, A), "b": (MODE_FILE, A), "d/c": (MODE_FILE, A)})
    wanted = _flat({"a": (MODE_FILE, B), "b": (MODE_FILE, B)})
    plan = make_plan(now, wanted, only={"a", "d/c"}, extra_dirs=["made/by/crash"])
    assert (plan.modify, plan.delete) == (["a"], ["d/c"])
    assert plan.remove_dirs == ["made/by/crash", "d"]


def test_file_to_folder_and_back_in_one_plan():
    now = _flat({"x": (MODE_FILE, A), "y/in": (MODE_FILE, B)})
    wanted = _flat({"x/in": (MODE_FILE, A), "y": (MODE_FILE, B)})
    plan = make_plan(now, wanted)
    assert plan.create == ["x/in", "y"] and plan.delete == ["x", "y/in"]
    assert plan.remove_dirs == ["y"]


def test_expected_conflicts_name_touched_paths_that_differ():
    now = _flat({"a": (MODE_FILE, A), "b": (MODE_FILE, A), "c": (MODE_FILE, A)})
    wanted = _flat({"a": (MODE_FILE, B), "b": (MODE_FILE, B), "c": (MODE_FILE, A)})
    expected = _flat({"a": (MODE_FILE, A), "b": (MODE_FILE, C), "c": (MODE_FILE, C)})
    assert expected_conflicts(make_plan(now, wanted), expected.files) == ["b"]


# --- the difference walk gives the same plan as full trees ---------------------------------------

_leaf = st.one_of(st.binary(max_size=3), st.tuples(st.sampled_from([MODE_EXEC, MODE_LINK]),
                                                    st.binary(max_size=3)))
_trees = st.recursive(st.dictionaries(st.sampled_from("abcd"), _leaf, max_size=4),
                      lambda inner: st.dictionaries(st.sampled_from("abcdef"),
                                                    st.one_of(_leaf, inner), max_size=4),
                      max_leaves=12)


def _drop_empty(spec: dict) -> dict:
    out = {}
    for name, value in spec.items():
        if isinstance(value, dict):
            value = _drop_empty(value)
            if not value:
                continue
        out[name] = value
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_trees, second=_trees)
def test_difference_walk_plans_exactly_what_full_trees_plan(first, second):
    base = tempfile.mkdtemp(prefix="undostore-plan-")
    try:
        store = Store(base + "/store")
        one = bytes.fromhex(craft_snapshot(store, _drop_empty(first)))
        two = bytes.fromhex(craft_snapshot(store, _drop_empty(second)))
        with ObjectReader(store) as reader:
            full = make_plan(flatten(reader.read_tree_body, one),
                             flatten(reader.read_tree_body, two, check=True))
            now, wanted = flatten_difference(reader.read_tree_body, one, two)
            partial = make_plan(now, wanted)
            # The entries a few paths have, read folder by folder, are the flattened tree's.
            whole = flatten(reader.read_tree_body, two).files
            asked = [*whole, *flatten(reader.read_tree_body, one).files, "a/zz", "zz"]
            assert entries_at(reader.read_tree_body, two, asked) == whole
        for name in ("create", "modify", "delete", "chmod", "remove_dirs", "before", "after"):
            assert getattr(partial, name) == getattr(full, name), name
        store.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)

"""git's ignore rules, case by case: unit tests of `ignore`, and trees whose walk must equal git's.

Each tree case states the paths git lists (`git ls-files -o --exclude-standard`), so it holds
where git is absent; where git is installed, git is also asked and must agree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from undostore.snapshot.ignore import (
    IgnoreFile,
    IgnoreRules,
    config_excludes_file,
    glob_to_regex,
    global_excludes_path,
    parse_line,
)
from undostore.snapshot.walk import list_paths

from .conftest import IS_WINDOWS, Git, Link, make_tree

IS_LINUX = sys.platform.startswith("linux")
posix_names = pytest.mark.skipif(IS_WINDOWS, reason="name not allowed on Windows")
needs_symlinks = pytest.mark.skipif(IS_WINDOWS, reason="symlinks need a privilege on Windows")


@pytest.fixture
def oracle() -> Git | None:
    """git when installed (then it must agree), else None (the stated answer still must hold)."""
    exe = shutil.which("git")
    return Git(exe) if exe else None


@pytest.fixture
def check(tmp_path: Path, oracle: Git | None):
    """check(spec, expected) -> root: the walk lists exactly `expected`, and so does git."""
    counter = iter(range(1000))

    def run(spec: dict, expected: list[str], root: Path | None = None,
            git_setup=None) -> Path:  # noqa: ANN001
        root = root or tmp_path / f"t{next(counter)}"
        make_tree(root, spec)
        assert list_paths(str(root)) == sorted(expected)
        if oracle is not None:
            if git_setup is not None:
                git_setup(oracle.private_dir(root))
            assert oracle.ls_untracked(root) == sorted(expected)
        return root

    return run


# --- unit tests of one line and one file -------------------------------------------------------


@pytest.mark.parametrize("line", ["", "# comment", "   ", "\r", "/", "!", "!/"])
def test_blank_comment_and_empty_lines_are_no_pattern(line: str):
    assert parse_line(line) is None


def test_negated_folder_pattern_is_parsed():
    pattern = parse_line("!build/")
    assert pattern is not None
    assert (pattern.negated, pattern.dir_only, pattern.text) == (True, True, "!build/")


def test_escaped_bang_and_hash_are_literal_names():
    bang = parse_line("\\!important")
    hash_ = parse_line("\\#notes")
    assert bang is not None and not bang.negated
    assert IgnoreFile("", [bang]).match("!important", False) is bang
    assert hash_ is not None and IgnoreFile("", [hash_]).match("#notes", False) is hash_


def test_trailing_spaces_are_trimmed_unless_escaped():
    assert parse_line("foo   ").text == "foo"
    assert parse_line("foo\\ ").text == "foo\\ "
    assert parse_line("foo\\  ").text == "foo\\ "
    assert parse_line("foo \t").text == "foo \t"  # git trims spaces only
    assert parse_line("a.txt\r").text == "a.txt"


def test_last_matching_pattern_of_a_file_decides():
    ignore_file = IgnoreFile.from_lines(["*.log", "!keep.log"])
    assert ignore_file.match("x.log", False).text == "*.log"
    assert ignore_file.match("deep/keep.log", False).text == "!keep.log"
    assert ignore_file.match("x.txt", False) is None


def test_folder_pattern_matches_folders_only():
    ignore_file = IgnoreFile.from_lines(["build/"])
    assert ignore_file.match("build", is_dir=False) is None
    assert ignore_file.match("build", is_dir=True) is not None
    assert ignore_file.match("src/build", is_dir=True) is not None


def test_slash_anchors_a_pattern_to_its_folder():
    anchored = IgnoreFile.from_lines(["/foo", "a/bar"])
    assert anchored.match("foo", False) is not None
    assert anchored.match("x/foo", False) is None
    assert anchored.match("a/bar", False) is not None
    assert anchored.match("x/a/bar", False) is None


def test_rules_of_a_nested_file_apply_relative_to_its_folder():
    root = IgnoreFile.from_lines(["*.log", "!keep.log"])
    nested = IgnoreFile.from_lines(["keep.log", "/only-here"], base="sub/dé")
    rules = IgnoreRules((root,)).with_folder_file(nested)
    assert rules.is_ignored("sub/dé/keep.log", False)
    assert not rules.is_ignored("keep.log", False)
    assert rules.is_ignored("sub/dé/only-here", False)
    assert not rules.is_ignored("sub/dé/x/only-here", False)
    assert rules.is_ignored("sub/dé/x/a.log", False)


def test_double_star_only_spans_folders_as_a_whole_component():
    assert glob_to_regex("a**b", pathname=True) == "a[^/]*b"
    file = IgnoreFile.from_lines(["a/**/b", "x**y"])
    assert file.match("a/b", False) and file.match("a/1/2/b", False)
    assert file.match("xy", False) and not file.match("x/y", False)


def test_trailing_backslash_and_unclosed_bracket_never_match():
    file = IgnoreFile.from_lines(["foo\\", "a[b", "c[!"])
    for name in ("foo", "foo\\", "a[b", "ab", "c[!", "c"):
        assert file.match(name, False) is None


def test_bom_is_skipped_and_crlf_lines_are_read():
    file = IgnoreFile.from_bytes(b"\xef\xbb\xbfa.txt\r\nb.txt\r\nc.txt\r")
    assert [p.text for p in file.patterns] == ["a.txt", "b.txt", "c.txt"]


def test_question_mark_matches_one_byte_not_one_character():
    file = IgnoreFile.from_lines(["caf?", "*ü"])
    assert file.match("café", False) is None  # é is two bytes in UTF-8
    assert file.match("cafe", False) is not None
    assert file.match("aü", False) is not None


@pytest.mark.parametrize(("text", "expected"), [
    ("[core]\n\texcludesFile = ~/x\n", "~/x"),
    ("[Core]\nEXCLUDESFILE=\"/a b/c\" ; comment\n", "/a b/c"),
    ("[core]\nexcludesfile = /one\n[core]\nexcludesfile = /two\n", "/two"),
    ('[core "sub"]\nexcludesFile = /not-core\n', None),
    ("[user]\nexcludesFile = /wrong-section\n", None),
    ("[core] excludesFile = /same-line\n", "/same-line"),
])
def test_core_excludes_file_is_read_from_config_text(text: str, expected: str | None):
    assert config_excludes_file(text) == expected


def test_global_excludes_default_to_xdg_config_home(tmp_path: Path):
    assert global_excludes_path(str(tmp_path)) == os.path.join(
        os.environ["XDG_CONFIG_HOME"], "git", "ignore")


# --- trees compared with git -------------------------------------------------------------------


def test_negation_re_includes_a_file(check):
    check({".gitignore": "*.log\n!keep.log\n", "a.log": "", "keep.log": "", "b.txt": ""},
          [".gitignore", "b.txt", "keep.log"])


def test_ignored_folder_cannot_be_re_included_into(check):
    # pathspec 1.1.1 keeps dir/keep here; git does not look inside an excluded folder.
    check({".gitignore": "dir/\n!dir/keep\n", "dir": {"keep": "", "x": ""}, "other": ""},
          [".gitignore", "other"])


def test_contents_pattern_double_star_leaves_the_folder_open_for_negation(check):
    check({".gitignore": "X/**\n!X/keep\n", "X": {"keep": "", "y": "", "sub": {"z": ""}}},
          [".gitignore", "X/keep"])


def test_star_with_unignored_folders_and_python_files(check):
    check({".gitignore": "*\n!*/\n!*.py\n", "a.py": "", "a.txt": "",
           "sub": {"b.py": "", "b.txt": "", "deep": {"c.py": ""}}},
          ["a.py", "sub/b.py", "sub/deep/c.py"])


def test_star_with_only_python_files_unignored_prunes_folders(check):
    check({".gitignore": "*\n!*.py\n", "a.py": "", "sub": {"b.py": ""}}, ["a.py"])


@pytest.mark.parametrize(("pattern", "expected"), [
    ("/foo", ["a/foo", "b/a/foo"]),
    ("foo", []),
    ("a/foo", ["b/a/foo", "foo"]),
    ("/a/foo", ["b/a/foo", "foo"]),
])
def test_anchoring(check, pattern: str, expected: list[str]):
    check({".gitignore": pattern + "\n", "foo": "", "a": {"foo": ""}, "b": {"a": {"foo": ""}}},
          [".gitignore", *expected])


def test_leading_double_star_matches_at_any_depth(check):
    check({".gitignore": "**/logs\n**/cache/x.tmp\n",
           "logs": {"1": ""}, "a": {"logs": "", "b": {"logs": {"2": ""}}},
           "cache": {"x.tmp": "", "y.tmp": ""}, "c": {"cache": {"x.tmp": ""}}, "keep": ""},
          [".gitignore", "cache/y.tmp", "keep"])


def test_double_star_between_folders_matches_zero_or_more(check):
    check({".gitignore": "a/**/b\n", "a": {"b": "", "x": {"b": "", "y": {"b": ""}}, "xb": ""},
           "x": {"a": {"b": ""}}},
          [".gitignore", "a/xb", "x/a/b"])


def test_trailing_double_star_matches_inside_not_the_folder(check):
    check({".gitignore": "a/**\nb/**/\n!a/keep\n", "a": {"keep": "", "x": ""},
           "b": {"file": "", "dir": {"y": ""}}},
          [".gitignore", "a/keep", "b/file"])


@posix_names
def test_escaped_hash_bang_and_spaces(check):
    check({".gitignore": "\\#hash\n\\!bang\n#comment\nspace\\ \ntrail   \n",
           "#hash": "", "!bang": "", "#comment": "", "space ": "", "space": "", "trail": "",
           "trail   ": ""},
          [".gitignore", "#comment", "space", "trail   "])


def test_crlf_lines_and_no_final_newline(check):
    check({".gitignore": b"a.txt\r\nb.txt\r\n\r\nc.txt\r", "a.txt": "", "b.txt": "", "c.txt": "",
           "d.txt": ""},
          [".gitignore", "d.txt"])


def test_utf8_bom_does_not_break_the_first_pattern(check):
    check({".gitignore": b"\xef\xbb\xbfa.txt\nb.txt\n", "a.txt": "", "b.txt": "", "c.txt": ""},
          [".gitignore", "c.txt"])


def test_bracket_classes(check):
    names = ["a1", "b1", "a2", "-2", "b2", "]3", "x3", "54", "a4", "z5", "a5", "a[b", "x7", "b8"]
    check({".gitignore": "[!a]1\n[a-]2\n[]]3\n[[:digit:]]4\n[z-a]5\na[b\n[[:foo:]]7\n[^a]8\n",
           **{n: "" for n in names}},
          [".gitignore", "a1", "b2", "x3", "a4", "a5", "a[b", "x7"])


@posix_names
def test_bracket_with_colon_but_no_class(check):
    check({".gitignore": "[[:a]6\n", ":6": "", "a6": "", "[6": "", "b6": ""},
          [".gitignore", "b6"])


def test_non_ascii_names_are_matched_as_bytes(check):
    check({".gitignore": "caf?\n[é]x\n*ü\n", "café": "", "cafe": "", "éx": "", "aü": "",
           "dé": {".gitignore": "/x.log\n", "x.log": "", "y": {"x.log": ""}}},
          [".gitignore", "café", "dé/.gitignore", "dé/y/x.log", "éx"])


@pytest.mark.skipif(not IS_LINUX, reason="names that are not UTF-8 exist on Linux file systems")
def test_non_utf8_name_is_matched_by_its_bytes(tmp_path: Path, oracle: Git | None):
    root = tmp_path / "t"
    root.mkdir()
    (root / ".gitignore").write_bytes(b"ab?\nx\xff*\n")
    for name in (b"ab\xff", b"x\xffz", b"xz", b"abc\xff"):
        with open(os.path.join(os.fsencode(root), name), "wb"):
            pass
    expected = sorted([".gitignore", "xz", os.fsdecode(b"abc\xff")])
    assert list_paths(str(root)) == expected
    if oracle is not None:
        assert oracle.ls_untracked(root) == expected


def test_nested_gitignore_overrides_its_parent(check):
    check({".gitignore": "*.txt\n", "a.txt": "", "sub": {".gitignore": "!*.txt\n", "b.txt": ""}},
          [".gitignore", "sub/.gitignore", "sub/b.txt"])


def test_nested_gitignore_excludes_what_its_parent_re_included(check):
    check({".gitignore": "*.log\n!important.log\n", "important.log": "",
           "sub": {".gitignore": "important.log\n", "important.log": "", "deep": {
               "important.log": ""}}},
          [".gitignore", "important.log", "sub/.gitignore"])


def test_ignored_gitignore_still_applies_in_a_walked_folder(check):
    check({".gitignore": "build/*\n", "build": {".gitignore": "!keep\n", "keep": "", "x": ""}},
          [".gitignore", "build/keep"])


def test_ignored_folder_is_never_read_even_with_negations_inside(check):
    check({".gitignore": "build/\n", "build": {".gitignore": "!*\n!x\n", "x": "",
                                                "sub": {"y": ""}}},
          [".gitignore"])


def test_folder_pattern_does_not_match_a_file_of_that_name(check):
    check({".gitignore": "out/\n", "out": "", "sub": {"out": {"x": ""}}}, [".gitignore", "out"])


@needs_symlinks
def test_folder_pattern_does_not_match_a_symlink_to_a_folder(check):
    check({".gitignore": "out/\nlinked/\n", "real": {"x": ""}, "linked": Link("real")},
          [".gitignore", "linked", "real/x"])


@needs_symlinks
def test_symlinked_gitignore_is_not_followed(check):
    check({"patterns.txt": "*.txt\n", "sub": {".gitignore": Link("../patterns.txt"), "a.txt": ""}},
          ["patterns.txt", "sub/.gitignore", "sub/a.txt"])


def test_info_exclude_of_the_root_repository(check, tmp_path: Path):
    root = tmp_path / "repo"
    make_tree(root, {".git": {"info": {"exclude": "*.secret\n!keep.secret\n"}}})

    def same_for_git(git_dir: Path) -> None:
        (git_dir / "info").mkdir(exist_ok=True)
        (git_dir / "info" / "exclude").write_text("*.secret\n!keep.secret\n")

    check({".gitignore": "other.secret\n!x.secret\n", "a.secret": "", "keep.secret": "",
           "other.secret": "", "x.secret": "", "plain": ""},
          [".gitignore", "keep.secret", "plain", "x.secret"], root=root, git_setup=same_for_git)


def test_global_excludes_file_from_home_gitconfig(check):
    home = Path(os.environ["HOME"])
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/my-ignore\n")
    (home / "my-ignore").write_text("*.tmp\n!keep.tmp\n")
    # XDG's ignore is the default only: a configured core.excludesFile replaces it.
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
    xdg.mkdir(parents=True)
    (xdg / "ignore").write_text("*.bak\n")
    check({"a.tmp": "", "keep.tmp": "", "b.bak": "", "c": ""}, ["b.bak", "c", "keep.tmp"])


def test_global_excludes_file_relative_path_is_taken_from_the_root(check):
    home = Path(os.environ["HOME"])
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = rules.txt\n")
    check({"rules.txt": "*.tmp\n", "a.tmp": "", "b": ""}, ["b", "rules.txt"])


def test_global_excludes_file_from_xdg_config_home(check):
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
    xdg.mkdir(parents=True)
    (xdg / "ignore").write_text("*.bak\n")
    check({"a.bak": "", "sub": {"b.bak": ""}, "c": ""}, ["c"])


def test_excludes_precedence_gitignore_then_info_exclude_then_global(check, tmp_path: Path):
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
    xdg.mkdir(parents=True)
    (xdg / "ignore").write_text("*.a\n*.b\n*.c\n")
    exclude = "!*.b\n!*.c\n"
    root = tmp_path / "repo"
    make_tree(root, {".git": {"info": {"exclude": exclude}}})

    def same_for_git(git_dir: Path) -> None:
        (git_dir / "info").mkdir(exist_ok=True)
        (git_dir / "info" / "exclude").write_text(exclude)

    check({".gitignore": "x.c\n", "x.a": "", "x.b": "", "x.c": "", "y.c": ""},
          [".gitignore", "x.b", "y.c"], root=root, git_setup=same_for_git)


def test_linked_worktree_reads_info_exclude_of_its_main_repository(tmp_path: Path):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is needed to make a linked worktree")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    main = tmp_path / "main"

    def run(*args: str, cwd: Path = main) -> bytes:
        return subprocess.run([git, *args], cwd=cwd, env=env, check=True,
                              capture_output=True).stdout

    main.mkdir()
    run("init", "-q")
    run("commit", "-q", "--allow-empty", "-m", "empty")
    run("worktree", "add", "-q", str(tmp_path / "wt"))
    (main / ".git" / "info").mkdir(exist_ok=True)
    (main / ".git" / "info" / "exclude").write_text("*.secret\n")
    worktree = tmp_path / "wt"
    make_tree(worktree, {"a.secret": "", "b.txt": ""})
    assert (worktree / ".git").is_file()
    theirs = sorted(run("ls-files", "-o", "--exclude-standard", "-z", cwd=worktree)
                    .decode().split("\0")[:-1])
    assert theirs == ["b.txt"]
    assert list_paths(str(worktree)) == theirs


@pytest.mark.skipif(not IS_LINUX, reason="git ignores case where the file system does")
def test_patterns_are_case_sensitive_on_linux(check):
    check({".gitignore": "*.LOG\nBuild/\n", "a.log": "", "A.LOG": "", "build": {"x": ""},
           "Build": {"y": ""}},
          [".gitignore", "a.log", "build/x"])


def test_git_folder_and_file_are_never_listed(check):
    check({".gitignore": "!.git\n", "sub": {".git": "gitdir: nowhere\n", "a": ""}, "b": ""},
          [".gitignore", "b", "sub/a"])

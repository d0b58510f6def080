"""The 3-way text merge against `git merge-file -p` (the reference): same bytes out, markers
and labels included, and as many conflicts as git's exit status counts.

Hypothesis makes base/ours/theirs line lists from a small alphabet (so edits collide, touch and
repeat), with CRLF and missing final newlines; hand cases name the classic situations.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore.diff.merge import is_binary, merge_text, merge_value

from .conftest import edit_lines

WORDS = [b"a", b"b", b"c", b"d", b"{", b"}", b"", b"  x = 1", b"return", b"#"]


def git_merge_file(git, tmp: Path, base: bytes, ours: bytes, theirs: bytes,
                   labels: tuple[str, str] = ("ours", "theirs")) -> tuple[bytes, int]:
    """`git merge-file -p -L ours -L base -L theirs`: (output, exit status = conflicts)."""
    paths = []
    for name, data in (("o", ours), ("b", base), ("t", theirs)):
        path = tmp / name
        path.write_bytes(data)
        paths.append(str(path))
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               HOME=str(tmp))
    proc = subprocess.run([git.exe, "merge-file", "-p", "-L", labels[0], "-L", "base", "-L",
                           labels[1], *paths], capture_output=True, env=env, cwd=tmp)
    assert proc.returncode >= 0 and proc.returncode < 127, proc.stderr
    return proc.stdout, proc.returncode


def assert_like_git(git, tmp: Path, base: bytes, ours: bytes, theirs: bytes) -> bytes:
    want, conflicts = git_merge_file(git, tmp, base, ours, theirs)
    got = merge_text(base, ours, theirs, "ours", "theirs")
    assert got.data == want
    assert got.conflicts == conflicts
    return got.data


def lines_to_bytes(lines: list[bytes], eol: bytes, final_newline: bool) -> bytes:
    data = b"".join(line + eol for line in lines)
    return data if final_newline else data[:-len(eol)] if data else data


@st.composite
def triples(draw) -> tuple[bytes, bytes, bytes]:
    base = draw(st.lists(st.sampled_from(WORDS), max_size=14))
    eol = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))

    def edited() -> list[bytes]:
        lines = list(base)
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(lines)))
            cut = draw(st.integers(0, 3))
            new = draw(st.lists(st.sampled_from(WORDS + [b"new", b"b!"]), max_size=3))
            lines[at:at + cut] = new
        return lines

    ours, theirs = edited(), edited()
    return tuple(lines_to_bytes(lines, eol, draw(st.booleans()) or not lines)
                 for lines in (base, ours, theirs))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(case=triples())
def test_generated_merges_equal_git_merge_file_byte_for_byte(git, tmp_path, case):
    assert_like_git(git, tmp_path, *case)


BASE = b"".join(b"line %d\n" % i for i in range(1, 21))


HAND_CASES = {
    "edits far apart": (BASE, edit_lines(BASE, (2, b"ours\n")),
                        edit_lines(BASE, (18, b"theirs\n"))),
    "adjacent edits": (BASE, edit_lines(BASE, (5, b"ours\n")), edit_lines(BASE, (6, b"theirs\n"))),
    "one line apart": (BASE, edit_lines(BASE, (5, b"ours\n")), edit_lines(BASE, (7, b"theirs\n"))),
    "overlapping": (BASE, edit_lines(BASE, (5, b"o5\n"), (6, b"o6\n")),
                    edit_lines(BASE, (6, b"t6\n"), (7, b"t7\n"))),
    "both sides same change": (BASE, edit_lines(BASE, (9, b"same\n")),
                               edit_lines(BASE, (9, b"same\n"))),
    "same change plus one more": (BASE, edit_lines(BASE, (9, b"same\n"), (15, b"o\n")),
                                  edit_lines(BASE, (9, b"same\n"))),
    "delete first line vs edit last": (BASE, edit_lines(BASE, (1, None)),
                                       edit_lines(BASE, (20, b"t\n"))),
    "delete last lines both": (BASE, edit_lines(BASE, (20, None), (19, None)),
                               edit_lines(BASE, (20, None))),
    "ours drops the final newline": (BASE, BASE[:-1], edit_lines(BASE, (3, b"t\n"))),
    "both change the unterminated last line": (BASE[:-1], BASE[:-1] + b"o", BASE[:-1] + b"t"),
    "theirs adds a final newline, ours edits it": (b"a\nb", b"a\nB", b"a\nb\n"),
    "crlf conflict": (BASE.replace(b"\n", b"\r\n"),
                      edit_lines(BASE, (4, b"o\n")).replace(b"\n", b"\r\n"),
                      edit_lines(BASE, (4, b"t\n")).replace(b"\n", b"\r\n")),
    "crlf without final newline": (b"a\r\nb\r\nc", b"a\r\nb\r\nO", b"a\r\nb\r\nT"),
    "ours empty": (BASE, b"", edit_lines(BASE, (3, b"t\n"))),
    "add/add from empty base": (b"", b"x\ny\nz\n", b"x\nY\nz\n"),
    "two conflicts far apart": (BASE, edit_lines(BASE, (2, b"o\n"), (10, b"o\n")),
                                          edit_lines(BASE, (2, b"t\n"), (10, b"t\n"))),
}


@pytest.mark.parametrize("name", sorted(HAND_CASES))
def test_hand_cases_equal_git_merge_file(git, tmp_path, name):
    assert_like_git(git, tmp_path, *HAND_CASES[name])


def test_edits_far_apart_merge_cleanly_keeping_both():
    ours, theirs = edit_lines(BASE, (2, b"ours\n")), edit_lines(BASE, (18, b"theirs\n"))
    got = merge_text(BASE, ours, theirs)
    assert got.clean
    assert got.data == edit_lines(BASE, (2, b"ours\n"), (18, b"theirs\n"))


def test_conflict_markers_carry_the_labels():
    got = merge_text(b"a\nb\nc\n", b"a\nO\nc\n", b"a\nT\nc\n", "files now", "before abc123")
    assert got.conflicts == 1
    assert got.data == (b"a\n<<<<<<< files now\nO\n=======\nT\n>>>>>>> before abc123\nc\n")


def test_binary_is_a_nul_in_the_first_8000_bytes():
    assert is_binary(b"x" * 7999 + b"\0")
    assert not is_binary(b"x" * 8000 + b"\0")
    assert not is_binary(b"plain text\n")


def test_whole_value_merge_takes_the_changed_side_and_flags_two_different_changes():
    assert merge_value(1, 1, 2) == (2, False)
    assert merge_value(1, 2, 1) == (2, False)
    assert merge_value(1, 3, 3) == (3, False)
    assert merge_value(1, 2, 3) == (2, True)
    assert merge_value(None, None, b"x") == (b"x", False)
    assert merge_value(b"x", None, b"y") == (None, True)

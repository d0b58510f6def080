"""Every output form of `undostore diff` is byte-identical to `git diff-tree -r --no-renames`.

Each case builds a tree, snapshots it with undostore and with `git add -A && git write-tree` (the
ids must be equal), changes the files, snapshots again, then compares git's output for the two
tree ids with undostore's for the same ids, in every form, plain and coloured.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.diff.patch import GIT_COLORS, PLAIN, render
from undostore.diff.trees import diff_trees

from .conftest import IS_WINDOWS, Exe, Link

FLAGS = ("--name-status", "--numstat", "--stat", "--patch")
needs_symlinks = pytest.mark.skipif(IS_WINDOWS, reason="symlink privilege")
posix_names = pytest.mark.skipif(IS_WINDOWS, reason="names Windows cannot hold")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="file names that are not UTF-8")


@pytest.fixture(autouse=True)
def _fixed_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # git sizes --stat by $COLUMNS when set; both sides must see the same (none: 80).
    monkeypatch.delenv("COLUMNS", raising=False)


class Pair:
    """One root snapshotted by both undostore and git."""

    def __init__(self, git, root: Path) -> None:  # noqa: ANN001
        self.git, self.root = git, root
        self.ws = Workspace(root)

    def snap(self) -> str:
        ours = self.ws.snapshot().id
        theirs = self.git.write_tree(self.root)
        assert ours == theirs
        return ours

    def git_output(self, a: str, b: str, flag: str, *extra: str, color: bool = False,
                   renames: bool = False) -> bytes:
        args = ["diff-tree", "-r", "-M" if renames else "--no-renames", flag]
        if color:
            args.append("--color=always")
        return self.git.run(self.git.private_dir(self.root), self.root, *args, a, b,
                            *(["--", *extra] if extra else []))

    def our_output(self, a: str, b: str, flag: str, *paths: str, color: bool = False,
                   renames: bool = False) -> bytes:
        changes = diff_trees(self.ws.store, bytes.fromhex(a), bytes.fromhex(b),
                             paths=list(paths) or None, find_renames=renames)
        return b"".join(render(flag[2:], self.ws.store, changes,
                               GIT_COLORS if color else PLAIN))

    def assert_same(self, a: str, b: str, flags: tuple[str, ...] = FLAGS, *paths: str,
                    renames: bool = False) -> None:
        for flag in flags:
            for color in (False, True):
                want = self.git_output(a, b, flag, *paths, color=color, renames=renames)
                got = self.our_output(a, b, flag, *paths, color=color, renames=renames)
                assert got == want, (f"{flag} color={color}\n--- git\n"
                                     f"{want.decode(errors='replace')}\n--- undostore\n"
                                     f"{got.decode(errors='replace')}")


def write(root: Path, rel: str, data: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def remove(root: Path, rel: str) -> None:
    (root / rel).unlink()


def relink(root: Path, rel: str, target: str) -> None:
    path = root / rel
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(target, path)


CODE = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(30))
LONG_FUNC = "def " + "very_long_function_name_" * 6 + "(argument):\n"
ONE_TO_50 = "".join(f"line {i}\n" for i in range(50))


def _edit_code(root: Path) -> None:
    text = CODE.replace("x + 3\n", "x + 33\n").replace("x + 20\n", "x * 20\n    y += 1\n")
    write(root, "code.py", text)


def _insert_function(root: Path) -> None:
    # A group that git's indent heuristic has to place (blank lines around functions).
    write(root, "code.py", CODE.replace("def f5(x):", "def g(x):\n    return x\n\ndef f5(x):"))


def _crlf_and_whitespace(root: Path) -> None:
    write(root, "crlf.txt", "one\r\ntwo changed\r\nthree\r\n")
    write(root, "ws.txt", "a\n  \tspace before tab\ntrailing  \n\t\tok\nb\n\n\n\n")


CASES: dict[str, tuple[dict, Callable[[Path], None]]] = {
    "modify middle, start and end": (
        {"a.txt": ONE_TO_50},
        lambda r: write(r, "a.txt", "first\n" + ONE_TO_50.replace("line 25\n", "changed\n")
                        + "last\n")),
    "hunks merge when close and split when far": (
        {"a.txt": ONE_TO_50},
        lambda r: write(r, "a.txt", ONE_TO_50.replace("line 10\n", "x\n")
                        .replace("line 16\n", "y\n").replace("line 30\n", "z\n"))),
    "newline added and removed at end of file": (
        {"a": "x\ny", "b": "x\ny\n", "c": "only", "d": "p\nq"},
        lambda r: (write(r, "a", "x\ny\n"), write(r, "b", "x\ny"), write(r, "c", "other"),
                   write(r, "d", "p\nr"))),
    "added, deleted and empty files": (
        {"gone.txt": "bye\n", "empty": "", "filled": "", "emptied": "some\ntext\n"},
        lambda r: (remove(r, "gone.txt"), write(r, "new.txt", "hi\nthere\n"),
                   write(r, "new_empty", ""), remove(r, "empty"), write(r, "filled", "now\n"),
                   write(r, "emptied", ""))),
    "function names in hunk headers": (
        {"code.py": CODE}, _edit_code),
    "indent heuristic places an inserted function": (
        {"code.py": CODE}, _insert_function),
    "long function line is cut at 80 bytes": (
        {"f.py": LONG_FUNC + "".join(f"    step{i}()\n" for i in range(20))},
        lambda r: write(r, "f.py", LONG_FUNC + "".join(
            f"    step{i}()\n" if i != 12 else "    changed()\n" for i in range(20)))),
    "hunk header cut at invalid utf-8": (
        {"f.txt": b"caf\xe9 au lait\n" + b"".join(b"  %d\n" % i for i in range(10))},
        lambda r: write(r, "f.txt", b"caf\xe9 au lait\n" + b"".join(
            b"  %d\n" % (i if i != 7 else 70) for i in range(10)))),
    "crlf, trailing whitespace and blank lines at end": (
        {"crlf.txt": "one\r\ntwo\r\nthree\r\n", "ws.txt": "a\nb\n"}, _crlf_and_whitespace),
    "binary files": (
        {"b.bin": b"\x00\x01\x02", "gone.bin": b"\x00gone", "t2b": "text\n", "b2t": b"\x00b"},
        lambda r: (write(r, "b.bin", b"\x00\x01\x03\x04"), remove(r, "gone.bin"),
                   write(r, "new.bin", b"new\x00"), write(r, "t2b", b"now\x00binary"),
                   write(r, "b2t", "now text\n"))),
    "nul after the first 8000 bytes is text": (
        {"late": b"x" * 8000 + b"\x00\n"},
        lambda r: write(r, "late", b"y" * 8000 + b"\x00\n")),
    "mode changes": (
        {"run.sh": "echo 1\n", "both.sh": "echo 2\n", "bin": b"\x00x", "x": Exe("exe\n")},
        lambda r: ((r / "run.sh").chmod(0o755), write(r, "both.sh", "echo 3\n"),
                   (r / "both.sh").chmod(0o755), (r / "bin").chmod(0o755),
                   (r / "x").chmod(0o644))),
    "file replaced by folder and folder by file": (
        {"a": "file\n", "b": {"inner": "in\n"}, "a.txt": "t\n", "a-b": "u\n"},
        lambda r: (remove(r, "a"), write(r, "a/x", "now a folder\n"),
                   remove(r, "b/inner"), (r / "b").rmdir(), write(r, "b", "now a file\n"))),
    "names that git quotes": (
        {"plain.txt": "1\n"},
        lambda r: (write(r, "with space.txt", "2\n"), write(r, 'quote".txt', "3\n"),
                   write(r, "back\\slash", "4\n"), write(r, "caf\u00e9.txt", "5\n"),
                   write(r, "d i r/f", "6\n"), write(r, "plain.txt", "7\n"))),
    "stat graph scales and names are shortened": (
        {"short": "x\n" * 10, "deep": {"deeper": {"deepest": {
            "a_rather_long_file_name_that_needs_shortening_in_the_stat_output.txt": "1\n"}}}},
        lambda r: (write(r, "short", "y\n" * 400 + "x\n" * 5),
                   write(r, "deep/deeper/deepest/a_rather_long_file_name_that_needs_"
                            "shortening_in_the_stat_output.txt", "2\n" * 3),
                   write(r, "lots", "z\n" * 1234))),
    "many files in nested folders": (
        {f"d{i}": {f"e{j}": {f"f{k}.txt": f"{i} {j} {k}\n" for k in range(3)}
                   for j in range(3)} for i in range(3)},
        lambda r: [write(r, f"d{i}/e{j}/f{(i + j) % 3}.txt", f"changed {i}{j}\n")
                   for i in range(3) for j in range(3) if (i * j) % 2 == 0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_form_matches_git(git, tree_factory, case):
    spec, mutate = CASES[case]
    root = tree_factory(spec)
    pair = Pair(git, root)
    a = pair.snap()
    mutate(root)
    b = pair.snap()
    pair.assert_same(a, b)
    pair.assert_same(b, a)


@needs_symlinks
def test_symlinks_and_type_changes_match_git(git, tree_factory):
    root = tree_factory({"target": "t\n", "link": Link("target"), "f2l": "file\n",
                         "l2f": Link("target"), "gone": Link("nowhere"),
                         "moved": Link("a/b")})
    pair = Pair(git, root)
    a = pair.snap()
    relink(root, "f2l", "target")
    remove(root, "l2f")
    write(root, "l2f", "now a file\n")
    remove(root, "gone")
    relink(root, "moved", "c/d")
    relink(root, "new", "target")
    b = pair.snap()
    pair.assert_same(a, b)
    pair.assert_same(b, a)


@posix_names
def test_control_characters_in_names_match_git(git, tree_factory):
    root = tree_factory({"x": "1\n"})
    pair = Pair(git, root)
    a = pair.snap()
    for name in ("tab\there", "new\nline", "bell\a", "esc\x1b", "del\x7f"):
        write(root, name, name + "\n")
    b = pair.snap()
    pair.assert_same(a, b)


@linux_only
def test_names_that_are_not_utf8_match_git(git, tree_factory):
    root = tree_factory({"x": "1\n"})
    pair = Pair(git, root)
    a = pair.snap()
    with open(os.path.join(os.fsencode(root), b"latin\xe9.txt"), "wb") as f:
        f.write(b"caf\xe9\n")
    b = pair.snap()
    pair.assert_same(a, b)


def test_path_filters_match_git(git, tree_factory):
    root = tree_factory({"src": {"a.py": "1\n", "sub": {"b.py": "2\n"}}, "doc": {"c.md": "3\n"},
                         "top.py": "4\n"})
    pair = Pair(git, root)
    a = pair.snap()
    for rel in ("src/a.py", "src/sub/b.py", "doc/c.md", "top.py"):
        write(root, rel, "changed\n")
    b = pair.snap()
    for paths in (("src",), ("src/sub/b.py",), ("doc", "top.py"), ("*.py",), ("src/*",),
                  ("nothing",)):
        pair.assert_same(a, b, ("--name-status", "--stat"), *paths)


def test_renames_match_git_with_find_renames(git, tree_factory):
    body = "".join(f"line {i}\n" for i in range(40))
    root = tree_factory({"old.txt": body, "keep": {"same.txt": "same content\n"},
                         "edit.txt": body.replace("line", "row"), "gone.txt": "unrelated\n"})
    pair = Pair(git, root)
    a = pair.snap()
    os.rename(root / "old.txt", root / "new.txt")
    os.rename(root / "keep" / "same.txt", root / "moved_same.txt")
    remove(root, "edit.txt")
    write(root, "dir/edit.txt", body.replace("line", "row").replace("row 7\n", "row 77\n"))
    remove(root, "gone.txt")
    write(root, "fresh.txt", "nothing alike\n")
    b = pair.snap()
    pair.assert_same(a, b, renames=True)


def _random_text(rng: random.Random) -> bytes:
    vocab = [b"", b"a", b"b", b"{", b"}", b"    x = 1", b"\tif y:", b"def f():", b"  ",
             b"return", b"end ", b"\t  mixed", b"x\r"]
    data = b"".join(rng.choice(vocab) + b"\n" for _ in range(rng.randint(0, 40)))
    return data[:-1] if data and rng.random() < 0.3 else data


def _mutated(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(lines))
        op = rng.random()
        if op < 0.4:
            lines.insert(at, rng.choice([b"new", b"", b"    x = 2", b"}", b"def g():"]))
        elif lines and op < 0.7:
            del lines[min(at, len(lines) - 1)]
        elif lines:
            lines[min(at, len(lines) - 1)] = b"edited"
    return b"\n".join(lines)


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_match_git(git, tree_factory, seed):
    rng = random.Random(seed)
    root = tree_factory({f"f{i}.txt": _random_text(rng) for i in range(4)})
    pair = Pair(git, root)
    a = pair.snap()
    for i in range(4):
        write(root, f"f{i}.txt", _mutated(rng, (root / f"f{i}.txt").read_bytes()))
    b = pair.snap()
    pair.assert_same(a, b)


def test_big_rewrite_uses_git_heuristics(git, tree_factory):
    # Thousands of changed lines push the search past git's cost cut-offs (a cost over 256 with
    # snakes, then the sqrt(N) bound) and through its handling of very common lines.
    rng = random.Random(7)
    vocab = [b"    tok%d\n" % i for i in range(300)] + [b"\n", b"}\n"]
    old = [rng.choice(vocab) for _ in range(6000)]
    new = [line for line in old if rng.random() > 0.25]
    for _ in range(1500):
        new.insert(rng.randrange(len(new) + 1), rng.choice(vocab))
    root = tree_factory({"big.txt": b"".join(old)})
    pair = Pair(git, root)
    a = pair.snap()
    write(root, "big.txt", b"".join(new))
    b = pair.snap()
    pair.assert_same(a, b, ("--numstat", "--patch"))


def test_cli_output_matches_git_when_piped(git, tree_factory):
    root = tree_factory({"a.txt": ONE_TO_50, "b.txt": "b\n"})
    pair = Pair(git, root)
    a = pair.snap()
    write(root, "a.txt", ONE_TO_50.replace("line 3\n", "three\n"))
    remove(root, "b.txt")
    b = pair.snap()
    pair.ws.close()
    for flag in ("", "--numstat", "--stat", "--patch"):
        args = [sys.executable, "-m", "undostore", "--root", str(root), "diff", a, b]
        ours = subprocess.run(args + ([flag] if flag else []), capture_output=True, check=True)
        assert ours.stdout == pair.git_output(a, b, flag or "--name-status")
        assert ours.stderr == b""


FLAG_MIXES = (("--name-only",), ("--name-status", "-p"), ("--stat", "-p"), ("--numstat", "--stat"),
              ("--numstat", "-p"), ("-p", "--stat", "--numstat"), ("-U1",), ("-U0", "--stat"),
              ("-U10",), ("--stat", "--name-only"))


def test_the_cli_combines_format_flags_and_context_as_git_does(git, tree_factory):
    """Through the real CLI: flags combine in git's order (a name form alone; else numstat,
    stat, a blank line, the patch), `-U N` sets the context, `--exit-code` says if anything
    changed."""
    lines = "".join(f"line {i}\n" for i in range(30))
    root = tree_factory({"f.txt": lines, "g.txt": "x\n", "sub": {"s.txt": "s\n"}})
    pair = Pair(git, root)
    a = pair.snap()
    write(root, "f.txt", lines.replace("line 3\n", "LINE 3\n").replace("line 20\n", "x\n"))
    (root / "g.txt").unlink()
    write(root, "h.txt", "new\n")
    b = pair.snap()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for mix in FLAG_MIXES:
        want = pair.git.run(pair.git.private_dir(root), root, "diff-tree", "-r", "--no-renames",
                            *mix, a, b)
        got = subprocess.run([sys.executable, "-m", "undostore", "diff", a, b, *mix],
                             capture_output=True, cwd=root, env=env, timeout=60)
        assert (got.returncode, got.stdout) == (0, want), (mix, got.stderr)
    for ids, code in (((a, b), 1), ((a, a), 0)):
        done = subprocess.run([sys.executable, "-m", "undostore", "diff", *ids, "--exit-code"],
                              capture_output=True, cwd=root, env=env, timeout=60)
        assert done.returncode == code, done.stderr

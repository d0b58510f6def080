"""The walk's ignore rules against git on 312 real-world `.gitignore` templates.

For each template of the github/gitignore collection (a corpus nobody here wrote), a tree is built
from the template's own patterns: each pattern is turned into a few concrete names that match it or
nearly match it, as files, as folders holding files, and nested under sub-folders, plus a nested
`.gitignore` that negates some of the template's patterns. Then `walk.list_paths` must list exactly
what `git ls-files -o --exclude-standard` lists for the same tree.

The corpus lives outside the repository (`shared/corpus/gitignore-templates` beside the
repository root or beside the folder holding it, as for a worktree); the test skips where it is
absent.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

from undostore.snapshot.walk import WalkOptions, list_paths

from .conftest import IS_WINDOWS

_REPO = Path(__file__).resolve().parents[1]
CORPUS = next((above / "shared" / "corpus" / "gitignore-templates" for above in _REPO.parents[:2]
               if (above / "shared" / "corpus" / "gitignore-templates").is_dir()),
              _REPO.parent / "shared" / "corpus" / "gitignore-templates")
TEMPLATES = sorted(CORPUS.rglob("*.gitignore")) if CORPUS.is_dir() else []
MAX_PATHS = 220
# Folders that hold copies of the candidates, so patterns are also tried below the root.
NEST = ("sub", "sub/deep", "nested")
# Characters Windows cannot hold in a name; candidates with them are dropped there.
_WINDOWS_BAD = re.compile(r'[<>:"|?*\x00-\x1f]|[ .]$')
_CASE_SENSITIVE = sys.platform.startswith("linux")


def _template_id(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def _concrete(glob: str, star: str, globstar: str) -> str:
    """A concrete spelling of a glob: `*` -> star, `**` -> globstar, `?` -> q, [..] -> a member."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            j = i
            while j < len(glob) and glob[j] == "*":
                j += 1
            out.append(globstar if j - i >= 2 else star)
            i = j
        elif ch == "?":
            out.append("q")
            i += 1
        elif ch == "[":
            close = glob.find("]", i + 2)
            if close == -1:
                out.append("[")
                i += 1
                continue
            body = glob[i + 1:close].lstrip("!^")
            if body.startswith("[:"):
                out.append({"[:digit:]": "7", "[:upper:]": "Q"}.get(body[:9], "k"))
            else:
                out.append(body[:1].replace("\\", "") or "k")
            i = close + 1
        elif ch == "\\" and i + 1 < len(glob):
            out.append(glob[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _bodies(lines: list[str]) -> list[tuple[str, bool]]:
    """(pattern body without `!` and slashes at the ends, names-a-folder) for each pattern."""
    found: list[tuple[str, bool]] = []
    for raw in lines:
        line = raw.rstrip("\r").rstrip(" ")
        if not line or line.startswith("#"):
            continue
        line = line[1:] if line.startswith("!") else line
        is_dir = line.endswith("/")
        body = line.strip("/")
        if body:
            found.append((body, is_dir))
    return found


def _clean(path: str) -> str | None:
    parts = [p for p in path.split("/") if p]
    if not parts or any(p in (".", "..", ".git", ".gitignore") for p in parts):
        return None
    if IS_WINDOWS and any(_WINDOWS_BAD.search(p) for p in parts):
        return None
    if any(len(p.encode()) > 200 for p in parts):
        return None
    return "/".join(parts)


def candidate_paths(lines: list[str], rng: random.Random) -> list[str]:
    """File paths that match, or nearly match, the patterns of one template."""
    files: set[str] = set()
    for body, is_dir in _bodies(lines):
        spellings = {_concrete(body, "x", "a/b"), _concrete(body, "ab", "")}
        for name in spellings:
            variants = [name, name + "x", f"{name}/f.txt", f"{name}/keep", f"{name}/inner/g.txt"]
            if not is_dir:
                variants.append(f"{name}.bak")
            if _CASE_SENSITIVE:
                variants.append(name.upper())
            for variant in variants:
                files.add(variant)
                files.add(f"{rng.choice(NEST)}/{variant}")
    cleaned = sorted({c for c in map(_clean, files) if c is not None})
    rng.shuffle(cleaned)
    kept = cleaned[:MAX_PATHS]
    # A path that is a folder of another path cannot also be a file: keep it as a folder.
    folders = {"/".join(p.split("/")[:i]) for p in kept for i in range(1, p.count("/") + 1)}
    return sorted(p for p in kept if p not in folders) + ["keep.txt", "sub/keep.txt"]


def root_negations(lines: list[str], rng: random.Random) -> str:
    """Lines appended to the template: re-include a file inside what some patterns name (git
    keeps it ignored when the folder itself is excluded, not when only its contents are)."""
    bodies = [body for body, _ in _bodies(lines)]
    picked = rng.sample(bodies, min(6, len(bodies)))
    return "".join(f"!{body}/keep\n" for body in picked)


def nested_ignore(lines: list[str], rng: random.Random) -> str:
    """A `sub/.gitignore` that negates a few of the template's patterns and adds one of its own;
    in half the trees it also re-includes every folder (`!*/`) the template excluded."""
    bodies = [body for body, _ in _bodies(lines)]
    picked = rng.sample(bodies, min(4, len(bodies)))
    out = [f"!{body}" for body in picked]
    out += ["!*.bak", "deep/*.txt", "!deep/f.txt"]
    if rng.random() < 0.5:
        out.append("!*/")
    return "\n".join(out) + "\n"


def build_tree(root: Path, template: Path) -> None:
    text = template.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    rng = random.Random(template.name)
    for rel in candidate_paths(lines, rng):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            continue
        path.write_bytes(rel.encode("utf-8", "surrogateescape"))
    (root / ".gitignore").write_bytes(
        template.read_bytes() + b"\n" + root_negations(lines, rng).encode("utf-8"))
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / ".gitignore").write_text(nested_ignore(lines, rng), encoding="utf-8")


def test_corpus_is_complete_when_present():
    if not CORPUS.is_dir():
        pytest.skip(f"gitignore corpus not found at {CORPUS}")
    assert len(TEMPLATES) == 312


@pytest.mark.parametrize("template", TEMPLATES, ids=_template_id)
def test_walk_lists_what_git_lists_for_template(template: Path, tmp_path: Path, git):
    root = tmp_path / "tree"
    root.mkdir()
    build_tree(root, template)
    ours = list_paths(str(root))
    assert list_paths(str(root), WalkOptions(threads=3)) == ours, "threaded walk differs"
    theirs = git.ls_untracked(root)
    assert len(theirs) > 2, "the generated tree should hold more than the two fixed files"
    missing = sorted(set(theirs) - set(ours))
    extra = sorted(set(ours) - set(theirs))
    assert not missing and not extra, (
        f"{_template_id(template)}: git lists but undostore skips {missing[:20]}; "
        f"undostore lists but git skips {extra[:20]}")

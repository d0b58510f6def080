"""A read-only look at the user's own git in the root: the commit its HEAD names now.

An undo puts the files back; it cannot take back a commit the agent made to the user's git
during the turn, and undostore never writes `.git` (nor runs git). So each undo point keeps the
commit HEAD named when its turn began, and an undo whose turns began at another commit says so,
with the git command that moves the branch back (history/steps.py `GitMoved`).

Read as git lays it out (gitrepository-layout): `.git` a folder, or a file `gitdir: PATH` (a
worktree, a submodule); `HEAD` a commit id, or `ref: refs/heads/NAME` found as a loose ref in
the git folder or its `commondir`, else in `packed-refs`. Anything else (no git, an unborn
branch, a file that cannot be read) is None: nothing to say."""

from __future__ import annotations

import os
import string

POINT_META = "git_head"       # where an undo point keeps the commit its turn began at
_HEX = frozenset(string.hexdigits.lower())
_SMALL = 4096                  # HEAD, a loose ref, a gitdir or commondir file
_PACKED_REFS_MAX = 8 << 20     # past this a prompt would pay to read it: say nothing


def head_commit(root: str) -> str | None:
    """The commit id the root's git HEAD names (40 or 64 hex digits), or None."""
    try:
        gitdir = _git_folder(root)
        if gitdir is None:
            return None
        head = _read(os.path.join(gitdir, "HEAD"), _SMALL).strip()
        if not head.startswith("ref:"):
            return _commit_id(head)
        ref = head[len("ref:"):].strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            return None
        common = gitdir
        if os.path.isfile(os.path.join(gitdir, "commondir")):
            common = os.path.normpath(os.path.join(
                gitdir, _read(os.path.join(gitdir, "commondir"), _SMALL).strip()))
        for folder in dict.fromkeys((gitdir, common)):
            try:
                return _commit_id(_read(os.path.join(folder, *ref.split("/")), _SMALL).strip())
            except FileNotFoundError:
                continue
        return _packed(os.path.join(common, "packed-refs"), ref)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _git_folder(root: str) -> str | None:
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    if not os.path.isfile(dot_git):
        return None
    text = _read(dot_git, _SMALL).strip()
    if not text.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(root, text[len("gitdir:"):].strip()))


def _packed(path: str, ref: str) -> str | None:
    for line in _read(path, _PACKED_REFS_MAX).splitlines():
        commit, _, name = line.partition(" ")
        if name.strip() == ref:
            return _commit_id(commit)
    return None


def _commit_id(text: str) -> str | None:
    return text if len(text) in (40, 64) and set(text) <= _HEX else None


def _read(path: str, limit: int) -> str:
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than a git file of its kind")
    return data.decode("utf-8")

"""Which root a command acts on when none is named: the contract's "root", in one place.

From the current folder upward, the nearest folder that already has a store (protected before);
failing that, the top of the git work tree (nearest folder holding a `.git` folder or file);
failing that, the folder itself. So a command run from a sub-folder finds the root's store and
never splits its history into a second store; a store for a folder inside a protected root is made
only when the caller names that folder as the root (`--root`). The home folder and the file-system
root are passed over (a `~/.git` of dotfiles must not make the whole home the root) unless forced.

Cheap on purpose (a hash and a stat per ancestor, no imports beyond `store`): `status` runs it on
every prompt render.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from undostore.store.store import default_store_path, recorded_root

FOUND_STORE = "store"      # an ancestor (or the folder itself) was protected before
FOUND_GIT = "git"          # no store: the top of the git work tree
FOUND_CWD = "cwd"          # neither: the folder itself
NAMED = "named"            # the caller named the root


class Discovery(NamedTuple):
    """The root found, the store that goes with it, and how it was found."""

    root: str
    store: str
    how: str
    start: str
    existed: bool

    @property
    def worth_saying(self) -> bool:
        """True when people should be told: the root is not the current folder, or a new store
        is about to be made for a root that was found (a moved project lands here)."""
        if self.how == NAMED:
            return False
        return not self.existed or not _same(self.root, self.start)

    def describe(self) -> str:
        """One line for people: which store was found, or that none was."""
        if self.existed:
            return f"undostore: using the store of {self.root} (found from {self.start})"
        why = {FOUND_GIT: "the top of the git work tree", FOUND_CWD: "the current folder",
               NAMED: "as named"}.get(self.how, "")
        return (f"undostore: no store found at or above {self.start}; protecting {self.root} "
                f"({why}) with a new store")


def _ancestors(folder: str) -> list[str]:
    out = [folder]
    while True:
        parent = os.path.dirname(folder)
        if parent == folder:
            return out
        out.append(parent)
        folder = parent


def _same(a: str, b: str) -> bool:
    return os.path.normcase(a) == os.path.normcase(b)


def discover(start: str | os.PathLike[str] | None = None, store: str | None = None, *,
             force: bool = False) -> Discovery:
    """The root for a command run in `start` (default: the current folder); `store` is an
    explicit store folder (`--store`/`UNDOSTORE_STORE`), else the default location is used."""
    begin = os.path.realpath(os.fspath(start) if start is not None else os.getcwd())
    home = os.path.realpath(os.path.expanduser("~"))
    chain = _ancestors(begin)

    def allowed(folder: str) -> bool:
        # The home folder and a drive root only when they are the folder itself or forced.
        if force or folder == begin:
            return True
        return not (_same(folder, home) or os.path.dirname(folder) == folder)

    if store is not None:
        recorded = recorded_root(store)
        if recorded is not None:
            real = os.path.realpath(recorded)
            for folder in chain:
                if _same(folder, real) and allowed(folder):
                    return Discovery(folder, os.path.abspath(store), FOUND_STORE, begin, True)
    else:
        for folder in chain:
            candidate = default_store_path(folder)
            if allowed(folder) and os.path.isfile(os.path.join(candidate, "FORMAT")):
                return Discovery(folder, candidate, FOUND_STORE, begin, True)
    for folder in chain:
        if allowed(folder) and os.path.lexists(os.path.join(folder, ".git")):
            return _fresh(folder, store, FOUND_GIT, begin)
    return _fresh(begin, store, FOUND_CWD, begin)


def named(root: str | os.PathLike[str], store: str | None = None) -> Discovery:
    """The root the caller named, as a Discovery (no search)."""
    real = os.path.realpath(os.fspath(root))
    return _fresh(real, store, NAMED, real)


def _fresh(root: str, store: str | None, how: str, begin: str) -> Discovery:
    path = os.path.abspath(store) if store is not None else default_store_path(root)
    return Discovery(root, path, how, begin, os.path.isfile(os.path.join(path, "FORMAT")))

"""What a restore could not do as asked, per path, with a kind a caller can count or filter on
(never by matching the message text)."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Kind(Enum):
    OWNER = "owner"                  # owner or group not kept
    XATTR = "xattr"                  # an extended attribute (or ACL) not kept
    SETID = "setid"                  # setuid/setgid cleared
    SYMLINK = "symlink"              # no symlinks here: the link target written as a file
    FOLDER_KEPT = "folder_kept"      # a folder the plan removes still holds files
    KEPT_CHANGED = "kept_changed"    # a roll-back kept a file changed after the restore
    TEMP_LEFT = "temp_left"          # a temp file of the restore could not be removed
    JOURNAL_ASIDE = "journal_aside"  # a damaged journal was moved aside


class RestoreWarning(NamedTuple):
    path: str
    message: str
    kind: Kind

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message, "kind": self.kind.value}


Warn = list[RestoreWarning]

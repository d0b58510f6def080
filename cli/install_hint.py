"""How to install undostore again, or one of its extras, as this copy was installed: the
messages that name an install command (`doctor`'s PATH check, `pick` and `mcp` without their
extra) must work for one who installed from a checkout, where `pip install undostore` finds
nothing of theirs."""

from __future__ import annotations

import json
import os
import shlex
import sys
from urllib.parse import unquote, urlparse

INDEX_NAME = "undostore"


def source() -> str:
    """What to install from: the checkout this copy runs from (an editable install), the one
    PEP 610's `direct_url.json` names (`pip install .`), else the package index's name."""
    import undostore

    here = os.path.dirname(os.path.dirname(os.path.abspath(undostore.__file__)))
    if os.path.isfile(os.path.join(here, "pyproject.toml")) and \
            os.path.isdir(os.path.join(here, "cli")):
        return here
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        raw = distribution(INDEX_NAME).read_text("direct_url.json")
    except (ImportError, PackageNotFoundError):
        raw = None
    try:
        url = json.loads(raw or "{}").get("url", "")
    except (ValueError, AttributeError):
        url = ""
    if isinstance(url, str) and url.startswith("file://"):
        return unquote(urlparse(url).path)
    return INDEX_NAME


def pip_install(extra: str) -> str:
    """The command that adds `extra` to this Python's undostore."""
    return (f"{shlex.quote(sys.executable)} -m pip install "
            f"{shlex.quote(f'{source()}[{extra}]')}")


def tool_install() -> str:
    """The command that puts `undostore` on the PATH hosts run it from (pipx's own venv)."""
    return f"pipx install {shlex.quote(source())}"

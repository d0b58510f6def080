"""The `limits` fixture of the watchman suites: every test twice, with big folders only spliced
from their old trees (the default limits) and with every patched folder spliced
(`splice_min_files=0`), each id checked the same way."""

from __future__ import annotations

import pytest

from undostore.limits import Limits


@pytest.fixture(params=["entry by entry", "spliced"])
def limits(request) -> Limits:  # noqa: ANN001
    return Limits(splice_min_files=0) if request.param == "spliced" else Limits()

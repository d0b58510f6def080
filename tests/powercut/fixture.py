"""The `powercut` fixture: a factory of mounted power-cut file systems, unmounted at the end
(lazily if something still holds one), skipped with the reason where this machine cannot mount."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.powercut.mount import PowerCut, skip_reason


@pytest.fixture
def powercut(tmp_path: Path) -> Iterator[Callable[..., PowerCut]]:
    """powercut(model="ordered", symlinks=True, frozen_folder_times=False) -> a PowerCut
    mounted under tmp_path."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    mounted: list[PowerCut] = []

    def make(model: str = "ordered", symlinks: bool = True,
             frozen_folder_times: bool = False) -> PowerCut:
        n = len(mounted)
        fs = PowerCut(str(tmp_path / f"backing{n}"), str(tmp_path / f"mnt{n}"), model, symlinks,
                      frozen_folder_times)
        mounted.append(fs)
        return fs

    try:
        yield make
    finally:
        for fs in mounted:
            fs.close()

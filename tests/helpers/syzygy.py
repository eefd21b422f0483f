"""Where the tests find Syzygy tables: the 3–4-piece (and some 5-piece) tables that
tests/run.sh unpacks from python-chess's source archive into .cache/syzygy, or
$ONEPLY_SYZYGY. Tests that need them are skipped, saying why, where there are none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO


def syzygy_dir() -> str | None:
    """The first directory that holds the tables ($ONEPLY_SYZYGY, then .cache/syzygy)."""
    for candidate in (os.environ.get("ONEPLY_SYZYGY", ""), str(REPO / ".cache" / "syzygy")):
        if candidate and (Path(candidate) / "KQvK.rtbw").exists():
            return candidate
    return None


SYZYGY = syzygy_dir()

needs_tables = pytest.mark.skipif(
    SYZYGY is None, reason="no Syzygy tables here (tests/run.sh fetches them)"
)

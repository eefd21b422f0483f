"""The one Stockfish lookup rule: explicit path or name → `stockfish` on PATH → Debian path."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from oneply.engine import stockfish as lookup


def test_explicit_path_name_on_path_and_missing(stockfish: str, monkeypatch, tmp_path) -> None:
    assert lookup.find_stockfish(stockfish) == stockfish
    monkeypatch.setenv("PATH", os.path.dirname(stockfish))
    assert lookup.find_stockfish(os.path.basename(stockfish)) == stockfish
    assert lookup.find_stockfish("") == stockfish  # found as `stockfish`, so named so
    assert lookup.find_stockfish(str(tmp_path / "nope")) is None
    with pytest.raises(lookup.StockfishNotFound, match="nope"):
        lookup.require_stockfish(str(tmp_path / "nope"))


def test_path_before_the_debian_location(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "stockfish"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert lookup.find_stockfish() == str(fake)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    debian = Path(lookup.DEBIAN_STOCKFISH)
    expected = str(debian) if os.access(debian, os.X_OK) else None
    assert lookup.find_stockfish() == expected


def test_every_client_fails_to_start_with_the_one_message(tmp_path) -> None:
    """The python-chess client, its asyncio protocol and the bare pipe: one error, one text."""
    missing = str(tmp_path / "nope")
    starts = (
        lambda: lookup.open_stockfish(missing),
        lambda: asyncio.run(lookup.popen_stockfish_async(missing)),
        lambda: lookup.UciPipe(missing),
    )
    for start in starts:
        with pytest.raises(lookup.StockfishStartError, match="Stockfish did not start: .*nope"):
            start()

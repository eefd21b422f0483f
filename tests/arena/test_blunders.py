"""`oneply blunders`: a player's costly moves, classed by the reply, judged by real Stockfish
on hand-made games whose one blunder each leaves no doubt at depth 8."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from oneply.arena.blunders import KINDS, games_of
from oneply.engine.cli import main

#: player P's games: a queen moved where a bishop takes it; a pawn push that takes the queen's
#: only defender away (as White, and the same mirrored as Black); a rook that leaves the back
#: rank to a mate; a mate, which costs nothing. Against O, except the last (against Q).
GAMES = """
[White "P"]
[Black "O"]

1. e4 d5 2. Qg4 Bxg4 0-1

[White "P"]
[Black "O"]
[SetUp "1"]
[FEN "6k1/8/2n5/4Q3/3P4/8/8/6K1 w - - 0 1"]

1. d5 Nxe5 0-1

[White "O"]
[Black "P"]
[SetUp "1"]
[FEN "6k1/8/8/3p4/4q3/2N5/8/6K1 b - - 0 1"]

1... d4 2. Nxe4 1-0

[White "P"]
[Black "O"]
[SetUp "1"]
[FEN "r5k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"]

1. Rd2 Ra1+ 2. Rd1 Rxd1# 0-1

[White "P"]
[Black "Q"]
[SetUp "1"]
[FEN "6k1/5ppp/8/8/8/8/q4PPP/3R2K1 w - - 0 1"]

1. Rd8# 1-0
"""


@pytest.fixture
def games(tmp_path: Path) -> Path:
    path = tmp_path / "games.pgn"
    path.write_text(GAMES)
    return path


def test_each_blunder_lands_in_its_class(games, tmp_path, stockfish, capsys) -> None:
    out = tmp_path / "p.json"
    argv = ["blunders", str(games), "--player", "P", "--depth", "8", "--quiet"]
    assert main([*argv, "--stockfish", stockfish, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    # e4, Qg4; d5; d4 (as Black); Rd2, Rd1 — the mate ends its game and is not judged
    assert (result["games"], result["moves"]) == (5, 6)
    expected = {kind: 0 for kind in KINDS}
    expected.update(mate=1, moved_piece=1, left_en_prise=2)
    assert result["costly"] == expected
    table = capsys.readouterr().out
    assert "| leaves another piece en prise (`left_en_prise`) | 2 | 0.40 |" in table


def test_games_are_picked_by_exact_name_and_opponent(games, capsys) -> None:
    picked = games_of([str(games)], "P", "O")
    assert len(picked) == 4 and [color for _, color in picked].count(chess.BLACK) == 1
    assert len(games_of([str(games)], "P", None)) == 5
    assert games_of([str(games)], "p", None) == []
    assert main(["blunders", str(games), "--player", "p"]) != 0
    assert "exact name" in capsys.readouterr().err
    assert main(["blunders", str(games) + ".missing", "--player", "P"]) != 0
    assert "no such PGN file" in capsys.readouterr().err

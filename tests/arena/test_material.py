"""Counting moves that give material away by static exchange, on hand-checked games."""

from __future__ import annotations

import chess

from oneply.arena.material import count_game, count_match

#: 3.Qxe5+?? nets white a pawn for the queen (−8); no other move of either side loses material
QUEEN_BLUNDER = '[Event "t"]\n\n1. e4 e5 2. Qh5 Nc6 3. Qxe5+ Nxe5 *'
#: from a set-up position: black's 1...Nd4?? walks into the e3 pawn (−2); 2.exd4 wins it back
FROM_FEN = '[FEN "4k3/8/2n5/8/8/4P3/8/4K3 b - - 0 1"]\n[SetUp "1"]\n\n1... Nd4 2. exd4 Kd7 *'


def test_a_hung_queen_counts_for_its_side_only() -> None:
    white, black = count_game(QUEEN_BLUNDER, chess.WHITE)
    assert (white.gives, white.moves) == (1, 3)
    assert (black.gives, black.moves) == (0, 3)
    as_black, other = count_game(QUEEN_BLUNDER, chess.BLACK)
    assert (as_black.gives, other.gives) == (0, 1)


def test_games_from_a_set_up_position_and_a_match_total() -> None:
    black, white = count_game(FROM_FEN, chess.BLACK)
    assert (black.gives, black.moves) == (1, 2) and (white.gives, white.moves) == (0, 1)
    own, other = count_match([(QUEEN_BLUNDER, chess.WHITE), (FROM_FEN, chess.WHITE)])
    assert (own.gives, own.moves) == (1, 4) and (other.gives, other.moves) == (1, 5)
    assert own.rate == 0.25 and count_match([])[0].rate is None

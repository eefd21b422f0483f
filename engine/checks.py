"""Where the opponent could check or mate next, if the side to move did nothing.

Why: against Stockfish's weakest levels, about a quarter of v9's costly moves allow a forced
mate or a checking tactic (README, `oneply blunders`): the network does not see that the
opponent's queen is one move from mate on g7, or that a knight fork with check waits on c7.
A player looks for those squares before choosing a move. The ``enemy_check`` fact of
engine/features.py states them per square; this module computes them, as an input and never
as a search: the position with the turn passed to the opponent, its legal moves that give
check, and whether each of them mates.

Exact and cheap: instead of testing every reply, only the moves that can check at all are
generated — onto a square from which a piece attacks the mover's king along the current
lines (or any square of the back ranks, for promotions), or from a square that blocks one of
the opponent's sliders from the king (discovered checks; castling, with the king as the
mover; the passed turn leaves no en-passant capture). python-chess's ``gives_check`` then
decides each candidate; tests/engine/test_checks.py holds the result to the brute force over
every reply.
"""

from __future__ import annotations

import chess
import numpy as np

#: ``enemy_check`` values
NO_CHECK, CHECK, MATE = 0, 1, 2


def _direct_squares(board: chess.Board, king: chess.Square) -> chess.Bitboard:
    """Squares an enemy piece could check the mover's `king` from along today's lines (every
    pattern at once; the back ranks join for promotions, which may also open the file they
    promote on)."""
    occupied = board.occupied
    return (
        chess.BB_KNIGHT_ATTACKS[king]
        | chess.BB_PAWN_ATTACKS[board.turn][king]
        | chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied]
        | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied]
        | chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
        | chess.BB_BACKRANKS
    )


def _line_blockers(board: chess.Board, king: chess.Square, them: chess.Color) -> chess.Bitboard:
    """`them`'s pieces that stand alone between one of their sliders and `king`: moving one
    away may discover check."""
    found = 0
    sliders = board.occupied_co[them] & (board.bishops | board.rooks | board.queens)
    for slider in chess.SquareSet(sliders):
        if not chess.BB_RAYS[king][slider]:
            continue
        diagonal = bool(chess.BB_DIAG_ATTACKS[king][0] & chess.BB_SQUARES[slider])
        kind = board.piece_type_at(slider)
        if (kind == chess.ROOK and diagonal) or (kind == chess.BISHOP and not diagonal):
            continue
        between = chess.between(king, slider) & board.occupied
        if chess.popcount(between) == 1 and between & board.occupied_co[them]:
            found |= between
    return found


def enemy_checks(board: chess.Board) -> np.ndarray:
    """uint8 [64]: per destination square, MATE if a legal move of the opponent onto it would
    checkmate the side to move were it the opponent's turn now, CHECK if one would give check,
    else NO_CHECK. All NO_CHECK while the side to move is in check (the threat is already
    there, and every move answers it) or has no king."""
    out = np.zeros(64, dtype=np.uint8)
    king = board.king(board.turn)
    if king is None or board.is_check():
        return out
    them = not board.turn
    targets = _direct_squares(board, king)
    movers = _line_blockers(board, king, them) | (board.kings & board.occupied_co[them])
    board.push(chess.Move.null())
    try:
        candidates = [
            *board.generate_legal_moves(chess.BB_ALL, targets),
            *board.generate_legal_moves(movers, chess.BB_ALL & ~targets),
        ]
        for move in candidates:
            if out[move.to_square] == MATE or not board.gives_check(move):
                continue
            board.push(move)
            mate = not any(board.generate_legal_moves())
            board.pop()
            out[move.to_square] = max(out[move.to_square], MATE if mate else CHECK)
    finally:
        board.pop()
    return out

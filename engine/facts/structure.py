"""Where each king can step and which pawns are passed: two facts a player reads off the board
at a glance and a network must otherwise assemble square by square.

Why: the check facts (engine/facts/checks.py) say where the opponent could check or mate *now*;
they do not say how boxed in a king already is, which decides how dangerous the next checks
are. And a passed pawn is a fact about up to three files ahead of it — the network sees only
pieces, so it learns "passed" slowly, while endgames at this engine's level are lost by
pawns it does not stop and won by pawns it does not push. Both are bitboard lookups, a few
microseconds a position.
"""

from __future__ import annotations

import chess

#: the squares in front of a pawn of each colour on each square, on its file and both
#: neighbours: where an enemy pawn stops it from being passed
_FRONT_SPANS: dict[chess.Color, tuple[chess.Bitboard, ...]] = {}


def _front_span(color: chess.Color, square: chess.Square) -> chess.Bitboard:
    file, rank = chess.square_file(square), chess.square_rank(square)
    ranks = range(rank + 1, 8) if color == chess.WHITE else range(rank - 1, -1, -1)
    mask = 0
    for r in ranks:
        for f in (file - 1, file, file + 1):
            if 0 <= f < 8:
                mask |= chess.BB_SQUARES[chess.square(f, r)]
    return mask


for _color in chess.COLORS:
    _FRONT_SPANS[_color] = tuple(_front_span(_color, square) for square in chess.SQUARES)


def king_flights(board: chess.Board, color: chess.Color, enough: int = 3) -> int:
    """How many squares next to `color`'s king it could step to — not its own pieces', not
    attacked by the other side once the king has left its square (a slider's ray through the
    king's square counts) — counted up to `enough`. Pins and the turn play no part: it is the
    king's room, whoever moves. A side without a king has none."""
    king = board.king(color)
    if king is None:
        return 0
    occupied = board.occupied & ~chess.BB_SQUARES[king]
    count = 0
    for to in chess.scan_forward(chess.BB_KING_ATTACKS[king] & ~board.occupied_co[color]):
        if not board.attackers_mask(not color, to, occupied):
            count += 1
            if count >= enough:
                break
    return count


def _pawn(board: chess.Board, square: chess.Square) -> chess.Color:
    """The colour of the pawn on `square` (a ValueError where there is none)."""
    piece = board.piece_at(square)
    if piece is None or piece.piece_type != chess.PAWN:
        raise ValueError(f"no pawn on {chess.square_name(square)}")
    return piece.color


def is_passed(board: chess.Board, square: chess.Square) -> bool:
    """Whether the pawn on `square` is passed: no enemy pawn in front of it on its own file or
    the two beside it (the classic rule; a pawn it could capture on the way counts as a stop)."""
    return _passed(board, square, _pawn(board, square))


def _passed(board: chess.Board, square: chess.Square, color: chess.Color) -> bool:
    return not _FRONT_SPANS[color][square] & board.pawns & board.occupied_co[not color]


def outruns_king(board: chess.Board, square: chess.Square) -> bool:
    """The rule of the square for the pawn on `square`: counting moves alone (no pieces in the
    way, the double step from its start rank, whose turn it is), the enemy king cannot reach
    the promotion square in time. Exact in king-and-pawn races; elsewhere a hint."""
    return _outruns(board, square, _pawn(board, square))


def _outruns(board: chess.Board, square: chess.Square, color: chess.Color) -> bool:
    king = board.king(not color)
    if king is None:
        return True
    rank = chess.square_rank(square) if color == chess.WHITE else 7 - chess.square_rank(square)
    steps = 7 - rank - (1 if rank == 1 else 0)  # the double step
    queening = chess.square(chess.square_file(square), 7 if color == chess.WHITE else 0)
    distance = chess.square_distance(king, queening) - (0 if board.turn == color else 1)
    return distance > steps


def passer(board: chess.Board, square: chess.Square) -> int:
    """The ``passed`` fact of the pawn on `square`: 0 not passed; 1 passed, something on its
    way; 2 passed, its path to promotion empty; 3 that, and the enemy king is outside its
    square (engine/facts/features.py)."""
    color = _pawn(board, square)
    if not _passed(board, square, color):
        return 0
    path = _FRONT_SPANS[color][square] & chess.BB_FILES[chess.square_file(square)]
    if path & board.occupied:
        return 1
    return 3 if _outruns(board, square, color) else 2

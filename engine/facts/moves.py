"""The 1968-move action vocabulary (docs/FORMAT.md §2). Its order is part of the model format.

1. For each from-square a1..h8: the squares a queen there attacks on an empty board
   (ascending), then the squares a knight attacks (ascending). Castling is the king's
   two-square move, so it is in this part. 1792 moves.
2. 176 promotions: rank 2→1 then 7→8; per file the push, the capture to the left, the capture
   to the right; each with q, r, b, n.
"""

from __future__ import annotations

import chess
import numpy as np


def _build_vocabulary() -> list[str]:
    moves: list[str] = []
    for square in chess.SQUARES:
        queen = chess.SquareSet(chess.BB_RANK_ATTACKS[square][0])
        queen |= chess.SquareSet(chess.BB_FILE_ATTACKS[square][0])
        queen |= chess.SquareSet(chess.BB_DIAG_ATTACKS[square][0])
        knight = chess.SquareSet(chess.BB_KNIGHT_ATTACKS[square])
        for targets in (queen, knight):
            moves += [chess.square_name(square) + chess.square_name(t) for t in sorted(targets)]
    for from_rank, to_rank in (("2", "1"), ("7", "8")):
        for index, file in enumerate("abcdefgh"):
            to_files = [file]
            if index > 0:
                to_files.append("abcdefgh"[index - 1])
            if index < 7:
                to_files.append("abcdefgh"[index + 1])
            for to_file in to_files:
                moves += [file + from_rank + to_file + to_rank + piece for piece in "qrbn"]
    return moves


MOVES: tuple[str, ...] = tuple(_build_vocabulary())
MOVE_INDEX: dict[str, int] = {uci: i for i, uci in enumerate(MOVES)}
NUM_MOVES = len(MOVES)  # 1968
MAX_LEGAL_MOVES = 218  # the most legal moves any chess position has

#: per move id: from-square, to-square (a1=0 … h8=63) and promotion (0 none, 1–4 = q, r, b, n);
#: the model reads them to know which squares a move touches (training/model/model.py,
#: engine/model/graph.py)
MOVE_FROM = np.array([chess.parse_square(m[:2]) for m in MOVES], dtype=np.int64)
MOVE_TO = np.array([chess.parse_square(m[2:4]) for m in MOVES], dtype=np.int64)
MOVE_PROMOTION = np.array([" qrbn".index(m[4]) if len(m) == 5 else 0 for m in MOVES], np.int64)
NUM_PROMOTIONS = 5


def move_id(move: chess.Move | str) -> int:
    """Vocabulary index of a move in standard (non-960) UCI notation."""
    uci = move if isinstance(move, str) else move.uci()
    try:
        return MOVE_INDEX[uci]
    except KeyError:
        raise ValueError(f"move {uci!r} is not in the action vocabulary") from None


def legal_moves(board: chess.Board) -> list[chess.Move]:
    """The legal moves of a position, in python-chess generation order."""
    return list(board.legal_moves)


def legal_move_ids(board: chess.Board) -> np.ndarray:
    """Vocabulary ids of a position's legal moves, in the order of legal_moves(board)."""
    return np.fromiter((MOVE_INDEX[m.uci()] for m in board.legal_moves), np.int64)

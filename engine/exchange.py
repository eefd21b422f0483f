"""Static exchange evaluation: what a capture sequence on one square nets, in pawns.

Why: "this capture wins a pawn", "that knight is hanging" are what a player reads off the board
before thinking about anything else, and what a searchless network on two CPU cores is worst at
learning from samples (issue 18). The facts of engine/features.py state them as inputs; this
module computes them, as an input and never as a search: one square, the classic swap algorithm
(each side recaptures with its least valuable piece and may stop when continuing loses
material; sliders behind a capturer join in as it leaves — x-rays). Pins are ignored, as in
every engine's SEE; a king captures only onto a square the other side no longer attacks.

Values are the textbook 1 / 3 / 3 / 5 / 9 pawns; python-chess's public attack tables give the
attackers for any occupancy, so the board itself is never changed.
"""

from __future__ import annotations

import functools
import operator

import chess

#: material in pawns by python-chess piece type (the king is never captured)
PIECE_VALUE: dict[chess.PieceType, int] = {
    chess.PAWN: 1,
    chess.KNIGHT: 3,
    chess.BISHOP: 3,
    chess.ROOK: 5,
    chess.QUEEN: 9,
    chess.KING: 0,
}
#: every rank, file and diagonal through a square, edge to edge
_LINES: list[chess.Bitboard] = [
    functools.reduce(operator.or_, chess.BB_RAYS[square], 0) for square in chess.SQUARES
]
_CHEAPEST_FIRST = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def attackers_with(
    board: chess.Board, color: chess.Color, square: chess.Square, occupied: chess.Bitboard
) -> chess.Bitboard:
    """Pieces of `color` among `occupied` that attack `square` if only `occupied` stood."""
    rank_file = (
        chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
        | (chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied])
    )
    diagonal = chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]
    queens = board.queens
    attackers = (
        (chess.BB_PAWN_ATTACKS[not color][square] & board.pawns)
        | (chess.BB_KNIGHT_ATTACKS[square] & board.knights)
        | (chess.BB_KING_ATTACKS[square] & board.kings)
        | (rank_file & (board.rooks | queens))
        | (diagonal & (board.bishops | queens))
    )
    return attackers & board.occupied_co[color] & occupied


def _cheapest(
    board: chess.Board, attackers: chess.Bitboard, color: chess.Color
) -> tuple[chess.Square, chess.PieceType]:
    """The least valuable of `attackers` (non-empty, all of `color`): its square and type."""
    for piece_type in _CHEAPEST_FIRST:
        mask = attackers & board.pieces_mask(piece_type, color)
        if mask:
            return chess.lsb(mask), piece_type
    raise ValueError("no attacker")  # unreachable: callers pass a non-empty mask


def exchange_gain(
    board: chess.Board,
    square: chess.Square,
    side: chess.Color,
    occupied: chess.Bitboard,
    target: int,
) -> int:
    """What `side` nets at best by capturing on `square`, where a piece worth `target` stands,
    and the recaptures that follow — 0 when it had better not start. `occupied` is the board's
    occupancy as it stands (a move already made on it)."""
    gains: list[int] = []
    while True:
        attackers = attackers_with(board, side, square, occupied)
        if not attackers:
            break
        origin, piece_type = _cheapest(board, attackers, side)
        left = occupied & ~chess.BB_SQUARES[origin]
        if piece_type == chess.KING and attackers_with(board, not side, square, left):
            break  # the king may not capture onto a defended square
        gains.append(target)
        target, occupied, side = PIECE_VALUE[piece_type], left, not side
    result = 0
    for gain in reversed(gains):  # each capturer may stop: it nets the gain less the reply
        result = max(0, gain - result)
    return result


def move_exchange(board: chess.Board, move: chess.Move) -> int:
    """The mover's material balance after `move` and the best exchange on its destination that
    follows (negative: the move loses material). Castling moves nothing onto a contested
    square: 0."""
    if board.is_castling(move):
        return 0
    moved = board.piece_type_at(move.from_square)
    if moved is None:
        raise ValueError(f"no piece on the move's from-square: {move.uci()}")
    to = move.to_square
    occupied = board.occupied & ~chess.BB_SQUARES[move.from_square] | chess.BB_SQUARES[to]
    if board.is_en_passant(move):
        captured = chess.PAWN
        occupied &= ~chess.BB_SQUARES[to - 8 if board.turn == chess.WHITE else to + 8]
    else:
        captured = board.piece_type_at(to) or 0
    on_square = move.promotion or moved
    gain = (PIECE_VALUE[captured] if captured else 0) + PIECE_VALUE[on_square] - PIECE_VALUE[moved]
    return gain - exchange_gain(board, to, not board.turn, occupied, PIECE_VALUE[on_square])


def en_prise(board: chess.Board, square: chess.Square) -> bool:
    """Whether the other side would win material by capturing the (non-king) piece on
    `square` now, whoever is to move."""
    piece = board.piece_at(square)
    if piece is None or piece.piece_type == chess.KING:
        return False
    return (
        exchange_gain(board, square, not piece.color, board.occupied, PIECE_VALUE[piece.piece_type])
        > 0
    )


def safe_moves(board: chess.Board, square: chess.Square, enough: int = 3) -> int:
    """How many squares the piece on `square` could move to without losing material in the
    exchange that follows (its attacks, not onto its own pieces; pins ignored, as everywhere in
    static exchange), counted up to `enough`: 0 is a trapped piece, which a player sees and a
    network must otherwise assemble from every destination's attackers and their values."""
    piece = board.piece_at(square)
    if piece is None:
        raise ValueError(f"no piece on {chess.square_name(square)}")
    value, color = PIECE_VALUE[piece.piece_type], piece.color
    left = board.occupied & ~chess.BB_SQUARES[square]
    count = 0
    for to in chess.SquareSet(board.attacks_mask(square) & ~board.occupied_co[color]):
        captured = board.piece_type_at(to)
        taken = PIECE_VALUE[captured] if captured else 0
        occupied = left | chess.BB_SQUARES[to]
        if taken >= value or taken >= exchange_gain(board, to, not color, occupied, value):
            count += 1
            if count >= enough:
                break
    return count


def exposed(
    board: chess.Board,
    color: chess.Color,
    skip: chess.Square | None = None,
    among: chess.Bitboard = chess.BB_ALL,
) -> list[int]:
    """What the other side nets at best by capturing each attacked piece of `color` (not the
    king, not the one on `skip`; only those on `among`), static exchange square by square, in
    square order (0 where taking does not pay)."""
    pieces = board.occupied_co[color] & ~board.kings & among
    if skip is not None:
        pieces &= ~chess.BB_SQUARES[skip]
    gains = []
    for square in chess.SquareSet(pieces):
        piece_type = board.piece_type_at(square)
        if piece_type is None or not board.attackers_mask(not color, square):
            continue
        value = PIECE_VALUE[piece_type]
        gains.append(exchange_gain(board, square, not color, board.occupied, value))
    return gains


def threat(
    board: chess.Board,
    color: chess.Color,
    skip: chess.Square | None = None,
    among: chess.Bitboard = chess.BB_ALL,
) -> int:
    """The most the other side nets at best by capturing one of `color`'s pieces (`exposed`)
    — after a move, what it leaves en prise: the defender walked away, the line opened, the
    attacked piece left where it was."""
    return max(exposed(board, color, skip, among), default=0)


def opened_by(board: chess.Board, move: chess.Move) -> chess.Bitboard:
    """The squares where `move` (not yet made) can let a slider's attack through: the lines
    through every square it empties — its origin, the castling rook's, the pawn taken en
    passant. Elsewhere a move only blocks lines or removes attackers, so a piece off these
    lines is attacked after the move only if it was before (what makes `threat` cheap)."""
    emptied = [move.from_square]
    if board.is_castling(move):
        rook_file = (
            7 if chess.square_file(move.to_square) > chess.square_file(move.from_square) else 0
        )
        emptied.append(chess.square(rook_file, chess.square_rank(move.from_square)))
    elif board.is_en_passant(move):
        emptied.append(move.to_square - 8 if board.turn == chess.WHITE else move.to_square + 8)
    lines = 0
    for square in emptied:
        lines |= _LINES[square]
    return lines

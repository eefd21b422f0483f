"""Static exchange evaluation: what a capture sequence on one square nets, in pawns.

Why: "this capture wins a pawn", "that knight is hanging" are what a player reads off the board
before thinking about anything else, and what a searchless network on two CPU cores is worst at
learning from samples (docs/studies/exchange-input.md). The facts of engine/facts/features.py state
them as inputs; this module computes them, as an input and never as a search: one square, the
classic swap algorithm (each side recaptures with its least valuable piece and may stop when
continuing loses material; sliders behind a capturer join in as it leaves — x-rays). Pins are
ignored, as in every engine's SEE; a king captures only onto a square the other side no longer
attacks.

Values are the textbook 1 / 3 / 3 / 5 / 9 pawns; python-chess's public attack tables give the
attackers for any occupancy, so the board itself is never changed.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

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


def _lines_through(square: chess.Square, diagonal: bool) -> tuple[chess.Bitboard, ...]:
    """The diagonals (or the rank and file) through `square`, each edge to edge."""
    lines = {chess.BB_RAYS[square][other] for other in chess.SQUARES if other != square}
    straight = chess.BB_RANKS[chess.square_rank(square)] | chess.BB_FILES[chess.square_file(square)]
    return tuple(sorted(line for line in lines if line and bool(line & ~straight) == diagonal))


#: per square, its rank and file; its two diagonals (one at a corner)
_STRAIGHT_LINES = [_lines_through(square, diagonal=False) for square in chess.SQUARES]
_DIAGONAL_LINES = [_lines_through(square, diagonal=True) for square in chess.SQUARES]
#: per square, where the pieces stand that can take part in an exchange on it: its lines
#: (sliders, x-rays behind them), its knight squares and its neighbours (pawns, kings)
_REACH = [
    functools.reduce(operator.or_, _STRAIGHT_LINES[square] + _DIAGONAL_LINES[square])
    | chess.BB_KNIGHT_ATTACKS[square]
    | chess.BB_KING_ATTACKS[square]
    for square in chess.SQUARES
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


def _by_type(board: chess.Board) -> tuple[chess.Bitboard, ...]:
    """The board's pieces of each type, cheapest first (as ``_CHEAPEST_FIRST``)."""
    return board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings


def _cheapest(
    board: chess.Board, attackers: chess.Bitboard, color: chess.Color
) -> tuple[chess.Square, chess.PieceType]:
    """The least valuable of `attackers` (non-empty, all of `color`): its square and type."""
    for piece_type, pieces in zip(_CHEAPEST_FIRST, _by_type(board), strict=True):
        mask = attackers & pieces
        if mask:
            return chess.lsb(mask), piece_type
    raise ValueError("no attacker")  # unreachable: callers pass a non-empty mask


def exchange_gain(
    board: chess.Board,
    square: chess.Square,
    side: chess.Color,
    occupied: chess.Bitboard,
    target: int,
    first: chess.Bitboard | None = None,
) -> int:
    """What `side` nets at best by capturing on `square`, where a piece worth `target` stands,
    and the recaptures that follow — 0 when it had better not start. `occupied` is the board's
    occupancy as it stands (a move already made on it); `first`, `side`'s attackers on it, when
    the caller has them already."""
    gains: list[int] = []
    while True:
        attackers = attackers_with(board, side, square, occupied) if first is None else first
        first = None
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
    for to in chess.scan_forward(board.attacks_mask(square) & ~board.occupied_co[color]):
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
    known: Standing | None = None,
) -> list[int]:
    """What the other side nets at best by capturing each attacked piece of `color` (not the
    king, not the one on `skip`; only those on `among`), static exchange square by square, in
    square order (0 where taking does not pay). `known`: the exchanges before the move just
    made (``standing``), reused on the squares that move cannot reach."""
    pieces = board.occupied_co[color] & ~board.kings & among
    if skip is not None:
        pieces &= ~chess.BB_SQUARES[skip]
    gains = []
    for square in chess.scan_forward(pieces):
        if known is not None and square in known.gains and not _REACH[square] & known.changed:
            gains.append(known.gains[square])
            continue
        piece_type = board.piece_type_at(square)
        attackers = attackers_with(board, not color, square, board.occupied)
        if piece_type is None or not attackers:
            continue
        value = PIECE_VALUE[piece_type]
        gains.append(exchange_gain(board, square, not color, board.occupied, value, attackers))
    return gains


@dataclass
class Standing:
    """The exchanges on `color`'s attacked pieces (not the king) as a board stands, to be
    reused after a move on every square whose exchange the move cannot touch: the move fills
    in `changed`, the squares whose piece it changes (for each candidate move, most of the
    static exchanges of ``threat`` are the ones before it)."""

    gains: dict[chess.Square, int]
    changed: chess.Bitboard = chess.BB_ALL

    @property
    def squares(self) -> chess.Bitboard:
        """The attacked pieces these exchanges are on."""
        return sum(chess.BB_SQUARES[square] for square in self.gains)

    @classmethod
    def of(cls, board: chess.Board, color: chess.Color) -> Standing:
        return cls(dict(zip(_attacked_squares(board, color), exposed(board, color), strict=True)))

    def after(self, before: Occupancy, board: chess.Board) -> Standing:
        """These exchanges once a move is made on `board`, `changed` set to the squares whose
        piece it changed (`before`: ``occupancy`` of the board before it; a capture changes the
        colour on its square, so colour by colour is enough)."""
        white, black = occupancy(board)
        return Standing(self.gains, (before[0] ^ white) | (before[1] ^ black))


#: the squares of White's pieces and of Black's
Occupancy = tuple[chess.Bitboard, chess.Bitboard]


def occupancy(board: chess.Board) -> Occupancy:
    return board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]


def _attacked_squares(board: chess.Board, color: chess.Color) -> list[chess.Square]:
    """`color`'s pieces (not the king) that the other side attacks, in square order (those
    ``exposed`` reports on)."""
    pieces = board.occupied_co[color] & ~board.kings
    return [sq for sq in chess.scan_forward(pieces) if board.attackers_mask(not color, sq)]


def threat(
    board: chess.Board,
    color: chess.Color,
    skip: chess.Square | None = None,
    among: chess.Bitboard = chess.BB_ALL,
    known: Standing | None = None,
) -> int:
    """The most the other side nets at best by capturing one of `color`'s pieces (`exposed`)
    — after a move, what it leaves en prise: the defender walked away, the line opened, the
    attacked piece left where it was."""
    return max(exposed(board, color, skip, among, known), default=0)


def opened_by(board: chess.Board, move: chess.Move, color: chess.Color) -> chess.Bitboard:
    """The squares where `move` (not yet made) can let an attack of `color`'s sliders through:
    the lines through every square it empties — its origin, the castling rook's, the pawn taken
    en passant — that hold one of those sliders able to move along them. Elsewhere a move only
    blocks lines or removes attackers, so a piece off these lines is attacked after the move
    only if it was before, or by the moved piece (what makes `threat` cheap)."""
    emptied = [move.from_square]
    if board.is_castling(move):
        rook_file = (
            7 if chess.square_file(move.to_square) > chess.square_file(move.from_square) else 0
        )
        emptied.append(chess.square(rook_file, chess.square_rank(move.from_square)))
    elif board.is_en_passant(move):
        emptied.append(move.to_square - 8 if board.turn == chess.WHITE else move.to_square + 8)
    own = board.occupied_co[color]
    rooks = (board.rooks | board.queens) & own
    bishops = (board.bishops | board.queens) & own
    lines = 0
    for square in emptied:
        for line in _STRAIGHT_LINES[square]:
            if line & rooks:
                lines |= line
        for line in _DIAGONAL_LINES[square]:
            if line & bishops:
                lines |= line
    return lines

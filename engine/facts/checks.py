"""Where the opponent could check or mate next, if the side to move did nothing.

Why: against Stockfish's weakest levels, many of a searchless network's costly moves allow a
forced mate or a checking tactic (`oneply blunders`; docs/studies/checks-facts.md): the network
does not see that the opponent's queen is one move from mate on g7, or that a knight fork with
check waits on c7.
A player looks for those squares before choosing a move. The ``enemy_check`` fact of
engine/facts/features.py states them per square; this module computes them, as an input and never
as a search: the position with the turn passed to the opponent, its legal moves that give
check, and whether each of them mates.

The same question after each candidate move is the ``reply_check`` move fact: once the move
is made, can the opponent give check, or mate? Costly moves that still allow a mate or a
checking tactic remained common with the checks as inputs (docs/studies/2026-11-28f.md). It is
one reply deep and only over checks — what a player looks at before letting go of the piece.
``next_check`` asks it for the mover once the move is made, as though the opponent passed: does
the move threaten mate (the attacker's side, as ``threatens`` is the attacker's side of
``threat``)?

Exact and cheap: instead of testing every reply, only the moves that can check at all are
generated — onto a square from which a piece attacks the king along the current lines (or the
en-passant square, whose captured pawn may have blocked one), or by a piece that blocks one of
its own sliders from the king (discovered checks), a pawn about to promote, or the king
(castling). Each candidate is tested on bitboards without being made (python-chess's
``gives_check`` for castling and en passant), then for legality; a check mates when the king's
side has no legal move. tests/engine/test_checks.py holds both facts to the brute force over
every reply.
"""

from __future__ import annotations

import chess
import numpy as np

#: ``enemy_check`` values
NO_CHECK, CHECK, MATE = 0, 1, 2


def _diagonal(square: chess.Square, occupied: chess.Bitboard) -> chess.Bitboard:
    return chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]


def _straight(square: chess.Square, occupied: chess.Bitboard) -> chess.Bitboard:
    return (
        chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
        | chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied]
    )


def _attacks(
    piece: chess.PieceType, color: chess.Color, square: chess.Square, occupied: chess.Bitboard
) -> chess.Bitboard:
    """What a `piece` of `color` on `square` attacks, the board occupied as `occupied`."""
    if piece == chess.PAWN:
        return chess.BB_PAWN_ATTACKS[color][square]
    if piece == chess.KNIGHT:
        return chess.BB_KNIGHT_ATTACKS[square]
    if piece == chess.KING:
        return chess.BB_KING_ATTACKS[square]
    lines = 0
    if piece != chess.ROOK:
        lines |= _diagonal(square, occupied)
    if piece != chess.BISHOP:
        lines |= _straight(square, occupied)
    return lines


def _line_blockers(board: chess.Board, king: chess.Square, them: chess.Color) -> chess.Bitboard:
    """`them`'s pieces that stand alone between one of their sliders and `king`: moving one
    away may discover check."""
    occupied = board.occupied
    rooks = (board.rooks | board.queens) & board.occupied_co[them]
    bishops = (board.bishops | board.queens) & board.occupied_co[them]
    snipers = ((chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]) & rooks) | (
        chess.BB_DIAG_ATTACKS[king][0] & bishops
    )
    found = 0
    for sniper in chess.scan_reversed(snipers):
        between = chess.between(king, sniper) & occupied
        if chess.popcount(between) == 1 and between & board.occupied_co[them]:
            found |= between
    return found


def _gives_check(board: chess.Board, move: chess.Move, king: chess.Square) -> bool:
    """python-chess's ``gives_check`` for a pseudo-legal `move` without making it: the moved
    piece attacks `king` from its destination, or a slider behind its origin now does.
    Castling and en passant move a second piece: those ask python-chess."""
    origin, to = chess.BB_SQUARES[move.from_square], chess.BB_SQUARES[move.to_square]
    if (board.kings & origin and board.is_castling(move)) or board.is_en_passant(move):
        return board.gives_check(move)
    occupied = (board.occupied & ~origin) | to
    piece = move.promotion or board.piece_type_at(move.from_square)
    assert piece is not None
    if _attacks(piece, board.turn, move.to_square, occupied) & chess.BB_SQUARES[king]:
        return True
    return bool(board.attackers_mask(board.turn, king, occupied) & ~origin & ~to)


#: where the other king must stand for a castling move of `color` to give check: on its back
#: rank, or on the d- or f-file where the rook lands (the king, leaving a back-rank square,
#: can only uncover a line along that rank)
_CASTLING_CHECKS = {
    color: (chess.BB_RANK_1 if color else chess.BB_RANK_8) | chess.BB_FILE_D | chess.BB_FILE_F
    for color in chess.COLORS
}


#: per square, where a bishop, a rook, a queen on it could go on an empty board
_EMPTY_DIAGONAL = [chess.BB_DIAG_ATTACKS[square][0] for square in chess.SQUARES]
_EMPTY_STRAIGHT = [
    chess.BB_RANK_ATTACKS[square][0] | chess.BB_FILE_ATTACKS[square][0] for square in chess.SQUARES
]
_EMPTY_QUEEN = [d | s for d, s in zip(_EMPTY_DIAGONAL, _EMPTY_STRAIGHT, strict=True)]


def checking_moves(board: chess.Board) -> list[chess.Move]:
    """The side to move's legal moves that give check. Only the moves that can check at all
    are generated. A piece that cannot discover check, promote or castle checks exactly when it
    lands on a square from which its type attacks the king along today's lines (what that
    piece standing on the king would attack): those moves need only a legality test. The
    others — pieces that block one of their own sliders from the king (the king too), pawns
    about to promote, castling (the rook may check) and en-passant captures (the taken pawn may
    have blocked a line) — are each tested for check. A list, built without python-chess's
    general move generator: this runs twice for every move of every position."""
    king = board.king(not board.turn)
    if king is None:
        return []
    own = board.occupied_co[board.turn]
    promoting = board.pawns & own & (chess.BB_RANK_7 if board.turn else chess.BB_RANK_2)
    movers = _line_blockers(board, king, board.turn) | promoting
    ep = chess.BB_SQUARES[board.ep_square] if board.ep_square is not None else 0
    pawns = board.pawns & own & ~movers
    pawn_checks = chess.BB_PAWN_ATTACKS[not board.turn][king] & ~ep  # en passant: below
    plain = _direct_checks(board, king, movers) + _pawn_moves(board, pawns, pawn_checks)
    found = [move for move in plain if not board.is_into_check(move)]
    others = list(board.generate_pseudo_legal_moves(movers, chess.BB_ALL)) if movers else []
    if ep:
        others += board.generate_pseudo_legal_ep(pawns, chess.BB_ALL)
    backrank = chess.BB_RANK_1 if board.turn else chess.BB_RANK_8
    if board.castling_rights & backrank and chess.BB_SQUARES[king] & _CASTLING_CHECKS[board.turn]:
        others += board.generate_castling_moves(board.kings & own & ~movers, chess.BB_ALL)
    found += [m for m in others if _gives_check(board, m, king) and not board.is_into_check(m)]
    return found


def _direct_checks(
    board: chess.Board, king: chess.Square, movers: chess.Bitboard
) -> list[chess.Move]:
    """The pseudo-legal moves of the side to move's knights, bishops, rooks and queens that are
    not `movers` and land on a square from which their type attacks `king` along today's
    lines."""
    own = board.occupied_co[board.turn]
    occupied, free = board.occupied, ~own
    pieces = own & ~movers
    found: list[chess.Move] = []
    knight_checks = chess.BB_KNIGHT_ATTACKS[king] & free
    if knight_checks:
        for square in chess.scan_reversed(board.knights & pieces):
            for to in chess.scan_reversed(chess.BB_KNIGHT_ATTACKS[square] & knight_checks):
                found.append(chess.Move(square, to))
    diagonal_checks = _diagonal(king, occupied) & free
    straight_checks = _straight(king, occupied) & free
    sliders = (  # the pieces, their checking squares, their reach; moving along diagonals, lines
        (board.bishops, diagonal_checks, _EMPTY_DIAGONAL, True, False),
        (board.rooks, straight_checks, _EMPTY_STRAIGHT, False, True),
        (board.queens, diagonal_checks | straight_checks, _EMPTY_QUEEN, True, True),
    )
    for kind, checks, reach, diagonally, straight in sliders:
        if not checks:
            continue
        for square in chess.scan_reversed(kind & pieces):
            if not reach[square] & checks:  # not even on an empty board
                continue
            hits = _diagonal(square, occupied) if diagonally else 0
            if straight:
                hits |= _straight(square, occupied)
            for to in chess.scan_reversed(hits & checks):
                found.append(chess.Move(square, to))
    return found


def _pawn_moves(
    board: chess.Board, pawns: chess.Bitboard, targets: chess.Bitboard
) -> list[chess.Move]:
    """The pseudo-legal moves of `pawns` (none about to promote) of the side to move onto
    `targets`, en passant aside: captures of a piece there, pushes one or two squares onto an
    empty one."""
    turn = board.turn
    step = 8 if turn else -8
    enemy, empty = board.occupied_co[not turn], ~board.occupied
    double = chess.BB_RANK_4 if turn else chess.BB_RANK_5
    targets &= ~(chess.BB_RANK_1 | chess.BB_RANK_2 if turn else chess.BB_RANK_7 | chess.BB_RANK_8)
    found: list[chess.Move] = []
    if not pawns:
        return found
    for to in chess.scan_reversed(targets):
        bb = chess.BB_SQUARES[to]
        if bb & enemy:
            for origin in chess.scan_reversed(chess.BB_PAWN_ATTACKS[not turn][to] & pawns):
                found.append(chess.Move(origin, to))
        elif bb & empty:
            origin = to - step
            if chess.BB_SQUARES[origin] & pawns:
                found.append(chess.Move(origin, to))
            elif (
                bb & double
                and chess.BB_SQUARES[origin] & empty
                and chess.BB_SQUARES[origin - step] & pawns
            ):
                found.append(chess.Move(origin - step, to))
    return found


def _king_escapes(board: chess.Board, move: chess.Move) -> bool:
    """Whether, once the checking `move` (legal, not yet made) is played, the checked king can
    step to a square that no piece of the mover attacks: then `move` does not mate. Read off the
    bitboards without making the move, so that most checks skip ``_mates``'s push. Castling and
    en passant move a second piece: never answered here (False: ask the board)."""
    if board.is_castling(move) or board.is_en_passant(move):
        return False
    mover = board.turn
    king = board.king(not mover)
    assert king is not None
    origin, to = chess.BB_SQUARES[move.from_square], chess.BB_SQUARES[move.to_square]
    piece = move.promotion or board.piece_type_at(move.from_square)
    assert piece is not None
    occupied = ((board.occupied & ~origin) | to) & ~chess.BB_SQUARES[king]
    moved = _attacks(piece, mover, move.to_square, occupied)
    blocked = board.occupied_co[not mover] & ~to  # a piece taken on `to` no longer blocks
    for square in chess.scan_reversed(chess.BB_KING_ATTACKS[king] & ~blocked):
        if not moved & chess.BB_SQUARES[square] and not (
            board.attackers_mask(mover, square, occupied) & ~origin
        ):
            return True
    return False


def gives_mate(board: chess.Board, move: chess.Move) -> bool:
    """Whether the legal `move` checkmates: the one test of a mate in one (the move policy's
    rule, the greedy opponent's first choice, the facts)."""
    return board.gives_check(move) and _mates(board, move)


def _mates(board: chess.Board, move: chess.Move) -> bool:
    if _king_escapes(board, move):
        return False
    board.push(move)
    try:
        return not any(board.generate_legal_moves())
    finally:
        board.pop()


def enemy_checks(board: chess.Board) -> np.ndarray:
    """uint8 [64]: per destination square, MATE if a legal move of the opponent onto it would
    checkmate the side to move were it the opponent's turn now, CHECK if one would give check,
    else NO_CHECK. All NO_CHECK while the side to move is in check (the threat is already
    there, and every move answers it) or has no king."""
    out = np.zeros(64, dtype=np.uint8)
    if board.king(board.turn) is None or board.is_check():
        return out
    board.push(chess.Move.null())
    try:
        for move in checking_moves(board):
            if out[move.to_square] != MATE:
                out[move.to_square] = MATE if _mates(board, move) else CHECK
    finally:
        board.pop()
    return out


def next_check(board: chess.Board) -> int:
    """After a move (the opponent to play, `board` as it stands): what the mover threatens to do
    to the opponent's king were the opponent to pass — MATE if the mover could then checkmate,
    CHECK if they could give check, else NO_CHECK (the ``next_check`` fact: a mating threat, the
    attacker's side of ``reply_check``). NO_CHECK after a move that checks: the opponent must
    answer it, so there is no pass to assume."""
    if board.is_check():
        return NO_CHECK
    turn, ep_square = board.turn, board.ep_square  # a null move, without push's bookkeeping:
    board.turn, board.ep_square = not turn, None  # the moves tried on top are pushed and popped
    try:
        return reply_check(board)
    finally:
        board.turn, board.ep_square = turn, ep_square


def reply_check(board: chess.Board) -> int:
    """After a move (the opponent to play, `board` as it stands): MATE if the opponent can
    checkmate at once, CHECK if they can give check, else NO_CHECK (the ``reply_check`` fact:
    what a move lets the opponent do to the mover's king)."""
    found = NO_CHECK
    for move in checking_moves(board):
        if _mates(board, move):
            return MATE
        found = CHECK
    return found

"""What a chess player sees at a glance, computed once per position for the network.

Why: a transformer that reads only piece tokens must discover from samples which squares each
piece attacks, whether a move checks, whether its destination is defended. On two CPU cores it
never sees enough samples to learn that well (docs/FORMAT.md §4). Handed these facts as
inputs, the same network reached far more of the dev puzzles in the same steps
(docs/studies/table-192k-facts.md).
They are hand-computed with python-chess here — the one place, for training and inference
alike — and passed to the model as two extra ONNX inputs; the network only embeds them.

Every fact is a small integer (a count clamped to ``size - 1``, a piece type, a flag) and is
stated from the side to move: "own" is the mover, "enemy" the opponent. Square facts are
indexed by the real square (a1 = 0 … h8 = 63); a model with the side-to-move view turns them
over with the board (engine/model/mirror.py), and because they are already relative to the mover
no channel changes meaning. Move facts are about one move and do not depend on the view.

The channel order below is part of the model file format: append, never reorder. A model
names the facts it reads in ``config.features``; the graph picks those channels, so a file
keeps working when later versions append channels.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import chess
import numpy as np

from oneply.engine.facts.checks import enemy_checks, next_check, reply_check
from oneply.engine.facts.exchange import (
    Standing,
    en_prise,
    exposed,
    move_exchange,
    occupancy,
    opened_by,
    safe_moves,
    threat,
)
from oneply.engine.facts.structure import king_flights, passer
from oneply.engine.facts.tokenizer import SQUARE_TOKEN


@dataclass(frozen=True)
class Fact:
    """One input channel: its name, how many values it takes (0 … size − 1) and its meaning."""

    name: str
    size: int
    meaning: str


#: per board square (input ``square_facts`` [B, 64, len(SQUARE_FACTS)])
SQUARE_FACTS: tuple[Fact, ...] = (
    Fact("own_attackers", 4, "pieces of the side to move that attack the square, up to 3"),
    Fact("enemy_attackers", 4, "pieces of the opponent that attack the square, up to 3"),
    Fact("pinned", 3, "0 no pin; 1 an own piece pinned to its king; 2 an enemy piece pinned"),
    Fact("en_prise", 3, "0 no; 1 an own piece the opponent wins material by taking; 2 an enemy"),
    Fact(
        "enemy_check",
        3,
        "were it the opponent's turn: 0 no move onto the square checks, 1 one checks, 2 one mates",
    ),
    Fact(
        "safe_moves",
        5,
        "for a knight, bishop, rook or queen of either side: 1 + the squares it could move to "
        "without losing material by static exchange, up to 3 (1: trapped); 0 elsewhere",
    ),
    Fact(
        "king_flights",
        5,
        "on each king's square: 1 + the squares next to it that it could step to (not its own "
        "pieces', not attacked once it has left), up to 3 (1: no room); 0 elsewhere",
    ),
    Fact(
        "passed",
        4,
        "on a passed pawn of either side: 1 something stands on its path, 2 its path to "
        "promotion is empty, 3 that and the enemy king is outside its square; 0 elsewhere",
    ),
)
#: per candidate move (input ``move_facts`` [B, N, len(MOVE_FACTS)]); padded slots are 0
MOVE_FACTS: tuple[Fact, ...] = (
    Fact("captured", 6, "piece type taken: 0 none, 1 pawn (en passant too) … 5 queen"),
    Fact("check", 2, "1 if the move gives check"),
    Fact("dest_attackers", 4, "enemy pieces attacking the destination after the move, up to 3"),
    Fact("dest_defenders", 4, "own pieces defending the destination after the move, up to 3"),
    Fact(
        "exchange",
        7,
        "the move's static exchange, pawns: 0 ≤ −5, 1 −4…−2, 2 −1, 3 even, 4 +1, 5 +2…+4, 6 ≥ +5",
    ),
    Fact(
        "threat",
        6,
        "the most the opponent then nets by a capture on another square (static exchange), "
        "pawns: 0 nothing, 1 one, 2 two, 3 three or four, 4 five or six, 5 seven or more",
    ),
    Fact(
        "threatens",
        6,
        "the most the mover would then net by capturing a piece the move attacks — with the "
        "moved piece, or anew through a line it opened — were the opponent to pass (static "
        "exchange), pawns in the buckets of ``threat``",
    ),
    Fact(
        "targets",
        3,
        "on how many of those pieces the mover would then win material: 0, 1, 2 or more (a "
        "double attack: the opponent can save one)",
    ),
    Fact(
        "reply_check",
        3,
        "what the move lets the opponent do to the mover's king at once: 0 nothing, 1 give "
        "check, 2 mate",
    ),
    Fact(
        "next_check",
        3,
        "what the move threatens to do to the opponent's king next, were the opponent to pass: "
        "0 nothing (or the move checks), 1 give check, 2 mate",
    ),
)
SQUARE_NAMES = tuple(f.name for f in SQUARE_FACTS)
MOVE_NAMES = tuple(f.name for f in MOVE_FACTS)
#: channel index of each square fact by name: writers go by name, never by position
SQ: dict[str, int] = {name: i for i, name in enumerate(SQUARE_NAMES)}
#: groups the sample-efficiency table switches on one at a time (training/lab/ablation_variants.py)
GROUPS: dict[str, tuple[str, ...]] = {
    "attacks": ("own_attackers", "enemy_attackers"),
    "pins": ("pinned",),
    "move_facts": ("captured", "check", "dest_attackers", "dest_defenders"),
    "exchange": ("en_prise", "exchange"),  # static exchange (engine/facts/exchange.py)
    "threats": ("threat",),  # what a move leaves en prise elsewhere (engine/facts/exchange.py)
    "checks": ("enemy_check",),  # where the opponent could check or mate (engine/facts/checks.py)
    "forks": ("threatens", "targets"),  # what a move attacks next: double attacks
    "replies": ("reply_check",),  # whether the opponent can then check or mate (checks.py)
    "mate_threats": ("next_check",),  # whether the mover then threatens mate (checks.py)
    "mobility": ("safe_moves",),  # trapped pieces: safe squares per piece (exchange.py)
    "kings": ("king_flights",),  # how boxed in each king is (engine/facts/structure.py)
    "passers": ("passed",),  # passed pawns and the rule of the square (engine/facts/structure.py)
}
ALL_FACTS: tuple[str, ...] = SQUARE_NAMES + MOVE_NAMES


def _declared(groups: Sequence[str]) -> tuple[str, ...]:
    """The facts of `groups` in declaration order (square facts first: a model config's)."""
    wanted = {name for group in groups for name in GROUPS[group]}
    return tuple(name for name in ALL_FACTS if name in wanted)


#: the groups every model with facts reads at the least: what a player sees first (attacks,
#: pins, what a move takes and where it lands); the sample-efficiency table's base rows
#: (training/lab/ablation_variants.py) add one group at a time to these
BASE_GROUPS: tuple[str, ...] = ("attacks", "pins", "move_facts")
#: the groups every preset reads; a group joins them when a paired run says it helps
#: (docs/studies/README.md lists the studies that adopted each)
ADOPTED_GROUPS: tuple[str, ...] = (
    *BASE_GROUPS,
    *("exchange", "threats", "checks", "forks", "replies"),
    *("mate_threats", "mobility", "kings", "passers"),
)
ADOPTED_FACTS: tuple[str, ...] = _declared(ADOPTED_GROUPS)

#: board token i (0 … 63, rank 8 first) shows this square: square facts in token order
TOKEN_SQUARE = np.argsort(SQUARE_TOKEN).astype(np.int64)
_BIT_OF_SQUARE = np.arange(64, dtype=np.uint64)


class FeatureError(ValueError):
    """A model config that names a fact this oneply does not compute."""


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names as a tuple, in declaration order; unknown names are an error."""
    unknown = sorted(set(names) - set(ALL_FACTS))
    if unknown:
        raise FeatureError(
            f"unknown input features {unknown}; this oneply computes {list(ALL_FACTS)}. "
            "Upgrade oneply to read this model."
        )
    return tuple(name for name in ALL_FACTS if name in set(names))


def group_facts(groups: Sequence[str]) -> tuple[str, ...]:
    """The fact names of these GROUPS (``train fit --facts``), in declaration order."""
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        raise FeatureError(f"unknown fact groups {unknown}; the groups are {list(GROUPS)}")
    return _declared(groups)


def channels(names: Sequence[str], declared: Sequence[Fact]) -> list[int]:
    """Indices of `names` among the declared channels (the graph picks these)."""
    order = [f.name for f in declared]
    return [order.index(n) for n in check_names(names) if n in order]


def table_offsets(names: Sequence[str], declared: Sequence[Fact]) -> tuple[np.ndarray, int]:
    """Row offset of each picked channel in its embedding table, and the table's rows.

    One table per kind serves all its channels: channel c's value v is row offset[c] + v.
    """
    sizes = [declared[i].size for i in channels(names, declared)]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return offsets, int(sum(sizes))


#: what callers pass for "which facts": True every fact, False none, or the names a model reads
Wanted = Sequence[str] | bool


def fact_names(facts: Wanted) -> tuple[str, ...]:
    """The names a caller asks for (declaration order)."""
    if isinstance(facts, bool):
        return ALL_FACTS if facts else ()
    return check_names(facts)


@functools.lru_cache(maxsize=32)
def _groups_read(facts: bool | tuple[str, ...]) -> frozenset[str]:
    names = set(fact_names(facts))
    return frozenset(group for group, members in GROUPS.items() if names & set(members))


def reads(facts: Wanted, group: str) -> bool:
    """Whether any channel of `group` is asked for. The static-exchange and check groups are
    the costly ones (~0.1–0.4 ms per position each): a model that does not read them is spared
    them, and sees them as 0. Asked per position, so answered from a cache for the few fact
    sets there are."""
    return group in _groups_read(facts if isinstance(facts, bool) else tuple(facts))


def _count_attacks(board: chess.Board, color: chess.Color) -> np.ndarray:
    """Per square, how many pieces of `color` attack it (python-chess attack rules)."""
    masks = [board.attacks_mask(square) for square in chess.scan_forward(board.occupied_co[color])]
    if not masks:
        return np.zeros(64, dtype=np.int64)
    bits = (np.array(masks, dtype=np.uint64)[:, None] >> _BIT_OF_SQUARE) & np.uint64(1)
    counts: np.ndarray = bits.sum(axis=0).astype(np.int64)
    return counts


def square_facts(board: chess.Board, facts: Wanted = True) -> np.ndarray:
    """uint8 [64, len(SQUARE_FACTS)] for the real squares, from the side to move (without
    the exchange group among `facts`, ``en_prise`` stays 0; without checks, ``enemy_check``;
    without mobility, ``safe_moves``; without kings, ``king_flights``; without passers,
    ``passed``)."""
    exchange = reads(facts, "exchange")
    us, them = board.turn, not board.turn
    out = np.zeros((64, len(SQUARE_FACTS)), dtype=np.uint8)
    out[:, SQ["own_attackers"]] = np.minimum(_count_attacks(board, us), 3)
    out[:, SQ["enemy_attackers"]] = np.minimum(_count_attacks(board, them), 3)
    for color, flag in ((us, 1), (them, 2)):
        for square in chess.scan_forward(board.occupied_co[color]):
            if board.is_pinned(color, square):
                out[square, SQ["pinned"]] = flag
            # attacked at all (counted above) before the swap
            attacked = out[square, SQ["enemy_attackers" if color == us else "own_attackers"]]
            if exchange and attacked and en_prise(board, square):
                out[square, SQ["en_prise"]] = flag
    if reads(facts, "checks"):
        out[:, SQ["enemy_check"]] = enemy_checks(board)
    if reads(facts, "mobility"):
        pieces = board.knights | board.bishops | board.rooks | board.queens
        for square in chess.scan_forward(pieces):
            out[square, SQ["safe_moves"]] = 1 + safe_moves(board, square)
    if reads(facts, "kings"):
        for color in chess.COLORS:
            king = board.king(color)
            if king is not None:
                out[king, SQ["king_flights"]] = 1 + king_flights(board, color)
    if reads(facts, "passers"):
        for square in chess.scan_forward(board.pawns):
            out[square, SQ["passed"]] = passer(board, square)
    return out


#: upper edges (pawns) of the ``exchange`` buckets 0 … 5; above the last: bucket 6
_EXCHANGE_EDGES = (-5, -2, -1, 0, 1, 4)
#: upper edges (pawns) of the ``threat`` buckets 0 … 4; above the last: bucket 5
_THREAT_EDGES = (0, 1, 2, 4, 6)


def _bucket(pawns: int, edges: tuple[int, ...]) -> int:
    """The first bucket whose edge is at least `pawns` (len(edges) past the last)."""
    return bisect.bisect_left(edges, pawns)


def exchange_bucket(pawns: int) -> int:
    """The ``exchange`` fact of a static exchange of `pawns` (engine/facts/exchange.py)."""
    return _bucket(pawns, _EXCHANGE_EDGES)


def threat_bucket(pawns: int) -> int:
    """The ``threat`` fact of what the opponent nets at best, `pawns` (engine/facts/exchange.py)."""
    return _bucket(pawns, _THREAT_EDGES)


def _attacked(board: chess.Board, color: chess.Color) -> chess.Bitboard:
    """The squares of `color`'s pieces that the other side attacks."""
    mask = 0
    for square in chess.scan_forward(board.occupied_co[color]):
        if board.attackers_mask(not color, square):
            mask |= chess.BB_SQUARES[square]
    return mask


def _captured(board: chess.Board, move: chess.Move) -> int:
    if board.is_en_passant(move):
        return chess.PAWN
    return board.piece_type_at(move.to_square) or 0


def _new_lines(board: chess.Board, move: chess.Move, attacked: chess.Bitboard) -> chess.Bitboard:
    """Where `move` (not yet made) can aim the mover's other pieces at what they did not attack
    before (`attacked`: the opponent's pieces under attack now): the lines it opens, for
    discovered attacks. Castling moves a second piece: every square."""
    lines = chess.BB_ALL if board.is_castling(move) else opened_by(board, move, board.turn)
    return lines & ~attacked


def _double_attack(board: chess.Board, to: chess.Square, lines: chess.Bitboard) -> tuple[int, int]:
    """After a move (the opponent to play, `board` as it stands): the ``threatens`` and
    ``targets`` facts — among the pieces the moved piece attacks and the new targets on the
    lines the move opened, what the mover's best capture would net and on how many it nets
    anything, were the opponent to pass."""
    gains = exposed(board, board.turn, among=lines | board.attacks_mask(to))
    winning = sum(1 for gain in gains if gain > 0)
    return threat_bucket(max(gains, default=0)), min(2, winning)


def move_facts(board: chess.Board, moves: Sequence[chess.Move], facts: Wanted = True) -> np.ndarray:
    """uint8 [len(moves), len(MOVE_FACTS)]: what each move takes, whether it checks, who
    attacks and defends its destination once it is played (the moved piece not counted as its
    own defender; a piece behind it on the line counts, as it would in an exchange), what the
    exchange on the destination nets, what the opponent can then win elsewhere, what the
    mover then threatens to win, whether the opponent can then check or mate and whether the
    mover then threatens mate (the last five only when their groups are among `facts`, else
    0)."""
    exchange, threats = reads(facts, "exchange"), reads(facts, "threats")
    forks, replies = reads(facts, "forks"), reads(facts, "replies")
    mates = reads(facts, "mate_threats")
    out = np.zeros((len(moves), len(MOVE_FACTS)), dtype=np.uint8)
    us = board.turn
    standing = Standing.of(board, us) if threats else None
    attacked = standing.squares if standing is not None else 0
    targets = _attacked(board, not us) if forks else 0
    before = occupancy(board)
    for row, move in enumerate(moves):
        captured = _captured(board, move)
        swap = exchange_bucket(move_exchange(board, move)) if exchange else 0
        suspects = attacked | opened_by(board, move, not us) if threats else 0
        lines = _new_lines(board, move, targets) if forks else 0
        board.push(move)
        try:
            to = move.to_square
            known = standing.after(before, board) if standing is not None else None
            threatens, double = _double_attack(board, to, lines) if forks else (0, 0)
            named = {
                "captured": captured,
                "check": board.is_check(),
                "dest_attackers": min(3, chess.popcount(board.attackers_mask(not us, to))),
                "dest_defenders": min(3, chess.popcount(board.attackers_mask(us, to))),
                "exchange": swap,
                "threat": threat_bucket(threat(board, us, to, suspects, known)) if threats else 0,
                "threatens": threatens,
                "targets": double,
                "reply_check": reply_check(board) if replies else 0,
                "next_check": next_check(board) if mates else 0,
            }
            out[row] = [named[name] for name in MOVE_NAMES]
        finally:
            board.pop()
    return out


def encode_squares(boards: Sequence[chess.Board], facts: Wanted = True) -> np.ndarray:
    """The square-facts input of a batch: int64 [B, 64, S]."""
    return np.stack([square_facts(board, facts) for board in boards]).astype(np.int64)


def encode_facts(
    boards: Sequence[chess.Board],
    moves: Sequence[Sequence[chess.Move]],
    width: int,
    facts: Wanted = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The two feature inputs of a batch: int64 [B, 64, S] and [B, width, M] (padding 0);
    channels outside `facts` may be left 0."""
    return encode_squares(boards, facts), encode_move_facts(boards, moves, width, facts)


def encode_move_facts(
    boards: Sequence[chess.Board],
    moves: Sequence[Sequence[chess.Move]],
    width: int,
    facts: Wanted = True,
) -> np.ndarray:
    """The move-facts input of a batch: int64 [B, width, M] (padding 0)."""
    per_move = np.zeros((len(boards), width, len(MOVE_FACTS)), dtype=np.int64)
    for row, (board, legal) in enumerate(zip(boards, moves, strict=True)):
        per_move[row, : len(legal)] = move_facts(board, legal, facts)
    return per_move

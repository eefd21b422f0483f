"""Where a player loses: its costly moves in a match's games, sorted by the reply that punishes
them (`oneply blunders GAMES.pgn --player NAME`).

Why: the suite says how much a model scores; this says what kind of move costs it the points,
which is what decides the next input to give the network (the `threats` facts came from such
a profile: docs/studies/threats-facts.md).

Method: Stockfish scores the position before and after each of the player's moves (a fixed
depth, one line). A move that lowers the player's expected score (Lichess's formula,
engine/model/values.py) by ``--drop`` or more is *costly*, and goes in the first class that fits:

1. ``mate``: Stockfish now sees a forced mate against the player;
2. ``moved_piece``: the move's own static exchange nets −2 pawns or worse
   (engine/facts/exchange.py);
3. ``missed_capture``: Stockfish's move was a capture netting 2 pawns or more, the played move
   nets less;
4. ``left_en_prise``: Stockfish's reply captures on another square and nets 2 pawns or more;
5. ``moved_piece_lost``: the reply captures the moved piece and nets 2 or more although its
   static exchange said otherwise (a pin, an overloaded defender);
6. ``check``: the reply gives check;
7. ``other``: every other tactic and positional loss.

Decided positions barely move the expected score, so a lost game's late moves rarely count.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine
import chess.pgn
from tqdm import tqdm

from oneply.engine.errors import CommandError
from oneply.engine.facts.exchange import move_exchange
from oneply.engine.model.values import score_to_win
from oneply.engine.stockfish import LOOKUP_TEXT, close_stockfish, open_stockfish

#: the classes, in the order a costly move is tried against them, with what the table prints
KINDS: dict[str, str] = {
    "mate": "allows a forced mate",
    "moved_piece": "moves a piece where the exchange loses it",
    "missed_capture": "misses a capture that wins material",
    "left_en_prise": "leaves another piece en prise",
    "moved_piece_lost": "the moved piece is lost all the same",
    "check": "allows a checking tactic",
    "other": "other tactics and positional",
}
#: "wins material" / "loses material": two pawns or more by static exchange
MATERIAL = 2


@dataclass
class Profile:
    """A player's moves over some games and how many of each kind were costly."""

    games: int = 0
    moves: int = 0
    costly: Counter[str] = field(default_factory=Counter)

    def per_game(self, kind: str) -> float:
        return self.costly[kind] / self.games if self.games else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "games": self.games,
            "moves": self.moves,
            "costly": {kind: self.costly[kind] for kind in KINDS},
            "costly_per_game": {kind: round(self.per_game(kind), 3) for kind in KINDS},
        }


@dataclass(frozen=True)
class Verdict:
    """What Stockfish says of one position: the expected score of the side to move (1.0: it
    mates by force), and the move it would play."""

    win: float
    best: chess.Move | None


def judge(engine: chess.engine.SimpleEngine, board: chess.Board, depth: int) -> Verdict:
    info = engine.analyse(board, chess.engine.Limit(depth=depth))
    score = info["score"].pov(board.turn)
    pv = info.get("pv")
    return Verdict(score_to_win(score), pv[0] if pv else None)


def _wins_material(board: chess.Board, move: chess.Move | None) -> bool:
    return move is not None and board.is_capture(move) and move_exchange(board, move) >= MATERIAL


def classify(
    board: chess.Board, move: chess.Move, played: chess.Board, before: Verdict, after: Verdict
) -> str:
    """The class of a costly `move` from `board` (before it; `played` is after it), given
    Stockfish's verdicts on the two positions (the latter from the opponent's side)."""
    if after.win >= 1.0:  # the opponent mates by force
        return "mate"
    if move_exchange(board, move) <= -MATERIAL:
        return "moved_piece"
    if _wins_material(board, before.best) and move_exchange(board, move) < MATERIAL:
        return "missed_capture"
    reply = after.best
    if _wins_material(played, reply):
        assert reply is not None
        return "moved_piece_lost" if reply.to_square == move.to_square else "left_en_prise"
    if reply is not None and played.gives_check(reply):
        return "check"
    return "other"


def player_moves(
    game: chess.pgn.Game, color: chess.Color, max_moves: int
) -> Iterator[tuple[chess.Board, chess.Move]]:
    """(position, move) for each of `color`'s moves up to full move `max_moves`, the game
    not yet over after it (a move that ends the game costs nothing to judge)."""
    board = game.board()
    for move in game.mainline_moves():
        if board.turn == color and board.fullmove_number <= max_moves:
            after = board.copy(stack=False)
            after.push(move)
            if not after.is_game_over():
                yield board.copy(stack=False), move
        board.push(move)


def profile_game(
    engine: chess.engine.SimpleEngine,
    game: chess.pgn.Game,
    color: chess.Color,
    depth: int,
    drop: float,
    max_moves: int,
) -> Profile:
    result = Profile(games=1)
    for board, move in player_moves(game, color, max_moves):
        before = judge(engine, board, depth)
        board_after = board.copy(stack=False)
        board_after.push(move)
        after = judge(engine, board_after, depth)
        result.moves += 1
        if before.win - (1.0 - after.win) >= drop:
            result.costly[classify(board, move, board_after, before, after)] += 1
    return result


def games_of(
    paths: list[str], player: str, opponent: str | None
) -> list[tuple[chess.pgn.Game, chess.Color]]:
    """The games `player` played (exact name in White/Black), against a name containing
    `opponent` when given, with the player's colour."""
    found: list[tuple[chess.pgn.Game, chess.Color]] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                white, black = game.headers.get("White", ""), game.headers.get("Black", "")
                for color, me, other in ((chess.WHITE, white, black), (chess.BLACK, black, white)):
                    if me == player and (opponent is None or opponent in other):
                        found.append((game, color))
    return found


def profile(
    games: list[tuple[chess.pgn.Game, chess.Color]],
    depth: int = 9,
    drop: float = 0.25,
    max_moves: int = 60,
    stockfish: str | None = None,
    progress: bool = True,
) -> Profile:
    total = Profile()
    engine = open_stockfish(stockfish, {"Threads": 1, "Hash": 64})
    try:
        for game, color in tqdm(games, desc="blunders", unit="game", disable=not progress):
            one = profile_game(engine, game, color, depth, drop, max_moves)
            total.games += one.games
            total.moves += one.moves
            total.costly.update(one.costly)
    finally:
        close_stockfish(engine)
    return total


def table(result: Profile, player: str) -> str:
    costly = sum(result.costly.values())
    lines = [
        f"{player}: {result.games} games, {result.moves} moves judged, {costly} costly "
        f"({costly / result.games if result.games else 0:.2f} per game)",
        "",
        "| class | costly moves | per game |",
        "|---|---:|---:|",
    ]
    for kind, meaning in KINDS.items():
        lines.append(
            f"| {meaning} (`{kind}`) | {result.costly[kind]} | {result.per_game(kind):.2f} |"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pgn", nargs="+", help="PGN files (e.g. `oneply strength --pgn`)")
    parser.add_argument("--player", required=True, help="the player's name in White/Black")
    parser.add_argument("--opponent", help="only games against a name containing this")
    parser.add_argument("--depth", type=int, default=9, help="Stockfish depth (default 9)")
    parser.add_argument(
        "--drop",
        type=float,
        default=0.25,
        help="a move is costly when it lowers the expected score by this much (default 0.25)",
    )
    parser.add_argument(
        "--max-moves", type=int, default=60, help="judge moves up to this full move (default 60)"
    )
    parser.add_argument("--stockfish", help=f"Stockfish (default: {LOOKUP_TEXT})")
    parser.add_argument("--json", metavar="FILE", help="also write the profile as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    for path in args.pgn:
        if not Path(path).is_file():
            raise CommandError(f"no such PGN file: {path}")
    if not 0.0 < args.drop < 1.0:
        raise CommandError(f"--drop must lie between 0 and 1 (expected score), not {args.drop}")
    games = games_of(args.pgn, args.player, args.opponent)
    if not games:
        against = f" against {args.opponent!r}" if args.opponent else ""
        raise CommandError(
            f"no game of {args.player!r}{against} in {', '.join(args.pgn)}: "
            "--player must be the exact name in the PGN's White or Black tag"
        )
    result = profile(games, args.depth, args.drop, args.max_moves, args.stockfish, not args.quiet)
    print(table(result, args.player))
    if args.json:
        settings = {"depth": args.depth, "drop": args.drop, "max_moves": args.max_moves}
        payload = {"player": args.player, "opponent": args.opponent, **settings}
        Path(args.json).write_text(json.dumps({**payload, **result.to_json()}, indent=2) + "\n")
    return 0

"""Built-in opponents: weak, reproducible UCI engines below Stockfish's weakest level.

    python -m oneply.arena.opponents random|greedy [--seed S]

* ``random`` plays a uniformly random legal move.
* ``greedy`` plays a mate in one if there is one, else the most valuable capture (the
  cheapest capturer on ties), else a random legal move: a one-ply capture-grabber, the first
  bar a chess model must clear.

Why the moves are a pure function of (seed, game so far): the match runner reuses an engine
process for many games and runs games on several slots at once, so a generator seeded once
per process would make a game depend on which slot played it. Hashing the seed with the
position's root and move list makes the same seed and the same game history give the same
move, whatever ran before.

Every named opponent (these, and the real Stockfish with UCI options: ``sf-skill0``,
``sf-elo1350``, ...) is in the registry, arena/registry.py, whose ``builtin_spec`` turns a
name into an :class:`~oneply.arena.settings.EngineSpec` the match runner drives.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
from collections.abc import Callable
from typing import TextIO

import chess

from oneply.engine.facts.checks import gives_mate

#: capture values (a king is never captured)
PIECE_VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


# --------------------------------------------------------------------------- move choice


def game_rng(seed: int, board: chess.Board) -> random.Random:
    """A generator determined by the seed and the whole game (root position and moves)."""
    root = board.root().fen()
    moves = " ".join(m.uci() for m in board.move_stack)
    digest = hashlib.sha256(f"{seed}|{root}|{moves}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def random_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """A uniformly random legal move (in python-chess's generation order, so reproducible)."""
    return rng.choice(list(board.legal_moves))


def captured_value(board: chess.Board, move: chess.Move) -> int:
    """Value of the piece a move captures (en passant takes a pawn); 0 for a quiet move."""
    if board.is_en_passant(move):
        return PIECE_VALUE[chess.PAWN]
    victim = board.piece_type_at(move.to_square)
    return PIECE_VALUE.get(victim, 0) if victim is not None else 0


def greedy_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """Mate in one, else the most valuable capture (cheapest capturer on ties), else random."""
    legal = list(board.legal_moves)
    mates = [m for m in legal if gives_mate(board, m)]
    if mates:
        return rng.choice(mates)
    captures = [(captured_value(board, m), m) for m in legal if board.is_capture(m)]
    if not captures:
        return rng.choice(legal)
    best = max(value for value, _ in captures)
    best_moves = [m for value, m in captures if value == best]
    cheapest = min(_mover_value(board, m) for m in best_moves)
    return rng.choice([m for m in best_moves if _mover_value(board, m) == cheapest])


def _mover_value(board: chess.Board, move: chess.Move) -> int:
    """Value of the capturing piece (the king counts as the most valuable capturer)."""
    piece = board.piece_type_at(move.from_square)
    return PIECE_VALUE.get(piece, 100) if piece is not None else 100


Chooser = Callable[[chess.Board, random.Random], chess.Move]

CHOOSERS: dict[str, Chooser] = {"random": random_move, "greedy": greedy_move}


def with_noise(choose: Chooser, noise: float) -> Chooser:
    """A weaker engine: a uniformly random move with probability ``noise``, else ``choose``.
    Noisy engines bridge the gaps between random, greedy and Stockfish when the anchors are
    measured (neighbours on the scale must score between 0% and 100% against each other)."""
    if noise <= 0:
        return choose

    def noisy(board: chess.Board, rng: random.Random) -> chess.Move:
        return random_move(board, rng) if rng.random() < noise else choose(board, rng)

    return noisy


class StockfishChooser:
    """Stockfish at a tiny node budget inside this engine (for the ``sf-noiseP`` bridges)."""

    def __init__(self, nodes: int, path: str = "") -> None:
        import chess.engine

        from oneply.engine.stockfish import open_stockfish

        self.limit = chess.engine.Limit(nodes=nodes)
        self.engine = open_stockfish(path, {"Threads": 1, "Hash": 1})

    def __call__(self, board: chess.Board, rng: random.Random) -> chess.Move:
        move = self.engine.play(board, self.limit).move
        return move if move is not None else random_move(board, rng)

    def close(self) -> None:
        from oneply.engine.stockfish import close_stockfish

        close_stockfish(self.engine)


# --------------------------------------------------------------------------- UCI loop


def parse_position(tokens: list[str]) -> chess.Board:
    """``position startpos|fen FEN [moves M...]`` (tokens after the word ``position``)."""
    if not tokens:
        raise ValueError("empty position command")
    if tokens[0] == "startpos":
        board, rest = chess.Board(), tokens[1:]
    elif tokens[0] == "fen":
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        board, rest = chess.Board(" ".join(tokens[1:end])), tokens[end:]
    else:
        raise ValueError(f"bad position command: {' '.join(tokens)}")
    for uci in rest[1:] if rest and rest[0] == "moves" else []:
        board.push_uci(uci)
    return board


def uci_loop(
    name: str, choose: Chooser, seed: int, inp: TextIO = sys.stdin, out: TextIO = sys.stdout
) -> None:
    """Speak enough UCI for GUIs and the match runner: one move per ``go``, no search."""
    board = chess.Board()

    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    for line in inp:
        tokens = line.split()
        if not tokens:
            continue
        command = tokens[0]
        if command == "uci":
            say(f"id name {name}")
            say("id author oneply")
            say(f"option name Seed type spin default {seed} min 0 max 2147483647")
            say("uciok")
        elif command == "isready":
            say("readyok")
        elif command == "setoption":
            seed = _seed_option(tokens, seed)
        elif command == "position":
            try:
                board = parse_position(tokens[1:])
            except ValueError as exc:
                say(f"info string {exc}")
        elif command == "go":
            legal = board.legal_moves.count()
            move = choose(board, game_rng(seed, board)).uci() if legal else "0000"
            say(f"bestmove {move}")
        elif command == "quit":
            return


def _seed_option(tokens: list[str], seed: int) -> int:
    """``setoption name Seed value N`` sets the seed; other options are ignored."""
    match = re.fullmatch(r"setoption name (\S+) value (\S+)", " ".join(tokens))
    if match and match.group(1).lower() == "seed" and match.group(2).isdigit():
        return int(match.group(2))
    return seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=[*sorted(CHOOSERS), "sf"])
    parser.add_argument("--seed", type=int, default=1, help="move choice seed (default 1)")
    parser.add_argument(
        "--noise", type=float, default=0.0, help="share of uniformly random moves (default 0)"
    )
    parser.add_argument("--nodes", type=int, default=1, help="sf: Stockfish nodes per move (1)")
    parser.add_argument("--stockfish", default="", help="sf: Stockfish binary")
    args = parser.parse_args(argv)
    if not 0.0 <= args.noise <= 1.0:
        parser.error("--noise must lie in [0, 1]")
    sf = StockfishChooser(args.nodes, args.stockfish) if args.kind == "sf" else None
    base: Chooser = sf if sf is not None else CHOOSERS[args.kind]
    name = f"oneply-{args.kind}" + (f"-noise{round(100 * args.noise)}" if args.noise else "")
    try:
        uci_loop(name, with_noise(base, args.noise), args.seed)
    finally:
        if sf is not None:
            sf.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

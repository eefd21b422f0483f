"""`oneply analyse FEN`: every legal move with the model's expected win, for people and scripts."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import chess

from oneply.engine.errors import CommandError
from oneply.engine.inference import MoveScore, Scorer
from oneply.engine.model_file import ModelFileError, add_model_argument
from oneply.engine.policy import MovePolicy
from oneply.engine.tokenizer import TokenizerError, board_from
from oneply.engine.values import win_to_cp

BAR_WIDTH = 24


class IllegalMoveError(ValueError):
    """A `--moves` entry that is not a legal move where it is played."""


BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(win: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of win·width cells, in eighths of a cell."""
    eighths = round(min(max(win, 0.0), 1.0) * width * 8)
    return ("█" * (eighths // 8) + (BLOCKS[eighths % 8] if eighths % 8 else "")).ljust(width)


def position_from(fen_words: list[str], moves: list[str]) -> chess.Board:
    """The board after `moves` from a FEN (start position when empty); errors are clear."""
    board = board_from(" ".join(fen_words)) if fen_words else chess.Board()
    for uci in moves:
        try:
            board.push_uci(uci)
        except ValueError:
            raise IllegalMoveError(
                f"illegal move {uci} in position {board.fen()}: give --moves in UCI notation "
                "(e2e4, e7e8q), each legal after the ones before it"
            ) from None
    return board


def report(
    board: chess.Board, scores: list[MoveScore], scorer: Scorer, ms: float
) -> dict[str, Any]:
    policy = MovePolicy()
    try:
        decision = policy.choose(board, scores) if scores else None
    finally:
        policy.close()  # the mate fallback may have started Stockfish: don't leave it running
    return {
        "fen": board.fen(),
        "model": str(scorer.path),
        "model_description": scorer.info.describe(),
        "time_ms": round(ms, 2),
        "moves": [
            {
                "uci": s.move.uci(),
                "san": board.san(s.move),
                "win": round(s.win, 5),
                "cp": win_to_cp(s.win),
            }
            for s in scores
        ],
        "policy": None if decision is None else {"uci": decision.move.uci(), "rule": decision.rule},
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"position  {result['fen']}")
    print(f"model     {result['model_description']}")
    print(f"time      {result['time_ms']:.1f} ms for {len(result['moves'])} moves (one pass)")
    if result["policy"]:
        print(f"plays     {result['policy']['uci']} (rule: {result['policy']['rule']})")
    print()
    print(f"{'#':>3}  {'move':<6} {'san':<8} {'win %':>6} {'cp':>6}  ")
    for rank, move in enumerate(result["moves"], start=1):
        print(
            f"{rank:>3}  {move['uci']:<6} {move['san']:<8} {100 * move['win']:>6.1f} "
            f"{move['cp']:>+6}  {bar(move['win'])}"
        )
    if not result["moves"]:
        print("  (no legal moves: the game is over)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fen", nargs="*", help="position as FEN (default: the start position)")
    parser.add_argument("--moves", nargs="+", default=[], help="UCI moves played from the FEN")
    add_model_argument(parser)
    parser.add_argument("--threads", type=int, default=None, help="inference threads")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    try:
        board = position_from(args.fen, args.moves)
        scorer = Scorer(args.model, threads=args.threads)
    except (TokenizerError, IllegalMoveError, ModelFileError) as error:
        raise CommandError(f"oneply analyse: {error}", exit_code=2) from None
    if not scorer.info.trained:
        print(f"warning: {scorer.info.describe()}", file=sys.stderr)
    start = time.perf_counter()
    scores = scorer.score(board)
    result = report(board, scores, scorer, (time.perf_counter() - start) * 1000)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0

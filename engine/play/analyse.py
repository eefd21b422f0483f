"""`oneply analyse FEN`: every legal move with the model's expected win, for people and scripts.

With `--search N` the look-ahead (engine/play/search.py) runs N nodes as well, and its view —
best move, score, principal variation, nodes, each move's searched value and visits — is
shown beside the one-pass view; the move policy chooses from each view the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import chess

from oneply.engine.errors import CommandError
from oneply.engine.facts.tokenizer import TokenizerError, board_from
from oneply.engine.model.model_file import ModelFileError, add_model_argument
from oneply.engine.model.values import win_to_cp
from oneply.engine.play.inference import MoveScore, Scorer
from oneply.engine.play.policy import MovePolicy
from oneply.engine.play.search import Info, Limits, TreeSearch

BAR_WIDTH = 24
#: `--search N` at most: minutes a position at the measured speeds
MAX_SEARCH_NODES = 1_000_000


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


def policy_choice(board: chess.Board, scores: list[MoveScore]) -> dict[str, str] | None:
    """The move policy's move among `scores` (one pass or searched) and the rule that chose."""
    if not scores:
        return None
    policy = MovePolicy()
    try:
        decision = policy.choose(board, scores)
    finally:
        policy.close()  # the mate fallback may have started Stockfish: don't leave it running
    return {"uci": decision.move.uci(), "rule": decision.rule}


def san_line(board: chess.Board, moves: list[chess.Move]) -> str:
    """`moves` from `board` in SAN with move numbers (1. e4 e5 2. Nf3)."""
    return board.variation_san(moves) if moves else ""


def search_report(board: chess.Board, scorer: Scorer, nodes: int) -> dict[str, Any] | None:
    """The tree's view after `nodes` nodes (None when the game is over)."""
    if not any(board.legal_moves):
        return None
    tree = TreeSearch(scorer)
    info, ranked = tree.rank(board, Limits(nodes=nodes))
    root = tree.root
    assert root is not None
    visits = {move: int(v) for move, v in zip(root.moves, root.visits, strict=True)}
    return {
        "node_limit": nodes,
        "nodes": info.nodes,
        "depth": info.depth,
        "seldepth": info.seldepth,
        "time_ms": round(info.seconds * 1000, 2),
        "nps": info.nps,
        "best": info.pv[0].uci(),
        "win": round(info.value, 5),
        "score": score_text(info),
        "pv": [m.uci() for m in info.pv],
        "pv_san": san_line(board, info.pv),
        "policy": policy_choice(board, ranked),
        "moves": [
            {"uci": s.move.uci(), "win": round(s.win, 5), "visits": visits[s.move]} for s in ranked
        ],
    }


def score_text(info: Info) -> str:
    """UCI's score words for the search's result: `mate N` or `cp N`."""
    return f"mate {info.mate}" if info.mate is not None else f"cp {win_to_cp(info.value)}"


def report(
    board: chess.Board, scores: list[MoveScore], scorer: Scorer, ms: float
) -> dict[str, Any]:
    """The one pass's view. A bc model's `win` is the policy's probability of the move
    (`score` says which: "win" or "policy"), and it has no centipawns (`cp` is None)."""
    policy = scorer.predictor == "bc"
    return {
        "fen": board.fen(),
        "model": str(scorer.path),
        "model_description": scorer.info.describe(),
        "score": "policy" if policy else "win",
        "time_ms": round(ms, 2),
        "moves": [
            {
                "uci": s.move.uci(),
                "san": board.san(s.move),
                "win": round(s.win, 5),
                "cp": None if policy else win_to_cp(s.win),
            }
            for s in scores
        ],
        "policy": policy_choice(board, scores),
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"position  {result['fen']}")
    print(f"model     {result['model_description']}")
    print(f"time      {result['time_ms']:.1f} ms for {len(result['moves'])} moves (one pass)")
    if result["policy"]:
        print(f"plays     {result['policy']['uci']} (rule: {result['policy']['rule']})")
    searched = result.get("search")
    if searched:
        print(
            f"search    {searched['nodes']} nodes in {searched['time_ms']:.0f} ms "
            f"({searched['nps']} nps), depth {searched['depth']}, seldepth "
            f"{searched['seldepth']}"
        )
        print(
            f"  best    {searched['best']}, score {searched['score']} "
            f"(win {100 * searched['win']:.1f}%)"
        )
        print(f"  pv      {searched['pv_san']}")
        if searched["policy"]:
            policy = searched["policy"]
            print(f"  plays   {policy['uci']} (rule: {policy['rule']})")
    print()
    tree = {m["uci"]: m for m in searched["moves"]} if searched else {}
    extra = f" {'search %':>9} {'visits':>7}" if searched else ""
    policy = result.get("score") == "policy"  # bc: probabilities, no centipawns
    label = f"{'policy %':>8}" if policy else f"{'win %':>6} {'cp':>6}"
    print(f"{'#':>3}  {'move':<6} {'san':<8} {label}{extra}  ")
    for rank, move in enumerate(result["moves"], start=1):
        seen = tree.get(move["uci"])
        beside = f" {100 * seen['win']:>9.1f} {seen['visits']:>7}" if seen else ""
        value = (
            f"{100 * move['win']:>8.1f}"
            if policy
            else f"{100 * move['win']:>6.1f} {move['cp']:>+6}"
        )
        print(f"{rank:>3}  {move['uci']:<6} {move['san']:<8} {value}{beside}  {bar(move['win'])}")
    if not result["moves"]:
        print("  (no legal moves: the game is over)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fen", nargs="*", help="position as FEN (default: the start position)")
    parser.add_argument("--moves", nargs="+", default=[], help="UCI moves played from the FEN")
    add_model_argument(parser)
    parser.add_argument("--threads", type=int, default=None, help="inference threads")
    parser.add_argument(
        "--search",
        type=node_count,
        default=None,
        metavar="N",
        help="also search N nodes (look-ahead) and show the tree's view beside the one pass",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def node_count(text: str) -> int:
    """`--search N`: a whole number of nodes from 1 to MAX_SEARCH_NODES."""
    try:
        nodes = int(text)
    except ValueError:
        nodes = 0
    if not 1 <= nodes <= MAX_SEARCH_NODES:
        raise argparse.ArgumentTypeError(
            f"--search takes a number of nodes from 1 to {MAX_SEARCH_NODES}, got {text!r}"
        )
    return nodes


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
    if args.search is not None and scorer.predictor == "bc":
        print(
            "oneply analyse: --search ignored: a bc (behavioural cloning) model scores moves "
            "by policy probability, not win probability, so look-ahead is meaningless",
            file=sys.stderr,
        )
    elif args.search is not None:
        result["search"] = search_report(board, scorer, args.search)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0

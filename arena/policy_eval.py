"""Measure the move policy's rules on won positions played out against Stockfish.

    python -m oneply.arena.policy_eval --positions 60 --scorer oracle --out policy_eval.json
    python -m oneply.arena.policy_eval --scorer onnx --model models/oneply-small.onnx

1. **Won positions** (`generate_won_positions`): a weighted random line from the polyglot
   book (4–12 plies), then a handicapped middlegame: the strong side (random colour) plays
   Stockfish at 10k nodes, the weak side a random legal move. A position is kept when the
   strong side is to move and Stockfish at depth 12 gives it ≥ +500 cp, and not a mate in 3
   or less (those test nothing). Positions are cached as FENs (`--positions-file`).
2. **Play-out** (`play_out`): the side to move is the engine (a scorer + `MovePolicy`), the
   other side Stockfish at `--opponent-nodes`. A game ends at checkmate, stalemate, dead
   material, a claimable threefold or fifty-move draw, or after `--max-plies` plies.
   *Converted* = the engine mated; *moves to mate* = the engine's moves until mate, averaged
   over converted games. Opening sampling is off (`sample_moves=0`): these games start in
   the middle, and sampling is not what is measured.
3. **Scorers.** `onnx`: a oneply model file. `oracle`: a stand-in for a well-trained model,
   independent of how far training has got: every legal move is scored by
   Stockfish (MultiPV over all moves, depth 6) and its win probability is quantised to the
   centre of its 128-bin value bin, ties broken at random. Like the real model, it cannot
   tell apart moves that all "win" with p > 127/128 — exactly the situation the
   mate-consistency fallback is for.

`main()` writes JSON (and a JSON-lines log of every game) and prints a Markdown table.

Measured results are in docs/uci.md ("What the rules are worth").
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.polyglot

from oneply.arena.puzzles import read_puzzles, solve_puzzles
from oneply.arena.settings import DEFAULT_BOOK
from oneply.engine.model.model_file import add_model_argument
from oneply.engine.model.values import cp_to_win, quantise
from oneply.engine.play.books import weighted_walk
from oneply.engine.play.inference import MoveScore, MoveScorer
from oneply.engine.play.policy import MovePolicy
from oneply.engine.play.policy_config import PolicyConfig
from oneply.engine.stockfish import close_stockfish, multipv_scores, open_stockfish

MATE_CP = 100_000

#: name → PolicyConfig overrides (sampling is always off, see the module docstring)
CONFIGS: dict[str, dict[str, Any]] = {
    "all-rules": {},
    "no-fallback": {"mate_fallback": False},
    # the fallback's threshold (all-rules: the default, 0.9): a trained model rarely scores
    # five moves above the paper's 0.99 (its training games stop once decided, at 0.9)
    "fallback-0.99": {"fallback_threshold": 0.99},
    "fallback-0.85": {"fallback_threshold": 0.85},
    "fallback-0.8": {"fallback_threshold": 0.8},
    "fallback-0.7": {"fallback_threshold": 0.7},
    "no-fallback-no-mate1": {"mate_fallback": False, "mate_in_one": False},
    "no-fallback-no-stalemate": {"mate_fallback": False, "stalemate_as_draw": False},
    "nothing": {
        "mate_fallback": False,
        "mate_in_one": False,
        "stalemate_as_draw": False,
        "repetition_damping": False,
    },
}


# --- won positions ----------------------------------------------------------------------------


def _book_line(board: chess.Board, rng: random.Random, plies: int) -> None:
    try:
        with chess.polyglot.open_reader(DEFAULT_BOOK) as book:
            weighted_walk(board, book, rng, plies)
    except FileNotFoundError:
        for _ in range(plies):
            board.push(rng.choice(list(board.legal_moves)))


def _white_cp(info: chess.engine.InfoDict) -> int:
    return info["score"].white().score(mate_score=MATE_CP)


def _candidate(sf: chess.engine.SimpleEngine, rng: random.Random, min_cp: int) -> str | None:
    """One handicapped game; the first position clearly won for the strong side, or None."""
    board = chess.Board()
    _book_line(board, rng, rng.randint(4, 12))
    strong = rng.choice([chess.WHITE, chess.BLACK])
    for _ in range(40):
        if board.is_game_over():
            return None
        if board.turn == strong:
            cp = _white_cp(sf.analyse(board, chess.engine.Limit(depth=8)))
            cp = cp if strong == chess.WHITE else -cp
            if cp >= min_cp:
                info = sf.analyse(board, chess.engine.Limit(depth=12))
                score = info["score"].pov(strong)
                mate = score.mate()
                if score.score(mate_score=MATE_CP) >= min_cp and not (mate and mate <= 3):
                    return board.fen()
            move = sf.play(board, chess.engine.Limit(nodes=10_000)).move
            if move is None:  # the loop stops at game over, so this is Stockfish misbehaving
                raise chess.engine.EngineError(f"Stockfish found no move in {board.fen()}")
            board.push(move)
        else:
            board.push(rng.choice(list(board.legal_moves)))
    return None


def generate_won_positions(count: int, seed: int, min_cp: int = 500) -> list[str]:
    """`count` distinct positions where the side to move is ≥ min_cp ahead (depth 12)."""
    rng = random.Random(seed)
    found: dict[str, None] = {}
    with open_stockfish() as sf:
        while len(found) < count:
            fen = _candidate(sf, rng, min_cp)
            if fen is not None:
                found[fen] = None
    return list(found)


# --- scorers ----------------------------------------------------------------------------------


class QuantisedOracle:
    """Stockfish's win probability for every move, quantised to 128 value-bin centres."""

    def __init__(self, depth: int = 6, seed: int = 0):
        self.engine = open_stockfish()
        self.depth = depth
        self.rng = random.Random(seed)

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        return [self.score(board) for board in boards]

    def score(self, board: chess.Board) -> list[MoveScore]:
        legal = list(board.legal_moves)
        scores = multipv_scores(self.engine, board, chess.engine.Limit(depth=self.depth))
        wins = {
            move: quantise(float(cp_to_win(score.score(mate_score=MATE_CP))))
            for move, score in scores.items()
        }
        self.rng.shuffle(legal)  # random order among equal bins
        ranked = [MoveScore(m, wins.get(m, 0.0)) for m in legal]
        return sorted(ranked, key=lambda s: -s.win)

    def close(self) -> None:
        close_stockfish(self.engine)


def make_scorer(kind: str, model: str | None, seed: int) -> tuple[MoveScorer, Callable[[], None]]:
    """The scorer, and what releases it (the oracle's Stockfish; nothing for a model file)."""
    if kind == "oracle":
        oracle = QuantisedOracle(seed=seed)
        return oracle, oracle.close
    from oneply.engine.play.inference import Scorer

    return Scorer(model, threads=1), lambda: None


# --- play-out ---------------------------------------------------------------------------------


@dataclass
class GameResult:
    fen: str
    config: str
    outcome: str  # "mate", "draw-<termination>", "lost", "unfinished"
    engine_moves: int
    rules: dict[str, Any] = field(default_factory=dict[str, Any])
    seconds: float = 0.0


def _outcome(board: chess.Board, engine_side: chess.Color) -> str | None:
    """The game's result, with draws claimed by the (losing) opponent only: the engine never
    claims, so a claimable repetition on its turn is not the end."""
    outcome = board.outcome(claim_draw=board.turn != engine_side)
    if outcome is None:
        return None
    if outcome.winner is None:
        return "draw-" + outcome.termination.name.lower().replace("_", "-")
    return "mate" if outcome.winner == engine_side else "lost"


def play_out(
    fen: str,
    config_name: str,
    score: Callable[[chess.Board], list[MoveScore]],
    policy: MovePolicy,
    opponent: chess.engine.SimpleEngine,
    opponent_nodes: int,
    max_plies: int,
) -> GameResult:
    """One game from `fen`: the engine (side to move) against Stockfish."""
    board = chess.Board(fen)
    engine_side = board.turn
    rules: Counter[str] = Counter()
    started = time.monotonic()
    policy.new_game()
    engine_moves = 0
    while (result := _outcome(board, engine_side)) is None:
        if len(board.move_stack) >= max_plies:
            result = "unfinished"
            break
        if board.turn == engine_side:
            decision = policy.choose(board, score(board))
            rules[decision.rule] += 1
            board.push(decision.move)
            engine_moves += 1
        else:
            limit = chess.engine.Limit(nodes=opponent_nodes)
            reply = opponent.play(board, limit, game=fen).move
            if reply is None:  # the loop stops at game over, so this is Stockfish misbehaving
                raise chess.engine.EngineError(f"Stockfish found no move in {board.fen()}")
            board.push(reply)
    return GameResult(
        fen, config_name, result, engine_moves, dict(rules), time.monotonic() - started
    )


def _run_games(job: tuple[Any, ...]) -> list[GameResult]:
    """Worker: every configuration on a share of the positions (own Stockfish processes).

    Each position is played under every configuration before the next one, and each game is
    appended to `log` (JSON lines) as it ends, so an interrupted run still gives a balanced
    comparison."""
    fens, configs, scorer_kind, model, opponent_nodes, max_plies, seed, log = job
    scorer, close_scorer = make_scorer(scorer_kind, model, seed)
    opponent = open_stockfish()
    policies = {
        name: MovePolicy(PolicyConfig(sample_moves=0, seed=seed, **CONFIGS[name]))
        for name in configs
    }
    results = []
    try:
        for fen in fens:
            for name, policy in policies.items():
                game = play_out(
                    fen, name, scorer.score, policy, opponent, opponent_nodes, max_plies
                )
                results.append(game)
                with open(log, "a") as handle:
                    handle.write(json.dumps(asdict(game)) + "\n")
    finally:
        for policy in policies.values():
            policy.close()
        close_stockfish(opponent)
        close_scorer()
    return results


def load_games(path: Path) -> list[GameResult]:
    """Games from a (possibly partial) JSON-lines log written by `_run_games`."""
    return [GameResult(**json.loads(line)) for line in path.read_text().splitlines() if line]


def summarise(results: list[GameResult]) -> dict[str, dict[str, Any]]:
    """Per configuration: games, conversion share, mean/median moves to mate, outcomes."""
    summary = {}
    for name in dict.fromkeys(r.config for r in results):
        games = [r for r in results if r.config == name]
        mates = [r.engine_moves for r in games if r.outcome == "mate"]
        rules: Counter[str] = Counter()
        for game in games:
            rules.update(game.rules)
        summary[name] = {
            "games": len(games),
            "converted": len(mates) / len(games),
            "mean_moves_to_mate": statistics.mean(mates) if mates else None,
            "median_moves_to_mate": statistics.median(mates) if mates else None,
            "outcomes": dict(Counter(r.outcome for r in games)),
            "rules": dict(rules),
            "seconds": round(sum(r.seconds for r in games), 1),
        }
    return summary


def markdown(summary: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| config | games | converted | mean moves to mate | median | outcomes |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in summary.items():
        mean = row["mean_moves_to_mate"]
        lines.append(
            f"| {name} | {row['games']} | {row['converted']:.0%} | "
            f"{'-' if mean is None else f'{mean:.1f}'} | {row['median_moves_to_mate'] or '-'} | "
            f"{row['outcomes']} |"
        )
    return "\n".join(lines)


# --- puzzles (evaluation only: the rules' defaults are not tuned on them) -----------------------


def memoised(
    score: Callable[[chess.Board], list[MoveScore]],
) -> Callable[[chess.Board], list[MoveScore]]:
    """Score each position once across all configurations (scoring is the slow part; the
    rules under test only choose among the scores)."""
    cache: dict[str, list[MoveScore]] = {}

    def cached(board: chess.Board) -> list[MoveScore]:
        key = board.fen()
        if key not in cache:
            cache[key] = score(board)
        return cache[key]

    return cached


class _Memoised:
    """A MoveScorer over a memoised score function, for the shared puzzle runner."""

    def __init__(self, score: Callable[[chess.Board], list[MoveScore]]):
        self.score = score

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        return [self.score(board) for board in boards]


def puzzle_accuracy(
    path: Path, scorer_kind: str, model: str | None, configs: list[str], seed: int = 1
) -> dict[str, dict[str, Any]]:
    """Share of puzzles solved per configuration, overall and on mate-themed puzzles, by the
    puzzle rules of `oneply eval` (arena/puzzles.py: every engine move must match; a mate
    counts)."""
    puzzles = read_puzzles(path)
    scorer, close_scorer = make_scorer(scorer_kind, model, seed)
    cached = _Memoised(memoised(scorer.score))

    results = {}
    try:
        for name in configs:
            policy = MovePolicy(PolicyConfig(sample_moves=0, seed=seed, **CONFIGS[name]))
            solved = solve_puzzles(cached, puzzles, progress=False, choose=policy.choose_move)
            policy.close()
            mate1 = [s for s, p in zip(solved, puzzles, strict=True) if "mateIn1" in p.themes]
            results[name] = {
                "puzzles": len(puzzles),
                "accuracy": sum(solved) / len(puzzles),
                "mateIn1": sum(mate1) / max(1, len(mate1)),
                "mateIn1_count": len(mate1),
            }
    finally:
        close_scorer()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=60)
    parser.add_argument("--positions-file", type=Path, default=Path("won_positions.fen"))
    parser.add_argument("--scorer", choices=["oracle", "onnx"], default="oracle")
    add_model_argument(parser, "ONNX model file for --scorer onnx")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--opponent-nodes", type=int, default=5_000)
    parser.add_argument("--max-plies", type=int, default=150)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("policy_eval.json"))
    parser.add_argument("--puzzles", type=Path, help="instead: puzzle accuracy per config")
    args = parser.parse_args(argv)

    if args.puzzles:
        configs = args.configs.split(",")
        result = puzzle_accuracy(args.puzzles, args.scorer, args.model, configs, args.seed)
        args.out.write_text(json.dumps(result, indent=1))
        print(json.dumps(result, indent=1))
        return 0

    if args.positions_file.is_file():
        fens = args.positions_file.read_text().split("\n")
        fens = [f for f in fens if f.strip()][: args.positions]
    else:
        fens = generate_won_positions(args.positions, args.seed)
        args.positions_file.write_text("\n".join(fens) + "\n")
    configs = args.configs.split(",")
    shares = [fens[i :: args.workers] for i in range(args.workers)]
    jobs = [
        (
            share,
            configs,
            args.scorer,
            args.model,
            args.opponent_nodes,
            args.max_plies,
            args.seed,
            args.out.with_suffix(".jsonl"),
        )
        for share in shares
        if share
    ]
    with ProcessPoolExecutor(len(jobs)) as pool:
        results = [r for batch in pool.map(_run_games, jobs) for r in batch]
    summary = summarise(results)
    args.out.write_text(
        json.dumps({"summary": summary, "games": [asdict(r) for r in results]}, indent=1)
    )
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

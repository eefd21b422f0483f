"""Throughput of the bot's batched inference: `python -m oneply.bot.bench [--seconds 3]`.

N game threads each play random games and ask the shared InferenceBatcher to score every
position, as the bot does with N concurrent games (all always waiting for a move: the busiest
case). The baseline scores the same kind of positions one `Scorer.score` call at a time.
Prints a markdown table of positions/s and the mean batch size.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from dataclasses import dataclass

import chess

from oneply.bot.batcher import InferenceBatcher
from oneply.engine.model.model_file import add_model_argument
from oneply.engine.play.inference import MoveScorer


@dataclass
class Result:
    label: str
    positions: int
    seconds: float
    mean_batch: float

    @property
    def rate(self) -> float:
        return self.positions / self.seconds


def _next_board(board: chess.Board, rng: random.Random) -> chess.Board:
    """A random continuation, restarting when the game ends or gets long."""
    if board.is_game_over() or board.ply() > 120:
        return chess.Board()
    board.push(rng.choice(list(board.legal_moves)))
    return board


def sequential(scorer: MoveScorer, seconds: float) -> Result:
    rng, board, count = random.Random(0), chess.Board(), 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < end:
        scorer.score(board)
        count += 1
        board = _next_board(board, rng)
    elapsed = time.perf_counter() - start
    return Result("sequential (one position per call)", count, elapsed, 1)


def concurrent(scorer: MoveScorer, games: int, seconds: float, window_s: float = 0.003) -> Result:
    batcher = InferenceBatcher(scorer, window_s)
    counts = [0] * games
    stop = threading.Event()

    def play(slot: int) -> None:
        rng, board = random.Random(slot), chess.Board()
        while not stop.is_set():
            batcher.score(board)
            counts[slot] += 1
            board = _next_board(board, rng)

    threads = [threading.Thread(target=play, args=(i,), daemon=True) for i in range(games)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    batcher.close()
    mean_batch = batcher.positions / max(1, batcher.batches)
    return Result(f"{games} concurrent game(s), batched", sum(counts), elapsed, mean_batch)


def report(
    scorer: MoveScorer, seconds: float = 3.0, games: tuple[int, ...] = (1, 4, 8)
) -> list[Result]:
    scorer.score(chess.Board())  # warm-up
    results = [sequential(scorer, seconds)]
    results += [concurrent(scorer, n, seconds) for n in games]
    return results


def table(results: list[Result]) -> str:
    base = results[0].rate
    lines = ["| scoring | positions/s | mean batch | vs sequential |", "|---|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.label} | {r.rate:.1f} | {r.mean_batch:.1f} | {r.rate / base:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads")
    add_model_argument(parser)
    args = parser.parse_args(argv)
    from oneply.engine.play.inference import Scorer

    scorer = Scorer(args.model, args.threads)
    print(f"model {scorer.path.name}, provider {scorer.provider}, threads {args.threads or 'all'}")
    print(table(report(scorer, args.seconds)))


if __name__ == "__main__":
    main()

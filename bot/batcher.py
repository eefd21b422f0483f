"""One inference worker for all games: positions from concurrent games share one model call.

Each game thread submits its position and waits. The worker takes the first pending
position, gathers whatever else arrives within a short window (a few ms) and calls
`MoveScorer.score_many` once, so 8 games cost about one batched forward pass instead of 8.
When inference fails the game still moves (engine/play/fallback.py: the same rule as the UCI
engine), because losing on time to a bug is worse than one weak move.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import chess

from oneply.engine.play.inference import MoveScore, MoveScorer

log = logging.getLogger("oneply.bot")


@dataclass
class _Request:
    board: chess.Board
    future: Future[list[MoveScore]] = field(default_factory=Future)


class InferenceBatcher:
    """A worker thread that scores the positions of many games in batched calls."""

    def __init__(self, scorer: MoveScorer, window_s: float = 0.003, max_batch: int = 64):
        self.scorer = scorer
        self.window_s = window_s
        self.max_batch = max_batch
        self.batches = 0
        self.positions = 0
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="inference", daemon=True)
        self._thread.start()

    def submit(self, board: chess.Board) -> Future[list[MoveScore]]:
        """A future for the position's scores (best first); the board is copied."""
        request = _Request(board.copy(stack=False))
        self._queue.put(request)
        return request.future

    def score(self, board: chess.Board, timeout: float | None = None) -> list[MoveScore]:
        scores: list[MoveScore] = self.submit(board).result(timeout)
        return scores

    def score_many(
        self, boards: Sequence[chess.Board], timeout: float | None = None
    ) -> list[list[MoveScore]]:
        """Several positions at once (a search's leaves): queued together, they share one
        model call with each other and with the other games' positions."""
        futures = [self.submit(board) for board in boards]
        deadline = None if timeout is None else time.monotonic() + timeout
        results: list[list[MoveScore]] = []
        for future in futures:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            results.append(future.result(left))
        return results

    def _gather(self, first: _Request) -> list[_Request]:
        batch = [first]
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)  # let the loop see the stop marker
                break
            batch.append(item)
        return batch

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = self._gather(first)
            try:
                results = self.scorer.score_many([r.board for r in batch])
            except Exception as error:  # any model failure: every waiting game falls back
                log.error("event=inference_failed batch=%d error=%r", len(batch), error)
                for request in batch:
                    request.future.set_exception(error)
                continue
            self.batches += 1
            self.positions += len(batch)
            for request, scores in zip(batch, results, strict=True):
                request.future.set_result(scores)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

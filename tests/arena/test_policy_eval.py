"""Policy play-outs: the puzzle cache must actually save scoring work."""

from __future__ import annotations

import chess

from oneply.arena.policy_eval import memoised
from oneply.engine.play.inference import MoveScore, Scorer


def test_memoised_scores_each_position_once(tiny_onnx) -> None:
    scorer = Scorer(tiny_onnx, threads=1)
    calls: list[str] = []

    def counting(board: chess.Board) -> list[MoveScore]:
        calls.append(board.fen())
        return scorer.score(board)

    cached = memoised(counting)
    board = chess.Board()
    first = cached(board)
    assert cached(chess.Board()) == first
    assert len(calls) == 1
    board.push_uci("e2e4")
    cached(board)
    assert len(calls) == 2


def test_both_scorers_serve_the_puzzle_runner_and_are_released(tiny_onnx, tmp_path) -> None:
    """make_scorer gives a MoveScorer and its release for either kind; the oracle's Stockfish
    scores a position like its own score_many does and a mate-in-one puzzle is solved."""
    from oneply.arena.policy_eval import make_scorer, puzzle_accuracy

    oracle, close = make_scorer("oracle", None, seed=1)
    try:
        board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
        [many] = oracle.score_many([board])
        assert {s.move for s in many} == set(board.legal_moves)
        assert many[0].move == chess.Move.from_uci("d1d8")  # the back-rank mate scores highest
    finally:
        close()
    csv = tmp_path / "puzzles.csv"
    csv.write_text(
        "PuzzleId,FEN,Moves,Rating,Themes,GameUrl\n"
        "x1,6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 1,g8h8 d1d8,600,mateIn1,-\n"
    )
    result = puzzle_accuracy(csv, "onnx", str(tiny_onnx), ["all-rules"], seed=1)
    assert result["all-rules"]["accuracy"] == 1.0  # MateInOne plays the mate, whatever the model

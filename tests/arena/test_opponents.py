"""Built-in opponents: legal, seedable moves over real UCI (python-chess driving the module as a
subprocess), greedy's rules, and `oneply match` taking them by name."""

from __future__ import annotations

import json
import sys

import chess
import chess.engine
import pytest

from oneply.arena.opponents import game_rng, greedy_move, with_noise
from oneply.arena.registry import builtin_spec
from oneply.arena.settings import TimeControl
from oneply.engine.cli import main as cli_main


def play_game(kind: str, seed: int, plies: int = 60) -> list[str]:
    """A self-play game of one built-in engine over UCI; every move must be legal."""
    command = [sys.executable, "-m", "oneply.arena.opponents", kind, "--seed", str(seed)]
    engine = chess.engine.SimpleEngine.popen_uci(command)
    board = chess.Board()
    try:
        while not board.is_game_over() and len(board.move_stack) < plies:
            move = engine.play(board, chess.engine.Limit(time=1.0)).move
            assert move in board.legal_moves, f"{kind} played illegal {move} in {board.fen()}"
            board.push(move)
    finally:
        engine.quit()
    return [m.uci() for m in board.move_stack]


@pytest.mark.parametrize("kind", ["random", "greedy"])
def test_same_seed_same_game_other_seed_other_game(kind: str) -> None:
    first = play_game(kind, seed=7)
    assert len(first) >= 20
    assert play_game(kind, seed=7) == first
    assert play_game(kind, seed=8) != first


def test_seed_option_over_uci_changes_the_game() -> None:
    command = [sys.executable, "-m", "oneply.arena.opponents", "random", "--seed", "1"]
    games = []
    for seed in (1, 2):
        engine = chess.engine.SimpleEngine.popen_uci(command)
        engine.configure({"Seed": seed})
        board = chess.Board()
        for _ in range(16):
            board.push(engine.play(board, chess.engine.Limit(time=1.0)).move)
        engine.quit()
        games.append(board.fen())
    assert games[0] != games[1]


def test_greedy_takes_the_queen_with_the_cheapest_piece() -> None:
    # the black queen on d5 hangs to the e4 pawn, the b6 knight and the d1 rook; the a8 rook
    # hangs to the knight too (less valuable than the queen)
    board = chess.Board("r3k3/8/1N6/3q4/4P3/8/8/3RK3 w - - 0 1")
    for seed in range(5):
        assert greedy_move(board, game_rng(seed, board)) == chess.Move.from_uci("e4d5")


def test_greedy_plays_mate_in_one_before_a_capture() -> None:
    # Ra8 mates (back rank); Nxf3 would win a rook
    board = chess.Board("6k1/5ppp/8/8/8/5r2/8/R3K1N1 w - - 0 1")
    assert greedy_move(board, game_rng(1, board)) == chess.Move.from_uci("a1a8")


def test_greedy_without_captures_plays_a_legal_random_move() -> None:
    board = chess.Board()
    moves = {greedy_move(board, game_rng(seed, board)) for seed in range(30)}
    assert len(moves) > 3 and all(m in board.legal_moves for m in moves)


def test_builtin_names() -> None:
    tc = TimeControl(base=5.0, inc=0.05)
    spec = builtin_spec("greedy", tc, seed=3)
    assert spec is not None and spec.command[-3:] == ("greedy", "--seed", "3")
    assert builtin_spec("/usr/games/stockfish", tc) is None
    elo = builtin_spec("sf-elo1350", tc)
    assert elo is not None and ("UCI_Elo", "1350") in elo.options
    skill = builtin_spec("sf-skill0", tc)
    assert skill is not None and ("Skill Level", "0") in skill.options and skill.tc.nodes
    with pytest.raises(ValueError, match="1350..2850"):
        builtin_spec("sf-elo900", tc)


def test_match_accepts_builtin_names(tmp_path) -> None:
    out = tmp_path / "m.json"
    code = cli_main(
        ["match", "greedy", "random", "--games", "2", "--tc", "5+0.05", "--quiet"]
        + ["--concurrency", "2", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["engine_a"]["name"] == "greedy" and data["engine_b"]["name"] == "random"
    assert data["results"]["games"] == 2


def test_noisy_names_and_noise_makes_random_moves() -> None:
    spec = builtin_spec("greedy-noise50", TimeControl(base=5.0), seed=2)
    assert spec is not None and spec.command[-2:] == ("--noise", "0.5")
    with pytest.raises(ValueError, match="percentage"):
        builtin_spec("greedy-noise150", TimeControl(base=5.0))
    # with full noise greedy no longer takes the hanging queen every time
    board = chess.Board("r3k3/8/1N6/3q4/4P3/8/8/3RK3 w - - 0 1")
    noisy = with_noise(greedy_move, 1.0)
    moves = {noisy(board, game_rng(seed, board)) for seed in range(20)}
    assert len(moves) > 3 and all(m in board.legal_moves for m in moves)

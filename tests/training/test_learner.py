"""`generate --learner`: the model plays one side of a share of the games (its argmax), the
other games are move for move a run without it, and a directory resumes only with the same
learner file. Real Stockfish, real onnxruntime sessions of shipped model files."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import chess
import chess.polyglot
import pytest

from oneply.arena.settings import DEBIAN_BOOKS
from oneply.engine.model.model_file import BUNDLED_MODEL
from oneply.engine.play.inference import Scorer
from oneply.training.data.learner import file_digest, model_learner
from oneply.training.data.openings import DEFAULT_ECO, load_eco_lines
from oneply.training.data.scored_games import GamePlayer, GameSettings, Record
from oneply.training.data.shard_writer import SourceError
from oneply.training.data.stockfish_scorer import StockfishScorer
from tests.conftest import REPO, stockfish_path
from tests.helpers.training import run_generate


def _games(player: GamePlayer, numbers: list[int]) -> dict[int, list[Record]]:
    return {n: list(player.play(n)) for n in numbers}


def _played(here: Record, after: Record) -> chess.Move | None:
    """The move between two consecutive records of a game (None: not one ply apart)."""
    board = chess.Board(here.fen)
    for move in board.legal_moves:
        board.push(move)
        same = board.fen() == after.fen
        board.pop()
        if same:
            return move
    return None


def test_the_learner_plays_its_side_by_argmax_and_other_games_are_unchanged() -> None:
    settings = GameSettings(seed=5, depth=1, max_plies=50, learner_share=0.5)
    engine = StockfishScorer(stockfish_path())
    books = [chess.polyglot.open_reader(p) for p in DEBIAN_BOOKS if p.exists()]
    eco = load_eco_lines(DEFAULT_ECO)
    try:
        learner = model_learner(BUNDLED_MODEL)
        with_learner = GamePlayer(settings, engine, books, eco, learner=learner)
        without = GamePlayer(replace(settings, learner_share=0.0), engine, books, eco)
        sides = {n: with_learner.learner_side(n) for n in range(12)}
        assert {n: without.learner_side(n) for n in sides} == dict.fromkeys(sides)
        assert 2 <= sum(side is not None for side in sides.values()) <= 10  # about half
        assert {chess.WHITE, chess.BLACK} <= set(sides.values())  # either side
        plain = [n for n, side in sides.items() if side is None][:2]
        learnt = [n for n, side in sides.items() if side is not None][:2]
        ours, theirs = _games(with_learner, plain + learnt), _games(without, plain + learnt)
    finally:
        engine.quit()
    for n in plain:  # its own random stream: the games without the learner are untouched
        assert [r.fen for r in ours[n]] == [r.fen for r in theirs[n]]
    scorer = Scorer(BUNDLED_MODEL, threads=1)
    checked = 0
    for n in learnt:
        records = ours[n]
        assert [r.fen for r in records] != [r.fen for r in theirs[n]]
        for here, after in zip(records, records[1:], strict=False):
            board = chess.Board(here.fen)
            if board.turn != sides[n]:
                continue
            assert _played(here, after) == scorer.score(board)[0].move, here.fen
            checked += 1
            assert len(here.wins) == board.legal_moves.count()  # still scored by Stockfish
    assert checked >= 10


def test_a_share_without_a_learner_is_refused_by_the_player() -> None:
    with pytest.raises(ValueError, match="learner"):
        GamePlayer(GameSettings(learner_share=0.5), None, [], [])  # type: ignore[arg-type]


def test_generate_records_its_learner_and_resumes_only_with_the_same_file(
    tmp_path: Path, tiny_onnx: Path
) -> None:
    plain, learnt = tmp_path / "plain", tmp_path / "learnt"
    run_generate(plain, 40)
    game = json.loads((plain / "manifest.json").read_text())["settings"]["game"]
    assert "learner_share" not in game  # manifests without a learner read as they always did
    assert run_generate(learnt, 40, "--learner", str(BUNDLED_MODEL))["positions"] == 40
    settings = json.loads((learnt / "manifest.json").read_text())["settings"]
    assert settings["game"]["learner_share"] == 0.5
    assert settings["learner"] == {
        "file": BUNDLED_MODEL.name,
        "sha256": file_digest(BUNDLED_MODEL),
    }
    moved = tmp_path / "elsewhere" / BUNDLED_MODEL.name  # the same file on another path resumes
    moved.parent.mkdir()
    shutil.copy(BUNDLED_MODEL, moved)
    assert run_generate(learnt, 60, "--learner", str(moved))["positions"] == 60
    other = tmp_path / BUNDLED_MODEL.name  # another model under the same name does not
    shutil.copy(tiny_onnx, other)  # (the campaign's latest is the bundled file after a release)
    with pytest.raises(SourceError, match="other settings"):
        run_generate(learnt, 80, "--learner", str(other))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--learner", "README.md"], "--learner: README.md: cannot load"),
        (["--learner", "missing.onnx"], "missing.onnx not found"),
        (["--learner-share", "0.3"], "needs --learner"),
        (["--learner", str(BUNDLED_MODEL), "--learner-share", "1.5"], r"in \(0, 1\]"),
    ],
)
def test_wrong_learner_arguments_are_clear_errors_before_any_game(
    tmp_path: Path, extra: list[str], message: str, monkeypatch
) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "out"
    with pytest.raises(SourceError, match=message):
        run_generate(out, 10, *extra)
    assert not list(out.glob("gen-*"))

"""The suite's head-to-head (`oneply strength --baseline B --games-head N`): pairs counted from
the model's side, runs adding up game for game and pair for pair, and refusals (the merge of
runs that carry one: tests/arena/test_strength_merge.py; the games played:
tests/arena/test_strength.py's end-to-end run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oneply.arena import elo
from oneply.arena.head_to_head import HeadToHead, add_up, from_stats, text
from oneply.arena.results import GameRecord, Scoreboard
from oneply.engine.cli import main as cli_main
from oneply.engine.errors import CommandError


def _record(index: int, a_white: bool, result: str) -> GameRecord:
    return GameRecord(index, index // 2, a_white, "w", "b", result, "normal", "", 40, 1.0, {})


def test_a_played_match_becomes_the_models_pairs() -> None:
    """Two openings: the model wins both games of the first (2 points), draws one and loses
    one of the second (½); the scoreboard's summary is read from the model's side."""
    board = Scoreboard()
    games = [(True, "1-0"), (False, "0-1"), (True, "1/2-1/2"), (False, "1-0")]
    for index, (a_white, result) in enumerate(games):
        board.add(_record(index, a_white, result))
    head = from_stats("new.onnx", "old.onnx", board.summary(), 12.0)
    assert head.wdl() == (2, 1, 1)
    assert head.pairs == [0, 1, 0, 0, 1]
    assert head.estimate() == elo.pentanomial([0, 1, 0, 0, 1])


def test_the_estimate_and_verdict_follow_the_pairs() -> None:
    strong = HeadToHead("new", "old", 60, 20, 20, pairs=[0, 5, 10, 20, 15])
    assert strong.estimate().lower > 0 and strong.verdict() == "stronger"
    weak = HeadToHead("new", "old", 20, 20, 60, pairs=[15, 20, 10, 5, 0])
    assert weak.estimate().upper < 0 and weak.verdict() == "weaker"
    even = HeadToHead("new", "old", 10, 0, 10, pairs=[0, 5, 0, 5, 0])
    assert even.verdict() == "not distinguishable at 95%"
    # no complete pair yet: the games alone, as independent ones
    single = HeadToHead("new", "old", 1, 0, 0)
    assert single.estimate() == elo.trinomial(1, 0, 0)


def test_runs_add_up_and_survive_their_json() -> None:
    a = HeadToHead("new", "old", 10, 4, 6, pairs=[1, 2, 3, 2, 2], seconds=5.0)
    b = HeadToHead("new", "old", 7, 6, 7, pairs=[2, 3, 1, 3, 1], seconds=7.0)
    total = add_up([HeadToHead.from_dict(json.loads(json.dumps(h.to_dict()))) for h in (a, b)])
    assert total.wdl() == (17, 10, 13) and total.pairs == [3, 5, 4, 5, 3]
    assert total.seconds == 12.0 and total.games == 40
    assert total.estimate().pm < min(a.estimate().pm, b.estimate().pm)
    line = text(total)
    assert "17/10/13 in 40 games" in line and f"→ {total.verdict()}" in line
    with pytest.raises(CommandError, match="other models"):
        add_up([a, HeadToHead("other", "old", 1, 0, 1, pairs=[0, 0, 1, 0, 0])])


def test_games_head_needs_a_baseline(tmp_path: Path, capsys) -> None:
    assert cli_main(["strength", str(tmp_path / "m.onnx"), "--games-head", "4"]) == 2
    assert "--games-head plays the model against --baseline" in capsys.readouterr().err

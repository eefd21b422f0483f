"""The opponent registry: every name the suite plays builds an engine, and a new suite
opponent is one entry (its games flag, plan and anchor follow from it)."""

from __future__ import annotations

import argparse

import pytest

from oneply.arena import registry, strength
from oneply.arena.settings import TimeControl

TC = TimeControl(base=5.0, inc=0.05)


@pytest.mark.usefixtures("stockfish")
def test_every_suite_opponent_is_a_built_in_name_weakest_first() -> None:
    for opponent in registry.SUITE:
        spec = registry.builtin_spec(opponent.name, TC)
        assert spec is not None and spec.name == opponent.name
    anchors = [opponent.anchor for opponent in registry.SUITE]
    assert anchors == sorted(anchors) and anchors[-1] < registry.UCI_ELO_MIN


def test_a_new_suite_opponent_is_one_entry(monkeypatch) -> None:
    extra = registry.SuiteOpponent("greedy-noise50", 300.0, 6, "noisy", "(6)")
    suite = (*registry.SUITE[:1], extra, *registry.SUITE[1:])
    monkeypatch.setattr(strength, "SUITE", suite)
    parser = argparse.ArgumentParser()
    strength.add_arguments(parser)
    args = parser.parse_args(["m.onnx", "--games-noisy", "4", "--levels", "1350"])
    plan = strength.opponent_plan(strength.strength_config(args))
    assert [name for name, _, _ in plan] == [
        "random",
        "greedy-noise50",
        "greedy",
        "sf-skill0",
        "sf-elo1350",
    ]
    assert plan[1] == ("greedy-noise50", 4, 300.0)
    skipped = strength.strength_config(parser.parse_args(["m.onnx", "--games-noisy", "0"]))
    assert "greedy-noise50" not in [name for name, _, _ in strength.opponent_plan(skipped)]


def test_names_outside_the_families_are_not_built_ins() -> None:
    for name in ("sf", "stockfish", "random-noise", "greedy2", "oneply-x"):
        assert registry.builtin_spec(name, TC) is None
    noisy = registry.builtin_spec("sf-noise25", TC, seed=4)
    assert noisy is not None and noisy.name == "sf-noise25"
    assert noisy.command[3:] == ("sf", "--seed", "4", "--noise", "0.25")

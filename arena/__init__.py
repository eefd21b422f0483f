"""The strength lab: engine-vs-engine matches, Elo statistics, the ladder, policy play-outs.

It also ships the dev puzzle set, the one default for everything that evaluates on puzzles
or must never train on them (``oneply eval``, ``oneply train positions/fit/all``).
"""

from pathlib import Path

#: 1,000 Lichess puzzles (evaluation only: training excludes every position on their lines)
DEV_PUZZLES = Path(__file__).resolve().parent / "data" / "puzzles-dev.csv"

"""The strength lab: engine-vs-engine matches, Elo statistics, the ladder, policy play-outs.

It also ships the dev puzzle set (arena/puzzles.py), the one default for everything that
evaluates on puzzles or must never train on them (``oneply eval``, ``oneply train
positions/fit/all``). The arena depends on the engine only, never on training
(tests/engine/test_imports.py holds that line).
"""

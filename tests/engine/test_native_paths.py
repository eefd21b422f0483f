"""Both paths of the facts in use: the Python fallback when the compiled core is hidden (it says
so once, and computes the same arrays), and `oneply uci` answering the same with either."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import chess
import numpy as np
import pytest

from oneply.engine.facts import native
from oneply.engine.facts.encoding import encode_batch
from oneply.engine.play.bench import load_positions
from tests.conftest import REPO

HIDE_THE_CORE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "oneply.engine._core":
            raise ImportError("hidden by the test")
sys.meta_path.insert(0, Hide())
"""

ENCODE_TWICE = """
import chess, numpy as np
from oneply.engine.facts import native
from oneply.engine.play.bench import load_positions
from oneply.engine.facts.encoding import encode_batch
boards = load_positions(limit=12)
first, second = encode_batch(boards, True), encode_batch(boards[:2], True)
print(native.path_name())
np.savez(sys.argv[1], *(first.states, first.ids, first.square_facts, first.move_facts))
"""


def run_python(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, **env}, check=True,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["hidden", "ONEPLY_NATIVE=0"])
def test_without_the_core_the_python_path_runs_says_so_once_and_agrees(tmp_path, how):
    out = tmp_path / "arrays.npz"
    if how == "hidden":
        done = run_python(HIDE_THE_CORE + ENCODE_TWICE, str(out))
    else:
        done = run_python("import sys\n" + ENCODE_TWICE, str(out), ONEPLY_NATIVE="0")
    assert done.stdout.strip() == "python"
    warnings = [line for line in done.stderr.splitlines() if "native facts unavailable" in line]
    reason = "hidden by the test" if how == "hidden" else "ONEPLY_NATIVE=0"
    assert warnings == [
        f"oneply: native facts unavailable ({reason}); using the Python path, "
        f"about {native.PYTHON_SLOWDOWN}x slower"
    ]
    if not native.available():
        pytest.skip(f"no compiled core here to compare with: {native.REASON}")
    here = encode_batch(load_positions(limit=12), True)
    with np.load(out) as saved:
        arrays = [saved[f"arr_{i}"] for i in range(4)]
    ours = (here.states, here.ids, here.square_facts, here.move_facts)
    for theirs, mine in zip(arrays, ours, strict=True):
        np.testing.assert_array_equal(theirs, mine)


def test_python_path_context_switches_the_engine_over():
    boards = [chess.Board()]
    with native.python_path():
        assert native.path_name() == "python"
        encode_batch(boards, True)
    assert native.path_name() == ("native" if native._core is not None else "python")


UCI_SCRIPT = (
    "uci\nsetoption name SampleMoves value 0\nsetoption name MultiPV value 3\n"
    "setoption name UCI_ShowWDL value true\nisready\n"
    + "".join(f"position fen {fen}\ngo movetime 200\nisready\n" for fen in ("{0}", "{1}", "{2}"))
    + "setoption name Search value true\nsetoption name SearchNodes value 48\n"
    + "position fen {3}\ngo nodes 48\nisready\nquit\n"
)


def uci_answers(fens: list[str], **env: str) -> list[str]:
    """What `oneply uci` says to the script, without the clock's words (time, nps)."""
    done = subprocess.run(
        [sys.executable, "-m", "oneply.engine", "uci"],
        input=UCI_SCRIPT.format(*fens), capture_output=True, text=True, cwd=REPO,
        env={**os.environ, **env}, timeout=300, check=True,
    )  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("info depth", "bestmove"))]
    return [re.sub(r" (time|nps|hashfull) \d+", "", line) for line in lines]


@pytest.mark.slow
@pytest.mark.skipif(not native.available(), reason="needs the compiled core for one side")
def test_uci_plays_identically_with_either_path():
    fens = [board.fen() for board in load_positions()[10:90:20]]
    native_lines = uci_answers(fens)
    assert sum(line.startswith("bestmove") for line in native_lines) == 4
    assert uci_answers(fens, ONEPLY_NATIVE="0") == native_lines

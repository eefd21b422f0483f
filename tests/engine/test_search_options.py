"""The look-ahead's tuning as UCI options: announced, checked, and handed to the search."""

from __future__ import annotations

import io

import pytest

from oneply.engine.play.search_options import SEARCH_OPTIONS, search_settings
from oneply.engine.uci.engine import UciEngine


@pytest.fixture
def engine():
    out = io.StringIO()
    uci = UciEngine(out)
    yield uci, out
    uci.cmd_quit([])


def test_every_search_option_is_announced_with_its_default(engine):
    uci, out = engine
    uci.handle("uci")
    announced = out.getvalue()
    assert "option name SearchBatch type spin default 8 min 1 max 64" in announced
    for option in SEARCH_OPTIONS:
        assert f"option name {option.name} type string default {option.default}" in announced


def test_the_search_is_built_with_the_options_set(engine):
    uci, out = engine
    for line in ("setoption name CPuct value 2.5", "setoption name FpuReduction value 0.1",
                 "setoption name SearchBatch value 4", "setoption name Search value true",
                 "position startpos", "go nodes 16"):  # fmt: skip
        uci.handle(line)
    uci.wait_search()
    assert uci.tree is not None
    assert (uci.tree.c_puct, uci.tree.fpu_reduction, uci.tree.batch) == (2.5, 0.1, 4)
    assert uci.tree.temperature == 0.05
    assert "bestmove" in out.getvalue()


@pytest.mark.parametrize("line", ["CPuct value -1", "CPuct value lots", "FpuReduction value 2"])
def test_an_out_of_range_value_is_refused_and_the_old_one_kept(engine, line):
    uci, out = engine
    uci.handle(f"setoption name {line}")
    assert "info string error" in out.getvalue() and "unchanged" in out.getvalue()
    texts = {name: str(uci.option(name)) for name in ("cpuct", "policytemperature", "fpureduction")}
    assert search_settings(texts) == {"c_puct": 1.5, "temperature": 0.05, "fpu_reduction": 0.0}

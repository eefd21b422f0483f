"""Shared fixtures: tiny exported models and the engine command line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oneply.engine.stockfish import find_stockfish
from tests.tiers import ENGINE_PROCESS_FIXTURES, SLOW

REPO = Path(__file__).resolve().parent.parent
ENGINE_CMD = [sys.executable, "-m", "oneply.engine"]
POSITION_218 = "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier (tests/tiers.py) `slow`; where whole modules were collected, an
    entry that names none of their tests is an error."""
    entries = {entry: reason for reason, names in SLOW.items() for entry in names}
    used: set[str] = set()
    for item in items:
        test = item.nodeid.split("[")[0]
        module = test.split("::")[0]
        named = [e for e in (test, module) if e in entries]
        used.update(named)
        if named or ENGINE_PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if config.option.keyword or any("::" in arg for arg in config.args):
        return  # only some tests of a module were asked for
    collected = {item.nodeid.split("::")[0] for item in items}
    stale = sorted(e for e in entries if e.split("::")[0] in collected and e not in used)
    if stale:
        raise pytest.UsageError(
            "tests/tiers.py names tests that were not collected: " + ", ".join(stale)
        )


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """torch on one thread in the test process, wherever a test module has imported it: the
    tiny models run fastest so, and on two cores shared with engines, Stockfish or a second
    worker, torch's threads wait on each other (the ONNX parity tests ran 4x slower on two).
    Training code that sets its own threads still does; the next test is back on one."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def stockfish_path() -> str:
    """The Stockfish executable, found by oneply's own rule (tests/run.sh installs it); for
    module-level helpers. Tests take the `stockfish` fixture."""
    found = find_stockfish()
    if found is None:
        pytest.fail("Stockfish is required: apt-get install stockfish")
    return found


@pytest.fixture(scope="session")
def stockfish() -> str:
    """The Stockfish executable; a test that needs it fails (with what to do) without it."""
    return stockfish_path()


@pytest.fixture(scope="session")
def tiny_torch_model():
    torch = pytest.importorskip("torch")
    from oneply.training.model.model import PRESETS, ActionValueModel
    from tests.helpers.model_helpers import randomise_fact_tables

    torch.manual_seed(1)
    model = ActionValueModel(PRESETS["tiny"]).eval()
    randomise_fact_tables(model)
    return model


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory, tiny_torch_model) -> Path:
    """A tiny shared-layout model file (fast to load and run)."""
    from oneply.training.model.export import export_model

    path = tmp_path_factory.mktemp("models") / "tiny.onnx"
    export_model(tiny_torch_model, path, preset="tiny", trained=False)
    return path

"""Shared fixtures: tiny exported models and the engine command line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oneply.engine.stockfish import find_stockfish
from tests.tiers import ENGINE_PROCESS_FIXTURES, SERIAL, SLOW

REPO = Path(__file__).resolve().parent.parent
ENGINE_CMD = [sys.executable, "-m", "oneply.engine"]
POSITION_218 = "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial",
        choices=("with", "skip", "only"),
        default="with",
        help="the tests that time themselves (tests/tiers.py SERIAL): run with the rest (the "
        "default), leave out, or run only them. tests/run.sh runs the rest on two workers with "
        "`--serial skip`, then these alone with `--serial only`",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `--serial only`, a test module that holds none of those tests is not imported (the
    second pass of tests/run.sh collects a few modules, not the suite again)."""
    path = collection_path
    if config.getoption("serial") != "only" or not path.name.startswith("test_"):
        return None
    modules = {entry.split("::")[0] for entry in SERIAL}
    if path.suffix != ".py" or not path.is_relative_to(REPO):
        return None
    return None if path.relative_to(REPO).as_posix() in modules else True


def _tier_entries(item: pytest.Item, entries: set[str]) -> list[str]:
    """The entries of tests/tiers.py that name this test or its module."""
    test = item.nodeid.split("[")[0]
    return [e for e in (test, test.split("::")[0]) if e in entries]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier (tests/tiers.py) `slow` and the tests that time themselves `serial`,
    then keep what --serial asks for; where whole modules were collected, an entry that names
    none of their tests is an error."""
    slow = {entry for names in SLOW.values() for entry in names}
    serial = set(SERIAL)
    used: set[str] = set()
    for item in items:
        named = _tier_entries(item, slow)
        if named or ENGINE_PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        timed = _tier_entries(item, serial)
        if timed:
            item.add_marker(pytest.mark.serial)
        used.update(named, timed)
    _check_stale(config, items, (slow | serial) - used)
    keep = config.getoption("serial")
    if keep != "with":
        only = keep == "only"
        dropped = [item for item in items if only != bool(item.get_closest_marker("serial"))]
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if only == bool(item.get_closest_marker("serial"))]


def _check_stale(config: pytest.Config, items: list[pytest.Item], unused: set[str]) -> None:
    if config.option.keyword or any("::" in arg for arg in config.args):
        return  # only some tests of a module were asked for
    collected = {item.nodeid.split("::")[0] for item in items}
    stale = sorted(e for e in unused if e.split("::")[0] in collected)
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

"""Fixtures shared by the bot's tests against the fake Lichess server
(tests/helpers/lichess_server.py): a scorer, a started server, and a private heartbeat file.

`private_heartbeat` is not autouse here, so that only the modules that drive a Bot in this
process take it, each with `pytestmark = pytest.mark.usefixtures("private_heartbeat")`.
test_shutdown.py (its own `server`), test_docker.py and test_bot_config.py run none.
"""

from __future__ import annotations

import pytest

from oneply.engine.play.inference import Scorer
from tests.helpers.lichess_server import FakeLichess


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer(threads=1)


@pytest.fixture
def private_heartbeat(tmp_path, monkeypatch):
    """Each bot under test beats into its own file, never the machine-wide default."""
    monkeypatch.setenv("ONEPLY_HEARTBEAT", str(tmp_path / "heartbeat"))


@pytest.fixture
def server():
    fake = FakeLichess().start()
    yield fake
    fake.stop()

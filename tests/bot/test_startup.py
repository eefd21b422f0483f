"""What `oneply bot` checks before it plays, against the fake Lichess server: the config
(its defaults and its error messages), the token and its scopes, the BOT account (and the
upgrade), the model before any Lichess request, and a bc model turning engine.search off."""

from __future__ import annotations

import logging
import os
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from oneply.bot import main as bot_main
from oneply.bot.config import ConfigError, load_config, parse_config
from oneply.bot.lichess import Lichess, SetupError
from oneply.bot.main import Bot
from oneply.engine.play.inference import Scorer
from tests.bot.harness import make_config
from tests.conftest import REPO
from tests.helpers.lichess_server import BOT

pytestmark = pytest.mark.usefixtures("private_heartbeat")


def test_repo_config_loads_with_defaults():
    config = load_config(REPO / "config.yml", env={})
    assert config == parse_config({}, env={})  # the documented values are the defaults
    assert config.url == "https://lichess.org"
    assert config.rate_limit.pause_429 >= 60
    assert config.challenge.max_games >= 1


def test_config_errors_name_the_key(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"'challenge.max_gmaes'.*max_games"):
        parse_config({"challenge": {"max_gmaes": 3}}, env={})
    with pytest.raises(ConfigError, match=r"'http.read_timeout' must be a number"):
        parse_config({"http": {"read_timeout": "fast"}}, env={})
    with pytest.raises(ConfigError, match="at least 60"):
        parse_config({"rate_limit": {"pause_429": 5}}, env={})
    with pytest.raises(ConfigError, match="engine.policy.no_such_field"):
        parse_config({"engine": {"policy": {"no_such_field": 1}}}, env={})
    for bad in ({"temperature": "abc"}, {"seed": "x"}, {"sample_moves": 999}):
        key = next(iter(bad))
        with pytest.raises(ConfigError, match=f"'engine.policy.{key}' must be"):
            parse_config({"engine": {"policy": bad}}, env={})
    config = parse_config({"token": "from-file"}, env={"LICHESS_BOT_TOKEN": "from-env"})
    assert config.token == "from-env" and "from-env" not in repr(config)


def test_invalid_token(server, tmp_path, capsys, monkeypatch):
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump({"url": server.url, "rate_limit": {"pause_429": 1}}))
    monkeypatch.setenv("LICHESS_BOT_TOKEN", "secret-bad-token")
    args = Namespace(config=str(path), init_config=None, upgrade=False, log_level="INFO")
    code = bot_main.run(args)
    err = capsys.readouterr().err
    assert code == 2 and "not valid" in err and "secret-bad-token" not in err


def test_json_replies_decode_when_requests_uses_simplejson(server, tmp_path):
    """orbax (the `dm` extra) installs simplejson, which requests then prefers; berserk's
    stdlib decoder class must still work through our session."""
    import requests.compat

    if not requests.compat.has_simplejson:
        pytest.skip("simplejson is not installed: requests decodes with the standard library")
    account = Lichess(make_config(server, tmp_path)).check_bot_account()
    assert account["title"] == "BOT"


def test_token_without_bot_play(server, tmp_path):
    server.tokens["board-token"] = {"scopes": "board:play,challenge:read", "user": BOT}
    config = make_config(server, tmp_path, token="board-token")
    with pytest.raises(SetupError, match="lacks scope bot:play"):
        Lichess(config).check_bot_account()


def test_not_a_bot_account_then_upgrade(server, tmp_path):
    server.titles[BOT] = None
    lichess = Lichess(make_config(server, tmp_path))
    with pytest.raises(SetupError, match="oneply bot --upgrade"):
        lichess.check_bot_account()
    assert bot_main.upgrade(lichess, confirm=lambda prompt: "no") == 1
    assert server.titles[BOT] is None
    assert bot_main.upgrade(lichess, confirm=lambda prompt: "OneplyBot") == 0
    assert lichess.check_bot_account()["title"] == "BOT"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "oneply.engine", "bot", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_model_is_checked_before_any_lichess_request(server, tmp_path):
    path = tmp_path / "config.yml"
    config = {"url": server.url, "rate_limit": {"pause_429": 1}, "engine": {"model": "no.onnx"}}
    path.write_text(yaml.safe_dump(config))
    proc = run_cli("--config", str(path), env={"LICHESS_BOT_TOKEN": "good-token"})
    assert proc.returncode == 2 and "no.onnx" in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []


def test_a_bc_model_turns_engine_search_off_at_start_up(server, tmp_path, caplog):
    """engine.search backs up win probabilities; a bc model's scores are policy
    probabilities, so the bot says so once and plays the one-pass policy."""
    pytest.importorskip("torch")
    from oneply.training.model.export import export_model
    from tests.helpers.model_helpers import predictor_model

    path = tmp_path / "bc.onnx"
    export_model(predictor_model("bc"), path, preset="tiny", trained=False)
    search = {"enabled": True, "nodes": 16}
    config = make_config(server, tmp_path, engine={"fallback": "random", "search": search})
    with caplog.at_level(logging.WARNING):
        Bot(config, scorer=Scorer(path, threads=1)).start_services()
    assert config.engine.search.enabled is False
    assert "event=search_off reason=bc_model" in caplog.text

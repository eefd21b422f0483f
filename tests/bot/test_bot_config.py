"""config.yml at the `oneply bot` command line: every malformed file is one short line, exit 2.

Each variant is a real config file given to a real `oneply bot` process: the bot must stop at
start-up (before any model load or Lichess request), with a single line under 400 characters
that names what is wrong, no traceback, and never the token.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from oneply.bot.config import load_config, parse_config, startup_warnings
from oneply.bot.lichess import Backoff
from oneply.engine.cli import main as cli_main
from tests.conftest import REPO

SECRET = "lip_Sup3rSecretT0ken"
#: a URL where nothing listens: a variant that wrongly passed validation could not reach Lichess
DEAD_URL = "http://127.0.0.1:9"


def _alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


#: libyaml's emitter where PyYAML has it: the pure-Python one takes seconds over the long
#: strings below, at every collection of this module (the files are the same)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _yaml(data: dict) -> str:
    return yaml.dump({"url": DEAD_URL, **data}, Dumper=DUMPER)


#: (id, the file's contents, a fragment the one error line must contain)
VARIANTS: list[tuple[str, str | bytes, str]] = [
    ("token-list", _yaml({"token": [SECRET]}), "'token' must be a string"),
    ("token-number", _yaml({"token": 31415926535897932}), "'token' must be a string"),
    ("token-mapping", _yaml({"token": {"value": SECRET}}), "'token' must be a string"),
    ("whole-file-is-token", f"{SECRET}\n", "must be a mapping"),
    ("token-unterminated-quote", f'token: "{SECRET}\nurl: x\n', "not valid YAML at line"),
    ("token-huge", _yaml({"token": SECRET * 100}), "'token' is too long"),
    ("non-utf8-byte", b"url: 'http://127.0.0.1:9'\nhello: caf\xe9\n", "not UTF-8"),
    ("connect-timeout-1e300", _yaml({"http": {"connect_timeout": 1.0e300}}), "connect_timeout"),
    ("read-timeout-1e300", _yaml({"http": {"read_timeout": 1.0e300}}), "read_timeout"),
    ("read-timeout-nan", "http:\n  read_timeout: .nan\n", "read_timeout"),
    ("read-timeout-inf", "http:\n  read_timeout: .inf\n", "read_timeout"),
    ("read-timeout-0", _yaml({"http": {"read_timeout": 0}}), "http.read_timeout"),
    ("read-timeout-negative", _yaml({"http": {"read_timeout": -5}}), "http.read_timeout"),
    ("read-timeout-text", _yaml({"http": {"read_timeout": "fast"}}), "must be a number"),
    ("abort-time-1e300", _yaml({"abort_time": 1.0e300}), "abort_time"),
    ("abort-time-negative", _yaml({"abort_time": -1}), "abort_time"),
    ("backoff-base-1e-300", _yaml({"http": {"backoff_base": 1e-300}}), "backoff_base"),
    ("backoff-max-0", _yaml({"http": {"backoff_max": 0}}), "http.backoff_max"),
    (
        "backoff-max-below-base",
        _yaml({"http": {"backoff_base": 5, "backoff_max": 2}}),
        "backoff_max",
    ),
    ("threads-100000", _yaml({"engine": {"threads": 100000}}), "engine.threads"),
    ("threads-1000", _yaml({"engine": {"threads": 1000}}), "engine.threads"),
    ("threads-0", _yaml({"engine": {"threads": 0}}), "engine.threads"),
    ("threads-true", _yaml({"engine": {"threads": True}}), "engine.threads"),
    ("alias-bomb-8-levels", _alias_bomb(8), "aliases"),
    ("nested-deep", "url: " + "[" * 200 + "]" * 200 + "\n", "nested deeper"),
    ("file-over-256k", _yaml({"url": "x" * 1_000_000}), "larger than 256 KB"),
    ("pgn-directory-200k", _yaml({"pgn_directory": "d" * 200_000}), "'pgn_directory' is too long"),
    ("hello-100k", _yaml({"greeting": {"hello": "hi " * 33_000}}), "greeting.hello"),
    ("hello-141-chars", _yaml({"greeting": {"hello": "x" * 141}}), "at most 140"),
    ("hello-unknown-field", _yaml({"greeting": {"hello": "Hi {nosuch}"}}), "{'nosuch'}"),
    ("hello-unbalanced-brace", _yaml({"greeting": {"hello": "Hi {"}}), "greeting.hello"),
    ("goodbye-positional", _yaml({"greeting": {"goodbye": "bye {0}"}}), "greeting.goodbye"),
    ("url-empty", yaml.safe_dump({"url": ""}), "'url' must be an http(s) URL"),
    ("url-not-a-url", yaml.safe_dump({"url": "not a url"}), "'url' must be an http(s) URL"),
    ("url-ftp", yaml.safe_dump({"url": "ftp://lichess.org"}), "'url' must be an http(s) URL"),
    ("url-bad-port", yaml.safe_dump({"url": "http://localhost:99999x"}), "'url' must be"),
    ("url-list", yaml.safe_dump({"url": ["https://lichess.org"]}), "'url' must be a string"),
    ("pause-429-lichess", yaml.safe_dump({"rate_limit": {"pause_429": 1}}), "at least 60"),
    (
        "pause-429-LICHESS-uppercase",
        yaml.safe_dump({"url": "https://LICHESS.org", "rate_limit": {"pause_429": 1}}),
        "at least 60",
    ),
    (
        "pause-429-lichess-port-443",
        yaml.safe_dump({"url": "https://lichess.org:443/", "rate_limit": {"pause_429": 1}}),
        "at least 60",
    ),
    ("batch-window-1e12", _yaml({"engine": {"batch_window_ms": 1e12}}), "batch_window_ms"),
    ("pgn-directory-under-a-file", None, "is not a directory"),  # filled in by the test
    (
        "stockfish-path-missing",
        _yaml({"engine": {"stockfish_path": "/nonexistent"}}),
        "/nonexistent",
    ),
    (
        "policy-stockfish-not-executable",
        _yaml({"engine": {"policy": {"stockfish_path": "/etc/passwd"}}}),
        "engine.policy.stockfish_path",
    ),
    ("policy-seed-minus-2", _yaml({"engine": {"policy": {"seed": -2}}}), "engine.policy.seed"),
    ("policy-seed-text", _yaml({"engine": {"policy": {"seed": "x"}}}), "engine.policy.seed"),
    (
        "policy-temperature-text",
        _yaml({"engine": {"policy": {"temperature": "abc"}}}),
        "temperature",
    ),
    ("policy-huge-list", _yaml({"engine": {"policy": ["x" * 50] * 1000}}), "engine.policy"),
    (
        "search-nodes-0",
        _yaml({"engine": {"search": {"enabled": True, "nodes": 0}}}),
        "'engine.search.nodes' must be between 1 and 100000",
    ),
    (
        "search-time-share-2",
        _yaml({"engine": {"search": {"enabled": True, "time_share": 2}}}),
        "'engine.search.time_share' must be between 0.01 and 1",
    ),
    (
        "search-time-share-null",
        _yaml({"engine": {"search": {"enabled": True, "time_share": None}}}),
        "'engine.search.time_share' must be a number",
    ),
    (
        "search-enabled-text",
        _yaml({"engine": {"search": {"enabled": "yes please"}}}),
        "'engine.search.enabled' must be true or false",
    ),
    ("search-batch-0", _yaml({"engine": {"search": {"batch": 0}}}), "engine.search.batch"),
    ("search-key-typo", _yaml({"engine": {"search": {"node": 64}}}), "Did you mean 'nodes'"),
    ("search-not-mapping", _yaml({"engine": {"search": True}}), "'engine.search' must be a"),
    ("max-games-0", _yaml({"challenge": {"max_games": 0}}), "challenge.max_games"),
    ("max-games-100000", _yaml({"challenge": {"max_games": 100000}}), "challenge.max_games"),
    (
        "min-rating-above-max",
        _yaml({"challenge": {"min_rating": 3000, "max_rating": 2000}}),
        "min_rating",
    ),
    ("variant-unknown", _yaml({"challenge": {"variants": ["atomic"]}}), "challenge.variants"),
    ("block-list-entry-huge", _yaml({"challenge": {"block_list": ["x" * 5000]}}), "block_list"),
    ("draw-max-win-2", _yaml({"draw": {"max_win": 2}}), "draw.max_win"),
    ("unknown-key-typo", _yaml({"challenge": {"max_gmaes": 3}}), "Did you mean 'max_games'"),
    ("unknown-key-huge", _yaml({"k" * 100_000: 1}), "unknown config key"),
    ("top-level-list", "- url\n- token\n", "must be a mapping"),
    ("section-not-mapping", _yaml({"http": 5}), "'http' must be a mapping"),
]


def run_bot(*args: str, cwd: Path = REPO, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LICHESS_BOT_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "oneply.engine", "bot", *args],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def _write_variant(tmp_path: Path, contents: str | bytes | None) -> Path:
    path = tmp_path / "config.yml"
    if contents is None:  # a PGN folder under a regular file: nobody can create it
        (tmp_path / "plain-file").write_text("x")
        contents = _yaml({"pgn_directory": str(tmp_path / "plain-file" / "games")})
    path.write_bytes(contents.encode() if isinstance(contents, str) else contents)
    return path


@pytest.mark.parametrize("name, contents, fragment", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_malformed_config_is_one_short_line_and_exit_2(
    tmp_path, monkeypatch, capsys, name, contents, fragment
):
    """`oneply bot` in this process (a process each took seconds: Python and the imports);
    the next test runs a few as the command line does."""
    monkeypatch.delenv("LICHESS_BOT_TOKEN", raising=False)
    code = cli_main(["bot", "--config", str(_write_variant(tmp_path, contents))])
    out, err = capsys.readouterr()
    _assert_one_short_line(code, out, err, fragment)


@pytest.mark.parametrize("name", ["token-unterminated-quote", "non-utf8-byte", "unknown-key-huge"])
def test_malformed_config_as_a_process_is_one_short_line_and_exit_2(tmp_path, name):
    _, contents, fragment = next(v for v in VARIANTS if v[0] == name)
    proc = run_bot("--config", str(_write_variant(tmp_path, contents)))
    _assert_one_short_line(proc.returncode, proc.stdout, proc.stderr, fragment)


def _assert_one_short_line(code: int, stdout: str, stderr: str, fragment: str) -> None:
    output = stdout + stderr
    assert code == 2, output[-2000:]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and stdout == "", output[-2000:]
    assert len(lines[0]) < 400, lines[0][:600]
    assert "Traceback" not in output and "event=model_loaded" not in output
    assert fragment in lines[0], lines[0]
    assert SECRET not in output and "31415926535897932" not in output
    assert "Sup3r" not in output


def test_backoff_never_overflows_and_resets_after_success():
    for base, cap in [(1.0, 60.0), (1e-300, 60.0), (0.001, 3600.0), (5e-324, 1.0)]:
        backoff = Backoff(base, cap, random.Random(1))
        delays = [backoff.next_delay() for _ in range(2000)]
        assert all(0 < d <= cap for d in delays)
        assert min(delays[-100:]) >= cap / 2  # still capped, still jittered, still waiting
        backoff.reset()
        assert backoff.next_delay() <= base


def test_the_packaged_default_config_is_the_repo_config_and_all_defaults():
    packaged = (REPO / "bot" / "config.yml").read_text()
    assert packaged == (REPO / "config.yml").read_text()
    assert load_config(REPO / "config.yml", env={}) == parse_config({}, env={})


def test_init_config_writes_the_documented_defaults_and_never_overwrites(
    tmp_path, monkeypatch, capsys
):
    """`oneply bot --init-config` in this process (the next test runs the bot's command line)."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["bot", "--init-config"]) == 0, capsys.readouterr().err
    written = tmp_path / "config.yml"
    assert written.read_text() == (REPO / "config.yml").read_text()
    assert "oneply bot --config" in capsys.readouterr().out
    written.write_text("token: mine\n")
    assert cli_main(["bot", "--init-config", str(written)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert written.read_text() == "token: mine\n"
    monkeypatch.chdir(REPO)
    assert cli_main(["bot", "--init-config", str(tmp_path / "other.yml")]) == 0
    assert (tmp_path / "other.yml").is_file()


def test_missing_config_points_to_init_config(tmp_path):
    proc = run_bot("--config", str(tmp_path / "nope.yml"))
    assert proc.returncode == 2 and "nope.yml" in proc.stderr and "not found" in proc.stderr
    assert f"--init-config {tmp_path / 'nope.yml'}" in proc.stderr


def test_url_spellings_of_lichess_keep_the_60_s_rule_and_others_do_not():
    for url in ("https://lichess.org", "https://Lichess.Org/", "http://lichess.org:443"):
        with pytest.raises(ValueError, match="at least 60"):
            parse_config({"url": url, "rate_limit": {"pause_429": 1}}, env={})
    config = parse_config({"url": "http://127.0.0.1:8080", "rate_limit": {"pause_429": 1}}, env={})
    assert config.rate_limit.pause_429 == 1


def test_start_up_warns_when_a_fallback_will_find_no_stockfish(stockfish):
    config = parse_config({"url": DEAD_URL}, env={})
    assert startup_warnings(config) == []  # Stockfish is installed (tests/run.sh)
    # as if Stockfish were uninstalled: both fallbacks still play, so it is a warning
    config.engine.stockfish_path = config.engine.policy.stockfish_path = "/nonexistent"
    warnings = startup_warnings(config)
    assert len(warnings) == 2
    assert "random legal move" in warnings[0] and "model alone" in warnings[1]


def test_search_is_off_by_default_and_takes_nodes_or_a_time_share(stockfish):
    default = parse_config({"url": DEAD_URL}, env={}).engine.search
    assert not default.enabled and default.nodes is None and default.time_share == 0.5
    on = parse_config(
        {"url": DEAD_URL, "engine": {"search": {"enabled": True, "nodes": 64, "batch": 4}}},
        env={},
    ).engine.search
    assert on.enabled and on.nodes == 64 and on.batch == 4 and on.time_share == 0.5
    by_time = parse_config(
        {"url": DEAD_URL, "engine": {"search": {"enabled": True, "time_share": 0.25}}}, env={}
    ).engine.search
    assert by_time.nodes is None and by_time.time_share == 0.25
    # settings without `enabled: true` are allowed, but a bot playing without the look-ahead
    # its operator configured says so at start-up
    off = parse_config({"url": DEAD_URL, "engine": {"search": {"nodes": 64}}}, env={})
    assert [w for w in startup_warnings(off) if "engine.search" in w] == [
        "engine.search has settings but engine.search.enabled is false: the bot plays "
        "without look-ahead (set enabled: true to search)"
    ]
    assert startup_warnings(parse_config({"url": DEAD_URL}, env={})) == []

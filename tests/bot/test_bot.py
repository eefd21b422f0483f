"""End-to-end tests of `oneply bot`: the real bot code and the real berserk client against
the fake Lichess server in tests/helpers/lichess_server.py (no mocks of berserk or requests)."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
import time
from argparse import Namespace
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import onnxruntime as ort
import pytest
import yaml

from oneply.bot import main as bot_main
from oneply.bot.batcher import InferenceBatcher
from oneply.bot.challenges import decline_reason
from oneply.bot.config import ChallengeConfig, ConfigError, load_config, parse_config
from oneply.bot.game import millis, think_time
from oneply.bot.lichess import Backoff, Lichess, SetupError
from oneply.bot.main import Bot
from oneply.engine.fallback import Fallback
from oneply.engine.health import check_heartbeat
from oneply.engine.inference import Scorer
from tests.conftest import REPO
from tests.helpers.lichess_server import BOT, FakeGame, FakeLichess, idle_opponent, random_opponent


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    return Scorer(threads=1)


@pytest.fixture(autouse=True)
def private_heartbeat(tmp_path, monkeypatch):
    """Each bot under test beats into its own file, never the machine-wide default."""
    monkeypatch.setenv("ONEPLY_HEARTBEAT", str(tmp_path / "heartbeat"))


@pytest.fixture
def server():
    fake = FakeLichess().start()
    yield fake
    fake.stop()


def make_config(server: FakeLichess, tmp_path: Path, **sections):
    """Test timings: everything small, so that each scenario takes a few seconds."""
    data = {
        "url": server.url,
        "token": "good-token",
        "pgn_directory": str(tmp_path / "games"),
        "abort_time": 20.0,
        "http": {
            "connect_timeout": 2,
            "read_timeout": 0.8,
            "backoff_base": 0.05,
            "backoff_max": 0.3,
        },
        "rate_limit": {"pause_429": 0.3},
        "engine": {"fallback": "random"},
        "greeting": {"hello": "hi {opponent}, I am {me}", "goodbye": "gg {opponent}"},
    }
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return parse_config(data, env={})


@contextlib.contextmanager
def running_bot(config, scorer, server: FakeLichess):
    bot = Bot(config, scorer=scorer)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            bot.run()
        except BaseException as error:  # surfaced in the test below
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield bot
    finally:
        bot.stop()
        server.push_event({"type": "wake"})  # unblock the event stream so the loop sees stop
        thread.join(5)
    assert not errors, errors


def finished(server: FakeLichess, game_id: str) -> bool:
    game = server.games.get(game_id)
    return game is not None and game.status != "started"


def wait_pgn(config, game_id: str, timeout: float = 10.0) -> chess.pgn.Game:
    path = Path(config.pgn_directory) / f"{game_id}.pgn"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with path.open() as handle:
        return chess.pgn.read_game(handle)


# -- config -------------------------------------------------------------------------------------


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


def test_decline_reasons_unit():
    config = ChallengeConfig(humans=False, allow_list=["friend"])
    human = {"challenger": {"id": "friend"}, "speed": "blitz", "timeControl": {"limit": 180}}
    assert decline_reason(human, config, 0) == "onlyBot"
    stranger = {"challenger": {"id": "x", "title": "BOT"}, "speed": "blitz"}
    assert decline_reason(stranger, config, 0) == "generic"


def test_clock_values_int_and_timedelta():
    assert millis(61_000) == 61_000
    assert millis(dt.timedelta(seconds=61)) == 61_000
    assert millis(None) is None
    assert 0.02 <= think_time(1_000, 0) < 1
    assert think_time(None, None) == 10.0


def test_backoff_grows_with_jitter_and_caps():
    backoff = Backoff(0.1, 1.0)
    delays = [backoff.next_delay() for _ in range(8)]
    assert 0.05 <= delays[0] < 0.1 and delays[1] >= 0.1 and max(delays) <= 1.0


class RecordingScorer:
    """A MoveScorer that records the positions of each batched call."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def score(self, board):
        return self.score_many([board])[0]

    def score_many(self, boards):
        self.calls.append([board.fen() for board in boards])
        return self.inner.score_many(boards)


def test_batcher_batches_concurrent_positions(scorer):
    boards = []
    for uci in ["e2e4", "d2d4", "g1f3", "c2c4", "b2b3", "g2g3", "f2f4", "a2a3"]:
        boards.append(chess.Board())
        boards[-1].push_uci(uci)
    # a window far longer than submitting takes: the batch closes when max_batch is reached
    recording = RecordingScorer(scorer)
    batcher = InferenceBatcher(recording, window_s=5.0, max_batch=8)
    futures = [batcher.submit(b) for b in boards]
    results = [f.result(10) for f in futures]
    batcher.close()
    assert recording.calls == [[b.fen() for b in boards]]  # one call, in submission order
    assert batcher.batches == 1 and batcher.positions == 8
    for board, result in zip(boards, results, strict=True):  # each game gets its own scores
        alone = {s.move: s.win for s in scorer.score(board)}
        assert {s.move: pytest.approx(s.win, abs=1e-4) for s in result} == alone
    # more positions than max_batch: full batches, then what is left when the window closes
    recording = RecordingScorer(scorer)
    batcher = InferenceBatcher(recording, window_s=1.0, max_batch=3)
    [f.result(10) for f in [batcher.submit(b) for b in boards]]
    batcher.close()
    assert [len(call) for call in recording.calls] == [3, 3, 2]
    assert batcher.batches == 3 and batcher.positions == 8


# -- start-up checks ----------------------------------------------------------------------------


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


# -- challenges ---------------------------------------------------------------------------------


def test_challenges_accepted_and_declined_per_filter(server, tmp_path, scorer):
    config = make_config(
        server,
        tmp_path,
        challenge={
            "speeds": ["blitz", "rapid"],
            "max_base": 900,
            "modes": ["casual"],
            "bots": False,
            "min_rating": 1000,
            "max_rating": 2500,
            "block_list": ["troll"],
            "max_games": 1,
        },
    )
    with running_bot(config, scorer, server):
        accepted = server.challenge(color="black", opponent=idle_opponent)
        assert server.wait_for(lambda: accepted in server.games)
        expected = {
            server.challenge(variant="chess960"): "variant",
            server.challenge(variant="fromPosition", initial_fen="8/8/8/8/8/8/8/K6k w - - 0 1"): (
                "standard"
            ),
            server.challenge(speed="bullet", limit=60, increment=0): "tooFast",
            server.challenge(speed="rapid", limit=1800, increment=0): "tooSlow",
            server.challenge(correspondence=True): "tooSlow",
            server.challenge(rated=True): "casual",
            server.challenge(challenger="somebot", title="BOT"): "noBot",
            server.challenge(rating=800): "generic",
            server.challenge(challenger="troll"): "generic",
            server.challenge(): "later",  # max_games=1 and one game is running
        }
        assert server.wait_for(lambda: len(server.declined) == len(expected))
    assert server.accepted == [accepted]
    assert server.declined == expected


def test_500_on_accept_is_retried(server, tmp_path, scorer):
    server.accept_500 = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(resign_at_ply=4)
        assert server.wait_for(lambda: finished(server, game_id))
    assert [status for _, status in server.hits("POST", "/accept")] == [500, 200]


# -- games --------------------------------------------------------------------------------------


def stockfish_opponent(engine: chess.engine.SimpleEngine):
    return lambda board: engine.play(board, chess.engine.Limit(depth=6)).move.uci()


def test_full_game_to_checkmate_saves_pgn(server, tmp_path, scorer, caplog, stockfish):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    config = make_config(server, tmp_path)
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        with running_bot(config, scorer, server):
            game_id = server.challenge(color="white", opponent=stockfish_opponent(engine))
            assert server.wait_for(lambda: finished(server, game_id), timeout=60)
            pgn = wait_pgn(config, game_id)
    game = server.games[game_id]
    assert game.status == "mate" and game.winner == "black"
    assert pgn.headers["Result"] == "0-1" and pgn.headers["White"] == "OneplyBot"
    assert [m.uci() for m in pgn.mainline_moves()] == game.moves
    assert pgn.end().board().is_checkmate()
    texts = [text for gid, _, text in server.chat if gid == game_id]
    assert "hi Human1, I am OneplyBot" in texts and "gg Human1" in texts
    moves = [r.getMessage() for r in caplog.records if "event=move " in r.getMessage()]
    assert moves and all(f"game={game_id}" in m and "rule=" in m and "time_ms=" in m for m in moves)
    assert "good-token" not in caplog.text
    # the execution provider is logged, so a silent CPU fallback would be visible
    assert f"provider={scorer.provider}" in caplog.text
    assert scorer.provider in ort.get_available_providers()


def test_full_game_with_search_on_a_bullet_clock_never_loses_on_time(
    server, tmp_path, scorer, caplog, stockfish
):
    """engine.search on, 1+0 with the bot's clock running on the server: every move is
    searched within its share of engine/clock.py's budget, and the game ends on the board."""
    caplog.set_level(logging.INFO, logger="oneply.bot")
    search = {"enabled": True, "time_share": 0.5, "batch": 8}
    config = make_config(server, tmp_path, engine={"fallback": "random", "search": search})
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        with running_bot(config, scorer, server):
            game_id = server.challenge(
                color="white",
                speed="bullet",
                limit=60,
                increment=0,
                opponent=stockfish_opponent(engine),
                clock_ms=60_000,
                increment_ms=0,
                running_clock=True,
            )
            assert server.wait_for(lambda: finished(server, game_id), timeout=150)
            pgn = wait_pgn(config, game_id)
    game = server.games[game_id]
    assert game.status in ("mate", "draw") and game.status != "outoftime", game.status
    assert pgn.headers["Termination"] == game.status and game.bot_left_ms > 0
    searches = [r.getMessage() for r in caplog.records if "event=search " in r.getMessage()]
    moves = [r.getMessage() for r in caplog.records if "event=move " in r.getMessage()]
    assert len(searches) == len(moves) == (len(game.moves) + 1) // 2 >= 10
    fields = [dict(w.split("=", 1) for w in m.split() if "=" in w) for m in searches]
    # the search keeps inside its budget (time_share of it, plus at most one model call)
    assert all(int(f["time_ms"]) <= int(f["budget_ms"]) for f in fields), fields
    assert sum(int(f["nodes"]) > 1 for f in fields) >= len(fields) // 2  # it did look ahead
    assert len(game.think_ms) == len(moves) - 1  # the first move is off the clock


def ended_as_scripted(game: FakeGame, resign_at_ply: int) -> bool:
    """The scripted opponent resigned at its ply, unless the bot mated it first: the model is
    strong enough to mate a random mover, so an early mate is a bot win, not a lost game."""
    bot_won = game.winner == ("white" if game.bot_color == chess.WHITE else "black")
    resigned = game.status == "resign" and len(game.moves) == resign_at_ply
    mated = game.status == "mate" and len(game.moves) < resign_at_ply
    return bot_won and (resigned or mated)


def test_two_concurrent_games(server, tmp_path, scorer):
    config = make_config(server, tmp_path)
    with running_bot(config, scorer, server) as bot:
        ids = [
            server.challenge(color="white", opponent=random_opponent(1), resign_at_ply=25),
            server.challenge(color="black", opponent=random_opponent(2), resign_at_ply=24),
        ]
        assert server.wait_for(lambda: all(finished(server, i) for i in ids), timeout=30)
        pgns = [wait_pgn(config, i) for i in ids]
        overlap = server.wait_for(lambda: len(bot.finished) == 2)
    assert overlap
    assert [p.headers["Result"] for p in pgns] == ["1-0", "0-1"]
    plies = [25, 24]
    assert all(ended_as_scripted(server.games[i], n) for i, n in zip(ids, plies, strict=True))


def test_game_stream_dropped_mid_game_is_resumed(server, tmp_path, scorer):
    config = make_config(server, tmp_path)
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=17)
        server.drop_game_stream_at_ply[game_id] = 6
        assert server.wait_for(lambda: finished(server, game_id), timeout=20)
        pgn = wait_pgn(config, game_id)
    assert server.game_connections[game_id] >= 2
    game = server.games[game_id]
    assert ended_as_scripted(game, 17)  # or the bot mated the random mover first
    assert [m.uci() for m in pgn.mainline_moves()] == game.moves
    assert all(status == 200 for _, status in server.hits("POST", "/move/"))


def test_stalled_event_stream_reconnects(server, tmp_path, scorer):
    server.stall_event_stream = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(resign_at_ply=2)
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
    assert server.event_connections >= 2


def test_429_on_move_pauses_the_endpoint(server, tmp_path, scorer):
    server.move_429 = 1
    server.move_429_retry_after = 1  # longer than the configured 0.3 s: the response wins
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=7)
        assert server.wait_for(lambda: finished(server, game_id), timeout=15)
    hits = server.hits("POST", "/move/")
    assert [s for _, s in hits].count(429) == 1
    first, second = hits[0], hits[1]
    assert first[1] == 429 and second[0] - first[0] >= 1.0
    assert len(server.games[game_id].moves) == 7


def test_429_on_move_pauses_every_concurrent_game_and_none_loses(server, tmp_path, scorer):
    """Lichess counts the account: after a 429 on `move` no game may post a move before the
    pause is over (it would only earn another 429), and every game goes on afterwards."""
    server.move_429 = 1
    server.move_429_retry_after = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        ids = [
            server.challenge(color="white", opponent=random_opponent(1), resign_at_ply=9),
            server.challenge(color="black", opponent=random_opponent(2), resign_at_ply=8),
            server.challenge(color="white", opponent=random_opponent(3), resign_at_ply=7),
        ]
        assert server.wait_for(lambda: all(finished(server, i) for i in ids), timeout=20)
    hits = server.hits("POST", "/move/")
    limited = [t for t, status in hits if status == 429]
    # moves already in flight when the first 429 was sent are refused too; none after that
    assert 1 <= len(limited) <= len(ids), hits
    assert all(t < limited[0] or t - limited[0] >= 1.0 for t, status in hits if status == 200)
    plies = [9, 8, 7]
    assert all(ended_as_scripted(server.games[i], n) for i, n in zip(ids, plies, strict=True))


def test_429_on_chat_does_not_hold_up_concurrent_games(server, tmp_path, scorer):
    """Every game greets before its first move: a paused chat endpoint must not make them
    wait out the pause (with Lichess's 60 s, bullet games would be lost on time)."""
    server.chat_429 = 1
    config = make_config(server, tmp_path, rate_limit={"pause_429": 30})
    with running_bot(config, scorer, server):
        ids = [
            server.challenge(color="white", opponent=random_opponent(1), resign_at_ply=9),
            server.challenge(color="black", opponent=random_opponent(2), resign_at_ply=8),
            server.challenge(color="white", opponent=random_opponent(3), resign_at_ply=7),
        ]
        assert server.wait_for(lambda: all(finished(server, i) for i in ids), timeout=10)
    assert [s for _, s in server.hits("POST", "/chat")].count(429) == 1
    plies = [9, 8, 7]
    assert all(ended_as_scripted(server.games[i], n) for i, n in zip(ids, plies, strict=True))


def test_rejected_move_resyncs_from_server(server, tmp_path, scorer):
    server.reject_moves = 1
    with running_bot(make_config(server, tmp_path), scorer, server):
        game_id = server.challenge(color="white", resign_at_ply=7)
        assert server.wait_for(lambda: finished(server, game_id), timeout=15)
    assert server.game_connections[game_id] >= 2
    assert len(server.games[game_id].moves) == 7


def test_ongoing_game_is_picked_up_at_start(server, tmp_path, scorer):
    game = server.start_game("ongoing1", chess.BLACK, random_opponent(3), announce=False)
    game.resign_at_ply = 10
    with running_bot(make_config(server, tmp_path), scorer, server):
        assert server.wait_for(lambda: finished(server, "ongoing1"), timeout=15)
        # a game that starts while the event stream is down is found after the reconnect
        assert server.wait_for(lambda: server.event_connections == 1)
        missed = server.start_game("missed1", chess.WHITE, random_opponent(4), announce=False)
        missed.resign_at_ply = 7
        server.drop_event_stream = 1
        assert server.wait_for(lambda: finished(server, "missed1"), timeout=15)
    assert len(game.moves) == 10 and len(missed.moves) == 7
    assert server.event_connections >= 2


def test_abort_when_opponent_never_moves(server, tmp_path, scorer):
    config = make_config(server, tmp_path, abort_time=0.5)
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="white", opponent=idle_opponent)
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
        pgn = wait_pgn(config, game_id)
    assert server.games[game_id].status == "aborted"
    assert pgn.headers["Result"] == "*"


def test_draw_offer_accepted_by_rule(server, tmp_path, scorer):
    config = make_config(server, tmp_path, draw={"accept": True, "min_moves": 1, "max_win": 1.0})
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="black", opponent_draw_offer=True)
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
    assert server.games[game_id].status == "draw"


class BrokenScorer:
    def score_many(self, boards):
        raise RuntimeError("model crashed")


def test_inference_failure_still_moves(server, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    with running_bot(make_config(server, tmp_path), BrokenScorer(), server):
        game_id = server.challenge(color="white", resign_at_ply=7)
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
    assert len(server.games[game_id].moves) == 7
    assert "rule=fallback_random" in caplog.text


def test_resign_rule(server, tmp_path, scorer):
    config = make_config(server, tmp_path, resign={"enabled": True, "max_win": 1.0, "moves": 2})
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="white")
        assert server.wait_for(lambda: finished(server, game_id), timeout=10)
    game = server.games[game_id]
    assert game.status == "resign" and game.winner == "black" and len(game.moves) == 2


def test_stockfish_fallback_move(stockfish):
    fallback = Fallback(stockfish, 0.01)
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    move, rule = fallback.move(board)
    fallback.close()
    assert rule == "fallback_stockfish" and move.uci() == "a1a8"
    move, rule = Fallback("/nonexistent/stockfish").move(board)
    assert rule == "fallback_random" and move in board.legal_moves


def test_heartbeat_follows_the_event_stream(server, tmp_path, scorer, monkeypatch):
    """The health check's view of the bot: the heartbeat file is kept fresh while the event
    stream is connected, and a file left silent is reported unhealthy."""
    beat = tmp_path / "heartbeat"
    monkeypatch.setenv("ONEPLY_HEARTBEAT", str(beat))
    with running_bot(make_config(server, tmp_path), scorer, server) as bot:
        bot.heartbeat.interval = 0.05
        assert server.wait_for(lambda: bot.heartbeat.alive.is_set(), timeout=5)
        assert beat.exists()
        first = beat.stat().st_mtime_ns
        assert server.wait_for(lambda: beat.stat().st_mtime_ns > first, timeout=5)
        assert check_heartbeat(beat, max_age=5).startswith("bot event stream alive")
    os.utime(beat, (1, 1))  # long silent
    with pytest.raises(RuntimeError, match="silent"):
        check_heartbeat(beat, max_age=60)


# -- hostile events and careless configs (issue 13) ----------------------------------------------


def test_unreadable_challenges_are_declined_and_the_stream_is_kept(server, tmp_path, scorer):
    """An unknown speed or a non-numeric rating once killed the event stream; Lichess replayed
    the challenge on reconnect and the bot looped forever, never answering the queue."""
    server.replay_pending_challenges = True
    config = make_config(server, tmp_path, challenge={"max_games": 1})
    with running_bot(config, scorer, server):
        bad_speed = server.challenge(speed="hyperBullet")
        bad_rating = server.challenge(rating="strong")  # type: ignore[arg-type]
        bad_clock = server.challenge(limit="soon")  # type: ignore[arg-type]
        good = server.challenge(color="white", resign_at_ply=3)
        assert server.wait_for(lambda: good in server.accepted, timeout=10)
        time.sleep(1.0)  # a looping bot would reconnect many times in this second
    assert server.declined == {bad_speed: "generic", bad_rating: "generic", bad_clock: "generic"}
    assert server.event_connections <= 2


def test_bad_event_does_not_reset_the_backoff_or_break_the_stream(server, tmp_path, scorer):
    config = make_config(server, tmp_path)
    with running_bot(config, scorer, server) as bot:
        server.push_event({"type": "gameStart", "game": "not-a-mapping"})
        good = server.challenge(color="white", resign_at_ply=3)
        assert server.wait_for(lambda: good in server.accepted, timeout=10)
    assert server.event_connections == 1 and bot is not None


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


def test_unreachable_server_retries_with_capped_backoff_and_no_traceback(tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    closed = FakeLichess().start()
    url = closed.url
    closed.stop()  # nothing listens there any more
    config = parse_config(
        {
            "url": url,
            "token": "good-token",
            "rate_limit": {"pause_429": 1},
            "http": {"connect_timeout": 0.2, "backoff_base": 0.05, "backoff_max": 0.2},
        },
        env={},
    )
    bot = Bot(config, scorer=scorer)
    thread = threading.Thread(target=bot.run, daemon=True)
    thread.start()
    time.sleep(3)
    bot.stop()
    thread.join(5)
    assert not thread.is_alive()
    lines = [r.getMessage() for r in caplog.records if "lichess_unreachable" in r.getMessage()]
    assert len(lines) >= 3 and url in lines[0]
    delays = [float(line.split("retry_in_s=")[1].split()[0]) for line in lines]
    assert max(delays) <= 0.2


def test_a_bc_model_turns_engine_search_off_at_start_up(server, tmp_path, caplog):
    """engine.search backs up win probabilities; a bc model's scores are policy
    probabilities, so the bot says so once and plays the one-pass policy."""
    pytest.importorskip("torch")
    from oneply.training.export import export_model
    from tests.helpers.model_helpers import predictor_model

    path = tmp_path / "bc.onnx"
    export_model(predictor_model("bc"), path, preset="tiny", trained=False)
    search = {"enabled": True, "nodes": 16}
    config = make_config(server, tmp_path, engine={"fallback": "random", "search": search})
    with caplog.at_level(logging.WARNING):
        Bot(config, scorer=Scorer(path, threads=1)).start_services()
    assert config.engine.search.enabled is False
    assert "event=search_off reason=bc_model" in caplog.text

"""The opening book and the Syzygy tables in play against the fake Lichess server: their moves
are played and each is logged as the rule that chose it."""

from __future__ import annotations

import logging
import re

import chess
import chess.polyglot
import chess.syzygy
import pytest

from oneply.arena.settings import DEBIAN_BOOKS
from oneply.bot.config import ConfigError, parse_config
from tests.bot.harness import finished, make_config, running_bot
from tests.helpers.lichess_server import idle_opponent, random_opponent
from tests.helpers.syzygy import SYZYGY, needs_tables

pytestmark = pytest.mark.usefixtures("private_heartbeat")

BOOK = next((str(path) for path in DEBIAN_BOOKS if path.exists()), None)


def moves_logged(caplog, game_id: str) -> list[tuple[int, str, str]]:
    """(ply, move, rule) of the bot's logged moves in one game."""
    pattern = re.compile(rf"event=move game={game_id} ply=(\d+) move=(\w+) win=\S+ rule=(\w+)")
    return [
        (int(m[1]), m[2], m[3]) for r in caplog.records if (m := pattern.search(r.getMessage()))
    ]


@pytest.mark.skipif(BOOK is None, reason="no Debian polyglot book (gnuchess-book) here")
def test_book_moves_up_to_max_depth(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    polyglot = {"enabled": True, "book": [BOOK], "selection": "best_move", "max_depth": 2}
    config = make_config(server, tmp_path, engine={"fallback": "random", "polyglot": polyglot})
    with running_bot(config, scorer, server):
        game_id = server.challenge(color="white", opponent=random_opponent(5), resign_at_ply=5)
        assert server.wait_for(lambda: finished(server, game_id), timeout=20)
    with chess.polyglot.open_reader(BOOK) as reader:
        best = reader.find(chess.Board()).move.uci()  # the highest weight
    logged = moves_logged(caplog, game_id)
    assert logged[0] == (0, best, "book")
    assert [rule for ply, _, rule in logged[1:]] and all(
        rule != "book" for _, _, rule in logged[1:]
    )
    assert server.games[game_id].moves[0] == best


@needs_tables
def test_tablebase_wins_a_won_ending(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    syzygy = {"enabled": True, "paths": [SYZYGY], "max_pieces": 4}
    config = make_config(server, tmp_path, engine={"fallback": "random", "syzygy": syzygy})
    fen = "8/8/8/4k3/8/8/8/3QK3 w - - 0 1"  # KQ v K
    with running_bot(config, scorer, server):
        game_id = server.challenge(
            color="white", variant="fromPosition", initial_fen=fen, opponent=random_opponent(6)
        )
        assert server.wait_for(lambda: finished(server, game_id), timeout=30)
    game = server.games[game_id]
    assert game.status == "mate" and game.winner == "white"
    logged = moves_logged(caplog, game_id)
    assert len(logged) == (len(game.moves) + 1) // 2
    assert {rule for _, _, rule in logged} == {"tablebase_win"}


@needs_tables
def test_tablebase_keeps_a_drawn_ending_drawn(server, tmp_path, scorer, caplog):
    caplog.set_level(logging.INFO, logger="oneply.bot")
    syzygy = {"enabled": True, "paths": [SYZYGY]}
    config = make_config(server, tmp_path, engine={"fallback": "random", "syzygy": syzygy})
    fen = "7K/5k2/3r4/4R3/8/8/8/8 w - - 0 1"  # KR v KR: 2 of the 15 moves keep the draw
    board = chess.Board(fen)
    with chess.syzygy.open_tablebase(SYZYGY) as tables:
        drawing = set()
        for move in board.legal_moves:
            board.push(move)
            if tables.probe_wdl(board) == 0:
                drawing.add(move.uci())
            board.pop()
    assert len(drawing) == 2
    with running_bot(config, scorer, server):
        game_id = server.challenge(
            color="white", variant="fromPosition", initial_fen=fen, opponent=idle_opponent
        )
        assert server.wait_for(lambda: moves_logged(caplog, game_id), timeout=20)
    (ply, move, rule) = moves_logged(caplog, game_id)[0]
    assert rule == "tablebase_draw" and move in drawing
    assert server.games[game_id].moves == [move]


def test_book_and_table_config_is_checked(tmp_path):
    with pytest.raises(ConfigError, match="'engine.polyglot.book' must be at least one book"):
        parse_config({"engine": {"polyglot": {"enabled": True}}}, env={})
    missing = str(tmp_path / "nope.bin")
    with pytest.raises(ConfigError, match="'engine.polyglot.book'.*not a readable polyglot book"):
        parse_config({"engine": {"polyglot": {"enabled": True, "book": [missing]}}}, env={})
    with pytest.raises(ConfigError, match="'engine.polyglot.selection' must be one of"):
        parse_config({"engine": {"polyglot": {"selection": "worst_move"}}}, env={})
    with pytest.raises(ConfigError, match=r"'engine.syzygy.paths': no Syzygy tables \(\*.rtbw\)"):
        parse_config({"engine": {"syzygy": {"enabled": True, "paths": [str(tmp_path)]}}}, env={})
    with pytest.raises(ConfigError, match="'engine.syzygy.max_pieces' must be between 3 and 7"):
        parse_config({"engine": {"syzygy": {"max_pieces": 8}}}, env={})

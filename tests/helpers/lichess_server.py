"""A small Lichess-compatible HTTP server for the bot's end-to-end tests.

It speaks the subset of the Lichess bot API that berserk uses for `oneply bot`, on
127.0.0.1, with NDJSON streams in chunked transfer encoding and blank keep-alive lines like
Lichess. It plays the opponent (a scriptable function of the board) and injects faults on
request: a dropped game stream, a stalled event stream, a 429 on the move endpoint, a 500 on
accept, tokens without `bot:play`, accounts without the BOT title. For matchmaking it lists
online bots (`online_bots`), takes the bot's challenges and answers each as that bot's entry in
`bot_answers` says (accept, a decline reason, or ignore); `say` writes a chat line into a game.
`transcript` records, in order, the chat lines both ways and the matchmaking exchanges.

The server is three modules: this one (FakeLichess: the state, the fault switches and the
scripting the tests call; import everything from here), tests/helpers/lichess_game.py (one
game's state and payloads, the scripted opponents) and tests/helpers/lichess_handler.py (the
HTTP handler and routes).
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import chess

from tests.helpers.lichess_game import BOT, FakeGame, Opponent, idle_opponent, random_opponent
from tests.helpers.lichess_handler import QuietServer, handler_for

__all__ = ["BOT", "FakeGame", "FakeLichess", "Opponent", "idle_opponent", "random_opponent"]


class FakeLichess:
    """The server state plus fault switches; `url` is the base URL to give the bot."""

    def __init__(self, keepalive_s: float = 0.1, opponent_delay_s: float = 0.005):
        self.keepalive_s = keepalive_s
        self.opponent_delay_s = opponent_delay_s
        self.tokens: dict[str, dict[str, str]] = {"good-token": {"scopes": "bot:play", "user": BOT}}
        self.titles: dict[str, str | None] = {BOT: "BOT"}
        self.games: dict[str, FakeGame] = {}
        self.challenges: dict[str, dict[str, Any]] = {}
        self.accepted: list[str] = []
        self.declined: dict[str, str] = {}
        self.chat: list[tuple[str, str, str]] = []
        self.requests: list[tuple[float, str, str, int]] = []
        self.events: list[dict[str, Any]] = []
        self.events_cond = threading.Condition()
        self.event_cursor = 0
        self.event_connections = 0
        self.game_connections: dict[str, int] = {}
        # fault injection: counts of faults still to inject
        self.stall_event_stream = 0
        self.move_429 = 0
        self.chat_429 = 0
        self.move_429_retry_after: int | None = None
        # like Lichess, once limited every move is refused until the Retry-After has passed
        self.move_limited_until = 0.0
        self.accept_500 = 0
        self.reject_moves = 0
        self.drop_event_stream = 0
        self.drop_game_stream_at_ply: dict[str, int] = {}
        # like Lichess: each new event stream first replays the challenges still pending
        self.replay_pending_challenges = False
        # matchmaking: who is online, and how each bot answers a challenge from ours
        self.online_bots: list[dict[str, Any]] = []
        self.bot_answers: dict[str, str] = {}  # username -> "accept" | decline reason | "ignore"
        self.outgoing: list[dict[str, Any]] = []  # the bot's challenges, as received
        self.canceled: list[str] = []
        self.matchmade_game_options: dict[str, Any] = {}
        self.transcript: list[str] = []
        self._t0 = time.monotonic()
        self.closing = threading.Event()
        self._ids = itertools.count(1)
        self.server = QuietServer(("127.0.0.1", 0), handler_for(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeLichess:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.closing.set()
        with self.events_cond:
            self.events_cond.notify_all()
        for game in self.games.values():
            game.touch()
        self.server.shutdown()
        self.server.server_close()

    # -- scripting ----------------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.transcript.append(f"[{time.monotonic() - self._t0:7.2f}s] {text}")

    def say(self, game_id: str, text: str, room: str = "player", username: str = "human1") -> None:
        """A chat line from `username` in a game's room (player or spectator)."""
        game = self.games[game_id]
        self.note(f"chat {game_id} {room:9} {username}: {text}")
        game.chat_lines.append(
            {"type": "chatLine", "room": room, "username": username, "text": text}
        )
        game.touch()

    def add_online_bot(self, name: str, rating: int = 1800, answer: str = "accept") -> None:
        perfs = {s: {"rating": rating, "games": 500} for s in ("bullet", "blitz", "rapid")}
        self.online_bots.append(
            {"id": name.lower(), "username": name, "title": "BOT", "perfs": perfs}
        )
        self.bot_answers[name.lower()] = answer

    def push_event(self, event: dict[str, Any]) -> None:
        with self.events_cond:
            self.events.append(event)
            self.events_cond.notify_all()

    def challenge(
        self,
        *,
        variant: str = "standard",
        speed: str = "blitz",
        limit: int = 180,
        increment: int = 2,
        rated: bool = False,
        challenger: str = "human1",
        title: str | None = None,
        rating: int = 1500,
        color: str = "white",
        initial_fen: str | None = None,
        correspondence: bool = False,
        opponent: Opponent | None = None,
        **game_options: Any,
    ) -> str:
        """Send a challenge to the bot; `color` is the bot's colour if accepted."""
        challenge_id = f"ch{next(self._ids):06d}"
        control = (
            {"type": "correspondence", "daysPerTurn": 3}
            if correspondence
            else {"type": "clock", "limit": limit, "increment": increment, "show": "3+2"}
        )
        body = {
            "id": challenge_id,
            "url": f"{self.url}/{challenge_id}",
            "status": "created",
            "challenger": {"id": challenger, "name": challenger, "title": title, "rating": rating},
            "destUser": {"id": BOT, "name": "OneplyBot", "title": "BOT"},
            "variant": {"key": variant, "name": variant, "short": variant},
            "rated": rated,
            "speed": "correspondence" if correspondence else speed,
            "timeControl": control,
            "color": color,
            "finalColor": color,
            "perf": {"icon": "", "name": speed},
            "direction": "in",
        }
        if initial_fen:
            body["initialFen"] = initial_fen
        game_options.setdefault("opponent_name", challenger)
        self.challenges[challenge_id] = {
            "body": body,
            "opponent": opponent or random_opponent(),
            "options": game_options,
        }
        self.push_event({"type": "challenge", "challenge": body})
        return challenge_id

    def start_game(
        self, game_id: str, bot_color: chess.Color, opponent: Opponent, announce: bool = True, **kw
    ) -> FakeGame:
        game = FakeGame(game_id, bot_color, opponent, **kw)
        self.games[game_id] = game
        threading.Thread(target=self._play_opponent, args=(game,), daemon=True).start()
        if announce:
            color = "white" if bot_color == chess.WHITE else "black"
            self.push_event(
                {"type": "gameStart", "game": {"gameId": game_id, "id": game_id, "color": color}}
            )
        return game

    def _play_opponent(self, game: FakeGame) -> None:
        """The scripted opponent: moves whenever it is its turn."""
        while not self.closing.is_set():
            with game.cond:
                board = game.board()
                if game.status != "started":
                    return
                if board.turn == game.bot_color:
                    if game.running_clock and game.bot_clock_ms() <= 0:
                        game.end("outoftime", not game.bot_color)  # the bot's flag fell
                        return
                    game.cond.wait(0.05 if game.running_clock else 0.2)
                    continue
            if game.resign_at_ply is not None and board.ply() >= game.resign_at_ply:
                game.end("resign", game.bot_color)
                return
            time.sleep(self.opponent_delay_s)
            uci = game.opponent(board)
            if uci is None:
                with game.cond:
                    game.cond.wait(0.2)
                continue
            game.push(uci)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()

    def hits(self, method: str, pattern: str) -> list[tuple[float, int]]:
        """(time, status) of the requests whose path matches `pattern`."""
        return [(t, s) for t, m, p, s in self.requests if m == method and re.search(pattern, p)]

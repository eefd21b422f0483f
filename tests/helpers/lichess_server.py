"""A small Lichess-compatible HTTP server for the bot's end-to-end tests.

It speaks the subset of the Lichess bot API that berserk uses for `oneply bot`, on
127.0.0.1, with NDJSON streams in chunked transfer encoding and blank keep-alive lines like
Lichess. It plays the opponent (a scriptable function of the board) and injects faults on
request: a dropped game stream, a stalled event stream, a 429 on the move endpoint, a 500 on
accept, tokens without `bot:play`, accounts without the BOT title. For matchmaking it lists
online bots (`online_bots`), takes the bot's challenges and answers each as that bot's entry in
`bot_answers` says (accept, a decline reason, or ignore); `say` writes a chat line into a game.
`transcript` records, in order, the chat lines both ways and the matchmaking exchanges.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

import chess

Opponent = Callable[[chess.Board], str | None]
BOT = "oneplybot"


def random_opponent(seed: int = 0) -> Opponent:
    rng = random.Random(seed)
    return lambda board: rng.choice(list(board.legal_moves)).uci()


def idle_opponent(board: chess.Board) -> str | None:
    """Never moves (for the abort scenario)."""
    return None


@dataclass
class FakeGame:
    id: str
    bot_color: chess.Color
    opponent: Opponent
    opponent_name: str = "human1"
    initial_fen: str = "startpos"
    clock_ms: int = 180_000
    increment_ms: int = 2_000
    rated: bool = False
    speed: str = "blitz"
    resign_at_ply: int | None = None
    moves: list[str] = field(default_factory=list)
    status: str = "started"
    winner: str | None = None
    opponent_draw_offer: bool = False
    #: the bot's clock runs as on Lichess: each move costs the time since its turn began
    #: (plus the increment after it), and a bot that lets it reach zero loses on time
    running_clock: bool = False
    bot_left_ms: float = 0.0
    turn_started: float = field(default_factory=time.monotonic)
    think_ms: list[float] = field(default_factory=list)  # the bot's time for each move
    chat_lines: list[dict[str, Any]] = field(default_factory=list)  # chatLine events to send
    version: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self.bot_left_ms = float(self.clock_ms)

    def board(self) -> chess.Board:
        board = chess.Board() if self.initial_fen == "startpos" else chess.Board(self.initial_fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board

    def player(self, color: chess.Color) -> dict[str, Any]:
        if color == self.bot_color:
            return {"id": BOT, "name": "OneplyBot", "title": "BOT", "rating": 2000}
        return {"id": self.opponent_name, "name": self.opponent_name.title(), "rating": 1500}

    def bot_clock_ms(self) -> float:
        """What the bot has left now (its turn's time counted as it runs)."""
        if self.board().turn == self.bot_color and self.status == "started":
            return self.bot_left_ms - 1000 * (time.monotonic() - self.turn_started)
        return self.bot_left_ms

    def state(self) -> dict[str, Any]:
        offer = "bdraw" if self.bot_color == chess.WHITE else "wdraw"
        bot_ms = int(self.bot_left_ms) if self.running_clock else self.clock_ms
        white, black = (bot_ms, self.clock_ms) if self.bot_color else (self.clock_ms, bot_ms)
        state = {
            "type": "gameState",
            "moves": " ".join(self.moves),
            "wtime": white,
            "btime": black,
            "winc": self.increment_ms,
            "binc": self.increment_ms,
            "status": self.status,
            offer: self.opponent_draw_offer,
        }
        if self.winner:
            state["winner"] = self.winner
        return state

    def full(self) -> dict[str, Any]:
        return {
            "type": "gameFull",
            "id": self.id,
            "rated": self.rated,
            "speed": self.speed,
            "variant": {"key": "standard" if self.initial_fen == "startpos" else "fromPosition"},
            "clock": {"initial": self.clock_ms, "increment": self.increment_ms},
            "createdAt": int(time.time() * 1000),
            "white": self.player(chess.WHITE),
            "black": self.player(chess.BLACK),
            "initialFen": self.initial_fen,
            "state": self.state(),
        }

    def push(self, uci: str) -> None:
        """Play a move (already checked legal) and settle the result if the game ended."""
        # like Lichess, the clocks start after each side's first move
        if self.running_clock and self.board().turn == self.bot_color and len(self.moves) >= 2:
            self.think_ms.append(1000 * (time.monotonic() - self.turn_started))
            self.bot_left_ms -= self.think_ms[-1]
            if self.bot_left_ms <= 0:
                self.end("outoftime", not self.bot_color)
                return
            self.bot_left_ms += self.increment_ms
        self.turn_started = time.monotonic()
        self.moves.append(uci)
        board = self.board()
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            mated = outcome.termination == chess.Termination.CHECKMATE
            self.status = "mate" if mated else "draw"
            if outcome.winner is not None:
                self.winner = "white" if outcome.winner else "black"
        self.touch()

    def end(self, status: str, winner: chess.Color | None) -> None:
        self.status = status
        self.winner = None if winner is None else ("white" if winner else "black")
        self.touch()

    def touch(self) -> None:
        with self.cond:
            self.version += 1
            self.cond.notify_all()


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
        self.server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
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


class _QuietServer(ThreadingHTTPServer):
    """Clients dropping connections is what these tests do; do not print tracebacks."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def _handler_for(lichess: FakeLichess) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        fake = lichess

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeLichess

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    # -- plumbing -----------------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.fake.requests.append((time.monotonic(), self.command, self.path, status))

    def _ok(self) -> None:
        self._json(200, {"ok": True})

    def _user(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        entry = self.fake.tokens.get(auth.removeprefix("Bearer ").strip())
        return entry["user"] if entry else None

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.fake.requests.append((time.monotonic(), self.command, self.path, 200))

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _line(self, payload: dict[str, Any] | None) -> None:
        self._chunk((json.dumps(payload) if payload is not None else "").encode() + b"\n")

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _route(self, method: str) -> None:
        path = urlparse(self.path).path
        body = self._body() if method == "POST" else b""
        if method == "POST" and path == "/api/token/test":
            return self._token_test(body)
        user = self._user()
        if user is None:
            return self._json(401, {"error": "No such token"})
        for pattern, handler in ROUTES[method]:
            match = re.fullmatch(pattern, path)
            if match:
                try:
                    return handler(self, user, body, *match.groups())
                except (BrokenPipeError, ConnectionResetError):
                    return None
        return self._json(404, {"error": "Not found"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    # -- account ------------------------------------------------------------------------------

    def _token_test(self, body: bytes) -> None:
        result = {}
        for token in body.decode().split(","):
            entry = self.fake.tokens.get(token)
            result[token] = (
                {"scopes": entry["scopes"], "userId": entry["user"], "expires": None}
                if entry
                else None
            )
        self._json(200, result)

    def account(self, user: str, body: bytes) -> None:
        info: dict[str, Any] = {"id": user.lower(), "username": "OneplyBot"}
        if self.fake.titles.get(user):
            info["title"] = self.fake.titles[user]
        self._json(200, info)

    def upgrade(self, user: str, body: bytes) -> None:
        self.fake.titles[user] = "BOT"
        self._ok()

    def playing(self, user: str, body: bytes) -> None:
        now = [
            {
                "gameId": g.id,
                "fullId": g.id + "abcd",
                "color": "white" if g.bot_color == chess.WHITE else "black",
                "isMyTurn": g.board().turn == g.bot_color,
            }
            for g in self.fake.games.values()
            if g.status == "started"
        ]
        self._json(200, {"nowPlaying": now})

    # -- streams ------------------------------------------------------------------------------

    def event_stream(self, user: str, body: bytes) -> None:
        fake = self.fake
        fake.event_connections += 1
        self._start_stream()
        if fake.replay_pending_challenges:  # those already sent once and still unanswered
            answered = set(fake.accepted) | set(fake.declined)
            for event in fake.events[: fake.event_cursor]:
                challenge = event.get("challenge") or {}
                if event.get("type") == "challenge" and challenge.get("id") not in answered:
                    self._line(event)
        if fake.stall_event_stream > 0:
            fake.stall_event_stream -= 1
            fake.closing.wait(5)  # hold the connection open and send nothing at all
            return
        while not fake.closing.is_set():
            if fake.drop_event_stream > 0:
                fake.drop_event_stream -= 1
                self.close_connection = True  # no final chunk: a broken stream
                return
            with fake.events_cond:
                if fake.event_cursor >= len(fake.events):
                    fake.events_cond.wait(fake.keepalive_s)
                pending = fake.events[fake.event_cursor :]
                fake.event_cursor = len(fake.events)
            for event in pending:
                self._line(event)
            if not pending:
                self._line(None)  # keep-alive blank line
        self.close_connection = True

    def game_stream(self, user: str, body: bytes, game_id: str) -> None:
        fake = self.fake
        game = fake.games.get(game_id)
        if game is None:
            return self._json(404, {"error": "No such game"})
        fake.game_connections[game_id] = fake.game_connections.get(game_id, 0) + 1
        self._start_stream()
        with game.cond:
            seen = game.version
            chat_seen = len(game.chat_lines)  # like Lichess: no replay of earlier chat
            self._line(game.full())
            last_state = game.state()
        while not fake.closing.is_set():
            drop_at = fake.drop_game_stream_at_ply.get(game_id)
            if drop_at is not None and len(game.moves) >= drop_at:
                del fake.drop_game_stream_at_ply[game_id]
                self.close_connection = True  # no final chunk: the client sees a broken stream
                return
            with game.cond:
                if game.version == seen:
                    game.cond.wait(fake.keepalive_s)
                changed = game.version != seen
                seen = game.version
                state = game.state()
                lines = game.chat_lines[chat_seen:]
                chat_seen += len(lines)
            for line in lines:
                self._line(line)
            if changed and state != last_state:
                self._line(state)
                last_state = state
            elif not lines:
                self._line(None)
            if state["status"] != "started":
                self._end_stream()
                return
        self.close_connection = True

    # -- actions ------------------------------------------------------------------------------

    def move(self, user: str, body: bytes, game_id: str, uci: str) -> None:
        fake = self.fake
        if fake.move_429 > 0 or time.monotonic() < fake.move_limited_until:
            headers = {}
            if fake.move_429 > 0:
                fake.move_429 -= 1
                fake.move_limited_until = time.monotonic() + (fake.move_429_retry_after or 0)
            if fake.move_429_retry_after is not None:
                headers["Retry-After"] = str(fake.move_429_retry_after)
            return self._json(429, {"error": "Too many requests. Try again later."}, headers)
        game = fake.games.get(game_id)
        if game is None:
            return self._json(404, {"error": "No such game"})
        if fake.reject_moves > 0:
            fake.reject_moves -= 1
            return self._json(400, {"error": "Not your turn, or game already over"})
        with game.cond:
            board = game.board()
            legal = {m.uci() for m in board.legal_moves}
            if game.status != "started" or board.turn != game.bot_color or uci not in legal:
                return self._json(400, {"error": "Not your turn, or game already over"})
            game.push(uci)
        self._ok()

    def accept(self, user: str, body: bytes, challenge_id: str) -> None:
        fake = self.fake
        if fake.accept_500 > 0:
            fake.accept_500 -= 1
            return self._json(500, {"error": "Internal server error"})
        entry = fake.challenges.get(challenge_id)
        if entry is None:
            return self._json(404, {"error": "Not found"})
        fake.accepted.append(challenge_id)
        challenge = entry["body"]
        self._ok()
        color = chess.WHITE if challenge["finalColor"] == "white" else chess.BLACK
        fake.start_game(
            challenge_id,
            color,
            entry["opponent"],
            initial_fen=challenge.get("initialFen", "startpos"),
            rated=challenge["rated"],
            speed=challenge["speed"],
            **entry["options"],
        )

    def decline(self, user: str, body: bytes, challenge_id: str) -> None:
        reason = json.loads(body or b"{}").get("reason", "generic")
        self.fake.declined[challenge_id] = reason
        self._ok()

    def chat(self, user: str, body: bytes, game_id: str) -> None:
        if self.fake.chat_429 > 0:
            self.fake.chat_429 -= 1
            return self._json(429, {"error": "Too many requests. Try again later."})
        payload = _payload(body)
        room, text = payload.get("room", ""), payload.get("text", "")
        self.fake.chat.append((game_id, room, text))
        self.fake.note(f"chat {game_id} {room:9} {BOT}: {text}")
        self._ok()

    # -- matchmaking --------------------------------------------------------------------------

    def online(self, user: str, body: bytes) -> None:
        fake = self.fake
        fake.note(f"GET /api/bot/online: {len(fake.online_bots)} bots")
        self._start_stream()
        for bot in fake.online_bots:
            self._line(bot)
        self._end_stream()

    def create_challenge(self, user: str, body: bytes, username: str) -> None:
        fake = self.fake
        payload = _payload(body)
        challenge_id = f"mm{next(fake._ids):06d}"
        fake.outgoing.append({"id": challenge_id, "username": username, **payload})
        clock = f"{payload.get('clock.limit')}+{payload.get('clock.increment')}"
        rated = "rated" if str(payload.get("rated")).lower() == "true" else "casual"
        fake.note(f"challenge {challenge_id}: {BOT} -> {username} {clock} {rated}")
        body_out = {
            "id": challenge_id,
            "direction": "out",
            "status": "created",
            "challenger": {"id": BOT, "name": "OneplyBot", "title": "BOT"},
            "destUser": {"id": username.lower(), "name": username, "title": "BOT"},
        }
        self._json(200, body_out)
        fake.push_event({"type": "challenge", "challenge": body_out})
        answer = fake.bot_answers.get(username.lower(), "ignore")
        if answer == "ignore":
            return
        if answer == "accept":
            fake.note(f"challenge {challenge_id}: {username} accepts")
            options = {"opponent_name": username.lower(), **fake.matchmade_game_options}
            fake.start_game(challenge_id, chess.WHITE, random_opponent(), **options)
            return
        fake.note(f"challenge {challenge_id}: {username} declines ({answer})")
        declined = {**body_out, "status": "declined", "declineReasonKey": answer}
        fake.push_event({"type": "challengeDeclined", "challenge": declined})

    def cancel_challenge(self, user: str, body: bytes, challenge_id: str) -> None:
        self.fake.canceled.append(challenge_id)
        self.fake.note(f"challenge {challenge_id}: canceled by {BOT}")
        self._ok()

    def abort(self, user: str, body: bytes, game_id: str) -> None:
        game = self.fake.games.get(game_id)
        if game is None or game.status != "started" or len(game.moves) >= 2:
            return self._json(400, {"error": "This game cannot be aborted"})
        game.end("aborted", None)
        self._ok()

    def resign(self, user: str, body: bytes, game_id: str) -> None:
        game = self.fake.games[game_id]
        game.end("resign", not game.bot_color)
        self._ok()

    def draw(self, user: str, body: bytes, game_id: str, answer: str) -> None:
        game = self.fake.games[game_id]
        if answer == "yes" and game.opponent_draw_offer:
            game.end("draw", None)
        self._ok()


def _payload(body: bytes) -> dict[str, Any]:
    """A JSON or form-encoded request body (berserk sends both)."""
    text = body.decode() if body else ""
    if text.startswith("{"):
        return dict(json.loads(text))
    from urllib.parse import parse_qsl

    return dict(parse_qsl(text))


ROUTES: dict[str, list[tuple[str, Callable[..., None]]]] = {
    "GET": [
        (r"/api/account", _Handler.account),
        (r"/api/account/playing", _Handler.playing),
        (r"/api/stream/event", _Handler.event_stream),
        (r"/api/bot/game/stream/(\w+)", _Handler.game_stream),
        (r"/api/bot/online", _Handler.online),
    ],
    "POST": [
        (r"/api/bot/account/upgrade", _Handler.upgrade),
        (r"/api/bot/game/(\w+)/move/(\w+)", _Handler.move),
        (r"/api/challenge/(\w+)/accept", _Handler.accept),
        (r"/api/challenge/(\w+)/decline", _Handler.decline),
        (r"/api/challenge/(\w+)/cancel", _Handler.cancel_challenge),
        (r"/api/challenge/(\w+)", _Handler.create_challenge),
        (r"/api/bot/game/(\w+)/chat", _Handler.chat),
        (r"/api/bot/game/(\w+)/abort", _Handler.abort),
        (r"/api/bot/game/(\w+)/resign", _Handler.resign),
        (r"/api/bot/game/(\w+)/draw/(yes|no)", _Handler.draw),
    ],
}

"""The fake Lichess server's HTTP side: the request handler and the routes of the bot API.

It turns each request berserk sends into a reply from the FakeLichess state (accounts, NDJSON
event and game streams in chunked transfer encoding, moves, challenges, chat, matchmaking) and
injects the faults FakeLichess is switched to. Kept apart from tests/helpers/lichess_server.py,
the entry point the tests import, so that the server's state and scripting read on their own.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import chess

from tests.helpers.lichess_game import BOT, random_opponent

if TYPE_CHECKING:
    from tests.helpers.lichess_server import FakeLichess


class QuietServer(ThreadingHTTPServer):
    """Clients dropping connections is what these tests do; do not print tracebacks."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def handler_for(lichess: FakeLichess) -> type[BaseHTTPRequestHandler]:
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

"""One Lichess game: follow its stream, keep the board, move on our turn, save the PGN.

The board is rebuilt from the server's move list on every state, so a reconnect, a rejected
move or a missed event can never leave us on a different position from Lichess: the server
is the truth and we resync from it. Clocks arrive as int milliseconds in `gameFull.state`
but as `timedelta` in `gameState` (berserk converts only those); `millis` reads both.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn
from berserk.exceptions import ResponseError

from oneply.bot import commands as _commands  # noqa: F401 - registers the built-in commands
from oneply.bot.batcher import InferenceBatcher
from oneply.bot.book import BookAndTables
from oneply.bot.chat import Activity, ChatContext, Conversation
from oneply.bot.config import BotConfig
from oneply.bot.config_checks import MAX_CHAT
from oneply.bot.lichess import Lichess, RateLimited, is_transient, status_of
from oneply.bot.payloads import ChatLine, Clock, GameFull, GameState, Player
from oneply.engine.files import write_atomic
from oneply.engine.play.clock import MAX_THINK_MS, MeasuredOverhead, search_time, think_budget_ms
from oneply.engine.play.fallback import Fallback
from oneply.engine.play.inference import MoveScore
from oneply.engine.play.policy import MovePolicy
from oneply.engine.play.search import Limits, TreeSearch

log = logging.getLogger("oneply.bot")

RUNNING = {"created", "started"}
DRAWN = {"draw", "stalemate", "outoftime", "insufficientMaterial", "timeout"}


class Resync(Exception):
    """The server rejected a move: reconnect the game stream and play from its state."""


def millis(value: Clock | None) -> int | None:
    """Clock values: int ms (gameFull.state), timedelta (berserk's gameState), or absent."""
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def think_time(remaining_ms: int | None, increment_ms: int | None, overhead_ms: float = 0) -> float:
    """Seconds we may spend on this move: engine/play/clock.py's budget, the same as the UCI
    engine's, with the bot's measured cost of a move outside thinking as its overhead;
    MAX_THINK_MS for a game without a clock (correspondence, unlimited)."""
    budget_ms = think_budget_ms(remaining_ms, increment_ms, None, overhead_ms)
    seconds: float = (MAX_THINK_MS if budget_ms is None else budget_ms) / 1000
    return seconds


class BatcherScorer:
    """The shared batcher as one game's search scorer (engine.search): a search's leaves go
    into the same batched model calls as every other game's positions, and a call that has
    not come back by `timeout` raises, so a hung model falls back instead of losing on time."""

    def __init__(self, batcher: InferenceBatcher) -> None:
        self.batcher = batcher
        self.timeout = 0.5

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.score_many([board])[0]

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        return self.batcher.score_many(boards, self.timeout)


def pgn_result(status: str, winner: str | None) -> str:
    if winner == "white":
        return "1-0"
    if winner == "black":
        return "0-1"
    return "1/2-1/2" if status in DRAWN else "*"


@dataclass
class Services:
    """What every game shares: the client, the config and the inference worker."""

    lichess: Lichess
    config: BotConfig
    batcher: InferenceBatcher
    fallback: Fallback
    new_policy: Callable[[], MovePolicy]
    model_name: str = "oneply"
    engine_line: str = "oneply"  # what !name says: engine, model, parameter count
    activity: Callable[[], Activity] = field(default=lambda: Activity(games=[], max_games=0))
    book: BookAndTables | None = None  # engine.polyglot and engine.syzygy, when enabled


class Game:
    """One game's loop (runs in its own thread)."""

    def __init__(self, game_id: str, services: Services, stop: threading.Event | None = None):
        self.id = game_id
        self.s = services
        self.stop = stop or threading.Event()
        self.color: chess.Color = chess.WHITE
        self.initial_fen = chess.STARTING_FEN
        self.board = chess.Board()
        self.full: GameFull = {}
        self.state: GameState = {}
        self.status = "created"
        self.winner: str | None = None
        self.moved_at_ply: int | None = None
        self.last_win: float | None = None
        self.low_win_moves = 0
        self.draw_answered_ply: int | None = None
        self.greeted = False
        self.abort_timer: threading.Timer | None = None
        self.pgn_path: Path | None = None
        self.tree: TreeSearch | None = None  # engine.search's look-ahead, kept move to move
        self.search_seconds = 0.0  # the look-ahead's share of the move being played
        self.overhead = MeasuredOverhead()
        self.conversation = Conversation(services.config.chat, services.lichess.username)

    @property
    def finished(self) -> bool:
        return self.status not in RUNNING

    @property
    def opponent(self) -> Player:
        opponent = self.full.get("black") if self.color == chess.WHITE else self.full.get("white")
        return opponent or Player()

    # -- the stream loop ------------------------------------------------------------------

    def run(self) -> None:
        log.info("event=game_start game=%s", self.id)
        policy = self.s.new_policy()
        policy.new_game()
        backoff = self.s.lichess.backoff()
        rejections = 0
        try:
            while not self.finished and not self.stop.is_set():
                try:
                    self._follow_stream(policy)
                    backoff.reset()
                except Resync:
                    rejections += 1  # resync at once; if it keeps happening, slow down
                    if rejections > 1:
                        self.stop.wait(backoff.next_delay())
                    continue
                except RateLimited:
                    continue  # the next call waits out the pause
                except Exception as error:
                    if not is_transient(error):
                        log.error("event=game_error game=%s error=%r", self.id, error)
                        if status_of(error) == 404:
                            self.status = "gone"
                        if status_of(error) is not None:
                            break
                    delay = backoff.next_delay()
                    log.warning(
                        "event=game_reconnect game=%s error=%s delay_s=%.2f",
                        self.id,
                        type(error).__name__,
                        delay,
                    )
                    self.stop.wait(delay)
        finally:
            self._cancel_abort_timer()
            policy.close()
        if self.full and (self.finished or self.status == "gone"):
            self._game_over()

    def _follow_stream(self, policy: MovePolicy) -> None:
        """Handle events until the game ends or the stream breaks (then the caller reconnects
        and the first event, a fresh gameFull, resyncs the board)."""
        self.moved_at_ply = None
        for event in self.s.lichess.stream_game(self.id):
            kind = event.get("type")
            if kind == "gameFull":
                self._on_full(event)
                self._on_state(event.get("state") or GameState(), policy)
            elif kind == "gameState":
                self._on_state(event, policy)
            elif kind == "chatLine":
                self._on_chat(event)
            elif kind == "opponentGone":
                log.info("event=opponent_gone game=%s gone=%s", self.id, event.get("gone"))
            if self.finished or self.stop.is_set():
                return
        if not self.finished:
            log.warning("event=game_stream_ended game=%s", self.id)
            raise ConnectionError("game stream ended before the game did")

    def _on_full(self, full: GameFull) -> None:
        self.full = full
        me = self.s.lichess.username.lower()
        white = (full.get("white") or Player()).get("id", "")
        self.color = chess.WHITE if str(white).lower() == me else chess.BLACK
        fen = full.get("initialFen") or "startpos"
        self.initial_fen = chess.STARTING_FEN if fen == "startpos" else fen
        if not self.greeted:
            self.greeted = True
            self._say(self.s.config.greeting.hello, self.s.config.greeting.hello_spectators)
            self._start_abort_timer()

    def _on_state(self, state: GameState, policy: MovePolicy) -> None:
        self.state = state
        self.status = state.get("status", "started")
        self.winner = state.get("winner")
        board = chess.Board(self.initial_fen)
        for uci in (state.get("moves") or "").split():
            board.push_uci(uci)
        self.board = board
        if self.finished:
            return
        self._answer_draw_offer()
        if board.turn == self.color and self.moved_at_ply != board.ply():
            self._play(policy)

    # -- moving ---------------------------------------------------------------------------

    def _clock(self) -> tuple[int | None, int | None]:
        if self.color == chess.WHITE:
            return millis(self.state.get("wtime")), millis(self.state.get("winc"))
        return millis(self.state.get("btime")), millis(self.state.get("binc"))

    def choose(
        self, policy: MovePolicy, board: chess.Board, budget: float
    ) -> tuple[chess.Move, float | None, str]:
        """(move, expected win or None, rule): the policy on the model's scores; on any
        failure a fallback move, so that a bug never loses a game on time."""
        deadline = time.monotonic() + budget
        from_files = self.s.book.choose(board) if self.s.book is not None else None
        if from_files is not None and from_files.move is not None:
            return from_files.move, None, from_files.rule
        try:
            scores = self._scores(board, budget)
            if from_files is not None:  # a drawn ending: the model picks among the draws
                allowed = set(from_files.allowed)
                kept = [score for score in scores if score.move in allowed]
                if kept:
                    return kept[0].move, kept[0].win, from_files.rule
            decision = policy.choose(board, scores, deadline)
            return decision.move, decision.win, decision.rule
        except Exception as error:
            log.error("event=engine_failed game=%s error=%r", self.id, error)
            move, rule = self.s.fallback.move(board, deadline - time.monotonic())
            return move, None, rule

    def _scores(self, board: chess.Board, budget: float) -> list[MoveScore]:
        """The moves for the policy, best first: the model's one pass, or with engine.search
        on, the look-ahead's ranking within `time_share` of the budget and `nodes`."""
        search = self.s.config.engine.search
        timeout = max(0.5, budget)
        if not search.enabled:
            return self.s.batcher.score(board, timeout=timeout)
        if self.tree is None:
            tables = self.s.book.tablebase if self.s.book is not None else None
            self.tree = TreeSearch(
                BatcherScorer(self.s.batcher),
                batch=search.batch,
                tablebase=tables,  # engine.syzygy settles the tree's endings too
                tablebase_pieces=self.s.config.engine.syzygy.max_pieces,
            )
        assert isinstance(self.tree.scorer, BatcherScorer)
        self.tree.scorer.timeout = timeout
        clock = search_time(1000 * budget, self.tree.node_seconds(), search.time_share)
        if clock is None or board.legal_moves.count() == 1:  # nothing a search could buy
            why = "one_legal_move" if clock is not None else "short_clock"
            log.info("event=search_skipped game=%s ply=%d reason=%s", self.id, board.ply(), why)
            return self.s.batcher.score(board, timeout=timeout)
        limits = Limits(nodes=search.nodes, seconds=clock.limit, stop=self.stop, clock=clock)
        info, ranked = self.tree.rank(board, limits)
        self.search_seconds = info.seconds
        log.info(
            "event=search game=%s ply=%d nodes=%d depth=%d seldepth=%d nps=%d time_ms=%d "
            "budget_ms=%d pv=%s",
            self.id,
            board.ply(),
            info.nodes,
            info.depth,
            info.seldepth,
            info.nps,
            info.seconds * 1000,
            budget * 1000,
            " ".join(m.uci() for m in info.pv[:8]),
        )
        if not ranked:  # never a null move: Game.choose falls back instead
            raise RuntimeError(f"the search returned no move in {board.fen()}")
        return ranked

    def _play(self, policy: MovePolicy) -> None:
        started = time.monotonic()
        remaining, increment = self._clock()
        board = self.board.copy()
        self.overhead.turn(remaining, increment)
        self.search_seconds = 0.0
        overhead_ms = self.overhead.ms
        budget = think_time(remaining, increment, overhead_ms)
        move, win, rule = self.choose(policy, board, budget)
        self.last_win = win
        if self._should_resign(win):
            log.info("event=resign game=%s win=%.3f", self.id, win)
            self.s.lichess.resign(self.id)
            return
        try:
            self.s.lichess.move(self.id, move.uci())
        except ResponseError as error:
            if error.status_code < 500 and error.status_code != 429:
                log.warning("event=move_rejected game=%s move=%s", self.id, move.uci())
                raise Resync from error
            raise
        self.moved_at_ply = board.ply()
        self.overhead.moved(remaining, 1000 * self.search_seconds)
        log.info(
            "event=move game=%s ply=%d move=%s win=%s rule=%s time_ms=%d clock_ms=%s "
            "overhead_ms=%d",
            self.id,
            board.ply(),
            move.uci(),
            "-" if win is None else f"{win:.3f}",
            rule,
            (time.monotonic() - started) * 1000,
            remaining,
            overhead_ms,
        )

    def _should_resign(self, win: float | None) -> bool:
        rules = self.s.config.resign
        if not rules.enabled or win is None:
            return False
        self.low_win_moves = self.low_win_moves + 1 if win < rules.max_win else 0
        resign: bool = self.low_win_moves >= rules.moves
        return resign

    def _answer_draw_offer(self) -> None:
        """Accept the opponent's draw offer when config.yml's draw rule says so."""
        rules = self.s.config.draw
        offered = self.state.get("bdraw" if self.color == chess.WHITE else "wdraw")
        ply = self.board.ply()
        if not offered or self.draw_answered_ply == ply:
            return
        self.draw_answered_ply = ply
        won_enough = self.last_win is not None and self.last_win > rules.max_win
        if rules.accept and self.board.fullmove_number >= rules.min_moves and not won_enough:
            log.info("event=draw_accepted game=%s ply=%d", self.id, ply)
            self.s.lichess.accept_draw(self.id)

    # -- abort, chat, end -----------------------------------------------------------------

    def opponent_has_moved(self) -> bool:
        first_opponent_ply = 1 if self.color == chess.WHITE else 0
        start_ply = chess.Board(self.initial_fen).ply()
        return self.board.ply() - start_ply > first_opponent_ply

    def _start_abort_timer(self) -> None:
        if self.opponent_has_moved():
            return
        self.abort_timer = threading.Timer(self.s.config.abort_time, self._abort_if_idle)
        self.abort_timer.daemon = True
        self.abort_timer.start()

    def _cancel_abort_timer(self) -> None:
        if self.abort_timer is not None:
            self.abort_timer.cancel()

    def _abort_if_idle(self) -> None:
        if self.finished or self.opponent_has_moved():
            return
        self.abort("no_first_move")

    def abortable(self) -> bool:
        """Lichess lets a game be aborted until both sides have moved."""
        start_ply = chess.Board(self.initial_fen).ply()
        return bool(self.full) and not self.finished and self.board.ply() - start_ply < 2

    def abort(self, reason: str) -> None:
        log.info("event=abort game=%s reason=%s", self.id, reason)
        try:
            self.s.lichess.abort(self.id)
        except Exception as error:
            log.warning("event=abort_failed game=%s error=%r", self.id, error)

    def _on_chat(self, line: ChatLine) -> None:
        """A chat line: logged, and answered when it is a command (bot/chat.py)."""
        room, user = str(line.get("room", "player")), str(line.get("username", ""))
        log.info("event=chat game=%s room=%s user=%s", self.id, room, user)
        reply = self.conversation.reply(
            self.id, room, user, str(line.get("text", "")), self._chat_context(room, user)
        )
        if reply:
            try:
                self.s.lichess.chat(self.id, reply, spectator=room == "spectator")
            except Exception as error:  # chat is courtesy; never let it stop the game
                log.warning("event=chat_failed game=%s error=%r", self.id, error)

    def _chat_context(self, room: str, user: str) -> Callable[[list[str]], ChatContext]:
        def make(args: list[str]) -> ChatContext:
            return ChatContext(
                game_id=self.id,
                board=self.board.copy(),
                room=room,
                username=user,
                args=args,
                me=self.s.lichess.username,
                engine=self.s.engine_line,
                score=lambda board: self.s.batcher.score(board, timeout=5.0),
                activity=self.s.activity,
                config=self.s.config.chat,
            )

        return make

    def _say(self, player_text: str, spectator_text: str) -> None:
        names = {
            "opponent": self.opponent.get("name") or self.opponent.get("id") or "opponent",
            "me": self.s.lichess.username,
            "model": self.s.model_name,
        }
        for text, spectator in ((player_text, False), (spectator_text, True)):
            if not text:
                continue
            try:
                line = text.format(**names)[:MAX_CHAT]  # long names must not break the limit
                self.s.lichess.chat(self.id, line, spectator=spectator)
            except Exception as error:  # chat is courtesy; never let it stop the game
                log.warning("event=chat_failed game=%s error=%r", self.id, error)

    def _game_over(self) -> None:
        result = pgn_result(self.status, self.winner)
        if self.status not in ("aborted", "noStart", "gone"):
            self._say(self.s.config.greeting.goodbye, self.s.config.greeting.goodbye_spectators)
        self.pgn_path = self.save_pgn(result)
        log.info(
            "event=game_end game=%s status=%s winner=%s result=%s plies=%d pgn=%s",
            self.id,
            self.status,
            self.winner,
            result,
            self.board.ply(),
            self.pgn_path,
        )

    def to_pgn(self, result: str) -> chess.pgn.Game:
        game = chess.pgn.Game.from_board(self.board)
        white, black = self.full.get("white") or Player(), self.full.get("black") or Player()
        rated = "Rated" if self.full.get("rated") else "Casual"
        game.headers.update(
            {
                "Event": f"{rated} {self.full.get('speed', '')} game".replace("  ", " "),
                "Site": f"{self.s.config.url.rstrip('/')}/{self.id}",
                "Date": dt.date.today().strftime("%Y.%m.%d"),
                "White": str(white.get("name") or white.get("id") or "?"),
                "Black": str(black.get("name") or black.get("id") or "?"),
                "Result": result,
                "Termination": self.status,
            }
        )
        for color, player in (("White", white), ("Black", black)):
            if player.get("rating"):
                game.headers[f"{color}Elo"] = str(player["rating"])
        return game

    def save_pgn(self, result: str) -> Path | None:
        try:
            directory = Path(self.s.config.pgn_directory)
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{self.id}.pgn"
            write_atomic(path, str(self.to_pgn(result)) + "\n\n")  # never seen half-written
            return path
        except OSError as error:
            log.error("event=pgn_failed game=%s error=%r", self.id, error)
            return None

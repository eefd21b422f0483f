"""`oneply uci`: the UCI front end for GUIs (Arena, cutechess) and python-chess clients.

One forward pass scores every legal move, so "thinking" takes milliseconds; what takes care is
the protocol. The reader (main thread) answers `isready` at once, even while a `go` runs on
the worker thread; `go infinite` and `go ponder` hold `bestmove` until `stop`/`ponderhit`.
Bad input never changes the position or kills the engine: it gets `info string error: …`.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import chess

from oneply.engine import __version__
from oneply.engine.model.model_file import (
    BUNDLED_MODEL,
    ENV_VAR,
    ModelFileError,
    add_model_argument,
)
from oneply.engine.play.books import open_tablebase
from oneply.engine.play.clock import MIN_SEARCH_NODES, search_time
from oneply.engine.play.fallback import Fallback
from oneply.engine.play.inference import MoveScore, Scorer
from oneply.engine.play.policy import MovePolicy
from oneply.engine.play.policy_config import BY_UCI, PolicyOptionError, UciValue
from oneply.engine.play.search import Limits, TreeSearch, search_threads, searching_scorer
from oneply.engine.play.search_options import BY_NAME as SEARCH_BY_NAME
from oneply.engine.play.search_options import SEARCH_OPTIONS, search_settings
from oneply.engine.stockfish import find_stockfish
from oneply.engine.uci.parsing import (
    MAX_QUOTE,
    GoLimits,
    Option,
    UciError,
    clip,
    legal_searchmoves,
)
from oneply.engine.uci.reports import move_lines, search_line

ENGINE_NAME = f"oneply {__version__}"
DEFAULT_THREADS = min(os.cpu_count() or 1, 8)
#: option Search with a `go` that bounds nothing (no clock, movetime, nodes, depth, infinite)
DEFAULT_SEARCH_NODES = 400


def default_model_name() -> str:
    """ModelFile's default: $ONEPLY_MODEL or the bundled model (as typed, never expanded
    here: a bad value must become an error at load time, not a crash at start-up)."""
    return os.environ.get(ENV_VAR) or str(BUNDLED_MODEL)


def load_model(name: str, threads: int) -> Scorer:
    """A Scorer for ModelFile `name`; every failure becomes one clear ModelFileError."""
    if name and os.path.isdir(os.path.expanduser(name)):
        raise ModelFileError(
            f"ModelFile {clip(repr(name))} is a directory; pass a oneply .onnx file in it"
        )
    try:
        return Scorer(name or None, threads=threads)
    except ModelFileError:
        raise
    except Exception as error:  # OSError (name too long), RuntimeError (~user), …
        raise ModelFileError(
            f"cannot load ModelFile {clip(repr(name))}: {type(error).__name__}: "
            f"{clip(str(error))}. Pass an existing oneply .onnx file."
        ) from None


class UciEngine:
    """The protocol state machine. `handle(line)` processes one line of input."""

    def __init__(self, out: TextIO = sys.stdout, model: str | None = None):
        self.out = out
        self._lock = threading.Lock()
        self.board = chess.Board()
        self.policy = MovePolicy(warn=lambda message: self.send(f"info string warning: {message}"))
        self.scorer: Scorer | None = None
        self.tree: TreeSearch | None = None  # look-ahead (option Search), kept between moves
        self.tablebase: Any = None  # Syzygy tables of option SyzygyPath (the look-ahead's)
        self.fallback = Fallback(find_stockfish(""))  # when inference fails
        self._loaded_with: tuple[str, int] | None = None  # (ModelFile, Threads) of `scorer`
        #: the loaded model and what the look-ahead calls for it (searching_scorer)
        self._search_with: tuple[Scorer, Scorer] | None = None
        self.debug = False
        self.options = {
            o.name.lower(): o
            for o in [
                Option("Threads", "spin", DEFAULT_THREADS, 1, 256),
                Option("Hash", "spin", 16, 1, 65536),
                Option("ModelFile", "string", model or default_model_name()),
                Option("MultiPV", "spin", 1, 1, 218),
                Option("Move Overhead", "spin", 30, 0, 5000),
                Option("UCI_ShowWDL", "check", False),
                Option("Ponder", "check", False),
                Option("Search", "check", False),
                Option("SearchNodes", "spin", 0, 0, 10_000_000),
                Option("SearchBatch", "spin", 8, 1, 64),
                *(Option(o.name, "string", str(o.default)) for o in SEARCH_OPTIONS),
                Option("SyzygyPath", "string", ""),
                Option("SyzygyProbeLimit", "spin", 7, 0, 7),
                *(Option(*spec) for spec in MovePolicy.UCI_OPTIONS),
            ]
        }
        self._search: threading.Thread | None = None
        self._release = threading.Event()  # set by stop/ponderhit: send bestmove now
        self._stop = threading.Event()  # set by stop (and quit): end a look-ahead now
        self._unbounded = False  # the running go is infinite/ponder: waiting on it stops it
        self.running = True
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "uci": self.cmd_uci,
            "isready": self.cmd_isready,
            "ucinewgame": self.cmd_ucinewgame,
            "setoption": self.cmd_setoption,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": lambda _: self._stop_now(),
            "ponderhit": lambda _: self._release.set(),
            "quit": self.cmd_quit,
            "debug": self.cmd_debug,
            "register": lambda _: None,
        }

    # --- output -------------------------------------------------------------------------

    def send(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def error(self, message: str) -> None:
        self.send(f"info string error: {clip(message, 4 * MAX_QUOTE)}")

    def option(self, name: str) -> UciValue:
        return self.options[name.lower()].value

    # --- input --------------------------------------------------------------------------

    def handle(self, line: str) -> None:
        """Process one input line; never raises for bad input."""
        tokens = line.split()
        if not tokens:
            self.error("empty command")
            return
        command = self.commands.get(tokens[0])
        if command is None:
            printable = line.strip().encode("ascii", "replace").decode()
            self.error(f"unknown command {clip(repr(printable))}")
            return
        try:
            command(tokens[1:])
        except UciError as error:
            self.error(str(error))
        except Exception as error:  # a bug must not kill a game in progress
            self.error(f"internal error in {tokens[0]}: {type(error).__name__}: {error}")
            if tokens[0] == "go" and (self._search is None or not self._search.is_alive()):
                self.send(f"bestmove {self.fallback.move(self.board, 0)[0].uci()}")

    def cmd_uci(self, _: list[str]) -> None:
        self.send(f"id name {ENGINE_NAME}")
        self.send("id author the oneply team")
        for option in self.options.values():
            self.send(option.announce())
        self.send("uciok")

    def cmd_isready(self, _: list[str]) -> None:
        """Load the model now (GUIs send isready after options, before the clock runs).
        `readyok` always follows, whatever happened to the model."""
        try:
            if self._search is None or not self._search.is_alive():
                self.load_scorer()
        except ModelFileError as error:  # load_scorer turns every model failure into this
            self.error(str(error))
        except Exception as error:
            self.error(f"internal error in isready: {type(error).__name__}: {error}")
        finally:
            self.send("readyok")

    def cmd_debug(self, args: list[str]) -> None:
        if args not in (["on"], ["off"]):
            raise UciError("debug takes on or off")
        self.debug = args == ["on"]

    def cmd_ucinewgame(self, _: list[str]) -> None:
        self.wait_search()
        self.board = chess.Board()
        self.policy.new_game()
        self.tree = None

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise UciError("usage: setoption name <id> [value <x>]")
        words = args[1:]
        split = words.index("value") if "value" in words else len(words)
        name, raw = " ".join(words[:split]), " ".join(words[split + 1 :])
        option = self.options.get(name.lower())
        if option is None:
            raise UciError(f"unknown option {clip(repr(name), 40)}")
        self.wait_search()
        if option.name.lower() in BY_UCI:  # the policy's one parser checks type and range
            try:
                self.policy.set_option(option.name, raw)
            except PolicyOptionError as error:
                raise UciError(f"{error}; unchanged") from None
            option.value = raw
            if option.name == "StockfishPath":
                self.fallback.close()
                self.fallback = Fallback(find_stockfish(self.policy.config.stockfish_path))
        elif option.name.lower() in SEARCH_BY_NAME or option.name == "SearchBatch":
            try:  # the look-ahead's tuning: checked now, the tree rebuilt with it
                value = option.parse(raw)
                if option.name != "SearchBatch":
                    SEARCH_BY_NAME[option.name.lower()].parse(raw)
            except ValueError as error:
                raise UciError(f"{error}; unchanged") from None
            option.value, self.tree = value, None
        elif option.name.startswith("Syzygy"):
            option.value = option.parse(raw)
            self._open_tables()
        else:  # ModelFile and Threads: the model is reloaded now, never inside a timed `go`
            value = option.parse(raw)
            if value == option.value and self.scorer is not None:
                return
            option.value = value
            try:
                self.load_scorer()
            except ModelFileError as error:  # the previous model (if any) stays in use
                raise UciError(str(error)) from None

    def _open_tables(self) -> None:
        """Options SyzygyPath (directories joined by the OS path separator, as Stockfish
        takes them) and SyzygyProbeLimit: the tables the look-ahead settles positions with.
        Only Search true reads them; the one-pass engine plays the model's move."""
        if self.tablebase is not None:
            self.tablebase.close()
        self.tablebase, self.tree = None, None  # the tree is rebuilt with the tables
        path = str(self.option("SyzygyPath"))
        try:
            self.tablebase = open_tablebase(path)
        except OSError as error:
            self.options["syzygypath"].value = ""
            raise UciError(f"SyzygyPath: {error}; no tables in use") from None
        if self.tablebase is not None:
            found = len(self.tablebase.wdl)
            self.send(f"info string {found} Syzygy tables found in {clip(path, MAX_QUOTE)}")

    def cmd_position(self, args: list[str]) -> None:
        """`position startpos|fen <FEN> [moves …]`; the position changes only when valid."""
        if not args:
            raise UciError("usage: position startpos|fen <fen> [moves ...]")
        split = args.index("moves") if "moves" in args else len(args)
        head, moves = args[:split], args[split + 1 :]
        if not head:
            raise UciError("position needs startpos or fen <FEN> before moves")
        if head == ["startpos"]:
            board = chess.Board()
        elif head[0] == "fen" and len(head) > 1:
            board = self._board_from_fen(" ".join(head[1:]))
        else:
            raise UciError(
                f"position must start with startpos or fen, got {clip(repr(head[0]), 40)}"
            )
        for uci in moves:
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                raise UciError(f"invalid move {clip(repr(uci), 40)} in position command") from None
            if not board.is_legal(move):
                raise UciError(f"illegal move {uci} in position {board.fen()}")
            board.push(move)
        self.wait_search()
        self.board = board

    @staticmethod
    def _board_from_fen(fen: str) -> chess.Board:
        try:
            board = chess.Board(fen)
        except ValueError as error:
            raise UciError(f"invalid FEN {clip(repr(fen))}: {clip(str(error))}") from None
        if not board.is_valid():
            raise UciError(f"impossible position {clip(repr(fen))}: {board.status()!r}")
        return board

    def cmd_go(self, args: list[str]) -> None:
        """Start thinking; every `go` is answered by exactly one `bestmove`."""
        limits, notes = GoLimits.parse(args)
        for note in notes:
            self.send(f"info string warning: {note}")
        self.wait_search()
        self._release.clear()
        self._stop.clear()
        self._unbounded = limits.infinite or limits.ponder
        start = time.monotonic()
        board = self.board.copy()
        self._search = threading.Thread(
            target=self._think, args=(board, limits, start), name="oneply-go", daemon=True
        )
        self._search.start()

    def _stop_now(self) -> None:
        self._stop.set()
        self._release.set()

    def cmd_quit(self, _: list[str]) -> None:
        self._stop_now()
        self.wait_search()
        self.policy.close()
        self.fallback.close()
        if self.tablebase is not None:
            self.tablebase.close()
        self.running = False

    def wait_search(self) -> None:
        """Finish a running `go` before the state it reads changes. A `go infinite` or
        `go ponder` still waiting is released (as `stop` would), so nothing hangs."""
        if self._search is not None and self._search.is_alive():
            self._release.set()
            if self._unbounded:  # a bounded look-ahead is waited for, an endless one stopped
                self._stop.set()
            self._search.join()
        self._search = None

    # --- thinking -----------------------------------------------------------------------

    def load_scorer(self) -> Scorer:
        """The model for the current ModelFile and Threads, loaded when they changed.

        A ModelFile that cannot be loaded (missing, a name too long for the file system, an
        unknown `~user`, not an ONNX file…) is reported once as a ModelFileError; when a
        model was loaded before, it stays in use and ModelFile reverts to it."""
        wanted = (str(self.option("ModelFile")), int(self.option("Threads")))
        if self.scorer is not None and self._loaded_with == wanted:
            return self.scorer
        try:
            scorer = load_model(wanted[0], wanted[1])
        except ModelFileError as error:
            if self.scorer is None or self._loaded_with is None:
                raise
            self.options["modelfile"].value = self._loaded_with[0]
            self.options["threads"].value = self._loaded_with[1]
            raise ModelFileError(f"{error} Keeping {self.scorer.info.describe()}.") from None
        self.scorer, self._loaded_with = scorer, wanted
        where = f"{scorer.info.describe()} on {scorer.provider}"
        print(f"oneply: model {where}", file=sys.stderr, flush=True)
        self.send(f"info string model {where}")
        return scorer

    def _deadline(self, limits: GoLimits, turn: chess.Color, start: float) -> float | None:
        budget = limits.budget_ms(turn, int(self.option("Move Overhead")))
        return None if budget is None else start + budget / 1000.0

    def _think(self, board: chess.Board, limits: GoLimits, start: float) -> None:
        best = "0000"
        try:
            best = self._decide(board, limits, start)
        except Exception as error:  # still answer: a GUI waiting for bestmove would hang
            if isinstance(error, ModelFileError):
                self.error(str(error))
            else:
                self.error(f"internal error in go: {type(error).__name__}: {error}")
            best = self._fallback(board, limits, start)
        if limits.infinite or limits.ponder:
            self._release.wait()
        self.send(f"bestmove {best}")

    def _fallback(self, board: chess.Board, limits: GoLimits, start: float) -> str:
        """engine/play/fallback.py's move (the bot's rule too), reported as `info string rule`."""
        deadline = self._deadline(limits, board.turn, start)
        budget = None if deadline is None else deadline - time.monotonic()
        move, rule = self.fallback.move(board, budget)
        self.send(f"info string rule {rule}")
        best: str = move.uci()
        return best

    def _decide(self, board: chess.Board, limits: GoLimits, start: float) -> str:
        if not any(board.legal_moves):  # checkmate or stalemate: the only answer is null
            self.send("info depth 0 score " + ("mate 0" if board.is_checkmate() else "cp 0"))
            return "0000"
        outcome = board.outcome()  # fivefold, 75 moves, dead material: drawn, yet moves exist
        if outcome is not None:
            reason = outcome.termination.name.lower().replace("_", " ")
            self.send(f"info string the game is already drawn ({reason}); playing a legal move")
        searched = bool(self.option("Search")) and self._can_search()
        if searched:
            scores = self._searched(board, limits, start)
        else:
            scores = self.load_scorer().score(board)
        if limits.searchmoves:
            allowed = self._searchmoves(board, limits.searchmoves)
            scores = [s for s in scores if s.move in allowed] or scores
        decision = self.policy.choose(board, scores, self._deadline(limits, board.turn, start))
        elapsed = int((time.monotonic() - start) * 1000)
        adjusted = list(decision.scores) or scores  # e.g. repetitions shown at 0.5
        if not searched:  # a search has reported its own lines
            multipv, wdl = int(self.option("MultiPV")), bool(self.option("UCI_ShowWDL"))
            for line in move_lines(board, decision.move, adjusted, elapsed, multipv, wdl):
                self.send(line)
        self.send(f"info string rule {decision.rule}")
        best: str = decision.move.uci()
        return best

    def _can_search(self) -> bool:
        """Whether option Search applies to the model: a bc model's scores are move
        probabilities, not win probabilities, so a look-ahead over them means nothing; it
        plays without search, said in an `info string`."""
        if self.load_scorer().predictor != "bc":
            return True
        self.send(
            "info string Search ignored: a bc (behavioural cloning) model scores moves by "
            "policy probability, not win probability, so look-ahead is meaningless; "
            "playing the policy without search"
        )
        return False

    def _searched(self, board: chess.Board, limits: GoLimits, start: float) -> list[MoveScore]:
        """Option Search: the look-ahead of engine/play/search.py within `go`'s bounds (nodes,
        depth, movetime or the clock, stop) and option SearchNodes (a cap per move, so games
        under a clock can be played at a fixed budget), its moves ranked for the policy."""
        scorer = self.load_scorer()
        threads = int(self.option("Threads"))
        if self._search_with is None or self._search_with[0] is not scorer:  # kept across games
            self._search_with = (scorer, searching_scorer(scorer, threads))
        if self.tree is None or self.tree.scorer is not self._search_with[1]:
            limit = int(self.option("SyzygyProbeLimit"))
            texts = {name: str(self.option(name)) for name in SEARCH_BY_NAME}
            self.tree = TreeSearch(
                self._search_with[1],
                batch=int(self.option("SearchBatch")),
                parallel=search_threads(threads)[1],
                tablebase=self.tablebase,
                tablebase_pieces=limit,
                **search_settings(texts),
            )
        budget_ms = limits.budget_ms(board.turn, int(self.option("Move Overhead")))
        clock = search_time(
            None if budget_ms is None else budget_ms - 1000 * (time.monotonic() - start),
            self.tree.node_seconds(),
            fixed=limits.movetime is not None,
        )
        if clock is None or board.legal_moves.count() == 1:  # nothing a search could buy
            why = "one legal move" if clock else f"the clock buys under {MIN_SEARCH_NODES} nodes"
            self.send(f"info string search skipped: {why}")
            return scorer.score(board)
        bounded = limits.infinite or limits.ponder or limits.depth or budget_ms is not None
        cap = int(self.option("SearchNodes"))  # a node cap per move as well (0: none)
        search_limits = Limits(
            nodes=limits.nodes or cap or (None if bounded else DEFAULT_SEARCH_NODES),
            depth=limits.depth,
            seconds=None if budget_ms is None else clock.limit,
            stop=self._stop,
            clock=None if budget_ms is None or limits.infinite or limits.ponder else clock,
        )
        final, ranked = self.tree.rank(board, search_limits, lambda i: self.send(search_line(i)))
        self.send(search_line(final))
        return ranked

    def _searchmoves(self, board: chess.Board, moves: list[str]) -> set[chess.Move]:
        """The legal moves among `go searchmoves …`, each warning sent."""
        allowed, warnings = legal_searchmoves(board, moves)
        for warning in warnings:
            self.send(f"info string warning: {warning}")
        return allowed


def serve(stdin: TextIO, stdout: TextIO, model: str | None = None) -> None:
    """Run the engine until `quit` or end of input."""
    engine = UciEngine(stdout, model)
    for line in stdin:
        engine.handle(line)
        if not engine.running:
            return
    engine.cmd_quit([])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(parser)


def run(args: argparse.Namespace) -> int:
    print(f"{ENGINE_NAME}: searchless neural chess engine (UCI)", file=sys.stderr, flush=True)
    stdin = sys.stdin
    if hasattr(stdin, "reconfigure"):
        stdin.reconfigure(errors="replace")  # binary garbage must not kill the engine
    serve(stdin, sys.stdout, args.model)
    return 0

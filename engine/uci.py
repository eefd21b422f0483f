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
from dataclasses import dataclass, field
from typing import TextIO

import chess

from engine import __version__
from engine.inference import MoveScore, Scorer
from engine.model_file import ModelFileError, resolve_model_path
from engine.policy import Decision, MovePolicy
from engine.values import wdl_permille, win_to_cp

ENGINE_NAME = f"oneply {__version__}"
DEFAULT_THREADS = min(os.cpu_count() or 1, 8)


class UciError(ValueError):
    """A malformed or impossible command; reported as `info string error: …`."""


@dataclass
class Option:
    """A UCI option as announced by `uci` and changed by `setoption`."""

    name: str
    type: str  # check | spin | string | button
    default: object
    min: object = None
    max: object = None
    value: object = None

    def __post_init__(self) -> None:
        if self.value is None:
            self.value = self.default

    def announce(self) -> str:
        text = f"option name {self.name} type {self.type}"
        if self.type == "check":
            text += f" default {'true' if self.default else 'false'}"
        elif self.type in ("spin", "string"):
            text += f" default {self.default if self.default != '' else '<empty>'}"
        if self.type == "spin":
            text += f" min {self.min} max {self.max}"
        return text

    def parse(self, raw: str) -> object:
        if self.type == "check":
            if raw.lower() not in ("true", "false"):
                raise UciError(f"option {self.name} takes true or false, not {raw!r}")
            return raw.lower() == "true"
        if self.type == "spin":
            try:
                number = int(raw)
            except ValueError:
                raise UciError(f"option {self.name} takes an integer, not {raw!r}") from None
            if not self.min <= number <= self.max:
                raise UciError(f"option {self.name} must be in [{self.min}, {self.max}]")
            return number
        return "" if raw == "<empty>" else raw


@dataclass
class GoLimits:
    """The parameters of one `go` command."""

    wtime: int | None = None
    btime: int | None = None
    winc: int = 0
    binc: int = 0
    movestogo: int | None = None
    movetime: int | None = None
    depth: int | None = None
    nodes: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)

    INT_FIELDS = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes")

    @classmethod
    def parse(cls, tokens: list[str]) -> GoLimits:
        limits = cls()
        i = 0
        while i < len(tokens):
            word = tokens[i]
            if word in ("infinite", "ponder"):
                setattr(limits, word, True)
            elif word == "searchmoves":
                limits.searchmoves = tokens[i + 1 :]
                break
            elif word in cls.INT_FIELDS or word == "mate":
                if i + 1 >= len(tokens):
                    raise UciError(f"go {word} needs a number")
                try:
                    value = int(tokens[i + 1])
                except ValueError:
                    raise UciError(f"go {word} needs a number, not {tokens[i + 1]!r}") from None
                if word != "mate":
                    setattr(limits, word, value)
                i += 1
            else:
                raise UciError(f"unknown go parameter {word!r}")
            i += 1
        return limits

    def budget_ms(self, turn: chess.Color) -> float | None:
        """Time this move may use, or None when the clock does not limit it."""
        if self.movetime is not None:
            return float(self.movetime)
        left = self.wtime if turn == chess.WHITE else self.btime
        if left is None:
            return None
        inc = self.winc if turn == chess.WHITE else self.binc
        moves_left = self.movestogo or 30
        return max(0.0, min(left / moves_left + 0.8 * inc, 0.5 * left))


class UciEngine:
    """The protocol state machine. `handle(line)` processes one line of input."""

    def __init__(self, out: TextIO = sys.stdout, model: str | None = None):
        self.out = out
        self._lock = threading.Lock()
        self.board = chess.Board()
        self.policy = MovePolicy(warn=lambda message: self.send(f"info string warning: {message}"))
        self.scorer: Scorer | None = None
        self.debug = False
        self.options = {
            o.name.lower(): o
            for o in [
                Option("Threads", "spin", DEFAULT_THREADS, 1, 256),
                Option("Hash", "spin", 16, 1, 65536),
                Option("ModelFile", "string", str(resolve_model_path(model))),
                Option("MultiPV", "spin", 1, 1, 218),
                Option("Move Overhead", "spin", 30, 0, 5000),
                Option("UCI_ShowWDL", "check", False),
                Option("Ponder", "check", False),
                *(Option(*spec) for spec in MovePolicy.UCI_OPTIONS),
            ]
        }
        self._search: threading.Thread | None = None
        self._release = threading.Event()  # set by stop/ponderhit: send bestmove now
        self.running = True
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "uci": self.cmd_uci,
            "isready": self.cmd_isready,
            "ucinewgame": self.cmd_ucinewgame,
            "setoption": self.cmd_setoption,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": lambda _: self._release.set(),
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
        self.send(f"info string error: {message}")

    def option(self, name: str) -> object:
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
            printable = line.strip().encode("ascii", "replace").decode()[:80]
            self.error(f"unknown command {printable!r}")
            return
        try:
            command(tokens[1:])
        except UciError as error:
            self.error(str(error))
        except Exception as error:  # a bug must not kill a game in progress
            self.error(f"internal error in {tokens[0]}: {type(error).__name__}: {error}")

    def cmd_uci(self, _: list[str]) -> None:
        self.send(f"id name {ENGINE_NAME}")
        self.send("id author the oneply team")
        for option in self.options.values():
            self.send(option.announce())
        self.send("uciok")

    def cmd_isready(self, _: list[str]) -> None:
        """Load the model now (GUIs send isready after options, before the clock runs)."""
        if self._search is None or not self._search.is_alive():
            try:
                self.load_scorer()
            except ModelFileError as error:
                self.error(str(error))
        self.send("readyok")

    def cmd_debug(self, args: list[str]) -> None:
        if args not in (["on"], ["off"]):
            raise UciError("debug takes on or off")
        self.debug = args == ["on"]

    def cmd_ucinewgame(self, _: list[str]) -> None:
        self.wait_search()
        self.board = chess.Board()
        self.policy.new_game()

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise UciError("usage: setoption name <id> [value <x>]")
        words = args[1:]
        split = words.index("value") if "value" in words else len(words)
        name, raw = " ".join(words[:split]), " ".join(words[split + 1 :])
        option = self.options.get(name.lower())
        if option is None:
            raise UciError(f"unknown option {name!r}")
        self.wait_search()
        option.value = option.parse(raw)
        if option.name in ("Threads", "ModelFile"):
            self.scorer = None  # reloaded on next use with the new setting
        elif option.name in {spec[0] for spec in MovePolicy.UCI_OPTIONS}:
            self.policy.set_option(option.name, raw)

    def cmd_position(self, args: list[str]) -> None:
        """`position startpos|fen <FEN> [moves …]`; the position changes only when valid."""
        if not args:
            raise UciError("usage: position startpos|fen <fen> [moves ...]")
        split = args.index("moves") if "moves" in args else len(args)
        head, moves = args[:split], args[split + 1 :]
        if head == ["startpos"]:
            board = chess.Board()
        elif head[0] == "fen" and len(head) > 1:
            board = self._board_from_fen(" ".join(head[1:]))
        else:
            raise UciError(f"position must start with startpos or fen, got {head[0]!r}")
        for uci in moves:
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                raise UciError(f"invalid move {uci!r} in position command") from None
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
            raise UciError(f"invalid FEN {fen!r}: {error}") from None
        if not board.is_valid():
            raise UciError(f"impossible position {fen!r}: {board.status()!r}")
        return board

    def cmd_go(self, args: list[str]) -> None:
        limits = GoLimits.parse(args)
        self.wait_search()
        self._release.clear()
        start = time.monotonic()
        board = self.board.copy()
        self._search = threading.Thread(
            target=self._think, args=(board, limits, start), name="oneply-go", daemon=True
        )
        self._search.start()

    def cmd_quit(self, _: list[str]) -> None:
        self._release.set()
        self.wait_search()
        self.policy.close()
        self.running = False

    def wait_search(self) -> None:
        """Finish a running `go` before the state it reads changes. A `go infinite` or
        `go ponder` still waiting is released (as `stop` would), so nothing hangs."""
        if self._search is not None and self._search.is_alive():
            self._release.set()
            self._search.join()
        self._search = None

    # --- thinking -----------------------------------------------------------------------

    def load_scorer(self) -> Scorer:
        if self.scorer is None:
            self.scorer = Scorer(self.option("ModelFile") or None, threads=self.option("Threads"))
            print(f"oneply: model {self.scorer.info.describe()}", file=sys.stderr, flush=True)
            self.send(f"info string model {self.scorer.info.describe()}")
        return self.scorer

    def _deadline(self, limits: GoLimits, turn: chess.Color, start: float) -> float | None:
        budget = limits.budget_ms(turn)
        if budget is None or limits.infinite:
            return None
        usable = max(budget - self.option("Move Overhead"), 1.0)
        return start + usable / 1000.0

    def _think(self, board: chess.Board, limits: GoLimits, start: float) -> None:
        best = "0000"
        try:
            best = self._decide(board, limits, start)
        except ModelFileError as error:
            self.error(str(error))
            best = next(iter(board.legal_moves), chess.Move.null()).uci()
        except Exception as error:  # still answer: a GUI waiting for bestmove would hang
            self.error(f"internal error in go: {type(error).__name__}: {error}")
            best = next(iter(board.legal_moves), chess.Move.null()).uci()
        if limits.infinite or limits.ponder:
            self._release.wait()
        self.send(f"bestmove {best}")

    def _decide(self, board: chess.Board, limits: GoLimits, start: float) -> str:
        if board.is_game_over():
            self.send("info depth 0 score " + ("mate 0" if board.is_checkmate() else "cp 0"))
            return "0000"
        scores = self.load_scorer().score(board)
        if limits.searchmoves:
            allowed = set(limits.searchmoves)
            scores = [s for s in scores if s.move.uci() in allowed] or scores
        decision = self.policy.choose(board, scores, self._deadline(limits, board.turn, start))
        elapsed = int((time.monotonic() - start) * 1000)
        adjusted = list(decision.scores) or scores  # e.g. repetitions shown at 0.5
        for line in self._info_lines(board, decision, adjusted, elapsed):
            self.send(line)
        self.send(f"info string rule {decision.rule}")
        return decision.move.uci()

    def _info_lines(
        self, board: chess.Board, decision: Decision, scores: list[MoveScore], elapsed: int
    ) -> list[str]:
        """`info` lines, multipv 1 being the chosen move, then the rest by model score."""
        ranked = [s for s in scores if s.move == decision.move]
        ranked += [s for s in scores if s.move != decision.move]
        nodes = len(scores)
        nps = int(nodes * 1000 / max(elapsed, 1))
        lines = []
        for rank, entry in enumerate(ranked[: self.option("MultiPV")], start=1):
            line = f"info depth 1 seldepth 1 multipv {rank} score {self._score(board, entry)}"
            if self.option("UCI_ShowWDL"):
                line += " wdl {} {} {}".format(*wdl_permille(entry.win))
            lines.append(line + f" nodes {nodes} nps {nps} time {elapsed} pv {entry.move.uci()}")
        return lines

    @staticmethod
    def _score(board: chess.Board, entry: MoveScore) -> str:
        board.push(entry.move)
        mate = board.is_checkmate()
        board.pop()
        return "mate 1" if mate else f"cp {win_to_cp(entry.win)}"


def serve(stdin: TextIO, stdout: TextIO, model: str | None = None) -> None:
    """Run the engine until `quit` or end of input."""
    engine = UciEngine(stdout, model)
    for line in stdin:
        engine.handle(line)
        if not engine.running:
            return
    engine.cmd_quit([])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="ONNX model file (default: $ONEPLY_MODEL, then bundled)")


def run(args: argparse.Namespace) -> int:
    print(f"{ENGINE_NAME}: searchless neural chess engine (UCI)", file=sys.stderr, flush=True)
    stdin = sys.stdin
    if hasattr(stdin, "reconfigure"):
        stdin.reconfigure(errors="replace")  # binary garbage must not kill the engine
    serve(stdin, sys.stdout, args.model)
    return 0

"""`oneply train positions`: generate diverse, realistic, unique positions to annotate.

No game database is reachable offline, so games are made here. Each game:

1. starts from an opening: a weighted random walk of random length through a polyglot book
   (Debian ``gnuchess-book``), a random prefix of an ECO line (eco.pgn), or a few random moves;
2. continues by Stockfish self-play at a low node budget, each side with its own style:
   Stockfish's ``Skill Level`` 0–20 (weak levels blunder like humans do), or sampling among
   the top MultiPV moves by a softmax over their win probabilities; plus a per-game share of
   uniformly random moves. Strong and weak play, openings, middlegames and endgames all occur;
3. contributes a random sample of its positions (``--sample-rate``, at most ``--per-game``), so
   that one long game does not dominate.

Positions are unique across the whole file by their first four FEN fields (board, side,
castling, en passant): the paper's "unique sampler" was worth 33 puzzle points. Evaluation
positions are never emitted: every position along every puzzle line in the ``--exclude`` CSVs
(default: the shipped dev set, ``oneply.arena.puzzles.DEV_PUZZLES``), before and after each
move, is excluded.

The output is one FEN per line. Whole games are appended and flushed at once, so a killed run
resumes by rereading the file (a torn last line is cut off) and continuing to ``--count``.
``FILE.manifest.json`` records the settings, counts and the mix of the file: game phase,
piece count and legal-move count histograms.

Game phase rule (for the manifest): with non-pawn material counted N = B = 3, R = 5, Q = 9 over
both sides (62 at the start), a position is an *endgame* when that material is at most 20,
else an *opening* while the fullmove number is at most 12, else a *middlegame*.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections import Counter
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn
import chess.polyglot
from tqdm import tqdm

from oneply.arena.puzzles import DEV_PUZZLES
from oneply.arena.settings import DEBIAN_BOOKS
from oneply.engine.cli import read_args
from oneply.engine.facts.tokenizer import fen_key, position_key, tokenize
from oneply.engine.files import write_json_atomic
from oneply.engine.model.values import score_to_win
from oneply.engine.stockfish import (
    LOOKUP_TEXT,
    SMALL,
    StockfishStartError,
    close_stockfish,
    open_stockfish,
)
from oneply.training.data.dataset import DatasetError, puzzle_keys
from oneply.training.data.openings import (
    DEFAULT_ECO,
    OpeningsError,
    check_books,
    game_finished,
    load_eco_lines,
    play_opening,
)
from oneply.training.data.workers import add_workers_argument, run_interruptible, worker_pool

PIECE_MATERIAL = {chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
ENDGAME_MATERIAL = 20
OPENING_FULLMOVES = 12


class PositionsError(RuntimeError):
    """Bad input (unreadable book, exclusion CSV, positions file) or a run that cannot start."""


@dataclass(frozen=True)
class Settings:
    """Everything that shapes the generated games; recorded in the manifest."""

    seed: int = 0
    stockfish: str = ""  # empty: find_stockfish looks for it
    books: tuple[str, ...] = ()
    eco: str | None = None
    min_nodes: int = 1000
    max_nodes: int = 5000
    max_random_share: float = 0.1
    sample_rate: float = 0.3
    per_game: int = 40
    max_plies: int = 300
    book_share: float = 0.6
    eco_share: float = 0.25


@dataclass(frozen=True)
class PositionsJob:
    """One `train positions` run, read once from its command line: the file to create or
    extend, how many unique positions it should hold, by how many workers, and the puzzle
    CSVs whose positions it never holds."""

    out: Path
    count: int
    workers: int
    exclude: tuple[Path, ...]
    settings: Settings


# --------------------------------------------------------------------------- one game


class GameMaker:
    """Plays games with one Stockfish; one per worker process."""

    def __init__(self, settings: Settings, eco_lines: list[list[str]]) -> None:
        self.settings = settings
        self.eco_lines = eco_lines
        self.books = [chess.polyglot.open_reader(p) for p in settings.books]
        try:
            self.engine = open_stockfish(settings.stockfish, SMALL)
        except StockfishStartError as error:
            raise PositionsError(str(error)) from None
        self.skill: int | None = None

    def close(self) -> None:
        close_stockfish(self.engine)
        for book in self.books:
            book.close()

    # openings ---------------------------------------------------------------

    def _opening(self, board: chess.Board, rng: random.Random) -> str:
        s = self.settings
        return play_opening(board, rng, self.books, self.eco_lines, s.book_share, s.eco_share)

    # self-play --------------------------------------------------------------

    def _style(self, rng: random.Random) -> dict[str, Any]:
        """How one side plays this game: a Skill Level, or softmax sampling among MultiPV."""
        if rng.random() < 0.5:
            return {"skill": rng.randint(0, 20)}
        return {"multipv": rng.randint(2, 5), "temperature": rng.uniform(0.005, 0.1)}

    def _engine_move(
        self, board: chess.Board, style: dict[str, Any], nodes: int, rng: random.Random
    ) -> chess.Move:
        limit = chess.engine.Limit(nodes=nodes)
        skill = style.get("skill", 20)
        if skill != self.skill:
            self.engine.configure({"Skill Level": skill})
            self.skill = skill
        if "skill" in style:
            move = self.engine.play(board, limit).move
            if move is None:  # only for a finished game, which is never asked about
                raise chess.engine.EngineError(f"Stockfish found no move in {board.fen()}")
            return move
        infos = self.engine.analyse(board, limit, multipv=style["multipv"])
        infos = [i for i in infos if i.get("pv") and "score" in i]
        wins = [score_to_win(i["score"].relative) for i in infos]
        top = max(wins)
        weights = [math.exp((w - top) / style["temperature"]) for w in wins]
        chosen: chess.Move = rng.choices(infos, weights)[0]["pv"][0]
        return chosen

    def play(self, rng: random.Random) -> tuple[list[str], str]:
        """One game; returns the sampled FENs (positions with legal moves) and opening kind."""
        settings = self.settings
        board = chess.Board()
        sampled: list[str] = []
        kind = self._opening(board, rng)
        # the opening plies are candidates too (dedup removes the common ones)
        replay = chess.Board()
        for move in board.move_stack:
            replay.push(move)
            self._maybe_sample(replay, rng, sampled)
        styles = (self._style(rng), self._style(rng))
        nodes = rng.randint(settings.min_nodes, settings.max_nodes)
        random_share = rng.uniform(0.0, settings.max_random_share)
        while not game_finished(board) and board.ply() < settings.max_plies:
            if rng.random() < random_share:
                move = rng.choice(list(board.legal_moves))
            else:
                move = self._engine_move(board, styles[board.turn == chess.BLACK], nodes, rng)
            board.push(move)
            self._maybe_sample(board, rng, sampled)
        rng.shuffle(sampled)
        return sampled[: settings.per_game], kind

    def _maybe_sample(self, board: chess.Board, rng: random.Random, sampled: list[str]) -> None:
        if rng.random() < self.settings.sample_rate and any(board.legal_moves):
            sampled.append(board.fen())


def game_rng(settings: Settings, session: int, index: int) -> random.Random:
    """Each game's own random stream: reproducible, and new games after a resume."""
    return random.Random(f"{settings.seed}:{session}:{index}")


# --------------------------------------------------------------------------- workers

_worker: dict[str, Any] = {}


def _init_worker(settings: Settings, eco_lines: list[list[str]], session: int) -> None:
    _worker.update(maker=GameMaker(settings, eco_lines), session=session, parent=os.getppid())


def _worker_game(index: int) -> tuple[list[str], str]:
    if os.getppid() != _worker["parent"]:  # the run was killed: stop, do not linger
        os._exit(1)
    maker: GameMaker = _worker["maker"]
    return maker.play(game_rng(maker.settings, _worker["session"], index))


def generate_games(
    settings: Settings, eco_lines: list[list[str]], workers: int, session: int
) -> Generator[tuple[list[str], str], None, None]:
    """An endless stream of games, from one process or a pool of ``workers``."""
    if workers <= 1:
        maker = GameMaker(settings, eco_lines)
        try:
            index = 0
            while True:
                yield maker.play(game_rng(settings, session, index))
                index += 1
        finally:
            maker.close()
        return
    with worker_pool(workers, _init_worker, (settings, eco_lines, session)) as pool:
        yield from pool.imap_unordered(_worker_game, _count())


def _count() -> Iterator[int]:
    index = 0
    while True:
        yield index
        index += 1


# --------------------------------------------------------------------------- the file


def read_existing(path: Path) -> list[str]:
    """FENs already in the output file; a torn last line from a killed run is cut off."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as file:
            file.truncate(keep)
        data = data[:keep]
    return [line for line in data.decode().splitlines() if line.strip()]


def game_phase(board: chess.Board) -> str:
    """opening / middlegame / endgame by the rule in the module docstring."""
    material = sum(
        value * len(board.pieces(piece, color))
        for piece, value in PIECE_MATERIAL.items()
        for color in chess.COLORS
    )
    if material <= ENDGAME_MATERIAL:
        return "endgame"
    return "opening" if board.fullmove_number <= OPENING_FULLMOVES else "middlegame"


class Mix:
    """Histograms of the file's positions: phase, piece count, legal-move count (by 5s)."""

    def __init__(self) -> None:
        self.phase: Counter[str] = Counter()
        self.pieces: Counter[int] = Counter()
        self.legal_moves: Counter[str] = Counter()

    def add(self, fen: str) -> None:
        board = chess.Board(fen)
        self.phase[game_phase(board)] += 1
        self.pieces[len(board.piece_map())] += 1
        low = board.legal_moves.count() // 5 * 5
        self.legal_moves[f"{low}-{low + 4}"] += 1

    def as_dict(self) -> dict[str, Any]:
        by_low = lambda item: int(item[0].split("-")[0])  # noqa: E731
        return {
            "phase": dict(sorted(self.phase.items())),
            "pieces": {str(k): v for k, v in sorted(self.pieces.items())},
            "legal_moves": dict(sorted(self.legal_moves.items(), key=by_low)),
        }


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write FILE.manifest.json atomically (temporary file, fsync, rename)."""
    write_json_atomic(manifest_path(out), manifest)


def _previous_manifest(out: Path) -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads(manifest_path(out).read_text())
        return manifest
    except (OSError, ValueError):
        return {}


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="FEN file to create or extend")
    parser.add_argument("--count", type=int, required=True, help="unique positions wanted")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the games")
    add_workers_argument(parser, "game-playing processes, one Stockfish each (default: all cores)")
    parser.add_argument(
        "--books",
        nargs="*",
        type=Path,
        default=[p for p in DEBIAN_BOOKS if p.exists()],
        help="polyglot opening books (default: the Debian ones that exist)",
    )
    parser.add_argument(
        "--eco",
        type=Path,
        default=DEFAULT_ECO if DEFAULT_ECO.exists() else None,
        help=f"PGN of ECO opening lines (default {DEFAULT_ECO})",
    )
    parser.add_argument(
        "--exclude",
        type=Path,
        action="append",
        help=f"puzzle CSV never to emit positions of (repeatable; default {DEV_PUZZLES})",
    )
    parser.add_argument(
        "--stockfish", default="", help=f"Stockfish binary (default: {LOOKUP_TEXT})"
    )
    parser.add_argument("--min-nodes", type=int, default=1000, help="self-play node budget, low")
    parser.add_argument("--max-nodes", type=int, default=5000, help="self-play node budget, high")
    parser.add_argument("--sample-rate", type=float, default=0.3, help="share of plies kept")
    parser.add_argument("--per-game", type=int, default=40, help="most positions kept per game")


def positions_job(args: argparse.Namespace) -> PositionsJob:
    """The run the parsed command line asks for, checked."""
    if args.count < 1 or args.workers < 1 or args.per_game < 1:
        raise PositionsError("--count, --workers and --per-game must be positive")
    if not 0 < args.sample_rate <= 1:
        raise PositionsError("--sample-rate must be in (0, 1]")
    if not 1 <= args.min_nodes <= args.max_nodes:
        raise PositionsError("need 1 <= --min-nodes <= --max-nodes")
    books = tuple(str(b) for b in args.books)
    check_books(books)
    settings = read_args(Settings, args, books=books, eco=str(args.eco) if args.eco else None)
    exclude = tuple(args.exclude or [DEV_PUZZLES])
    return PositionsJob(args.out, args.count, args.workers, exclude, settings)


def run(args: argparse.Namespace) -> int:
    resume = "the file holds whole games only; rerun to resume"
    errors = (PositionsError, OpeningsError)
    return run_interruptible("positions", lambda: make(positions_job(args)), errors, resume)


def make(job: PositionsJob) -> int:
    """Extend the job's file to its count of unique positions (whole games at a time)."""
    settings, exclude = job.settings, job.exclude
    try:
        excluded = puzzle_keys(exclude)
    except DatasetError as error:
        raise PositionsError(str(error)) from None
    eco_lines = load_eco_lines(Path(settings.eco) if settings.eco else None)
    existing = read_existing(job.out)
    seen = {fen_key(f) for f in existing}
    mix = Mix()
    for fen in existing:
        mix.add(fen)
    previous = _previous_manifest(job.out)
    session = int(previous.get("sessions", 0 if not existing else len(existing)))
    stats = Counter(previous.get("stats", {}))
    header = {
        "format": "oneply-positions-v1",
        "settings": asdict(settings),
        "exclude": [str(p) for p in exclude],
        "excluded_positions_known": len(excluded),
        "phase_rule": (
            f"endgame if non-pawn material (N=B=3, R=5, Q=9, both sides) <= {ENDGAME_MATERIAL}; "
            f"else opening if fullmove <= {OPENING_FULLMOVES}; else middlegame"
        ),
    }

    def manifest() -> dict[str, Any]:
        return {
            **header,
            "count": len(seen),
            "sessions": session + 1,
            "stats": dict(stats),
            "mix": mix.as_dict(),
        }

    if len(seen) >= job.count:
        write_manifest(job.out, manifest())
        print(f"{job.out} already holds {len(seen)} positions (>= {job.count})")
        return 0
    job.out.parent.mkdir(parents=True, exist_ok=True)
    workers = max(1, job.workers)
    started, last_manifest = time.monotonic(), time.monotonic()
    with (
        open(job.out, "a") as out,
        tqdm(total=job.count, initial=len(seen), unit="pos", desc="positions") as bar,
        closing(generate_games(settings, eco_lines, workers, session)) as games,
    ):
        for fens, kind in games:
            fresh = _fresh(fens, seen, excluded, stats)[: job.count - len(seen)]
            stats["games"] += 1
            stats[f"opening_{kind}"] += 1
            if fresh:
                out.write("".join(f + "\n" for f in fresh))  # one write: whole game or nothing
                out.flush()
                os.fsync(out.fileno())
                for fen in fresh:
                    seen.add(fen_key(fen))
                    mix.add(fen)
                bar.update(len(fresh))
            if time.monotonic() - last_manifest > 30:
                write_manifest(job.out, manifest())
                last_manifest = time.monotonic()
            if len(seen) >= job.count:
                break
    write_manifest(job.out, manifest())
    seconds = time.monotonic() - started
    made = len(seen) - len(existing)
    print(
        f"wrote {made} positions in {seconds:.1f} s ({made / max(seconds, 1e-9):.1f}/s); "
        f"{job.out} holds {len(seen)}; mix {mix.as_dict()['phase']}"
    )
    return 0


def _fresh(fens: list[str], seen: set[str], excluded: set[bytes], stats: Counter[str]) -> list[str]:
    """The FENs of a game that are neither known, excluded (dataset.puzzle_keys), nor repeated
    within the game."""
    fresh, keys = [], set()
    for fen in fens:
        key = fen_key(fen)
        if position_key(tokenize(fen)) in excluded:
            stats["excluded"] += 1
        elif key in seen or key in keys:
            stats["duplicates"] += 1
        else:
            keys.add(key)
            fresh.append(fen)
    return fresh

"""The match runner: games on ``concurrency`` slots, each with its own two engines, and the
blocking :func:`run_match` that the `match` and `ladder` CLIs call."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from typing import Any

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from oneply.arena import elo
from oneply.arena.engines import Adjudicator, EngineProcess, EngineStartError
from oneply.arena.game import GameJob, GameOver, GameRunner
from oneply.arena.pgn import build_pgn
from oneply.arena.results import GameRecord, MatchResult, Scoreboard
from oneply.arena.settings import TERM_ABANDONED, TERM_UNTERMINATED, EngineSpec, MatchSettings
from oneply.engine.play.books import open_tablebase


class Match:
    """Runs the games of one match on ``concurrency`` slots, each with its own two engines."""

    def __init__(self, settings: MatchSettings, on_result: Callable[[GameRecord], None]) -> None:
        self.s = settings
        self.on_result = on_result
        self.pids: list[int] = []
        self.next_index = 0
        self.stop = False
        self.processes: list[EngineProcess] = []
        self.tablebase = open_tablebase(settings.syzygy)

    def next_job(self) -> GameJob | None:
        if self.stop or self.next_index >= self.s.games:
            return None
        index = self.next_index
        self.next_index += 1
        opening = self.s.openings[(index // 2) % len(self.s.openings)]
        return GameJob(index, opening)

    async def ensure(self, current: EngineProcess | None, spec: EngineSpec) -> EngineProcess:
        """A running engine for ``spec``: the current one if healthy, else a fresh start."""
        if current is not None and current.alive:
            return current
        if current is not None:
            await current.close(graceful=False)
        engine = EngineProcess(spec, self.pids)
        self.processes.append(engine)
        await engine.start(self.s.startup_timeout)
        return engine

    async def slot(self, adjudicator: Adjudicator) -> None:
        engines: dict[str, EngineProcess | None] = {"a": None, "b": None}
        specs = {"a": self.s.engine_a, "b": self.s.engine_b}
        try:
            while (job := self.next_job()) is not None:
                record = await self.play_job(job, engines, specs, adjudicator)
                self.on_result(record)
        finally:
            for engine in engines.values():
                if engine is not None:
                    await engine.close()

    async def play_job(
        self,
        job: GameJob,
        engines: dict[str, EngineProcess | None],
        specs: dict[str, EngineSpec],
        adjudicator: Adjudicator,
    ) -> GameRecord:
        started, t0 = dt.datetime.now(), time.perf_counter()
        white_key, black_key = ("a", "b") if job.a_white else ("b", "a")
        failed = []
        for key in (white_key, black_key):
            try:
                engines[key] = await self.ensure(engines[key], specs[key])
            except EngineStartError as exc:
                failed.append((key, str(exc)))
                engines[key] = None
        if failed:
            return self.start_failure(job, failed, started, time.perf_counter() - t0)
        white, black = engines[white_key], engines[black_key]
        assert white is not None and black is not None
        runner = GameRunner(self.s, job, white, black, adjudicator, self.tablebase)
        try:
            over = await runner.play()
        except Exception as exc:  # a bug of ours must not end the match; record it and go on
            traceback.print_exc()
            over = GameOver("*", TERM_UNTERMINATED, f"runner error: {exc!r}")
            runner.faulty.update((chess.WHITE, chess.BLACK))
        for color in runner.faulty:
            key = white_key if color == chess.WHITE else black_key
            engine = engines[key]
            if engine is not None:
                await engine.close(graceful=False)
            engines[key] = None
        pgn = build_pgn(self.s, job, runner, over, started)
        return GameRecord(
            index=job.index,
            pair=job.pair,
            a_white=job.a_white,
            white=white.name,
            black=black.name,
            result=over.result,
            termination=over.termination,
            reason=over.reason,
            plies=len(runner.board.move_stack),
            seconds=time.perf_counter() - t0,
            opening=asdict(job.opening),
            pgn=pgn,
        )

    def start_failure(
        self, job: GameJob, failed: list[tuple[str, str]], started: dt.datetime, seconds: float
    ) -> GameRecord:
        """An engine that cannot start loses; if neither starts, the game does not count."""
        white_key = "a" if job.a_white else "b"
        names = {"a": self.s.engine_a.label(), "b": self.s.engine_b.label()}
        if len(failed) == 2:
            result, reason = "*", "neither engine started: " + "; ".join(m for _, m in failed)
        else:
            key, message = failed[0]
            result = "0-1" if key == white_key else "1-0"
            reason = f"{names[key]} failed to start: {message}"
        return GameRecord(
            index=job.index,
            pair=job.pair,
            a_white=job.a_white,
            white=names[white_key],
            black=names["b" if white_key == "a" else "a"],
            result=result,
            termination=TERM_ABANDONED,
            reason=reason,
            plies=0,
            seconds=seconds,
            opening=asdict(job.opening),
        )

    async def run(self) -> None:
        adjudicator = Adjudicator(
            self.s.adjudicator if self.s.resign_moves > 0 else None,
            self.s.adjudicate_nodes,
            self.pids,
            self.s.startup_timeout,
        )
        slots = max(1, min(self.s.concurrency, self.s.games))
        try:
            await asyncio.gather(*(self.slot(adjudicator) for _ in range(slots)))
        finally:
            await adjudicator.close()
            for engine in self.processes:
                engine.kill()


async def identify(spec: EngineSpec, timeout: float, pids: list[int]) -> str:
    """Start an engine once, before the match, so a broken command or option fails fast."""
    engine = EngineProcess(spec, pids)
    try:
        await engine.start(timeout)
        return engine.name
    finally:
        await engine.close()


def run_match(settings: MatchSettings) -> MatchResult:
    """Play a whole match (blocking); raises EngineStartError if an engine is unusable."""
    from tqdm import tqdm

    pids: list[int] = []
    names = asyncio.run(_identify_both(settings, pids))
    # PGN headers and records use the same (disambiguated) names as the summary
    settings.engine_a = replace(settings.engine_a, name=names[0])
    settings.engine_b = replace(settings.engine_b, name=names[1])
    board = Scoreboard(settings.sprt)
    records: list[GameRecord] = []
    start = time.perf_counter()
    pgn_file = open(settings.pgn_path, "w") if settings.pgn_path else None  # noqa: SIM115
    bar = tqdm(
        total=settings.games,
        desc=f"{names[0]} vs {names[1]}",
        disable=not settings.progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    match: Match | None = None

    def on_result(record: GameRecord) -> None:
        records.append(record)
        board.add(record)
        if pgn_file is not None and record.pgn:
            pgn_file.write(record.pgn + "\n\n")
            pgn_file.flush()
        bar.update(1)
        bar.set_postfix_str(progress_line(board, time.perf_counter() - start))
        if match is not None and board.sprt_decision():
            match.stop = True

    match = Match(settings, on_result)
    try:
        with terminate_as_interrupt():
            asyncio.run(match.run())
    finally:
        bar.close()
        if pgn_file is not None:
            pgn_file.close()
        for engine in match.processes:
            engine.kill()
    return MatchResult(
        settings=settings,
        names=names,
        games=records,
        stats=board.summary(),
        seconds=time.perf_counter() - start,
        pids=pids + match.pids,
        stopped_by_sprt=board.sprt_decision(),
    )


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C, so a terminated runner still stops its engines (they run in
    their own process groups and would not get the signal themselves)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _identify_both(settings: MatchSettings, pids: list[int]) -> tuple[str, str]:
    a = await identify(settings.engine_a, settings.startup_timeout, pids)
    b = await identify(settings.engine_b, settings.startup_timeout, pids)
    if a == b:
        a, b = f"{a} (A)", f"{b} (B)"
    return a, b


def progress_line(board: Scoreboard, seconds: float) -> str:
    wins, draws, losses = board.wdl()
    n = wins + draws + losses
    if not n:
        return ""
    est = board.estimate()
    rate = 60.0 * n / seconds if seconds > 0 else 0.0
    text = (
        f"W/D/L {wins}/{draws}/{losses} score {(wins + draws / 2) / n:.3f} "
        f"Elo {fmt_elo(est)} {rate:.1f} games/min"
    )
    llr = board.llr()
    if llr is not None and board.bounds is not None:
        text += f" LLR {llr:.2f} [{board.bounds.lower:.2f}, {board.bounds.upper:.2f}]"
    return text


def fmt_elo(est: elo.EloEstimate) -> str:
    """``+12.3 ± 45.6``; the interval itself when "±" would mislead (a bound at 0% or 100%)."""
    limit = elo.score_to_elo(1.0) - 1.0
    if not (math.isfinite(est.lower) and math.isfinite(est.upper)):
        return f"{est.elo:+.1f} ± inf"
    if est.lower <= -limit or est.upper >= limit:
        return f"{est.elo:+.1f} [{est.lower:+.0f}, {est.upper:+.0f}]"
    return f"{est.elo:+.1f} ± {est.pm:.1f}"

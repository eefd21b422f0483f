"""The PGN text of one finished game (cutechess-compatible tags)."""

from __future__ import annotations

import datetime as dt

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from oneply.arena.game import GameJob, GameOver, GameRunner
from oneply.arena.settings import MatchSettings


def build_pgn(
    settings: MatchSettings,
    job: GameJob,
    runner: GameRunner,
    over: GameOver,
    started: dt.datetime,
) -> str:
    """PGN text with full headers, "book" comments on opening moves and per-move comments."""
    opening = job.opening
    game = chess.pgn.Game()
    root = opening.root()
    if opening.fen and root.fen() != chess.STARTING_FEN:
        game.setup(root)
    white, black = runner.engines[chess.WHITE], runner.engines[chess.BLACK]
    game.headers.update(
        {
            "Event": settings.event,
            "Site": "oneply",
            "Date": started.strftime("%Y.%m.%d"),
            "Round": str(job.index + 1),
            "White": white.name,
            "Black": black.name,
            "Result": over.result,
            "TimeControl": white.spec.tc.pgn_tag(),
            "Termination": over.termination,
            "PlyCount": str(len(runner.board.move_stack)),
        }
    )
    if black.spec.tc != white.spec.tc:
        game.headers["WhiteTimeControl"] = white.spec.tc.describe()
        game.headers["BlackTimeControl"] = black.spec.tc.describe()
    if opening.name:
        game.headers["Opening"] = opening.name
    node: chess.pgn.GameNode = game
    book = len(opening.moves)
    for ply, move in enumerate(runner.board.move_stack):
        comment = "book" if ply < book else runner.comments[ply - book]
        node = node.add_variation(move, comment=comment)
    node.comment = f"{node.comment}, {over.reason}" if node.comment else over.reason
    exporter = chess.pgn.StringExporter(headers=True, variations=True, comments=True)
    return game.accept(exporter)

"""The `info` lines a UCI engine sends: the one-pass engine's per-move lines, the search's."""

from __future__ import annotations

import chess

from oneply.engine.model.values import wdl_permille, win_to_cp
from oneply.engine.play.inference import MoveScore
from oneply.engine.play.search import Info


def move_lines(
    board: chess.Board,
    chosen: chess.Move,
    scores: list[MoveScore],
    elapsed_ms: int,
    multipv: int,
    wdl: bool,
) -> list[str]:
    """`info` lines, multipv 1 being the chosen move, then the rest by model score."""
    ranked = [s for s in scores if s.move == chosen] + [s for s in scores if s.move != chosen]
    nodes = len(scores)
    nps = int(nodes * 1000 / max(elapsed_ms, 1))
    lines = []
    for rank, entry in enumerate(ranked[:multipv], start=1):
        line = f"info depth 1 seldepth 1 multipv {rank} score {_score(board, entry)}"
        if wdl:
            line += " wdl {} {} {}".format(*wdl_permille(entry.win))
        lines.append(line + f" nodes {nodes} nps {nps} time {elapsed_ms} pv {entry.move.uci()}")
    return lines


def _score(board: chess.Board, entry: MoveScore) -> str:
    board.push(entry.move)
    mate = board.is_checkmate()
    board.pop()
    return "mate 1" if mate else f"cp {win_to_cp(entry.win)}"


def search_line(info: Info) -> str:
    """A searching engine's `info` line: depth, seldepth, nodes, nps, time, score, pv."""
    score = f"mate {info.mate}" if info.mate is not None else f"cp {win_to_cp(info.value)}"
    line = (
        f"info depth {info.depth} seldepth {info.seldepth} multipv 1 score {score} "
        f"nodes {info.nodes} nps {info.nps} time {int(info.seconds * 1000)}"
    )
    line += f" tbhits {info.tbhits}" if info.tbhits else ""
    return line + (" pv " + " ".join(m.uci() for m in info.pv) if info.pv else "")

"""`oneply health`: the Docker HEALTHCHECK. Exit 0 when healthy, 1 with a reason when not.

Checks that the model loads and scores a position (a legal move comes back). For the bot it
also checks liveness of the Lichess event stream: the bot touches a heartbeat file on every
line the stream delivers, keep-alives included (Lichess sends one about every 7 s); a file
older than --max-age seconds means the stream is dead. No heartbeat file (the UCI engine, or a
bot that is still starting) means only the model is checked.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import chess

from engine.inference import Scorer
from engine.model_file import ModelFileError

DEFAULT_HEARTBEAT = os.environ.get("ONEPLY_HEARTBEAT", "/tmp/oneply-bot.heartbeat")


def check_model(model: str | None) -> str:
    scorer = Scorer(model, threads=1)
    board = chess.Board()
    best = scorer.score(board)[0].move
    if best not in board.legal_moves:
        raise RuntimeError(f"model proposed an illegal move {best}")
    return f"model ok: {scorer.info.describe()} on {scorer.provider}, plays {best.uci()}"


def check_heartbeat(path: Path, max_age: float) -> str:
    if not path.exists():
        return "no bot heartbeat file (not running the bot): skipped"
    age = time.time() - path.stat().st_mtime
    if age > max_age:
        raise RuntimeError(f"bot event stream silent for {age:.0f}s (> {max_age:.0f}s): {path}")
    return f"bot event stream alive ({age:.0f}s ago)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="ONNX model file (default: $ONEPLY_MODEL, then bundled)")
    parser.add_argument("--heartbeat", default=DEFAULT_HEARTBEAT, help="bot heartbeat file")
    parser.add_argument("--max-age", type=float, default=60.0, help="seconds of stream silence")


def run(args: argparse.Namespace) -> int:
    try:
        print(check_model(args.model))
        print(check_heartbeat(Path(args.heartbeat), args.max_age))
    except (ModelFileError, RuntimeError) as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return 1
    return 0

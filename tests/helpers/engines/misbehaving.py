"""A tiny UCI engine that plays random legal moves, then misbehaves on purpose.

Usage: ``python misbehaving.py MODE [AFTER]`` where MODE is

* ``random``  – always plays a legal move (a well-behaved weak engine);
* ``crash``   – exits with status 3 instead of answering its AFTER-th ``go``;
* ``illegal`` – answers its AFTER-th ``go`` with a move that is not legal;
* ``hang``    – never answers its AFTER-th ``go`` (and ignores ``stop``);
* ``nostart`` – never answers ``uci``.

AFTER (default 3) counts ``go`` commands over the whole process lifetime, so a restarted engine
misbehaves again in its next game. It reports no score, like a minimal engine would.
"""

from __future__ import annotations

import random
import sys
import time

import chess


def set_position(tokens: list[str]) -> chess.Board:
    """Parse ``position startpos|fen ... [moves ...]``."""
    if tokens[1] == "startpos":
        board, rest = chess.Board(), tokens[2:]
    else:
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        board, rest = chess.Board(" ".join(tokens[2:end])), tokens[end:]
    for uci in rest[1:] if rest and rest[0] == "moves" else []:
        board.push_uci(uci)
    return board


def illegal_move(board: chess.Board) -> str:
    """A well-formed UCI move that is not legal here."""
    legal = {m.uci() for m in board.legal_moves}
    for uci in ("e2e5", "a1h8", "h8a1", "d1d8", "e8e1", "b1b4"):
        if uci not in legal:
            return uci
    return "a2a7"


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "random"
    after = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rng = random.Random(7)
    board = chess.Board()
    goes = 0
    for line in sys.stdin:
        tokens = line.split()
        if not tokens:
            continue
        cmd = tokens[0]
        if cmd == "uci":
            if mode == "nostart":
                continue
            print(f"id name misbehaving-{mode}\nid author oneply tests\nuciok", flush=True)
        elif cmd == "isready":
            print("readyok", flush=True)
        elif cmd == "position":
            board = set_position(tokens)
        elif cmd == "go":
            goes += 1
            if goes >= after and mode == "crash":
                return 3
            if goes >= after and mode == "hang":
                while True:
                    time.sleep(60)
            if goes >= after and mode == "illegal":
                print(f"bestmove {illegal_move(board)}", flush=True)
                continue
            move = rng.choice(list(board.legal_moves))
            print(f"info depth 1 nodes 1\nbestmove {move.uci()}", flush=True)
        elif cmd == "quit":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

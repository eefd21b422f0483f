#!/usr/bin/env python3
"""A UCI wrapper around Stockfish that misbehaves on `go`, to test the policy's clock safety.

Every line is passed through to the real engine, except that each `go` is held back for
SLOW_STOCKFISH_DELAY seconds (default 5). With SLOW_STOCKFISH_MODE=crash the wrapper exits on
`go` instead, like a crashing engine. The real engine is SLOW_STOCKFISH_ENGINE (default
/usr/games/stockfish).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def pump(source, sink) -> None:
    """Copy the engine's output to ours, line by line, unbuffered."""
    for line in source:
        sink.write(line)
        sink.flush()


def main() -> int:
    delay = float(os.environ.get("SLOW_STOCKFISH_DELAY", "5"))
    crash = os.environ.get("SLOW_STOCKFISH_MODE") == "crash"
    engine = subprocess.Popen(
        [os.environ.get("SLOW_STOCKFISH_ENGINE", "/usr/games/stockfish")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    threading.Thread(target=pump, args=(engine.stdout, sys.stdout), daemon=True).start()
    for line in sys.stdin:
        if line.startswith("go"):
            if crash:
                engine.kill()
                return 3
            time.sleep(delay)
        engine.stdin.write(line)
        engine.stdin.flush()
        if line.strip() == "quit":
            break
    engine.stdin.close()
    engine.wait(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where Stockfish is: the one lookup rule every part of oneply uses.

The move policy's fallback, the bot, the training data tools and the strength lab all start
Stockfish. They find it the same way, so a user sets it up once: an explicit path or command
name (``--stockfish``, ``StockfishPath``, ``engine.stockfish_path``) wins; without one,
``stockfish`` on PATH; without that, the Debian/Ubuntu package's location.
"""

from __future__ import annotations

import os
import shutil

#: where `apt-get install stockfish` puts it (not on PATH for non-login shells on Debian)
DEBIAN_STOCKFISH = "/usr/games/stockfish"

#: how a help text or error message describes the lookup
LOOKUP_TEXT = f"`stockfish` on PATH, else {DEBIAN_STOCKFISH}"


class StockfishNotFound(FileNotFoundError):
    """No Stockfish executable where the user said, or anywhere we look by default."""


def find_stockfish(path: str | None = None) -> str | None:
    """The Stockfish executable, or None when there is none.

    ``path`` may be a file path or a command name on PATH (``stockfish``); empty or None
    means "look": ``stockfish`` on PATH, else :data:`DEBIAN_STOCKFISH`.
    """
    if path:  # a file that is not executable (StockfishPath /etc/passwd) is not Stockfish
        return shutil.which(path) or (path if _executable(path) else None)
    found = shutil.which("stockfish")
    if found:
        return found
    return DEBIAN_STOCKFISH if os.access(DEBIAN_STOCKFISH, os.X_OK) else None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def require_stockfish(path: str | None = None) -> str:
    """Like :func:`find_stockfish`, but a missing Stockfish is an error that says what to do."""
    found = find_stockfish(path)
    if found is None:
        where = repr(path) if path else LOOKUP_TEXT
        raise StockfishNotFound(
            f"Stockfish not found ({where}): install it (apt-get install stockfish) "
            "or give its path"
        )
    return found

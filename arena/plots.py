"""matplotlib for the arena's optional plots (`oneply ladder --plot`, `oneply strength --plot`).

The arena installs without matplotlib (it is the ``train`` extra): a plot it cannot draw is a
message and no plot, never a failed run that has already played its games.
"""

from __future__ import annotations

import sys
from types import ModuleType

NO_PLOT = "no plot: it needs matplotlib, which is not installed: pip install 'oneply[train]'"


def pyplot() -> ModuleType | None:
    """matplotlib.pyplot on the file-only Agg backend, or None (and the message) without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(NO_PLOT, file=sys.stderr)
        return None
    return plt

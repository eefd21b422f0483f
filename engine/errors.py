"""`CommandError`: bad input or a failed step, in words that say what to do.

Library code (training's fit, export, the pipeline) raises it rather than ``SystemExit``, so
a caller such as the pipeline, a test or another program can catch it and carry on; the
`oneply` console script (engine/cli.py) prints its message and exits with its code.
"""

from __future__ import annotations


class CommandError(Exception):
    """A user-facing failure: ``str(error)`` is the message, ``exit_code`` the process status."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code

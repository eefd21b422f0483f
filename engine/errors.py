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


#: optional dependencies → the pip extra that installs them (pyproject.toml)
EXTRAS = {"torch": "train", "matplotlib": "train", "jax": "dm", "orbax": "dm"}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """One line naming the pip extra that provides the module `error` could not import, or
    None when it is not an optional dependency (a real bug keeps its traceback).

    The engine and bot install without torch, matplotlib or JAX; a user who then runs a
    training or plotting command should read what to install, not a traceback."""
    module = (error.name or "").split(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    return f"this needs {module}, which is not installed: pip install 'oneply[{extra}]'"

"""Writing a file so that a reader never sees half of it: the one temporary-file-and-rename.

Shards, manifests, checkpoints, plots and model files are read while they are rewritten (a
trainer follows a generator's directory; a resumed run reads its own manifest) and a run may
be killed at any moment. So every writer fills a hidden temporary beside the target,
``.NAME.tmp-PID`` (the PID lets a later run tell a dead writer's leftovers from a live one's:
training/data/shard_publish.py's ``remove_stale_temporaries``), fsyncs it, and renames it over the
target, which POSIX makes atomic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temporary_path(path: Path, suffix: str = "") -> Path:
    """The hidden temporary beside ``path`` that this process fills before the rename; a
    ``suffix`` keeps an extension a writer needs (matplotlib picks its format from it)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}{suffix}")


@contextmanager
def atomic_path(path: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path to write; renamed over ``path`` when the block ends, removed when
    it raises (so a failed write leaves the old file and no leftover)."""
    temporary = temporary_path(Path(path), suffix)
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def fsync_file(path: Path) -> None:
    """Flush a written file to the disk (before the rename, so the renamed file is whole)."""
    with open(path, "rb+") as file:
        os.fsync(file.fileno())


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary, fsync, rename)."""
    with atomic_path(path) as temporary:
        with open(temporary, "wb" if isinstance(data, bytes) else "w") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())


def write_json_atomic(path: Path, value: object, indent: int = 1) -> None:
    """Write ``value`` as JSON to ``path`` atomically: every manifest goes through here."""
    write_atomic(path, json.dumps(value, indent=indent))

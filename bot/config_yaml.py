"""config.yml's text → Python values, within limits on size, aliases and nesting.

PyYAML's safe loader shares aliased nodes, so an 8-level alias bomb in a 1 KB file loads
quickly but expands to hundreds of megabytes as soon as anything walks or prints it (an error
message did: 254 MB and 1 GB of memory). A config has no use for more than a few aliases or a
deep structure, so both are capped while the document is composed, and the file's size is
capped before parsing. Errors name the line and column only: a YAML error's own text quotes
the offending line, which may hold the token.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from oneply.bot.config_checks import ConfigError, quote

#: the documented config.yml is about 5 KB
MAX_BYTES = 256 * 1024
MAX_ALIASES = 32
MAX_DEPTH = 16


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents with too many aliases or too deep a structure."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigError(f"more than {MAX_ALIASES} YAML aliases (*name): not a config")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ConfigError(f"nested deeper than {MAX_DEPTH} levels: not a config")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def read_yaml(path: Path) -> Any:
    """The parsed contents of `path`; a ConfigError (without the file's text) when it is too
    big, not UTF-8, or not YAML."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"not found: create it with `oneply bot --init-config {shlex.quote(str(path))}` "
            "(every key documented) or pass --config FILE"
        ) from None
    except OSError as error:
        raise ConfigError(f"cannot read ({type(error).__name__}: {error.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"larger than {MAX_BYTES // 1024} KB: not a config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"not UTF-8 text: byte 0x{raw[error.start]:02x} on line {line}; save it as UTF-8"
        ) from None
    loader = _LimitedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (error.problem or "syntax error").split("\n")[0]
        raise ConfigError(f"not valid YAML{where}: {quote(problem)[1:-1]}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"not valid YAML: {type(error).__name__}") from None
    except RecursionError:
        raise ConfigError(f"nested deeper than {MAX_DEPTH} levels: not a config") from None
    finally:
        loader.dispose()

"""Command-line options declared once, on the fields of a config dataclass.

A field declared with :func:`option` carries its help text and whatever else argparse needs (a
flag's action, choices, nargs, a metavar, a default the command line gives where the
dataclass's differs). :func:`add_options` turns each such field into one option, in field
order; :func:`from_args` turns the parsed namespace into the dataclass. So a command's
``run(args)`` is the only place that sees argparse, and everything below it takes the typed
config.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from oneply.engine.cli import read_args

T = TypeVar("T")

#: the key of a field's metadata that holds its command-line option
_KEY = "option"
_UNSET: Any = object()


def option(
    help: str | None = None,
    *,
    default: Any = None,
    factory: Callable[[], Any] | None = None,
    required: bool = False,
    cli_default: Any = _UNSET,
    positional: bool = False,
    **argparse_options: Any,
) -> Any:
    """A dataclass field that is also a command-line option (``--the-name``, or a positional
    argument): `help` and `argparse_options` go to ``add_argument``. The field's default is
    `default` (None unless given), else `factory()`, and a `required` field has none;
    `cli_default` is the command line's default where it differs from the field's."""
    spec = {"help": help, "positional": positional, "cli_default": cli_default, **argparse_options}
    metadata = {_KEY: spec}
    if required:
        return dataclasses.field(metadata=metadata)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _base_type(annotation: Any) -> Any:
    """``int`` of ``int | None``, ``str`` of ``list[str]``; the type itself otherwise."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is list:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return _UNSET


def add_options(
    parser: argparse.ArgumentParser,
    config: type[Any],
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """One option per :func:`option` field of the dataclass `config`, in field order;
    `extra[name]` adds argparse settings known only where the parser is built (choices that
    live in a heavier module)."""
    hints = typing.get_type_hints(config)
    for field in dataclasses.fields(config):
        if _KEY not in field.metadata:
            continue
        spec = dict(field.metadata[_KEY])
        spec.update((extra or {}).get(field.name, {}))
        positional, cli_default = spec.pop("positional"), spec.pop("cli_default")
        default = _default(field) if cli_default is _UNSET else cli_default
        if default is not _UNSET:
            spec.setdefault("default", default)
        base = _base_type(hints[field.name])
        if base in (int, float) and "action" not in spec:
            spec.setdefault("type", base)
        if positional:
            parser.add_argument(field.name, **spec)
        else:
            parser.add_argument("--" + field.name.replace("_", "-"), **spec)


def from_args(config: type[T], args: argparse.Namespace, **values: Any) -> T:
    """The dataclass `config` from parsed options (a list option as a list); `values` replace
    what the command line gave."""
    lists = {
        field.name: list(value)
        for field in dataclasses.fields(config)  # type: ignore[arg-type]
        if isinstance(value := getattr(args, field.name, None), tuple | list)
    }
    return read_args(config, args, **{**lists, **values})

"""The packages import in one direction: engine ← bot; engine ← arena ← training; and so do
the rooms (sub-packages) inside them: engine facts ← model ← play ← uci; training data, model ←
fit ← lab.

The engine is what `oneply uci` and the bot load, so it must not drag in the bot, torch or
the strength lab; the arena rates any engine and must not need training; the research workflow
(training/lab/) uses the library and no part of the library uses it; and no two modules
import each other, even through others (a cycle makes import order matter and hides which
module owns an idea). Imports are read with ``ast`` from the package files, function-level
(lazy) imports included, so a forbidden import fails here before it is ever run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("engine", "bot", "arena", "training")

#: package → the other packages it may import
ALLOWED = {
    "engine": set(),
    "bot": {"engine"},
    "arena": {"engine"},
    "training": {"engine", "arena"},
}

#: room → the other rooms of its package it may import. A room is a sub-package
#: (engine/facts/, training/lab/, ...); a package's own modules (engine/cli.py, errors.py,
#: stockfish.py, ...; training/cli.py, pipeline.py) are its root, which every room may import
#: and which may import the rooms listed under the package's name.
ROOMS = {
    "engine": {"engine.facts", "engine.model", "engine.play", "engine.uci"},
    "engine.facts": set(),
    "engine.model": {"engine.facts"},
    "engine.play": {"engine.facts", "engine.model"},
    "engine.uci": {"engine.facts", "engine.model", "engine.play"},
    "training": {"training.data", "training.model", "training.fit"},  # never the lab
    "training.data": set(),
    "training.model": set(),
    "training.fit": {"training.data", "training.model"},
    "training.lab": {"training.data", "training.model", "training.fit"},
}


def _type_only(tree: ast.Module) -> set[ast.AST]:
    """The nodes under ``if TYPE_CHECKING:`` (annotations only: never imported at run time)."""
    return {
        inner
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for statement in node.body
        for inner in ast.walk(statement)
    }


def _module_name(root: Path, path: Path) -> str:
    """engine/facts/features.py → 'engine.facts.features' (a package's __init__ keeps its name)."""
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _resolve(root: Path, parts: list[str]) -> str | None:
    """The project module an import of 'oneply.' + '.'.join(parts) reaches: the longest prefix
    that is a module file (``from oneply.engine.facts import native`` → 'engine.facts.native')."""
    for end in range(len(parts), 1, -1):
        if (root / Path(*parts[:end])).with_suffix(".py").is_file():
            return ".".join(parts[:end])
    return None


def module_imports(root: Path = REPO) -> dict[str, set[str]]:
    """'package.[room.]module' → every project module it imports, anywhere in it."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = _module_name(root, path)
            graph[name] = set()
            tree = ast.parse(path.read_text(), str(path))
            skip = _type_only(tree)
            for node in ast.walk(tree):
                if node in skip:
                    continue
                if isinstance(node, ast.ImportFrom) and node.module:
                    targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                else:
                    continue
                for target in targets:
                    parts = target.split(".")
                    if parts[0] == "oneply" and len(parts) >= 3 and parts[1] in PACKAGES:
                        module = _resolve(root, parts[1:])
                        if module is not None and module != name:
                            graph[name].add(module)
    return graph


def room(module: str) -> str:
    """'engine.facts.features' → 'engine.facts'; a root module ('engine.cli') → 'engine'."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def rooms_on_disk(root: Path = REPO) -> set[str]:
    return {
        f"{package}.{init.parent.name}"
        for package in PACKAGES
        for init in (root / package).glob("*/__init__.py")
    }


def forbidden(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        package, here = module.split(".")[0], room(module)
        for target in targets:
            there = room(target)
            if target.split(".")[0] != package:
                if target.split(".")[0] not in ALLOWED[package]:
                    found.append(f"{module} imports {target}")
            elif there not in (here, package) and there not in ROOMS.get(here, set()):
                found.append(f"{module} imports {target}")
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def visit(module: str, path: list[str], done: set[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                found.append(path[path.index(target) :] + [target])
            elif target not in done:
                visit(target, path + [target], done)
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module], done)
    return found


def test_packages_import_in_one_direction() -> None:
    assert forbidden(module_imports()) == []


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(module_imports()) == []


def test_every_room_is_declared() -> None:
    """A new sub-package takes its place in ROOMS (and in pyproject.toml's packages)."""
    assert rooms_on_disk() == {name for name in ROOMS if "." in name}


def test_the_checks_catch_what_they_forbid(tmp_path: Path) -> None:
    """A lazy import from arena into training, a cycle and a type-only import, in a made-up
    tree: the checks above must see the first two and let the third pass; and among rooms, a
    lab imported by the package root and data importing fit (a cycle too), but not the lab
    importing fit nor fit importing data."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "training" / "a.py").write_text("from oneply.training import b\n")
    (tmp_path / "training" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from oneply.bot.c import X\n"
        "def f():\n    import oneply.training.a\n"
    )
    (tmp_path / "bot" / "c.py").write_text("X = 1\n")
    (tmp_path / "arena" / "d.py").write_text("def g():\n    from oneply.training.a import f\n")
    for room_ in ("data", "fit", "lab"):
        (tmp_path / "training" / room_).mkdir()
        (tmp_path / "training" / room_ / "__init__.py").write_text("")
    (tmp_path / "training" / "lab" / "e.py").write_text("from oneply.training.fit import f\n")
    (tmp_path / "training" / "fit" / "f.py").write_text("from oneply.training.data.g import G\n")
    (tmp_path / "training" / "data" / "g.py").write_text(
        "G = 1\ndef h():\n    from oneply.training.fit import f\n"
    )
    (tmp_path / "training" / "c.py").write_text("import oneply.training.lab.e\n")
    graph = module_imports(tmp_path)
    assert forbidden(graph) == [
        "arena.d imports training.a",
        "training.c imports training.lab.e",
        "training.data.g imports training.fit.f",
    ]
    assert cycles(graph) == [
        ["training.a", "training.b", "training.a"],
        ["training.fit.f", "training.data.g", "training.fit.f"],
    ]

"""The packages import in one direction: engine ← bot; engine ← arena ← training.

The engine is what `oneply uci` and the bot load, so it must not drag in the bot, torch or
the strength lab; the arena rates any engine and must not need training; and no two modules
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


def _type_only(tree: ast.Module) -> set[ast.AST]:
    """The nodes under ``if TYPE_CHECKING:`` (annotations only: never imported at run time)."""
    return {
        inner
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for statement in node.body
        for inner in ast.walk(statement)
    }


def module_imports(root: Path = REPO) -> dict[str, set[str]]:
    """'package.module' → every 'package.module' of the project it imports, anywhere in it."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).glob("*.py")):
            name = f"{package}.{path.stem}"
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
                        module = f"{parts[1]}.{parts[2]}"
                        if (root / parts[1] / f"{parts[2]}.py").exists() and module != name:
                            graph[name].add(module)
    return graph


def forbidden(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )


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


def test_the_checks_catch_what_they_forbid(tmp_path: Path) -> None:
    """A lazy import from arena into training, a cycle and a type-only import, in a made-up
    tree: the checks above must see the first two and let the third pass."""
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
    graph = module_imports(tmp_path)
    assert forbidden(graph) == ["arena.d imports training.a"]
    assert cycles(graph) == [["training.a", "training.b", "training.a"]]

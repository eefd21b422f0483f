"""The README and docs/ say what the code does: the subcommands, the training steps, the
dependencies, the UCI options, the bot's config keys, every `oneply …` command they show, the
commands CI runs, the links between them, and shipped files that hold no machine's paths.

Each of these drifted once (a train step list missing `curve` and `ablate`, fewer engine
dependencies than pyproject.toml installs, an absolute path of the machine a results file was
made on); a diff against the code's own lists keeps them from drifting again. The README is
the short entry point; each subject's reference is one file in docs/ (uci, bot, model,
training, strength, dm-import, FORMAT), checked against the same lists.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import subprocess
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml

from oneply.engine.cli import COMMANDS
from oneply.engine.play.policy_config import POLICY_OPTIONS
from oneply.engine.uci.engine import UciEngine
from oneply.training.cli import STEPS
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
#: the reference docs, one a subject (docs/studies/ is the lab notebook: history, not checked)
REFERENCE = [
    "uci.md",
    "bot.md",
    "model.md",
    "training.md",
    "strength.md",
    "dm-import.md",
    "FORMAT.md",
]
#: the user-facing files whose commands must run as shown
USER_DOCS = [
    REPO / "README.md",
    *(DOCS / name for name in REFERENCE),
    REPO / "models" / "oneply-small.md",
]


def section(title: str, text: str = README) -> str:
    """A document's `## title` section, up to the next `## ` heading."""
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_reference_docs_exist_and_the_readme_stays_short():
    for name in REFERENCE:
        assert (DOCS / name).is_file(), name
    assert (DOCS / "studies" / "README.md").is_file()
    assert not (DOCS / "STUDIES.md").exists()  # split into docs/studies/, one file a study
    assert len(README.splitlines()) <= 320


def test_the_subcommand_table_lists_exactly_the_cli_subcommands():
    listed = re.findall(r"^\| `oneply ([a-z-]+)", section("Subcommands"), re.M)
    assert sorted(listed) == sorted(COMMANDS)


def test_the_train_steps_named_in_the_readme_are_the_cli_steps():
    (steps,) = re.findall(r"`oneply train ([a-z/]+)`", section("Subcommands"))
    assert steps.split("/") == list(STEPS)
    assert all(name in COMMANDS["train"][1] for name in STEPS)  # `oneply --help` too


def test_the_readme_names_every_runtime_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~ \[]", dep)[0] for dep in project["dependencies"]]
    intro = README[: README.index("## Quickstart")]
    for name in names:
        shown = "python-chess" if name == "chess" else name
        assert re.search(rf"\b{re.escape(shown)}\b", intro), f"{name} is not named in the intro"


def test_every_uci_option_is_documented_in_the_readme_and_docs_uci():
    uci = (DOCS / "uci.md").read_text()
    engine = UciEngine(io.StringIO())
    try:
        for option in engine.options.values():
            assert f"| {option.name} |" in README, option.name
            assert f"| {option.name} |" in uci, option.name
    finally:
        engine.cmd_quit([])


def _keys(node: object, prefix: str = "") -> list[str]:
    """The dotted keys of a YAML mapping's leaves (a mapping's own key when it is empty)."""
    if not isinstance(node, dict) or not node:
        return [prefix]
    return [key for name, value in node.items() for key in _keys(value, f"{prefix}{name}.")]


def test_every_config_key_is_documented_in_docs_bot():
    bot = (DOCS / "bot.md").read_text()
    keys = [key.rstrip(".") for key in _keys(yaml.safe_load((REPO / "config.yml").read_text()))]
    assert "engine.search.nodes" in keys and "shutdown.timeout" in keys
    missing = [key for key in keys if f"`{key}`" not in bot]
    assert missing == []
    policy = [option.key for option in POLICY_OPTIONS if f"`{option.key}`" not in bot]
    assert policy == []  # engine.policy's keys, one row each


def test_ci_runs_the_quickstart_lines_the_readme_shows():
    ci = (REPO / ".ci" / "run").read_text()
    assert "readme_line 'python3 -m venv .venv'" in ci and "readme_line 'bash tests/run.sh '" in ci
    quickstart = section("Quickstart")
    assert re.search(
        r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install -e \. && oneply uci$",
        quickstart,
        re.M,
    )
    assert re.search(r"^bash tests/run\.sh +#", quickstart, re.M)
    assert re.search(r'^bash tests/run\.sh -m "not slow" +#', quickstart, re.M)  # the fast tier


# --------------------------------------------------------------------------- commands


def shown_commands(text: str) -> list[str]:
    """Every `oneply …` command a document shows: code lines (with their `\\` continuations,
    comments dropped) and inline code spans."""
    commands = []
    lines, fenced = text.splitlines(), False
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        found = re.search(r"(?:^\s*(?:\$ )?|&& )(oneply [a-z].*)$", line)
        if not found or not (fenced or line.startswith("    ")):
            continue
        command = found.group(1)
        while command.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command.rstrip()[:-1] + " " + lines[i].strip()
        command = " ".join(command.split(" #")[0].split())
        commands += [part for part in command.split(" && ") if part.startswith("oneply ")]
    for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", re.sub(r"```.*?```", "", text, flags=re.S)):
        span = " ".join(span.split())
        commands += [p for p in span.split(" && ") if re.match(r"oneply [a-z]", p)]
    return commands


@cache
def parser_of(*words: str) -> argparse.ArgumentParser:
    """The argparse parser of `oneply WORD` (or `oneply train STEP`), as the CLI builds it."""
    modules = {"train": STEPS} if words[0] == "train" else {}
    module_name = (modules["train"][words[1]] if modules else COMMANDS[words[0]])[0]
    parser = argparse.ArgumentParser()
    importlib.import_module(module_name).add_arguments(parser)
    return parser


def check_command(command: str) -> list[str]:
    """What is wrong with one shown command (nothing: it exists with the options it shows)."""
    words = command.split()
    name = words[1]
    if name not in COMMANDS:
        return [f"{command!r}: no subcommand {name!r}"]
    problems: list[str] = []
    targets = [(name,)]
    if name == "train":
        steps = re.match(r"[a-z/]+", words[2] if len(words) > 2 else "")
        if steps is None or not steps.group(0):
            return []  # `oneply train …`: the pipeline as a whole
        targets = [("train", step) for step in steps.group(0).split("/")]
        problems += [f"{command!r}: no train step {t[1]!r}" for t in targets if t[1] not in STEPS]
        targets = [t for t in targets if t[1] in STEPS]
    unquoted = re.sub(r"\"[^\"]*\"|'[^']*'", "", command)  # a fork's own arguments are not ours
    flags = re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", unquoted)
    for target in targets:
        try:
            known = parser_of(*target)._option_string_actions
        except ModuleNotFoundError as error:  # an optional extra (torch, matplotlib)
            pytest.skip(f"{' '.join(target)}: {error}")
        problems += [f"{command!r}: no option {flag}" for flag in flags if flag not in known]
    return problems


def test_the_command_check_catches_what_drifts():
    assert check_command("oneply strength m.onnx --games-skill 10") == []
    assert check_command('oneply train campaign start --fork "--facts a b"') == []
    assert check_command("oneply strenght m.onnx")
    assert check_command("oneply train fitt data")
    assert check_command("oneply bench --no-such-option")
    assert shown_commands(
        "run `oneply uci --model\nm.onnx` or\n\n    oneply bench \\\n      --json  # x\n"
    ) == [
        "oneply bench --json",
        "oneply uci --model m.onnx",
    ]


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda path: path.name)
def test_every_command_a_doc_shows_exists_with_the_options_it_shows(doc: Path):
    commands = shown_commands(doc.read_text())
    assert commands or doc.name == "FORMAT.md"
    problems = [problem for command in commands for problem in check_command(command)]
    assert problems == []


@pytest.mark.parametrize("doc", [*USER_DOCS, REPO / "CHANGELOG.md", DOCS / "studies" / "README.md"],
                         ids=lambda path: path.name)  # fmt: skip
def test_every_relative_link_in_the_docs_resolves(doc: Path):
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text())
    broken = [link for link in links if "://" not in link and not (doc.parent / link).exists()]
    assert broken == []


def test_shipped_files_hold_no_machine_paths():
    """What a wheel or the Docker image carries must not name the machine it was made on."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--",
         "models", "engine/data", "arena/data", "bot/config.yml", "config.yml"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    machine_path = re.compile(rb"(/work/|/root/|/home/[a-z]|/Users/|/tmp/)")
    files = [REPO / name.decode() for name in listed if name]
    assert any(path.name == "oneply-small-strength.json" for path in files)
    offenders = [
        str(path.relative_to(REPO))
        for path in files
        if path.is_file() and machine_path.search(path.read_bytes())
    ]
    assert offenders == []

"""The README says what the code does: the subcommands, the training steps, the dependencies,
the UCI options, the commands CI runs, and shipped files that hold no machine's paths.

Each of these drifted once (a train step list missing `curve` and `ablate`, fewer engine
dependencies than pyproject.toml installs, an absolute path of the machine a results file was
made on); a diff against the code's own lists keeps them from drifting again.
"""

from __future__ import annotations

import io
import re
import subprocess
import tomllib

from oneply.engine.cli import COMMANDS
from oneply.engine.uci import UciEngine
from oneply.training.cli import STEPS
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def section(title: str) -> str:
    """The README's `## title` section, up to the next `## ` heading."""
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else None]


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


def test_every_uci_option_is_documented():
    engine = UciEngine(io.StringIO())
    try:
        for option in engine.options.values():
            assert f"| {option.name} |" in README, option.name
    finally:
        engine.cmd_quit([])


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

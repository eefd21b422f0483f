"""A real, non-editable `pip install .` into a venv of its own: the package must work from
anywhere, with its own data and only the dependencies pyproject.toml declares.

An editable install reads the repo in place, so it hides what a wheel forgets (the bundled
model, the dev puzzles, the default config.yml) and never shows the generic top-level
`engine`, `bot` packages a wrong layout puts into site-packages. The venv is isolated (no
system site-packages): it gets its build backend and dependencies the way a user's would, from
the package index (pip's local wheel cache and find-links serve them offline), so the test
passes the same inside the Quickstart's venv, in CI and on a bare interpreter, and a
dependency missing from pyproject.toml fails here. It has no torch: the train-only commands
must say how to get it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO

TOP_LEVEL_FOLDERS = ("engine", "bot", "training", "arena")


def _tracked_copy(target: Path) -> Path:
    """The repo's files as a commit would hold them: tracked ones and new ones git does not
    ignore (a build writes build/ and *.egg-info into its source tree; data/ and runs/ stay)."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with oneply installed from a copy of the repo; returns its bin/ folder."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to know the tracked files")
    root = tmp_path_factory.mktemp("install")
    source = _tracked_copy(root / "src")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = _clean_env()
    result = subprocess.run(
        [python, "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return venv / "bin"


def _clean_env() -> dict[str, str]:
    """The environment without anything that would point the venv back at the repo or at
    another interpreter's packages."""
    drop = ("ONEPLY_MODEL", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONNOUSERSITE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run_installed(command: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """An installed program run from `cwd` in the clean environment (plus `env`)."""
    return subprocess.run(
        [command, *args], cwd=cwd, env={**_clean_env(), **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def _site_packages(bin_dir: Path) -> Path:
    out = subprocess.run(
        [bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


@pytest.mark.slow
def test_installed_oneply_analyses_with_its_bundled_model_from_any_directory(installed, tmp_path):
    env = _clean_env()
    result = _run_installed(installed / "oneply", "analyse", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    site = _site_packages(installed)
    assert Path(report["model"]) == site / "oneply" / "models" / "oneply-small.onnx"
    assert len(report["moves"]) == 20
    where = subprocess.run(
        [installed / "python", "-c", "import oneply.engine; print(oneply.engine.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site)  # not the repo's editable copy


@pytest.mark.slow
def test_install_puts_only_oneply_into_site_packages_with_its_data(installed):
    site = _site_packages(installed)
    for folder in TOP_LEVEL_FOLDERS:
        assert (site / "oneply" / folder / "__init__.py").is_file()
        assert (site / "oneply" / folder / "py.typed").is_file()  # typed for mypy users
        assert not (site / folder).exists(), f"generic top-level package {folder!r} installed"
    assert (site / "oneply" / "arena" / "data" / "puzzles-dev.csv").is_file()
    assert (site / "oneply" / "engine" / "data" / "bench_positions.txt").is_file()


@pytest.mark.slow
def test_installed_oneply_writes_its_default_config_and_names_the_train_extra(installed, tmp_path):
    """A wheel user has no repo config.yml and no torch: both must be one command away."""
    init = _run_installed(installed / "oneply", "bot", "--init-config", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "config.yml").read_text() == (REPO / "config.yml").read_text()
    for args in (["train", "fit", "--help"], ["export", "--untrained", "small", "-o", "m.onnx"]):
        proc = _run_installed(installed / "oneply", *args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"oneply {args[0]}: this needs torch, which is not installed: "
            "pip install 'oneply[train]'"
        ]


@pytest.mark.slow
def test_the_install_built_the_compiled_core_and_the_engine_uses_it(installed, tmp_path):
    """`pip install .` compiles engine/csrc (the machine has a C compiler, as CI's does): the
    health check says `native: yes`, and nothing says the Python path runs."""
    health = _run_installed(
        installed / "oneply", "health", "--heartbeat", str(tmp_path / "none"), cwd=tmp_path
    )
    assert health.returncode == 0, health.stderr
    assert "native: yes" in health.stdout.splitlines()[1]
    assert "native facts unavailable" not in health.stderr


@pytest.mark.slow
def test_without_a_compiler_the_install_succeeds_on_the_python_path(tmp_path):
    """An optional extension: a build whose compiler is missing still installs (CC points at
    nothing), and the engine then runs the Python path and says so once."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to know the tracked files")
    source = _tracked_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**_clean_env(), "CC": "/nonexistent/cc"}
    built = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", str(source)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    probe = "from oneply.engine.facts import native, encoding; import chess;"
    probe += "encoding.encode_batch([chess.Board()], True); print(native.describe())"
    here = sysconfig.get_paths()["purelib"]  # chess and numpy, from the interpreter running this
    ran = _run_installed(venv / "bin" / "python", "-c", probe, cwd=tmp_path, PYTHONPATH=here)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("native: no (")
    assert ran.stderr.count("oneply: native facts unavailable (") == 1

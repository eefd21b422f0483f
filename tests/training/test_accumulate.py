"""Training that accumulates: warm start (--init), following a growing data directory
(--follow), resuming both after a real SIGKILL, the puzzle check in the curves, device choice."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import chess
import numpy as np
import pytest

from oneply.engine.errors import CommandError
from oneply.engine.facts.features import GROUPS
from oneply.engine.play.inference import Scorer
from tests.conftest import POSITION_218
from tests.helpers.fact_versions import V5_FACTS, V5_GROUPS
from tests.helpers.model_helpers import file_log_probs, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.arena.puzzles import DEV_PUZZLES  # noqa: E402
from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.checkpoints import build_state, saved_step  # noqa: E402
from oneply.training.fit.config import (  # noqa: E402
    CHECKPOINT,
    METRICS,
    PLOT,
    TrainConfig,
    check_compatible,
)
from oneply.training.fit.data_feed import DataFeed  # noqa: E402
from oneply.training.fit.device import Dist, pick_device  # noqa: E402
from oneply.training.fit.warm_start import run_architecture  # noqa: E402
from oneply.training.model.export import export_model, load_checkpoint_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.helpers.model_helpers import scores_by_move  # noqa: E402
from tests.helpers.training import (  # noqa: E402
    config,
    fit_command,
    make_shard,
    train_in_background,
)

BOARDS = [
    chess.Board(),
    chess.Board("r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 3 8"),
    chess.Board(POSITION_218),
]
FEATURES = pytest.mark.parametrize("move_features", [True, False], ids=["features", "id-only"])


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def warm_started(init: Path, **changes) -> ActionValueModel:
    """The model a run starting from `init` trains, before its first step."""
    cfg, model_config, source = run_architecture(
        TrainConfig(data=[], out="", init=str(init), **changes), None
    )
    state = build_state(cfg, torch.device("cpu"), model_config, None, source)
    assert all(
        torch.equal(a, b)
        for a, b in zip(state.model.parameters(), state.ema.model.parameters(), strict=True)
    )
    return state.model.eval()


def log_probs(model: ActionValueModel, boards) -> tuple[np.ndarray, np.ndarray]:
    return torch_log_probs(model, boards)


def source_model(
    tmp_path: Path, move_features: bool, mirror: bool = True, features: tuple[str, ...] = ()
) -> tuple[ActionValueModel, Path]:
    torch.manual_seed(7)
    config = dataclasses.replace(PRESETS["tiny"], move_features=move_features, mirror=mirror)
    config = dataclasses.replace(config, features=features or config.features)
    model = ActionValueModel(config)
    path = tmp_path / "source.onnx"
    export_model(model.eval(), path, preset="tiny", trained=False)
    return model, path


# --------------------------------------------------------------------------- --init


@pytest.mark.parametrize(
    "move_features", [True, False, None], ids=["features", "id-only", "bundled"]
)
def test_init_from_onnx_reproduces_the_model_file(tmp_path: Path, move_features) -> None:
    from oneply.engine.model.model_file import REFERENCE_MODEL

    if move_features is None:  # the shipped weights as they are (fp32: int8 cannot warm-start)
        path = REFERENCE_MODEL
    else:
        _, path = source_model(tmp_path, move_features)
    model = warm_started(path)
    if move_features is None:  # whatever the shipped file's metadata says it is
        move_features = Scorer(path, threads=1).info.config.get("move_features", False)
    assert model.config.move_features == move_features
    expected = file_log_probs(Scorer(path, threads=1), BOARDS)
    actual, ids = log_probs(model, BOARDS)
    mask = ids >= 0
    # float32 round-off grows with the log-probabilities (about -10 for a trained model)
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-5, rtol=1e-5)


@FEATURES
def test_init_from_checkpoint_is_bitwise_its_exported_weights(
    tmp_path: Path, move_features: bool
) -> None:
    """A short real run (warm-started from ONNX, so the id-only architecture is covered) writes
    a checkpoint; a run initialised from it starts from exactly the weights export ships."""
    _, onnx_path = source_model(tmp_path, move_features)
    data = make_shard(tmp_path / "data", 40)
    out = tmp_path / "run"
    summary = fit.train(config(data, out, steps=3, preset="", init=str(onnx_path)), quiet=True)
    assert summary["init"] == str(onnx_path) and summary["preset"] == "tiny"
    shipped, _ = load_checkpoint_model(out / CHECKPOINT)
    model = warm_started(out / CHECKPOINT)
    assert model.config == shipped.config
    for (name, a), b in zip(model.state_dict().items(), shipped.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert np.array_equal(log_probs(model, BOARDS)[0], log_probs(shipped, BOARDS)[0])


def test_init_with_another_preset_or_an_int8_file_is_refused(tmp_path: Path) -> None:
    _, path = source_model(tmp_path, move_features=True)
    with pytest.raises(CommandError, match="leave out --preset"):
        warm_started(path, preset="small")
    assert warm_started(path, preset="tiny").config == PRESETS["tiny"]  # the same architecture
    _, id_only = source_model(tmp_path / "v1", move_features=False)
    with pytest.raises(CommandError, match="is a 'tiny' model"):
        warm_started(id_only, preset="tiny")  # same name, other architecture
    int8 = tmp_path / "int8.onnx"
    export_model(ActionValueModel(PRESETS["tiny"]), int8, preset="tiny", int8=True)
    with pytest.raises(CommandError, match="fp32"):
        warm_started(int8)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(CommandError, match="cannot read as a checkpoint"):
        warm_started(garbage)
    with pytest.raises(CommandError, match="no such file"):
        warm_started(tmp_path / "missing.onnx")


def test_a_preset_with_the_side_to_move_view_upgrades_a_source_without_it(tmp_path: Path) -> None:
    """v3 → v4: `--init OLD.onnx --preset small` turns the view on; white-to-move positions
    score exactly as before, black-to-move ones as the source scores their colour-flipped twins;
    without --preset the source's own architecture is kept."""
    _, path = source_model(tmp_path, move_features=True, mirror=False)
    assert warm_started(path).config.mirror is False
    model = warm_started(path, preset="tiny")
    assert model.config == PRESETS["tiny"] and model.config.mirror
    source = Scorer(path, threads=1)
    expected = file_log_probs(source, BOARDS)
    actual, ids = log_probs(model, BOARDS)  # all white to move
    mask = ids >= 0
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-5, rtol=1e-5)
    black = [board.mirror() for board in BOARDS]
    for board, twin in zip(black, BOARDS, strict=True):  # keyed from the side to move
        got, want = scores_by_move(model, board, "shared"), scores_by_move(source, twin, "shared")
        assert got.keys() == want.keys()
        for move in got:
            np.testing.assert_allclose(got[move], want[move], atol=1e-5, rtol=1e-5, err_msg=move)
    actual, ids = log_probs(model, black)
    unmirrored = file_log_probs(source, black)  # what the view changes
    assert not np.allclose(actual[ids >= 0], unmirrored[ids >= 0], atol=1e-3)


def test_facts_choose_the_groups_a_run_reads_and_a_resume_keeps_them(tmp_path: Path) -> None:
    """`fit --facts`: a fresh run reads those groups; a warm start may add groups to its
    source's (through the engine's file, which then asks for them); a checkpoint resumed with
    other groups is refused."""
    _, model_config, _ = run_architecture(TrainConfig(data=[], out="", facts=["attacks"]), None)
    assert model_config.features == GROUPS["attacks"]
    _, path = source_model(tmp_path, move_features=True, features=V5_FACTS)
    grown = warm_started(path, facts=[*V5_GROUPS, "exchange"])
    assert set(grown.config.features) == set(V5_FACTS) | set(GROUPS["exchange"])
    export_model(grown, tmp_path / "grown.onnx", preset="tiny", trained=False)
    assert Scorer(tmp_path / "grown.onnx", threads=1).info.features == grown.config.features
    saved = TrainConfig(data=[], out=str(tmp_path))
    with pytest.raises(CommandError, match="facts"):
        check_compatible(saved, dataclasses.replace(saved, facts=["exchange"]))


def test_layers_grow_a_source_that_then_scores_as_before_and_learns(tmp_path: Path) -> None:
    """`fit --init tiny.onnx --layers 3`: the third block starts as an identity, so the grown
    model scores every position as its source's file does; one real training step moves the
    new block's output projections off zero; its file is a tiny model with 3 layers; a run
    resumed with other layers, or fewer layers than the source, is refused."""
    _, path = source_model(tmp_path, move_features=True)
    grown = warm_started(path, layers=3)
    assert grown.config == dataclasses.replace(PRESETS["tiny"], layers=3)
    assert not grown.blocks[2].proj.weight.any() and not grown.blocks[2].mlp.w2.weight.any()
    assert grown.blocks[2].qkv.weight.any()  # the inner weights are the fresh model's
    expected = file_log_probs(Scorer(path, threads=1), BOARDS)
    actual, ids = log_probs(grown, BOARDS)
    np.testing.assert_allclose(actual[ids >= 0], expected[ids >= 0], atol=1e-5, rtol=1e-5)
    data = make_shard(tmp_path / "data", 40)
    out = tmp_path / "run"
    summary = fit.train(config(data, out, steps=2, preset="", init=str(path), layers=3), True)
    assert summary["preset"] == "tiny-3L"
    trained, _ = load_checkpoint_model(out / CHECKPOINT)
    assert trained.config.layers == 3 and trained.blocks[2].proj.weight.any()
    export_model(trained, tmp_path / "grown.onnx", preset="tiny-3L")
    scorer = Scorer(tmp_path / "grown.onnx", threads=1)
    assert scorer.info.config["layers"] == 3 and scorer.info.preset == "tiny-3L"
    with pytest.raises(CommandError, match="layers"):
        fit.train(config(data, out, steps=3, preset="", init=str(path), layers=4), True)
    with pytest.raises(CommandError, match="--layers at least"):
        warm_started(path, layers=1)
    with pytest.raises(CommandError, match="1 or more"):
        warm_started(path, layers=-2)


# --------------------------------------------------------------------------- --follow


def test_follow_picks_up_a_shard_written_mid_run(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 60)
    out = tmp_path / "run"
    cfg = config(data, out, steps=150, follow=True, rescan_every=5, checkpoint_every=5)
    cfg = dataclasses.replace(cfg, eval_every=1000, log_every=5)
    trainer, errors = train_in_background(cfg)
    deadline = time.monotonic() + 120
    while not (out / CHECKPOINT).exists() and trainer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    make_shard(data, 60, seed=1, name="chunk-000001")  # what `oneply train generate` does
    trainer.join()
    assert not errors, errors

    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    segments = checkpoint["segments"]
    assert [Path(s).name for s in segments[0]["shards"]] == ["chunk-000000"]
    assert len(segments) == 2, "the new shard should have been found before the run ended"
    assert [Path(s).name for s in segments[1]["shards"]] == ["chunk-000000", "chunk-000001"]
    start = segments[1]["start"]
    assert 5 < start < 150 and start % 5 == 0
    assert checkpoint["data_position"]["segment"] == 1
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    data_rows = [r for r in rows if r["split"] == "data"]
    assert [(r["step"], r["shards"]) for r in data_rows] == [(0, 1), (start, 2)]
    assert data_rows[1]["positions"] > data_rows[0]["positions"]

    # Rows of the new shard were trained on: rebuild the run's data from its record.
    feed = DataFeed(cfg, Dist())
    feed.start(segments)
    used = {feed.train.part_of(int(i)) for s in range(start, 150) for i in feed.batch_indices(s)}
    assert used == {0, 1}


def test_a_resumed_follow_run_keeps_its_recorded_shards(tmp_path: Path) -> None:
    """A shard written after the checkpoint does not change the resumed order until the next
    rescan: the data of every recorded step is what it was."""
    data = make_shard(tmp_path / "data", 60)
    cfg = config(data, tmp_path / "run", steps=4, follow=True, rescan_every=4)
    fit.train(cfg, quiet=True)
    segments = torch.load(tmp_path / "run" / CHECKPOINT, weights_only=False)["segments"]
    before = DataFeed(cfg, Dist())
    before.start(segments)
    make_shard(data, 60, seed=2, name="chunk-000009")
    after = DataFeed(cfg, Dist())
    after.start(segments)
    assert after.segments[-1].shards == before.segments[-1].shards
    for step in range(4, 12):
        assert np.array_equal(after.batch_indices(step), before.batch_indices(step))
    assert after.rescan(8) and len(after.segments[-1].shards) == 2  # then it is found


def test_a_run_resumes_from_data_that_moved(tmp_path: Path) -> None:
    """The checkpoint records shard paths; data moved to another directory (another machine)
    resumes with the same positions in the same order."""
    data = make_shard(tmp_path / "data", 60)
    make_shard(data, 40, seed=1, name="chunk-000001")
    out = tmp_path / "run"
    fit.train(config(data, out, steps=4), quiet=True)
    recorded = torch.load(out / CHECKPOINT, weights_only=False)
    shutil.move(data, tmp_path / "moved")
    moved = config(tmp_path / "moved", out, steps=4)
    feed = DataFeed(moved, Dist())
    feed.start(recorded["segments"], recorded["train_config"]["data"])
    assert [Path(s).parent for s in feed.segments[0].shards] == [tmp_path / "moved"] * 2
    assert fit.train(config(tmp_path / "moved", out, steps=6), quiet=True)["steps"] == 6


def test_follow_waits_for_a_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such directory"):
        fit.train(config(tmp_path / "empty", tmp_path / "a", steps=1), quiet=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match="--follow to wait"):
        fit.train(config(tmp_path / "empty", tmp_path / "b", steps=1), quiet=True)

    later = tmp_path / "later"
    cfg = config(later, tmp_path / "run", steps=2, follow=True)
    trainer = threading.Thread(target=fit.train, args=(cfg,), kwargs={"quiet": True})
    trainer.start()
    time.sleep(0.5)
    assert trainer.is_alive()  # waiting, not failing
    make_shard(later, 40)
    trainer.join(timeout=60)
    assert saved_step(tmp_path / "run" / CHECKPOINT) == 2


# --------------------------------------------------------------------------- resume


@pytest.mark.slow
def test_sigkill_then_resume_with_init_and_follow_matches_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    """Sitting 1 trains 6 steps from a model file (id-only architecture) on one shard; a second
    shard arrives; sitting 2 continues to 40 steps and finds it at step 8. Killed mid-way and
    resumed, sitting 2 ends with exactly the weights of an uninterrupted sitting 2."""
    _, init = source_model(tmp_path, move_features=False)
    data = make_shard(tmp_path / "data", 50)
    first = tmp_path / "first"
    cfg = config(data, first, steps=6, batch=8, preset="", init=str(init), follow=True)
    fit.train(dataclasses.replace(cfg, rescan_every=2, exclude_puzzles=[]), quiet=True)
    make_shard(data, 50, seed=3, name="chunk-000001")
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    shutil.copytree(first, straight)
    shutil.copytree(first, killed)

    def command(out: Path) -> list[str]:
        base = fit_command(data, out)
        base[base.index("--steps") + 1] = "40"
        base[base.index("--preset") : base.index("--preset") + 2] = ["--init", str(init)]
        return base + ["--follow", "--rescan-every", "2", "--eval-puzzles", "0"]

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(command(killed), env=env, cwd=REPO)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if (killed / CHECKPOINT).exists() and saved_step(killed / CHECKPOINT) >= 9:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = saved_step(killed / CHECKPOINT)
    assert 9 <= saved < 40, "the run should have been killed after the new shard, mid-way"
    resumed = subprocess.run(
        [c for c in command(killed) if c != "--quiet"],
        env=env, cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert f"from step {saved}" in resumed.stdout
    subprocess.run(command(straight), env=env, cwd=REPO, check=True)

    a = torch.load(killed / CHECKPOINT, weights_only=False)
    b = torch.load(straight / CHECKPOINT, weights_only=False)
    assert a["step"] == b["step"] == 40
    assert a["segments"] == b["segments"] and [s["start"] for s in a["segments"]] == [0, 8]
    assert a["config"]["move_features"] is False  # the init model's architecture throughout
    for part in ("model", "ema"):
        assert all(torch.equal(a[part][k], b[part][k]) for k in b[part]), part
    rows = [json.loads(line) for line in (killed / METRICS).read_text().splitlines()]
    steps = [r["step"] for r in rows if r["split"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == 40
    assert [r["step"] for r in rows if r["split"] == "data"] == [0, 8]


# --------------------------------------------------------------------------- the curves


def test_validation_and_puzzle_check_land_in_metrics_and_plot(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 60)
    out = tmp_path / "run"
    cfg = config(data, out, steps=4, eval_every=2, puzzles=str(DEV_PUZZLES), eval_puzzles=8)
    fit.train(cfg, quiet=True)
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    puzzles = [r for r in rows if r["split"] == "puzzles"]
    assert [r["step"] for r in puzzles] == [2, 4] and all(r["count"] == 8 for r in puzzles)
    assert [r["step"] for r in rows if r["split"] == "val"] == [2, 4]
    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    assert checkpoint["metrics"]["puzzle_accuracy"] == puzzles[-1]["accuracy"]
    assert (out / PLOT).read_bytes()[:4] == b"\x89PNG"


def test_the_puzzle_check_agrees_with_oneply_eval() -> None:
    """The torch check of the warm-started bundled model and the onnxruntime evaluation of its
    file solve the same puzzles (a trained model: no near-ties for float noise to flip)."""
    from oneply.arena.puzzles import read_puzzles, solve_puzzles
    from oneply.engine.model.model_file import REFERENCE_MODEL
    from oneply.training.fit.validation import TorchScorer

    puzzles = read_puzzles(DEV_PUZZLES, 40)
    model = warm_started(REFERENCE_MODEL)
    ours = solve_puzzles(TorchScorer(model, torch.device("cpu"), "shared", False), puzzles)
    assert ours == solve_puzzles(Scorer(REFERENCE_MODEL, threads=1), puzzles)


# --------------------------------------------------------------------------- device


def test_device_choice_without_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert pick_device("auto") == torch.device("cpu")
    assert pick_device("cpu", local_rank=3) == torch.device("cpu")
    with pytest.raises(CommandError, match="CUDA sees 0 GPU"):
        pick_device("cuda")


def test_a_checkpoint_with_fused_adamw_resumes_on_the_cpu(tmp_path: Path) -> None:
    """A checkpoint from a CUDA run (fused AdamW) must not carry `fused` into a CPU run."""
    data = make_shard(tmp_path / "data", 40)
    out = tmp_path / "run"
    fit.train(config(data, out, steps=2), quiet=True)
    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    for group in checkpoint["optimizer"]["param_groups"]:
        group["fused"] = True  # what a CUDA run saves
    torch.save(checkpoint, out / CHECKPOINT)
    summary = fit.train(config(data, out, steps=4), quiet=True)
    assert summary["steps"] == 4
    resumed = torch.load(out / CHECKPOINT, weights_only=False)
    assert all(not g["fused"] for g in resumed["optimizer"]["param_groups"])

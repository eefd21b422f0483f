"""The trainer: targets, masking, data order, schedule, a real short run, exact resume."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from oneply.engine.errors import CommandError  # noqa: E402
from oneply.engine.model.values import (  # noqa: E402
    bin_centres,
    hl_gauss,  # noqa: E402
    value_to_bin,
)
from oneply.training.data.dataset import (  # noqa: E402
    AnnotatedDataset,
    puzzle_keys,  # noqa: E402
)
from oneply.training.fit import checkpoints, fit  # noqa: E402
from oneply.training.fit.batches import BatchOrder, collate, training_indices  # noqa: E402
from oneply.training.fit.checkpoints import saved_step  # noqa: E402
from oneply.training.fit.config import CHECKPOINT, METRICS, PLOT, TrainConfig  # noqa: E402
from oneply.training.fit.optim import learning_rate  # noqa: E402
from oneply.training.fit.targets import (  # noqa: E402
    action_hits,
    forward,
    hl_gauss_targets,
    loss_sum,
    one_hot_targets,
)
from oneply.training.fit.train_bench import synthetic_batch  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.helpers.training import config, fit_command, make_shard  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- targets and loss


@pytest.mark.parametrize("win", [0.0, 0.0031, 0.37, 0.5, 0.9999, 1.0])
def test_hl_gauss_targets_are_a_distribution_centred_on_the_value(win: float) -> None:
    target = hl_gauss_targets(torch.tensor([win]))[0].double().numpy()
    assert target.shape == (128,) and target.min() >= 0
    assert target.sum() == pytest.approx(1.0, abs=1e-6)
    assert np.argmax(target) == value_to_bin(win)
    if 0.05 < win < 0.95:  # away from the edges the mean is the value itself
        assert target @ bin_centres() == pytest.approx(win, abs=1e-4)
        # σ = 0.75 bin: a value at a bin centre keeps P(|Z| < 2/3) ≈ 49.5 % in its own bin
    centre = hl_gauss_targets(torch.tensor([(60 + 0.5) / 128]))[0]
    assert float(centre[60]) == pytest.approx(math.erf(0.5 / 0.75 / math.sqrt(2)), abs=1e-4)


def test_training_and_evaluation_use_the_same_hl_gauss_target() -> None:
    wins = np.array([0.0, 0.12, 0.5, 0.77, 1.0], dtype=np.float32)
    torch_target = hl_gauss_targets(torch.from_numpy(wins)).numpy()
    assert np.allclose(torch_target, hl_gauss(wins, 128), atol=2e-6)


def test_one_hot_target_uses_the_reference_bins() -> None:
    wins = torch.tensor([0.0, 1 / 128, 0.5, 0.999, 1.0])
    bins = one_hot_targets(wins).argmax(-1).numpy()
    assert list(bins) == list(value_to_bin(wins.numpy()))


def test_padding_does_not_change_the_loss_and_per_move_matches_the_model() -> None:
    torch.manual_seed(0)
    model = ActionValueModel(PRESETS["tiny"]).eval()
    rng = np.random.default_rng(0)
    examples = [synthetic_batch(1, rng) for _ in range(3)]
    batch = collate(
        [(e.states[0].numpy(), e.moves[0].numpy(), e.wins[0].numpy()) for e in examples]
    )
    width = batch.moves.shape[1]  # the synthetic facts, padded like the moves
    batch.square_facts = torch.cat([e.square_facts for e in examples])
    batch.move_facts = torch.stack(
        [F.pad(e.move_facts[0], (0, 0, 0, width - e.move_facts.shape[1])) for e in examples]
    )
    assert batch.action_values == sum(e.action_values for e in examples)
    cfg = TrainConfig(data=[], out="")
    with torch.no_grad():
        shared = forward(model, batch, "shared")
        garbage = dataclasses.replace(batch, wins=batch.wins.masked_fill(~batch.mask, 0.7))
        assert float(loss_sum(shared, batch, cfg)) == float(loss_sum(shared, garbage, cfg))
        alone = sum(float(loss_sum(forward(model, e, "shared"), e, cfg)) for e in examples)
        assert float(loss_sum(shared, batch, cfg)) == pytest.approx(alone, rel=1e-5)
        # per_move runs only the real pairs; each must equal the model's own per_move output
        per_move = forward(model, batch, "per_move")
        for row, e in enumerate(examples):
            n = e.action_values
            direct = model(e.states, e.moves, "per_move", e.square_facts, e.move_facts)[0]
            assert torch.allclose(per_move[row, :n], direct, atol=1e-5)


def test_action_hits_accepts_any_of_stockfishs_equal_best_moves() -> None:
    # predicted expected wins come from log-probs: put all mass on one bin per move
    log_probs = torch.full((1, 3, 128), -1e9)
    log_probs[0, 0, 10], log_probs[0, 1, 120], log_probs[0, 2, 127] = 0.0, 0.0, 0.0
    mask = torch.tensor([[True, True, False]])  # move 2 is padding: never chosen
    assert action_hits(log_probs, torch.tensor([[0.2, 1.0, 0.0]]), mask).item()
    assert action_hits(log_probs, torch.tensor([[1.0, 1.0, 0.0]]), mask).item()
    assert not action_hits(log_probs, torch.tensor([[0.9, 0.5, 0.0]]), mask).item()


# --------------------------------------------------------------------------- data order, schedule


def test_batch_order_is_a_deterministic_sharded_permutation_with_less_padding() -> None:
    lengths = np.random.default_rng(1).integers(1, 60, 1000)
    order = BatchOrder(lengths, batch=25, bucket=8, seed=3)
    epoch0 = np.concatenate([order.indices(s) for s in range(order.per_epoch)])
    assert order.per_epoch == 40 and sorted(epoch0) == list(range(1000))
    again = BatchOrder(lengths, batch=25, bucket=8, seed=3)
    assert all((order.indices(s) == again.indices(s)).all() for s in (0, 17, 39, 40, 95))
    assert order.position(95) == (2, 15)
    assert not (order.indices(40) == order.indices(0)).all()  # a new epoch reshuffles
    ranks = [BatchOrder(lengths, batch=25, bucket=8, seed=3, rank=r, world=2) for r in (0, 1)]
    step = np.concatenate([r.indices(7) for r in ranks])
    assert len(set(step)) == 50  # the ranks split a global batch without overlap

    def padding(o: BatchOrder) -> int:
        batches = [lengths[o.indices(s)] for s in range(o.per_epoch)]
        return sum(int(b.max() * len(b) - b.sum()) for b in batches)

    assert padding(order) < 0.5 * padding(BatchOrder(lengths, batch=25, bucket=1, seed=3))


def test_learning_rate_warms_up_then_decays_to_the_minimum() -> None:
    cfg = TrainConfig(data=[], out="", steps=100, warmup=10, lr=1e-3, min_lr_ratio=0.1)
    rates = [learning_rate(s, cfg) for s in range(101)]
    assert rates[0] == pytest.approx(1e-4) and rates[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:], strict=False))
    assert rates[100] == pytest.approx(1e-4)


def test_puzzle_positions_are_excluded_from_training(tmp_path: Path) -> None:
    csv = tmp_path / "puzzles.csv"
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    csv.write_text(f"PuzzleId,FEN,Moves,Rating,Themes,GameUrl\nx,{fen},f1c4 g8f6,1500,,\n")
    after = chess.Board(fen)
    after.push_uci("f1c4")
    data = make_shard(tmp_path / "data", 30, extra=[fen, after.fen()])
    dataset = AnnotatedDataset(data, split="all")
    kept = training_indices(dataset, puzzle_keys([csv]))
    assert len(kept) == len(dataset) - 2 and 0 not in kept and 1 not in kept


# --------------------------------------------------------------------------- real runs


def test_a_short_run_learns_and_writes_checkpoint_metrics_and_plot(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 120)
    out = tmp_path / "run"
    summary = fit.train(config(data, out, steps=16, eval_every=4), quiet=True)
    assert summary["steps"] == 16 and summary["positions"] > 0
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    train_rows = [r for r in rows if r["split"] == "train"]
    val_rows = [r for r in rows if r["split"] == "val"]
    assert [r["step"] for r in val_rows] == [4, 8, 12, 16]
    assert train_rows[-1]["loss"] < train_rows[0]["loss"] - 0.3  # the values are learnable
    assert val_rows[-1]["loss"] < val_rows[0]["loss"]
    assert all(r["action_values_per_s"] > 0 for r in train_rows)
    assert (out / PLOT).read_bytes()[:4] == b"\x89PNG"
    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    for key in ("config", "preset", "model", "ema", "optimizer", "rng", "summary", "metrics"):
        assert key in checkpoint
    assert checkpoint["data_position"]["epoch"] >= 1  # 16 steps of 16 over ~96 positions
    from oneply.training.model.export import load_checkpoint_model

    model, _ = load_checkpoint_model(out / CHECKPOINT)  # the EMA weights, exportable
    assert model.config == PRESETS["tiny"]


def test_per_move_layout_trains(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 40)
    summary = fit.train(config(data, tmp_path / "run", steps=2, layout="per_move"), quiet=True)
    assert summary["layout"] == "per_move" and summary["steps"] == 2


@pytest.mark.slow
def test_a_compiled_run_trains_the_same_weights_and_saves_plain_names(tmp_path: Path) -> None:
    """--compile wraps only the forward pass: the steps are the eager run's (fp32, to float
    rounding), and the checkpoint keeps the module's own names, so it resumes and exports."""
    from torch._dynamo.utils import counters

    data = make_shard(tmp_path / "data", 40)
    runs = {}
    for compiled in (False, True):
        out = tmp_path / f"compile-{compiled}"
        counters.clear()
        summary = fit.train(config(data, out, steps=3, bf16=False, compile=compiled), quiet=True)
        assert summary["compile"] is compiled
        assert bool(counters["stats"]["unique_graphs"]) is compiled  # dynamo traced the model
        runs[compiled] = torch.load(out / CHECKPOINT, weights_only=False)["model"]
    assert runs[True].keys() == runs[False].keys()
    assert not any(key.startswith("_orig_mod") for key in runs[True])
    for key, eager in runs[False].items():
        assert torch.allclose(runs[True][key], eager, atol=1e-5), key
    from oneply.training.model.export import load_checkpoint_model

    load_checkpoint_model(tmp_path / "compile-True" / CHECKPOINT)


def test_resume_refuses_a_checkpoint_trained_differently(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 40)
    fit.train(config(data, tmp_path / "run", steps=1), quiet=True)
    with pytest.raises(CommandError, match="other settings"):
        fit.train(config(data, tmp_path / "run", steps=2, batch=8), quiet=True)


@pytest.mark.slow
def test_sigkill_then_resume_continues_and_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 50)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = tmp_path / "killed"
    process = subprocess.Popen(fit_command(data, killed), env=env, cwd=REPO)
    checkpoint = killed / CHECKPOINT
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = saved_step(checkpoint)
    assert 0 < saved < 16, "the run should have been killed mid-way"

    resumed = subprocess.run(
        fit_command(data, killed)[:-2] + ["--exclude-puzzles"],  # not --quiet: prints resume
        env=env, cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert f"from step {saved}" in resumed.stdout
    rows = [json.loads(line) for line in (killed / METRICS).read_text().splitlines()]
    train_steps = [r["step"] for r in rows if r["split"] == "train"]
    assert train_steps == sorted(set(train_steps)) and train_steps[-1] == 16  # no duplicates

    straight = tmp_path / "straight"
    subprocess.run(fit_command(data, straight), env=env, cwd=REPO, check=True)
    a = torch.load(killed / CHECKPOINT, weights_only=False)
    b = torch.load(straight / CHECKPOINT, weights_only=False)
    assert a["step"] == b["step"] == 16
    for part in ("model", "ema"):
        assert all(torch.equal(a[part][k], b[part][k]) for k in b[part]), part


class Died(Exception):
    """The machine went away right after a save."""


def test_a_run_saves_by_the_clock_between_step_saves_and_resumes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With step saves far apart, a slow run still saves every --checkpoint-minutes; killed
    after such a save, it resumes from that step and ends where an unbroken run ends."""
    ticks = iter(range(0, 10**8, 60))  # each look at the clock: one more minute
    monkeypatch.setattr(checkpoints, "CLOCK", lambda: float(next(ticks)))
    data = make_shard(tmp_path / "data", 50)
    saves: list[int] = []
    real_save = fit.save_checkpoint

    def save_then_die(path, config, state, feed, summary) -> None:
        real_save(path, config, state, feed, summary)
        saves.append(state.step)
        if len(saves) == 2:
            raise Died

    monkeypatch.setattr(fit, "save_checkpoint", save_then_die)
    run = config(data, tmp_path / "killed", checkpoint_every=10**6, checkpoint_minutes=2.5)
    with pytest.raises(Died):
        fit.train(run, quiet=True)
    assert 0 < saves[0] < saves[1] < run.steps  # by the clock alone: no step rule was due
    assert saved_step(tmp_path / "killed" / CHECKPOINT) == saves[1]

    resumed = fit.train(run, quiet=True)
    assert saves[2:] != [] and saves[2] > saves[1] and resumed["steps"] == run.steps
    straight = config(data, tmp_path / "straight", checkpoint_every=10**6, checkpoint_minutes=0)
    fit.train(straight, quiet=True)
    assert saves[-1] == run.steps and saves.count(run.steps) == 2  # off: the last step only
    a = torch.load(tmp_path / "killed" / CHECKPOINT, weights_only=False)
    b = torch.load(tmp_path / "straight" / CHECKPOINT, weights_only=False)
    for part in ("model", "ema"):
        assert all(torch.equal(a[part][k], b[part][k]) for k in b[part]), part


@pytest.mark.slow
def test_torchrun_two_processes_share_each_global_batch(tmp_path: Path) -> None:
    """DDP over gloo on CPU: both ranks train, rank 0 alone writes, batch = 2 × --batch."""
    data = make_shard(tmp_path / "data", 60)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node", "2", "-m", "oneply.engine"] + fit_command(
        data, tmp_path / "run"
    )[3:]
    command[command.index("--steps") + 1] = "4"
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    checkpoint = torch.load(tmp_path / "run" / CHECKPOINT, weights_only=False)
    assert checkpoint["step"] == 4
    assert checkpoint["summary"]["world_size"] == 2 and checkpoint["summary"]["batch"] == 16
    assert done.stdout.count("checkpoint:") == 1  # only rank 0 reports


def test_benchmark_runs_per_move_in_micro_batches_of_4_unless_told(capsys) -> None:
    """`--micro-batch` defaults to 0 (= the whole batch) for training; the benchmark's per_move
    rows must still use their own default of 4 positions per pass, or a given value."""
    from oneply.engine.cli import main

    argv = ["train", "fit", "--benchmark", "tiny", "--batch", "8", "--benchmark-steps", "1"]
    for extra, micro in (([], 4), (["--micro-batch", "2"], 2)):
        assert main([*argv, *extra]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if "micro" in line]
        per_move = [row for row in rows if row[1] == "per_move"]
        assert per_move and all(row[row.index("micro") + 1] == str(micro) for row in per_move)
        shared = [row for row in rows if row[1] == "shared"]
        assert shared and all(row[row.index("micro") + 1] == "8" for row in shared)

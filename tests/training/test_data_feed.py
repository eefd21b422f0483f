"""The feed's throttle (`fit --follow --max-passes`): a trainer faster than its generator waits
for new shards instead of reading the known positions again, until its deadline or until the
generator has stopped."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oneply.engine.errors import CommandError
from tests.helpers.training import config, make_shard, train_in_background

torch = pytest.importorskip("torch")

from oneply.training.fit import data_feed, deadline, fit  # noqa: E402
from oneply.training.fit.checkpoints import saved_step  # noqa: E402
from oneply.training.fit.config import CHECKPOINT, TrainConfig  # noqa: E402
from oneply.training.fit.data_feed import DataFeed  # noqa: E402
from oneply.training.fit.device import Dist  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: positions per shard (about 48 of them train, 20% validate: about 3 steps of 16 per pass)
SHARD = 60


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_feed, "POLL_SECONDS", 0.02)


def throttled(data: Path, out: Path, **changes: object) -> TrainConfig:
    base: dict[str, object] = dict(follow=True, max_passes=1.0, rescan_every=1000)
    base.update(checkpoint_every=1, eval_every=1000, log_every=1000)
    return config(data, out, **{**base, **changes})


def steps_allowed(cfg: TrainConfig) -> int:
    """The steps of `cfg` that read the shards there now at most max_passes times."""
    feed = DataFeed(cfg, Dist())
    feed.start(None)
    return int(len(feed.train) * cfg.max_passes) // cfg.batch


def settles_at(out: Path, step: int, trainer: threading.Thread) -> None:
    """Wait until the run's checkpoint is at `step`, then check that it stays there."""
    until = time.monotonic() + 120
    while time.monotonic() < until and trainer.is_alive():
        if (out / CHECKPOINT).exists() and saved_step(out / CHECKPOINT) >= step:
            break
        time.sleep(0.02)
    time.sleep(0.5)  # many polls: a run that did not wait would be past it by now
    assert trainer.is_alive(), "the run should be waiting for data, not finished"
    assert saved_step(out / CHECKPOINT) == step


def test_a_throttled_run_waits_for_each_new_shard(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", SHARD)
    out = tmp_path / "run"
    cfg = throttled(data, out, steps=12)
    first = steps_allowed(cfg)
    trainer, errors = train_in_background(cfg)
    settles_at(out, first, trainer)  # one pass over the first shard, then a wait
    make_shard(data, SHARD, seed=1, name="chunk-000001")
    second = steps_allowed(cfg)
    settles_at(out, second, trainer)  # twice the data, about twice the steps
    later = tmp_path / "later"  # three shards published by one rename, as a lent machine's
    for seed in (2, 3, 4):  # labels are: a run that rescans between them cannot see only some
        make_shard(later, SHARD, seed=seed, name=f"chunk-00000{seed}")
    later.rename(data / "device")
    trainer.join(timeout=120)
    assert not errors, errors
    checkpoint = torch.load(out / CHECKPOINT, weights_only=False)
    assert checkpoint["step"] == 12
    starts = [(s["start"], len(s["shards"])) for s in checkpoint["segments"]]
    assert starts[:2] == [(0, 1), (first, 2)]
    assert starts[2:] == [(second, 5)]  # the nested shards, all at once


def test_a_waiting_run_ends_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    clock: Callable[[], float] = lambda: now[0]  # noqa: E731 - the run's wall clock
    monkeypatch.setattr(deadline, "CLOCK", clock)
    data = make_shard(tmp_path / "data", SHARD)
    out = tmp_path / "run"
    cfg = throttled(data, out, steps=100, hours=1.0)
    first = steps_allowed(cfg)
    trainer, errors = train_in_background(cfg)
    settles_at(out, first, trainer)
    now[0] = 3601.0  # the hour is up while it waits: one last step, annealed, then saved
    trainer.join(timeout=120)
    assert not errors, errors
    assert saved_step(out / CHECKPOINT) == first + 1


def test_a_stopped_generator_lifts_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_feed, "STALL_SECONDS", 0.3)
    data = make_shard(tmp_path / "data", SHARD)
    out = tmp_path / "run"
    cfg = throttled(data, out, steps=10)
    assert steps_allowed(cfg) < 5
    trainer, errors = train_in_background(cfg)
    trainer.join(timeout=120)
    assert not errors, errors
    assert saved_step(out / CHECKPOINT) == 10  # over three passes after all


def test_max_passes_needs_follow(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", SHARD)
    with pytest.raises(CommandError, match="--max-passes .* --follow"):
        fit.train(throttled(data, tmp_path / "run", follow=False), quiet=True)

"""`fit --hours`: the run re-plans its last step from its own pace and anneals at the deadline."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from oneply.training.fit import deadline
from oneply.training.fit.deadline import WARM_STEPS, Deadline

torch = pytest.importorskip("torch")

from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.config import METRICS  # noqa: E402
from oneply.training.fit.optim import learning_rate  # noqa: E402
from tests.helpers.training import config, make_shard  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_plan_is_the_cap_until_the_pace_is_known_then_where_the_pace_lands() -> None:
    clock = FakeClock()
    deadline = Deadline(hours=0.1, cap=5000, step=300, clock=clock)  # 360 s from now
    assert deadline.steps(300 + WARM_STEPS - 1) == 5000  # compiling: not yet paced
    clock.now += 10
    assert deadline.steps(300 + WARM_STEPS) == 5000  # pacing starts here
    clock.now += 100  # 2 steps a second since, 250 s left
    assert deadline.steps(300 + WARM_STEPS + 200) == 300 + WARM_STEPS + 200 + 500
    clock.now += 240  # slower now: 2.4 steps/s over the sitting, 10 s left
    assert deadline.steps(1100) == 1100 + int(780 / 340 * 10)
    assert Deadline(hours=10, cap=5000, step=0, clock=clock).steps(0) == 5000
    fast = Deadline(hours=1, cap=900, step=0, clock=clock)
    fast.steps(WARM_STEPS)
    clock.now += 1
    assert fast.steps(WARM_STEPS + 100) == 900  # the pace would go further: --steps caps it
    clock.now += 3600
    assert fast.steps(WARM_STEPS + 110) == WARM_STEPS + 110  # time is up: the run ends here
    late = Deadline(hours=1, cap=900, step=0, clock=clock)
    late.steps(WARM_STEPS)
    clock.now += 3599.9
    assert late.steps(WARM_STEPS + 1) == WARM_STEPS + 2  # always one more while time is left


def test_a_run_with_hours_ends_at_the_deadline_on_a_cosine_sized_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run whose clock ticks one second a step: 100 s from its start it has trained 100
    steps, far below its cap, and once paced its learning rate is a 100-step cosine's."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(deadline, "CLOCK", lambda: float(next(ticks)))
    data = make_shard(tmp_path / "data", 40)
    out, lr = tmp_path / "run", 3e-3
    run = config(data, out, steps=400, hours=100 / 3600, eval_every=10**6, lr=lr, batch=8)
    run.checkpoint_every, run.warmup, run.log_every = 10**6, 5, 1
    summary = fit.train(run, quiet=True)
    assert summary["steps"] == 100
    planned = dataclasses.replace(run, steps=100)
    rows = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    lrs = {r["step"]: r["lr"] for r in rows if r["split"] == "train"}
    assert lrs[10] > 0.99 * lr  # the cap's schedule while not yet paced
    for step in range(WARM_STEPS + 2, 101):
        assert lrs[step] == pytest.approx(learning_rate(step - 1, planned), rel=1e-6)
    assert lrs[100] < 0.11 * lr  # annealed to the floor (0.1 lr) at the deadline

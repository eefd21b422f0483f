"""`oneply train ablate`: variants differ only in what they say, share one budget of positions,
and a run trains, measures, writes the table and skips finished variants when called again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from oneply.training.lab import ablation, budget  # noqa: E402
from tests.helpers.fact_versions import V5_FACTS  # noqa: E402
from tests.helpers.training import ablate, make_shard, run_ablation  # noqa: E402


def init_weights(tmp_path: Path, name: str) -> dict:
    path = tmp_path / name / "init.pt"
    ablation.write_init(ablation.variant_named(name), path, seed=5, preset="tiny")
    return torch.load(path, weights_only=False)


def test_variants_change_only_what_they_name(tmp_path: Path) -> None:
    v1, pos, squares, pieces = (
        init_weights(tmp_path, n) for n in ("v1", "pos-init", "squares", "pieces")
    )
    assert not v1["model"]["pos_embed"].any() and pos["model"]["pos_embed"].abs().sum() > 0
    assert "from_embed.weight" not in v1["model"] and "from_embed.weight" in squares["model"]
    assert "from_piece.weight" not in squares["model"] and "from_piece.weight" in pieces["model"]
    # same seed: the parts they share start identical, so the table compares like with like
    assert torch.equal(v1["model"]["state_embed.weight"], pos["model"]["state_embed.weight"])
    deep = init_weights(tmp_path, "deep")["config"]
    assert (deep["layers"], deep["width"]) == (8, 96)


def test_the_exchange_row_adds_only_the_exchange_facts(tmp_path: Path) -> None:
    facts, exchange = (init_weights(tmp_path, n)["config"] for n in ("facts", "facts-exchange"))
    assert facts["features"] == V5_FACTS
    assert set(exchange["features"]) - set(facts["features"]) == {"en_prise", "exchange"}
    assert {k: v for k, v in exchange.items() if k != "features"} == {
        k: v for k, v in facts.items() if k != "features"
    }


def test_the_size_rows_differ_only_in_size(tmp_path: Path) -> None:
    """tiny / small / a ~4M model of the same v5 architecture (the size sweep of issue 18)."""
    counts = {}
    for name in ("size-tiny", "facts", "size-medium"):
        path = tmp_path / name / "init.pt"
        counts[name] = ablation.write_init(ablation.variant_named(name), path, seed=1)
        config = torch.load(path, weights_only=False)["config"]
        assert config["mirror"] and config["features"]
    assert counts["size-tiny"] < counts["facts"] < counts["size-medium"]
    assert 3.5e6 < counts["size-medium"] < 4.5e6


def test_every_variant_sees_the_same_number_of_positions() -> None:
    chosen = ablation.AblationConfig(data=["d"], positions=12_800, seed=0)
    configs = {
        name: ablation.train_config(ablation.variant_named(name), chosen, Path("o"), 12_800)
        for name in ("pieces", "batch-64", "batch-256", "warmup-0", "lr-3e-4")
    }
    assert {c.steps * c.batch for c in configs.values()} == {12_800}
    assert configs["batch-64"].steps == 2 * configs["pieces"].steps
    assert configs["pieces"].warmup == configs["pieces"].steps // 20
    assert configs["warmup-0"].warmup == 0 and configs["lr-3e-4"].lr == 3e-4
    assert configs["pieces"].init.endswith("init.pt") and configs["pieces"].seed == 0


def test_ablation_trains_measures_writes_the_table_and_resumes(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 160)
    out = tmp_path / "ablate"
    argv = ["--positions", "256", "--games", "2", "--only", "v1,squares", "--puzzle-limit", "12"]
    command = ablate(data, out, *argv)

    rows = json.loads((out / "table.json").read_text())
    assert [r["variant"] for r in rows] == ["v1", "squares"]
    for row in rows:
        assert row["positions_seen"] == 256 and 0.0 <= row["puzzles"] <= 1.0
        assert row["val_loss"] > 0 and -1.0 <= row["kendall_tau"] <= 1.0
        assert 0.0 <= row["accuracy"] <= 1.0
        greedy = row["greedy"]
        assert greedy["wins"] + greedy["draws"] + greedy["losses"] == 2
    assert rows[0]["parameters"] < rows[1]["parameters"]  # squares adds the square embeddings
    assert "| v1 |" in (out / "table.md").read_text() and (out / "ablation.png").stat().st_size

    stamp = (out / "v1" / "result.json").stat().st_mtime_ns
    run_ablation(command)  # finished variants are not redone
    assert (out / "v1" / "result.json").stat().st_mtime_ns == stamp


def timed(data: Path, seconds_per_position: float) -> Path:
    """`data` as a timed generate run leaves it: each shard's worker_seconds in its meta."""
    for meta_path in data.glob("*/meta.json"):
        meta = json.loads(meta_path.read_text())
        meta["worker_seconds"] = meta["count"] * seconds_per_position
        meta_path.write_text(json.dumps(meta))
    return data


def test_cpu_hours_give_each_row_the_positions_its_budget_pays_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Labelling counted: positions = budget / (label + train CPU-seconds per position)."""
    monkeypatch.setattr(budget, "MIN_PROBE_SECONDS", 1.0)  # a toy run: a short probe suffices
    data = timed(make_shard(tmp_path / "data", 800), 0.02)
    out = tmp_path / "ablate"
    argv = ["--cpu-hours", "0.004", "--games", "0", "--only", "facts", "--puzzle-limit", "4"]
    command = ablate(data, out, *argv)
    row = json.loads((out / "facts" / "result.json").read_text())
    assert row["label_cost"] == pytest.approx(0.02)
    assert 0 < row["train_cost"] < 0.02  # a tiny model: cheaper to train than to label here
    seconds = 0.004 * 3600
    assert row["positions"] == int(seconds / (row["label_cost"] + row["train_cost"]))
    assert row["positions_seen"] == row["positions"] // 128 * 128
    assert row["label_cpu_seconds"] + row["train_cpu_seconds"] == pytest.approx(seconds, rel=0.01)
    assert "| facts |" in (out / "table.md").read_text()
    # a budget that pays for more positions than were labelled: refused, no second pass
    command[command.index("0.004")] = "0.04"
    command[command.index(str(out))] = str(tmp_path / "more")
    with pytest.raises(ablation.CommandError, match="label more"):
        run_ablation(command)


def test_the_training_probe_grows_until_its_extra_time_outweighs_the_fixed_costs() -> None:
    """A cheap model's first long probe outlasts the short one by less than start-up's noise:
    the long probe is lengthened fourfold until the difference is MIN_PROBE_SECONDS."""
    lengths: list[int] = []

    def run(steps: int) -> float:  # 15 CPU-seconds of start-up, 0.1 a step
        lengths.append(steps)
        return 15.0 + 0.1 * steps

    cost = budget.probe_cost(run, batch=128, min_seconds=20.0)
    assert lengths == [budget.SHORT_PROBE, 16, 64, 256]
    assert cost == pytest.approx(0.1 / 128)
    lengths.clear()
    budget.probe_cost(run, batch=128, min_seconds=20.0, max_steps=64)
    assert lengths == [budget.SHORT_PROBE, 16, 64]


def test_a_probe_that_measures_no_training_time_is_refused() -> None:
    """Noise that makes the long probe no longer than the short one once planned a 0.1M model
    6.6M positions for a budget that paid for 4.4M: now it is an error, not a plan."""
    times = iter([16.0, 15.5, 15.9, 15.2, 15.8, 15.1])
    with pytest.raises(ablation.CommandError, match="cannot be measured"):
        budget.probe_cost(lambda steps: next(times), batch=128, min_seconds=20.0)


def test_an_untimed_data_directory_cannot_be_budgeted(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 40)
    with pytest.raises(ablation.CommandError, match="worker_seconds"):
        ablation.label_seconds_per_position([str(data)])


def labelled(data: Path, depth: int, labels: str = "all") -> str:
    """`data` as `generate --depth D [--labels best]` records it in each shard's meta."""
    for meta_path in data.glob("*/meta.json"):
        meta = json.loads(meta_path.read_text())
        meta["settings"] = {"game": {"depth": depth}}
        if labels != "all":
            meta["labels"] = labels
        meta_path.write_text(json.dumps(meta))
    return str(data)


def test_each_row_learns_from_the_labels_it_needs(tmp_path: Path) -> None:
    all2 = labelled(make_shard(tmp_path / "all2", 8), 2)
    best2 = labelled(make_shard(tmp_path / "best2", 8), 2, "best")
    all4 = labelled(make_shard(tmp_path / "all4", 8), 4)
    dirs = [all2, best2, all4]
    row = ablation.row_data
    assert row(ablation.variant_named("facts"), dirs) == [all2]
    assert row(ablation.variant_named("depth-4"), dirs) == [all4]
    assert row(ablation.variant_named("sv"), dirs) == [best2]
    assert row(ablation.variant_named("bc"), [all2, all4]) == [all2]  # targets from every move
    with pytest.raises(ablation.CommandError, match="generate --depth 6"):
        row(ablation.variant_named("depth-6"), dirs)


def test_the_table_compares_every_row_on_the_shared_validation_split() -> None:
    """A depth row's fit measures itself on its own labels; the table shows the shared split."""
    base = {"what": "w", "parameters": 1e6, "steps": 1, "batch": 128, "train_seconds": 1.0}
    base |= {"accuracy": 0.25, "kendall_tau": 0.3, "puzzles": 0.2, "greedy": None, "skill0": None}
    depth = base | {"variant": "depth-6", "val_loss": 3.657, "log_loss": 3.789}
    older = base | {"variant": "facts", "val_loss": 3.695}  # written before log_loss was kept
    table = ablation.markdown([depth, older])
    assert "| 3.789 |" in table and "3.657" not in table
    assert "| 3.695 |" in table

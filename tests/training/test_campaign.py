"""`oneply train campaign`: the session's commands, the labelling CPU that generate records,
the ledger's arithmetic, and a real save after a short real run."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from oneply.engine.errors import CommandError
from oneply.engine.play.inference import Scorer

torch = pytest.importorskip("torch")

from oneply.engine.facts.features import ADOPTED_FACTS, GROUPS, check_names  # noqa: E402
from oneply.training.fit import fit  # noqa: E402
from oneply.training.fit.options import from_args  # noqa: E402
from oneply.training.lab import campaign  # noqa: E402
from oneply.training.lab.campaign_config import CampaignConfig  # noqa: E402
from tests.helpers.fact_versions import V8_FACTS  # noqa: E402
from tests.helpers.training import (  # noqa: E402
    config,
    make_shard,
    run_generate,  # noqa: E402
)


def _args(*argv: str) -> argparse.Namespace:
    """The campaign's arguments; a test's --ledger folder holds its weights too (--weights)
    unless it names them, so no test reads or writes this machine's runs/."""
    parser = argparse.ArgumentParser()
    campaign.add_arguments(parser)
    args = parser.parse_args(list(argv))
    if "--weights" not in argv:
        args.weights = args.ledger
    return args


def _config(*argv: str) -> CampaignConfig:
    """The config the campaign's command line makes of ``argv`` (as :func:`_args`): what every
    step below `campaign.run` takes."""
    return from_args(CampaignConfig, _args(*argv))


def test_save_writes_the_weights_to_runs_and_publishes_them_only_when_asked(
    tmp_path: Path,
) -> None:
    """A session's weights are a working file (runs/, not committed) unless --publish."""
    assert campaign.WEIGHTS_DIR.relative_to(campaign.REPO_ROOT).parts[0] == "runs"
    assert _args("save").ledger == str(campaign.LEDGER_DIR)
    ledger, weights = tmp_path / "ledger", tmp_path / "weights"
    options = _config("start", "--ledger", str(ledger), "--weights", str(weights))
    assert campaign.latest_weights(options) == campaign.BUNDLED
    ledger.mkdir()
    (ledger / campaign.LATEST).write_bytes(b"published")
    assert campaign.latest_weights(options) == ledger / campaign.LATEST
    weights.mkdir()
    (weights / campaign.LATEST).write_bytes(b"this machine's")
    assert campaign.latest_weights(options) == weights / campaign.LATEST


def test_start_resumes_from_the_committed_weights_else_the_bundled_model(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    options = _config("start", "--ledger", str(ledger), "--seed", "7", "--depth", "3")
    commands = campaign.start_commands(options)
    fit_command, generate = commands["fit"], commands["generate"]
    assert fit_command[fit_command.index("--init") + 1] == str(campaign.BUNDLED)
    assert "--follow" in fit_command and "--preset" not in fit_command  # the source's own
    assert "--compile" in fit_command  # the background run takes torch.compile's ~15%
    assert generate[generate.index("--depth") + 1] == "3" and "--seed" in generate
    assert generate[generate.index("--workers") + 1] == "1"  # one core labels, one trains
    assert float(fit_command[fit_command.index("--rank-weight") + 1]) == campaign.RANK_WEIGHT > 0
    assert float(fit_command[fit_command.index("--max-passes") + 1]) == campaign.MAX_PASSES > 0
    assert "--hours" not in fit_command  # a step count unless the session's length is given
    timed = campaign.start_commands(_config("start", "--ledger", str(ledger), "--hours", "2.5"))
    assert timed["fit"][timed["fit"].index("--hours") + 1] == "2.5"
    ledger.mkdir()
    (ledger / campaign.LATEST).write_bytes(b"weights")
    fit_command = campaign.start_commands(options)["fit"]
    assert fit_command[fit_command.index("--init") + 1] == str(ledger / campaign.LATEST)


def test_a_new_lineage_starts_from_init_and_reads_stock_beside_the_fresh_data(
    tmp_path: Path,
) -> None:
    ledger, fresh = tmp_path / "ledger", tmp_path / "fresh"
    ledger.mkdir()
    (ledger / campaign.LATEST).write_bytes(b"weights")
    stock = [str(tmp_path / "s5"), str(tmp_path / "s6")]
    options = _config("start", "--ledger", str(ledger), "--data", str(fresh), "--init", "v6.onnx")
    options = replace(options, stock=stock)
    fit_command = campaign.start_commands(options)["fit"]
    assert fit_command[fit_command.index("--init") + 1] == "v6.onnx"  # over the ledger's latest
    assert "--facts" not in fit_command  # the source's facts
    options = replace(options, facts=["attacks", "pins", "move_facts", "exchange"])
    fit_command = campaign.start_commands(options)["fit"]
    assert fit_command[fit_command.index("--facts") + 1 :][:4] == options.facts
    data = fit_command[fit_command.index("fit") + 1 : fit_command.index("--follow")]
    assert data == [str(fresh), *stock]
    # without generate, a fresh directory that does not exist is not handed to the trainer
    options = replace(options, no_generate=True)
    fit_command = campaign.start_commands(options)["fit"]
    assert fit_command[fit_command.index("fit") + 1 : fit_command.index("--follow")] == stock


def test_generate_records_the_labelling_cpu_of_every_shard(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    run_generate(out, 60)
    totals = campaign.label_totals(out)
    assert totals["positions"] >= 60 and totals["timed_positions"] == totals["positions"]
    assert totals["seconds"] > 0 and totals["depths"] == {1}
    metas = [json.loads(path.read_text()) for path in out.glob("*/meta.json")]
    assert {meta["worker_clock"] for meta in metas} == {"cpu"}  # not wall time x workers
    # labels made elsewhere and copied into a subfolder, where fit --follow reads them, count
    shutil.copytree(out, out / "device-stock", ignore=shutil.ignore_patterns("device-stock"))
    nested = campaign.label_totals(out)
    assert nested["positions"] == 2 * totals["positions"]
    assert nested["seconds"] == pytest.approx(2 * totals["seconds"])


def test_ledger_rows_replace_their_session_and_hours_accumulate() -> None:
    ledger = campaign.update_ledger([], {"session": "a", "train_seconds": 3600, "label_seconds": 0})
    ledger = campaign.update_ledger(ledger, {"session": "b", "train_seconds": 1800})
    ledger = campaign.update_ledger(
        ledger, {"session": "b", "train_seconds": 7200, "label_seconds": 1800}
    )
    assert [r["session"] for r in ledger] == ["a", "b"]
    points = campaign.cumulative(ledger)
    assert [p["train_h"] for p in points] == [1.0, 3.0]
    assert [p["total_h"] for p in points] == [1.0, 3.5]
    # a model trained from scratch starts its own lineage: its hours do not add to v4's
    ledger = campaign.update_ledger(
        ledger, {"session": "v6", "lineage": "v6", "train_seconds": 900}
    )
    ledger = campaign.update_ledger(ledger, {"session": "c", "lineage": "v6", "train_seconds": 900})
    assert [p["train_h"] for p in campaign.cumulative(ledger)] == [1.0, 3.0, 0.25, 0.5]


def test_save_exports_the_run_and_writes_the_ledger_and_curve(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 40)
    out = tmp_path / "run"
    fit.train(config(data, out, steps=4, eval_every=2, preset="tiny"), quiet=True)
    ledger = tmp_path / "ledger"
    argv = ["save", "--data", str(data), "--out", str(out), "--ledger", str(ledger)]
    with pytest.raises(CommandError, match="--label-seconds"):  # a v1 shard has no timing
        campaign.run(_args(*argv, "--session", "s1"))
    assert campaign.run(_args(*argv, "--session", "s1", "--label-seconds", "90")) == 0
    scorer = Scorer(ledger / campaign.LATEST, threads=1)
    assert scorer.info.features == ADOPTED_FACTS and scorer.info.trained
    rows = json.loads((ledger / campaign.LEDGER).read_text())
    assert len(rows) == 1 and rows[0]["steps"] == 4 and rows[0]["positions_seen"] == 4 * 16
    assert rows[0]["label_seconds"] == 90 and rows[0]["label_positions"] == 40
    assert rows[0]["val_loss"] is not None
    assert (ledger / campaign.PLOT).stat().st_size > 10_000
    # weights elsewhere (runs/ by default) stay out of the ledger's folder unless published
    (ledger / campaign.LATEST).unlink()
    private = ("--session", "s1", "--label-seconds", "90", "--weights", str(tmp_path / "w"))
    assert campaign.run(_args(*argv, *private)) == 0
    assert (tmp_path / "w" / campaign.LATEST).is_file()
    assert not (ledger / campaign.LATEST).exists()
    assert campaign.run(_args(*argv, *private, "--publish")) == 0
    assert (ledger / campaign.LATEST).is_file()
    # the curve is drawn again from the ledger alone
    redrawn = tmp_path / "redrawn.png"
    assert campaign.run(_args("plot", "--ledger", str(ledger), "--plot", str(redrawn))) == 0
    assert redrawn.stat().st_size > 10_000
    # the row charges the trainer's own CPU, which a resumed sitting adds to
    first = torch.load(out / "checkpoint.pt", weights_only=False)["summary"]["train_cpu_seconds"]
    assert first > 0 and rows[0]["train_seconds"] == first
    fit.train(config(data, out, steps=8, eval_every=2, preset="tiny"), quiet=True)
    resumed = torch.load(out / "checkpoint.pt", weights_only=False)["summary"]
    assert resumed["steps"] == 8 and resumed["train_cpu_seconds"] > first
    assert campaign.run(_args(*argv, "--session", "s1", "--label-seconds", "90")) == 0
    rows = json.loads((ledger / campaign.LEDGER).read_text())
    assert len(rows) == 1 and rows[0]["train_seconds"] == resumed["train_cpu_seconds"]
    overridden = ("--session", "s1", "--label-seconds", "90", "--train-seconds", "77")
    assert campaign.run(_args(*argv, *overridden)) == 0
    assert json.loads((ledger / campaign.LEDGER).read_text())[0]["train_seconds"] == 77
    assert campaign.run(_args(*argv, "--session", "s2", "--label-seconds", "10")) == 0
    new_lineage = ("--session", "s3", "--label-seconds", "10", "--lineage", "x")
    assert campaign.run(_args(*argv, *new_lineage)) == 0
    assert campaign.run(_args(*argv, "--session", "s4", "--label-seconds", "10")) == 0
    rows = json.loads((ledger / campaign.LEDGER).read_text())
    assert [(r["session"], r["lineage"]) for r in rows] == [
        ("s1", campaign.FIRST_LINEAGE),
        ("s2", campaign.FIRST_LINEAGE),
        ("s3", "x"),
        ("s4", "x"),  # a row extends the last row's lineage
    ]


def test_a_fork_runs_the_campaign_trainer_with_its_change_in_a_directory_of_its_own(
    tmp_path: Path,
) -> None:
    out = tmp_path / "runs" / "campaign"
    facts = "--facts attacks pins move_facts exchange threats checks"
    options = _config("start", "--out", str(out), "--fork", facts)
    commands = campaign.start_commands(options)
    control, fork = commands["fit"], commands["fork"]
    assert fork[fork.index("--out") + 1] == str(tmp_path / "runs" / "campaign-fork")
    assert fork[: fork.index("--out")] == control[: control.index("--out")]  # same data
    assert fork[len(control) :] == facts.split()  # appended: a later flag wins in argparse
    assert [a for i, a in enumerate(fork[: len(control)]) if a != control[i]] == [
        str(tmp_path / "runs" / "campaign-fork")
    ]
    assert "fork" not in campaign.start_commands(_config("start", "--out", str(out)))
    for bad, why in (
        ("--gap-weigth 4", "no argument --gap-weigth"),
        ("--gap-weight lots", "lots"),
        ("--facts attacks wings", "wings"),
        ("--out elsewhere", "campaign's own"),
        ("", "needs train fit arguments"),
    ):
        with pytest.raises(CommandError, match=why):
            campaign.start_commands(_config("start", "--out", str(out), "--fork", bad))


def test_a_fork_on_deeper_labels_has_its_own_generate_and_reads_only_its_labels(
    tmp_path: Path,
) -> None:
    data, out = str(tmp_path / "fresh"), str(tmp_path / "runs" / "campaign")
    argv = ["start", "--data", data, "--out", out, "--seed", "9"]
    argv += ["--depth", "2", "--fork-depth", "4"]  # labels deeper than the campaign's own
    commands = campaign.start_commands(_config(*argv))
    control, fork, deep = commands["fit"], commands["fork"], commands["fork-generate"]
    own = str(tmp_path / "fresh-fork")
    assert deep[deep.index("--out") + 1] == own and deep[deep.index("--depth") + 1] == "4"
    generate = commands["generate"]
    assert [a for i, a in enumerate(deep) if a != generate[i]] == [own, "4"]  # same seed
    assert own in fork and data not in fork and data in control
    assert len(fork) == len(control)  # nothing else changes
    both = campaign.start_commands(_config(*argv, "--fork", "--gap-weight 4"))["fork"]
    assert both[len(control) :] == ["--gap-weight", "4"] and own in both


def test_a_fork_on_labels_of_a_learner_has_its_generate_and_record_name_the_change(
    tmp_path: Path,
) -> None:
    data, out = str(tmp_path / "fresh"), str(tmp_path / "runs" / "campaign")
    model = str(campaign.BUNDLED)
    argv = ["start", "--data", data, "--out", out, "--seed", "9"]
    own_args = f"--learner {model} --learner-share 0.25"
    commands = campaign.start_commands(_config(*argv, "--fork-generate", own_args))
    generate, own = commands["generate"], commands["fork-generate"]
    assert own[: len(generate)] == [
        str(tmp_path / "fresh-fork") if a == data else a for a in generate
    ]
    assert own[len(generate) :] == own_args.split()  # the campaign's seed and depth, plus these
    assert str(tmp_path / "fresh-fork") in commands["fork"] and data not in commands["fork"]
    deeper = campaign.start_commands(_config(*argv, "--fork-generate", "--depth 4 --max-plies 80"))
    fork_generate = deeper["fork-generate"]
    assert fork_generate[fork_generate.index("--depth") + 1] == "4"  # in place: the guard reads it
    assert fork_generate.count("--depth") == 1 and fork_generate[-2:] == ["--max-plies", "80"]
    for bad, why in (
        ("--learner nowhere.onnx", "no learner model file nowhere.onnx"),
        ("--learner-shares 0.5", "no argument --learner-shares"),
        ("--seed 3", "campaign's own"),
        ("", "needs train generate arguments"),
    ):
        with pytest.raises(CommandError, match=why):
            campaign.start_commands(_config(*argv, "--fork-generate", bad))
    record = campaign.ForkRecord([], data + "-fork", None, own_args.split())
    campaign.write_fork_record(out, record)
    assert campaign.read_fork_record(out) == record
    assert record.change() == [f"labels of its own: generate {own_args} ({data}-fork)"]
    assert campaign.ForkRecord([], "d4", 4, ["--depth", "4"]).change() == ["labels at depth 4 (d4)"]


def test_start_refuses_a_run_an_earlier_session_saved_and_data_of_another_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def launched(command: list[str], log: Path) -> int:
        raise AssertionError(f"start launched {command} past its checks")

    monkeypatch.setattr(campaign, "_launch", launched)
    out, data = tmp_path / "run", tmp_path / "fresh"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(b"finished")
    (out / campaign.SAVED).write_text(json.dumps({"session": "2026-11-25", "step": 4000}))
    argv = ["start", "--out", str(out), "--data", str(data), "--seed", "2", "--depth", "2"]
    argv.append("--no-generate")
    with pytest.raises(CommandError, match=f"mv {out} {out}-2026-11-25"):
        campaign.run(_args(*argv, "--session", "2026-11-26"))
    campaign.check_unfinished(out, "2026-11-25")  # the same session resumes its own run
    (out / "checkpoint.pt").unlink()
    data.mkdir()
    game = {"seed": 1, "depth": 2, "max_plies": 400}
    (data / "manifest.json").write_text(json.dumps({"settings": {"game": game}}))
    with pytest.raises(CommandError, match="holds positions of .* move it aside"):
        campaign.run(_args(*argv[:-1], "--session", "2026-11-26", "--ledger", str(tmp_path)))
    generate = campaign.start_commands(_config(*argv, "--seed", "1"))["generate"]
    campaign.check_data(generate)  # the same seed and depth: generate resumes the directory


def test_a_launched_process_yields_cpu_by_nice_and_by_its_sessions_autogroup(
    tmp_path: Path,
) -> None:
    show = "import os, pathlib; p = pathlib.Path('/proc/self/autogroup'); "
    show += "print(os.nice(0)); print(p.read_text() if p.exists() else 'no autogroup')"
    log = tmp_path / "child.log"
    pid = campaign._launch([sys.executable, "-c", show], log, niceness=3)
    assert os.waitpid(pid, 0)[1] == 0
    niceness, autogroup = log.read_text().splitlines()[:2]
    assert int(niceness) == min(19, os.nice(0) + 3)
    assert autogroup == "no autogroup" or autogroup.endswith(" nice 3")  # its own session's


def launched_niceness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str):
    launched: dict[str, int] = {}

    def launch(command: list[str], log: Path, niceness: int = 0) -> int:
        launched[command[command.index("train") + 1] + ":" + log.name] = niceness
        return 1

    monkeypatch.setattr(campaign, "_launch", launch)
    argv = ["start", "--out", str(tmp_path / "run"), "--data", str(tmp_path / "fresh")]
    assert campaign.run(_args(*argv, *extra, "--ledger", str(tmp_path))) == 0
    return launched


def test_one_labelling_worker_goes_first_and_the_trainers_share_what_it_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = launched_niceness(tmp_path, monkeypatch, "--fork", "--lr 1e-4")
    assert launched == {
        "generate:run-generate.log": 0,
        "fit:run-fit.log": campaign.TRAIN_NICE,
        "fit:run-fork.log": campaign.TRAIN_NICE,
    }
    assert campaign.TRAIN_NICE > 0


def test_two_labelling_workers_yield_to_the_trainers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert launched_niceness(tmp_path, monkeypatch, "--fork-depth", "4") == {
        "generate:run-generate.log": campaign.GENERATE_NICE,
        "generate:run-fork-generate.log": campaign.GENERATE_NICE,
        "fit:run-fit.log": 0,
        "fit:run-fork.log": 0,
    }
    assert campaign.GENERATE_NICE > 0


def test_two_sessions_on_one_day_get_rows_of_their_own(tmp_path: Path) -> None:
    data = make_shard(tmp_path / "data", 40)
    first, second = tmp_path / "first", tmp_path / "second"
    for run in (first, second):
        fit.train(config(data, run, steps=2, eval_every=2), quiet=True)
    ledger = tmp_path / "ledger"

    def save(run: Path, *extra: str) -> list[str]:
        argv = ["save", "--data", str(data), "--out", str(run), "--ledger", str(ledger)]
        assert campaign.run(_args(*argv, "--label-seconds", "5", *extra)) == 0
        return [row["session"] for row in json.loads((ledger / campaign.LEDGER).read_text())]

    today = datetime.date.today().isoformat()
    assert save(first) == [today]
    assert save(second) == [today, today + "b"]  # not over the first session's row
    assert save(first) == [today, today + "b"]  # a run saved again keeps its row
    with pytest.raises(CommandError, match=f"row {today} belongs to another run"):
        save(second, "--session", today)
    with pytest.raises(CommandError, match=f"pass --session {today}"):
        campaign.check_unfinished(first, None)  # a saved run resumes only by its row's name


def test_save_adopts_a_fork_with_the_labelling_of_its_own_data(tmp_path: Path) -> None:
    shallow, deep = make_shard(tmp_path / "d2", 40), make_shard(tmp_path / "d4", 30, seed=1)
    out = tmp_path / "run"
    fit.train(config(shallow, out, steps=2, eval_every=2), quiet=True)
    fit.train(config(deep, campaign.fork_dir(out), steps=2, eval_every=2), quiet=True)
    campaign.write_fork_record(str(out), campaign.ForkRecord([], str(deep), 4))
    ledger = tmp_path / "ledger"
    argv = ["save", "--data", str(shallow), "--out", str(out), "--ledger", str(ledger)]
    assert campaign.run(_args(*argv, "--label-seconds", "5")) == 0
    assert json.loads((ledger / campaign.LEDGER).read_text())[-1]["label_positions"] == 40
    assert campaign.run(_args(*argv, "--label-seconds", "5", "--adopt-fork")) == 0
    row = json.loads((ledger / campaign.LEDGER).read_text())[-1]
    assert row["label_positions"] == 30 and row["fork"] == [f"labels at depth 4 ({deep})"]
    for run in (out, campaign.fork_dir(out)):  # a later session's start will not resume them
        assert json.loads((run / campaign.SAVED).read_text())["step"] == 2


def test_save_pairs_the_fork_with_the_campaign_and_can_adopt_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = make_shard(tmp_path / "data", 40)
    out = tmp_path / "run"
    fork = campaign.fork_dir(out)
    narrower = ["attacks", "pins", "move_facts", "exchange"]  # v8's groups: whatever is adopted
    wider = [*narrower, "checks"]
    fit.train(config(data, out, steps=4, eval_every=2, facts=narrower), quiet=True)
    fit.train(config(data, fork, steps=4, eval_every=2, facts=wider), quiet=True)
    campaign.write_fork_record(str(out), campaign.ForkRecord(["--facts", *wider]))
    ledger = tmp_path / "ledger"
    argv = ["save", "--data", str(data), "--out", str(out), "--ledger", str(ledger)]
    assert campaign.run(_args(*argv, "--label-seconds", "5")) == 0
    printed = capsys.readouterr().out
    assert "fork (--facts attacks" in printed
    rows = [line.split() for line in printed.splitlines() if line.strip()[:1].isdigit()]
    paired = {int(r[0]): r for r in rows if len(r) == 4}
    assert sorted(paired) == [2, 4]  # the steps both evaluated, each with its difference
    assert all(abs(float(r[2]) - float(r[1]) - float(r[3])) < 2e-4 for r in paired.values())
    assert Scorer(fork / campaign.FORK_MODEL, threads=1).info.features == check_names(
        V8_FACTS + GROUPS["checks"]
    )
    assert Scorer(ledger / campaign.LATEST, threads=1).info.features == V8_FACTS
    assert "fork" not in json.loads((ledger / campaign.LEDGER).read_text())[-1]
    assert campaign.run(_args(*argv, "--label-seconds", "5", "--adopt-fork")) == 0
    row = json.loads((ledger / campaign.LEDGER).read_text())[-1]
    assert row["fork"] == ["--facts", *wider] and row["steps"] == 4
    assert "enemy_check" in Scorer(ledger / campaign.LATEST, threads=1).info.features
    with pytest.raises(CommandError, match="no fork run"):
        campaign.run(_args(*argv[:-1], str(tmp_path / "l2"), "--adopt-fork", "--out", str(fork)))

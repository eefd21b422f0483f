"""What one `oneply train campaign` call is told (CampaignConfig): each field is also one of its
options (training/fit/options.py), and every step below the command line takes this config."""

from __future__ import annotations

from dataclasses import dataclass

from oneply.engine.facts.features import GROUPS
from oneply.engine.model.model_file import REPO_ROOT
from oneply.training.fit.options import option

LEDGER_DIR = REPO_ROOT / "models" / "campaign"
#: where `save` writes the session's weights: a working file, not a committed one
WEIGHTS_DIR = REPO_ROOT / "runs" / "campaign-latest"
#: how often a session's trainer may read its fresh positions: more passes fit them and lose on
#: held-out ones (docs/studies/2026-11-27g.md); it waits for the labeller instead
MAX_PASSES = 2.0


@dataclass
class CampaignConfig:
    """The campaign's options, in the order `--help` lists them."""

    action: str = option(positional=True, required=True, choices=("start", "save", "rate", "plot"))
    data: str = option("generate directory (fresh)", default="data/campaign")
    out: str = option("the fit run's directory", default="runs/campaign")
    ledger: str = option(
        "the committed ledger (and published weights); the curve is drawn beside it",
        default=str(LEDGER_DIR),
    )
    weights: str = option(
        "save: where the session's weights go; start: warm-start from them when there "
        "(default runs/campaign-latest, not committed)",
        default=str(WEIGHTS_DIR),
    )
    publish: bool = option(
        "save: also copy the weights into the ledger's folder, to be committed (a model "
        "that ships or a rated candidate the model card refers to)",
        default=False,
        action="store_true",
    )
    plot: str | None = option("plot: where to draw the curve", metavar="PNG")
    count: int = option("positions to label", default=3_000_000)
    depth: int = option("Stockfish depth of the labels (6: deeper labels won in games)", default=6)
    seed: int | None = option("generate seed (default: today's date)")
    steps: int = option("with --hours: the most", default=30_000)
    hours: float | None = option(
        "train for this many hours of the session, the schedule annealing then (fit "
        "--hours); save after that",
    )
    batch: int = option("positions per step", default=128)
    lr: float = option(
        "peak learning rate of the session's restart (default 2e-4: it beat 5e-4 and "
        "tied 1e-4, docs/studies/2026-11-26g.md)",
        default=2e-4,
    )
    max_passes: float = option(
        f"start: the trainer waits for the generator rather than read its positions more "
        f"than P times (default {MAX_PASSES:g}; 0: never waits)",
        default=MAX_PASSES,
        metavar="P",
    )
    no_generate: bool = option("start only the trainer", default=False, action="store_true")
    fork: str | None = option(
        "start: a second trainer on the same data whose fit command adds these arguments "
        '(e.g. "--facts attacks pins move_facts exchange threats checks"), in <out>-fork',
        metavar='"FIT ARGS"',
    )
    fork_depth: int | None = option(
        "start: the fork reads labels of its own, generated at depth D with the same seed "
        "in <data>-fork (with --fork, its arguments as well)",
        metavar="D",
    )
    fork_generate: str | None = option(
        "start: as --fork-depth, with these train generate arguments for the fork's labels "
        '(e.g. "--learner runs/campaign-latest/latest.onnx": the model plays one side of half the '
        "games)",
        metavar='"GENERATE ARGS"',
    )
    adopt_fork: bool = option(
        "save: the fork's weights and row become the campaign's (it won the pairing)",
        default=False,
        action="store_true",
    )
    init: str | None = option(
        "warm-start from this model instead of the ledger's latest (a new lineage: name "
        "it with save --lineage)",
    )
    facts: list[str] | None = option(
        "fact groups the model reads (default: the --init model's); the source's groups "
        "and more: the new groups' weights start at zero, the learnt ones carry over",
        nargs="+",
        choices=GROUPS,
        metavar="GROUP",
    )
    stock: list[str] = option(
        "labelled directories the model has not seen, read beside the fresh one (count "
        "their labelling with save --label-seconds)",
        factory=list,
        nargs="*",
        metavar="DIR",
    )
    session: str | None = option(
        "ledger row name (default: the row this run was saved as, else today's date with "
        "the first free suffix: YYYY-MM-DD, then YYYY-MM-DDb, ...); start: the row a saved run "
        "goes on as",
    )
    lineage: str | None = option(
        "the chain of warm starts the row extends (default: the last row's); name a new "
        "one after `start --init`, with its model's own cost as its first row",
    )
    label_seconds: float | None = option(
        "labelling CPU-seconds, for shards written before generate recorded them"
    )
    train_seconds: float | None = option(
        "training CPU-seconds instead of what the trainer recorded (its process-tree "
        "CPU; a run resumed from an older checkpoint has only its wall-clock step time)",
    )
    suite: list[str] | None = option(
        "rate: `oneply strength --json` runs of the row's model (--session, default the "
        "last row); their games are added to the row and the curve's rating panel",
        nargs="+",
        metavar="RUN.json",
    )
    as_baseline: bool = option(
        "rate: the row's model is the runs' baseline (e.g. the bundled model's games "
        "beside a campaign model)",
        default=False,
        action="store_true",
    )

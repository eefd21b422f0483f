"""What the trainer reads: the training and validation positions, shard by shard, and the order
of the batches over them — also while `oneply train generate` is still adding shards.

A run is a list of *segments*. A segment starts at a step with a list of shards; its batch
order is a :class:`BatchOrder` over those shards' training positions, with the segment's number
as the random stream (segment 0 is exactly the order of a run without segments). Without
``--follow`` a run has one segment. With ``--follow`` the data directories are scanned again
every ``rescan_every`` steps, and new shards start a new segment there: a fresh permutation of
all shards known at that step (new shards are appended, so the validation prefix stays put).

The checkpoint records every segment (start step, shard paths), so a resumed run rebuilds the
very data and order it had; shards written after the checkpoint are found at the next rescan.
Each shard is opened once (:class:`ShardViews`): a rescan reads only the new ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch.distributed as dist

from oneply.engine.errors import CommandError
from oneply.training.data.dataset import AnnotatedDataset, find_shards, puzzle_keys
from oneply.training.fit.batches import BatchOrder, training_indices
from oneply.training.fit.config import TrainConfig
from oneply.training.fit.device import Dist

#: seconds between looks at an empty data directory in --follow mode
POLL_SECONDS = 2.0
#: --max-passes: seconds without a new shard after which the generator is taken to have stopped
STALL_SECONDS = 900.0


@dataclass
class Segment:
    start: int  # the first step trained on this data
    shards: list[str]


class Positions:
    """Several (dataset, rows) parts as one sequence of examples; row i of part k is example
    ``ends[k-1] + i``."""

    def __init__(self, parts: list[tuple[AnnotatedDataset, np.ndarray]]):
        self.parts = parts
        self.ends = np.cumsum([len(rows) for _, rows in parts], dtype=np.int64)

    def __len__(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        part = int(np.searchsorted(self.ends, index, side="right"))
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} positions")
        dataset, rows = self.parts[part]
        start = int(self.ends[part - 1]) if part else 0
        return dataset[int(rows[index - start])]

    def part_of(self, index: int) -> int:
        """Which part (shard) example `index` comes from."""
        return int(np.searchsorted(self.ends, index, side="right"))


class ShardViews:
    """Each shard's train positions (puzzle positions removed, with move counts) and val
    positions, computed once per shard."""

    def __init__(self, val_percent: float, excluded: set[bytes]):
        self.val_percent, self.excluded = val_percent, excluded
        self._train: dict[str, tuple[AnnotatedDataset, np.ndarray, np.ndarray, int]] = {}
        self._val: dict[str, AnnotatedDataset] = {}

    def train(self, shard: str) -> tuple[AnnotatedDataset, np.ndarray, np.ndarray, int]:
        """(dataset, kept rows, their move counts, puzzle positions dropped)."""
        if shard not in self._train:
            dataset = AnnotatedDataset(shard, split="train", val_percent=self.val_percent)
            rows = training_indices(dataset, self.excluded)
            lengths = dataset.move_counts(rows)
            self._train[shard] = (dataset, rows, lengths, len(dataset) - len(rows))
        return self._train[shard]

    def val(self, shard: str) -> AnnotatedDataset:
        if shard not in self._val:
            self._val[shard] = AnnotatedDataset(shard, split="val", val_percent=self.val_percent)
        return self._val[shard]


class DataFeed:
    """The current segment's training positions, batch order and validation positions."""

    def __init__(self, config: TrainConfig, info: Dist):
        self.config, self.info = config, info
        checked = [config.puzzles] if config.puzzles and config.eval_puzzles > 0 else []
        # never train on what is checked
        excluded = puzzle_keys(sorted({*config.exclude_puzzles, *checked}))
        self.views = ShardViews(config.val_percent, excluded)
        self.segments: list[Segment] = []
        self.train = self.val = Positions([])
        self.order: BatchOrder | None = None
        self.excluded_positions = 0
        self.stalled = False  # --max-passes: the generator stopped, the limit is off

    # ------------------------------------------------------------------ building

    def scan(self) -> list[str]:
        """Shard directories under the data roots now (rank 0's view, shared with all ranks).
        A root that does not exist yet is empty in --follow mode (the generator makes it)."""
        shards = []
        for root in self.config.data:
            if not Path(root).exists():
                if self.config.follow:
                    continue
                raise CommandError(f"{root}: no such directory (give annotated shard directories)")
            shards += [str(p) for p in find_shards(root)]
        if self.info.world > 1:
            shared = [shards]
            dist.broadcast_object_list(shared, src=0)
            shards = shared[0]
        return shards

    def start(
        self,
        segments: list[dict[str, Any]] | None,
        saved_roots: Sequence[str] = (),
        quiet: bool = False,
    ) -> bool:
        """Restore the recorded segments, or begin segment 0 from a scan (in --follow mode,
        waiting until there is a batch's worth of data); True when a segment was created.

        Recorded shard paths under `saved_roots` (the data directories the run was started
        with) are moved under this run's, so data that moved (another machine, another mount)
        resumes with the same positions in the same order.
        """
        if segments:
            moves = list(zip(saved_roots, self.config.data, strict=False))
            self.segments = [
                Segment(s["start"], [_relocate(shard, moves) for shard in s["shards"]])
                for s in segments
            ]
            self._build()
            return False
        said = False
        while True:
            self.segments = [Segment(0, self.scan())]
            if not self.config.follow:
                self._build()
                return True
            if self._build(check=False):
                return True
            if not said and not quiet and self.info.main:
                print(f"waiting for shards under {', '.join(self.config.data)}", flush=True)
                said = True
            time.sleep(POLL_SECONDS)

    def _build(self, check: bool = True) -> bool:
        """Views of the last segment; False (with check=False) when it cannot fill a batch."""
        segment = self.segments[-1]
        if not segment.shards and not self.config.follow:
            raise CommandError(
                f"no shards found under {', '.join(self.config.data)} "
                "(annotate or generate some first, or use --follow to wait for them)"
            )
        views = [self.views.train(s) for s in segment.shards]
        self._check_labels(segment.shards, [v[0] for v in views])
        lengths = np.concatenate([v[2] for v in views]) if views else np.zeros(0, np.int64)
        if not check and len(lengths) < self.config.batch * self.info.world:
            return False
        self.train = Positions([(v[0], v[1]) for v in views])
        self.excluded_positions = sum(v[3] for v in views)
        c, info = self.config, self.info
        stream = len(self.segments) - 1
        self.order = BatchOrder(lengths, c.batch, c.bucket, c.seed, info.rank, info.world, stream)
        self.val = self._val_positions(segment.shards)
        return True

    def _check_labels(self, shards: list[str], datasets: list[AnnotatedDataset]) -> None:
        """av trains on every move's value: best-only shards (``generate --labels best``,
        one scored move per position) would teach it the sentinel, so they are refused."""
        if self.config.predictor != "av":
            return
        best = [s for s, d in zip(shards, datasets, strict=True) if "best" in d.labels]
        if best:
            more = f" and {len(best) - 1} more shard(s)" if len(best) > 1 else ""
            raise CommandError(
                f"--predictor av needs every move's value, but {best[0]}{more} holds best-only "
                "labels (generate --labels best): train them with --predictor sv or bc, "
                "or give all-moves data (generate --labels all)"
            )

    def _val_positions(self, shards: list[str]) -> Positions:
        """The val positions of the first shards, up to val_positions: new shards only count
        until the validation set is full, so later curves stay comparable."""
        parts, total = [], 0
        for shard in shards:
            if total >= self.config.val_positions:
                break
            dataset = self.views.val(shard)
            parts.append((dataset, np.arange(len(dataset))))
            total += len(dataset)
        return Positions(parts)

    def rescan(self, step: int, now: bool = False) -> bool:
        """--follow: at every rescan_every-th step (any step when `now`), start a new segment
        if shards appeared."""
        if not self.config.follow or (not now and step % max(1, self.config.rescan_every)):
            return False
        known = self.segments[-1].shards
        seen = set(known)
        new = [s for s in self.scan() if s not in seen]
        if not new:
            return False
        self.segments.append(Segment(step, known + new))
        self._build()
        return True

    # ------------------------------------------------------------------ throttle

    def passes(self, steps: int) -> float:
        """How many times `steps` steps of this run read the training positions known now."""
        return steps * self.config.batch * self.info.world / max(1, len(self.train))

    def wait_for_fresh(
        self, step: int, time_up: Callable[[], bool], say: Callable[[str], None]
    ) -> tuple[bool, float]:
        """--max-passes: before `step`, wait for the generator while that step would read the
        known positions more than max_passes times in all; (new segment?, seconds waited).

        Why: a session's trainer is three times faster than the depth-6 labeller beside it,
        and a trainer that loops fits its few fresh positions and loses on held-out ones
        (docs/studies/2026-11-27g.md). Waiting
        leaves the core to the labeller and the other work instead. The wait ends at the
        run's deadline (`time_up`) or when no shard has appeared for STALL_SECONDS (the
        generator has stopped: the run then reads what it has, as without the limit).
        """
        limit = self.config.max_passes
        if limit <= 0 or self.stalled or self.passes(step + 1) <= limit:
            return False, 0.0
        began = last_new = time.monotonic()
        new = False
        say(
            f"step {step}: {self.passes(step):.2f} passes over {len(self.train):,} positions, "
            "waiting for new shards"
        )
        while self.passes(step + 1) > limit and not time_up():
            if time.monotonic() - last_new > STALL_SECONDS:
                self.stalled = True
                say(
                    f"step {step}: no new shard for {STALL_SECONDS:.0f} s, "
                    "reading the known positions again"
                )
                break
            time.sleep(POLL_SECONDS)
            if self.rescan(step, now=True):
                new, last_new = True, time.monotonic()
        return new, time.monotonic() - began

    # ------------------------------------------------------------------ reading

    def batch(self, step: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The examples this rank trains on at `step`."""
        return [self.train[int(i)] for i in self.batch_indices(step)]

    def batch_indices(self, step: int) -> np.ndarray:
        """Indices into :attr:`train` of this rank's share of the batch at `step`."""
        segment = self.segments[-1]
        assert self.order is not None and step >= segment.start
        return self.order.indices(step - segment.start)

    def position(self, step: int) -> dict[str, Any]:
        """Where `step` is in the data: segment, epoch of that segment, batch of that epoch."""
        assert self.order is not None
        epoch, index = self.order.position(step - self.segments[-1].start)
        return {"segment": len(self.segments) - 1, "epoch": epoch, "batch": index}

    def recorded(self) -> list[dict[str, Any]]:
        """The segments, as the checkpoint stores them."""
        return [asdict(s) for s in self.segments]

    def describe(self, step: int) -> dict[str, Any]:
        """The metrics row logged when a segment starts."""
        return {
            "step": step,
            "split": "data",
            "segment": len(self.segments) - 1,
            "shards": len(self.segments[-1].shards),
            "positions": len(self.train),
            "val_positions": len(self.val),
        }


def _relocate(shard: str, moves: list[tuple[str, str]]) -> str:
    """`shard` with its old data root replaced by the new one (unchanged when none matches)."""
    for old, new in moves:
        old_root = Path(old)
        if Path(shard) == old_root or old_root in Path(shard).parents:
            return str(Path(new) / Path(shard).relative_to(old_root))
    return shard

"""The campaign's strength-against-CPU-hours curve: the ledger's rows on a CPU-hours axis.

Why: the campaign's question is what the next core-hours buy. Each ledger row adds its
training and labelling CPU-seconds to its lineage's total, so a row is a point at the hours
its model cost, and three measures are drawn against them: the dev-puzzle check and the
validation loss that `save` records, and the suite rating that `campaign rate` records from
`oneply strength` runs (the games, the measure a user plays; training/lab/campaign_rating.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the lineage of ledger rows written before rows named theirs: v4 and its warm starts
FIRST_LINEAGE = "v4"


def lineage(row: dict[str, Any]) -> str:
    """The chain of warm starts a ledger row belongs to."""
    return str(row.get("lineage", FIRST_LINEAGE))


def cumulative(ledger: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row, its lineage's CPU-hours so far: training, labelling and both.

    Why per lineage: a model trained from scratch (v6) owes nothing to the hours that went
    into another chain of warm starts, so its curve starts at its own cost, not at theirs."""
    hours: dict[str, tuple[float, float]] = {}
    points = []
    for row in ledger:
        train, label = hours.get(lineage(row), (0.0, 0.0))
        train += (row.get("train_seconds") or 0.0) / 3600
        label += (row.get("label_seconds") or 0.0) / 3600
        hours[lineage(row)] = (train, label)
        points.append({**row, "train_h": train, "label_h": label, "total_h": train + label})
    return points


def suite_rating(row: dict[str, Any]) -> tuple[float, float] | None:
    """The row's suite rating and its 95% half-width, where `campaign rate` recorded one."""
    suite = row.get("suite")
    if not isinstance(suite, dict) or suite.get("rating") is None:
        return None
    return float(suite["rating"]), float(suite.get("pm") or 0.0)


#: the panels: the row's value, the panel's title
PANELS = (
    ("puzzle_check", "dev-puzzle check (argmax, 200 evenly spaced)"),
    ("val_loss", "validation loss (nats)"),
    ("suite", "suite rating (anchored Elo, searchless, ± 95%)"),
)


def _value(point: dict[str, Any], key: str) -> tuple[float, float] | None:
    """A point's value on one panel and its error bar (0 where it has none)."""
    if key == "suite":
        return suite_rating(point)
    value = point.get(key)
    return None if value is None else (float(value), 0.0)


def plot(ledger: list[dict[str, Any]], path: Path) -> None:
    """Puzzle check, validation loss and suite rating against cumulative CPU-hours (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = cumulative(ledger)
    names = list(dict.fromkeys(lineage(p) for p in points))  # one pair of colours each, all panels
    fig, axes = plt.subplots(1, len(PANELS), figsize=(16, 4.4))
    for ax, (key, title) in zip(axes, PANELS, strict=True):
        for index, name in enumerate(names):
            shown = [(p, v) for p in points if lineage(p) == name and (v := _value(p, key))]
            if not shown:
                continue
            for shade, (hours, style) in enumerate((("train_h", "o-"), ("total_h", "s--"))):
                what = "training" if hours == "train_h" else "training + labelling"
                ax.errorbar(
                    [p[hours] for p, _ in shown],
                    [v for _, (v, _) in shown],
                    yerr=[e for _, (_, e) in shown] if key == "suite" else None,
                    fmt=style,
                    capsize=3,
                    color=f"C{2 * index + shade}",
                    label=f"{name}: {what} CPU-h",
                )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("cumulative CPU core-hours")
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    fig.suptitle("oneply training campaign: strength against CPU-hours")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def format_point(point: dict[str, Any]) -> str:
    """One ledger row with the campaign's hours so far, for the terminal."""

    def shown(key: str, pattern: str) -> str:
        value = point.get(key)
        return "–" if value is None else format(value, pattern)

    rating = suite_rating(point)
    return (
        f"{lineage(point):<4} {point['session']:<16} seen {shown('positions_seen', ',')}  "
        f"train {point['train_h']:.2f} h  label {point['label_h']:.2f} h  "
        f"val loss {shown('val_loss', '.3f')}  puzzle check {shown('puzzle_check', '.1%')}  "
        f"suite {'–' if rating is None else f'{rating[0]:.0f} ± {rating[1]:.0f}'}"
    )

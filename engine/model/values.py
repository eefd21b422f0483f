"""Win probabilities, centipawns, the 128 value bins and HL-Gauss targets (docs/FORMAT.md).

The one home of these facts: score → win, the bin edges and centres, which bin a win falls
in, and the HL-Gauss target distribution. Training's torch code builds its tensors from the
arrays here, so a model is trained, evaluated and played with the same bins.
"""

from __future__ import annotations

import math
import random

import chess.engine
import numpy as np

NUM_BINS = 128
LICHESS_K = 0.00368208
#: HL-Gauss standard deviation, in bin widths (the paper's choice)
HL_GAUSS_SIGMA = 0.75
#: moves whose Stockfish win is within this of the best count as "among Stockfish's best"
#: in action accuracy (1 centipawn near equality is ~9e-4 win, so this means "equal score")
BEST_TOLERANCE = 1e-4
_EPS = 1e-6


def cp_to_win(cp: float | np.ndarray) -> float | np.ndarray:
    """Stockfish centipawns (side to move) → win probability, the Lichess accuracy formula."""
    return 0.5 + 0.5 * (2.0 / (1.0 + np.exp(-LICHESS_K * np.asarray(cp, dtype=np.float64))) - 1.0)


def score_to_win(score: chess.engine.Score) -> float:
    """Win probability of a python-chess score, for the side it is from: a mate for that side
    is 1.0, being mated 0.0, centipawns through cp_to_win."""
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else 0.0
    return float(cp_to_win(score.score(mate_score=0)))


def win_to_cp(win: float) -> int:
    """Inverse of cp_to_win, with p clamped away from 0 and 1 so the result stays finite."""
    p = min(max(float(win), _EPS), 1.0 - _EPS)
    return round(math.log(p / (1.0 - p)) / LICHESS_K)


def bin_edges(num_bins: int = NUM_BINS) -> np.ndarray:
    """The num_bins - 1 inner edges of uniform bins on [0, 1]."""
    return all_bin_edges(num_bins)[1:-1]


def all_bin_edges(num_bins: int = NUM_BINS) -> np.ndarray:
    """The num_bins + 1 edges of uniform bins on [0, 1], 0 and 1 included."""
    return np.linspace(0.0, 1.0, num_bins + 1)


def bin_centres(num_bins: int = NUM_BINS) -> np.ndarray:
    return (np.arange(num_bins) + 0.5) / num_bins


def value_to_bin(win: float | np.ndarray, num_bins: int = NUM_BINS) -> np.ndarray:
    """Index of the bin that holds each win probability (searchsorted, side='left': a value
    exactly on an edge belongs to the lower bin)."""
    return np.searchsorted(bin_edges(num_bins), win, side="left")


def quantise(win: float, num_bins: int = NUM_BINS) -> float:
    """The centre of the bin that holds ``win``: what a perfect K-bin model can say about it."""
    return float(bin_centres(num_bins)[value_to_bin(win, num_bins)])


def erf(x: np.ndarray) -> np.ndarray:
    """Error function, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7); numpy has none and
    scipy is not a dependency."""
    x = np.asarray(x, dtype=np.float64)
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    result: np.ndarray = np.sign(x) * (1.0 - poly * np.exp(-x * x))
    return result


def hl_gauss_scale(num_bins: int = NUM_BINS, sigma: float = HL_GAUSS_SIGMA) -> float:
    """The erf argument's divisor: σ (in bin widths) as a win-probability distance, times √2."""
    return sigma / num_bins * math.sqrt(2.0)


def hl_gauss(
    wins: float | np.ndarray, num_bins: int = NUM_BINS, sigma: float = HL_GAUSS_SIGMA
) -> np.ndarray:
    """Histogram-loss Gaussian targets [..., K]: a Gaussian at each win probability with
    standard deviation ``sigma`` bin widths, integrated over each bin of [0, 1] and
    renormalised (mass beyond 0 and 1 is dropped). Neighbouring bins share credit, which
    smooths the classification loss over an ordered target."""
    centred = all_bin_edges(num_bins) - np.asarray(wins, dtype=np.float64)[..., None]
    mass = np.diff(erf(centred / hl_gauss_scale(num_bins, sigma)), axis=-1)
    probs: np.ndarray = mass / mass.sum(axis=-1, keepdims=True)
    return probs


def expected_win(log_probs: np.ndarray) -> np.ndarray:
    """Σ softmax(logits)_i · centre_i over the last axis, for log-probabilities or logits."""
    logits = log_probs - log_probs.max(axis=-1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=-1, keepdims=True)
    wins: np.ndarray = probs @ bin_centres(log_probs.shape[-1])
    return wins


def wdl_permille(win: float) -> tuple[int, int, int]:
    """A UCI `wdl` triple (win, draw, loss in ‰) from an expected score.

    The model predicts an expected score, not separate outcome probabilities, so we report
    it with no draw mass: w = round(1000·p), d = 0, l = 1000 - w. The score a GUI derives from
    it (w + d/2) is then exactly the model's expected win.
    """
    w = round(1000 * min(max(win, 0.0), 1.0))
    return w, 0, 1000 - w


def softmax_weights(wins: np.ndarray, temperature: float) -> np.ndarray:
    """Unnormalised softmax(wins / temperature), safe at any temperature > 0.

    The best win is subtracted before dividing: wins / 1e-320 overflows to inf, and
    inf - inf is NaN, whereas (win - best) / T only goes to -inf, whose exp is 0."""
    with np.errstate(over="ignore", divide="ignore"):
        logits = (wins - wins.max()) / temperature
    weights: np.ndarray = np.exp(logits)
    return weights


def sample_softmax(
    wins: np.ndarray, temperature: float, rng: random.Random | np.random.Generator
) -> int:
    """An index drawn with probability ∝ exp(win / temperature), from the caller's own random
    stream: the engine's seeded numpy Generator, or the data engine's per-game random.Random
    (whose games must replay draw for draw when a run resumes, so each keeps its own draw)."""
    weights = softmax_weights(wins, temperature)
    if isinstance(rng, random.Random):
        return rng.choices(range(len(wins)), weights.tolist())[0]
    return int(rng.choice(len(wins), p=weights / weights.sum()))

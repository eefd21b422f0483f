"""Win probabilities, centipawns and the 128 value bins (REFERENCE.md §3)."""

from __future__ import annotations

import math

import numpy as np

NUM_BINS = 128
LICHESS_K = 0.00368208
_EPS = 1e-6


def cp_to_win(cp: float | np.ndarray) -> float | np.ndarray:
    """Stockfish centipawns (side to move) → win probability, the Lichess accuracy formula."""
    return 0.5 + 0.5 * (2.0 / (1.0 + np.exp(-LICHESS_K * np.asarray(cp, dtype=np.float64))) - 1.0)


def win_to_cp(win: float) -> int:
    """Inverse of cp_to_win, with p clamped away from 0 and 1 so the result stays finite."""
    p = min(max(float(win), _EPS), 1.0 - _EPS)
    return round(math.log(p / (1.0 - p)) / LICHESS_K)


def bin_edges(num_bins: int = NUM_BINS) -> np.ndarray:
    """The num_bins - 1 inner edges of uniform bins on [0, 1]."""
    return np.linspace(0.0, 1.0, num_bins + 1)[1:-1]


def bin_centres(num_bins: int = NUM_BINS) -> np.ndarray:
    return (np.arange(num_bins) + 0.5) / num_bins


def value_to_bin(win: float | np.ndarray, num_bins: int = NUM_BINS) -> np.ndarray:
    """Index of the bin that holds each win probability (searchsorted, side='left')."""
    return np.searchsorted(bin_edges(num_bins), win, side="left")


def expected_win(log_probs: np.ndarray) -> np.ndarray:
    """Σ softmax(logits)_i · centre_i over the last axis, for log-probabilities or logits."""
    logits = log_probs - log_probs.max(axis=-1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs @ bin_centres(log_probs.shape[-1])


def wdl_permille(win: float) -> tuple[int, int, int]:
    """A UCI `wdl` triple (win, draw, loss in ‰) from an expected score.

    The model predicts an expected score, not separate outcome probabilities, so we report
    it with no draw mass: w = round(1000·p), d = 0, l = 1000 - w. The score a GUI derives from
    it (w + d/2) is then exactly the model's expected win.
    """
    w = round(1000 * min(max(win, 0.0), 1.0))
    return w, 0, 1000 - w

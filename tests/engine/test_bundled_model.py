"""The bundled model: the int8 file the engine plays is the fp32 reference's weights quantized.

Training warm-starts from the reference and `oneply bench` derives its variants from it, so the
two files must stay one model: a retrained reference without a new int8 file (or the reverse)
fails here.
"""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np

from oneply.engine.model.graph import quantize_int8
from oneply.engine.model.model_file import BUNDLED_MODEL, REFERENCE_MODEL
from oneply.engine.play.bench import load_positions
from oneply.engine.play.inference import Scorer


def _wins(scorer: Scorer, boards: list[chess.Board]) -> list[dict[chess.Move, float]]:
    return [{s.move: s.win for s in moves} for moves in scorer.score_many(boards)]


def test_the_bundled_file_is_the_reference_quantized(tmp_path: Path) -> None:
    bundled, reference = Scorer(BUNDLED_MODEL, threads=1), Scorer(REFERENCE_MODEL, threads=1)
    assert (bundled.info.quantization, reference.info.quantization) == ("int8", "fp32")
    assert bundled.info.config == reference.info.config
    assert bundled.info.preset == reference.info.preset
    quantize_int8(REFERENCE_MODEL, tmp_path / "int8.onnx")
    fresh = Scorer(tmp_path / "int8.onnx", threads=1)
    boards = load_positions(limit=24)
    for ours, made in zip(_wins(bundled, boards), _wins(fresh, boards), strict=True):
        assert ours.keys() == made.keys()
        assert max(abs(ours[m] - made[m]) for m in ours) <= 1e-5


def test_int8_scores_stay_close_to_the_fp32_weights() -> None:
    boards = load_positions(limit=40)
    bundled, reference = Scorer(BUNDLED_MODEL, threads=1), Scorer(REFERENCE_MODEL, threads=1)
    deltas = [
        abs(int8[m] - fp32[m])
        for int8, fp32 in zip(_wins(bundled, boards), _wins(reference, boards), strict=True)
        for m in fp32
    ]
    assert float(np.mean(deltas)) < 0.006  # measured 0.0027 (v15, 40 positions)
    assert max(deltas) < 0.04  # measured 0.015

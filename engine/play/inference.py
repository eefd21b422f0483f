"""Scores every legal move of one or many positions in one onnxruntime call.

`Scorer.score_many` is the hot path of the UCI engine and the bot: tokenize each position,
pad the legal-move ids of all positions into one [B, N] batch, run the session once and turn
each move's bin distribution into an expected win.

Code that only needs scores takes a `MoveScorer` (the protocol below), not the ONNX class:
the bot's batcher, the puzzle solver and the arena's play-outs then run just as well on a
torch model in training (training/fit/validation.py) or on Stockfish (arena/policy_eval.py).

Every predictor (engine/model/architecture.PREDICTORS, the model file's ``predictor``) gives the
same thing, a score per legal move, so the move policy and everything above it work unchanged
(:func:`score_positions`):

- ``av``: the move's expected win (the model scores every legal move; the original format).
- ``sv``: 1 − the expected win of the position after the move, for the opponent: every child
  position of every board is scored in one batched call, and the move that leaves the
  opponent worst off ranks first. A move that checkmates scores 1.0 and one that stalemates
  0.5 (positions without legal moves, which the model never saw, are not asked about).
- ``bc``: the policy's probability of the move among the legal moves (softmax of its logits).
  It is not a win probability: where a policy rule needs an expected win (repetition damping
  and draws score 0.5, the Stockfish fallback's threshold, opening sampling's
  softmax(score / temperature)), a bc model's probability stands in for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import chess
import numpy as np
import onnx
import onnxruntime as ort

from oneply.engine.facts import native
from oneply.engine.facts.encoding import (
    EncodedBatch,
    encode_batch,
    encode_states,
    python_batch,
    python_move_facts,
)
from oneply.engine.facts.features import Wanted
from oneply.engine.model.model_file import (
    ModelFileError,
    ModelInfo,
    parse_metadata,
    resolve_model_path,
)
from oneply.engine.model.values import expected_win
from oneply.engine.play.halves import SplitSession


@dataclass(frozen=True)
class MoveScore:
    """A legal move and the model's expected win for the side that plays it."""

    move: chess.Move
    win: float


class MoveScorer(Protocol):
    """Anything that scores every legal move of positions, each list best first (an empty
    list for a position without legal moves)."""

    def score(self, board: chess.Board) -> list[MoveScore]: ...

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]: ...


def providers_available() -> list[str]:
    """CUDA first when onnxruntime-gpu sees a GPU, CPU always."""
    available = ort.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]


def session_options(threads: int | None) -> ort.SessionOptions:
    """One model call at a time, on `threads` cores (default all). The pool's threads sleep
    between calls instead of spinning: a scoring call takes milliseconds, and threads that
    spin through the gaps take the core from everything else — the bot's games, a GUI's
    other engine, the search's Python — which on two busy cores doubled a position's time."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def open_session(
    path: Path, threads: int | None = None, providers: Sequence[str] | None = None
) -> tuple[ort.InferenceSession, ModelInfo]:
    """An onnxruntime session for a oneply model file, with its checked metadata."""
    if not path.is_file():
        raise ModelFileError(
            f"model file {path} not found. Pass --model FILE (UCI: setoption name ModelFile), "
            "set ONEPLY_MODEL, or train one with `oneply train all`."
        )
    try:
        session = ort.InferenceSession(
            str(path), session_options(threads), providers=list(providers or providers_available())
        )
    except Exception as error:  # onnxruntime raises several unrelated types for bad files
        raise ModelFileError(f"{path}: cannot load as an ONNX model ({error}).") from None
    info = parse_metadata(path, session.get_modelmeta().custom_metadata_map)
    return session, info


#: runs a model on an encoded batch: log-probs [B, N, K] (av), [B, K] (sv) or [B, N] (bc)
Runner = Callable[[EncodedBatch], np.ndarray]


def score_positions(
    boards: Sequence[chess.Board], predictor: str, facts: Wanted, run: Runner
) -> list[list[MoveScore]]:
    """Every legal move of each board scored by a model of this predictor (the module
    docstring says how), each list best first; one model call. `run` runs the model (an
    onnxruntime session, or a torch model in training)."""
    if not boards:
        return []
    if predictor == "sv":
        return _score_children(boards, facts, run)
    encoded = encode_batch(boards, facts=facts, move_facts=predictor == "av")
    if not any(encoded.moves):
        return [[] for _ in boards]
    out = run(encoded)
    if predictor == "bc":
        return ranked_moves(encoded.moves, np.exp(out.astype(np.float64)))
    return ranked_moves(encoded.moves, expected_win(out))


#: what a move that ends the game is worth to its player: checkmate wins, stalemate draws
MATE_WIN, STALEMATE_WIN = 1.0, 0.5


def _score_children(
    boards: Sequence[chess.Board], facts: Wanted, run: Runner
) -> list[list[MoveScore]]:
    """sv: each move's score is 1 − the child position's value (for the side to move there);
    all children of all boards in one call."""
    moves = [list(board.legal_moves) for board in boards]
    wins = [np.zeros(len(legal)) for legal in moves]
    asked: list[chess.Board] = []
    slots: list[tuple[int, int]] = []
    for row, (board, legal) in enumerate(zip(boards, moves, strict=True)):
        for col, move in enumerate(legal):
            child = board.copy(stack=False)
            child.push(move)
            if child.is_checkmate():
                wins[row][col] = MATE_WIN
            elif not any(child.generate_legal_moves()):
                wins[row][col] = STALEMATE_WIN
            else:
                asked.append(child)
                slots.append((row, col))
    if asked:
        values = expected_win(run(encode_states(asked, facts)))
        for (row, col), value in zip(slots, values, strict=True):
            wins[row][col] = 1.0 - float(value)
    width = max(1, max(len(legal) for legal in moves))
    table = np.zeros((len(boards), width))
    for row, row_wins in enumerate(wins):
        table[row, : len(row_wins)] = row_wins
    return ranked_moves(moves, table)


class Scorer:
    """A loaded ONNX model that scores legal moves (a MoveScorer).

    >>> scorer = Scorer()                           # bundled model, all cores
    >>> best = scorer.score(chess.Board())[0]       # moves come sorted, best first

    On the Python path of the facts (no compiled core, engine/facts/native.py) and with two cores or
    more (`threads`, default all), a model that reads move facts runs as two halves
    (engine/play/halves.py): the network's state half on one core while the move facts are computed
    on the other. `overlap` forces it on or off (``oneply bench`` compares them); both give the
    same scores. With the compiled core the facts take a few hundredths of a millisecond and
    there is nothing to hide behind the state half: the one graph runs.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        providers: Sequence[str] | None = None,
        overlap: bool | None = None,
    ):
        self.path = resolve_model_path(model)
        self.session, self.info = open_session(self.path, threads, providers)
        self._input_names = {i.name for i in self.session.get_inputs()}
        cores = threads or os.cpu_count() or 1
        self._halves: SplitSession | None = None
        if overlap is None:
            overlap = not native.available()
        if overlap and cores >= 2 and self.predictor == "av" and "move_facts" in self._input_names:
            self._halves = self._split(cores, self.session.get_providers())
        self.score(chess.Board())  # warm-up: the first run allocates; keep it off the clock

    def _split(self, cores: int, providers: Sequence[str]) -> SplitSession | None:
        """The model as two halves, or None for a graph that engine/play/halves.py cannot cut (a
        file that engine/model/graph.py did not build): it then runs whole, as before."""
        try:
            return SplitSession(onnx.load(str(self.path)), cores, providers, session_options)
        except Exception:  # SplitError; onnxruntime raises several unrelated types
            return None

    @property
    def overlapped(self) -> bool:
        """Whether the state half runs beside the move facts (class docstring)."""
        return self._halves is not None

    @property
    def provider(self) -> str:
        providers: list[str] = self.session.get_providers()  # onnxruntime is untyped
        return providers[0]

    @property
    def reads_facts(self) -> bool:
        """Whether the model reads the engine/facts/features.py facts (format version 4)."""
        return bool(self.info.features)

    @property
    def predictor(self) -> str:
        """What the model predicts: ``av``, ``sv`` or ``bc`` (module docstring)."""
        return self.info.predictor

    def log_probs(
        self,
        states: np.ndarray,
        move_ids: np.ndarray,
        square_facts: np.ndarray | None = None,
        move_facts: np.ndarray | None = None,
    ) -> np.ndarray:
        """Raw model output [B, N, K] for token batches (one session run); a model that reads
        facts needs them (encode_batch(..., facts=True)). sv models give [B, K] (they take no
        moves: move_ids is not fed), bc models [B, N] (docs/FORMAT.md §4)."""
        feeds = {"state": states}
        if "moves" in self._input_names:
            feeds["moves"] = move_ids
        for name, array in (("square_facts", square_facts), ("move_facts", move_facts)):
            if name in self._input_names:
                if array is None:
                    raise ValueError(f"{self.path.name} reads {name}: encode with facts=True")
                feeds[name] = array
        log_probs: np.ndarray = self.session.run(["log_probs"], feeds)[0]  # untyped
        return log_probs

    def score(self, board: chess.Board) -> list[MoveScore]:
        """Every legal move of one position, best first."""
        return self.score_many([board])[0]

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        """Every legal move of several positions (one session run), each list best first.

        A position without legal moves gets an empty list.
        """
        if self._halves is not None and boards:  # no boards: score_positions answers []
            return self._score_overlapped(self._halves, boards)
        return score_positions(
            boards, self.predictor, self.info.features, lambda e: self.log_probs(*e.arrays())
        )

    def _score_overlapped(
        self, halves: SplitSession, boards: Sequence[chess.Board]
    ) -> list[list[MoveScore]]:
        """score_many for a model run as two halves: what `encode_batch` gives, in the order
        the halves need it (the state inputs first)."""
        facts = self.info.features
        if native.available():  # nothing slow to overlap: the halves read what the core gives
            encoded = encode_batch(boards, facts)
            moves, ids = encoded.moves, encoded.ids
            assert encoded.square_facts is not None and encoded.move_facts is not None
            state_feeds = {"state": encoded.states, "square_facts": encoded.square_facts}
            computed = {"moves": ids, "move_facts": encoded.move_facts}
            if not any(moves):
                return [[] for _ in boards]
            return ranked_moves(moves, expected_win(halves.run(state_feeds, lambda: computed)))
        states_only = python_batch(boards, facts, move_facts=False)
        moves, ids = states_only.moves, states_only.ids
        assert states_only.square_facts is not None
        if not any(moves):
            return [[] for _ in boards]
        state_feeds = {"state": states_only.states, "square_facts": states_only.square_facts}

        def move_feeds() -> dict[str, np.ndarray]:
            per_move = python_move_facts(boards, moves, ids.shape[1], facts)
            return {"moves": ids, "move_facts": per_move}

        return ranked_moves(moves, expected_win(halves.run(state_feeds, move_feeds)))


def ranked_moves(moves: list[list[chess.Move]], wins: np.ndarray) -> list[list[MoveScore]]:
    """Each position's legal moves with their expected wins [B, N] (padding ignored), best
    first: the one ranking rule, shared by every scorer (onnxruntime here, torch in training)."""
    return [
        sorted(
            (MoveScore(move, float(w)) for move, w in zip(legal, row, strict=False)),
            key=lambda s: -s.win,
        )
        for legal, row in zip(moves, wins, strict=True)
    ]

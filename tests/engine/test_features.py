"""The facts a player sees (engine/facts/features.py): checked against python-chess on hand-picked
positions and through the colour flip; the warm-start upgrade that adds them; the ranking loss
on a hand-computed example."""

from __future__ import annotations

import dataclasses
import math

import chess
import numpy as np
import pytest

from oneply.engine.facts.features import (
    ADOPTED_FACTS,
    ALL_FACTS,
    GROUPS,
    MOVE_NAMES,
    SQUARE_NAMES,
    FeatureError,
    check_names,
    encode_facts,
    move_facts,
    square_facts,
)
from oneply.engine.model.mirror import mirror_square
from oneply.engine.play.inference import Scorer
from tests.conftest import POSITION_218
from tests.helpers.fact_versions import V5_FACTS, V8_FACTS, V9_FACTS, V14_FACTS
from tests.helpers.model_helpers import file_log_probs, randomise_fact_tables, torch_log_probs

SQ = {name: i for i, name in enumerate(SQUARE_NAMES)}
MV = {name: i for i, name in enumerate(MOVE_NAMES)}
#: pins, x-rays, en passant, promotions with capture and check, castling, both sides to move
POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
    "4r1k1/8/8/8/8/8/4N3/4K3 w - - 0 1",  # the knight on e2 is pinned
    "r3k2r/1P6/8/3pP3/8/8/R7/R3K2R w KQkq d6 0 1",  # en passant, promotion, doubled rooks
    "r3k2r/1P6/8/3pP3/8/8/R7/R3K2R b KQkq - 0 1",
    "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1",
    "rnb1kbnr/pppp1ppp/8/4p3/5PPq/8/PPPPP2P/RNBQKBNR w KQkq - 1 3",  # in check
]


def facts_of(board: chess.Board, uci: str) -> np.ndarray:
    return move_facts(board, [chess.Move.from_uci(uci)])[0]


@pytest.mark.parametrize("fen", POSITIONS)
def test_square_facts_count_python_chess_attackers_and_pins(fen: str) -> None:
    board = chess.Board(fen)
    facts = square_facts(board)
    for square in chess.SQUARES:
        own = len(board.attackers(board.turn, square))
        enemy = len(board.attackers(not board.turn, square))
        assert facts[square, SQ["own_attackers"]] == min(3, own), chess.square_name(square)
        assert facts[square, SQ["enemy_attackers"]] == min(3, enemy), chess.square_name(square)
        piece = board.piece_at(square)
        pinned = piece is not None and board.is_pinned(piece.color, square)
        expected = 0 if not pinned else (1 if piece.color == board.turn else 2)
        assert facts[square, SQ["pinned"]] == expected, chess.square_name(square)


def test_hand_picked_pins_captures_and_x_rays() -> None:
    pinned = chess.Board("4r1k1/8/8/8/8/8/4N3/4K3 w - - 0 1")
    assert square_facts(pinned)[chess.E2, SQ["pinned"]] == 1  # own knight, pinned to e1
    assert square_facts(pinned)[chess.E8, SQ["enemy_attackers"]] == 0
    flipped = pinned.copy()
    flipped.turn = chess.BLACK
    assert square_facts(flipped)[chess.E2, SQ["pinned"]] == 2  # the same knight, now enemy

    board = chess.Board("r3k2r/1P6/8/3pP3/8/8/R7/R3K2R w KQkq d6 0 1")
    en_passant = facts_of(board, "e5d6")
    assert en_passant[MV["captured"]] == chess.PAWN  # d6 is empty: the pawn taken is on d5
    promotion = facts_of(board, "b7a8q")
    assert promotion[MV["captured"]] == chess.ROOK
    assert promotion[MV["check"]] == 1  # the new queen sees e8 along b8-c8-d8
    assert facts_of(board, "b7b8n")[MV["check"]] == 0  # a knight on b8 does not
    assert facts_of(board, "b7b8q")[MV["dest_attackers"]] == 1  # the rook on a8
    # x-ray: a2a6 leaves a1's rook behind it on the file, defending a6 through the empty a2
    x_ray = facts_of(board, "a2a6")
    assert x_ray[MV["dest_defenders"]] == 1 and x_ray[MV["dest_attackers"]] == 1
    # the moved piece never defends itself: a lone rook move has no defender
    assert (
        facts_of(chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1"), "a1a5")[MV["dest_defenders"]] == 0
    )
    castle = facts_of(board, "e1g1")
    assert castle[MV["captured"]] == 0 and castle[MV["check"]] == 0


@pytest.mark.parametrize("fen", POSITIONS)
def test_facts_turn_over_with_the_board(fen: str) -> None:
    """Facts are stated from the side to move: the colour-flipped twin has the same facts on
    the mirrored squares, and each move the same facts as its mirrored move."""
    board = chess.Board(fen)
    twin = board.mirror()
    squares, twin_squares = square_facts(board), square_facts(twin)
    for square in chess.SQUARES:
        assert np.array_equal(squares[square], twin_squares[mirror_square(square)])
    moves = list(board.legal_moves)
    mirrored = [
        chess.Move(mirror_square(m.from_square), mirror_square(m.to_square), m.promotion)
        for m in moves
    ]
    assert np.array_equal(move_facts(board, moves), move_facts(twin, mirrored))


def test_facts_leave_the_board_unchanged_and_pad_with_zero() -> None:
    board = chess.Board(POSITIONS[3])
    before = board.fen()
    wide = chess.Board(POSITION_218)
    boards = [board, wide]
    moves = [list(b.legal_moves) for b in boards]
    squares, per_move = encode_facts(boards, moves, 218)
    assert board.fen() == before and len(board.move_stack) == 0
    assert squares.shape == (2, 64, len(SQUARE_NAMES))
    assert per_move.shape == (2, 218, len(MOVE_NAMES))
    assert not per_move[0, len(moves[0]) :].any()


def test_names_are_checked_and_kept_in_declaration_order() -> None:
    assert check_names(["check", "pinned"]) == ("pinned", "check")
    assert check_names(list(reversed(ALL_FACTS))) == ALL_FACTS
    with pytest.raises(FeatureError, match="unknown input features"):
        check_names(["hanging_queen"])


torch = pytest.importorskip("torch")

from oneply.engine.errors import CommandError  # noqa: E402
from oneply.training.fit.batches import Batch  # noqa: E402
from oneply.training.fit.config import TrainConfig  # noqa: E402
from oneply.training.fit.targets import best_gaps, objective, ranking_loss_sum  # noqa: E402
from oneply.training.fit.warm_start import init_model_config, load_init, load_weights  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402


def scores_as_file(model, path):
    """Assert a warm-started model scores POSITIONS exactly as its source file does; the
    boards, the real-move mask and the file's log-probs, for what the test changes next."""
    boards = [chess.Board(fen) for fen in POSITIONS]
    actual, ids = torch_log_probs(model, boards)
    expected = file_log_probs(Scorer(path, threads=1), boards)
    mask = ids >= 0
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-5, rtol=1e-5)
    return boards, mask, expected


def test_a_model_without_facts_warm_starts_a_preset_with_them_exactly(tmp_path) -> None:
    """v4 → v5: the fact tables start at zero, so before any step the upgraded model scores
    every position as its source does; then the facts change the output once learnt."""
    torch.manual_seed(4)
    plain = dataclasses.replace(PRESETS["tiny"], features=())
    path = tmp_path / "plain.onnx"
    export_model(ActionValueModel(plain).eval(), path, preset="tiny")
    source = load_init(path)
    config, preset = init_model_config(source, "tiny")
    assert config == PRESETS["tiny"] and config.features == ADOPTED_FACTS
    model = ActionValueModel(config).eval()
    load_weights(model, source)
    boards, mask, expected = scores_as_file(model, path)
    with torch.no_grad():
        model.move_fact_embed.weight.normal_(0, 0.5)
    changed, _ = torch_log_probs(model, boards)
    assert not np.allclose(changed[mask], expected[mask], atol=1e-3)


def test_a_warm_start_that_adds_the_exchange_facts_keeps_the_learnt_rows(tmp_path) -> None:
    """`fit --init v7 --facts attacks pins move_facts exchange` (v7 reads the v5 facts): the
    source's fact rows keep their values, the exchange rows start at zero, so the grown model
    scores every position as its source does until training fills them."""
    torch.manual_seed(6)
    source_model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=V5_FACTS))
    randomise_fact_tables(source_model)
    path = tmp_path / "adopted.onnx"
    export_model(source_model.eval(), path, preset="tiny")
    wider = V5_FACTS + GROUPS["exchange"]
    source = load_init(path)
    config, _ = init_model_config(source, "", check_names(wider))
    assert config.features == check_names(wider)
    model = ActionValueModel(config).eval()
    load_weights(model, source)
    boards, mask, expected = scores_as_file(model, path)
    en_prise = model.square_offsets[SQUARE_NAMES.index("en_prise")]
    assert not model.square_fact_embed.weight[en_prise:].any()
    with torch.no_grad():
        model.move_fact_embed.weight[-7:].normal_(0, 0.5)  # the exchange buckets
    changed, _ = torch_log_probs(model, boards)
    assert not np.allclose(changed[mask], expected[mask], atol=1e-3)
    with pytest.raises(CommandError, match="superset"):  # dropping a fact loses weights
        init_model_config(source, "", check_names(["pinned"]))


def test_a_warm_start_that_adds_the_threats_keeps_v8_and_its_file_reads_them(tmp_path) -> None:
    """The campaign's path to the `threats` group (v8 reads the adopted facts): the grown model
    scores as its source until its threat rows learn; then its own file, fed the new channel
    by the engine, scores as torch does."""
    torch.manual_seed(7)
    source_model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=V8_FACTS))
    randomise_fact_tables(source_model)
    path, grown = tmp_path / "v8.onnx", tmp_path / "threats.onnx"
    export_model(source_model.eval(), path, preset="tiny")
    config, _ = init_model_config(load_init(path), "", V8_FACTS + GROUPS["threats"])
    assert config.features == V9_FACTS  # v9's groups are v8's plus the threats
    model = ActionValueModel(config).eval()
    load_weights(model, load_init(path))
    _, mask, expected = scores_as_file(model, path)
    with torch.no_grad():
        model.move_fact_embed.weight[-6:].normal_(0, 0.5)  # the threat buckets
    export_model(model, grown, preset="tiny")
    _, _, learnt = scores_as_file(model, grown)
    assert not np.allclose(learnt[mask], expected[mask], atol=1e-3)


@pytest.mark.parametrize(
    ("source", "added"),
    [(("mate_threats",), ("mobility",)), (("mate_threats", "mobility"), ("kings", "passers"))],
    ids=["mobility", "kings-passers"],
)
def test_a_warm_start_that_adds_square_channels_keeps_its_source_and_its_file_reads_them(
    tmp_path, source: tuple[str, ...], added: tuple[str, ...]
) -> None:
    """The campaign's path to a new square group (`mobility` after the fifteen facts of
    2026-11-28h, `kings` and `passers` after the sixteen of 2026-11-29b): the grown model
    scores as its source until the new rows learn; then its own file, fed the new channels by
    the engine, scores as torch does."""
    torch.manual_seed(8)
    latest = V14_FACTS + tuple(n for g in source for n in GROUPS[g])
    source_model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=latest))
    randomise_fact_tables(source_model)
    path, grown = tmp_path / "latest.onnx", tmp_path / "grown.onnx"
    export_model(source_model.eval(), path, preset="tiny")
    wanted = latest + tuple(n for g in added for n in GROUPS[g])
    config, _ = init_model_config(load_init(path), "", check_names(wanted))
    model = ActionValueModel(config).eval()
    load_weights(model, load_init(path))
    _, mask, expected = scores_as_file(model, path)
    first = model.square_offsets[SQUARE_NAMES.index(GROUPS[added[0]][0])]
    assert not model.square_fact_embed.weight[first:].any()
    with torch.no_grad():
        model.square_fact_embed.weight[first:].normal_(0, 0.5)  # the new channels' values
    export_model(model, grown, preset="tiny")
    _, _, learnt = scores_as_file(model, grown)
    assert not np.allclose(learnt[mask], expected[mask], atol=1e-3)


def test_format_4_file_declares_the_fact_inputs_and_old_files_do_not(tmp_path) -> None:
    torch.manual_seed(5)
    facts, plain = tmp_path / "facts.onnx", tmp_path / "plain.onnx"
    export_model(ActionValueModel(PRESETS["tiny"]), facts, preset="tiny")
    export_model(
        ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=())), plain, preset="tiny"
    )
    with_facts, without = Scorer(facts, threads=1), Scorer(plain, threads=1)
    names = {i.name for i in with_facts.session.get_inputs()}
    assert names == {"state", "moves", "square_facts", "move_facts"}
    assert {i.name for i in without.session.get_inputs()} == {"state", "moves"}
    assert with_facts.info.features == ADOPTED_FACTS and without.info.features == ()
    import onnx

    version = {
        p: {m.key: m.value for m in onnx.load(str(p)).metadata_props}["oneply.format_version"]
        for p in (facts, plain)
    }
    assert version == {facts: "4", plain: "3"}
    board = chess.Board(POSITIONS[1])
    assert {s.move for s in with_facts.score(board)} == set(board.legal_moves)


def _batch(wins: list[list[float]]) -> Batch:
    width = max(len(w) for w in wins)
    values = torch.zeros(len(wins), width)
    mask = torch.zeros(len(wins), width, dtype=torch.bool)
    for row, w in enumerate(wins):
        values[row, : len(w)] = torch.tensor(w)
        mask[row, : len(w)] = True
    moves = torch.where(mask, 0, -1)
    return Batch(torch.zeros(len(wins), 77, dtype=torch.long), moves, values, mask)


def _log_probs_for(expected: list[list[float]]) -> torch.Tensor:
    """Log-probs [B, N, 128] whose expected wins are exactly `expected` (two-bin mixtures of
    the first and last bin centres)."""
    low, high = 0.5 / 128, 127.5 / 128
    out = torch.full((len(expected), max(map(len, expected)), 128), float("-inf"))
    for row, values in enumerate(expected):
        for col, e in enumerate(values):
            share = (e - low) / (high - low)
            out[row, col, 0], out[row, col, -1] = math.log(1 - share), math.log(share)
    return out


def test_ranking_loss_on_a_hand_computed_example() -> None:
    """Two moves: Stockfish 0.6 / 0.4, model 0.5 / 0.5, T = 0.1. The target distribution is
    softmax(6, 4) = (0.8808, 0.1192), the model's (0.5, 0.5): the loss is ln 2. A padded
    third slot changes nothing; a second position with the model's order right costs less."""
    batch = _batch([[0.6, 0.4]])
    loss = ranking_loss_sum(_log_probs_for([[0.5, 0.5]]), batch.wins, batch.mask, 0.1)
    assert float(loss) == pytest.approx(math.log(2), abs=1e-4)
    padded = _batch([[0.6, 0.4, 0.0]])
    padded.mask[0, 2] = False
    same = ranking_loss_sum(_log_probs_for([[0.5, 0.5, 0.9]]), padded.wins, padded.mask, 0.1)
    assert float(same) == pytest.approx(math.log(2), abs=1e-4)
    p = 1 / (1 + math.exp(-2))  # softmax(6, 4)[0]
    right = ranking_loss_sum(_log_probs_for([[0.6, 0.4]]), batch.wins, batch.mask, 0.1)
    assert float(right) == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)), abs=1e-4)
    assert float(right) < float(loss)


def test_objective_adds_ranking_and_gap_weights_but_reports_plain_cross_entropy() -> None:
    batch = _batch([[0.9, 0.2], [0.5, 0.5]])
    assert torch.allclose(best_gaps(batch.wins, batch.mask), torch.tensor([0.7, 0.0]))
    log_probs = _log_probs_for([[0.5, 0.5], [0.5, 0.5]]).clamp(min=-30)
    base = TrainConfig(data=[], out="")
    plain_total, plain = objective(log_probs, batch, base, values=4, positions=2)
    assert float(plain_total) == pytest.approx(float(plain) / 4)
    gap = dataclasses.replace(base, gap_weight=1.0)
    gap_total, gap_plain = objective(log_probs, batch, gap, values=4, positions=2)
    assert float(gap_plain) == float(plain) and float(gap_total) > float(plain_total)
    ranked = dataclasses.replace(base, rank_weight=2.0, rank_temperature=0.1)
    rank_total, _ = objective(log_probs, batch, ranked, values=4, positions=2)
    rank = ranking_loss_sum(log_probs, batch.wins, batch.mask, 0.1)
    assert float(rank_total) == pytest.approx(float(plain_total) + 2.0 * float(rank) / 2)

"""Where the opponent could check or mate (engine/facts/checks.py, facts ``enemy_check`` and
``reply_check``): held to a brute force over every reply on hand-picked and random positions,
through the colour flip, and on its way into a model — the warm start that adds it and the
file that reads it."""

from __future__ import annotations

import dataclasses

import chess
import numpy as np
import pytest

from oneply.engine.facts.checks import (
    CHECK,
    MATE,
    NO_CHECK,
    checking_moves,
    enemy_checks,
    gives_mate,
)
from oneply.engine.facts.features import (
    GROUPS,
    MOVE_NAMES,
    SQUARE_NAMES,
    check_names,
    encode_facts,
    square_facts,
)
from oneply.engine.model.mirror import mirror_square
from tests.helpers.boards import random_positions
from tests.helpers.fact_versions import V9_FACTS, V13_FACTS, V14_FACTS
from tests.helpers.move_facts import (
    assert_brute_force_agrees,
    assert_spared,
    assert_turns_over_with_the_board,
    values_by_san,
)

CHANNEL = SQUARE_NAMES.index("enemy_check")
#: black to move after 1.e4 e5 2.Bc4 Nc6 3.Qh5: Qxf7 mates, Qxe5 and Bxf7 check
SCHOLAR = "r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 3 3"
HAND_PICKED = {
    "scholar's mate threat": SCHOLAR,
    "back rank": "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1",
    "discovered check": "4k3/8/8/8/4N3/8/8/4R2K b - - 0 1",
    "pinned knight": "4r3/8/8/3k4/8/8/4N3/4K3 b - - 0 1",
    "free knight": "8/8/8/3k4/8/8/4N3/4K3 b - - 0 1",
    "promotion mates": "7k/P5pp/8/8/8/8/8/K7 b - - 0 1",
    "in check": "rnb1kbnr/pppp1ppp/8/4p3/5PPq/8/PPPPP2P/RNBQKBNR w KQkq - 1 3",
    "castling checks": "5k2/8/8/8/8/8/8/4K2R b K - 0 1",
}


def brute_checks(board: chess.Board) -> np.ndarray:
    """Every legal reply of the opponent after a passed turn, each one played out."""
    out = np.zeros(64, dtype=np.uint8)
    if board.is_check():
        return out
    board.push(chess.Move.null())
    try:
        for reply in list(board.legal_moves):
            board.push(reply)
            value = MATE if board.is_checkmate() else CHECK if board.is_check() else NO_CHECK
            board.pop()
            out[reply.to_square] = max(out[reply.to_square], value)
    finally:
        board.pop()
    return out


def squares_of(values: np.ndarray) -> dict[str, int]:
    return {chess.square_name(s): int(values[s]) for s in np.flatnonzero(values)}


@pytest.mark.parametrize("name", HAND_PICKED)
def test_hand_picked_positions_match_the_brute_force(name: str) -> None:
    board = chess.Board(HAND_PICKED[name])
    assert np.array_equal(enemy_checks(board), brute_checks(board)), name


def test_random_positions_match_the_brute_force() -> None:
    boards = random_positions(300, seed=18)
    found = np.zeros(3, dtype=int)
    for board in boards:
        before = board.fen()
        values = enemy_checks(board)
        assert np.array_equal(values, brute_checks(board)), before
        assert board.fen() == before and not board.move_stack
        found += np.bincount(values, minlength=3)
    assert found[CHECK] > 50 and found[MATE] > 0  # the sample exercises both values


def test_what_a_player_sees() -> None:
    scholar = enemy_checks(chess.Board(SCHOLAR))
    assert scholar[chess.F7] == MATE and scholar[chess.E5] == CHECK
    assert squares_of(enemy_checks(chess.Board(HAND_PICKED["back rank"]))) == {"a8": MATE}
    assert squares_of(enemy_checks(chess.Board(HAND_PICKED["promotion mates"]))) == {"a8": MATE}
    knight_moves = chess.SquareSet(chess.BB_KNIGHT_ATTACKS[chess.E4])
    assert squares_of(enemy_checks(chess.Board(HAND_PICKED["discovered check"]))) == {
        chess.square_name(s): CHECK for s in knight_moves
    }
    assert squares_of(enemy_checks(chess.Board(HAND_PICKED["free knight"]))) == {
        "c3": CHECK,
        "f4": CHECK,
    }
    assert not enemy_checks(chess.Board(HAND_PICKED["pinned knight"])).any()  # pinned to e1
    assert not enemy_checks(chess.Board(HAND_PICKED["in check"])).any()
    assert squares_of(enemy_checks(chess.Board(HAND_PICKED["castling checks"]))) == {
        "f1": CHECK,  # Rf1+
        "g1": CHECK,  # O-O puts the rook on f1 as well
        "h8": CHECK,
    }


@pytest.mark.parametrize("name", HAND_PICKED)
def test_the_fact_turns_over_with_the_board(name: str) -> None:
    board = chess.Board(HAND_PICKED[name])
    twin = board.mirror()
    ours, theirs = square_facts(board)[:, CHANNEL], square_facts(twin)[:, CHANNEL]
    assert all(ours[s] == theirs[mirror_square(s)] for s in chess.SQUARES)


def test_a_model_without_the_checks_is_spared_them() -> None:
    board = chess.Board(SCHOLAR)
    moves = [list(board.legal_moves)]
    full, _ = encode_facts([board], moves, len(moves[0]))
    adopted, _ = encode_facts([board], moves, len(moves[0]), V9_FACTS)
    assert full[0, chess.F7, CHANNEL] == MATE and not adopted[..., CHANNEL].any()
    read = [i for i, name in enumerate(SQUARE_NAMES) if name in V9_FACTS]
    assert np.array_equal(full[..., read], adopted[..., read])


REPLY = MOVE_NAMES.index("reply_check")


def brute_reply(board: chess.Board, move: chess.Move) -> int:
    """Every legal reply of the opponent after `move`, each one played out."""
    best = NO_CHECK
    board.push(move)
    try:
        for reply in list(board.legal_moves):
            board.push(reply)
            value = MATE if board.is_checkmate() else CHECK if board.is_check() else NO_CHECK
            board.pop()
            best = max(best, value)
    finally:
        board.pop()
    return best


#: checks only the generator's special paths find: en passant that uncovers a rook, castling
#: whose rook checks, a promotion that checks, a king that steps off a bishop's line
SPECIAL_CHECKS = {
    "en passant uncovers": "8/8/8/R2Pp2k/8/8/8/4K3 w - e6 0 1",
    "en passant discovers on the king": "8/8/8/1k1pP2R/8/8/8/4K3 w - d6 0 1",
    "castling rook checks": "5k2/8/8/8/8/8/8/4K2R w K - 0 1",
    "promotion checks": "1k6/4P3/8/8/8/8/8/4K3 w - - 0 1",
    "king uncovers": "7k/8/8/8/8/2K5/8/B7 w - - 0 1",
    "pawns check": "8/8/8/3k4/2n5/1P6/4P3/4K3 w - - 0 1",  # a capture, a double push
    "black pawns check": "4k3/4p3/1p6/2N5/3K4/8/8/8 b - - 0 1",  # the same, mirrored
    "a pawn push checks": "8/8/8/3k4/8/4P3/8/4K3 w - - 0 1",
}


def test_checking_moves_are_every_legal_check() -> None:
    """The generator yields each legal checking move once, and no other move."""
    boards = random_positions(80, seed=1128) + [
        chess.Board(fen) for fen in (*HAND_PICKED.values(), *SPECIAL_CHECKS.values())
    ]
    for board in boards:
        found = list(checking_moves(board))
        wanted = {move for move in board.legal_moves if board.gives_check(move)}
        assert len(found) == len(set(found)) and set(found) == wanted, board.fen()
    special = {name: chess.Board(fen) for name, fen in SPECIAL_CHECKS.items()}
    sans = {name: {b.san(m) for m in checking_moves(b)} for name, b in special.items()}
    assert sans["en passant uncovers"] == {"dxe6+"}  # both pawns leave the rook's rank
    assert sans["en passant discovers on the king"] == {"exd6+"}
    assert "O-O+" in sans["castling rook checks"]
    assert sans["promotion checks"] == {"e8=Q+", "e8=R+"}
    assert sans["king uncovers"] == {"Kc4+", "Kb4+", "Kd3+", "Kb3+", "Kd2+", "Kc2+"}
    assert sans["pawns check"] == {"bxc4+", "e4+"}
    assert sans["black pawns check"] == {"bxc5+", "e5+"}
    assert sans["a pawn push checks"] == {"e4+"}


def replies_of(board: chess.Board) -> dict[str, int]:
    return values_by_san(board, REPLY)


def test_reply_check_matches_the_brute_force() -> None:
    boards = random_positions(60, seed=28) + [chess.Board(f) for f in HAND_PICKED.values()]
    assert_brute_force_agrees(boards, REPLY, brute_reply)


def test_reply_check_is_what_a_move_lets_the_opponent_do() -> None:
    back_rank = replies_of(chess.Board(HAND_PICKED["back rank"]))  # white's Ra1 eyes a8
    assert back_rank["Kh8"] == MATE  # Ra8#
    assert back_rank["h6"] == back_rank["Kf8"] == CHECK  # Ra8+ with a square to run to
    assert min(back_rank.values()) == CHECK  # nothing black does stops Ra8+
    scholar = replies_of(chess.Board(SCHOLAR))  # Qxf7# unless black guards f7 or the queen
    assert scholar["a6"] == scholar["Nf6"] == MATE  # Nf6 hits the queen, f7 still falls
    assert scholar["Nh6"] == scholar["Qe7"] == CHECK  # f7 guarded: Qxf7+ is only a check
    assert scholar["g6"] == CHECK  # the queen must move, and Qxf7+ is still there
    lone_king = replies_of(chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1"))
    assert set(lone_king.values()) == {NO_CHECK}  # a bare king never checks


@pytest.mark.parametrize("fact", ["reply_check", "next_check"])
@pytest.mark.parametrize("name", HAND_PICKED)
def test_the_check_move_facts_turn_over_with_the_board(name: str, fact: str) -> None:
    assert_turns_over_with_the_board(chess.Board(HAND_PICKED[name]), MOVE_NAMES.index(fact))


def test_gives_mate_is_a_mate_in_one() -> None:
    boards = random_positions(40, seed=3) + [chess.Board(f) for f in HAND_PICKED.values()]
    mates = 0
    for board in boards:
        for move in board.legal_moves:
            child = board.copy()
            child.push(move)
            assert gives_mate(board, move) == child.is_checkmate(), (board.fen(), move)
            mates += child.is_checkmate()
    assert mates > 0


def test_a_model_without_the_replies_is_spared_them() -> None:
    board = chess.Board(SCHOLAR)  # black to move: a6 or Nf6 allow Qxf7#
    assert_spared(board, "reply_check", V14_FACTS, V13_FACTS)  # v13's + replies, v13's
    assert MATE in replies_of(board).values()


torch = pytest.importorskip("torch")

from oneply.engine.play.inference import Scorer  # noqa: E402
from oneply.training.fit.warm_start import init_model_config, load_init, load_weights  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402
from tests.helpers.model_helpers import (  # noqa: E402
    file_log_probs,
    randomise_fact_tables,
    torch_log_probs,
)


def test_a_warm_start_that_adds_the_checks_keeps_v9_and_its_file_reads_them(tmp_path) -> None:
    """`campaign start --facts ... checks` from v9: the grown model scores as its source until
    its check rows learn; then its own file, fed the new channel by the engine, scores as
    torch does, and differently from the source."""
    torch.manual_seed(9)
    source_model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], features=V9_FACTS))
    randomise_fact_tables(source_model)
    path, grown = tmp_path / "v9.onnx", tmp_path / "checks.onnx"
    export_model(source_model.eval(), path, preset="tiny")
    wider = check_names(V9_FACTS + GROUPS["checks"])
    config, _ = init_model_config(load_init(path), "", wider)
    assert config.features == wider
    model = ActionValueModel(config).eval()
    load_weights(model, load_init(path))
    boards = [chess.Board(fen) for fen in HAND_PICKED.values()]
    actual, ids = torch_log_probs(model, boards)
    mask = ids >= 0
    source = file_log_probs(Scorer(path, threads=1), boards)
    np.testing.assert_allclose(actual[mask], source[mask], atol=1e-5, rtol=1e-5)
    offset = model.square_offsets[SQUARE_NAMES.index("enemy_check")]
    assert not model.square_fact_embed.weight[offset:].any()  # the new rows start at zero
    with torch.no_grad():
        model.square_fact_embed.weight[offset:].normal_(0, 0.5)
    export_model(model, grown, preset="tiny")
    learnt, _ = torch_log_probs(model, boards)
    read = file_log_probs(Scorer(grown, threads=1), boards)
    np.testing.assert_allclose(read[mask], learnt[mask], atol=1e-5, rtol=1e-5)
    assert not np.allclose(read[mask], source[mask], atol=1e-3)

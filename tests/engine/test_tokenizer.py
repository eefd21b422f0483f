"""Tokenizer and move vocabulary: the model file format (docs/FORMAT.md §1-2)."""

import re

import chess
import numpy as np
import pytest

from oneply.engine.facts.moves import MAX_LEGAL_MOVES, MOVES, NUM_MOVES, legal_move_ids, move_id
from oneply.engine.facts.tokenizer import TokenizerError, state_string, tokenize
from tests.conftest import REPO

# The vocabulary typed out again, so a change to the module cannot silently pass.
VOCAB = "0 1 2 3 4 5 6 7 8 9 a b c d e f g h p n r k q P B N R Q K w .".split()


def ids(text: str) -> list[int]:
    return [VOCAB.index(c) for c in text]


@pytest.mark.parametrize(
    "move, index",
    [
        ("a1b1", 0),
        ("e1c1", 99),
        ("e1g1", 102),
        ("g1f3", 169),
        ("e2e4", 317),
        ("e8g8", 1714),
        ("h8f7", 1791),
        ("a2a1q", 1792),
        ("a7a8q", 1880),
        ("h7g8n", 1967),
    ],
)
def test_move_vocabulary_check_values(move, index):
    assert move_id(move) == index
    assert MOVES[index] == move


def test_move_vocabulary_size_and_uniqueness():
    assert NUM_MOVES == len(set(MOVES)) == 1968


def test_every_legal_move_of_varied_positions_is_in_the_vocabulary():
    board = chess.Board("3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1")
    assert len(legal_move_ids(board)) == MAX_LEGAL_MOVES
    promo = chess.Board("1n2k3/P6P/8/8/8/8/p6p/1N2K3 w - - 0 1")
    assert {MOVES[i] for i in legal_move_ids(promo)} >= {"a7a8q", "a7b8n", "h7h8r"}
    with pytest.raises(ValueError, match="not in the action vocabulary"):
        move_id("e2e9")


START_TOKENS = (
    "w" + "rnbqkbnr" + "p" * 8 + "." * 32 + "P" * 8 + "RNBQKBNR" + "KQkq" + ".." + "0.." + "1.."
)


@pytest.mark.parametrize(
    "fen, expected",
    [
        (chess.STARTING_FEN, START_TOKENS),
        (
            "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 7 30",
            "b" + "r...k..r" + "." * 48 + "R...K..R" + "Kq.." + ".." + "7.." + "30.",
        ),
        (  # white may capture f5xe6? no: e5xf6 en passant is legal here
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
            "w" + "rnbqkbnr" + "ppp.p.pp" + "." * 8 + "...pPp.." + "." * 16 + "PPPP.PPP"
            "RNBQKBNR" + "KQkq" + "f6" + "0.." + "3..",
        ),
        (
            "8/8/4k3/8/8/4K3/8/8 w - - 45 123",
            "w" + "." * 20 + "k" + "." * 23 + "K" + "." * 19 + "...." + ".." + "45." + "123",
        ),
    ],
)
def test_full_encoding(fen, expected):
    assert len(expected) == 77
    assert state_string(fen) == expected
    assert tokenize(fen).tolist() == ids(expected)
    assert tokenize(chess.Board(fen)).dtype == np.int64


def test_start_position_literal_ids():
    assert tokenize(chess.Board())[:10].tolist() == [29, 20, 19, 11, 22, 21, 11, 19, 20, 18]


def test_en_passant_square_only_when_capture_is_legal():
    # After 1.e4 no black pawn can capture: python-chess drops the square, so do we.
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    assert state_string(fen)[69:71] == ".."


def test_counters_above_999_are_clamped():
    assert state_string("8/8/4k3/8/8/4K3/8/8 w - - 5 1234")[-6:] == "5..999"


@pytest.mark.parametrize("bad", ["", "not a fen", "8/8/8 w - - 0 1", "rnbqkbnr/pppppppp/8/8 x"])
def test_bad_fen_gets_a_clear_error(bad):
    with pytest.raises(TokenizerError, match="invalid FEN"):
        tokenize(bad)


def test_chess960_castling_is_rejected_clearly():
    board = chess.Board(
        "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", chess960=True
    )
    with pytest.raises(TokenizerError, match="Chess960"):
        tokenize(board)


FORMAT_DOC = REPO / "docs" / "FORMAT.md"


def test_format_doc_agrees_with_the_code():
    """docs/FORMAT.md is the written contract: its vocabulary, start-position tokens, move check
    values and format versions must be the code's."""
    from oneply.engine.facts.tokenizer import CHARACTERS
    from oneply.engine.model.model_file import FORMAT_VERSION, READABLE_VERSIONS

    text = FORMAT_DOC.read_text()
    assert f"\n    {CHARACTERS}\n" in text
    assert f"\n    {state_string(chess.Board())}\n" in text
    checks = re.search(r"Check values \(id → move\):(.*?)\n\n", text, re.S)
    assert checks is not None
    pairs = re.findall(r"(\d+) `(\w+)`", checks.group(1))
    assert len(pairs) == 10
    assert all(MOVES[int(i)] == move for i, move in pairs)
    assert f"Version {FORMAT_VERSION} is written today" in text
    assert all(f"**{v}:**" in text for v in READABLE_VERSIONS)

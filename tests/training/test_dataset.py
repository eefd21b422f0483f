"""The shard format: round trip, clear errors for damaged shards, and the hash split."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import chess
import numpy as np
import pytest

from oneply.engine.facts.moves import legal_move_ids
from oneply.engine.facts.tokenizer import position_key, tokenize
from oneply.training.data.compact import fen_of_tokens
from oneply.training.data.dataset import (
    AnnotatedDataset,
    DatasetError,
    Shard,
    find_shards,
    is_validation,
    puzzle_keys,
)
from oneply.training.data.shard_publish import write_compact_shard, write_shard


def _positions(count: int, seed: int = 0) -> list[chess.Board]:
    """Distinct positions from a random walk (never a mate or stalemate)."""
    rng = np.random.default_rng(seed)
    boards, board, seen = [], chess.Board(), set()
    while len(boards) < count:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 60:
            board = chess.Board()
            continue
        board.push(moves[rng.integers(len(moves))])
        key = " ".join(board.fen().split()[:4])
        if board.legal_moves.count() and key not in seen:
            seen.add(key)
            boards.append(board.copy(stack=False))
    return boards


def _write(path: Path, boards: list[chess.Board], seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    states = np.stack([tokenize(b) for b in boards]).astype(np.uint8)
    moves = [legal_move_ids(b) for b in boards]
    wins = [rng.random(len(m)).astype(np.float32) for m in moves]
    return write_shard(path, states, moves, wins, {"note": "test"})


def test_round_trip(tmp_path: Path) -> None:
    boards = _positions(12)
    entry = _write(tmp_path / "chunk-000000", boards)
    assert entry["count"] == 12
    assert entry["action_values"] == sum(b.legal_moves.count() for b in boards)
    shard = Shard(tmp_path / "chunk-000000", verify=True)
    assert shard.meta["note"] == "test" and shard.meta["sha256"] == entry["sha256"]
    for board, (state, moves, wins) in zip(boards, shard, strict=True):
        assert state.dtype == np.int64 and moves.dtype == np.int64 and wins.dtype == np.float32
        np.testing.assert_array_equal(state, tokenize(board))
        np.testing.assert_array_equal(moves, legal_move_ids(board))
        assert len(wins) == len(moves) and np.all((wins >= 0) & (wins <= 1))
    assert not list(tmp_path.glob(".*")), "no temporary left behind"


def test_rewrite_replaces_existing_shard(tmp_path: Path) -> None:
    _write(tmp_path / "s", _positions(5))
    entry = _write(tmp_path / "s", _positions(3))
    assert len(Shard(tmp_path / "s")) == 3 and entry["count"] == 3


def test_truncated_shard_names_the_file(tmp_path: Path) -> None:
    _write(tmp_path / "s", _positions(10))
    moves = tmp_path / "s" / "moves.npy"
    moves.write_bytes(moves.read_bytes()[:-7])
    with pytest.raises(DatasetError, match="moves.npy"):
        Shard(tmp_path / "s")


def test_corrupt_values_and_metadata_are_caught(tmp_path: Path) -> None:
    _write(tmp_path / "s", _positions(6))
    wins = np.load(tmp_path / "s" / "wins.npy")
    wins[3] = 1.5
    np.save(tmp_path / "s" / "wins.npy", wins)
    with pytest.raises(DatasetError, match="wins.npy"):
        Shard(tmp_path / "s")

    _write(tmp_path / "t", _positions(6))
    offsets = np.load(tmp_path / "t" / "offsets.npy")
    offsets[2], offsets[3] = offsets[3], offsets[2]
    np.save(tmp_path / "t" / "offsets.npy", offsets)
    with pytest.raises(DatasetError, match="offsets.npy.*increasing"):
        Shard(tmp_path / "t")

    _write(tmp_path / "u", _positions(6))
    (tmp_path / "u" / "meta.json").write_text("{not json")
    with pytest.raises(DatasetError, match="meta.json"):
        Shard(tmp_path / "u")


def test_checksum_detects_a_flipped_byte(tmp_path: Path) -> None:
    _write(tmp_path / "s", _positions(6))
    states = tmp_path / "s" / "states.npy"
    data = bytearray(states.read_bytes())
    data[-1] = (data[-1] + 1) % 31  # still a valid token: only the checksum can tell
    states.write_bytes(bytes(data))
    Shard(tmp_path / "s")
    with pytest.raises(DatasetError, match="sha256"):
        Shard(tmp_path / "s", verify=True)


def test_writer_rejects_bad_input(tmp_path: Path) -> None:
    boards = _positions(2)
    states = np.stack([tokenize(b) for b in boards]).astype(np.uint8)
    ids = [legal_move_ids(b) for b in boards]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        write_shard(tmp_path / "s", states, ids, [np.full(len(m), 2.0) for m in ids])
    with pytest.raises(ValueError, match="one win probability per move"):
        write_shard(tmp_path / "s", states, ids, [np.zeros(1), np.zeros(1)])
    with pytest.raises(ValueError, match="at least one move"):
        write_shard(tmp_path / "s", states, [ids[0], ids[1][:0]], [np.zeros(len(ids[0])), []])
    assert not (tmp_path / "s").exists()


def test_position_key_ignores_move_counters() -> None:
    a = tokenize("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    b = tokenize("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 7 42")
    c = tokenize("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b Kkq - 0 1")
    assert position_key(a) == position_key(b) != position_key(c)
    assert is_validation(a, 50.0) == is_validation(b, 50.0)
    assert not is_validation(a, 0.0) and is_validation(a, 100.0)


def test_split_is_disjoint_and_complete(tmp_path: Path) -> None:
    _write(tmp_path / "chunk-000000", _positions(40, seed=1))
    _write(tmp_path / "chunk-000001", _positions(40, seed=2)[20:])
    (tmp_path / ".chunk-000002.tmp-1").mkdir()  # an unfinished shard is never read
    (tmp_path / "manifest.json").write_text(json.dumps({"stockfish": "test"}))
    assert len(find_shards(tmp_path)) == 2
    every = AnnotatedDataset(tmp_path)
    train = AnnotatedDataset(tmp_path, split="train", val_percent=30)
    val = AnnotatedDataset(tmp_path, split="val", val_percent=30)
    assert len(every) == 60 == len(train) + len(val) and 0 < len(val) < 30
    assert every.num_action_values == train.num_action_values + val.num_action_values
    assert every.manifest == {"stockfish": "test"}
    train_keys = {position_key(train[i][0]) for i in range(len(train))}
    val_keys = {position_key(val[i][0]) for i in range(len(val))}
    assert not train_keys & val_keys
    assert all(is_validation(val[i][0], 30) for i in range(len(val)))
    with pytest.raises(IndexError):
        every[60]
    with pytest.raises(ValueError, match="split"):
        AnnotatedDataset(tmp_path, split="test")
    with pytest.raises(DatasetError, match="no shards"):
        AnnotatedDataset(tmp_path / ".chunk-000002.tmp-1")


def _write_compact(path: Path, boards: list[chess.Board], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    states = np.stack([tokenize(b) for b in boards]).astype(np.uint8)
    wins = [rng.random(b.legal_moves.count()).astype(np.float32) for b in boards]
    write_compact_shard(path, states, wins, {"note": "v2"})
    return wins


def test_compact_shard_reads_like_a_v1_shard(tmp_path: Path) -> None:
    boards = _positions(200, seed=4)
    boards.append(chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"))
    wins = _write_compact(tmp_path / "v2", boards)
    _write(tmp_path / "v1", boards)
    compact, plain = Shard(tmp_path / "v2", verify=True), Shard(tmp_path / "v1")
    assert compact.meta["note"] == "v2" and len(compact) == len(boards)
    assert compact.num_action_values == plain.num_action_values
    for i, board in enumerate(boards):
        state, moves, values = compact[i]
        assert fen_of_tokens(state) == board.fen()  # en passant and counters included
        np.testing.assert_array_equal(state, plain[i][0])
        np.testing.assert_array_equal(moves, plain[i][1])
        assert moves.dtype == np.int64 and values.dtype == np.float32
        np.testing.assert_allclose(values, wins[i], atol=1 / 65535)
    both = AnnotatedDataset([tmp_path / "v1", tmp_path / "v2"])
    assert len(both) == len(boards)  # the same positions twice are read once


def test_compact_shard_is_small_and_damage_is_caught(tmp_path: Path) -> None:
    boards = _positions(1000, seed=5)
    _write_compact(tmp_path / "v2", boards)
    size = (tmp_path / "v2" / "data.npz").stat().st_size
    assert size / len(boards) < 120  # 1M positions in under 120 MB, even with random values
    data = tmp_path / "v2" / "data.npz"
    data.write_bytes(data.read_bytes()[:-100])
    with pytest.raises(DatasetError, match="data.npz"):
        Shard(tmp_path / "v2")


def test_compact_row_whose_position_does_not_match_its_values(tmp_path: Path) -> None:
    board = chess.Board()
    states = np.stack([tokenize(board)]).astype(np.uint8)
    write_compact_shard(tmp_path / "bad", states, [np.full(19, 0.5)])  # 20 legal moves
    with pytest.raises(DatasetError, match="row 0 has 20 legal moves"):
        Shard(tmp_path / "bad")[0]


def test_puzzle_keys_cover_the_line_and_bad_rows_name_the_file(tmp_path: Path) -> None:
    csv = tmp_path / "p.csv"
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    csv.write_text(f"PuzzleId,FEN,Moves\nt,{fen},e7e5 g1f3\n")
    board, expected = chess.Board(), set()
    for uci in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(uci)
        expected.add(position_key(tokenize(board)))
    assert puzzle_keys([csv]) == expected
    csv.write_text("PuzzleId,FEN,Moves\nx,not a fen,e2e4\n")
    with pytest.raises(DatasetError, match="p.csv:2"):
        puzzle_keys([csv])


def test_finding_shards_while_a_writer_publishes_them_never_fails(tmp_path: Path) -> None:
    """generate writes each shard in a hidden directory and renames it into place; a trainer
    that follows the directory must neither see the hidden one nor trip on it vanishing
    (a campaign trainer died of that, FileNotFoundError from a recursive glob)."""
    done = threading.Event()

    def publish() -> None:
        number = 0
        while not done.is_set():
            hidden = tmp_path / f".shard-{number:06d}.tmp" / "part"
            hidden.mkdir(parents=True)
            (hidden / "meta.json").write_text("{}")
            hidden.parent.rename(tmp_path / f"shard-{number:06d}")
            number += 1

    writer = threading.Thread(target=publish)
    writer.start()
    try:
        deadline, looks = time.monotonic() + 1.0, 0  # hundreds of shards, as many looks
        while time.monotonic() < deadline:
            found = find_shards(tmp_path)
            assert all(not p.relative_to(tmp_path).parts[0].startswith(".") for p in found)
            assert found == sorted(found)
            looks += 1
    finally:
        done.set()
        writer.join()
    assert looks > 10 and len(find_shards(tmp_path)) == len(list(tmp_path.glob("shard-*")))

"""`oneply analyse`, `oneply bench` and the CLI dispatcher, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess

import chess
import pytest

from oneply.engine.facts import native
from tests.conftest import ENGINE_CMD, REPO


def oneply(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ENGINE_CMD, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_help_lists_every_subcommand():
    from oneply.engine.cli import COMMANDS

    result = oneply("--help")
    assert result.returncode == 0
    assert all(name in result.stdout for name in COMMANDS)
    assert oneply("frobnicate").returncode == 2


def test_analyse_json_lists_every_legal_move_sorted(tiny_onnx):
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    result = oneply("analyse", "--model", str(tiny_onnx), "--json", fen)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    board = chess.Board(fen)
    assert {m["uci"] for m in data["moves"]} == {m.uci() for m in board.legal_moves}
    wins = [m["win"] for m in data["moves"]]
    assert wins == sorted(wins, reverse=True)
    assert data["model"].endswith("tiny.onnx") and data["time_ms"] > 0
    assert "UNTRAINED" in result.stderr


def test_analyse_table_and_moves_and_errors(tiny_onnx):
    table = oneply("analyse", "--model", str(tiny_onnx), "--moves", "e2e4", "e7e5")
    assert table.returncode == 0
    assert "tiny.onnx" in table.stdout and "█" in table.stdout and "Nf3" in table.stdout
    bad = oneply("analyse", "--model", str(tiny_onnx), "not", "a", "fen")
    assert bad.returncode == 2 and "invalid FEN" in bad.stderr and "Traceback" not in bad.stderr
    missing = oneply("analyse", "--model", "/nonexistent/model.onnx")
    assert missing.returncode == 2 and "not found" in missing.stderr


def test_analyse_search_shows_the_trees_view_beside_the_one_pass(tiny_onnx):
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    plain = json.loads(oneply("analyse", "--model", str(tiny_onnx), "--json", fen).stdout)
    result = oneply("analyse", "--model", str(tiny_onnx), "--json", "--search", "24", fen)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [m["uci"] for m in data["moves"]] == [m["uci"] for m in plain["moves"]]  # one pass
    tree = data["search"]
    legal = {m.uci() for m in chess.Board(fen).legal_moves}
    assert tree["node_limit"] == 24 and 1 < tree["nodes"] <= 24
    assert tree["best"] == tree["pv"][0] and tree["best"] in legal and tree["depth"] >= 1
    assert tree["score"].startswith(("cp ", "mate ")) and 0 <= tree["win"] <= 1
    assert {m["uci"] for m in tree["moves"]} == legal and tree["policy"]["uci"] in legal
    assert sum(m["visits"] for m in tree["moves"]) >= tree["nodes"] - 1
    assert tree["pv_san"].startswith("3. ")


def test_analyse_search_table_finds_the_mate_and_refuses_bad_counts():
    mate_in_one = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
    table = oneply("analyse", "--search", "40", mate_in_one, timeout=60)
    assert table.returncode == 0, table.stderr
    assert "search " in table.stdout and "score mate 1" in table.stdout
    assert "pv      1. Ra8#" in table.stdout and "visits" in table.stdout
    for bad in ("0", "-3", "many"):
        refused = oneply("analyse", "--search", bad, mate_in_one)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert "--search takes a number of nodes from 1" in refused.stderr


def test_bench_json_reports_all_variants(tiny_onnx):
    result = oneply(
        "bench",
        "--model",
        str(tiny_onnx),
        "--positions",
        "4",
        "--json",
        "--threads",
        "1",
        "--search-nodes",
        "24",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    python_row = {"shared_int8_python"} if native.available() else set()
    assert set(data["ms_per_position"]) == {"shared_fp32", "shared_int8", "per_move_fp32"} | (
        python_row
    )
    assert data["threads"] == 1 and data["positions"] == 4 and data["overlapped"] is False
    assert data["speedup_shared_int8_vs_per_move"] > 0
    assert 0 <= data["int8_abs_win_delta"]["mean"] <= data["int8_abs_win_delta"]["max"] < 0.05
    search = data["search"]  # the look-ahead on the int8 model, batched leaves and one a call
    assert search["model_variant"] == "shared_int8" and search["positions"] == 4
    assert search["nodes_per_position"] == 24 and search["batch"] == 8
    assert search["nps_batched"] > 0 and search["nps_one_leaf"] > 0
    assert (search["nps_batched_python"] is not None) == native.available()
    assert search["speedup_batched"] > 0


def test_bench_on_two_threads_times_the_layout_and_the_path_the_default_does_not_run(tiny_onnx):
    """engine/play/halves.py and engine/facts/native.py: beside the default (the compiled core's one
    graph), the int8 file as two halves and on the Python path of the facts; without the core,
    the Python path's two halves beside the whole graph."""
    args = ["bench", "--model", str(tiny_onnx), "--positions", "3", "--threads", "2"]
    result = oneply(*args, "--search-nodes", "0", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    variants = ["shared_fp32", "shared_int8", "per_move_fp32"]
    if native.available():
        assert data["overlapped"] is False and data["facts_path"] == "native"
        assert list(data["ms_per_position"]) == [
            *variants,
            "shared_int8_halves",
            "shared_int8_python",
        ]
        inputs = data["inputs_ms_per_position"]
        assert inputs["native"] > 0 and inputs["python"] > 0 and inputs["speedup"] > 0
    python = oneply(*args, "--search-nodes", "0", "--json", env={"ONEPLY_NATIVE": "0"})
    assert python.returncode == 0, python.stderr
    data = json.loads(python.stdout)
    assert data["overlapped"] is True and data["facts_path"] == "python"
    assert list(data["ms_per_position"]) == [*variants, "shared_int8_whole"]
    assert all(ms > 0 for ms in data["ms_per_position"].values())
    table = oneply(*args, "--search-nodes", "0", env={"ONEPLY_NATIVE": "0"})
    assert "shared rows in two halves" in table.stdout and "shared_int8_whole" in table.stdout
    assert "facts     python (ONEPLY_NATIVE=0)" in table.stdout


def test_bench_table_shows_the_search_row_unless_turned_off(tiny_onnx):
    args = ["bench", "--model", str(tiny_onnx), "--positions", "2", "--threads", "1"]
    table = oneply(*args, "--search-nodes", "8")
    assert table.returncode == 0, table.stderr
    assert "search (shared_int8, 2 positions x 8 nodes)" in table.stdout
    assert "8 leaves per call" in table.stdout and "1 leaf per call" in table.stdout
    off = oneply(*args, "--search-nodes", "0", "--json")
    assert off.returncode == 0 and json.loads(off.stdout)["search"] is None
    refused = oneply(*args, "--search-nodes", "-1")
    assert refused.returncode == 2 and "--search-nodes must be 0 or more" in refused.stderr


def test_bench_positions_file_is_varied():
    from oneply.engine.play.bench import load_positions

    boards = load_positions()
    counts = [b.legal_moves.count() for b in boards]
    pieces = [len(b.piece_map()) for b in boards]
    assert len(boards) >= 100 and max(counts) == 218
    assert min(pieces) <= 6 and max(pieces) == 32  # endgames and openings
    assert len({b.fen() for b in boards}) == len(boards)


def test_analyse_of_a_won_position_exits_promptly():
    """A won position can start the policy's fallback Stockfish; analyse must close it
    (it once kept the process alive after printing)."""
    result = oneply("analyse", "6k1/8/8/8/8/8/QQ6/K7 w - - 0 1", timeout=30)
    assert result.returncode == 0, result.stderr
    assert "plays" in result.stdout


def test_analyse_names_an_illegal_move_as_such(tiny_onnx):
    from oneply.engine.facts.tokenizer import TokenizerError
    from oneply.engine.play.analyse import IllegalMoveError, position_from

    with pytest.raises(IllegalMoveError, match="illegal move e2e5") as caught:
        position_from([], ["e2e4", "e2e5"])
    assert not isinstance(caught.value, TokenizerError)  # the FEN was fine; the move was not
    result = oneply("analyse", "--model", str(tiny_onnx), "--moves", "e2e4", "e2e5")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "illegal move e2e5" in result.stderr and "UCI notation" in result.stderr


def test_library_errors_are_typed_and_the_cli_turns_them_into_a_message(tmp_path, capsys):
    """Library code raises CommandError, never SystemExit (which a caller cannot tell from a
    real exit); `oneply` prints the message and exits with the error's code."""
    pytest.importorskip("torch")
    from oneply.engine.cli import main
    from oneply.engine.errors import CommandError
    from oneply.training.model.export import untrained_model

    with pytest.raises(CommandError, match="unknown preset 'huge'"):
        untrained_model("huge")
    assert main(["export", "--untrained", "huge", "-o", str(tmp_path / "m.onnx")]) == 1
    assert "unknown preset 'huge'; choose from" in capsys.readouterr().err
    assert main(["train", "fit"]) == 1
    assert "give one or more annotated shard directories" in capsys.readouterr().err


#: `oneply` with some modules made unimportable, as on a machine without the `train` extra
WITHOUT = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None  # `import name` now raises ModuleNotFoundError\n"
    "from oneply.engine.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


@pytest.mark.parametrize(
    "missing, args",
    [
        ("torch", ["train", "fit", "--help"]),
        ("torch", ["export", "--untrained", "small", "-o", "never.onnx"]),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_pip_extra(missing, args, tmp_path):
    import sys

    result = subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    name = missing.split(",")[0]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"oneply {args[0]}: this needs {name}, which is not installed: pip install 'oneply[train]'"
    ]
    assert not (tmp_path / "never.onnx").exists()


def test_a_plot_without_matplotlib_names_the_pip_extra(monkeypatch, tmp_path, capsys):
    """Plots are optional: the suite still reports, and says what would draw the plot."""
    import sys

    from oneply.arena import elo, ladder

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    rating = elo.RatingFit(1500.0, 1400.0, 1600.0, games=10, at_bound=False)
    assert ladder.plot(str(tmp_path / "l.png"), "t", {}, rating) is False
    assert "pip install 'oneply[train]'" in capsys.readouterr().err
    assert not (tmp_path / "l.png").exists()


def test_bench_times_each_fact_group_the_model_reads(tiny_onnx):
    """--facts-by-group: a row for every group the model reads and no other, in the JSON and
    the table; without the flag, no rows (the timing costs a dozen passes over the facts)."""
    from oneply.engine.facts.features import GROUPS
    from oneply.engine.play.inference import Scorer

    args = ["bench", "--model", str(tiny_onnx), "--positions", "2", "--threads", "1"]
    args += ["--search-nodes", "0"]
    result = oneply(*args, "--facts-by-group", "--json")
    assert result.returncode == 0, result.stderr
    by_group = json.loads(result.stdout)["facts_ms_by_group"]
    read = set(Scorer(tiny_onnx, threads=1).info.features)
    assert set(by_group) == {g for g, names in GROUPS.items() if set(names) & read}
    assert len(by_group) >= 10 and all(isinstance(ms, float) for ms in by_group.values())
    table = oneply(*args, "--facts-by-group")
    assert table.returncode == 0 and "fact group" in table.stdout and "mate_threats" in table.stdout
    plain = oneply(*args, "--json")
    assert plain.returncode == 0 and json.loads(plain.stdout)["facts_ms_by_group"] is None

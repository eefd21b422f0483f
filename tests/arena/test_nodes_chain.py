"""The Elo-against-nodes chain (arena/nodes_chain.py, `oneply strength --nodes-chain-from`): real
`oneply match` files chained, and hand-written ones for the arithmetic (links summed, intervals
in quadrature, the anchor added), the chain's checks and a link won in every game."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from oneply.arena import nodes_chain
from oneply.arena.elo import elo_to_score, pentanomial
from oneply.arena.nodes_chain import read_link, saturation_bound
from oneply.engine.cli import main as cli_main
from oneply.engine.errors import CommandError
from tests.conftest import REPO

ENGINE = f"{sys.executable} -m oneply.engine uci"
#: white a whole army up: the tiny model mates in tens of plies, not hundreds
WON_FOR_WHITE = "4k3/8/8/8/8/8/PPPPPPPP/RNBQKBNR w KQ -"


def engine(nodes: int, model: str = "") -> dict[str, Any]:
    """One engine as `oneply match --json` records it; 0 nodes is the searchless engine."""
    options = {"Threads": "1", "Search": "true" if nodes else "false"}
    if model:
        options["ModelFile"] = model
    tc = {"base": None, "inc": 0.0, "movetime": None, "nodes": max(nodes, 1)}
    return {"name": f"n{nodes}", "command": ["oneply", "uci"], "options": options, "tc": tc}


def write_match(
    path: Path, a: int, b: int, estimate: dict[str, float], wdl=(5, 10, 5), model: str = ""
) -> str:
    """A match file of `a` against `b` nodes with this pentanomial estimate."""
    wins, draws, losses = wdl
    games = wins + draws + losses
    results = {"games": games, "wins": wins, "draws": draws, "losses": losses}
    results |= {"score": (wins + draws / 2) / games, "elo_pentanomial": estimate}
    data = {"engine_a": engine(a, model), "engine_b": engine(b, model), "results": results}
    path.write_text(json.dumps(data))
    return str(path)


def estimate(elo: float, lower: float, upper: float) -> dict[str, float]:
    return {"elo": elo, "lower": lower, "upper": upper}


def chain(tmp_path: Path, *links: tuple[int, int, dict[str, float]]) -> list[str]:
    return [write_match(tmp_path / f"{a}-vs-{b}.json", a, b, e) for a, b, e in links]


def run_chain(files: list[str], *extra: str) -> int:
    return cli_main(["strength", "--nodes-chain-from", *files, *extra])


def test_points_sum_the_links_in_quadrature_and_add_the_anchor(tmp_path, capsys) -> None:
    files = chain(
        tmp_path,
        (1, 0, estimate(10, -40, 60)),
        (4, 1, estimate(100, 70, 140)),
        (16, 4, estimate(-20, -50, 5)),
    )
    out = tmp_path / "chain.json"
    assert run_chain(files, "--anchor", "1000", "--curve-json", str(out)) == 0
    data = json.loads(out.read_text())
    assert data["anchor"] == 1000 and data["model"] == "bundled"
    assert [p["nodes"] for p in data["points"]] == [0, 1, 4, 16]
    zero, one, four, sixteen = data["points"]
    assert (zero["elo"], zero["rating"], zero["rating_lower"]) == (0, 1000, 1000)
    assert (one["lower"], one["upper"]) == (-40, 60)  # one link: its own interval
    assert four["elo"] == 110
    assert four["lower"] == pytest.approx(110 - math.hypot(50, 30))  # each side on its own
    assert four["upper"] == pytest.approx(110 + math.hypot(50, 40))
    assert sixteen["elo"] == 90
    assert sixteen["lower"] == pytest.approx(90 - math.sqrt(50**2 + 30**2 + 30**2))
    assert sixteen["upper"] == pytest.approx(90 + math.sqrt(50**2 + 40**2 + 25**2))
    assert sixteen["rating"] == 1090
    assert sixteen["rating_upper"] == pytest.approx(1000 + sixteen["upper"])
    assert [p["separates"] for p in data["pairs"]] == [False, True, False]
    table = capsys.readouterr().out
    assert re.search(r"^\s+4\s+1\s+20\s+5/10/5\s+\+100 \[\+70, \+140\]\s+yes\s+\+110", table, re.M)
    assert "1090 [" in table


def test_the_files_chain_in_any_order_and_the_default_anchor_is_the_bundled_rating(
    tmp_path, capsys
) -> None:
    files = chain(tmp_path, (16, 4, estimate(5, -5, 15)), (1, 0, estimate(0, -9, 9)))
    files.append(write_match(tmp_path / "4-vs-1.json", 4, 1, estimate(20, 1, 39)))
    plot = tmp_path / "chain.png"
    assert run_chain(sorted(files), "--curve-plot", str(plot)) == 0  # 16-vs-4 sorts before 4-vs-1
    table, err = capsys.readouterr()
    assert [int(n) for n in re.findall(r"^\s+(\d+)\s", table, re.M)] == [0, 1, 4, 16]
    assert "1294 [" in table  # 1269 + 0 + 20 + 5
    if importlib.util.find_spec("matplotlib") is None:
        assert "needs matplotlib" in err and not plot.exists()
    else:
        assert plot.stat().st_size > 0


def test_the_default_anchor_is_the_model_cards_suite_rating() -> None:
    card = (REPO / "models" / "oneply-small.md").read_text()
    (value,) = re.findall(r"name: strength-suite rating.*\n\s+value: (\d+)", card)
    assert nodes_chain.BUNDLED_RATING == float(value)


@pytest.mark.parametrize(
    ("links", "message"),
    [
        ([(1, 0), (16, 4)], r"broken chain: \S*16-vs-4.json plays 16 against 4 nodes, .* at 1$"),
        ([(4, 1)], r"broken chain: .* ends at 0 \(the searchless engine\)"),
        ([(1, 0), (4, 1), (4, 2)], r"both measure 4 nodes"),
        ([(1, 0), (4, 4)], r"4-vs-4.json plays 4 against 4 nodes: not a link"),
    ],
)
def test_a_broken_chain_is_an_error_naming_the_file(tmp_path, capsys, links, message) -> None:
    files = chain(tmp_path, *((a, b, estimate(1, -1, 3)) for a, b in links))
    assert run_chain(files) == 1
    assert re.search(message, capsys.readouterr().err.strip())


def test_two_models_or_a_match_without_a_node_budget_are_errors(tmp_path) -> None:
    one = write_match(tmp_path / "a.json", 1, 0, estimate(0, -9, 9), model="x.onnx")
    two = write_match(tmp_path / "b.json", 4, 1, estimate(0, -9, 9), model="y.onnx")
    with pytest.raises(CommandError, match="different models"):
        nodes_chain.run([one, two], 1269, None, None)
    assert cli_main(["strength", "m.onnx", "--nodes-chain-from", one]) == 2  # plays nothing
    clocked = json.loads(Path(one).read_text())
    clocked["engine_a"]["tc"]["nodes"] = None
    Path(one).write_text(json.dumps(clocked))
    with pytest.raises(CommandError, match="n1 searches without --nodes"):
        read_link(Path(one))
    Path(one).write_text("{}")
    with pytest.raises(CommandError, match="no `oneply match --json` file"):
        read_link(Path(one))


def test_a_link_from_the_weaker_engines_side_is_turned_round(tmp_path) -> None:
    path = write_match(tmp_path / "0-vs-1.json", 0, 1, estimate(-30, -70, 5), wdl=(3, 10, 7))
    link, model = read_link(Path(path))
    assert (link.nodes, link.base, link.elo, link.lower, link.upper) == (1, 0, 30, -5, 70)
    assert link.wdl == (7, 10, 3) and model == ""


def test_a_link_won_in_every_game_counts_at_its_bound(tmp_path, capsys) -> None:
    all_won = pentanomial(
        [0, 0, 0, 0, 10]
    ).to_dict()  # what `oneply match` writes: 2400 [2400, 2400]
    files = chain(tmp_path, (1, 0, estimate(0, -50, 50)))
    files.append(write_match(tmp_path / "4-vs-1.json", 4, 1, all_won, wdl=(20, 0, 0)))
    out = tmp_path / "chain.json"
    assert run_chain(files, "--curve-json", str(out)) == 0
    bound = saturation_bound(20)
    assert elo_to_score(bound) ** 20 == pytest.approx(0.025)  # all 20 won with 2.5% chance
    assert 250 < bound < 500
    data = json.loads(out.read_text())
    four = data["pairs"][1]
    assert four["saturated"] and four["separates"]
    assert (four["elo"], four["lower"], four["upper"]) == (bound, bound, None)  # open: null
    top = data["points"][2]
    assert top["bound"] and top["upper"] is None and top["elo"] == pytest.approx(bound)
    assert top["lower"] == pytest.approx(bound - 50)
    table = capsys.readouterr().out
    assert "saturated" in table and "∞]" in table and "bound" in table


def test_a_link_lost_in_every_game_is_open_below(tmp_path) -> None:
    all_lost = pentanomial([10, 0, 0, 0, 0]).to_dict()
    path = write_match(tmp_path / "m.json", 4, 1, all_lost, wdl=(0, 0, 20))
    link, _ = read_link(Path(path))
    bound = saturation_bound(20)
    assert link.saturated and (link.elo, link.lower, link.upper) == (-bound, -math.inf, -bound)
    nearly = pentanomial([0, 0, 0, 1, 9]).to_dict()  # 39.5/40: its upper side clamps at 2400
    link, _ = read_link(Path(write_match(tmp_path / "n.json", 4, 1, nearly, wdl=(19, 1, 0))))
    assert not link.saturated and link.upper == math.inf and 0 < link.lower < link.elo


def test_real_matches_form_the_chain(tiny_onnx, tmp_path) -> None:
    """Two `oneply match` runs as run.sh plays them (1 node against searchless, 2 against 1)."""
    openings = tmp_path / "won.epd"
    openings.write_text(WON_FOR_WHITE + "\n")
    files = []
    for a, b in ((1, 0), (2, 1)):
        out = tmp_path / f"{a}-vs-{b}.json"
        args = ["match", ENGINE, ENGINE, "--option", f"ModelFile={tiny_onnx}"]
        args += ["--option", "Threads=1", "--option-a", "Search=true"]
        args += ["--option-b", f"Search={'true' if b else 'false'}"]
        args += ["--nodes-a", str(a), "--nodes-b", str(max(b, 1)), "--games", "2"]
        args += ["--openings", str(openings), "--concurrency", "2", "--quiet", "--json", str(out)]
        assert cli_main(args) == 0
        files.append(str(out))
    out = tmp_path / "chain.json"
    assert run_chain(files, "--anchor", "1000", "--curve-json", str(out)) == 0
    data = json.loads(out.read_text())
    assert data["model"] == str(tiny_onnx)
    assert [p["nodes"] for p in data["points"]] == [0, 1, 2]
    assert [p["base"] for p in data["pairs"]] == [0, 1]
    elos = []
    for name, pair in zip(files, data["pairs"], strict=True):
        match = json.loads(Path(name).read_text())["results"]
        assert pair["games"] == 2 and sum(pair["wdl"]) == 2
        assert pair["wdl"] == [match["wins"], match["draws"], match["losses"]]
        if not pair["saturated"]:
            assert pair["elo"] == match["elo_pentanomial"]["elo"]
        elos.append(pair["elo"])
    assert data["points"][2]["rating"] == pytest.approx(1000 + sum(elos))

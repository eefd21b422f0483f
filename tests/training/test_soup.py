"""`oneply train soup`: the average of several models' weights, as a file the engine serves."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import chess
import numpy as np
import pytest

from oneply.engine.errors import CommandError
from oneply.engine.facts.features import GROUPS, group_facts
from oneply.engine.play.inference import Scorer
from tests.conftest import POSITION_218, REPO
from tests.helpers.fact_versions import V5_FACTS, V5_GROUPS
from tests.helpers.model_helpers import file_log_probs, randomise_fact_tables, torch_log_probs

torch = pytest.importorskip("torch")

from oneply.training.fit.soup import shares_of, soup  # noqa: E402
from oneply.training.fit.warm_start import load_init  # noqa: E402
from oneply.training.model.export import export_model  # noqa: E402
from oneply.training.model.model import PRESETS, ActionValueModel  # noqa: E402

BOARDS = [
    chess.Board(),
    chess.Board("r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R b KQ - 3 8"),
    chess.Board(POSITION_218),
]
FACT_TABLES = ("square_fact_embed.weight", "move_fact_embed.weight")


def saved(tmp_path: Path, name: str, seed: int, **changes) -> tuple[ActionValueModel, Path]:
    """A random `tiny` model (fact tables randomised too, so no row is zero by chance) and
    its ONNX file."""
    torch.manual_seed(seed)
    model = ActionValueModel(dataclasses.replace(PRESETS["tiny"], **changes))
    randomise_fact_tables(model)
    path = tmp_path / f"{name}.onnx"
    export_model(model.eval(), path, preset="tiny", trained=False)
    return model, path


def test_shares_are_normalised_and_bad_weights_say_what_to_give() -> None:
    assert shares_of(None, 4) == [0.25] * 4
    assert shares_of([3, 1], 2) == [0.75, 0.25]
    with pytest.raises(CommandError, match="two or more"):
        shares_of(None, 1)
    with pytest.raises(CommandError, match="give one each"):
        shares_of([1], 2)
    with pytest.raises(CommandError, match="positive sum"):
        shares_of([1, -1], 2)
    with pytest.raises(CommandError, match="positive sum"):
        shares_of([0, 0], 2)


def test_the_soup_is_the_weighted_mean_and_its_file_scores_as_the_torch_model(
    tmp_path: Path,
) -> None:
    a, path_a = saved(tmp_path, "a", 1)
    b, path_b = saved(tmp_path, "b", 2)
    mixed = soup([load_init(path_a), load_init(path_b)], [0.75, 0.25])
    for (key, got), want_a, want_b in zip(
        mixed.state_dict().items(), a.state_dict().values(), b.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(got, 0.75 * want_a + 0.25 * want_b, msg=key)
    out = tmp_path / "soup.onnx"
    export_model(mixed, out, preset="tiny")
    expected, ids = torch_log_probs(mixed, BOARDS)
    actual = file_log_probs(Scorer(out, threads=1), BOARDS)
    np.testing.assert_allclose(actual[ids >= 0], expected[ids >= 0], atol=1e-5, rtol=1e-5)
    # and it is neither of its parents
    assert not np.allclose(expected[ids >= 0], torch_log_probs(a, BOARDS)[0][ids >= 0], atol=1e-3)


def test_a_model_with_fewer_facts_counts_zero_in_the_rows_it_lacks(tmp_path: Path) -> None:
    """Averaging a newer row (V5 facts + exchange) with an older one (V5 facts): the shared
    facts' rows are averaged, the new facts' rows are the newer model's times its share —
    what a warm start from the older model would have held there."""
    grown_facts = group_facts([*V5_GROUPS, "exchange"])
    new, path_new = saved(tmp_path, "new", 3, features=grown_facts)
    old, path_old = saved(tmp_path, "old", 4, features=V5_FACTS)
    mixed = soup([load_init(path_new), load_init(path_old)], [0.5, 0.5])
    assert mixed.config.features == grown_facts
    exchange = set(GROUPS["exchange"])
    for key in FACT_TABLES:
        offsets_new = _rows(new, key)
        offsets_old = _rows(old, key)
        got, a, b = mixed.state_dict()[key], new.state_dict()[key], old.state_dict()[key]
        for name, rows in offsets_new.items():
            want = 0.5 * a[rows] + (0.5 * b[offsets_old[name]] if name not in exchange else 0)
            torch.testing.assert_close(got[rows], want, msg=f"{key} {name}")
    with pytest.raises(CommandError, match="put the model that reads the most facts first"):
        soup([load_init(path_old), load_init(path_new)], [0.5, 0.5])


def _rows(model: ActionValueModel, key: str) -> dict[str, slice]:
    """Each fact's rows in one of `model`'s fact tables."""
    from oneply.engine.facts.features import MOVE_FACTS, SQUARE_FACTS, table_offsets

    kind = SQUARE_FACTS if key.startswith("square") else MOVE_FACTS
    sizes = {fact.name: fact.size for fact in kind}
    names = [name for name in model.config.features if name in sizes]
    offsets, _ = table_offsets(names, kind)
    return {n: slice(int(o), int(o) + sizes[n]) for n, o in zip(names, offsets, strict=True)}


def test_models_of_another_depth_or_size_are_refused(tmp_path: Path) -> None:
    _, tiny = saved(tmp_path, "tiny", 5)
    _, deeper = saved(tmp_path, "deeper", 6, layers=PRESETS["tiny"].layers + 1)
    _, wider = saved(tmp_path, "wider", 7, width=PRESETS["tiny"].width * 2)
    with pytest.raises(CommandError, match="one depth"):
        soup([load_init(tiny), load_init(deeper)], [0.5, 0.5])
    with pytest.raises(CommandError, match="another architecture"):
        soup([load_init(tiny), load_init(wider)], [0.5, 0.5])


def test_the_command_writes_a_file_the_engine_serves_and_says_what_it_holds(
    tmp_path: Path,
) -> None:
    _, path_a = saved(tmp_path, "a", 8)
    _, path_b = saved(tmp_path, "b", 9)
    out = tmp_path / "soup.onnx"
    command = [sys.executable, "-m", "oneply.engine", "train", "soup", str(path_a), str(path_b)]
    done = subprocess.run(
        [*command, "--weights", "2", "1", "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "the average of 2 models" in done.stdout
    info = Scorer(out, threads=1).info
    assert info.preset == "tiny" and info.layout == "shared"
    assert [part["share"] for part in info.training["soup"]] == [pytest.approx(2 / 3), 0.333333]
    refused = subprocess.run(
        [*command[:-1], "-o", str(tmp_path / "one.onnx")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "two or more models" in refused.stderr
    assert not (tmp_path / "one.onnx").exists()

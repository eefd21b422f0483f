"""The look-ahead's settings a user can tune, as UCI options (Lc0's names where it has one).

Each is a number in a range; the UCI front end announces them as strings (UCI has no real
type) and hands the parsed values to TreeSearch. The defaults are what the tests recorded in
docs/studies/ support; a change to a default is kept only when games beside the old value say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchOption:
    """One setting: its UCI name, TreeSearch's keyword, default, range and meaning."""

    name: str
    keyword: str
    default: float
    low: float
    high: float
    meaning: str

    def parse(self, raw: str) -> float:
        """The value of `raw`, or a ValueError that says what the option takes."""
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if not self.low <= value <= self.high:
            wanted = f"a number in [{self.low}, {self.high}]"
            raise ValueError(f"{self.name} takes {wanted}, not {raw!r}")
        return value


SEARCH_OPTIONS: tuple[SearchOption, ...] = (
    SearchOption("CPuct", "c_puct", 1.5, 0.01, 100.0, "PUCT's exploration constant"),
    SearchOption(
        "PolicyTemperature", "temperature", 0.05, 0.001, 10.0,
        "the priors' softmax temperature over the moves' expected wins",
    ),
    SearchOption(
        "FpuReduction", "fpu_reduction", 0.0, 0.0, 1.0,
        "an unvisited move is valued at its network action value less this (first-play urgency)",
    ),
)  # fmt: skip
BY_NAME: dict[str, SearchOption] = {option.name.lower(): option for option in SEARCH_OPTIONS}


def search_settings(values: Mapping[str, str]) -> dict[str, float]:
    """TreeSearch's keywords from the options' current texts (by lower-case name)."""
    return {option.keyword: option.parse(values[option.name.lower()]) for option in SEARCH_OPTIONS}

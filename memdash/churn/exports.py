"""The churn page's ranking as CSV rows (`core.export`): the scenarios of the chosen build,
largest churn growth first. Coefficients of variation go out as fractions, times in ms."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from memdash.core.export import Cell

RANKING_HEADERS = [
    "Scenario",
    "Compared with",
    "Churn before",
    "Churn",
    "Change %",
    "Regressed",
    "Runs",
    "CV churn",
    "CV time",
    "Elapsed ms (median)",
]


def ranking_rows(ranking: Iterable[dict[str, Any]]) -> Iterator[list[Cell]]:
    """`ranking`: the page's rows, {"change": ScenarioChange, "measured": BuildChurn | None}."""
    for row in ranking:
        c, m = row["change"], row["measured"]
        yield [
            c.scenario,
            str(m.previous_build) if m and m.previous_build else None,
            c.previous,
            c.current,
            c.change_percent,
            c.regressed,
            m.churn.runs if m else None,
            m.churn.cv if m else None,
            m.elapsed.cv if m else None,
            m.elapsed.median if m else None,
        ]

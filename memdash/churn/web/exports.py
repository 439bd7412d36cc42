"""The churn page's tables as CSV rows (`core.web.export`): the ranking of the chosen build's
scenarios (largest churn growth first), the flagged builds, and each scenario's builds.
Coefficients of variation go out as fractions, times in ms."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from memdash.churn.logic.cost import ScenarioChange
from memdash.churn.reads import ScenarioSeries
from memdash.core.models import Build
from memdash.core.web.export import Cell

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


FLAGGED_HEADERS = ["Build", "Scenario", "Churn before", "Churn", "Change %"]


def flagged_rows(flagged: Iterable[tuple[Build, list[ScenarioChange]]]) -> Iterator[list[Cell]]:
    """The flagged builds in release order, a row for each scenario that grew past the threshold
    (the page lists them in one cell), largest growth first."""
    for build, changes in flagged:
        for c in changes:
            yield [str(build), c.scenario, c.previous, c.current, c.change_percent]


SCENARIO_HEADERS = [
    "Build",
    "Runs",
    "Churn (median)",
    "Churn low",
    "Churn high",
    "CV churn",
    "Elapsed ms (median)",
    "Elapsed ms low",
    "Elapsed ms high",
    "CV time",
    "Steadier (times)",
    "Change %",
    "Regressed",
]


def scenario_rows(series: ScenarioSeries) -> Iterator[list[Cell]]:
    """One scenario's builds in release order. An infinite steadiness (churn did not vary at
    all) goes out as the text `inf`."""
    for m in series.builds:
        steadier = m.steadiness
        yield [
            str(m.build),
            m.churn.runs,
            m.churn.median,
            m.churn.low,
            m.churn.high,
            m.churn.cv,
            m.elapsed.median,
            m.elapsed.low,
            m.elapsed.high,
            m.elapsed.cv,
            "inf" if steadier is not None and math.isinf(steadier) else steadier,
            m.change.change_percent,
            m.change.regressed,
        ]


RUN_HEADERS = ["Run", "Device", "OS", "Captured", "Elapsed ms", "Churn", "Calls"]


def run_headers(functions: Iterable[str]) -> list[str]:
    """The runs table's headers: each allocator function's calls and bytes after the run's."""
    return RUN_HEADERS + [f"{f} {what}" for f in functions for what in ("calls", "bytes")]


def run_rows(runs: Iterable[Any], functions: list[str]) -> Iterator[list[Cell]]:
    """A scenario's runs in one build (`selectors.scenario_runs`), figures per function in the
    order of `functions` (empty where the run made no such call)."""
    for r in runs:
        device = r.run.device
        by_name = {f.function: f for f in r.functions.all()}
        cells: list[Cell] = [
            r.run.run_id,
            device.model if device else None,
            device.os if device else None,
            r.run.captured_at,
            r.elapsed_ms,
            r.churn,
            r.calls,
        ]
        for name in functions:
            found = by_name.get(name)
            cells += [found.count, found.bytes] if found else [None, None]
        yield cells

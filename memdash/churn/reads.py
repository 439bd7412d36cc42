"""Reads of allocator churn: per scenario and build, the churn of each run (priced with the app's
current weights in the database), summarised over runs, compared with the previous build."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    Expression,
    F,
    FilteredRelation,
    FloatField,
    Prefetch,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from memdash.churn.logic.cost import (
    ScenarioChange,
    Spread,
    compare_scenario,
    rank_changes,
    spread_of,
    steadiness,
)
from memdash.churn.models import (
    DEFAULT_CHURN_WEIGHTS,
    DEFAULT_THRESHOLD_PERCENT,
    ChurnSettings,
    Scenario,
    ScenarioFunction,
    ScenarioRun,
)
from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order


def churn_settings(app: App) -> ChurnSettings:
    """The app's stored settings, or the defaults (unsaved) when it has none."""
    stored = ChurnSettings.objects.filter(app=app).first()
    return stored or ChurnSettings(app=app, threshold_percent=DEFAULT_THRESHOLD_PERCENT)


def churn_weights(app: App) -> dict[str, float]:
    """The weights in force: the defaults, overridden by the app's own."""
    return {**DEFAULT_CHURN_WEIGHTS, **(churn_settings(app).weights or {})}


def app_threshold_percent(app: App) -> float:
    return churn_settings(app).threshold_percent


def valid_weights(app: App) -> dict[str, float]:
    """The app's weights as numbers; a weight edited into something else counts as 0."""
    weights = {}
    for function, weight in churn_weights(app).items():
        try:
            value = float(weight)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value != 0:
            weights[str(function)] = value
    return weights


def with_churn[R: QuerySet[ScenarioRun, Any]](runs: R, weights: dict[str, float]) -> R:
    """Each run with its churn (`churn`). Its functions are joined by the run and the app both
    (the app in the join's ON): on Citus an outer join of two distributed tables must name the
    distribution column on both sides."""
    same_app = FilteredRelation("functions", condition=Q(functions__app_id=F("app_id")))
    return runs.annotate(app_functions=same_app).annotate(churn=churn_expression(weights))


def churn_expression(weights: dict[str, float]) -> Expression:
    """Σ w(f) · log2_bytes(f) over a scenario run's functions (`app_functions`: `with_churn`),
    in SQL."""
    cases = [
        When(
            app_functions__function=function,
            then=F("app_functions__log2_bytes") * Value(weight),
        )
        for function, weight in sorted(weights.items())
    ]
    if not cases:
        return Value(0.0, output_field=FloatField())
    priced = Case(*cases, default=Value(0.0), output_field=FloatField())
    return Coalesce(Sum(priced), Value(0.0), output_field=FloatField())


def priced_scenario_runs(
    app: App, build_ids: list[int] | None = None
) -> QuerySet[ScenarioRun, Mapping[str, Any]]:
    """One row per scenario run: scenario_id, build_id, elapsed_ms, churn."""
    runs = ScenarioRun.objects.filter(app=app, run__app=app)
    if build_ids is not None:
        runs = runs.filter(build_id__in=build_ids)
    return with_churn(
        runs.values("id", "scenario_id", "build_id", "elapsed_ms"), valid_weights(app)
    ).order_by()


@dataclass(frozen=True)
class BuildChurn:
    """One scenario in one build, over its runs."""

    build: Build
    churn: Spread
    elapsed: Spread
    change: ScenarioChange  # against the previous build that measured this scenario
    previous_build: Build | None = None

    @property
    def steadiness(self) -> float | None:
        return steadiness(self.churn.cv, self.elapsed.cv)


@dataclass
class ScenarioSeries:
    scenario: Scenario
    builds: list[BuildChurn] = field(default_factory=list)  # release order, measured builds only

    def for_build(self, build: Build) -> BuildChurn | None:
        return next((b for b in self.builds if b.build.pk == build.pk), None)

    @property
    def median_churn_cv(self) -> float | None:
        return median_or_none([b.churn.cv for b in self.builds])

    @property
    def median_elapsed_cv(self) -> float | None:
        return median_or_none([b.elapsed.cv for b in self.builds])

    @property
    def steadiness(self) -> float | None:
        return steadiness(self.median_churn_cv, self.median_elapsed_cv)


def median_or_none(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    middle = len(known) // 2
    return known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2


def measurements(
    app: App, build_ids: list[int] | None = None
) -> dict[int, dict[int, tuple[list[float], list[float]]]]:
    """scenario id -> build id -> (churn of each run, elapsed ms of each run)."""
    found: dict[int, dict[int, tuple[list[float], list[float]]]] = defaultdict(dict)
    for row in priced_scenario_runs(app, build_ids):
        churns, elapsed = found[row["scenario_id"]].setdefault(row["build_id"], ([], []))
        churns.append(float(row["churn"]))
        elapsed.append(float(row["elapsed_ms"]))
    return found


def scenario_series(app: App, threshold_percent: float | None = None) -> list[ScenarioSeries]:
    """Every scenario of the app with its builds in release order, each compared with the
    previous build that measured it."""
    threshold = app_threshold_percent(app) if threshold_percent is None else threshold_percent
    data = measurements(app)
    builds = builds_in_release_order(app)
    result = []
    for scenario in Scenario.objects.filter(app=app, pk__in=data.keys()).order_by("name"):
        series = ScenarioSeries(scenario=scenario)
        previous: BuildChurn | None = None
        for build in builds:
            if build.pk not in data[scenario.pk]:
                continue
            churns, elapsed = data[scenario.pk][build.pk]
            churn_spread, elapsed_spread = spread_of(churns), spread_of(elapsed)
            assert churn_spread is not None and elapsed_spread is not None  # at least one run
            change = compare_scenario(
                scenario.name,
                previous.churn.median if previous else None,
                churn_spread.median,
                threshold,
            )
            previous = BuildChurn(
                build, churn_spread, elapsed_spread, change, previous.build if previous else None
            )
            series.builds.append(previous)
        result.append(series)
    return result


def ranked_changes(series: list[ScenarioSeries], build: Build) -> list[ScenarioChange]:
    """The scenarios measured in `build`, largest churn growth against the previous build first."""
    changes = [found.change for s in series if (found := s.for_build(build)) is not None]
    return rank_changes(changes)


def flagged_builds(series: list[ScenarioSeries]) -> list[tuple[Build, list[ScenarioChange]]]:
    """Builds in which some scenario's churn grew past the threshold, in release order."""
    flagged: dict[int, tuple[Build, list[ScenarioChange]]] = {}
    for scenario in series:
        for measured in scenario.builds:
            if measured.change.regressed:
                flagged.setdefault(measured.build.pk, (measured.build, []))[1].append(
                    measured.change
                )
    ordered = sorted(flagged.values(), key=lambda item: item[0].release_key)
    return [(build, rank_changes(changes)) for build, changes in ordered]


def measured_builds(series: list[ScenarioSeries]) -> list[Build]:
    seen: dict[int, Build] = {}
    for scenario in series:
        for measured in scenario.builds:
            seen.setdefault(measured.build.pk, measured.build)
    return sorted(seen.values(), key=lambda build: build.release_key)


def churn_regressions(
    app: App, base_build: Build, target_build: Build, threshold_percent: float | None = None
) -> list[ScenarioChange]:
    """For the CI gate: scenarios measured in both builds whose median churn over runs grew from
    `base_build` to `target_build` by more than `threshold_percent` (default: the app's
    threshold), largest growth first. Empty when nothing regressed or nothing was measured."""
    threshold = app_threshold_percent(app) if threshold_percent is None else threshold_percent
    data = measurements(app, [base_build.pk, target_build.pk])
    names = dict(Scenario.objects.filter(app=app).values_list("pk", "name"))
    changes = []
    for scenario_id, by_build in data.items():
        if base_build.pk not in by_build or target_build.pk not in by_build:
            continue
        base = spread_of(by_build[base_build.pk][0])
        target = spread_of(by_build[target_build.pk][0])
        assert base is not None and target is not None
        change = compare_scenario(names[scenario_id], base.median, target.median, threshold)
        if change.regressed:
            changes.append(change)
    return rank_changes(changes)


def scenario_for_app(app: App, scenario_id: int) -> Scenario | None:
    return Scenario.objects.filter(app=app, pk=scenario_id).first()


def scenario_builds(scenario: Scenario) -> list[Build]:
    """The builds that measured the scenario, in release order."""
    measured = set(
        ScenarioRun.objects.filter(scenario=scenario).values_list("build_id", flat=True).distinct()
    )
    return [b for b in builds_in_release_order(scenario.app) if b.pk in measured]


def scenario_runs(scenario: Scenario, build: Build) -> QuerySet[ScenarioRun]:
    """The scenario's runs in one build, oldest first, each with its churn (`churn`, priced with
    the app's weights), its run and device, and its functions' figures (`functions`)."""
    app_id = scenario.app_id  # each table's, so that on Citus the joins stay on its worker
    runs = ScenarioRun.objects.filter(app_id=app_id, run__app_id=app_id, scenario=scenario)
    functions = ScenarioFunction.objects.filter(app_id=app_id).order_by("function")
    return (
        with_churn(runs.filter(build=build), valid_weights(scenario.app))
        .select_related("run", "run__device")
        .prefetch_related(Prefetch("functions", queryset=functions))
        .order_by("run__captured_at", "pk")
    )


def scenario_functions(scenario: Scenario, build: Build) -> list[str]:
    """The allocator functions the scenario's runs in `build` called, by name."""
    return sorted(
        set(
            ScenarioFunction.objects.filter(
                scenario_run__scenario=scenario, scenario_run__build=build
            ).values_list("function", flat=True)
        )
    )
